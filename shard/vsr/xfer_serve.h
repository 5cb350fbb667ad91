/*
 * shard/vsr/xfer_serve.h - the serving side of metadata state transfer:
 * the offers a caught-up primary keeps for lagging replicas.
 *
 * An offer is a manifest (snapshot payload + client table transfer form,
 * xfer_manifest.h) with the commit it was built at, cached per
 * (requester, nonce). Rules (the review record of the upstream design):
 *  - first wins: a retried RequestStateTransfer with the same nonce gets
 *    the same Target, byte for byte; a rebuild never replaces a manifest
 *    the requester may hold. A new nonce from the same requester replaces
 *    its old offer (that session is over).
 *  - a chunk request for an unknown (requester, nonce) is answered "not
 *    available: unknown session"; one at or beyond its artifact's end, or
 *    for an artifact the manifest lacks, is refused (no answer, counted) —
 *    never an empty chunk, which upstream turned into a livelock.
 *  - a served chunk is at most chunk_max bytes and never past the end.
 *  - offers expire after idle_ticks without a served byte (served_ticks
 *    once the whole offer was served at least once).
 * The bytes themselves stay with the caller (snapshot.bin is read in
 * bounded pieces at the offsets this module returns, so serving never
 * blocks the event loop on a whole-file read; the client table form is
 * encoded once per offer and owned by the caller until the offer ends).
 *
 * I/O-free and deterministic. Callers: shard 0's binding, the simulator.
 */
#ifndef VS_SHARD_VSR_XFER_SERVE_H
#define VS_SHARD_VSR_XFER_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/vsr/xfer_frames.h"
#include "shard/vsr/xfer_manifest.h"

#define XFER_OFFERS_MAX VS_REPLICAS_MAX /* one per requester */

struct xfer_serve_opts {
    struct xfer_sender me;
    uint32_t chunk_max;    /* 0 = XFER_CHUNK_MAX */
    uint32_t idle_ticks;   /* 0 = 1000 (10 x the repair retry) */
    uint32_t served_ticks; /* 0 = 300 */
};

struct xfer_offer {
    int used;
    uint8_t requester;
    struct vs_u128 nonce;
    uint64_t id; /* unique per offer: the caller's key for its bytes */
    struct xfer_manifest m;
    uint8_t target[XFER_TARGET_FRAME_MAX]; /* the Target frame, as sent */
    size_t target_len;
    uint32_t idle;
    int fully_served;
};

enum xfer_serve_result {
    XFER_SERVE_CHUNK = 0,   /* serve (artifact, offset, n) */
    XFER_SERVE_UNKNOWN,     /* answer Target unavailable: unknown session */
    XFER_SERVE_REFUSED_END, /* at or past the artifact's end: no answer */
    XFER_SERVE_REFUSED_ARTIFACT, /* artifact index not in the manifest */
};

struct xfer_serve_stats {
    uint64_t offers, repeats, expired, chunks, bytes, refused, unknown;
};

struct xfer_serve {
    struct xfer_serve_opts o;
    struct xfer_offer offers[XFER_OFFERS_MAX];
    uint64_t next_id;
    struct xfer_serve_stats stats;
};

void xfer_serve_init(struct xfer_serve *s, const struct xfer_serve_opts *o);
void xfer_serve_set_view(struct xfer_serve *s, uint32_t view);

/* The cached offer of (requester, nonce), or NULL: answer a retried
 * RequestStateTransfer with its `target` bytes. */
const struct xfer_offer *
xfer_serve_find(struct xfer_serve *s, uint8_t requester, struct vs_u128 nonce);
/* Caches a new offer for (requester, nonce) and builds its Target frame.
 * If one exists for the same nonce it is returned unchanged (first wins);
 * an older nonce's offer from that requester is replaced (its id is
 * written to *replaced_id, else 0, so the caller frees its bytes).
 * Returns the offer, or NULL if m does not encode. */
const struct xfer_offer *
xfer_serve_offer(struct xfer_serve *s, uint8_t requester, struct vs_u128 nonce,
                 const struct xfer_manifest *m, uint64_t commit_op,
                 uint64_t commit_max, uint64_t *replaced_id);
/* Builds an unavailable Target into out (>= 256 bytes); returns its size. */
size_t xfer_serve_unavailable(const struct xfer_serve *s, void *out,
                              struct vs_u128 nonce, uint8_t reason,
                              int transient, uint64_t commit_op,
                              uint64_t commit_max);
/* A RequestStateChunk (already passed xfer_frame_check) from `requester`.
 * On XFER_SERVE_CHUNK: *offer, *kind, *offset, *n say what to read and
 * send (with xfer_frame_chunk); the offer's idle counter restarts. */
enum xfer_serve_result xfer_serve_chunk(struct xfer_serve *s, uint8_t requester,
                                        const void *frame,
                                        const struct xfer_offer **offer,
                                        uint8_t *kind, uint64_t *offset,
                                        uint32_t *n);
/* One tick: expires idle offers; the ids of expired offers are written
 * to expired[] (up to cap) and counted in the return value. */
size_t xfer_serve_tick(struct xfer_serve *s, uint64_t *expired, size_t cap);
/* Drops every offer (this replica stopped being a caught-up primary). */
size_t xfer_serve_clear(struct xfer_serve *s, uint64_t *ids, size_t cap);

#endif /* VS_SHARD_VSR_XFER_SERVE_H */
