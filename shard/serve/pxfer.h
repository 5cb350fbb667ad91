/*
 * shard/serve/pxfer.h - partition state transfer: a replica of a
 * partition group whose peers' retained journal no longer covers its gap
 * fetches the serving primary's partition at its checkpoint, installs it
 * atomically and rejoins by repair above it.
 *
 * The protocol is the metadata transfer's (shard/vsr/xfer_*.h: commands
 * 22-25 with the group id in every frame, a fresh random nonce per fetch,
 * first-wins offers, chunk bounds, every artifact verified before the
 * install) with the partition profile of xfer_fetch.h. The manifest:
 *   SEGMENT_LOG        a file-set image (shard/data/pimage.h) of the
 *                      sealed and active segments' .log, .vsr and .index
 *                      files cut at the checkpoint op C (the segment
 *                      holding C's record cut right after it and after
 *                      the last batch at or below C, its index left to
 *                      be rebuilt; later segments left out); meta = the
 *                      purge generation, the offset frontier after C,
 *                      C. Frontier C.
 *   CONSUMER_OFFSETS   a file-set image of offsets/, offsets_applied (and
 *                      the group's saved client table `clients` where it
 *                      keeps one) as applied at the serving replica's
 *                      commit (an
 *                      offset op at or below the applied mark is never
 *                      applied again, so repair above C agrees). Frontier
 *                      the applied mark.
 *   CHECKPOINT_PREPARE C's stored prepare header (256 bytes): it must be
 *                      the last record of the segment log image.
 * Serving (a settled primary only; else "not available"): an offer is
 * built from the durable checkpoint when a RequestStateTransfer comes
 * (files opened, so retention or a purge cannot pull them away; offset
 * files read whole: small); the artifacts' XXH3 are computed in bounded
 * steps (PXFER_HASH_STEP bytes per tick, off the request path) while the
 * requester is answered "not available, transient"; then the offer is
 * cached (first wins: a retry with the same nonce gets the same Target,
 * byte for byte) and chunks are read with one pread of at most the chunk
 * size per request.
 * Fetching: pxfer_start_nonce arms the receiver with a fresh nonce against
 * `peer`; once every artifact is in and verified the images are decoded,
 * the chain end checked against the prepare header, the new directory
 * staged and verified (shard/data/pinstall.h; with hooks.fsync its
 * fsyncs run off the loop: the staged files and directories, then the
 * directories of its publication, each round a request whose completion
 * pxfer_fsynced continues; transfer frames for the fetch are dropped
 * meanwhile) and `installed` is called:
 * the runtime then closes the group and the partition, swaps the
 * directories and reopens both (the engine recovers at C and repairs
 * (C, commit_max] from its peers).
 * Limits: an artifact is at most XFER_ARTIFACT_CAP (1 GiB) and is held
 * in memory by the receiver; a larger partition is not offered (logged).
 * Callers: the owning data shard's loop thread (pgroup.c); tests.
 */
#ifndef VS_SHARD_SERVE_PXFER_H
#define VS_SHARD_SERVE_PXFER_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/data/partition.h"
#include "shard/data/pjournal.h"
#include "shard/vsr/xfer_fetch.h"
#include "shard/vsr/xfer_serve.h"

#define PXFER_HASH_STEP (4u << 20) /* bytes hashed per tick per offer */

struct pxfer;
/* An fsync request of an install in flight (hooks.fsync). */
struct pxfer_sync;

/* What the serving side needs to know about the group right now. */
struct pxfer_serve_state {
    int settled_primary;
    uint32_t view; /* durable view (stamped on frames) */
    uint64_t commit_min, commit_max;
    uint64_t checkpoint_op; /* durable checkpoint; 0 = none */
};

struct pxfer_hooks {
    void *ctx;
    void (*serve_state)(void *ctx, struct pxfer_serve_state *s);
    /* Sends one frame to replica index `replica` (best effort). */
    void (*send)(void *ctx, uint8_t replica, const void *frame, size_t len);
    /* A fetched partition is staged and verified (pinstall_pending is
     * 1): close the group and the partition, swap, reopen. */
    void (*installed)(void *ctx, uint64_t checkpoint_op);
    /* The session ended without an install (the engine's transfer is to
     * be ended: repair resumes and asks again). */
    void (*failed)(void *ctx, const char *why);
    /* Optional: fsyncs fds[0..n) off the loop thread (dup what is kept:
     * the fds are closed when this returns), then pxfer_fsynced(tok) on
     * the loop once all are durable (a failed fsync ends the process;
     * the completion may come before this returns).
     * NULL: the install's fsyncs run on the calling thread. */
    void (*fsync)(void *ctx, const int *fds, size_t n, struct pxfer_sync *tok);
};

/* The fetch sessions running among the groups that share it (one data
 * shard's): a session holds its artifacts in memory (up to
 * XFER_ARTIFACT_CAP each) from its Target to the end of its install, so
 * at most `max` run at once; pxfer_start_nonce refuses another (-EBUSY,
 * counted in `refused`: the group's repair asks again later). */
struct pxfer_budget {
    unsigned running, max;
    uint64_t refused;
};

struct pxfer_opts {
    struct vs_u128 cluster;
    uint64_t group;
    uint8_t self;
    uint32_t chunk_max;          /* 0 = XFER_CHUNK_MAX */
    uint32_t stall_ticks;        /* 0 = 100 */
    struct pxfer_budget *budget; /* borrowed; NULL: no limit */
};

struct pxfer_info {
    enum xfer_stage stage;
    uint64_t sessions, completed, abandoned;
    uint64_t served_offers, served_chunks, served_bytes;
    uint64_t fetched_bytes, refused_chunks;
    uint64_t last_bytes; /* the last installed session */
    double last_secs;
    char last[160]; /* how the last session ended */
};

struct pxfer;

/* p and j: the group's partition and journal (borrowed; the group
 * outlives this). 0 or -ENOMEM. */
int pxfer_create(const struct pxfer_opts *o, const struct pxfer_hooks *h,
                 struct vs_part *p, struct vs_pjournal *j, struct pxfer **out);
void pxfer_destroy(struct pxfer *x);

/* A transfer frame (commands 22-25) from replica index `from` of the
 * group (the runtime checked the link is that member's). */
void pxfer_on_frame(struct pxfer *x, uint8_t from, const void *frame,
                    size_t len);
/* Starts a fetch from `peer` with a fresh nonce (non-zero, never used
 * before by this replica: the caller derives it from its per-boot random
 * seed and a counter, so the simulator stays deterministic). -EALREADY
 * if one runs, -EBUSY if the budget's sessions all run, -EINVAL for a
 * zero nonce; 0. */
int pxfer_start_nonce(struct pxfer *x, uint8_t peer, uint32_t durable_view,
                      struct vs_u128 nonce);
/* The primary changed while fetching: ask `peer`. */
void pxfer_retarget(struct pxfer *x, uint8_t peer);
int pxfer_fetching(const struct pxfer *x);
int pxfer_wants_peer(const struct pxfer *x);
int pxfer_peer(const struct pxfer *x);
/* One 10 ms tick: offer hashing steps, expiry, stalls, re-requests. */
void pxfer_tick(struct pxfer *x);
void pxfer_info(const struct pxfer *x, struct pxfer_info *out);
/* hooks.fsync's completion: the install goes on (the staged directory
 * published, then `installed`); a token whose pxfer was destroyed
 * meanwhile is only freed. */
void pxfer_fsynced(struct pxfer_sync *tok);

#endif /* VS_SHARD_SERVE_PXFER_H */
