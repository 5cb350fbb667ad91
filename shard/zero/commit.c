/*
 * shard/zero/commit.c - shard 0's commit path; see commit.h.
 *
 * The binding, numbered once here (n = 1, everything synchronous):
 *  1. An input (FWD_PROPOSE, tick, genesis) reaches the engine.
 *  2. commit_drain pops the engine's actions until its queue is empty:
 *     JOURNAL_APPEND is durable when wal_append returns (it fsyncs), so
 *     the engine's own PrepareOk commits the op at once and queues its
 *     COMMIT; COMMIT applies through lr_publish (apply to the standby,
 *     flip, drain the readers, apply to the other instance), builds the
 *     reply frame, caches it in the client table, reports the output;
 *     REPLY sends our frame (asserted equal to the engine's) back to the
 *     data shard recorded for the op.
 *  3. After the drain the checkpoint check runs (phases in commit.h).
 * Because each input is drained to the end, the pipeline holds at most
 * the op being proposed, and an out-of-space append can be undone by
 * rebuilding the engine from the journal (the op never reached it).
 * With group commit (commit.h commit_flush) the JOURNAL_APPEND of a
 * client proposal is written without its fsync and held instead; the
 * pipeline then holds the pass's proposals until commit_flush makes them
 * durable with one fsync and reports each durable (step 2 goes on from
 * there); held appends are made durable before an out-of-space rebuild.
 * A backup holds the appends of the Prepares (and RepairPrepares) of a
 * pass the same way, so its PrepareOks leave after one shared fsync; a
 * held op truncated by a view change before that fsync is dropped.
 *
 * A cluster (n > 1) adds, on the same synchronous drain: SEND goes to
 * the replica links; a replica frame is an input like a proposal (the
 * engine's PrepareOk quorum commits, so the pipeline holds up to
 * VSR_PIPELINE_MAX ops and each reply leaves when its op commits);
 * JOURNAL_TRUNCATE cuts the WAL (view change), SEND_PREPARE serves
 * repair from the WAL, STATE_TRANSFER arms a metadata state transfer
 * from the primary (transfer.h: commands 22-25 of the links go there, it
 * ticks with the engine; the install hook is commit_xfer_install, whose
 * order is in install_state.h; the engine gates its commit walk while
 * armed and is disarmed when the fetch ends without an install). A
 * backup's proposals go to the primary (forward.h) and their answers are
 * released after each drain once commit_min reached their op.
 *
 * Invariants: an answer is sent only after the op is durable, applied
 * to both instances and published; the frame cached for a request equals
 * the one sent for it (the CreatePAT token excepted, client_table.h);
 * nothing reads a clock but the wall time passed to vsr_on_request.
 * Process: shard 0 only.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <sodium.h>

#include "common/assert.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/layout.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/metrics.h"
#include "shard/zero/commit.h"
#include "shard/zero/commit_frames.h"
#include "shard/zero/forward.h"
#include "shard/fwd.h"
#include "shard/zero/groups0.h"
#include "shard/zero/install_state.h"
#include "shard/zero/transfer.h"
#include "shard/meta/apply.h"
#include "shard/meta/client_table.h"
#include "shard/meta/ops.h"
#include "shard/meta/secrets.h"
#include "shard/meta/snapshot_codec.h"
#include "shard/meta/state.h"
#include "shard/storage/checkpoint_header.h"
#include "shard/storage/snapshot_file.h"
#include "shard/storage/superblock.h"
#include "shard/storage/vsr_state.h"

/* Ticks (10 ms) after a state transfer ended without an install before
 * the next one is armed. */
#define COMMIT_XFER_BACKOFF_TICKS 100u
/* Ticks (10 ms) between retries of a failed checkpoint phase. */
#define COMMIT_RETRY_TICKS 100u
/* Prepare bodies are meta_op encodings of requests whose bodies are at
 * most max_metadata_body; the encoding adds at most this much (fixed
 * fields, the in-flight partition list). */
#define COMMIT_BODY_SLACK (64u * 1024u)

enum commit_ckpt {
    COMMIT_CKPT_IDLE = 0,
    COMMIT_CKPT_SUPERBLOCK, /* phase 2 in flight or being retried */
    COMMIT_CKPT_DRAIN,      /* phase 3 failed, retried on a tick */
};

/* Where an answer goes: a data shard connection of this node, or (on
 * the primary) a backup that forwarded the request (forward.h). */
struct commit_origin {
    uint32_t worker_slot;
    uint64_t incarnation;
    uint64_t conn_id;
    int remote; /* 1: answer with a ForwardResult to `peer` */
    /* remote: `incarnation` is the forwarder's shard-0 incarnation */
    uint8_t peer; /* the forwarding replica */
    uint64_t nonce;
};

/* Who proposed an op: the connection its reply goes to. */
struct commit_pending {
    int used;
    uint64_t op;
    struct commit_origin to;
    struct vs_u128 client;
    struct vs_hdr_request req; /* for a status answer */
    uint32_t flags;            /* FWD_F_* */
    uint64_t session;
    uint32_t user_id;
    uint8_t *frame; /* built at COMMIT */
    uint32_t frame_len;
};

struct commit {
    const struct vs_config *cfg;
    struct vs_lr *lr;
    struct vs_sio own_io;
    struct vs_sio *io;
    commit_send_fn *send;
    void *send_ctx;
    commit_replica_send_fn *replica_send;
    void *replica_ctx;
    struct forward0 fwd; /* requests this backup handed to the primary */
    uint32_t peer_up;    /* bit r: the link to replica r is up */
    commit_clock_fn *clock;
    void *clock_ctx;

    char meta_dir[VS_CONFIG_PATH_MAX + 16];
    struct vs_u128 cluster;
    uint8_t replica;
    uint8_t replica_count;
    struct meta_caps caps;

    struct wal journal;
    int journal_open;
    struct sb_store sb;
    struct meta_client_table ct;
    struct vs_vsr *engine;
    int need_rebuild; /* an append failed for space: rebuild the engine */

    /* group commit (commit.h commit_flush) */
    int group_commit;
    int in_propose; /* draining a client proposal: its append may be held */
    int in_prepare; /* draining a replica's (Repair)Prepare: likewise */
    struct commit_held {
        uint64_t op;
        struct vs_u128 checksum;
    } held[VSR_PIPELINE_MAX];
    uint32_t n_held;
    struct commit_queued {
        struct commit_origin to;
        uint8_t *payload;
        uint32_t len;
    } * queued;
    size_t n_queued, cap_queued;
    /* commit_min when a proposal last found the pipeline full: the queue
     * is retried once an op commits (or at the next tick) */
    uint64_t queued_commit;

    struct commit_pending pending[VSR_PIPELINE_MAX];
    struct meta_result res, res2;
    struct vs_wbuf body, frame, out, snap;
    struct vs_wbuf rx; /* an aligned copy of an unaligned replica frame */
    uint8_t *rbody;
    size_t rbody_cap;
    uint32_t last_code; /* result code of the last committed op */

    /* checkpoint and superblock retries */
    enum commit_ckpt ckpt;
    uint64_t ckpt_op;
    int sb_retry;
    struct vs_vsr_persist sb_retry_persist;
    /* the checkpoint op's stored header, recorded in the superblock so a
     * restart needs no WAL entry for it; faulty_op as persisted there */
    struct vs_hdr_prepare ckpt_prepare;
    uint64_t faulty_op;
    uint64_t cut_op;   /* a damaged tail cut at this boot (cluster), or 0 */
    int cut_header_ok; /* cut_header: the cut entry's verified header, or
                        * the one an earlier boot's superblock kept */
    struct vs_hdr_prepare cut_header;
    int rebuilt;           /* rebuilt after a lost disk, not caught up yet */
    uint32_t behind_ticks; /* the once-a-minute "needs state transfer" check */
    int ckpt_enospc;       /* the last checkpoint phase failed for space */

    /* disk watermark for metadata growth: the last answer (logged on a
     * change) */
    int disk_low;
    uint32_t retry_ticks;  /* countdown to the next retry */
    uint32_t ckpt_backoff; /* ticks before a failed phase 1 runs again */

    char fatal[512]; /* a fatal error not recorded in io */
    struct commit_stats stats;

    /* consumer-group liveness (groups0.h) */
    struct groups0 *groups;
    uint64_t (*incarnation)(void *ctx, uint32_t slot);
    void *incarnation_ctx;
    uint64_t rebalancing_timeout_us;
    uint32_t sweep_ticks;
    struct vs_u128 *retry_remove; /* removals not proposed yet */
    size_t n_retry;
    /* cluster member liveness (groups0.h "Cluster rules") */
    int g_primary;          /* the settled primary at the last tick */
    uint64_t g_boot_us;     /* when this shard 0 started */
    uint64_t g_report_seq;  /* MemberReports sent */
    uint64_t g_liveness_us; /* T: 1.2 x group_heartbeat_interval_ms */

    /* metadata state transfer (a cluster; transfer.h, install_state.h) */
    struct zt *zt;
    struct zinst_scratch xt_table; /* a transferred client table whose op
                                      the commit walk has not reached */
    int xt_table_pending;
    uint32_t xt_backoff; /* ticks before a failed fetch is tried again */
    int xt_want;         /* a STATE_TRANSFER waits for the back-off */
    struct vs_vsr_action xt_trigger; /* its replica and op */
    struct zt_info xt_seen;          /* counters already in the metrics */
};

/* ---------------------------------------------------------------- */
/* Small helpers                                                    */
/* ---------------------------------------------------------------- */

static int
commit_set_fatal(struct commit *c, const char *what)
{
    if (c->fatal[0] == '\0' && !sio_is_fatal(c->io))
        snprintf(c->fatal, sizeof(c->fatal), "%s", what);
    return -VS_EFATAL;
}

void
commit_fatal_msg(const struct commit *c, char *buf, size_t len)
{
    if (sio_is_fatal(c->io))
        sio_fatal_msg(c->io, buf, len);
    else
        snprintf(buf, len, "%s", c->fatal);
}

static uint64_t
commit_wall(struct commit *c)
{
    return c->clock != NULL ? c->clock(c->clock_ctx) : vs_realtime_us();
}

/* 1 if free space on the data dir's filesystem is below
 * disk_watermark_bytes (0 = no watermark); checked at every proposal that
 * grows the metadata (one statvfs, a few microseconds: a cached answer
 * let a proposal through right after the data shards' sends filled the
 * disk). */
static int
commit_disk_low(struct commit *c)
{
    uint64_t wm = c->cfg->disk_watermark_bytes;
    if (wm == 0)
        return 0;
    struct statvfs v;
    if (statvfs(c->cfg->data_dir, &v) == -1)
        return c->disk_low;
    uint64_t avail = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
    int low = avail < wm;
    if (low != c->disk_low)
        vs_log_warn("data dir %s: %llu bytes free, watermark %llu: %s",
                    c->cfg->data_dir, (unsigned long long)avail,
                    (unsigned long long)wm,
                    low ? "refusing metadata changes that need space "
                          "(logins, deletes and purges still work)"
                        : "accepting metadata changes again");
    c->disk_low = low;
    return low;
}

/* Operations accepted below the disk watermark: they free space or only
 * bind sessions, so the operator can always log in and free space. The
 * watermark keeps the headroom their journal entries need. */
static int
commit_op_allowed_when_low(uint8_t op)
{
    switch (op) {
    case VS_OP_REGISTER:
    case VS_OP_LOGOUT:
    case VS_OP_DELETE_STREAM:
    case VS_OP_PURGE_STREAM:
    case VS_OP_DELETE_TOPIC:
    case VS_OP_PURGE_TOPIC:
    case VS_OP_DELETE_PARTITIONS:
    case VS_OP_DELETE_SEGMENTS:
    case VS_OP_DELETE_CONSUMER_GROUP:
    case VS_OP_DELETE_USER:
    case VS_OP_DELETE_PAT:
    case VS_OP_LEAVE_CONSUMER_GROUP:
        return 1;
    default:
        return 0;
    }
}

static struct commit_pending *
commit_pending_find(struct commit *c, uint64_t op)
{
    struct commit_pending *p = &c->pending[op % VSR_PIPELINE_MAX];
    return p->used && p->op == op ? p : NULL;
}

static void
commit_pending_free(struct commit_pending *p)
{
    free(p->frame);
    memset(p, 0, sizeof(*p));
}

static struct commit_origin
commit_origin_local(const struct fwd_hdr *fh)
{
    struct commit_origin o;
    memset(&o, 0, sizeof(o));
    o.worker_slot = fh->worker_slot;
    o.incarnation = fh->worker_incarnation;
    o.conn_id = fh->conn_id;
    return o;
}

/* Sends one FWD_REPLY carrying `frame` to a data shard connection of
 * this node. */
static void
commit_send_local(struct commit *c, uint32_t slot, uint64_t incarnation,
                  uint64_t conn_id, struct vs_u128 client, uint32_t flags,
                  uint64_t session, uint32_t user_id, const void *frame,
                  uint32_t len)
{
    struct fwd_hdr h;
    memset(&h, 0, sizeof(h));
    h.kind = FWD_REPLY;
    h.worker_slot = slot;
    h.worker_incarnation = incarnation;
    h.conn_id = conn_id;
    h.payload_len = len;
    h.flags = flags;
    h.session = session;
    h.user_id = user_id;
    h.client = client;
    vs_wbuf_reset(&c->out);
    vs_wr_bytes(&c->out, &h, sizeof(h));
    vs_wr_bytes(&c->out, frame, len);
    if (c->send != NULL)
        c->send(c->send_ctx, slot, c->out.data, (uint32_t)c->out.len);
}

/* Sends the answer `frame` to its origin: FWD_REPLY on this node, or a
 * ForwardResult to the backup that forwarded it, naming the op the frame
 * reports (a Reply's op; 0 for an Eviction or a status refusal) so the
 * backup relays it only after applying that op. */
static void
commit_send_reply(struct commit *c, const struct commit_origin *to,
                  struct vs_u128 client, uint32_t flags, uint64_t session,
                  uint32_t user_id, const void *frame, uint32_t len)
{
    if (!to->remote) {
        commit_send_local(c, to->worker_slot, to->incarnation, to->conn_id,
                          client, flags, session, user_id, frame, len);
        return;
    }
    uint64_t op = 0;
    if (len >= VS_HEADER_SIZE) {
        struct vs_hdr_reply r;
        memcpy(&r, frame, sizeof(r));
        if (r.f.command == VS_CMD_REPLY && r.status == 0)
            op = r.op;
    }
    vs_wbuf_reset(&c->out);
    forward0_result_frame(c->cluster, c->replica, vsr_view(c->engine),
                          to->nonce, op, flags, session, user_id, client, frame,
                          len, &c->out);
    int rc = c->replica_send != NULL
                 ? c->replica_send(c->replica_ctx, to->peer, c->out.data,
                                   (uint32_t)c->out.len)
                 : -ENOTCONN;
    if (rc != 0)
        vs_log_debug("forward result to replica %u not sent (%s): the "
                     "backup answers its client 57",
                     to->peer, strerror(-rc));
}

static void
commit_send_status(struct commit *c, const struct commit_origin *to,
                   const struct vs_hdr_request *req, uint32_t status)
{
    struct vs_hdr_reply r;
    commit_status_reply(&r, c->cluster, vsr_view(c->engine), c->replica, req,
                        status);
    if (status == VS_E_TRANSIENT_NOT_COMMITTED)
        c->stats.transient++;
    else
        c->stats.refused++;
    commit_send_reply(c, to, req->client, 0, 0, 0, &r, sizeof(r));
}

/* ---------------------------------------------------------------- */
/* Engine construction                                              */
/* ---------------------------------------------------------------- */

/* (Re)builds the engine from the durable values and the journal, with
 * the state machine at commit_min. */
static int
commit_engine_build(struct commit *c, const struct vs_vsr_persist *durable,
                    uint64_t commit_min, char *err, size_t errlen)
{
    struct vs_vsr_options o;
    memset(&o, 0, sizeof(o));
    o.cluster = c->cluster;
    o.group = VS_METADATA_GROUP;
    o.replica = c->replica;
    o.replica_count = c->replica_count;
    o.durable = *durable;
    o.commit_min = commit_min;
    o.journal_slots = c->cfg->wal_slots;
    o.pipeline_max = VSR_PIPELINE_MAX < c->cfg->wal_slots ? VSR_PIPELINE_MAX
                                                          : c->cfg->wal_slots;
    uint64_t body_max = (uint64_t)c->cfg->max_metadata_body + COMMIT_BODY_SLACK;
    if (body_max > VS_FRAME_MAX - VS_HEADER_SIZE)
        body_max = VS_FRAME_MAX - VS_HEADER_SIZE;
    o.body_max = (uint32_t)body_max;
    o.seed = c->cluster.lo ^ c->replica;

    struct vs_hdr_prepare *hs = NULL;
    /* The checkpoint op's entry may be gone from the WAL (cut as a
     * damaged tail, or drained with it): the superblock's record of its
     * header continues the hash chain. */
    /* (With an empty journal only when the state is at the checkpoint:
     * a state transfer that crashed before its pairing was durable boots
     * a newer snapshot with no anchor header; the view supplies it.) */
    int lead = durable->checkpoint_op > 0 &&
               c->ckpt_prepare.op == durable->checkpoint_op &&
               !vs_u128_is_zero(c->ckpt_prepare.f.checksum) &&
               (wal_empty(&c->journal)
                    ? commit_min == durable->checkpoint_op
                    : wal_first_op(&c->journal) == durable->checkpoint_op + 1);
    if (lead && wal_empty(&c->journal)) {
        hs = vs_xmalloc(sizeof(*hs));
        hs[o.header_count++] = c->ckpt_prepare;
    }
    if (!wal_empty(&c->journal)) {
        uint64_t first = wal_first_op(&c->journal);
        uint64_t last = wal_last_op(&c->journal);
        /* The engine's window is journal_slots ops; older entries (kept
         * because a drain was retried) are below every state op. */
        if (last - first + 1 > c->cfg->wal_slots)
            first = last - c->cfg->wal_slots + 1;
        else
            lead = lead && last - first + 2 <= c->cfg->wal_slots;
        hs = vs_xmalloc((size_t)(last - first + 2) * sizeof(*hs));
        if (lead && first == durable->checkpoint_op + 1)
            hs[o.header_count++] = c->ckpt_prepare;
        for (uint64_t op = first; op <= last; op++) {
            const struct vs_hdr_prepare *h = wal_header(&c->journal, op);
            VS_ASSERT(h != NULL);
            hs[o.header_count++] = *h;
        }
    }
    o.headers = hs;
    /* A replica of a cluster with a prior life learns the view first: it
     * probes with a fresh per-boot incarnation (engine.h "Restart"). A
     * superblock written by a run (anything but the format's: a view, a
     * commit, a checkpoint, a faulty mark) and a damaged tail cut at this
     * boot are a prior life too: a replica that lost its only copy of an
     * op must never start Normal as the primary of view 0 and build a new
     * op over the committed one. */
    o.recovering = c->replica_count > 1 &&
                   (o.header_count > 0 || commit_min > 0 || durable->view > 0 ||
                    durable->commit_max > 0 || durable->checkpoint_op > 0 ||
                    c->rebuilt || c->cut_op != 0 || durable->faulty_op != 0);
    if (o.recovering)
        while (vs_u128_is_zero(o.incarnation))
            randombytes_buf(&o.incarnation, sizeof(o.incarnation));
    if (c->replica_count > 1) {
        /* A damaged tail cut at this boot is a faulty op the view change
         * never nacks; the mark persisted earlier rides in durable. */
        o.faulty_op = c->cut_op;
        o.faulty_header = c->cut_header_ok ? &c->cut_header : NULL;
        o.rebuilt = c->rebuilt;
    } else {
        o.durable.faulty_op = 0;
        o.durable.nonack_op = 0;
    }
    char why[256];
    struct vs_vsr *v = NULL;
    int rc = vsr_create(&o, &v, why, sizeof(why));
    free(hs);
    if (rc != 0) {
        snprintf(err, errlen, "the VSR engine refused the recovered log: %s",
                 why);
        return rc;
    }
    vsr_destroy(c->engine);
    c->engine = v;
    return 0;
}

/* After an append refused for space: the journal (source of truth) lacks
 * the op the engine prepared; rebuild the engine from it. One replica:
 * every earlier op is applied (inputs are drained to the end), so
 * commit_min = head. */
static int
commit_engine_rebuild(struct commit *c)
{
    struct vs_vsr_persist d;
    vsr_durable(c->engine, &d);
    uint64_t commit_min = vsr_commit_min(c->engine);
    char err[512];
    int rc = commit_engine_build(c, &d, commit_min, err, sizeof(err));
    if (rc != 0)
        return commit_set_fatal(c, err);
    /* A cluster replica's journal may hold prepared ops above commit_min:
     * its rebuilt engine starts Recovering (a prior life) and learns the
     * view again, repairing what the refused append lost. */
    VS_ASSERT(c->replica_count > 1 || vsr_op(c->engine) == commit_min);
    /* A superblock write being retried belonged to the old engine: the
     * new one has nothing in flight, so a late success would not match.
     * Drop the retry; a checkpoint it carried is issued again on the new
     * engine (same op, same snapshot checksum), which writes it anew. */
    if (c->sb_retry) {
        struct vs_vsr_persist want = c->sb_retry_persist;
        c->sb_retry = 0;
        if (c->ckpt == COMMIT_CKPT_SUPERBLOCK) {
            rc =
                vsr_checkpoint(c->engine, c->ckpt_op, want.checkpoint_checksum);
            if (rc != 0) {
                vs_log_warn("checkpoint at op %llu dropped after the engine "
                            "rebuild (%s); a later one replaces it",
                            (unsigned long long)c->ckpt_op, strerror(-rc));
                c->ckpt = COMMIT_CKPT_IDLE;
            }
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- */
/* Actions                                                          */
/* ---------------------------------------------------------------- */

static int commit_drain(struct commit *c);
static void commit_xfer_table(struct commit *c);
static int commit_checkpoint_begin(struct commit *c, uint64_t op);
static uint64_t commit_checkpoint_interval(const struct commit *c);
static void commit_send_status(struct commit *c, const struct commit_origin *to,
                               const struct vs_hdr_request *req,
                               uint32_t status);

/* forward0_answer_fn: relay a forwarded request's answer (or a 57) to the
 * data shard connection of this node that sent it. */
static void
commit_forward_answer(void *ctx, const struct forward0_answer *a)
{
    struct commit *c = ctx;
    struct commit_origin to;
    memset(&to, 0, sizeof(to));
    to.worker_slot = a->origin.slot;
    to.incarnation = a->origin.incarnation;
    to.conn_id = a->origin.conn_id;
    if (a->status != 0) {
        commit_send_status(c, &to, &a->origin.req, a->status);
        return;
    }
    commit_send_local(c, to.worker_slot, to.incarnation, to.conn_id,
                      a->origin.req.client, a->flags, a->session, a->user_id,
                      a->frame, a->frame_len);
    /* this node holds the connection: its own binding (groups0.h) */
    if (a->flags & FWD_F_BIND)
        groups0_bind_session(c->groups, a->origin.req.client, a->session,
                             to.worker_slot, to.incarnation, to.conn_id);
    else if (a->flags & FWD_F_UNBIND)
        groups0_unbind(c->groups, a->origin.req.client);
}

/* Reports the held appends durable, in op order (an fsync covered them).
 * A held append that a view change truncated before the fsync (or that
 * an installed state superseded) is no longer the engine's: it answers
 * -ESTALE and that op's durability is dropped, never acknowledged. */
static void
commit_release_held(struct commit *c)
{
    for (uint32_t i = 0; i < c->n_held; i++) {
        int rc = vsr_on_journal_durable(c->engine, c->held[i].op,
                                        c->held[i].checksum);
        VS_ASSERT(rc == 0 || rc == -ESTALE);
        if (rc == -ESTALE)
            vs_log_debug("held append of op %llu was truncated before its "
                         "fsync; its durability is dropped",
                         (unsigned long long)c->held[i].op);
    }
    c->stats.grouped_ops += c->n_held;
    c->n_held = 0;
}

/* The scan's unsynced window must cover every append this binding can
 * leave unsynced: VSR_PIPELINE_MAX held plus the one whose fsync is in
 * progress (shard/storage/journal.h). */
_Static_assert(VSR_PIPELINE_MAX + 1 <= WAL_GROUP_UNSYNCED_MAX,
               "group commit may leave more appends unsynced than the WAL "
               "scan's window");

static int
commit_do_append(struct commit *c, const struct vs_vsr_action *a)
{
    const struct vs_hdr_prepare *p = (const struct vs_hdr_prepare *)a->frame;
    VS_ASSERT(a->body != NULL || a->body_len == 0);
    int hold = c->group_commit && (c->in_propose || c->in_prepare) &&
               c->n_held < VSR_PIPELINE_MAX;
    int rc = hold ? wal_append_nosync(&c->journal, p, a->body, a->body_len)
                  : wal_append(&c->journal, p, a->body, a->body_len);
    if (rc == 0 && hold) {
        c->held[c->n_held].op = a->op;
        c->held[c->n_held].checksum = p->f.checksum;
        c->n_held++;
        return 0;
    }
    if (rc == 0) {
        commit_release_held(c); /* this append's fsync covered them */
        rc = vsr_on_journal_durable(c->engine, a->op, p->f.checksum);
        VS_ASSERT(rc == 0);
        return 0;
    }
    if (rc == -ENOSPC && c->n_held > 0) {
        /* the held appends before this one stay: make them durable
         * before the engine is rebuilt from the journal */
        int rc2 = wal_sync(&c->journal);
        if (rc2 == -VS_EFATAL)
            return -VS_EFATAL;
        if (rc2 != 0)
            return commit_set_fatal(c, "journal fsync failed");
        commit_release_held(c);
    }
    if (rc == -ENOSPC) {
        /* DESIGN §4: not fatal; the partial append was cut back. */
        c->stats.enospc++;
        vs_log_warn("journal append of op %llu: no space left on device; "
                    "request refused, nothing kept",
                    (unsigned long long)a->op);
        struct commit_pending *pd = commit_pending_find(c, a->op);
        if (pd != NULL) {
            commit_send_status(c, &pd->to, &pd->req, VS_E_DISK_FULL);
            commit_pending_free(pd);
        }
        c->need_rebuild = 1;
        return 0;
    }
    if (rc == -VS_EFATAL)
        return -VS_EFATAL;
    char msg[256];
    snprintf(msg, sizeof(msg), "journal append of op %llu refused: %s",
             (unsigned long long)a->op, sio_strerror(rc));
    return commit_set_fatal(c, msg);
}

/* Phase 3: drop the journal prefix below the durable checkpoint op less
 * the engine's repair margin (vsr_drain_keep_from; 0 for a single
 * replica): a backup that lags by less than the margin, or installed the
 * previous checkpoint by state transfer, still repairs its suffix from
 * this journal. */
static int
commit_do_wal_drain(struct commit *c)
{
    int rc =
        wal_drain_margin(&c->journal, c->ckpt_op, vsr_repair_margin(c->engine));
    if (rc == 0) {
        c->ckpt = COMMIT_CKPT_IDLE;
        c->ckpt_enospc = 0;
        c->stats.checkpoints++;
        vs_metrics_add(VS_M_CHECKPOINTS, 1);
        vs_log_info("checkpoint at op %llu complete (snapshot, superblock, "
                    "journal drained)",
                    (unsigned long long)c->ckpt_op);
        return 0;
    }
    if (rc == -VS_EFATAL)
        return -VS_EFATAL;
    c->stats.checkpoint_failures++;
    c->ckpt_enospc = rc == -ENOSPC;
    c->ckpt = COMMIT_CKPT_DRAIN;
    c->retry_ticks = COMMIT_RETRY_TICKS;
    vs_log_warn("checkpoint at op %llu: journal drain failed (%s); retrying",
                (unsigned long long)c->ckpt_op, sio_strerror(rc));
    return 0;
}

static int
commit_do_superblock(struct commit *c, const struct vs_vsr_persist *p)
{
    struct vs_vsr_state s;
    memset(&s, 0, sizeof(s));
    s.cluster = c->cluster;
    s.replica_id = c->replica;
    s.replica_count = c->replica_count;
    s.view = p->view;
    s.log_view = p->log_view;
    s.commit_max = p->commit_max;
    s.checkpoint_op = p->checkpoint_op;
    s.checkpoint_checksum = p->checkpoint_checksum;
    /* A cluster's engine owns the faulty-op mark; a single replica keeps
     * what its boot recorded (never repaired: no peer). */
    s.faulty_op = c->replica_count > 1 ? p->faulty_op : c->faulty_op;
    /* the part of it a damaged cut may have held (never nacked); a
     * single replica's mark is always a cut */
    s.nonack_op = c->replica_count > 1 ? p->nonack_op : c->faulty_op;
    if (c->replica_count > 1 && p->faulty_op != 0 && c->engine != NULL) {
        /* The header the engine's log holds at the faulty range's first
         * op (above the WAL's last entry): the WAL does not hold it, so
         * the superblock keeps it for the next boot. */
        uint64_t x = wal_empty(&c->journal) ? vsr_commit_min(c->engine) + 1
                                            : wal_last_op(&c->journal) + 1;
        struct vs_hdr_prepare fh;
        if (x <= p->faulty_op && vsr_header(c->engine, x, &fh) && fh.op == x)
            s.faulty_prepare = fh;
    }
    struct vs_hdr_prepare cp;
    if (ckpt_header_find(&c->journal, &c->ckpt_prepare, p->checkpoint_op,
                         &cp)) {
        c->ckpt_prepare = cp;
        s.checkpoint_prepare = cp;
    }
    uint8_t buf[VSR_STATE_SIZE];
    vsr_state_encode(&s, buf);
    int rc = sb_write(&c->sb, buf, sizeof(buf));
    if (rc == -VS_EFATAL)
        return -VS_EFATAL;
    if (rc != 0) {
        /* The engine keeps this write in flight: retry the same values
         * (the node stays fenced from later superblock changes). */
        c->sb_retry = 1;
        c->sb_retry_persist = *p;
        c->retry_ticks = COMMIT_RETRY_TICKS;
        c->ckpt_enospc = rc == -ENOSPC;
        if (c->ckpt == COMMIT_CKPT_SUPERBLOCK)
            c->stats.checkpoint_failures++;
        vs_log_warn("superblock write failed (%s); retrying", sio_strerror(rc));
        return 0;
    }
    c->sb_retry = 0;
    rc = vsr_on_superblock_durable(c->engine, p);
    VS_ASSERT(rc == 0);
    if (c->ckpt == COMMIT_CKPT_SUPERBLOCK && p->checkpoint_op == c->ckpt_op)
        return commit_do_wal_drain(c);
    return 0;
}

struct commit_apply {
    struct commit *c;
    const struct meta_op_ctx *ctx;
    const uint8_t *body;
    size_t len;
    int calls;
};

/* lr_apply_fn: the same op on each instance; the first result is kept,
 * the second must agree (apply is deterministic). */
static void
commit_apply_fn(void *instance, size_t size, void *arg)
{
    (void)size;
    struct commit_apply *ap = arg;
    struct commit *c = ap->c;
    struct meta_result *r = ap->calls == 0 ? &c->res : &c->res2;
    meta_apply(instance, ap->ctx, ap->body, ap->len, r);
    if (ap->calls == 1) {
        VS_ASSERT(c->res2.code == c->res.code);
        VS_ASSERT(c->res2.payload.len == c->res.payload.len);
        VS_ASSERT(c->res.payload.len == 0 ||
                  memcmp(c->res2.payload.data, c->res.payload.data,
                         c->res.payload.len) == 0);
    }
    ap->calls++;
}

static int
commit_do_commit(struct commit *c, const struct vs_vsr_action *a)
{
    const struct vs_hdr_prepare *p = (const struct vs_hdr_prepare *)a->frame;
    const uint8_t *body = a->body;
    size_t len = a->body_len;
    if (body == NULL && len > 0) {
        /* A recovered op: its body is in the journal. */
        if (len > c->rbody_cap) {
            c->rbody = vs_xrealloc(c->rbody, len);
            c->rbody_cap = len;
        }
        long n = wal_read_body(&c->journal, a->op, c->rbody, c->rbody_cap);
        if (n < 0 || (size_t)n != len) {
            char msg[256];
            snprintf(msg, sizeof(msg),
                     "journal op %llu: cannot read its body: %s",
                     (unsigned long long)a->op,
                     n < 0 ? sio_strerror((int)n) : "short");
            return commit_set_fatal(c, msg);
        }
        body = c->rbody;
    }
    struct meta_op_ctx ctx = {
        .op = p->op,
        .timestamp = p->timestamp,
        .user_id = p->user_id,
        .operation = p->operation,
        .client = p->client,
        .request = p->request,
        .request_checksum = p->request_checksum,
    };
    struct commit_apply ap = {c, &ctx, body, len, 0};
    int rc = lr_publish(c->lr, a->op, commit_apply_fn, &ap);
    VS_ASSERT(rc == 0 && ap.calls == 2);
    c->stats.commits++;
    c->last_code = c->res.code;
    if (vs_u128_is_zero(p->client) && p->operation != VS_OP_GENESIS)
        c->stats.internal++;
    if (p->operation == VS_OP_GENESIS && c->replica_count > 1)
        vs_log_info("genesis committed at op %llu: the cluster's root user "
                    "(id 0) exists",
                    (unsigned long long)p->op);

    vs_wbuf_reset(&c->body);
    if (commit_op_replies(p)) {
        commit_reply_body(p->operation, c->res.code, c->res.payload.data,
                          c->res.payload.len, &c->body);
        vs_wbuf_reset(&c->frame);
        commit_reply_frame(p, c->body.data, c->body.len, &c->frame);
        meta_ct_record_reply(&c->ct, lr_writer_live(c->lr), p->client,
                             p->operation, c->frame.data, c->frame.len);
        struct commit_pending *pd = commit_pending_find(c, a->op);
        if (pd != NULL) {
            free(pd->frame);
            pd->frame = vs_xmalloc(c->frame.len);
            memcpy(pd->frame, c->frame.data, c->frame.len);
            pd->frame_len = (uint32_t)c->frame.len;
            if (p->operation == VS_OP_REGISTER && c->res.code == 0 &&
                c->res.payload.len >= 12) {
                pd->flags = FWD_F_BIND;
                pd->user_id = vs_load_u32(c->res.payload.data);
                pd->session = vs_load_u64(c->res.payload.data + 4);
                if (!pd->to.remote)
                    groups0_bind_session(c->groups, p->client, pd->session,
                                         pd->to.worker_slot, pd->to.incarnation,
                                         pd->to.conn_id);
                else
                    groups0_bind_remote(c->groups, p->client, pd->session,
                                        pd->to.peer, pd->to.incarnation);
            } else if (p->operation == VS_OP_LOGOUT) {
                pd->flags = FWD_F_UNBIND;
                groups0_unbind(c->groups, p->client);
            }
        }
    }
    rc = vsr_on_commit_applied(c->engine, a->op, c->body.data,
                               (uint32_t)c->body.len);
    VS_ASSERT(rc == 0);
    if (c->xt_table_pending && a->op == c->xt_table.table_op)
        commit_xfer_table(c);
    uint64_t every = commit_checkpoint_interval(c);
    if (every > 0 && a->op % every == 0 && c->ckpt == COMMIT_CKPT_IDLE &&
        !c->sb_retry) {
        struct vs_vsr_persist d;
        vsr_durable(c->engine, &d);
        if (a->op > d.checkpoint_op)
            return commit_checkpoint_begin(c, a->op);
    }
    return 0;
}

static void
commit_do_reply(struct commit *c, const struct vs_vsr_action *a)
{
    struct commit_pending *pd = commit_pending_find(c, a->op);
    if (pd == NULL || pd->frame == NULL) {
        vs_log_debug("op %llu committed with no proposer to answer",
                     (unsigned long long)a->op);
        return;
    }
    /* Our frame (the one cached) is the engine's, byte for byte, but for
     * the view and replica bytes, which the cached frame leaves 0. */
    VS_ASSERT(a->size == pd->frame_len && a->size >= VS_HEADER_SIZE);
    struct vs_hdr_reply eng;
    memcpy(&eng, a->frame, sizeof(eng));
    eng.f.view = 0;
    eng.f.replica = 0;
    VS_ASSERT(memcmp(&eng, pd->frame, sizeof(eng)) == 0 &&
              memcmp((const uint8_t *)a->frame + VS_HEADER_SIZE,
                     pd->frame + VS_HEADER_SIZE,
                     pd->frame_len - VS_HEADER_SIZE) == 0);
    commit_send_reply(c, &pd->to, pd->client, pd->flags, pd->session,
                      pd->user_id, pd->frame, pd->frame_len);
    commit_pending_free(pd);
}

/* A view change cut the uncommitted suffix from `op` on: drop it from
 * the journal (durably, before any later action) and answer 57 to the
 * proposers of the ops cut (they resend; the new primary deduplicates). */
static int
commit_do_truncate(struct commit *c, uint64_t op)
{
    c->stats.truncations++;
    if (!wal_empty(&c->journal) && wal_last_op(&c->journal) >= op) {
        int rc = wal_truncate_from(&c->journal, op);
        if (rc == -VS_EFATAL)
            return rc;
        if (rc != 0) {
            char msg[256];
            snprintf(msg, sizeof(msg),
                     "journal truncation from op %llu (view change) failed: "
                     "%s",
                     (unsigned long long)op, sio_strerror(rc));
            return commit_set_fatal(c, msg);
        }
    }
    vs_log_info("view change: journal truncated from op %llu (uncommitted)",
                (unsigned long long)op);
    for (unsigned i = 0; i < VSR_PIPELINE_MAX; i++) {
        struct commit_pending *pd = &c->pending[i];
        if (pd->used && pd->op >= op) {
            commit_send_status(c, &pd->to, &pd->req,
                               VS_E_TRANSIENT_NOT_COMMITTED);
            commit_pending_free(pd);
        }
    }
    return 0;
}

/* Repair: our stored prepare of a.op, if it is the one asked for, as a
 * RepairPrepare (command 19) to a.replica; the primary's retransmit
 * (a.retransmit) as a Prepare stamped with a.view instead. */
static void
commit_do_send_prepare(struct commit *c, const struct vs_vsr_action *a)
{
    const struct vs_hdr_prepare *h = wal_header(&c->journal, a->op);
    if (h == NULL || !vs_u128_eq(h->f.checksum, a->checksum))
        return;
    uint32_t len = h->f.size - VS_HEADER_SIZE;
    vs_wbuf_reset(&c->out);
    uint8_t *p = vs_wbuf_reserve(&c->out, VS_HEADER_SIZE + (size_t)len);
    long n = wal_read_body(&c->journal, a->op, p + VS_HEADER_SIZE, len);
    if (n < 0 || (uint32_t)n != len) {
        vs_log_warn("%s of op %llu for replica %u: cannot read it (%s)",
                    a->retransmit ? "retransmit" : "repair",
                    (unsigned long long)a->op, a->replica,
                    n < 0 ? sio_strerror((int)n) : "short");
        return;
    }
    memcpy(p, h, VS_HEADER_SIZE);
    struct vs_header *fh = (struct vs_header *)p;
    if (a->retransmit)
        fh->f.view = a->view; /* the primary's retransmit (engine.h) */
    else
        fh->f.command = VS_CMD_REPAIR_PREPARE;
    c->out.len = VS_HEADER_SIZE + (size_t)len;
    if (!a->retransmit)
        c->stats.repairs_served++;
    if (c->replica_send != NULL)
        (void)c->replica_send(c->replica_ctx, a->replica, c->out.data,
                              (uint32_t)c->out.len);
}

/* ---------------------------------------------------------------- */
/* State transfer (transfer.h, install_state.h)                     */
/* ---------------------------------------------------------------- */

/* zt_hooks.serve_state */
static void
commit_zt_serve_state(void *ctx, struct zt_serve_state *s)
{
    struct commit *c = ctx;
    struct vs_vsr_info in;
    struct vs_vsr_persist d;
    vsr_info(c->engine, &in);
    vsr_durable(c->engine, &d);
    s->caught_up_primary = in.settled && in.commit_min == in.commit_max;
    s->view = d.view;
    s->commit_min = in.commit_min;
    s->commit_max = in.commit_max;
    /* A checkpoint in progress may have replaced snapshot.bin already:
     * offer nothing until its pairing is durable. */
    if (c->ckpt == COMMIT_CKPT_IDLE && !c->sb_retry) {
        s->checkpoint_op = d.checkpoint_op;
        s->checkpoint_checksum = d.checkpoint_checksum;
        if (c->ckpt_prepare.op == d.checkpoint_op)
            s->checkpoint_prepare = c->ckpt_prepare;
    }
}

/* zt_hooks.encode_table: the live table at commit_min. */
static int
commit_zt_encode_table(void *ctx, struct vs_wbuf *w, uint64_t *frontier)
{
    struct commit *c = ctx;
    *frontier = vsr_commit_min(c->engine);
    return meta_ct_transfer_encode(&c->ct, lr_writer_live(c->lr), w);
}

/* zt_hooks.send */
static void
commit_zt_send(void *ctx, uint8_t peer, const void *frame, size_t len)
{
    struct commit *c = ctx;
    if (c->replica_send != NULL)
        (void)c->replica_send(c->replica_ctx, peer, frame, (uint32_t)len);
}

/* The transferred client table once the state is at its op. */
static void
commit_xfer_table(struct commit *c)
{
    char err[160];
    c->xt_table_pending = 0;
    if (zinst_table(&c->ct, lr_writer_live(c->lr), &c->xt_table.img, err,
                    sizeof(err)) == 0)
        vs_log_info("state transfer: client table installed at op %llu "
                    "(%u sessions)",
                    (unsigned long long)c->xt_table.table_op,
                    c->xt_table.img.count);
    else
        vs_log_error("state transfer: client table at op %llu not installed: "
                     "%s (the replayed table stays)",
                     (unsigned long long)c->xt_table.table_op, err);
    zinst_scratch_fini(&c->xt_table);
}

/* zt_hooks.install: see install_state.h for the order. */
static int
commit_xfer_install(void *ctx, const struct zt_artifacts *a, char *err,
                    size_t errlen)
{
    struct commit *c = ctx;
    int rc;
    if (c->n_held > 0) { /* group commit: the held appends first */
        rc = wal_sync(&c->journal);
        if (rc != 0) {
            snprintf(err, errlen, "journal fsync failed: %s", sio_strerror(rc));
            return commit_set_fatal(c, err);
        }
        commit_release_held(c);
    }
    rc = commit_drain(c);
    if (rc != 0) {
        commit_fatal_msg(c, err, errlen);
        return rc;
    }
    if (vsr_commit_outstanding(c->engine)) {
        snprintf(err, errlen, "a commit is being applied; fetch again");
        return -EAGAIN;
    }
    struct vs_vsr_info in;
    vsr_info(c->engine, &in);
    if (!in.transferring || a->commit_max < a->snapshot_op) {
        /* what vsr_on_state_installed would refuse, checked before
         * anything is cut */
        snprintf(err, errlen,
                 "not installable now (engine %s, commit_max "
                 "%llu, snapshot op %llu)",
                 in.transferring ? "armed" : "not armed",
                 (unsigned long long)a->commit_max,
                 (unsigned long long)a->snapshot_op);
        return -EAGAIN;
    }
    struct zinst_scratch sc;
    rc = zinst_check(&c->caps, a, &sc, err, errlen);
    if (rc != 0)
        return rc;
    uint64_t local = vsr_commit_min(c->engine);
    struct vs_u128 sum = {0, 0};
    int ahead = a->snapshot_op > local;
    if (ahead) {
        rc = zinst_write(c->io, c->meta_dir, &c->journal, local, c->lr, &sc,
                         &c->ct, a, &sum, err, errlen);
        if (rc != 0) {
            zinst_scratch_fini(&sc);
            return rc == -VS_EFATAL ? commit_set_fatal(c, err) : rc;
        }
        /* the pairing the engine queues records op S's header; its
         * completion ends a checkpoint at S (commit_do_superblock) */
        c->ckpt_prepare = sc.prepare;
        c->ckpt = COMMIT_CKPT_SUPERBLOCK;
        c->ckpt_op = a->snapshot_op;
        vs_log_info("state transfer: snapshot of op %llu written, journal "
                    "emptied, state published at op %llu",
                    (unsigned long long)a->snapshot_op,
                    (unsigned long long)a->snapshot_op);
    }
    rc = vsr_on_state_installed(c->engine, a->snapshot_op,
                                sc.prepare.f.checksum, sum, a->commit_max);
    if (rc < 0) {
        zinst_scratch_fini(&sc);
        snprintf(err, errlen, "the engine refused the install (%s)",
                 strerror(-rc));
        return ahead ? commit_set_fatal(c, err) : rc;
    }
    if (!ahead)
        vs_log_info("state transfer: the snapshot (op %llu) is not ahead of "
                    "the local state (op %llu): kept the local state",
                    (unsigned long long)a->snapshot_op,
                    (unsigned long long)local);
    /* the client table at its op T: now, or when the walk applies T */
    if (c->xt_table_pending)
        zinst_scratch_fini(&c->xt_table);
    c->xt_table_pending = 0;
    uint64_t at = vsr_commit_min(c->engine);
    if (sc.table_op < at) {
        vs_log_info("state transfer: the client table (op %llu) is behind "
                    "the local state (op %llu): kept the local table",
                    (unsigned long long)sc.table_op, (unsigned long long)at);
        zinst_scratch_fini(&sc);
        return 0;
    }
    c->xt_table = sc;
    c->xt_table_pending = 1;
    if (sc.table_op == at)
        commit_xfer_table(c);
    return 0;
}

/* VSR_ACT_STATE_TRANSFER: fetch from the primary (the peer that answered
 * RangeEvicted if the primary is not known). */
static void
commit_xfer_start(struct commit *c, const struct vs_vsr_action *a)
{
    c->stats.state_transfer_needed++;
    if (c->zt == NULL)
        return;
    if (c->xt_backoff > 0) {
        /* the last fetch failed a moment ago: armed when the back-off
         * ends (the engine does not report the same need twice) */
        c->xt_want = 1;
        memset(&c->xt_trigger, 0, sizeof(c->xt_trigger));
        c->xt_trigger.replica = a->replica;
        c->xt_trigger.op = a->op;
        return;
    }
    c->xt_want = 0;
    int p = vsr_primary(c->engine);
    uint8_t peer = p >= 0 && p != c->replica ? (uint8_t)p : a->replica;
    int rc = vsr_transfer_begin(c->engine);
    if (rc != 0 && rc != -EALREADY)
        return;
    struct vs_vsr_persist d;
    vsr_durable(c->engine, &d);
    if (zt_start(c->zt, peer, d.view) == 0)
        vs_log_info("state transfer: replica %u holds ops only from %llu; "
                    "fetching the checkpoint of replica %u",
                    a->replica, (unsigned long long)a->op, peer);
}

/* The transfer's gauges and counters (common/metrics.h), each tick. */
static void
commit_xfer_metrics(struct commit *c)
{
    struct zt_info zi;
    zt_info(c->zt, &zi);
    vs_metrics_set(VS_M_XFER_STAGE, (uint64_t)zi.stage);
    vs_metrics_set(VS_M_XFER_PEER, zi.peer < 0 ? 0 : (uint64_t)zi.peer + 1);
    vs_metrics_set(VS_M_XFER_FETCHED, zi.fetched);
    vs_metrics_set(VS_M_XFER_TOTAL, zi.total);
    if (zi.completed > c->xt_seen.completed)
        vs_metrics_add(VS_M_XFER_INSTALLED,
                       zi.completed - c->xt_seen.completed);
    if (zi.abandoned > c->xt_seen.abandoned)
        vs_metrics_add(VS_M_XFER_ABANDONED,
                       zi.abandoned - c->xt_seen.abandoned);
    if (zi.served_bytes > c->xt_seen.served_bytes)
        vs_metrics_add(VS_M_XFER_SERVED,
                       zi.served_bytes - c->xt_seen.served_bytes);
    c->xt_seen = zi;
}

/* After each transfer input: retarget to a new primary, and disarm the
 * engine when the fetch ended without an install (the engine reports
 * the need again if it persists). */
static void
commit_xfer_reconcile(struct commit *c)
{
    if (c->zt == NULL)
        return;
    struct vs_vsr_info in;
    vsr_info(c->engine, &in);
    int fetching = zt_fetching(c->zt);
    if (in.transferring && !fetching) {
        struct zt_info zi;
        zt_info(c->zt, &zi);
        vs_log_warn("state transfer: ended without an install (%s); repair "
                    "resumes, next fetch in %u ms at the earliest",
                    zi.last, COMMIT_XFER_BACKOFF_TICKS * 10u);
        c->xt_backoff = COMMIT_XFER_BACKOFF_TICKS;
        (void)vsr_transfer_end(c->engine);
        return;
    }
    if (!in.transferring && fetching) {
        zt_abandon(c->zt, "the engine is not transferring");
        return;
    }
    if (!fetching)
        return;
    struct zt_info zi;
    zt_info(c->zt, &zi);
    int p = vsr_primary(c->engine);
    if (p >= 0 && p != c->replica && p != zi.peer)
        zt_retarget(c->zt, (uint8_t)p);
    else if (zt_wants_peer(c->zt))
        zt_abandon(c->zt, "the primary stopped answering");
}

static int
commit_drain(struct commit *c)
{
    struct vs_vsr_action a;
    while (!c->need_rebuild && vsr_pop(c->engine, &a)) {
        int rc = 0;
        switch (a.kind) {
        case VSR_ACT_SEND:
            /* Best effort: the engine retransmits and repairs what a
             * dropped frame (no link, full queue) loses. */
            if (c->replica_send != NULL)
                (void)c->replica_send(c->replica_ctx, a.replica, a.frame,
                                      a.size);
            break;
        case VSR_ACT_JOURNAL_APPEND:
            rc = commit_do_append(c, &a);
            break;
        case VSR_ACT_SUPERBLOCK_WRITE:
            rc = commit_do_superblock(c, &a.persist);
            break;
        case VSR_ACT_COMMIT:
            rc = commit_do_commit(c, &a);
            break;
        case VSR_ACT_REPLY:
            commit_do_reply(c, &a);
            break;
        case VSR_ACT_JOURNAL_TRUNCATE:
            /* Only a multi-replica engine emits these (view change and
             * repair); a one-replica engine never does. */
            VS_ASSERT(c->replica_count > 1);
            rc = commit_do_truncate(c, a.op);
            break;
        case VSR_ACT_SEND_PREPARE:
            VS_ASSERT(c->replica_count > 1);
            commit_do_send_prepare(c, &a);
            break;
        case VSR_ACT_STATE_TRANSFER:
            VS_ASSERT(c->replica_count > 1);
            commit_xfer_start(c, &a);
            break;
        }
        if (rc != 0)
            return rc;
    }
    if (c->need_rebuild) {
        c->need_rebuild = 0;
        return commit_engine_rebuild(c);
    }
    /* Forwarded answers whose op this node has now applied. */
    forward0_release(&c->fwd, vsr_commit_min(c->engine), commit_forward_answer,
                     c);
    return 0;
}

/* ---------------------------------------------------------------- */
/* Checkpoint                                                       */
/* ---------------------------------------------------------------- */

static int
commit_checkpoint(struct commit *c, int force)
{
    if (force && (c->sb_retry || c->ckpt == COMMIT_CKPT_DRAIN)) {
        /* The journal is full: a pending retry runs now rather than at
         * its tick, so a stalled checkpoint cannot keep it full. */
        int rc;
        if (c->sb_retry) {
            struct vs_vsr_persist p = c->sb_retry_persist;
            rc = commit_do_superblock(c, &p);
        } else {
            rc = commit_do_wal_drain(c);
        }
        if (rc == 0)
            rc = commit_drain(c);
        if (rc != 0)
            return rc;
    }
    if (c->ckpt != COMMIT_CKPT_IDLE || c->sb_retry)
        return 0;
    struct vs_vsr_persist d;
    vsr_durable(c->engine, &d);
    uint64_t head = vsr_op(c->engine);
    uint64_t held = head - d.checkpoint_op;
    uint64_t slots = c->cfg->wal_slots;
    uint64_t free_slots = held >= slots ? 0 : slots - held;
    if (!force && free_slots >= c->cfg->checkpoint_margin)
        return 0;
    uint64_t op = vsr_commit_min(c->engine);
    if (op <= d.checkpoint_op)
        return 0;
    if (!force && c->ckpt_backoff > 0) {
        c->ckpt_backoff--;
        return 0;
    }
    int rc = commit_checkpoint_begin(c, op);
    if (rc != 0 || c->ckpt != COMMIT_CKPT_SUPERBLOCK)
        return rc;
    return commit_drain(c);
}

/* A cluster replica checkpoints at fixed ops, multiples of this interval
 * (0: none fits), so every replica snapshots the same states and their
 * checkpoint checksums compare. The interval leaves room for a full
 * pipeline above the checkpoint before the margin is reached. */
static uint64_t
commit_checkpoint_interval(const struct commit *c)
{
    uint64_t slots = c->cfg->wal_slots;
    uint64_t reserve = (uint64_t)c->cfg->checkpoint_margin + VSR_PIPELINE_MAX;
    return c->replica_count > 1 && slots > reserve ? slots - reserve : 0;
}

/* Phases 1 and 2 at `op` (the state's op); the caller drains. 0 (also
 * when phase 1 failed and will be retried) or -VS_EFATAL. */
static int
commit_checkpoint_begin(struct commit *c, uint64_t op)
{
    const void *st = lr_writer_live(c->lr);
    VS_ASSERT(meta_hdr_c(st)->last_op == op);
    /* A pairing records op's header (checkpoint_header.h): a state
     * booted on a transferred snapshot whose pairing a crash lost knows
     * only its checksum, so its next journaled op checkpoints instead. */
    struct vs_hdr_prepare cp;
    if (!ckpt_header_find(&c->journal, &c->ckpt_prepare, op, &cp)) {
        vs_log_debug("checkpoint at op %llu: its header is not held here "
                     "(an installed snapshot); a later op checkpoints",
                     (unsigned long long)op);
        return 0;
    }

    /* Phase 1: the snapshot of the state at commit_min. */
    vs_wbuf_reset(&c->snap);
    meta_snapshot_encode(st, &c->ct, &c->snap);
    struct vs_u128 sum;
    int rc =
        snapfile_write(c->io, c->meta_dir, c->snap.data, c->snap.len, &sum);
    if (rc == -VS_EFATAL)
        return -VS_EFATAL;
    if (rc != 0) {
        c->stats.checkpoint_failures++;
        c->ckpt_enospc = rc == -ENOSPC;
        c->ckpt_backoff = COMMIT_RETRY_TICKS;
        vs_log_warn("checkpoint at op %llu: snapshot write failed (%s); "
                    "retrying later",
                    (unsigned long long)op, sio_strerror(rc));
        return 0;
    }
    /* Phase 2: the superblock pairing, through the engine; phase 3 runs
     * when that write is durable (commit_do_superblock). */
    rc = vsr_checkpoint(c->engine, op, sum);
    if (rc != 0) {
        vs_log_warn("checkpoint at op %llu: engine refused (%s)",
                    (unsigned long long)op, strerror(-rc));
        return 0;
    }
    c->ckpt = COMMIT_CKPT_SUPERBLOCK;
    c->ckpt_op = op;
    return 0;
}

int
commit_checkpoint_now(struct commit *c)
{
    return commit_checkpoint(c, 1);
}

/* ---------------------------------------------------------------- */
/* Inputs                                                           */
/* ---------------------------------------------------------------- */

/* A JoinGroup body with the in-flight list filled from the data shards'
 * reports (groups0_fill_inflight) into out: 1, or 0 to keep the body as
 * it is (undecodable: apply refuses it; or nothing in flight). */
static int
commit_join_inflight(struct commit *c, const uint8_t *body, uint32_t len,
                     struct vs_wbuf *out)
{
    struct meta_op *op = vs_xmalloc(sizeof(*op));
    int filled = 0;
    if (meta_op_decode(body, len, op) == 0 &&
        op->operation == VS_OP_JOIN_CONSUMER_GROUP &&
        groups0_fill_inflight(c->groups, lr_writer_live(c->lr), c->incarnation,
                              c->incarnation_ctx, op) > 0 &&
        meta_op_encode(op, out) == 0)
        filled = 1;
    free(op);
    return filled;
}

static int
commit_operation_forwardable(uint8_t op)
{
    return op == VS_OP_REGISTER || op == VS_OP_LOGOUT ||
           (op >= VS_OP_CREATE_TOPIC_WITH_ASSIGNMENTS &&
            op <= VS_OP_TRUNCATE_PARTITION) ||
           (op >= VS_OP_CREATE_STREAM && op <= VS_OP_LEAVE_CONSUMER_GROUP);
}

/* The primary of the current view when this replica is a Normal backup
 * of a cluster, with its link up: 1 and *primary; else 0. */
static int
commit_primary_peer(const struct commit *c, uint8_t *primary)
{
    int p = vsr_primary(c->engine);
    if (c->replica_count < 2 || p < 0 || p == c->replica)
        return 0;
    *primary = (uint8_t)p;
    return (c->peer_up >> *primary) & 1u;
}

/* A backup: hand the request to the primary (forward.h); every failure
 * is answered 57 (the SDK resends; the client table deduplicates). */
static void
commit_forward(struct commit *c, const struct commit_origin *to,
               const struct vs_hdr_request *req, const uint8_t *payload,
               uint32_t len)
{
    uint8_t primary;
    if (to->remote || !commit_primary_peer(c, &primary)) {
        /* Not the primary, and no settled primary to hand it to (or a
         * forward reached a replica that is no longer the primary). */
        commit_send_status(c, to, req, VS_E_TRANSIENT_NOT_COMMITTED);
        return;
    }
    struct forward0_origin o = {
        .slot = to->worker_slot,
        .incarnation = to->incarnation,
        .conn_id = to->conn_id,
        .req = *req,
    };
    vs_wbuf_reset(&c->out);
    int rc = forward0_request(&c->fwd, &o, payload, len, c->cluster, c->replica,
                              vsr_view(c->engine), primary, &c->out);
    if (rc == 0 && c->replica_send != NULL)
        rc = c->replica_send(c->replica_ctx, primary, c->out.data,
                             (uint32_t)c->out.len);
    /* A send that failed leaves the entry: forward0_tick answers it 57
     * once the link is seen down or the primary's timeout passes. */
    if (rc == -ENOBUFS && c->fwd.used >= FORWARD0_MAX)
        commit_send_status(c, to, req, VS_E_TRANSIENT_NOT_COMMITTED);
}

/* Group commit: keeps a proposal the full pipeline refused (or one that
 * arrived behind such) for commit_flush, in arrival order. */
static void
commit_queue_proposal(struct commit *c, const struct commit_origin *to,
                      const uint8_t *payload, uint32_t len)
{
    if (c->n_queued == c->cap_queued) {
        c->cap_queued = c->cap_queued ? 2 * c->cap_queued : 64;
        c->queued = vs_xrealloc(c->queued, c->cap_queued * sizeof(*c->queued));
    }
    struct commit_queued *q = &c->queued[c->n_queued++];
    q->to = *to;
    q->len = len;
    q->payload = vs_xmalloc(len);
    memcpy(q->payload, payload, len);
    c->stats.queued++;
}

static int
commit_on_propose(struct commit *c, const struct commit_origin *to,
                  const uint8_t *payload, uint32_t len)
{
    c->stats.proposals++;
    if (len < VS_HEADER_SIZE) {
        c->stats.dropped++;
        vs_log_warn("proposal of %u bytes from %s %u: no request header; "
                    "dropped",
                    len, to->remote ? "replica" : "shard",
                    to->remote ? to->peer : to->worker_slot);
        return 0;
    }
    struct vs_hdr_request req;
    memcpy(&req, payload, sizeof(req));
    const uint8_t *body = payload + VS_HEADER_SIZE;
    uint32_t body_len = len - VS_HEADER_SIZE;

    if (vs_u128_is_zero(req.client) ||
        !commit_operation_forwardable(req.operation)) {
        commit_send_status(c, to, &req, VS_E_INVALID_COMMAND);
        return 0;
    }
    if (req.operation != VS_OP_REGISTER && req.request == 0) {
        /* Only Register carries request 0 (the data shard drops these;
         * an answer is still owed for every FWD_PROPOSE). */
        commit_send_status(c, to, &req, VS_E_INVALID_COMMAND);
        return 0;
    }
    if (c->replica_count > 1 && !vsr_is_primary(c->engine)) {
        commit_forward(c, to, &req, payload, len);
        return 0;
    }
    if (req.operation != VS_OP_REGISTER && req.session == 0) {
        /* No session presented: as the table would say for no session. */
        c->stats.evictions++;
        struct vs_hdr_eviction e;
        commit_eviction(&e, c->cluster, vsr_view(c->engine), c->replica,
                        req.client, VS_EVICT_NO_SESSION);
        commit_send_reply(c, to, req.client, FWD_F_UNBIND, 0, 0, &e, sizeof(e));
        return 0;
    }
    if (req.operation != VS_OP_REGISTER) {
        const uint8_t *cached;
        size_t cached_len;
        enum meta_ct_outcome o = meta_ct_check_request(
            &c->ct, lr_writer_live(c->lr), req.client, req.session, req.request,
            req.request_checksum, &cached, &cached_len);
        uint8_t reason;
        enum meta_ct_action act = meta_ct_answer(o, req.client, &reason);
        if (act == META_CT_REPLY) {
            c->stats.duplicates++;
            commit_send_reply(c, to, req.client, 0, 0, 0, cached,
                              (uint32_t)cached_len);
            return 0;
        }
        if (act == META_CT_EVICT) {
            c->stats.evictions++;
            vs_log_debug("request %llu of a client: %s -> eviction %u",
                         (unsigned long long)req.request,
                         meta_ct_outcome_name(o), reason);
            struct vs_hdr_eviction e;
            commit_eviction(&e, c->cluster, vsr_view(c->engine), c->replica,
                            req.client, reason);
            commit_send_reply(c, to, req.client, FWD_F_UNBIND, 0, 0, &e,
                              sizeof(e));
            return 0;
        }
    }

    /* JoinGroup: the in-flight partitions the data shards reported. */
    struct vs_wbuf joined;
    vs_wbuf_init(&joined);
    if (req.operation == VS_OP_JOIN_CONSUMER_GROUP &&
        commit_join_inflight(c, body, body_len, &joined)) {
        body = joined.data;
        body_len = (uint32_t)joined.len;
    }
    if (!commit_op_allowed_when_low(req.operation) && commit_disk_low(c)) {
        vs_wbuf_fini(&joined);
        commit_send_status(c, to, &req, VS_E_DISK_FULL);
        return 0;
    }
    if (c->group_commit && c->n_queued > 0) {
        /* proposals wait for the pipeline in arrival order: a newcomer
         * never takes the room freed for the queue's head */
        vs_wbuf_fini(&joined);
        commit_queue_proposal(c, to, payload, len);
        return 0;
    }
    /* The prepare carries the metadata op body, not the client's. */
    struct vs_hdr_request pr = req;
    pr.f.size = VS_HEADER_SIZE + body_len;
    int rc = vsr_on_request(c->engine, &pr, body, body_len, commit_wall(c));
    if (rc == -ENOSPC) {
        /* The journal is full until a checkpoint is durable. */
        rc = commit_checkpoint(c, 1);
        if (rc != 0) {
            vs_wbuf_fini(&joined);
            return rc;
        }
        rc = vsr_on_request(c->engine, &pr, body, body_len, commit_wall(c));
    }
    vs_wbuf_fini(&joined); /* the engine copied the body */
    if (rc == -EBUSY && c->group_commit &&
        (c->n_held > 0 || c->replica_count > 1)) {
        /* the pipeline is full of held appends (the next commit_flush
         * makes room) or, on a cluster, of prepares waiting for their
         * PrepareOks: the proposal is handled again once an op commits
         * (commit_flush_needed), not refused with a 57 */
        c->queued_commit = vsr_commit_min(c->engine);
        commit_queue_proposal(c, to, payload, len);
        return 0;
    }
    switch (rc) {
    case 0:
        break;
    case -EAGAIN:
    case -EREMOTE: /* not the primary after all: the client resends */
    case -EALREADY:
    case -EBUSY:
        commit_send_status(c, to, &req, VS_E_TRANSIENT_NOT_COMMITTED);
        return 0;
    case -ENOSPC:
        vs_log_warn("metadata journal full and no checkpoint possible%s: "
                    "request refused",
                    c->ckpt_enospc ? " (out of space)" : "");
        commit_send_status(c, to, &req,
                           c->ckpt_enospc ? VS_E_DISK_FULL : VS_E_ERROR);
        return 0;
    default:
        commit_send_status(c, to, &req, VS_E_INVALID_COMMAND);
        return 0;
    }
    uint64_t op = vsr_op(c->engine);
    struct commit_pending *pd = &c->pending[op % VSR_PIPELINE_MAX];
    if (pd->used)
        commit_pending_free(pd); /* a stale entry (never answered) */
    pd->used = 1;
    pd->op = op;
    pd->to = *to;
    pd->client = req.client;
    pd->req = req;
    c->in_propose = 1;
    rc = commit_drain(c);
    c->in_propose = 0;
    if (rc != 0)
        return rc;
    return commit_checkpoint(c, 0);
}

int
commit_flush_needed(const struct commit *c)
{
    return c->n_held > 0 ||
           (c->n_queued > 0 && vsr_commit_min(c->engine) != c->queued_commit);
}

int
commit_flush(struct commit *c)
{
    if (c->n_held > 0) {
        int rc = wal_sync(&c->journal);
        if (rc == -VS_EFATAL)
            return -VS_EFATAL;
        if (rc != 0) {
            char msg[256];
            snprintf(msg, sizeof(msg), "journal fsync failed: %s",
                     sio_strerror(rc));
            return commit_set_fatal(c, msg);
        }
        c->stats.journal_syncs++;
        commit_release_held(c);
        rc = commit_drain(c);
        if (rc != 0)
            return rc;
        rc = commit_checkpoint(c, 0);
        if (rc != 0)
            return rc;
    }
    /* proposals that found the pipeline full, in arrival order; their
     * appends are held for the next flush (or queued again) */
    size_t n = c->n_queued;
    struct commit_queued *q = c->queued;
    c->queued = NULL;
    c->n_queued = c->cap_queued = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (rc == 0)
            rc = commit_on_propose(c, &q[i].to, q[i].payload, q[i].len);
        free(q[i].payload);
    }
    free(q);
    return rc;
}

/* Proposes an internal op (client 0, request 0, session 0: no client
 * table, no reply) and drains it to its commit. 0 (committed), 1 (the
 * engine is busy: try again later) or -VS_EFATAL. */
static int
commit_propose_internal(struct commit *c, const struct meta_op *op)
{
    vs_wbuf_reset(&c->body);
    int rc = meta_op_encode(op, &c->body);
    VS_ASSERT(rc == 0);
    struct vs_hdr_request req;
    memset(&req, 0, sizeof(req));
    req.f.cluster = c->cluster;
    req.f.size = (uint32_t)(VS_HEADER_SIZE + c->body.len);
    req.f.command = VS_CMD_REQUEST;
    req.operation = op->operation;
    rc = vsr_on_request(c->engine, &req, c->body.data, (uint32_t)c->body.len,
                        commit_wall(c));
    if (rc == -ENOSPC) {
        rc = commit_checkpoint(c, 1);
        if (rc != 0)
            return rc;
        rc = vsr_on_request(c->engine, &req, c->body.data,
                            (uint32_t)c->body.len, commit_wall(c));
    }
    if (rc != 0) {
        vs_log_debug("internal op %u not taken now (%s); retried later",
                     op->operation, strerror(-rc));
        return 1;
    }
    rc = commit_drain(c);
    if (rc != 0)
        return rc;
    return commit_checkpoint(c, 0);
}

static void
commit_retry_add(struct commit *c, struct vs_u128 client)
{
    for (size_t i = 0; i < c->n_retry; i++)
        if (vs_u128_eq(c->retry_remove[i], client))
            return;
    c->retry_remove = vs_xrealloc(c->retry_remove,
                                  (c->n_retry + 1) * sizeof(*c->retry_remove));
    c->retry_remove[c->n_retry++] = client;
}

/* RemoveConsumerGroupMember (66) for a client that is a member of any
 * group; a busy engine queues it for the next sweep. */
static int
commit_remove_member(struct commit *c, struct vs_u128 client)
{
    if (!groups0_is_member(lr_writer_live(c->lr), client))
        return 0;
    struct meta_op *op = vs_xmalloc(sizeof(*op));
    meta_op_init(op, VS_OP_REMOVE_CONSUMER_GROUP_MEMBER);
    op->client = client;
    int rc = commit_propose_internal(c, op);
    free(op);
    if (rc == 1) {
        commit_retry_add(c, client);
        return 0;
    }
    if (rc == 0) {
        c->stats.members_removed++;
        vs_log_info("consumer-group member removed: its connection is gone");
    }
    return rc;
}

static int commit_groups_backup(const struct commit *c);
static void commit_member_report(struct commit *c, int with_claims,
                                 const struct fwd_member *e, size_t ne);

/* The once-a-second consumer-group sweep (commit_tick). */
static int
commit_groups_sweep(struct commit *c)
{
    int rc = 0;
    struct vs_u128 *dead = NULL;
    uint64_t *sessions = NULL;
    size_t n = 0;
    if (c->incarnation != NULL)
        groups0_sweep_dead_sessions(c->groups, c->incarnation,
                                    c->incarnation_ctx, &dead, &sessions, &n);
    if (commit_groups_backup(c)) {
        /* the primary decides: events for the dead data shard's
         * connections, and this node's claim (groups0.h) */
        struct fwd_member *ev = vs_xcalloc(n + 1, sizeof(*ev));
        for (size_t i = 0; i < n; i++) {
            ev[i].client = dead[i];
            ev[i].session = sessions[i];
        }
        commit_member_report(c, 1, ev, n);
        free(ev);
        free(dead);
        free(sessions);
        c->n_retry = 0; /* only a primary proposes removals */
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        commit_retry_add(c, dead[i]);
    free(dead);
    free(sessions);
    if (c->replica_count > 1 && c->g_primary) {
        struct vs_u128 *gone = NULL;
        size_t ng = 0;
        groups0_sweep_members(c->groups, lr_writer_live(c->lr), commit_wall(c),
                              c->g_liveness_us, &gone, &ng);
        for (size_t i = 0; i < ng; i++)
            commit_retry_add(c, gone[i]);
        if (ng > 0)
            vs_log_info("%zu consumer-group member(s) alive on no node "
                        "(connection ended on a backup, origin unreachable "
                        "or restarted, or unclaimed past the liveness "
                        "timeout): removing",
                        ng);
        free(gone);
    }
    struct vs_u128 *retry = c->retry_remove;
    size_t nr = c->n_retry;
    c->retry_remove = NULL;
    c->n_retry = 0;
    for (size_t i = 0; i < nr && rc == 0; i++)
        rc = commit_remove_member(c, retry[i]);
    free(retry);
    if (rc != 0)
        return rc;

    struct groups0_revoke *due = NULL;
    size_t nd = 0;
    groups0_due_revocations(c->groups, lr_writer_live(c->lr), commit_wall(c),
                            c->rebalancing_timeout_us, &due, &nd);
    struct meta_op *op = vs_xmalloc(sizeof(*op));
    for (size_t i = 0; i < nd && rc == 0; i++) {
        meta_op_init(op, VS_OP_COMPLETE_CONSUMER_GROUP_REVOCATION);
        meta_ident_id(&op->stream, due[i].stream_id);
        meta_ident_id(&op->topic, due[i].topic_id);
        meta_ident_id(&op->group, due[i].group_id);
        op->partition_id = due[i].partition_id;
        rc = commit_propose_internal(c, op);
        if (rc == 0) {
            c->stats.revocations++;
            vs_log_info("revocation of partition %u (group %u) completed "
                        "after the rebalancing timeout",
                        due[i].partition_id, due[i].group_id);
        } else if (rc == 1) {
            rc = 0; /* still due at the next sweep */
        }
    }
    free(op);
    free(due);
    return rc;
}

/* FWD_GROUP_REPORT (fwd.h): completed revocations become op 67 when the
 * live assignment is still the one reported; the in-flight set replaces
 * the sender's. */
static int
commit_on_group_report(struct commit *c, const struct fwd_hdr *fh,
                       const uint8_t *p)
{
    if (fh->payload_len < 8) {
        c->stats.dropped++;
        return 0;
    }
    uint64_t nd = vs_load_u32(p), ni = vs_load_u32(p + 4);
    if ((nd + ni) * sizeof(struct fwd_group_part) != fh->payload_len - 8) {
        c->stats.dropped++;
        vs_log_warn("FWD_GROUP_REPORT from shard %u: bad length; dropped",
                    fh->worker_slot);
        return 0;
    }
    const uint8_t *e = p + 8;
    struct fwd_group_part *in = NULL;
    if (ni > 0) {
        in = vs_xmalloc((size_t)ni * sizeof(*in));
        memcpy(in, e + nd * sizeof(*in), (size_t)ni * sizeof(*in));
    }
    groups0_set_inflight(c->groups, fh->worker_slot, fh->worker_incarnation, in,
                         (size_t)ni);
    free(in);
    int rc = 0;
    struct meta_op *op = NULL;
    for (uint64_t i = 0; i < nd && rc == 0; i++) {
        struct fwd_group_part d;
        memcpy(&d, e + i * sizeof(d), sizeof(d));
        if (!groups0_revoke_current(lr_writer_live(c->lr), &d))
            continue; /* completed already, or no longer as reported */
        if (op == NULL)
            op = vs_xmalloc(sizeof(*op));
        meta_op_init(op, VS_OP_COMPLETE_CONSUMER_GROUP_REVOCATION);
        meta_ident_id(&op->stream, d.stream_id);
        meta_ident_id(&op->topic, d.topic_id);
        meta_ident_id(&op->group, d.group_id);
        op->partition_id = d.partition_id;
        rc = commit_propose_internal(c, op);
        if (rc == 0) {
            c->stats.revocations++;
            vs_log_info("revocation of partition %u (group %u) completed: "
                        "the revoking member committed what it polled",
                        d.partition_id, d.group_id);
        } else if (rc == 1) {
            rc = 0; /* the data shard reports it again */
        }
    }
    free(op);
    return rc;
}

/* ---------------------------------------------------------------- */
/* Cluster member liveness (groups0.h "Cluster rules")              */
/* ---------------------------------------------------------------- */

/* 1 on a backup of a cluster: member removals are the primary's. */
static int
commit_groups_backup(const struct commit *c)
{
    return c->replica_count > 1 && !vsr_is_primary(c->engine);
}

/* A backup: sends the primary this node's claim (with_claims) and the
 * events e[0..ne) in one MemberReport. Nothing without a settled primary
 * whose link is up: claims repeat every second, and a lost event is
 * caught by the absence rule. */
static void
commit_member_report(struct commit *c, int with_claims,
                     const struct fwd_member *e, size_t ne)
{
    uint8_t primary;
    if (!commit_primary_peer(c, &primary) || c->replica_send == NULL ||
        (!with_claims && ne == 0))
        return;
    struct fwd_member *claims = NULL;
    size_t nc = 0;
    uint32_t flags = 0;
    if (with_claims) {
        groups0_node_members(c->groups, c->incarnation, c->incarnation_ctx,
                             &claims, &nc);
        if (commit_wall(c) - c->g_boot_us >= GROUPS0_COMPLETE_US)
            flags = VS_MEMBER_REPORT_COMPLETE;
    }
    vs_wbuf_reset(&c->out);
    forward0_report_frame(c->cluster, c->replica, vsr_view(c->engine),
                          c->fwd.incarnation, ++c->g_report_seq, flags, claims,
                          nc, e, ne, &c->out);
    free(claims);
    int rc = c->replica_send(c->replica_ctx, primary, c->out.data,
                             (uint32_t)c->out.len);
    if (rc != 0)
        vs_log_debug("member report to replica %u not sent (%s)", primary,
                     strerror(-rc));
}

/* FWD_CLOSED (closed 1) or FWD_MEMBER_SILENT (0) of a bound connection
 * of this node. */
static int
commit_on_conn_ended(struct commit *c, uint32_t src, const struct fwd_hdr *fh,
                     int closed)
{
    if (vs_u128_is_zero(fh->client))
        return 0;
    const void *st = lr_writer_live(c->lr);
    int has = groups0_has(c->groups, fh->client);
    uint64_t session = groups0_session_of(c->groups, fh->client);
    int act = closed ? groups0_closed(c->groups, fh->client, src,
                                      fh->worker_incarnation, fh->conn_id)
                     : groups0_silent(c->groups, fh->client, src,
                                      fh->worker_incarnation, fh->conn_id);
    if (!act)
        return 0; /* an older connection; the client lives elsewhere */
    if (!has && fh->session != 0 &&
        !groups0_session_current(st, fh->client, fh->session))
        return 0; /* the client registered again since (any node) */
    if (session == 0)
        session = fh->session;
    if (commit_groups_backup(c)) {
        if (!groups0_is_member(st, fh->client))
            return 0; /* nothing to remove (a join not applied here yet
                         is caught by the absence rule) */
        struct fwd_member e;
        memset(&e, 0, sizeof(e));
        e.client = fh->client;
        e.session = session;
        commit_member_report(c, 0, &e, 1);
        return 0;
    }
    if (!groups0_is_member(st, fh->client))
        return 0;
    if (!closed)
        vs_log_info("shard %u: a consumer-group member sent nothing for 1.2 x "
                    "the heartbeat interval: removed from its groups",
                    src);
    return commit_remove_member(c, fh->client);
}

/* FWD_MEMBERS: a piece of a data shard's member set (shard/fwd.h). */
static int
commit_on_members(struct commit *c, const struct fwd_hdr *fh,
                  const uint8_t *payload)
{
    if (fh->payload_len % sizeof(struct fwd_member) != 0) {
        c->stats.dropped++;
        vs_log_warn("FWD_MEMBERS from shard %u: bad length; dropped",
                    fh->worker_slot);
        return 0;
    }
    size_t n = fh->payload_len / sizeof(struct fwd_member);
    struct fwd_member *e = NULL;
    if (n > 0) {
        e = vs_xmalloc(n * sizeof(*e));
        memcpy(e, payload, n * sizeof(*e));
    }
    groups0_members_piece(c->groups, fh->worker_slot, fh->worker_incarnation, e,
                          n, (fh->flags & FWD_F_MORE) != 0);
    groups0_claim_local(c->groups, lr_writer_live(c->lr), fh->worker_slot,
                        fh->worker_incarnation, e, n);
    free(e);
    return 0;
}

/* MemberReport from backup `peer`: the settled primary takes its claims
 * and events (ends wait for their grace: the sweep removes); any other
 * replica drops it (the backup sends the next one
 * to whoever is primary then). */
static int
commit_on_member_report(struct commit *c, uint8_t peer, const void *frame,
                        size_t len)
{
    struct vs_hdr_member_report h;
    const struct fwd_member *e;
    if (forward0_decode_report(frame, len, peer, c->cluster, &h, &e) != 0) {
        c->stats.dropped++;
        vs_log_warn("member report from replica %u: malformed; dropped", peer);
        return 0;
    }
    if (!c->g_primary)
        return 0;
    const void *st = lr_writer_live(c->lr);
    (void)groups0_report(c->groups, st, peer, h.incarnation,
                         (h.flags & VS_MEMBER_REPORT_COMPLETE) != 0, e,
                         h.claims);
    for (uint32_t i = 0; i < h.events; i++) {
        struct fwd_member ev;
        memcpy(&ev, &e[h.claims + i], sizeof(ev));
        groups0_remote_closed(c->groups, st, peer, ev.client, ev.session,
                              commit_wall(c));
    }
    return 0;
}

/* Every tick: a replica that just became the settled primary of a
 * cluster starts its tenure (groups0_tenure: leases from now). */
static void
commit_groups_tenure(struct commit *c)
{
    int prim = c->replica_count > 1 && vsr_is_settled_primary(c->engine);
    if (prim && !c->g_primary) {
        groups0_tenure(c->groups, commit_wall(c));
        vs_log_info("settled primary of view %u: consumer-group members not "
                    "claimed by any node within %llu ms are removed",
                    vsr_view(c->engine),
                    (unsigned long long)(c->g_liveness_us / 1000u));
    }
    c->g_primary = prim;
}

int
commit_on_frame(struct commit *c, uint32_t src, const void *frame, uint32_t len)
{
    struct fwd_hdr fh;
    if (len < sizeof(fh)) {
        c->stats.dropped++;
        vs_log_warn("IPC frame of %u bytes from shard %u: too short; dropped",
                    len, src);
        return 0;
    }
    memcpy(&fh, frame, sizeof(fh));
    if (fh.payload_len != len - sizeof(fh) || fh.worker_slot != src) {
        c->stats.dropped++;
        vs_log_warn("IPC frame from shard %u: bad length or slot; dropped",
                    src);
        return 0;
    }
    const uint8_t *payload = (const uint8_t *)frame + sizeof(fh);
    switch (fh.kind) {
    case FWD_PROPOSE: {
        struct commit_origin to = commit_origin_local(&fh);
        return commit_on_propose(c, &to, payload, fh.payload_len);
    }
    case FWD_CLOSED:
        /* Consumer-group memberships end here; the session itself stays:
         * the client may reconnect and resend. */
        vs_log_debug("shard %u: connection %llu of a bound client closed", src,
                     (unsigned long long)fh.conn_id);
        return commit_on_conn_ended(c, src, &fh, 1);
    case FWD_MEMBER_SILENT:
        return commit_on_conn_ended(c, src, &fh, 0);
    case FWD_MEMBERS:
        return commit_on_members(c, &fh, payload);
    case FWD_GROUP_REPORT:
        return commit_on_group_report(c, &fh, payload);
    case FWD_REBIND: {
        /* a bound connection moved between data shards (fwd.h) */
        struct fwd_rebind rb;
        if (fh.payload_len != sizeof(rb) || vs_u128_is_zero(fh.client))
            return 0;
        memcpy(&rb, payload, sizeof(rb));
        (void)groups0_rebind(c->groups, fh.client, rb.from_slot,
                             rb.from_incarnation, rb.from_conn_id, src,
                             fh.worker_incarnation, fh.conn_id);
        return 0;
    }
    default:
        c->stats.dropped++;
        vs_log_warn("IPC frame kind %u from shard %u: unknown; dropped",
                    fh.kind, src);
        return 0;
    }
}

void
commit_on_link(struct commit *c, uint8_t peer, int up)
{
    if (peer >= c->replica_count || peer >= 32)
        return;
    groups0_link(c->groups, peer, up, commit_wall(c));
    if (up)
        c->peer_up |= 1u << peer;
    else
        c->peer_up &= ~(1u << peer);
}

/* ForwardRequest on the primary: the request as if a local data shard
 * had proposed it, answered with a ForwardResult. */
static int
commit_on_forward_request(struct commit *c, uint8_t peer, const void *frame,
                          size_t len)
{
    uint64_t nonce;
    struct vs_hdr_request req;
    const uint8_t *body;
    uint32_t body_len;
    uint64_t peer_inc = 0;
    if (forward0_decode_request_inc(frame, len, c->cluster, &nonce, &peer_inc,
                                    &req, &body, &body_len) != 0) {
        c->stats.dropped++;
        vs_log_warn("forwarded request from replica %u: malformed; dropped",
                    peer);
        return 0;
    }
    struct commit_origin to;
    memset(&to, 0, sizeof(to));
    to.remote = 1;
    to.peer = peer;
    to.nonce = nonce;
    to.incarnation = peer_inc;
    c->stats.forwarded_in++;
    const uint8_t *payload = (const uint8_t *)frame + VS_HEADER_SIZE;
    return commit_on_propose(c, &to, payload, (uint32_t)(len - VS_HEADER_SIZE));
}

/* A Prepare or RepairPrepare on a backup: with group commit its journal
 * append is written and held like a proposal's on the primary, so the
 * prepares of one event-loop pass share the fsync of commit_flush, which
 * reports each durable in op order; the engine sends each PrepareOk only
 * then (R3: never before the append is durable). */
static int
commit_on_replica_prepare(struct commit *c, uint8_t peer, const void *frame,
                          size_t len)
{
    uint8_t command = ((const struct vs_header *)frame)->f.command;
    enum vsr_verdict v = vsr_on_message(c->engine, frame, len);
    if (v != VSR_ACCEPTED)
        vs_log_debug("replica %u: %s dropped: %s", peer,
                     vs_command_name(command), vsr_verdict_name(v));
    c->in_prepare = 1;
    int rc = commit_drain(c);
    c->in_prepare = 0;
    if (rc != 0)
        return rc;
    return commit_checkpoint(c, 0);
}

int
commit_on_replica_frame(struct commit *c, uint8_t peer, const void *frame,
                        size_t len)
{
    if (len < VS_HEADER_SIZE) {
        c->stats.dropped++;
        return 0;
    }
    if (((uintptr_t)frame & 15u) != 0) {
        /* The links hand frames where their buffer holds them: give the
         * engine and the decoders an aligned copy (its u128 fields). */
        vs_wbuf_reset(&c->rx);
        vs_wr_bytes(&c->rx, frame, len);
        frame = c->rx.data;
    }
    uint8_t command = ((const struct vs_header *)frame)->f.command;
    if (zt_is_transfer_command(command)) {
        if (c->zt == NULL)
            return 0;
        zt_on_frame(c->zt, peer, frame, len);
        if (sio_is_fatal(c->io) || c->fatal[0] != '\0')
            return -VS_EFATAL;
        commit_xfer_reconcile(c);
        int rc = commit_drain(c);
        if (rc != 0)
            return rc;
        return commit_checkpoint(c, 0);
    }
    if (command == VS_CMD_FORWARD_REQUEST)
        return commit_on_forward_request(c, peer, frame, len);
    if (command == VS_CMD_MEMBER_REPORT)
        return commit_on_member_report(c, peer, frame, len);
    if (command == VS_CMD_FORWARD_RESULT) {
        if (forward0_on_result(&c->fwd, peer, frame, len, c->cluster) ==
            -EBADMSG)
            vs_log_warn("forward result from replica %u: malformed or not "
                        "from the primary asked; dropped",
                        peer);
        forward0_release(&c->fwd, vsr_commit_min(c->engine),
                         commit_forward_answer, c);
        return 0;
    }
    if (command == VS_CMD_PREPARE || command == VS_CMD_REPAIR_PREPARE)
        return commit_on_replica_prepare(c, peer, frame, len);
    enum vsr_verdict v = vsr_on_message(c->engine, frame, len);
    if (v != VSR_ACCEPTED)
        vs_log_debug("replica %u: %s dropped: %s", peer,
                     vs_command_name(command), vsr_verdict_name(v));
    int rc = commit_drain(c);
    if (rc != 0)
        return rc;
    return commit_checkpoint(c, 0);
}

int
commit_tick(struct commit *c)
{
    /* queued proposals are retried at least once a tick (a view change
     * may have ended this primary's term: they get their 57 then) */
    c->queued_commit = UINT64_MAX;
    vsr_tick(c->engine);
    int rc = commit_drain(c);
    if (rc != 0)
        return rc;
    if (c->zt != NULL) {
        if (c->xt_backoff > 0 && --c->xt_backoff == 0 && c->xt_want) {
            struct vs_vsr_action t = c->xt_trigger;
            commit_xfer_start(c, &t);
        }
        zt_tick(c->zt);
        if (sio_is_fatal(c->io) || c->fatal[0] != '\0')
            return -VS_EFATAL;
        commit_xfer_reconcile(c);
        commit_xfer_metrics(c);
        rc = commit_drain(c);
        if (rc != 0)
            return rc;
    }
    if (c->rebuilt) {
        struct vs_vsr_info in;
        vsr_info(c->engine, &in);
        if (!in.rebuilding && in.status == VSR_STATUS_NORMAL) {
            rc = shard0_rebuilt_clear(c->io, c->cfg->data_dir);
            if (rc == -VS_EFATAL)
                return rc;
            if (rc == 0) {
                c->rebuilt = 0;
                vs_log_info("rebuilt replica caught up at op %llu (view %u): "
                            "it votes and acknowledges again",
                            (unsigned long long)in.commit_min, in.view);
            }
        }
    }
    if (c->replica_count > 1 && c->behind_ticks++ >= 6000) {
        /* Once a minute: a replica whose gap to the cluster's commit is
         * beyond its journal window cannot catch up by repair. */
        c->behind_ticks = 0;
        struct vs_vsr_info in;
        vsr_info(c->engine, &in);
        if ((in.commit_max > in.checkpoint_op + c->cfg->wal_slots ||
             in.state_transfer) &&
            !in.transferring)
            vs_log_warn("this replica is behind the cluster beyond its "
                        "journal (applied op %llu, cluster committed %llu, "
                        "journal window %u ops) and no state transfer is "
                        "running: waiting for the primary to offer one",
                        (unsigned long long)in.commit_min,
                        (unsigned long long)in.commit_max, c->cfg->wal_slots);
    }
    uint8_t primary = 0;
    int primary_ok = commit_primary_peer(c, &primary);
    forward0_tick(&c->fwd, primary_ok, primary, commit_forward_answer, c);
    if (commit_genesis_needed(c)) {
        char err[256];
        rc = commit_genesis(c, err, sizeof(err));
        if (rc == -VS_EFATAL)
            return rc;
        if (rc != 0 && rc != -EALREADY)
            vs_log_warn("genesis not proposed: %s", err);
    }
    if ((c->sb_retry || c->ckpt == COMMIT_CKPT_DRAIN) && c->retry_ticks > 0 &&
        --c->retry_ticks == 0) {
        if (c->sb_retry) {
            struct vs_vsr_persist p = c->sb_retry_persist;
            rc = commit_do_superblock(c, &p);
        } else {
            rc = commit_do_wal_drain(c);
        }
        if (rc != 0)
            return rc;
        rc = commit_drain(c);
        if (rc != 0)
            return rc;
    }
    commit_groups_tenure(c);
    if (++c->sweep_ticks >= 100) {
        c->sweep_ticks = 0;
        rc = commit_groups_sweep(c);
        if (rc != 0)
            return rc;
    }
    return commit_checkpoint(c, 0);
}

/* ---------------------------------------------------------------- */
/* Genesis                                                          */
/* ---------------------------------------------------------------- */

int
commit_genesis_needed(const struct commit *c)
{
    if (meta_hdr_c(lr_writer_live(c->lr))->genesis_done)
        return 0;
    if (c->replica_count == 1)
        return 1;
    /* A cluster's genesis is its first op, proposed by the first primary
     * that finds the log empty; it commits through the quorum. */
    return vsr_is_settled_primary(c->engine) && vsr_op(c->engine) == 0;
}

int
commit_genesis(struct commit *c, char *err, size_t errlen)
{
    if (!commit_genesis_needed(c)) {
        snprintf(err, errlen, "the root user exists already");
        return -EALREADY;
    }
    const struct vs_config *cfg = c->cfg;
    char generated[64] = {0};
    const char *user = cfg->root_username;
    const char *pw = cfg->root_password;
    if (cfg->with_default_root_credentials) {
        user = "iggy";
        pw = "iggy";
    } else if (pw[0] == '\0') {
        uint8_t raw[18];
        randombytes_buf(raw, sizeof(raw));
        sodium_bin2base64(generated, sizeof(generated), raw, sizeof(raw),
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        sodium_memzero(raw, sizeof(raw));
        pw = generated;
    }
    int rc;
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    char phc[META_PWHASH_MAX];
    if (meta_username_check(user, strlen(user)) != 0) {
        snprintf(err, errlen, "root username '%s' is not valid (3..50 bytes)",
                 user);
        rc = -EINVAL;
        goto out;
    }
    rc = meta_secrets_init();
    if (rc == 0)
        rc = meta_password_hash(pw, strlen(pw), cfg->argon2_opslimit,
                                cfg->argon2_memlimit, phc);
    if (rc != 0) {
        snprintf(err, errlen, "cannot hash the root password: %s",
                 strerror(-rc));
        goto out;
    }
    meta_op_init(op, VS_OP_GENESIS);
    meta_op_set_name(op, user, strlen(user));
    meta_op_set_secret(op, phc, strlen(phc));
    rc = meta_op_encode(op, &w);
    VS_ASSERT(rc == 0);

    struct vs_hdr_request req;
    memset(&req, 0, sizeof(req));
    req.f.cluster = c->cluster;
    req.f.size = (uint32_t)(VS_HEADER_SIZE + w.len);
    req.f.command = VS_CMD_REQUEST;
    req.operation = VS_OP_GENESIS;
    rc = vsr_on_request(c->engine, &req, w.data, (uint32_t)w.len,
                        commit_wall(c));
    if (rc != 0) {
        snprintf(err, errlen, "the engine did not take the genesis op: %s",
                 strerror(-rc));
        goto out;
    }
    uint64_t gop = vsr_op(c->engine);
    rc = commit_drain(c);
    if (rc != 0) {
        commit_fatal_msg(c, err, errlen);
        goto out;
    }
    if (c->replica_count > 1) {
        /* It commits once a quorum journaled it (commit_do_commit logs
         * the root user then); the password is printed now, by the only
         * replica that knows it. */
        vs_log_info("genesis: root user '%s' proposed as op %llu", user,
                    (unsigned long long)gop);
    } else if (vsr_commit_min(c->engine) < gop || c->last_code != 0 ||
               commit_genesis_needed(c)) {
        snprintf(err, errlen, "the genesis op %llu did not commit (code %u)",
                 (unsigned long long)gop, c->last_code);
        rc = -EIO;
        goto out;
    }
    if (c->replica_count == 1)
        vs_log_info("genesis: root user '%s' (id 0) created at op %llu", user,
                    (unsigned long long)gop);
    if (generated[0] != '\0') {
        /* Printed once: stderr and the log (once if they are the same). */
        vs_log_warn("root password: %s", generated);
        if (vs_log_fd() != STDERR_FILENO)
            fprintf(stderr, "root password: %s\n", generated);
    }
    rc = 0;
out:
    sodium_memzero(generated, sizeof(generated));
    sodium_memzero(phc, sizeof(phc));
    if (w.data != NULL)
        sodium_memzero(w.data, w.cap);
    vs_wbuf_fini(&w);
    sodium_memzero(op, sizeof(*op));
    free(op);
    return rc;
}

/* ---------------------------------------------------------------- */
/* Construction                                                     */
/* ---------------------------------------------------------------- */

struct commit_fill {
    struct commit *c;
    struct shard0_recovered *rec;
    void *instance;
    int first;
    uint64_t op;
    int rc;
    char err[480];
};

/* shard0_replay_fn: rebuilds the cached reply of a replayed op with the
 * same builder as the live path. */
static void
commit_replay_hook(void *ctx, const struct vs_hdr_prepare *h,
                   const struct meta_result *res)
{
    struct commit_fill *f = ctx;
    struct commit *c = f->c;
    if (!commit_op_replies(h))
        return;
    vs_wbuf_reset(&c->body);
    commit_reply_body(h->operation, res->code, res->payload.data,
                      res->payload.len, &c->body);
    vs_wbuf_reset(&c->frame);
    commit_reply_frame(h, c->body.data, c->body.len, &c->frame);
    meta_ct_record_reply(&c->ct, f->instance, h->client, h->operation,
                         c->frame.data, c->frame.len);
}

/* lr_apply_fn for lr_restore: the same deterministic rebuild for each
 * instance; the client table only on the first. */
static void
commit_fill_fn(void *instance, size_t size, void *arg)
{
    struct commit_fill *f = arg;
    if (f->rc != 0)
        return;
    lr_instance_zero(instance, size);
    f->instance = instance;
    f->rc = shard0_rebuild_state(instance, &f->c->caps, f->rec,
                                 f->first ? &f->c->ct : NULL,
                                 f->first ? commit_replay_hook : NULL, f,
                                 &f->op, f->err, sizeof(f->err));
    f->first = 0;
}

int
commit_create(const struct commit_options *o, struct shard0_recovered *rec,
              struct commit **out, char *err, size_t errlen)
{
    *out = NULL;
    struct commit *c = vs_xcalloc(1, sizeof(*c));
    c->cfg = o->cfg;
    c->lr = o->lr;
    if (o->io != NULL) {
        c->io = o->io;
    } else {
        sio_init_real(&c->own_io);
        c->io = &c->own_io;
    }
    c->send = o->send;
    c->send_ctx = o->send_ctx;
    c->replica_send = o->replica_send;
    c->replica_ctx = o->replica_ctx;
    uint64_t nonce_base;
    randombytes_buf(&nonce_base, sizeof(nonce_base));
    forward0_init(&c->fwd, nonce_base);
    c->clock = o->clock;
    c->clock_ctx = o->clock_ctx;
    c->groups = groups0_create();
    c->g_boot_us = commit_wall(c);
    c->g_liveness_us =
        (uint64_t)o->cfg->group_heartbeat_interval_ms * 1000u * 6u / 5u;
    c->incarnation = o->incarnation;
    c->group_commit = o->group_commit;
    c->incarnation_ctx = o->incarnation_ctx;
    /* The reference's rebalancing timeout and heartbeat interval are
     * both 30 s: the node's knob sets both (config.h). */
    c->rebalancing_timeout_us =
        o->rebalancing_timeout_us ? o->rebalancing_timeout_us
        : o->cfg->group_heartbeat_interval_ms
            ? (uint64_t)o->cfg->group_heartbeat_interval_ms * 1000u
            : GROUPS0_REBALANCING_TIMEOUT_US;
    int n = snprintf(c->meta_dir, sizeof(c->meta_dir), "%s/%s",
                     o->cfg->data_dir, VS_METADATA_DIR);
    vs_config_cluster_id(o->cfg, &c->cluster.lo, &c->cluster.hi);
    c->replica = (uint8_t)o->cfg->replica_id;
    groups0_set_self(c->groups, c->replica);
    c->replica_count = (uint8_t)shard0_replica_count(o->cfg);
    meta_caps_from_config(&c->caps, o->cfg);
    meta_ct_init(&c->ct);
    meta_result_init(&c->res);
    meta_result_init(&c->res2);
    vs_wbuf_init(&c->body);
    vs_wbuf_init(&c->frame);
    vs_wbuf_init(&c->out);
    vs_wbuf_init(&c->snap);
    vs_wbuf_init(&c->rx);

    int rc;
    if (n < 0 || (size_t)n >= AFILE_PATH_MAX) {
        snprintf(err, errlen, "data dir path too long");
        rc = -ENAMETOOLONG;
        goto fail;
    }
    if (!rec->r.journal_open) {
        snprintf(err, errlen, "the recovered journal is not open");
        rc = -EINVAL;
        goto fail;
    }
    if (o->cfg->wal_slots > VSR_JOURNAL_SLOTS_MAX) {
        snprintf(err, errlen, "wal_slots %u above the engine's %u",
                 o->cfg->wal_slots, VSR_JOURNAL_SLOTS_MAX);
        rc = -EINVAL;
        goto fail;
    }

    /* 1. The state, published at the recovered op. A cluster replica
     * applies only ops known committed: its durable commit_max, the
     * commit any journaled prepare carries, and what this node already
     * published; the suffix above waits for the view (a view change may
     * truncate it). */
    if (c->replica_count > 1 && rec->r.replay_from <= rec->r.replay_to) {
        uint64_t committed = rec->r.state.commit_max;
        if (lr_published_op(c->lr) > committed)
            committed = lr_published_op(c->lr);
        for (uint64_t o2 = rec->r.replay_from; o2 <= rec->r.replay_to; o2++) {
            const struct vs_hdr_prepare *h = wal_header(&rec->r.journal, o2);
            if (h != NULL && h->commit > committed)
                committed = h->commit;
        }
        if (committed < rec->r.replay_to) {
            vs_log_info("cluster replica: applying the journal up to op %llu "
                        "(committed); ops %llu..%llu wait for the view",
                        (unsigned long long)committed,
                        (unsigned long long)(committed + 1),
                        (unsigned long long)rec->r.replay_to);
            rec->r.replay_to = committed;
        }
    }
    uint64_t op = rec->r.have_snapshot ? rec->r.snapshot_op : 0;
    if (rec->r.replay_from <= rec->r.replay_to)
        op = rec->r.replay_to;
    if (op < lr_published_op(c->lr)) {
        snprintf(err, errlen,
                 "the data dir holds metadata up to op %llu but op %llu was "
                 "already published by this node",
                 (unsigned long long)op,
                 (unsigned long long)lr_published_op(c->lr));
        rc = -ESTALE;
        goto fail;
    }
    struct commit_fill fill = {.c = c, .rec = rec, .first = 1};
    rc = lr_restore(c->lr, op, commit_fill_fn, &fill);
    if (rc == 0 && fill.rc != 0) {
        snprintf(err, errlen, "%s", fill.err);
        rc = fill.rc;
        goto fail;
    }
    if (rc != 0) {
        snprintf(err, errlen, "left-right restore at op %llu: %s",
                 (unsigned long long)op, strerror(-rc));
        goto fail;
    }
    VS_ASSERT(fill.op == op);

    /* 2. The journal (moved out of rec) and the superblock store. */
    c->journal = rec->r.journal;
    rec->r.journal_open = 0;
    c->journal.io = c->io;
    c->journal_open = 1;
    rc = sb_open(&c->sb, c->io, c->meta_dir, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "superblock store %s: %s", c->meta_dir,
                 strerror(-rc));
        goto fail;
    }
    if (!sb_store_writable(&c->sb))
        vs_log_warn("the superblock store is degraded: checkpoints will fail");

    /* 3. The engine: durable values from the superblock, the log from
     * the journal, the state at op. */
    if (vsr_state_has_checkpoint_prepare(&rec->r.state))
        c->ckpt_prepare = rec->r.state.checkpoint_prepare;
    c->faulty_op =
        rec->r.damaged_cut_op ? rec->r.damaged_cut_op : rec->r.state.faulty_op;
    c->cut_op = rec->r.damaged_cut_last; /* top of the cut's faulty range */
    c->cut_header_ok =
        rec->r.damaged_cut_op != 0 && rec->r.wal_scan.bad_header_valid;
    c->cut_header = rec->r.wal_scan.bad_header;
    if (!c->cut_header_ok && c->replica_count > 1 &&
        vsr_state_has_faulty_prepare(&rec->r.state)) {
        /* A cut of an earlier boot: the superblock kept the header of
         * the faulty range's first op (the engine takes it only chained
         * to the recovered head). */
        c->cut_header_ok = 1;
        c->cut_header = rec->r.state.faulty_prepare;
    }
    c->behind_ticks = 5000; /* first "behind" check after 10 s */
    c->rebuilt = o->rebuilt;
    struct vs_vsr_persist d = {
        .view = rec->r.state.view,
        .log_view = rec->r.state.log_view,
        .commit_max = rec->r.state.commit_max,
        .checkpoint_op = rec->r.state.checkpoint_op,
        .checkpoint_checksum = rec->r.state.checkpoint_checksum,
        .faulty_op = rec->r.state.faulty_op,
        .nonack_op = rec->r.state.nonack_op,
    };
    rc = commit_engine_build(c, &d, op, err, errlen);
    if (rc != 0)
        goto fail;
    if (c->replica_count > 1) {
        struct zt_opts zo = {
            .cluster = c->cluster,
            .group = VS_METADATA_GROUP,
            .self = c->replica,
            .metadata_dir = c->meta_dir,
            .io = c->io,
        };
        struct zt_hooks zh = {
            .ctx = c,
            .serve_state = commit_zt_serve_state,
            .encode_table = commit_zt_encode_table,
            .send = commit_zt_send,
            .install = commit_xfer_install,
        };
        rc = zt_create(&zo, &zh, &c->zt, err, errlen);
        if (rc != 0)
            goto fail;
    }
    rc = commit_drain(c); /* nothing to replay: the state is at the head */
    if (rc != 0) {
        commit_fatal_msg(c, err, errlen);
        goto fail;
    }
    vs_log_info("commit path ready: op %llu, checkpoint %llu, journal %llu "
                "entries",
                (unsigned long long)vsr_op(c->engine),
                (unsigned long long)d.checkpoint_op,
                (unsigned long long)c->journal.count);
    *out = c;
    return 0;
fail:
    commit_destroy(c);
    return rc;
}

void
commit_destroy(struct commit *c)
{
    if (c == NULL)
        return;
    zt_destroy(c->zt);
    if (c->xt_table_pending)
        zinst_scratch_fini(&c->xt_table);
    vsr_destroy(c->engine);
    if (c->journal_open)
        wal_close(&c->journal);
    for (unsigned i = 0; i < VSR_PIPELINE_MAX; i++)
        commit_pending_free(&c->pending[i]);
    meta_ct_fini(&c->ct);
    meta_result_fini(&c->res);
    meta_result_fini(&c->res2);
    vs_wbuf_fini(&c->body);
    vs_wbuf_fini(&c->frame);
    vs_wbuf_fini(&c->out);
    vs_wbuf_fini(&c->snap);
    vs_wbuf_fini(&c->rx);
    free(c->rbody);
    forward0_fini(&c->fwd);
    groups0_destroy(c->groups);
    free(c->retry_remove);
    for (size_t i = 0; i < c->n_queued; i++)
        free(c->queued[i].payload);
    free(c->queued);
    free(c);
}

const struct commit_stats *
commit_stats(const struct commit *c)
{
    return &c->stats;
}

const struct vs_vsr *
commit_engine(const struct commit *c)
{
    return c->engine;
}

int
commit_transfer_info(const struct commit *c, struct zt_info *out)
{
    if (c->zt == NULL)
        return 0;
    zt_info(c->zt, out);
    return 1;
}

const struct wal *
commit_journal(const struct commit *c)
{
    return &c->journal;
}

const void *
commit_state(const struct commit *c)
{
    return lr_writer_live(c->lr);
}
