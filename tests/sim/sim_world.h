/*
 * tests/sim/sim_world.h - the deterministic simulator's world: N
 * simulated replicas (sim_node), their disks (sim_disk), a faulty
 * network, simulated clients, the fault schedule drawn from one seed and
 * the checkers run after every step.
 *
 * One process, one thread, a virtual clock in ticks of 10 ms; every
 * random choice comes from the run's PRNG, so a seed replays exactly.
 *
 * Checkers (a failure stops the run with one line in w->failure):
 *  - history: no op committed with two checksums; commits in op order;
 *  - determinism: equal reply bodies for the same op on every replica,
 *    equal checkpoint checksums at the same op;
 *  - durability: every op whose reply reached a client is in the history,
 *    and after the faults stop the cluster commits past every such op;
 *  - at-most-once: no (client, request) committed twice; a client's
 *    retries get the same reply bytes (view and replica bytes aside);
 *  - sequential spec: every reply a client accepted equals the reply of
 *    an oracle state machine applying the committed history in order,
 *    and its op is above every op acknowledged before it was first sent;
 *  - persist-before-send: PrepareOk, Commit, SVC, DVC and StartView carry
 *    a view (and DVC a log_view) <= the sender's superblock on disk;
 *  - superblock monotonic: every boot reads a view, log_view and
 *    checkpoint at or above the last superblock write that completed;
 *  - liveness: after the faults stop, within a bound of ticks, every
 *    client's outstanding request is answered and the live replicas
 *    converge on one commit; a replica left behind its peers' journals
 *    beside a caught-up primary fails it (state transfer could have
 *    run); only a view whose primary is itself behind every peer's
 *    journal is waived, counted in mark `waived_transfer`, and a stall
 *    undecidable without the replicas that refuse to boot (an op no
 *    live replica holds nor can nack away), counted in `waived_refused`
 *    and proven by vsr_sim.c's counterfactual run of the same seed with
 *    those replicas made bootable (sim_params.refused_bootable); and,
 *    with every replica up, a stall whose op x no replica holds intact
 *    because each copy of x is absent or a damaged tail that its disk
 *    says a crash tore from a write that never completed an fsync (and
 *    no replica ever reported x durable: nothing acknowledged it),
 *    counted in `waived_torn` and proven by vsr_sim.c's counterfactual
 *    run of the same seed with those torn appends lost whole
 *    (sim_params.torn_lost), which must converge unwaived;
 *  - equal state: after convergence, replicas Normal at the same commit
 *    encode to the same snapshot bytes (state machine + client table).
 *
 * Callers: tests/sim/vsr_sim.c (one thread).
 */
#ifndef VS_TESTS_SIM_WORLD_H
#define VS_TESTS_SIM_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "tests/sim/sim_disk.h"
#include "tests/sim/sim_node.h"

#define SIM_N_MAX       5
#define SIM_CLIENTS_MAX 16
#define SIM_HIST_MAX    8192
#define SIM_ROT_MAX     64

/* Fault switches: a fault the engine cannot yet survive is turned off by
 * its switch (and the report says which), never silently. */
struct sim_faults {
    int loss, dup, delay, partitions;
    int crash_backup, crash_primary, restart;
    int torn;            /* crashes armed inside storage calls */
    int bitrot;          /* byte flips in the WAL while down (<= f) */
    int latent;          /* some of that rot is a latent read error */
    int sb_corrupt;      /* one superblock slot flipped while down */
    int cluster_restart; /* every replica down at once, then up */
    int wipe;            /* a lost disk, then recover (one at a time) */
    int beyond_model;    /* the same WAL op rotted on every replica */
};

struct sim_params { /* drawn per seed */
    unsigned n;
    unsigned loss_pm, dup_pm; /* per mille */
    unsigned delay_min, delay_mean;
    unsigned part_on_pm, part_off_pm; /* per 10000 ticks */
    unsigned crash_pm;                /* per 100000 ticks */
    unsigned restart_pm;              /* per 10000 ticks */
    unsigned tear_pm;
    unsigned disk_delay;
    unsigned ckpt_every;
    unsigned wal_slots;
    unsigned clients;
    uint64_t ticks;      /* of faults; then the liveness phase */
    int own_reply_bytes; /* cache replies as shard 0 did before F1's fix */
    /* journal appends stay unsynced until their completion, up to
     * WAL_GROUP_UNSYNCED_MAX at once, as shard 0's group commit leaves
     * them (a crash may keep a later one and lose an earlier one) */
    int group_commit;
    /* at-most-once tolerates a re-execution whose first execution ran
     * after its session was evicted (finding F3 in sim-findings.md) */
    int allow_sessionless;
    /* ... and one across an eviction and a re-register (finding F2) */
    int allow_lost_session;
    /* one replica refusing a damaged WAL tail stays down (no operator
     * --cut-damaged-tail): the beyond-model suite */
    int no_operator_cut;
    /* liveness needs every replica Normal at one commit (scenarios) */
    int converge_all;
    /* The counterfactual of the refused-votes waiver: when the faults
     * stop, a replica that refuses to boot gets its disk's rot undone
     * (sim_world_unrot: the flipped bytes restored, its bad sectors
     * remapped, as an operator restoring the disk would) and boots; no
     * refused-votes waiver applies. 2: the same, and the op the waiver
     * named (bootable_rot_op) then rots on that replica too, so no
     * replica holds it intact (a world where the waiver must not
     * apply). */
    int refused_bootable;
    uint64_t bootable_rot_op;
    /* with refused_bootable 2, for a partition group's waiver instead:
     * the partition frames of the nodes made bootable are dropped, so
     * their copies and votes never reach the group (sim_parts.c) */
    int bootable_mute_parts;
    /* a partition waiver resting on a group refused after a crash alone
     * fails the run (the scenario of that product finding) */
    int strict_crash_refusal;
    /* The counterfactual of the torn-copies waiver: 1: appends of ops
     * torn_lo..torn_hi on the replicas of torn_mask that a crash would
     * tear are lost whole instead (the WAL then cuts them as never
     * written); 2: nothing is lost (the mutation whose counterfactual
     * must not converge). Either way no torn-copies waiver applies. */
    int torn_lost;
    uint64_t torn_lo, torn_hi;
    unsigned torn_mask;
    /* the waiver's mutation: the disks of these replicas record every
     * torn write as fsynced before the crash (an entry fsynced, then
     * damaged in that sector: the same bytes), so it must not apply */
    unsigned torn_synced_mask;
};

struct sim_client {
    struct vs_u128 id;
    uint64_t session; /* 0: not registered */
    int registering;
    uint64_t request; /* the in-flight (or last) request number */
    int busy;         /* a request is outstanding */
    uint8_t operation;
    uint8_t *body;
    uint32_t body_len;
    struct vs_u128 checksum;
    uint64_t first_sent, last_sent, retry_at;
    uint64_t floor_op; /* highest acked op when first sent */
    unsigned target;
    uint8_t *reply; /* first reply accepted for `request` */
    uint32_t reply_len;
    uint64_t reply_request;
    int held; /* a reconnect: the request to resend after Register */
    uint8_t held_op;
    uint8_t *held_body;
    uint32_t held_len;
    struct vs_u128 held_checksum;
    uint64_t held_first, held_floor;
    uint64_t done; /* requests answered */
    uint64_t evicted;
};

struct sim_msg {
    uint64_t due, seq;
    int to_client; /* 1: `to` is a client index */
    unsigned from, to;
    uint32_t len;
    uint8_t *frame;
};

struct sim_hist {
    int set;
    struct vs_u128 checksum;
    struct vs_u128 client;
    uint64_t request;
    uint8_t operation;
    uint8_t *body; /* the prepare body */
    uint32_t body_len;
    uint8_t *out; /* the reply body computed by the first replica */
    uint32_t out_len;
    int acked;
    int ckpt_set;
    struct vs_u128 ckpt;
    int sessionless; /* executed after its client's session was evicted */
    int evicted_set; /* this Register evicted `evicted`'s session */
    struct vs_u128 evicted;
};

struct sim_marks {
    uint64_t group_tails; /* boots that cut an unsynced group tail */
    uint64_t mark_cuts;   /* boots that cut above the durable mark */
    uint64_t crashes, crashes_in_io, restarts, refusals, torn_cut, damaged_cut,
        checkpoints, replays, evictions, reregisters, retries, duplicates,
        bitrot, sb_corrupt, partitions, view_changes, cluster_restarts, commits,
        acked, lost_sessions, sessionless, wipes, waived_transfer,
        modelled, /* committed ops held against the reference model */
        latent,   /* WAL sectors made unreadable while a replica was down */
        waived_refused,
        waived_torn, /* stalls on torn, never-fsynced copies (proven) */
        lost_whole;  /* torn appends the counterfactual lost whole */
    /* state transfer (sim_xfer.h): sessions begun, snapshot installs,
     * table-only installs, retargets, sessions abandoned, offers served */
    uint64_t xfer_begun, xfer_installs, xfer_table_only, xfer_retargets,
        xfer_abandoned, xfer_served, xfer_tables; /* tables installed */
    /* from the engine's counters */
    uint64_t nack_truncations, older_adopted, faulty_not_nacked, repairs,
        truncations, range_evicted, sv_adopted, probe_elections,
        faulty_repaired, divergences;
};

struct sim_world {
    struct sim_params p;
    struct sim_faults f;
    uint64_t seed;
    uint64_t rng[4];
    uint64_t now;
    int trace;
    char root[256];
    struct vs_u128 cluster;
    struct sim_disk disk[SIM_N_MAX];
    struct sim_node node[SIM_N_MAX];
    struct sim_node_hooks hooks;
    struct vs_vsr_persist sb_floor[SIM_N_MAX]; /* last completed write */
    uint64_t down_since[SIM_N_MAX];
    int part[SIM_N_MAX][SIM_N_MAX]; /* 1: from -> to is cut */
    int partitioned;
    int faults_on;
    struct sim_msg *net;
    size_t nnet, net_cap;
    uint64_t net_seq;
    struct sim_client c[SIM_CLIENTS_MAX];
    struct sim_hist *hist; /* by op */
    uint64_t hist_max;     /* highest op in the history */
    uint64_t acked_max;
    uint8_t rot[SIM_HIST_MAX]; /* replicas whose WAL copy of op rotted */
    unsigned rot_replicas;     /* replicas that ever carried rot */
    uint64_t latent_rng;       /* its own stream: the fault switch `latent`
                                * leaves every other draw of a seed unchanged */
    /* the rot each replica's disk took since its last successful boot
     * (what sim_world_unrot undoes) */
    struct sim_rot {
        uint64_t at;
        uint8_t mask; /* 0: a latent sector */
    } rotlog[SIM_N_MAX][SIM_ROT_MAX];
    unsigned nrot[SIM_N_MAX];
    /* the refused-votes waiver: the op it found undecidable without the
     * replicas that refuse to boot (0: none), and those replicas */
    uint64_t waived_op;
    unsigned waived_mask;
    int waived_part; /* 1: the partition checker's waiver */
    /* 1: that waiver rests on a partition group that refused to open
     * after a crash alone (a product finding, not provable by the
     * counterfactual; strict_crash_refusal fails it instead) */
    int waived_crash;
    char waived_crash_why[320];
    unsigned made_bootable; /* replicas the counterfactual restored */
    /* the torn-copies waiver: the ops it found undecidable and the
     * replicas holding their torn copies */
    uint64_t torn_lo, torn_hi;
    unsigned torn_mask;
    char waived_why[256];
    uint64_t oracle_op;
    void *oracle;
    struct sim_model *model; /* reference model of the committed ops */
    struct sim_marks m;
    /* Scenarios: sees every replica-to-replica frame (a private copy)
     * before the faulty network takes it; may rewrite it in place (same
     * length) or return 1 to drop it. NULL: frames pass untouched. */
    int (*tamper)(struct sim_world *w, unsigned from, unsigned to,
                  uint8_t *frame, uint32_t len);
    void *tamper_ctx;
    /* replicated partition groups beside the metadata group
     * (sim_parts.h), NULL: none */
    void *parts;
    int genesis_done;
    int failed;
    char failure[512];
};

/* Draws parameters from the seed (n = 0: drawn, weighted to 3). */
void sim_world_params(uint64_t seed, unsigned n, struct sim_params *p);
/* Builds the world under a fresh scratch directory. 0 or -errno. */
int sim_world_init(struct sim_world *w, uint64_t seed,
                   const struct sim_params *p, const struct sim_faults *f,
                   int trace);
void sim_world_fini(struct sim_world *w);
/* Runs the faulty phase, then the liveness phase. 0 pass, 1 failure. */
int sim_world_run(struct sim_world *w);

/* Building blocks for named scenarios. */
void sim_world_step(struct sim_world *w);
void sim_world_crash(struct sim_world *w, unsigned i);
int sim_world_restart(struct sim_world *w, unsigned i);
/* Replica i (down) lost its disk: `vstreamd recover` (sim_node_recover);
 * its superblock floor starts over. Same returns. */
int sim_world_recover(struct sim_world *w, unsigned i);
/* Flips a byte inside WAL op `op` of replica i (down). 1 done, 0 none. */
int sim_world_rot_op(struct sim_world *w, unsigned i, uint64_t op,
                     int in_header);
/* Undoes the rot replica i (down) took since its last successful boot
 * (see sim_params.refused_bootable). Returns how many faults it undid. */
unsigned sim_world_unrot(struct sim_world *w, unsigned i);
void sim_world_failf(struct sim_world *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
uint64_t sim_world_rand(struct sim_world *w);

#endif /* VS_TESTS_SIM_WORLD_H */
