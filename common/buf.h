/*
 * common/buf.h - bounds-checked little-endian readers and growable writers.
 *
 * Role: every decoder of untrusted bytes (client bodies, snapshots, files)
 * reads through struct vs_rbuf: each read checks the remaining length and,
 * on a short read, sets `err` and returns zeros, so a decoder can read a
 * whole record and check `err` once. Writers append to a heap buffer that
 * grows (aborting on OOM like vs_xmalloc).
 * Invariants: a reader never reads outside [data, data + len).
 * Callers: any process.
 */
#ifndef VS_COMMON_BUF_H
#define VS_COMMON_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

struct vs_rbuf {
    const uint8_t *data;
    size_t len;
    size_t off;
    int err; /* sticky: -EPROTO after any short read */
};

void vs_rbuf_init(struct vs_rbuf *r, const void *data, size_t len);
size_t vs_rbuf_left(const struct vs_rbuf *r);
uint8_t vs_rd_u8(struct vs_rbuf *r);
uint16_t vs_rd_u16(struct vs_rbuf *r);
uint32_t vs_rd_u32(struct vs_rbuf *r);
uint64_t vs_rd_u64(struct vs_rbuf *r);
struct vs_u128 vs_rd_u128(struct vs_rbuf *r);
/* Returns a pointer to the next n bytes (borrowed) or NULL (err set). */
const uint8_t *vs_rd_bytes(struct vs_rbuf *r, size_t n);

struct vs_wbuf {
    uint8_t *data;
    size_t len;
    size_t cap;
};

void vs_wbuf_init(struct vs_wbuf *w);
void vs_wbuf_fini(struct vs_wbuf *w);
void vs_wbuf_reset(struct vs_wbuf *w);
/* Ensures room for n more bytes; returns a pointer to them (len not moved). */
uint8_t *vs_wbuf_reserve(struct vs_wbuf *w, size_t n);
void vs_wr_bytes(struct vs_wbuf *w, const void *p, size_t n);
void vs_wr_u8(struct vs_wbuf *w, uint8_t v);
void vs_wr_u16(struct vs_wbuf *w, uint16_t v);
void vs_wr_u32(struct vs_wbuf *w, uint32_t v);
void vs_wr_u64(struct vs_wbuf *w, uint64_t v);
void vs_wr_u128(struct vs_wbuf *w, struct vs_u128 v);
void vs_wr_zeros(struct vs_wbuf *w, size_t n);

/* Little-endian loads and stores at a raw address (no bounds check). */
static inline uint32_t
vs_load_u32(const void *p)
{
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}
static inline uint64_t
vs_load_u64(const void *p)
{
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    return v;
}
static inline void
vs_store_u32(void *p, uint32_t v)
{
    __builtin_memcpy(p, &v, 4);
}
static inline void
vs_store_u64(void *p, uint64_t v)
{
    __builtin_memcpy(p, &v, 8);
}

#endif /* VS_COMMON_BUF_H */
