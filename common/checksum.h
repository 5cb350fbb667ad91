/*
 * common/checksum.h - every checksum vstream computes.
 *
 * Role: XXH3-64 (seed 0) widened to u128 (hi = 0), the frame seal of
 * sealed control frames (XXH3 over header bytes 16..256), the prepare
 * identity checksum (XXH3 of the header with `checksum` and `view`
 * zeroed, so a retransmit that re-stamps the view keeps its identity),
 * the body checksum (XXH3 over exactly size - 256 bytes), and a streaming
 * variant for data that arrives in pieces. XXH32 for message keys.
 *
 * Invariants: the functions are pure and deterministic; vs_frame_verify
 * must be called before any other field of a sealed frame is trusted.
 * Callers: any process.
 */
#ifndef VS_COMMON_CHECKSUM_H
#define VS_COMMON_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* The streaming state is embedded, so its layout must be visible. */
#ifndef XXH_STATIC_LINKING_ONLY
#define XXH_STATIC_LINKING_ONLY
#endif
#include <xxhash.h>

#include "common/wire.h"

/* XXH3-64, seed 0. */
uint64_t vs_xxh3_64(const void *data, size_t len);
/* XXH3-64, seed 0, widened: lo = hash, hi = 0. */
struct vs_u128 vs_checksum(const void *data, size_t len);
/* XXH32, seed 0 (message-key partitioning). */
uint32_t vs_xxh32(const void *data, size_t len);

/* Frame seal for sealed control frames: checksum = XXH3(hdr[16..256]).
 * Call after every other header field (including checksum_body) is set. */
void vs_frame_seal(struct vs_header *h);
/* 1 if the seal matches, 0 otherwise. */
int vs_frame_verify(const struct vs_header *h);

/* Body checksum: XXH3 over exactly h->size - 256 bytes of `body`. */
struct vs_u128 vs_body_checksum(const void *body, size_t len);
/* Sets checksum_body from the body, then the identity checksum, then (in
 * format 2) checksum_view. */
void vs_prepare_seal(struct vs_hdr_prepare *p, const void *body, size_t len);
/* Identity checksum of a prepare: XXH3 of the 256 header bytes with
 * `checksum` and `view` zeroed (format 2: checksum_view zeroed too). */
struct vs_u128 vs_prepare_identity(const struct vs_hdr_prepare *p);
/* 1 if p->checksum equals its identity checksum. */
int vs_prepare_verify_identity(const struct vs_hdr_prepare *p);
/* checksum_view of a format-2 prepare as defined in common/wire.h. */
uint64_t vs_prepare_view_checksum(const struct vs_hdr_prepare *p);
/* Re-stamps checksum_view after f.view (or the identity) changed; a no-op
 * for format 1, which has no view checksum. */
void vs_prepare_seal_view(struct vs_hdr_prepare *p);
/* 1 if checksum_view matches (always 1 for format 1). Call after the
 * identity verified. */
int vs_prepare_verify_view(const struct vs_hdr_prepare *p);
/* 1 if checksum_body is 0 (unsealed) or equals XXH3(body). */
int vs_body_verify(const struct vs_header *h, const void *body, size_t len);

/* Streaming XXH3-64 (seed 0). */
struct vs_xxh3_stream {
    XXH3_state_t state;
};
void vs_xxh3_stream_init(struct vs_xxh3_stream *s);
void vs_xxh3_stream_update(struct vs_xxh3_stream *s, const void *data,
                           size_t len);
uint64_t vs_xxh3_stream_digest(const struct vs_xxh3_stream *s);

#endif /* VS_COMMON_CHECKSUM_H */
