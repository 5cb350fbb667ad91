/*
 * shard/meta/mpack.h - internal: a strict, bounds-checked msgpack reader
 * for the snapshot decoder, and a msgpack-c packer writing into a vs_wbuf.
 *
 * The reader never reads outside [p, p + len); errors are sticky (the
 * first one wins) and typed (enum meta_snap_status). An array header
 * claiming more elements than bytes remain is refused before any element
 * is read, so a hostile length cannot drive a long loop.
 * Callers: shard/meta only.
 */
#ifndef VS_SHARD_META_MPACK_H
#define VS_SHARD_META_MPACK_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "common/buf.h"
#include "common/wire.h"

struct meta_mp {
    const uint8_t *p;
    size_t len;
    size_t off;
    int err; /* enum meta_snap_status, 0 = ok */
};

void meta_mp_init(struct meta_mp *r, const void *p, size_t len);
/* Array header; returns the element count (0 on error). */
uint32_t meta_mp_array(struct meta_mp *r);
/* Array header that must have exactly n elements. */
void meta_mp_array_n(struct meta_mp *r, uint32_t n);
uint64_t meta_mp_uint(struct meta_mp *r);
/* uint that must be <= max (else META_SNAP_BAD_VALUE). */
uint64_t meta_mp_uint_max(struct meta_mp *r, uint64_t max);
/* str (or bin for meta_mp_bin); borrowed bytes, *n = length. */
const uint8_t *meta_mp_str(struct meta_mp *r, uint32_t *n);
const uint8_t *meta_mp_bin(struct meta_mp *r, uint32_t *n);
/* A bin of exactly 16 bytes as a u128 (LE). */
struct vs_u128 meta_mp_u128(struct meta_mp *r);
void meta_mp_fail(struct meta_mp *r, int status);

/* A packer appending to w. */
void meta_mp_packer_init(msgpack_packer *pk, struct vs_wbuf *w);
void meta_mp_pack_u128(msgpack_packer *pk, struct vs_u128 v);
void meta_mp_pack_str(msgpack_packer *pk, const void *p, size_t n);
void meta_mp_pack_bin(msgpack_packer *pk, const void *p, size_t n);

#endif /* VS_SHARD_META_MPACK_H */
