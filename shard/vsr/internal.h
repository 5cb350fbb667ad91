/*
 * shard/vsr/internal.h - the engine's state, shared by its four files.
 *
 * Role: struct vs_vsr and the helpers engine.c (normal path, commit walk,
 * journal window, construction), view.c (view change, StartView,
 * restart probes), repair.c (journal repair) and install.c (state
 * transfer inputs) call in each other. Not part of the interface: only
 * shard/vsr/ includes it.
 *
 * Invariants (beside engine.h's):
 *  - slot(op).present means the header of op is known (a chain-checked
 *    prepare of the current log); durable means our journal holds it;
 *    msg holds the body when it is in memory.
 *  - Known headers chain: for present x and x+1, x+1.parent == x.checksum.
 *  - journal_op: every op in (checkpoint, journal_op] was issued as a
 *    JOURNAL_APPEND in op order (durable or appending); appends are only
 *    ever issued at journal_op + 1.
 *  - head >= journal_op; head_checksum is the checksum of head's header
 *    (zero for the empty log) and changes only together with head.
 *
 * Callers: one thread; no globals, no I/O.
 */
#ifndef VS_SHARD_VSR_INTERNAL_H
#define VS_SHARD_VSR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "shard/vsr/engine.h"

/* A frame held by the engine: header followed by the body bytes held. */
struct vsr_msg {
    uint32_t refs;
    uint32_t size; /* bytes at hdr: 256 + body held */
    uint64_t pad_;
    struct vs_header hdr;
    uint8_t body[];
};

struct vsr_slot {
    struct vs_hdr_prepare h; /* valid iff present */
    struct vsr_msg *msg;     /* held frame (with body) or NULL */
    uint64_t deadline;       /* primary: next retransmit tick */
    uint32_t ok;             /* primary: PrepareOk bits by replica */
    uint32_t holders;        /* replicas known to hold it (DVC present) */
    uint8_t present;
    uint8_t durable;   /* our journal append completed */
    uint8_t appending; /* JOURNAL_APPEND issued, not yet durable */
    uint8_t reply;     /* we prepared it as primary: answer the client */
    uint8_t attempts;  /* retransmit rounds */
};

struct vsr_act {
    enum vsr_action_kind kind;
    uint8_t replica;
    uint64_t op;
    struct vs_u128 client;
    struct vs_u128 checksum;
    struct vsr_msg *msg;
    struct vs_vsr_persist persist;
    uint8_t retransmit; /* SEND_PREPARE: as a Prepare of `view` */
    uint32_t view;
};

struct vsr_withheld {
    struct vsr_msg *msg;
    uint8_t replica;
};

struct vs_vsr {
    /* identity and tunables */
    struct vs_u128 cluster;
    uint64_t group;
    uint8_t replica;
    uint8_t n;
    uint32_t slots_n;
    uint32_t pipeline_max;
    uint32_t body_max;
    uint32_t retain; /* primary keeps bodies of (head - retain, head] */
    struct vs_vsr_timeouts to;
    struct vs_u128 incarnation;

    /* view state */
    enum vsr_status status;
    uint32_t view;
    uint32_t log_view;
    struct vs_vsr_persist durable; /* last confirmed by the superblock */
    int sb_inflight;
    struct vs_vsr_persist sb_writing;
    int ckpt_pending;
    uint64_t ckpt_op;
    struct vs_u128 ckpt_checksum;
    /* Top of the faulty range (0 = none): every op in (commit_min,
     * faulty_op] not durable in our journal may be one this replica
     * journaled and acknowledged before a damaged tail was cut: never
     * nacked. Wanted mark (durable.faulty_op once written). */
    uint64_t faulty_op;
    /* Top of the ops never nacked (0 = none, <= faulty_op): the damaged
     * range cut at this boot or persisted from an earlier one
     * (durable.nonack_op once written). Ops above it up to faulty_op
     * that we lack are ops of an adopted log we never journaled: nacked. */
    uint64_t nonack_top;

    /* log state */
    uint64_t head;
    struct vs_u128 head_checksum;
    uint64_t head_timestamp;
    uint64_t journal_op;
    uint64_t stale_lo; /* lowest op ever truncated (0 = none) */
    uint64_t commit_min;
    struct vs_u128 commit_min_checksum;
    uint64_t commit_max;
    int commit_outstanding;    /* a COMMIT of commit_min + 1 is queued */
    uint64_t recovery_barrier; /* settled once commit_min reaches it */
    struct vsr_slot *slots;

    /* timers */
    uint64_t now; /* ticks since construction */
    uint64_t heartbeat_deadline;
    uint64_t heartbeat_seq;    /* primary: Commit timestamp_monotonic */
    uint64_t heartbeat_commit; /* primary: commit_max of the last Commit */
    uint64_t heartbeat_seen;   /* backup: last accepted */
    uint64_t primary_silence;  /* backup: ticks since the primary spoke */
    uint64_t silence_limit;    /* normal_heartbeat + jitter */
    /* primary lease: tick each replica was last heard in lease_view
     * (PrepareOk, Pong); lease_view != view means "not yet counted" */
    uint64_t heard[VS_REPLICAS_MAX];
    uint32_t lease_view;
    uint64_t hb_commit_op; /* backup: commit op + checksum announced */
    struct vs_u128 hb_commit_checksum;
    /* backup: the highest commit the primary of view primary_commit_view
     * announced in a Commit heartbeat (it needs no PrepareOk up to it) */
    uint64_t primary_commit;
    uint32_t primary_commit_view;

    /* view change */
    uint32_t svc_from;   /* SVCs for `view` counted, by replica */
    struct vsr_msg *dvc; /* our DVC for dvc_view (R2: built once) */
    uint32_t dvc_view;
    struct vsr_msg *dvcs[VS_REPLICAS_MAX]; /* candidate: DVCs for view */
    uint32_t dvc_from;
    int merged; /* candidate: log merged, awaiting repair */
    uint64_t merge_commit;
    uint64_t vc_deadline;     /* status timeout: escalate */
    uint64_t vc_msg_deadline; /* SVC/DVC retransmit */
    unsigned vc_attempts;
    uint32_t observed_view; /* highest view seen in a verified frame */

    /* restart */
    unsigned probes; /* RequestStartView sent, unanswered */
    uint64_t probe_deadline;
    uint64_t rsv_deadline; /* rate limit of RSV for a missed SV */
    int rebuilt;           /* lost-disk replica (R8) */
    int rebuilding;        /* not yet caught up */
    uint64_t rebuild_target;
    uint32_t vote_floor; /* no SVC/DVC for views below it */

    /* repair */
    int repair_active;
    struct vs_u128 repair_nonce;
    uint64_t repair_seq;
    uint8_t repair_peer;
    uint64_t repair_deadline;
    uint64_t repair_idle; /* no round before this tick */
    uint64_t repair_mark; /* stats.repairs when the round started */
    unsigned repair_rr;
    /* backup: no round before this tick for a gap a Prepare opened while
     * nothing was missing (a reordered prepare may still arrive) */
    uint64_t gap_wait;
    /* backup: the highest op a Prepare jumped a gap to in jump_view */
    uint64_t jump_op;
    uint32_t jump_view;
    uint64_t evicted_op[VS_REPLICAS_MAX]; /* STATE_TRANSFER issued */
    int transfer;
    uint64_t transfer_op;

    /* state transfer armed by the binding (vsr_transfer_begin): no
     * PrepareOk, no commit walk, no repair, no candidacy until it ends */
    int xfer;
    /* Base of the journal window beside the durable checkpoint: the op of
     * an installed snapshot, or the op below the first recovered entry
     * (the journal holds nothing at or below it). */
    uint64_t floor;
    /* commit_min's prepare checksum is not known (a snapshot installed
     * without it): the first canonical header above it supplies it. */
    int anchor_unknown;
    /* Highest op an install cut from the journal: a DVC never nacks at or
     * below it (this replica may have acknowledged those ops). */
    uint64_t nack_floor;

    uint64_t rng[4];

    /* actions */
    struct vsr_act *q;
    size_t q_cap, q_head, q_len;
    struct vsr_msg *popped;

    struct vsr_withheld withheld[VSR_WITHHELD_MAX];
    size_t withheld_len;

    struct vs_vsr_stats stats;
};

/* engine.c */
struct vsr_msg *vsr_msg_new(const void *frame, uint32_t size);
struct vsr_msg *vsr_msg_alloc(uint32_t size);
struct vsr_msg *vsr_msg_ref(struct vsr_msg *m);
void vsr_msg_unref(struct vsr_msg *m);
uint64_t vsr_rng_next(struct vs_vsr *v);
void vsr_queue_push(struct vs_vsr *v, const struct vsr_act *a);
void vsr_queue_msg(struct vs_vsr *v, enum vsr_action_kind kind, uint8_t replica,
                   uint64_t op, struct vsr_msg *m);
struct vsr_slot *vsr_slot_of(struct vs_vsr *v, uint64_t op);
struct vsr_slot *vsr_slot_get(struct vs_vsr *v, uint64_t op);
const struct vsr_slot *vsr_slot_cget(const struct vs_vsr *v, uint64_t op);
int vsr_primary_here(const struct vs_vsr *v);
void vsr_frame_init(const struct vs_vsr *v, struct vs_header *h,
                    uint8_t command, uint32_t size);
void vsr_send(struct vs_vsr *v, uint8_t replica, struct vsr_msg *m);
void vsr_broadcast(struct vs_vsr *v, struct vsr_msg *m);
void vsr_superblock_maybe_write(struct vs_vsr *v);
void vsr_commit_walk(struct vs_vsr *v);
void vsr_pipeline_commit(struct vs_vsr *v);
void vsr_journal_pump(struct vs_vsr *v);
void vsr_journal_truncate(struct vs_vsr *v, uint64_t op);
void vsr_send_prepare_ok(struct vs_vsr *v, const struct vsr_slot *s);
void vsr_set_head(struct vs_vsr *v, uint64_t op);
int vsr_may_ack(const struct vs_vsr *v);
uint64_t vsr_jitter(struct vs_vsr *v, uint64_t base);
uint64_t vsr_silence_limit(struct vs_vsr *v);
int vsr_blank(const struct vs_hdr_prepare *h);
int vsr_header_valid(const struct vs_vsr *v, const struct vs_hdr_prepare *h);
void vsr_faulty_clear(struct vs_vsr *v);
void vsr_faulty_settle(struct vs_vsr *v, uint64_t top);
uint64_t vsr_window_top(const struct vs_vsr *v);

/* view.c */
void vsr_view_tick(struct vs_vsr *v);
void vsr_view_change_start(struct vs_vsr *v, uint32_t view);
void vsr_view_after_durable(struct vs_vsr *v, uint64_t op);
void vsr_primary_start_view(struct vs_vsr *v);
int vsr_suffix_count(const struct vs_vsr *v, uint64_t top);
struct vsr_msg *vsr_start_view_build(struct vs_vsr *v, struct vs_u128 inc);
enum vsr_verdict vsr_on_svc(struct vs_vsr *v,
                            const struct vs_hdr_start_view_change *h);
enum vsr_verdict vsr_on_dvc(struct vs_vsr *v, const struct vs_header *h,
                            const uint8_t *frame);
enum vsr_verdict vsr_on_sv(struct vs_vsr *v, const struct vs_header *h,
                           const uint8_t *frame);
enum vsr_verdict vsr_on_rsv(struct vs_vsr *v,
                            const struct vs_hdr_request_start_view *h);
void vsr_observe_view(struct vs_vsr *v, uint32_t view, uint8_t from);

/* repair.c */
void vsr_repair_tick(struct vs_vsr *v);
void vsr_repair_kick(struct vs_vsr *v);
void vsr_gap_drop(struct vs_vsr *v);
uint64_t vsr_missing_count(const struct vs_vsr *v);
enum vsr_verdict
vsr_on_request_prepares(struct vs_vsr *v,
                        const struct vs_hdr_request_prepares *h);
/* canonical: a Prepare frame of our view from its primary (on_prepare),
 * taken into a hole even where no checksum is expected there. */
enum vsr_verdict vsr_on_repair_prepare(struct vs_vsr *v,
                                       const struct vs_hdr_prepare *p,
                                       const uint8_t *frame, int canonical);
enum vsr_verdict vsr_on_repair_done(struct vs_vsr *v,
                                    const struct vs_hdr_repair_done *h);

/* Primary: `replica` spoke to us in our view (engine.c). */
void vsr_lease_heard(struct vs_vsr *v, uint8_t replica);

#endif /* VS_SHARD_VSR_INTERNAL_H */
