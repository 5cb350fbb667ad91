/*
 * shard/zero/transfer.h - shard 0's metadata state transfer: binds the
 * I/O-free receiver and offers (shard/vsr/xfer_fetch.h, xfer_serve.h) to
 * the replica links, snapshot.bin and the commit path.
 *
 * Serving (a caught-up primary only; anything else answers "not
 * available" with its reason): a RequestStateTransfer gets the cached
 * offer of (requester, nonce) if one exists (first wins), else a new one
 * built from the durable checkpoint (snapshot payload: op and checksum of
 * the superblock pairing, so nothing is read to build it), the client
 * table in its transfer form, encoded once per offer, and the checkpoint
 * op's stored prepare header (the superblock records it; without it the
 * checkpoint is not offered: the receiver could not restart on it). Chunks of
 * the snapshot are read from snapshot.bin in pieces of at most the chunk size
 * (shard/storage/snapshot_reader.h: trailer checked and never sent, every byte
 * streaming-verified); a snapshot that fails verification is logged, its offers
 * dropped, and it is never offered again until a new checkpoint replaces it.
 *
 * Fetching: zt_start (the engine asked for a transfer: a peer answered
 * RangeEvicted, or a StartView adopted beyond the peers' WAL) arms a
 * session with a fresh random nonce against the primary; the receiver's
 * requests go out on the links; once every artifact is verified the
 * install hook runs (the commit path writes snapshot + pairing, restores
 * the state into both left-right instances, installs the client table,
 * raises its commit floor) and the session ends. Progress (stage, peer,
 * bytes, rate) is logged and reported by zt_info.
 *
 * Callers: shard 0 only (one thread). No libevent here: the binding
 * calls zt_on_frame for commands 22-25 and zt_tick every 10 ms.
 */
#ifndef VS_SHARD_ZERO_TRANSFER_H
#define VS_SHARD_ZERO_TRANSFER_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"
#include "shard/storage/io.h"
#include "shard/vsr/xfer_fetch.h"
#include "shard/vsr/xfer_serve.h"

/* The verified artifacts of a finished fetch (borrowed until the install
 * hook returns). */
struct zt_artifacts {
    const uint8_t *snapshot;
    size_t snapshot_len;
    uint64_t snapshot_op;
    const uint8_t *table;
    size_t table_len;
    uint64_t table_frontier;
    const uint8_t *prepare; /* VS_HEADER_SIZE bytes, or NULL */
    uint64_t commit_op, commit_max;
};

/* What the serving side needs to know about this replica right now. */
struct zt_serve_state {
    int caught_up_primary; /* settled primary, commit_min == commit_max */
    uint32_t view;         /* durable view (stamped on frames) */
    uint64_t commit_min, commit_max;
    uint64_t checkpoint_op;             /* 0 = no checkpoint yet */
    struct vs_u128 checkpoint_checksum; /* snapshot payload's XXH3 */
    /* the stored prepare header of checkpoint_op (zero: unknown) */
    struct vs_hdr_prepare checkpoint_prepare;
};

struct zt_hooks {
    void *ctx;
    /* Fills *s; called for every RequestStateTransfer. */
    void (*serve_state)(void *ctx, struct zt_serve_state *s);
    /* Encodes the client table's transfer form at commit_min into w and
     * sets *frontier = commit_min. 0 or -errno. */
    int (*encode_table)(void *ctx, struct vs_wbuf *w, uint64_t *frontier);
    /* Sends one frame to a peer (best effort). */
    void (*send)(void *ctx, uint8_t peer, const void *frame, size_t len);
    /* Installs verified artifacts (a->prepare: the snapshot op's prepare
     * header, NULL if the server sent none). Returns 0, -EPROTO when an
     * artifact does not decode (charged to the snapshot generation),
     * -VS_EFATAL, or another -errno; err gets one line. */
    int (*install)(void *ctx, const struct zt_artifacts *a, char *err,
                   size_t errlen);
};

struct zt_opts {
    struct vs_u128 cluster;
    uint64_t group;
    uint8_t self;
    const char *metadata_dir; /* where snapshot.bin lives */
    struct vs_sio *io;
    uint32_t chunk_max;   /* 0 = XFER_CHUNK_MAX */
    uint32_t stall_ticks; /* 0 = 100 */
};

struct zt_info {
    enum xfer_stage stage;
    int peer;                /* serving peer, -1 when idle */
    uint64_t fetched, total; /* bytes of the current session */
    uint64_t ticks;          /* ticks since the session was armed */
    uint64_t sessions, completed, abandoned;
    uint64_t served_offers, served_bytes;
    uint64_t last_bytes; /* bytes of the last installed session */
    double last_secs;    /* its duration, seconds (monotonic clock) */
    char last[160];      /* how the last session ended */
};

struct zt;

int zt_create(const struct zt_opts *o, const struct zt_hooks *h,
              struct zt **out, char *err, size_t errlen);
void zt_destroy(struct zt *t);

/* 1 for commands 22-25 (the binding routes them here). */
int zt_is_transfer_command(uint8_t command);
/* A transfer frame from an authenticated peer. */
void zt_on_frame(struct zt *t, uint8_t from, const void *frame, size_t len);
/* Starts a fetch from `peer` (the current primary). -EALREADY if one is
 * running (its nonce and budget are kept); 0. */
int zt_start(struct zt *t, uint8_t peer, uint32_t durable_view);
/* zt_start with the caller's nonce (non-zero, else -EINVAL): the
 * deterministic simulator draws it from its seed. */
int zt_start_nonce(struct zt *t, uint8_t peer, uint32_t durable_view,
                   struct vs_u128 nonce);
/* The primary changed while fetching: ask `peer` instead. */
void zt_retarget(struct zt *t, uint8_t peer);
/* Ends a running fetch without installing (no peer can serve it). */
void zt_abandon(struct zt *t, const char *why);
/* 1 while a fetch session runs (the engine withholds PrepareOk and the
 * binding gates its commit walk). */
int zt_fetching(const struct zt *t);
/* 1 when the fetch gave up on its peer and waits for zt_retarget. */
int zt_wants_peer(const struct zt *t);
/* One 10 ms tick: stalls, re-requests, offer expiry. */
void zt_tick(struct zt *t);
void zt_info(const struct zt *t, struct zt_info *out);

#endif /* VS_SHARD_ZERO_TRANSFER_H */
