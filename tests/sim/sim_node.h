/*
 * tests/sim/sim_node.h - one simulated replica: the real VSR engine bound
 * to the real storage code (journal, superblock, snapshot, recovery
 * verdict) on a struct sim_disk and to the real metadata state machine
 * and client table, the way shard 0 binds them (shard/zero/boot.c and
 * commit.c are the model).
 *
 * Boot: recovery_open -> refusal (the node stays down, reason kept) or
 * BOOT: state and client table from the snapshot, the engine from the
 * superblock and the journal headers; the engine replays the journal
 * through COMMIT actions (bodies read from the journal).
 * Actions: JOURNAL_APPEND -> wal_append (write + fsync), completion after
 * `disk_delay` ticks; SUPERBLOCK_WRITE -> sb_write, completion after
 * `disk_delay` ticks; COMMIT -> meta_apply + reply frame
 * (commit_reply_frame, view and replica 0: see do_commit) recorded in
 * the client table, then
 * vsr_on_commit_applied; REPLY -> the client callback; SEND -> the
 * network callback; JOURNAL_TRUNCATE -> wal_truncate_from; SEND_PREPARE
 * -> the stored prepare, if its identity matches, as a RepairPrepare;
 * STATE_TRANSFER -> the state-transfer binding (sim_xfer.h: shard 0's
 * zt module, transfer frames 22-25, the install). The superblock
 * records the checkpoint op's prepare header (VsrState v2) and a boot
 * leads the engine's headers with it when the journal no longer holds
 * that op, as shard 0 does. Checkpoint every
 * `ckpt_every` applied ops: snapshot (meta_snapshot_encode + snapfile_write) ->
 * vsr_checkpoint -> when that superblock write is durable, wal_drain_margin
 * keeping the engine's repair margin below the checkpoint op (as shard 0).
 * Client
 * requests: the client table first (Duplicate -> the cached frame, evictions),
 * Register always proposes; then vsr_on_request; refusals answer with a status
 * reply (57 transient, 1 error, 3 invalid).
 *
 * Per op, the node remembers (struct sim_opmark, the simulator's
 * knowledge, kept across boots): every checksum it reported durable to
 * its engine (then it may have acknowledged that prepare; a boot counts
 * each entry its journal holds), where its latest append of the op
 * lies in journal.wal, and whether its last boot cut the op's copy as a
 * damaged tail that the disk says was a torn write never fsynced
 * (sim_disk_torn_unsynced). The liveness checker's torn-copies waiver
 * reads them (sim_world.c); its counterfactual (cfg.lose_lo..lose_hi)
 * has the disk lose those appends whole if a crash would tear them.
 *
 * A fatal storage error (a crash armed on the disk, or a real error)
 * stops the node at once: `up` becomes 0 and `fatal` says why; the world
 * then crashes the disk and may restart the node later.
 *
 * Callers: the simulator only (one thread).
 */
#ifndef VS_TESTS_SIM_NODE_H
#define VS_TESTS_SIM_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"
#include "shard/meta/apply.h"
#include "shard/meta/client_table.h"
#include "shard/meta/state.h"
#include "shard/storage/journal.h"
#include "shard/storage/superblock.h"
#include "shard/vsr/engine.h"
#include "tests/sim/sim_disk.h"

struct sim_node;
struct zt;
struct zinst_scratch;

/* Hooks into the world (the node never sees other nodes). */
struct sim_node_hooks {
    void *ctx;
    /* a replica frame to replica `to` */
    void (*send)(void *ctx, struct sim_node *n, unsigned to, const void *frame,
                 uint32_t len);
    /* a frame for client `client` (reply, status reply, eviction) */
    void (*to_client)(void *ctx, struct sim_node *n, struct vs_u128 client,
                      const void *frame, uint32_t len);
    /* op applied here: its prepare header and the reply body */
    void (*committed)(void *ctx, struct sim_node *n,
                      const struct vs_hdr_prepare *p, const uint8_t *body,
                      uint32_t body_len, const uint8_t *out, uint32_t out_len);
    /* a checkpoint's superblock pairing is durable */
    void (*checkpointed)(void *ctx, struct sim_node *n, uint64_t op,
                         struct vs_u128 checksum);
};

struct sim_node_config {
    struct vs_u128 cluster;
    unsigned replica, replica_count;
    uint32_t wal_slots;
    uint32_t pipeline;
    uint32_t ckpt_every; /* applied ops between checkpoints */
    uint32_t disk_delay; /* ticks until a write completes */
    struct meta_caps caps;
    uint64_t seed;
    int own_reply_bytes; /* cache replies with this replica's id and view,
                            as shard 0 did before finding F1's fix */
    /* shard 0's group commit: an append is written without an fsync and
     * made durable by one wal_sync at the first completion due (or by
     * the append that would exceed WAL_GROUP_UNSYNCED_MAX); boot scans
     * with that window (wal_options.unsynced_max) */
    int group_commit;
    /* the torn-copies waiver's counterfactual: appends of ops lose_lo ..
     * lose_hi that a crash would tear are lost whole (0: none) */
    uint64_t lose_lo, lose_hi;
    const struct sim_node_hooks *hooks;
};

#define SIM_OPMARK_SUMS 4

struct sim_opmark {
    /* checksums reported durable here; ndurable > SIM_OPMARK_SUMS: more
     * than that (every checksum then counts as reported) */
    struct vs_u128 durable[SIM_OPMARK_SUMS];
    uint8_t ndurable;
    /* the last boot cut this op's copy, a torn write never fsynced;
     * torn_sum its header's checksum (zero: the header did not verify) */
    uint8_t torn;
    struct vs_u128 torn_sum;
    uint64_t off, end; /* the latest append of the op in journal.wal */
};

struct sim_io_done { /* a write whose completion is not delivered yet */
    int kind;        /* 1 journal, 2 superblock */
    uint64_t due;
    uint64_t op;
    struct vs_u128 checksum;
    struct vs_vsr_persist persist;
    /* journal: an earlier completion of the same (op, checksum) already
     * reported it durable (an append repeated after a truncation) */
    int covered;
};

struct sim_node {
    struct sim_node_config cfg;
    struct sim_disk *disk;
    char data_dir[512], meta_dir[512];
    int up;
    char fatal[512];  /* why the node stopped (fatal error) */
    char refuse[512]; /* the last boot refusal */
    int refused;      /* the last boot was refused */
    int rebuilt;      /* recovering from a lost disk, not caught up yet */
    uint64_t boots;
    uint64_t now; /* ticks, set by the world */
    struct vs_vsr *eng;
    struct wal journal;
    int journal_open;
    uint32_t unsynced; /* group_commit: appends written, not yet fsynced */
    struct sb_store sb;
    struct vs_vsr_persist sb_durable; /* as last written to disk */
    int sb_durable_set;
    void *state;
    struct meta_client_table ct;
    struct meta_result res;
    struct vs_wbuf body, frame, snap;
    uint8_t *rbody;
    size_t rbody_cap;
    struct sim_io_done *io;
    size_t nio, io_cap;
    int ckpt_pending;
    uint64_t ckpt_op;
    uint64_t last_ckpt_op;
    /* state transfer (sim_xfer.h) */
    struct zt *zt;
    uint64_t rng;                       /* nonces: from cfg.seed and boots */
    struct vs_hdr_prepare ckpt_prepare; /* checkpoint op's header */
    uint64_t snap_op;                   /* what snapshot.bin holds */
    struct vs_u128 snap_sum;
    int xfer_fatal;           /* storage error inside the install hook */
    struct zinst_scratch *xt; /* a transferred client table waiting for */
    int xt_pending;           /* the commit walk to reach its op */
    uint32_t xt_backoff;      /* ticks before a failed fetch is retried */
    int xt_want;              /* a STATE_TRANSFER waits for the back-off */
    unsigned xt_want_replica;
    uint64_t xfer_crash_at; /* scenarios: arm a crash at that storage
                               call when an install starts (0: none) */
    int xfer_serve_empty;   /* scenarios: the serving side answers every
                               chunk with zero bytes (sim_xfer.h) */
    /* marks (coverage) */
    uint64_t m_torn_cut, m_damaged_cut, m_checkpoints, m_replayed;
    uint64_t m_group_tails; /* boots whose cut was an unsynced group tail */
    uint64_t m_mark_cuts;   /* boots that cut above the durable mark */
    uint64_t m_sb_writes, m_truncations, m_state_transfer;
    /* boots whose recovery dropped damaged WAL entries the snapshot
     * covers, and the highest op the last such boot dropped */
    uint64_t m_wal_dropped, wal_dropped_last;
    uint64_t m_xfer_begun, m_xfer_installs, m_xfer_table_only,
        m_xfer_table_installed, m_xfer_table_refused, m_xfer_retargets,
        m_xfer_abandoned, m_xfer_served, m_xfer_served_bytes,
        m_xfer_emptied; /* chunks sent with zero bytes (xfer_serve_empty) */
    struct vs_vsr_stats acc; /* engine counters of earlier lives */
    struct sim_opmark *om;   /* by op (see the header) */
    uint64_t om_cap;
};

/* Prepares the node over `disk` (files in disk->dir == DATA/metadata). */
void sim_node_init(struct sim_node *n, const struct sim_node_config *cfg,
                   struct sim_disk *disk, const char *data_dir);
void sim_node_fini(struct sim_node *n);
/* Writes the first superblock (vstreamd format). 0 or -errno. */
int sim_node_format(struct sim_node *n);
/* Boots from the disk. 0 (up), 1 (refused: n->refuse), or -errno.
 * cut_damaged_tail: the operator's --cut-damaged-tail (one replica). */
int sim_node_boot(struct sim_node *n, int cut_damaged_tail);
/* `vstreamd recover` after a lost disk (a cluster replica, down): wipe,
 * format, boot as rebuilt (it never votes below the view it adopts + 2)
 * until the engine says it caught up; the mark survives restarts
 * meanwhile. Same returns as sim_node_boot. */
int sim_node_recover(struct sim_node *n);
/* Stops the node without touching the disk (the world crashes it). */
void sim_node_stop(struct sim_node *n);
/* A fatal storage error: records why in n->fatal and stops the node. */
void sim_node_fail(struct sim_node *n, const char *what, int rc);
/* The node's deterministic random stream (nonces). */
uint64_t sim_node_rand(struct sim_node *n);

/* Inputs; each drains the engine's actions. */
void sim_node_message(struct sim_node *n, const void *frame, uint32_t len);
void sim_node_request(struct sim_node *n, const struct vs_hdr_request *req,
                      const void *body, uint32_t len);
void sim_node_tick(struct sim_node *n);
/* 1 while the journal append of (op, checksum) is issued but its
 * completion not yet reported to the engine: a PrepareOk for it then
 * breaks R3 (acknowledged before durable). */
int sim_node_append_pending(const struct sim_node *n, uint64_t op,
                            struct vs_u128 checksum);
/* 1 if this node ever reported (op, *sum) durable to its engine (sum
 * NULL: any checksum of op), so it may have acknowledged it. */
int sim_node_ever_durable(const struct sim_node *n, uint64_t op,
                          const struct vs_u128 *sum);
/* 1 if the node's last boot cut its copy of op as a torn write that
 * never completed an fsync and no append of op came since; *sum its
 * header's checksum (zero: unknown). */
int sim_node_torn_copy(const struct sim_node *n, uint64_t op,
                       struct vs_u128 *sum);
/* The engine's counters summed over every life of the node (the
 * simulator's coverage marks). */
void sim_node_stats(const struct sim_node *n, struct vs_vsr_stats *out);

#endif /* VS_TESTS_SIM_NODE_H */
