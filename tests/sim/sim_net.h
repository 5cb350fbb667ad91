/*
 * tests/sim/sim_net.h - a deterministic in-memory network and disk that
 * drive N real VSR engines (shard/vsr/engine.h).
 *
 * Role: the test binding of the engine. One struct sim holds N replicas,
 * each with its engine, a simulated disk (durable journal, superblock,
 * snapshot) and a toy state machine (a running XXH3 over applied bodies),
 * plus a network of frames in flight. Time is a tick counter; every
 * random choice (loss, duplication, delay) comes from the seed, so a run
 * is reproduced exactly by its seed.
 *
 * Checkers, run on every action (a failure is counted in sim->violations
 * and the first one described in sim->violation):
 *  - persist before send: an outgoing PrepareOk/Commit/SVC/DVC/SV carries
 *    a view <= the view in the replica's simulated superblock;
 *  - R3: a PrepareOk for op N leaves only if the simulated disk holds N
 *    durably with the acknowledged checksum;
 *  - journal appends carry a valid identity and body checksum, in op order;
 *  - commits arrive strictly in op order, over the hash chain, with the
 *    durable body; one history: no op commits with two checksums on any
 *    two replicas;
 *  - persist before send for log_view: PrepareOk/Commit/SV of view V
 *    leave only with log_view V durable, a DVC only with its log_view
 *    durable; R2: never two different DVCs for one view;
 *  - journal appends never leave a hole (the WAL is a contiguous run);
 *  - truncations never reach an applied op;
 *  - superblock writes never regress view, log_view or checkpoint_op;
 *  - replies match the op and client they answer;
 *  - a replica in state transfer sends no PrepareOk and applies no op
 *    beyond the COMMIT outstanding when it was armed.
 *
 * Callers: tests only (one thread).
 */
#ifndef VS_TESTS_SIM_NET_H
#define VS_TESTS_SIM_NET_H

#include <stddef.h>
#include <stdint.h>

#include "shard/vsr/engine.h"

#define SIM_REPLICAS_MAX 8
#define SIM_OPS_MAX      1024 /* ops a run may reach */

struct sim_entry { /* a durable journal entry */
    struct vs_hdr_prepare h;
    uint8_t *body; /* h.f.size - 256 bytes (NULL if empty) */
    int present;
};

struct sim_pending { /* a journal append not yet durable */
    uint64_t op;
    uint64_t due;
    uint8_t *frame;
    uint32_t size;
};

struct sim_replica {
    struct vs_vsr *eng; /* NULL while crashed */
    /* disk */
    struct sim_entry journal[SIM_OPS_MAX + 1]; /* by op */
    uint64_t journal_first;                    /* lowest kept op, 0 = none */
    struct sim_pending *pending;
    size_t pending_len, pending_cap;
    int hold_journal; /* appends wait for sim_complete_journal */
    struct vs_vsr_persist sb;
    int sb_pending;
    struct vs_vsr_persist sb_writing;
    uint64_t sb_due;
    int hold_superblock;
    uint64_t snap_op; /* snapshot: state at snap_op */
    uint64_t snap_hash;
    struct vs_u128 snap_checksum; /* identity checksum of op snap_op */
    /* state machine */
    uint64_t applied;
    uint64_t sm_hash;
    struct vs_u128 applied_checksum;
    uint64_t replies;
    uint64_t commits_replayed; /* COMMITs served without a held body */
    uint64_t truncations;      /* JOURNAL_TRUNCATE performed */
    uint64_t transfers;        /* STATE_TRANSFER actions seen */
    uint64_t cut_faulty;       /* faulty op for the next restart */
    int rebuilt;               /* restarted by sim_rebuild */
    /* state transfer driven by the harness (sim.xfer_ticks > 0) */
    int xfer;                /* armed: fetching from xfer_src */
    unsigned xfer_src;       /* serving replica */
    uint64_t xfer_due;       /* tick the fetch completes */
    uint64_t xfer_applied;   /* applied when armed */
    uint64_t installs;       /* snapshots installed */
    uint64_t installs_table; /* table-only installs */
    uint64_t retargets;      /* serving replica replaced mid-fetch */
    /* R2 checker: the last DVC this replica sent */
    uint32_t dvc_view;
    int dvc_set;
    struct vs_u128 dvc_sum;
};

struct sim_msg {
    uint64_t due;
    uint64_t seq;
    uint8_t from, to;
    uint32_t len;
    uint8_t *frame;
};

struct sim_reply {
    uint8_t replica;
    struct vs_u128 client;
    uint64_t request;
    uint64_t op;
};

/* Drop hook: return 1 to lose this frame (called before random loss). */
typedef int sim_filter_fn(void *ctx, unsigned from, unsigned to,
                          const struct vs_header *h);

struct sim {
    unsigned n;
    uint64_t now;
    uint64_t rng[4];
    struct vs_vsr_options opt; /* template; replica and state per replica */
    struct sim_replica r[SIM_REPLICAS_MAX];
    /* network */
    struct sim_msg *net;
    size_t net_len, net_cap;
    uint64_t net_seq;
    unsigned loss_per_mille, dup_per_mille;
    unsigned delay_min, delay_max; /* ticks */
    unsigned disk_delay;           /* ticks until an append is durable */
    /* Ticks a state transfer's fetch takes (0: STATE_TRANSFER actions are
     * only counted, nothing is fetched). */
    unsigned xfer_ticks;
    int xfer_no_op_checksum; /* install without op's prepare checksum */
    sim_filter_fn *filter;
    void *filter_ctx;
    uint32_t cut[SIM_REPLICAS_MAX]; /* partitions: bit j = no link to j */
    uint64_t cmd_sent[32];          /* frames sent by command */
    uint64_t sent, dropped, delivered;
    /* history */
    struct vs_u128 history[SIM_OPS_MAX + 1];
    uint8_t history_set[SIM_OPS_MAX + 1];
    struct sim_reply *replies;
    size_t replies_len, replies_cap;
    /* checkers */
    unsigned violations;
    char violation[256];
};

/* Options every test starts from (tiny test profile). */
void sim_default_options(struct vs_vsr_options *o, unsigned n);
/* Creates n fresh replicas (empty disks, superblock = o's durable values)
 * with the given seed. Returns 0 or -EINVAL (engine refused). */
int sim_init(struct sim *s, unsigned n, uint64_t seed,
             const struct vs_vsr_options *o);
void sim_fini(struct sim *s);

/* Submits a request to replica i (which should be the primary) with
 * client id {client, 0}, request number, operation and body; returns
 * vsr_on_request's code and drains the queues. */
int sim_request(struct sim *s, unsigned i, uint64_t client, uint64_t request,
                uint8_t operation, const void *body, uint32_t len);
/* Performs every queued action of every replica (re-entrantly). */
void sim_drain(struct sim *s);
/* One tick: delivers due frames, completes due disk writes, ticks every
 * live engine, drains. */
void sim_step(struct sim *s);
/* Steps until every live replica applied `op` (and the primary's
 * pipeline is empty) or max_ticks pass. Returns 0 or -ETIMEDOUT. */
int sim_run_until_applied(struct sim *s, uint64_t op, uint64_t max_ticks);

/* Completes replica i's held journal append of op (hold_journal mode). */
int sim_complete_journal(struct sim *s, unsigned i, uint64_t op);
/* Completes replica i's held superblock write. */
int sim_complete_superblock(struct sim *s, unsigned i);
/* Crash: the engine goes away with every write that was not durable. */
void sim_crash(struct sim *s, unsigned i);
/* Restart from the simulated disk (superblock, snapshot, journal).
 * Returns vsr_create's code; `reason` gets its refusal. */
int sim_restart(struct sim *s, unsigned i, char *reason, size_t reason_len);
/* Partitions: cut (1) or heal (0) the link i <-> j, or all of i's. */
void sim_partition(struct sim *s, unsigned i, unsigned j, int cut);
void sim_isolate(struct sim *s, unsigned i, int cut);
/* Crashed replica i: damage its last journal entry, as a boot that cuts
 * a damaged tail does; the next sim_restart passes it as faulty_op.
 * Returns 0, -EBUSY (running) or -ENOENT (nothing above the snapshot). */
int sim_cut_tail(struct sim *s, unsigned i);
/* The same for the last k entries cut together (a damaged tail several
 * entries long): the next restart passes the highest op cut as faulty_op,
 * the top of the faulty range. */
int sim_cut_tail_n(struct sim *s, unsigned i, unsigned k);
/* Replica i lost its disk: wipe it and restart it rebuilt (R8). */
int sim_rebuild(struct sim *s, unsigned i, char *reason, size_t reason_len);
/* Snapshot of replica i's state at its applied op, then vsr_checkpoint.
 * When the superblock pairing is durable the journal below is drained. */
int sim_checkpoint(struct sim *s, unsigned i);

/* Arms a state transfer on replica i fetching from replica src (as the
 * binding does on STATE_TRANSFER). Returns vsr_transfer_begin's code. The
 * fetch completes xfer_ticks later from src while src is a live settled
 * primary with a snapshot, else from whichever replica becomes one (a
 * retarget restarts the fetch); the install copies src's snapshot: state
 * and journal replaced if ahead of replica i's applied op, else only the
 * (modelled) client table. Checkers: no PrepareOk and no commit beyond
 * the one outstanding while armed. */
int sim_transfer_start(struct sim *s, unsigned i, unsigned src);

/* Deterministic PRNG of the harness. */
uint64_t sim_rand(struct sim *s);

#endif /* VS_TESTS_SIM_NET_H */
