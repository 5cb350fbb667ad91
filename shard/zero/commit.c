/*
 * shard/zero/commit.c - shard 0's one-replica commit path; see commit.h.
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
#include <unistd.h>

#include <sodium.h>

#include "common/assert.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/layout.h"
#include "common/log.h"
#include "common/mem.h"
#include "shard/zero/commit.h"
#include "shard/zero/commit_frames.h"
#include "shard/fwd.h"
#include "shard/zero/groups0.h"
#include "shard/meta/apply.h"
#include "shard/meta/client_table.h"
#include "shard/meta/ops.h"
#include "shard/meta/secrets.h"
#include "shard/meta/snapshot_codec.h"
#include "shard/meta/state.h"
#include "shard/storage/snapshot_file.h"
#include "shard/storage/superblock.h"
#include "shard/storage/vsr_state.h"

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

/* Who proposed an op: the data shard connection its reply goes to. */
struct commit_pending {
    int used;
    uint64_t op;
    uint32_t worker_slot;
    uint64_t incarnation;
    uint64_t conn_id;
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

    struct commit_pending pending[VSR_PIPELINE_MAX];
    struct meta_result res, res2;
    struct vs_wbuf body, frame, out, snap;
    uint8_t *rbody;
    size_t rbody_cap;
    uint32_t last_code; /* result code of the last committed op */

    /* checkpoint and superblock retries */
    enum commit_ckpt ckpt;
    uint64_t ckpt_op;
    int sb_retry;
    struct vs_vsr_persist sb_retry_persist;
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

/* Sends one FWD_REPLY carrying `frame` to a data shard connection. */
static void
commit_send_reply(struct commit *c, uint32_t slot, uint64_t incarnation,
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

static void
commit_send_status(struct commit *c, const struct fwd_hdr *fh,
                   const struct vs_hdr_request *req, uint32_t status)
{
    struct vs_hdr_reply r;
    commit_status_reply(&r, c->cluster, vsr_view(c->engine), c->replica, req,
                        status);
    if (status == VS_E_TRANSIENT_NOT_COMMITTED)
        c->stats.transient++;
    else
        c->stats.refused++;
    commit_send_reply(c, fh->worker_slot, fh->worker_incarnation, fh->conn_id,
                      req->client, 0, 0, 0, &r, sizeof(r));
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
    if (!wal_empty(&c->journal)) {
        uint64_t first = wal_first_op(&c->journal);
        uint64_t last = wal_last_op(&c->journal);
        /* The engine's window is journal_slots ops; older entries (kept
         * because a drain was retried) are below every state op. */
        if (last - first + 1 > c->cfg->wal_slots)
            first = last - c->cfg->wal_slots + 1;
        hs = vs_xmalloc((size_t)(last - first + 1) * sizeof(*hs));
        for (uint64_t op = first; op <= last; op++) {
            const struct vs_hdr_prepare *h = wal_header(&c->journal, op);
            VS_ASSERT(h != NULL);
            hs[o.header_count++] = *h;
        }
    }
    o.headers = hs;
    /* A replica of a cluster with a prior life learns the view first;
     * the cluster issue binds that (it never becomes primary here). */
    o.recovering = c->replica_count > 1 &&
                   (o.header_count > 0 || commit_min > 0 || durable->view > 0);
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
 * the op the engine prepared; rebuild the engine from it. Every earlier
 * op is applied (inputs are drained to the end), so commit_min = head. */
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
    VS_ASSERT(vsr_op(c->engine) == commit_min);
    return 0;
}

/* ---------------------------------------------------------------- */
/* Actions                                                          */
/* ---------------------------------------------------------------- */

static int commit_drain(struct commit *c);

static int
commit_do_append(struct commit *c, const struct vs_vsr_action *a)
{
    const struct vs_hdr_prepare *p = (const struct vs_hdr_prepare *)a->frame;
    VS_ASSERT(a->body != NULL || a->body_len == 0);
    int rc = wal_append(&c->journal, p, a->body, a->body_len);
    if (rc == 0) {
        rc = vsr_on_journal_durable(c->engine, a->op, p->f.checksum);
        VS_ASSERT(rc == 0);
        return 0;
    }
    if (rc == -ENOSPC) {
        /* DESIGN §4: not fatal; the partial append was cut back. */
        c->stats.enospc++;
        vs_log_warn("journal append of op %llu: no space left on device; "
                    "request refused, nothing kept",
                    (unsigned long long)a->op);
        struct commit_pending *pd = commit_pending_find(c, a->op);
        if (pd != NULL) {
            struct fwd_hdr fh;
            memset(&fh, 0, sizeof(fh));
            fh.worker_slot = pd->worker_slot;
            fh.worker_incarnation = pd->incarnation;
            fh.conn_id = pd->conn_id;
            commit_send_status(c, &fh, &pd->req, VS_E_ERROR);
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

/* Phase 3: drop the journal prefix below the durable checkpoint op. */
static int
commit_do_wal_drain(struct commit *c)
{
    int rc = wal_drain(&c->journal, c->ckpt_op);
    if (rc == 0) {
        c->ckpt = COMMIT_CKPT_IDLE;
        c->stats.checkpoints++;
        vs_log_info("checkpoint at op %llu complete (snapshot, superblock, "
                    "journal drained)",
                    (unsigned long long)c->ckpt_op);
        return 0;
    }
    if (rc == -VS_EFATAL)
        return -VS_EFATAL;
    c->stats.checkpoint_failures++;
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

    vs_wbuf_reset(&c->body);
    if (commit_op_replies(p)) {
        commit_reply_body(p->operation, c->res.code, c->res.payload.data,
                          c->res.payload.len, &c->body);
        vs_wbuf_reset(&c->frame);
        commit_reply_frame(p, vsr_view(c->engine), c->replica, c->body.data,
                           c->body.len, &c->frame);
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
                groups0_bind(c->groups, p->client, pd->worker_slot,
                             pd->incarnation, pd->conn_id);
            } else if (p->operation == VS_OP_LOGOUT) {
                pd->flags = FWD_F_UNBIND;
                groups0_unbind(c->groups, p->client);
            }
        }
    }
    rc = vsr_on_commit_applied(c->engine, a->op, c->body.data,
                               (uint32_t)c->body.len);
    VS_ASSERT(rc == 0);
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
    /* Our frame (the one cached) is the engine's, byte for byte. */
    VS_ASSERT(a->size == pd->frame_len &&
              memcmp(a->frame, pd->frame, pd->frame_len) == 0);
    commit_send_reply(c, pd->worker_slot, pd->incarnation, pd->conn_id,
                      pd->client, pd->flags, pd->session, pd->user_id,
                      pd->frame, pd->frame_len);
    commit_pending_free(pd);
}

static int
commit_drain(struct commit *c)
{
    struct vs_vsr_action a;
    while (!c->need_rebuild && vsr_pop(c->engine, &a)) {
        int rc = 0;
        switch (a.kind) {
        case VSR_ACT_SEND:
            /* One replica: no peers. The cluster issue binds links. */
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
        case VSR_ACT_SEND_PREPARE:
        case VSR_ACT_STATE_TRANSFER:
            /* Only a multi-replica engine emits these (view change and
             * repair); a one-replica engine never does. */
            VS_ASSERT(c->replica_count > 1);
            break;
        }
        if (rc != 0)
            return rc;
    }
    if (c->need_rebuild) {
        c->need_rebuild = 0;
        return commit_engine_rebuild(c);
    }
    return 0;
}

/* ---------------------------------------------------------------- */
/* Checkpoint                                                       */
/* ---------------------------------------------------------------- */

static int
commit_checkpoint(struct commit *c, int force)
{
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
    const void *st = lr_writer_live(c->lr);
    VS_ASSERT(meta_hdr_c(st)->last_op == op);

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
    return commit_drain(c);
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

static int
commit_on_propose(struct commit *c, const struct fwd_hdr *fh,
                  const uint8_t *payload, uint32_t len)
{
    c->stats.proposals++;
    if (len < VS_HEADER_SIZE) {
        c->stats.dropped++;
        vs_log_warn("FWD_PROPOSE of %u bytes from shard %u: no request "
                    "header; dropped",
                    len, fh->worker_slot);
        return 0;
    }
    struct vs_hdr_request req;
    memcpy(&req, payload, sizeof(req));
    const uint8_t *body = payload + VS_HEADER_SIZE;
    uint32_t body_len = len - VS_HEADER_SIZE;

    if (vs_u128_is_zero(req.client) ||
        !commit_operation_forwardable(req.operation)) {
        commit_send_status(c, fh, &req, VS_E_INVALID_COMMAND);
        return 0;
    }
    if (req.operation != VS_OP_REGISTER && req.request == 0) {
        /* Only Register carries request 0 (the data shard drops these;
         * an answer is still owed for every FWD_PROPOSE). */
        commit_send_status(c, fh, &req, VS_E_INVALID_COMMAND);
        return 0;
    }
    if (req.operation != VS_OP_REGISTER && req.session == 0) {
        /* No session presented: as the table would say for no session. */
        c->stats.evictions++;
        struct vs_hdr_eviction e;
        commit_eviction(&e, c->cluster, vsr_view(c->engine), c->replica,
                        req.client, VS_EVICT_NO_SESSION);
        commit_send_reply(c, fh->worker_slot, fh->worker_incarnation,
                          fh->conn_id, req.client, FWD_F_UNBIND, 0, 0, &e,
                          sizeof(e));
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
            commit_send_reply(c, fh->worker_slot, fh->worker_incarnation,
                              fh->conn_id, req.client, 0, 0, 0, cached,
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
            commit_send_reply(c, fh->worker_slot, fh->worker_incarnation,
                              fh->conn_id, req.client, FWD_F_UNBIND, 0, 0, &e,
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
    switch (rc) {
    case 0:
        break;
    case -EAGAIN:
    case -EALREADY:
    case -EBUSY:
        commit_send_status(c, fh, &req, VS_E_TRANSIENT_NOT_COMMITTED);
        return 0;
    case -ENOSPC:
        vs_log_warn("metadata journal full and no checkpoint possible: "
                    "request refused");
        commit_send_status(c, fh, &req, VS_E_ERROR);
        return 0;
    default:
        commit_send_status(c, fh, &req, VS_E_INVALID_COMMAND);
        return 0;
    }
    uint64_t op = vsr_op(c->engine);
    struct commit_pending *pd = &c->pending[op % VSR_PIPELINE_MAX];
    if (pd->used)
        commit_pending_free(pd); /* a stale entry (never answered) */
    pd->used = 1;
    pd->op = op;
    pd->worker_slot = fh->worker_slot;
    pd->incarnation = fh->worker_incarnation;
    pd->conn_id = fh->conn_id;
    pd->client = req.client;
    pd->req = req;
    rc = commit_drain(c);
    if (rc != 0)
        return rc;
    return commit_checkpoint(c, 0);
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

/* The once-a-second consumer-group sweep (commit_tick). */
static int
commit_groups_sweep(struct commit *c)
{
    int rc = 0;
    struct vs_u128 *dead = NULL;
    size_t n = 0;
    if (c->incarnation != NULL)
        groups0_sweep_dead(c->groups, c->incarnation, c->incarnation_ctx, &dead,
                           &n);
    for (size_t i = 0; i < n; i++)
        commit_retry_add(c, dead[i]);
    free(dead);
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
    case FWD_PROPOSE:
        return commit_on_propose(c, &fh, payload, fh.payload_len);
    case FWD_CLOSED:
        /* Consumer-group memberships end here; the session itself stays:
         * the client may reconnect and resend. */
        vs_log_debug("shard %u: connection %llu of a bound client closed", src,
                     (unsigned long long)fh.conn_id);
        if (vs_u128_is_zero(fh.client) ||
            !groups0_closed(c->groups, fh.client, src, fh.worker_incarnation,
                            fh.conn_id))
            return 0;
        return commit_remove_member(c, fh.client);
    case FWD_MEMBER_SILENT:
        if (vs_u128_is_zero(fh.client) ||
            !groups0_silent(c->groups, fh.client, src, fh.worker_incarnation,
                            fh.conn_id) ||
            !groups0_is_member(lr_writer_live(c->lr), fh.client))
            return 0;
        vs_log_info("shard %u: a consumer-group member sent nothing for 1.2 x "
                    "the heartbeat interval: removed from its groups",
                    src);
        return commit_remove_member(c, fh.client);
    case FWD_GROUP_REPORT:
        return commit_on_group_report(c, &fh, payload);
    default:
        c->stats.dropped++;
        vs_log_warn("IPC frame kind %u from shard %u: unknown; dropped",
                    fh.kind, src);
        return 0;
    }
}

int
commit_tick(struct commit *c)
{
    vsr_tick(c->engine);
    int rc = commit_drain(c);
    if (rc != 0)
        return rc;
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
    /* A cluster's genesis commits through its quorum (cluster issue). */
    return c->replica_count == 1 &&
           !meta_hdr_c(lr_writer_live(c->lr))->genesis_done;
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
    if (vsr_commit_min(c->engine) < gop || c->last_code != 0 ||
        commit_genesis_needed(c)) {
        snprintf(err, errlen, "the genesis op %llu did not commit (code %u)",
                 (unsigned long long)gop, c->last_code);
        rc = -EIO;
        goto out;
    }
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
    commit_reply_frame(h, f->rec->r.state.view, c->replica, c->body.data,
                       c->body.len, &c->frame);
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
    c->clock = o->clock;
    c->clock_ctx = o->clock_ctx;
    c->groups = groups0_create();
    c->incarnation = o->incarnation;
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
    c->replica_count = (uint8_t)shard0_replica_count(o->cfg);
    meta_caps_from_config(&c->caps, o->cfg);
    meta_ct_init(&c->ct);
    meta_result_init(&c->res);
    meta_result_init(&c->res2);
    vs_wbuf_init(&c->body);
    vs_wbuf_init(&c->frame);
    vs_wbuf_init(&c->out);
    vs_wbuf_init(&c->snap);

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

    /* 1. The state, published at the recovered op. */
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
    struct vs_vsr_persist d = {
        .view = rec->r.state.view,
        .log_view = rec->r.state.log_view,
        .commit_max = rec->r.state.commit_max,
        .checkpoint_op = rec->r.state.checkpoint_op,
        .checkpoint_checksum = rec->r.state.checkpoint_checksum,
    };
    rc = commit_engine_build(c, &d, op, err, errlen);
    if (rc != 0)
        goto fail;
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
    free(c->rbody);
    groups0_destroy(c->groups);
    free(c->retry_remove);
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
