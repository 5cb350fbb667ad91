/*
 * shard/vsr/xfer_frames.h - the four state-transfer frames (commands 22-25,
 * common/wire.h): builders that seal them and one checker that validates
 * every field before the stage machines (xfer_fetch.h, xfer_serve.h) read
 * any of them.
 *
 * Exact sizes: RequestStateTransfer (22) and RequestStateChunk (24) are
 * header-only (256 bytes); StateTransferTarget (23) is 256 bytes when not
 * available, else 256 + a manifest of 1..XFER_ARTIFACTS_MAX entries;
 * StateChunk (25) carries 1..chunk_max bytes. All four are sealed (the
 * seal covers checksum_body, which covers the body), so a frame corrupted
 * in transit is dropped here and re-requested by the stall timer.
 * Pure functions; I/O-free; any process.
 */
#ifndef VS_SHARD_VSR_XFER_FRAMES_H
#define VS_SHARD_VSR_XFER_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/vsr/xfer_manifest.h"

#define XFER_CHUNK_MAX        (256u << 10) /* bytes per StateChunk */
#define XFER_TARGET_FRAME_MAX (VS_HEADER_SIZE + XFER_MANIFEST_MAX_SIZE)

/* StateTransferTarget.reason when available == 0. */
enum xfer_unavailable {
    XFER_AVAILABLE = 0,
    XFER_NOT_CAUGHT_UP_PRIMARY = 1, /* not a settled, caught-up primary */
    XFER_NO_SNAPSHOT = 2,           /* no checkpoint written yet */
    XFER_SNAPSHOT_UNREADABLE = 3,   /* snapshot.bin failed to read/verify */
    XFER_UNKNOWN_SESSION = 4,       /* chunk request for no cached offer */
    XFER_UNAVAILABLE_COUNT
};
const char *xfer_unavailable_name(uint8_t reason);

enum xfer_frame_verdict {
    XFER_FRAME_OK = 0,
    XFER_FRAME_COMMAND, /* not a transfer command */
    XFER_FRAME_SIZE,    /* size field, length or body size out of rule */
    XFER_FRAME_SEAL,    /* header seal mismatch */
    XFER_FRAME_BODY,    /* body checksum mismatch */
    XFER_FRAME_CLUSTER, /* another cluster */
    XFER_FRAME_GROUP,   /* another consensus group */
    XFER_FRAME_FIELD,   /* a field out of range (flag, reason, manifest) */
    XFER_FRAME_VERDICT_COUNT
};
const char *xfer_frame_verdict_name(enum xfer_frame_verdict v);

/* Validates a whole transfer frame of `len` bytes. A Target with
 * available = 1 must carry a manifest that decodes. */
enum xfer_frame_verdict xfer_frame_check(const void *frame, size_t len,
                                         struct vs_u128 cluster, uint64_t group,
                                         uint32_t chunk_max);

/* Identity every builder stamps. */
struct xfer_sender {
    struct vs_u128 cluster;
    uint64_t group;
    uint8_t replica;
    uint32_t view; /* the sender's durable view */
};

void xfer_frame_request_transfer(struct vs_hdr_request_state_transfer *h,
                                 const struct xfer_sender *s,
                                 struct vs_u128 nonce);
void xfer_frame_request_chunk(struct vs_hdr_request_state_chunk *h,
                              const struct xfer_sender *s, struct vs_u128 nonce,
                              uint32_t artifact, uint64_t offset, uint32_t len);
/* Builds a Target into out (>= XFER_TARGET_FRAME_MAX bytes): available
 * with the manifest bytes when mlen > 0, else unavailable with `reason`
 * (transient: the requester may retry the same peer). Returns its size. */
size_t xfer_frame_target(uint8_t *out, const struct xfer_sender *s,
                         struct vs_u128 nonce, uint64_t commit_op,
                         uint64_t commit_max, const uint8_t *manifest,
                         size_t mlen, uint8_t reason, int transient);
/* Fills and seals the header of a StateChunk carrying body[0..n). */
void xfer_frame_chunk(struct vs_hdr_state_chunk *h, const struct xfer_sender *s,
                      struct vs_u128 nonce, uint32_t artifact, uint64_t offset,
                      const void *body, size_t n);

#endif /* VS_SHARD_VSR_XFER_FRAMES_H */
