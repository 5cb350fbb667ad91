/*
 * shard/serve/pgroup.c - one replicated partition's consensus group: the
 * VSR engine bound to the partition journal (pjournal.h) and to the data
 * shard's links through struct pgroup_env (the action table in pgroup.h).
 *
 * Invariants:
 *  - actions are drained to the end after every input; a drain started
 *    inside another one (an env callback calling back in) only queues;
 *  - an append is reported durable only after a sync whose target was
 *    taken after it (every-batch policy; under interval it is reported
 *    at once: durability then comes from the quorum, pgroup.h);
 *  - the client table and the waiters are keyed by the Register'd client
 *    id and the request number of the prepare header, never by a
 *    connection: a client that reconnects is still recognised;
 *  - a reply is sent only from a COMMIT (never before the op is
 *    committed), once per waiter;
 *  - after a fatal I/O error nothing more is written (g->fatal).
 * Process: the data shard owning the partition, its loop thread; tests.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/mem.h"
#include "shard/data/batch.h"
#include "shard/serve/pgclients.h"
#include "shard/serve/pgroup.h"
#include "shard/serve/pxfer.h"
#include "shard/storage/atomic_file.h"

#define PG_CLIENTS_MAX 4096u /* client table entries kept per group */
#define PG_WAITERS_MAX 256u  /* proposals waiting for their commit */
#define PG_CONFIRM_LEN 24u   /* a send's confirmation body */
/* Interval policy: unsynced appends are fsynced after this many ticks
 * (100 ms, the partition default fsync_interval_ms). */
#define PG_INTERVAL_TICKS 10u

struct pg_held {
    uint64_t op;
    struct vs_u128 checksum;
    uint64_t seq; /* pj_appends() right after the append */
};

/* One proposal's identity: a client's sends do not advance the request
 * number, so the request checksum tells consecutive batches apart. */
struct pg_key {
    struct vs_u128 client;
    uint64_t request;
    struct vs_u128 request_checksum;
};

struct pg_waiter {
    struct pg_key k;
    uint8_t operation;
    uint64_t op; /* op it was prepared as (0 = not known here) */
    uint64_t age;
};

struct vs_pgroup {
    struct pgroup_opts o;
    struct pgroup_env env;
    struct vs_part *p;
    struct vs_pjournal *j;
    struct vs_vsr *v;
    uint64_t group;
    int every_batch;
    int fatal;
    int draining;
    /* appends waiting for a sync */
    struct pg_held *held;
    size_t nheld, capheld;
    int sync_asked; /* env->sync called, pgroup_on_synced not yet */
    /* env->state_sync called for this write, pgroup_on_state_synced not
     * yet: the engine is told of it then */
    int state_asked;
    struct vs_vsr_persist state_pending;
    uint64_t synced_seq; /* appends covered by the last completed sync */
    uint32_t idle_ticks; /* interval policy: ticks since a sync */
    /* client table, built from committed prepares on every replica and
     * saved (pgclients.h) before every checkpoint */
    struct pgc_table clients;
    uint64_t clients_op; /* the applied op the saved table is as of */
    struct pg_waiter waiters[PG_WAITERS_MAX];
    size_t nwaiters;
    uint64_t waiter_age;
    uint64_t last_ts;         /* newest base timestamp stamped or stored */
    uint64_t stamp_next;      /* next offset to stamp (prepared, maybe not
                                 appended yet) */
    uint64_t offsets_applied; /* highest consumer-offset op applied to
                                 the offsets files (persisted) */
    char applied_path[700];
    struct pgroup_stats stats;
    struct vs_wbuf out;
    /* partition state transfer (pxfer.h): the fetch and the offers; once
     * a fetched partition is staged the group stops until the runtime
     * swaps it in and reopens the group (pgroup_install_pending) */
    struct pxfer *xfer;
    int xfer_armed;         /* vsr_transfer_begin accepted, not ended */
    uint64_t xfer_sessions; /* fetches started (each nonce is fresh) */
    int install_pending;
};

uint64_t
pgroup_group_id(const struct part_id *id)
{
    uint8_t b[20];
    vs_store_u32(b, id->stream_id);
    vs_store_u32(b + 4, id->topic_id);
    vs_store_u32(b + 8, id->partition_id);
    vs_store_u64(b + 12, id->created_op);
    /* bit 63 is the metadata group's: partition groups keep it clear, and
     * never use 0 */
    uint64_t g = vs_xxh3_64(b, sizeof(b)) & ~VS_METADATA_GROUP;
    return g ? g : 1;
}

static void drain(struct vs_pgroup *g);

static int
set_fatal(struct vs_pgroup *g, const char *what, int rc)
{
    if (!g->fatal) {
        char msg[300];
        sio_fatal_msg(part_io(g->p), msg, sizeof(msg));
        const struct part_id *id = part_ident(g->p);
        vs_log_error("partition %" PRIu32 ".%" PRIu32 ".%" PRIu32
                     " group %" PRIx64 ": %s failed: %s%s%s",
                     id->stream_id, id->topic_id, id->partition_id, g->group,
                     what, sio_strerror(rc), msg[0] ? "; " : "", msg);
    }
    g->fatal = 1;
    return -VS_EFATAL;
}

/* ---- client table and waiters ---- */

static int
key_eq(const struct pg_key *a, struct vs_u128 client, uint64_t request,
       struct vs_u128 rc)
{
    return vs_u128_eq(a->client, client) && a->request == request &&
           vs_u128_eq(a->request_checksum, rc);
}

/* Records a committed op (an op the saved table covers is in it). */
static void
client_record(struct vs_pgroup *g, const struct vs_hdr_prepare *h,
              uint64_t base_offset, uint32_t code)
{
    if (h->op > g->clients_op)
        pgc_record(&g->clients, h, base_offset, code);
}

static struct pg_waiter *
waiter_find(struct vs_pgroup *g, struct vs_u128 c, uint64_t request,
            struct vs_u128 rc)
{
    for (size_t i = 0; i < g->nwaiters; i++)
        if (key_eq(&g->waiters[i].k, c, request, rc))
            return &g->waiters[i];
    return NULL;
}

static void
waiter_drop(struct vs_pgroup *g, struct pg_waiter *w)
{
    *w = g->waiters[--g->nwaiters];
}

static void
waiter_add(struct vs_pgroup *g, const struct vs_hdr_request *req,
           uint8_t operation, uint64_t op)
{
    struct pg_waiter *w =
        waiter_find(g, req->client, req->request, req->request_checksum);
    if (!w) {
        if (g->nwaiters == PG_WAITERS_MAX) {
            /* the oldest waiter is forgotten: its client retries */
            size_t o = 0;
            for (size_t i = 1; i < g->nwaiters; i++)
                if (g->waiters[i].age < g->waiters[o].age)
                    o = i;
            waiter_drop(g, &g->waiters[o]);
            g->stats.waiters_dropped++;
        }
        w = &g->waiters[g->nwaiters++];
        w->k.client = req->client;
        w->k.request = req->request;
        w->k.request_checksum = req->request_checksum;
    }
    w->operation = operation;
    w->op = op;
    w->age = ++g->waiter_age;
}

/* The reply to a proposer: a struct vs_hdr_reply (Iggy framing:
 * checksums zero, release 0) echoing client, request, request checksum
 * and operation, with `status`; status 0 carries the body (a send's
 * confirmation [1 u32][stream u32][topic u32][partition u32][base_offset
 * u64], an offset op's result section 00000000), a refusal none. */
static void
send_reply(struct vs_pgroup *g, const struct pg_key *k, uint8_t operation,
           uint64_t op, uint64_t timestamp, uint64_t base_offset,
           uint32_t status)
{
    uint8_t frame[sizeof(struct vs_hdr_reply) + PG_CONFIRM_LEN];
    struct vs_hdr_reply *r = (struct vs_hdr_reply *)frame;
    uint8_t *body = frame + sizeof(*r);
    uint32_t blen = 0;
    memset(frame, 0, sizeof(frame));
    if (status == 0 && pj_is_batch_op(operation)) {
        const struct part_id *id = part_ident(g->p);
        vs_store_u32(body, 1);
        vs_store_u32(body + 4, id->stream_id);
        vs_store_u32(body + 8, id->topic_id);
        vs_store_u32(body + 12, id->partition_id);
        vs_store_u64(body + 16, base_offset);
        blen = PG_CONFIRM_LEN;
    } else if (status == 0) {
        blen = 4; /* result section: code 0 */
    }
    r->f.cluster = g->o.cluster;
    r->f.size = (uint32_t)sizeof(*r) + blen;
    r->f.command = VS_CMD_REPLY;
    r->f.view = vsr_view(g->v);
    r->f.replica = g->o.replica;
    r->client = k->client;
    r->request = k->request;
    r->request_checksum = k->request_checksum;
    r->op = op;
    r->commit = status ? 0 : op;
    r->timestamp = timestamp;
    r->operation = operation;
    r->status = status;
    g->stats.replies++;
    if (g->env.reply)
        g->env.reply(g->env.ctx, g, k->client, frame, r->f.size);
}

/* ---- sync ---- */

static void
ask_sync(struct vs_pgroup *g)
{
    if (g->sync_asked || g->nheld == 0)
        return;
    g->sync_asked = 1;
    if (g->env.sync)
        g->env.sync(g->env.ctx, g);
}

struct vs_pjournal *
pgroup_journal(struct vs_pgroup *g)
{
    return g->j;
}

int
pgroup_sync_target(struct vs_pgroup *g, struct pj_sync_target *t)
{
    if (g->fatal)
        return -VS_EFATAL;
    return pj_sync_target(g->j, t);
}

void
pgroup_on_synced(struct vs_pgroup *g, const struct pj_sync_target *t)
{
    g->sync_asked = 0;
    if (g->fatal)
        return;
    pj_sync_done(g->j, t);
    if (t->seq > g->synced_seq)
        g->synced_seq = t->seq;
    g->idle_ticks = 0;
    size_t k = 0;
    for (size_t i = 0; i < g->nheld; i++) {
        struct pg_held *h = &g->held[i];
        if (h->seq <= t->seq) {
            /* -ESTALE: a truncation removed it meanwhile */
            (void)vsr_on_journal_durable(g->v, h->op, h->checksum);
        } else {
            g->held[k++] = *h;
        }
    }
    g->nheld = k;
    g->stats.syncs++;
    ask_sync(g);
    drain(g);
}

void
pgroup_on_state_synced(struct vs_pgroup *g)
{
    if (!g->state_asked)
        return;
    g->state_asked = 0;
    if (g->fatal)
        return;
    (void)vsr_on_superblock_durable(g->v, &g->state_pending);
    drain(g);
}

int
pgroup_sync_now(struct vs_pgroup *g)
{
    struct pj_sync_target t;
    int rc = pgroup_sync_target(g, &t);
    if (rc < 0)
        return rc;
    rc = pj_sync(g->j);
    if (rc < 0)
        return set_fatal(g, "journal fsync", rc);
    pgroup_on_synced(g, &t);
    return 0;
}

/* ---- actions ---- */

static int
do_append(struct vs_pgroup *g, const struct vs_vsr_action *a)
{
    const struct vs_hdr_prepare *h = (const struct vs_hdr_prepare *)a->frame;
    struct vs_hdr_prepare st = *h;
    st.f.command = VS_CMD_PREPARE; /* a repaired prepare is stored as one */
    int rc = pj_append(g->j, &st, a->body, a->body_len);
    if (rc == -ENOSPC) {
        /* nothing was kept; the engine believes the op appended: the
         * group stops acknowledging until it is reopened (its journal
         * is intact; a restart rejoins and repairs) */
        g->stats.enospc++;
        vs_log_warn("partition group %" PRIx64 ": journal append of op %" PRIu64
                    " out of space; the group stops until reopened",
                    g->group, a->op);
        g->fatal = 1;
        return -ENOSPC;
    }
    if (rc < 0) {
        if (rc == -VS_EFATAL)
            return set_fatal(g, "journal append", rc);
        vs_log_error("partition group %" PRIx64
                     ": journal append of op %" PRIu64
                     " refused: %s (binding bug or a batch the primary "
                     "stamped wrongly)",
                     g->group, a->op, strerror(-rc));
        g->fatal = 1;
        return rc;
    }
    struct pgroup_trim_op pt;
    if (h->operation == VS_OP_DELETE_SEGMENTS && a->body &&
        pgroup_trim_decode(a->body, a->body_len, &pt) == 0 &&
        pt.kind == PGROUP_TRIM_PURGE) {
        /* a segment boundary at the purge's offset on every replica */
        rc = part_seal_active(g->p);
        if (rc < 0)
            return set_fatal(g, "sealing the segment of a purge", rc);
    }
    if (pj_is_batch_op(h->operation)) {
        if (batch_base_timestamp(a->body) > g->last_ts)
            g->last_ts = batch_base_timestamp(a->body);
        uint64_t end = batch_base_offset(a->body) + batch_count(a->body);
        if (end > g->stamp_next)
            g->stamp_next = end;
    }
    g->stats.appends++;
    if (!g->every_batch) {
        rc = vsr_on_journal_durable(g->v, a->op, h->f.checksum);
        (void)rc;
        return 0;
    }
    if (g->nheld == g->capheld) {
        g->capheld = g->capheld ? g->capheld * 2 : 32;
        g->held = vs_xrealloc(g->held, g->capheld * sizeof(*g->held));
    }
    g->held[g->nheld].op = a->op;
    g->held[g->nheld].checksum = h->f.checksum;
    g->held[g->nheld].seq = pj_appends(g->j);
    g->nheld++;
    ask_sync(g);
    return 0;
}

static int
do_truncate(struct vs_pgroup *g, uint64_t op)
{
    g->stats.truncations++;
    int rc = pj_truncate_from(g->j, op);
    if (rc < 0)
        return set_fatal(g, "journal truncation", rc);
    size_t k = 0;
    for (size_t i = 0; i < g->nheld; i++)
        if (g->held[i].op < op)
            g->held[k++] = g->held[i];
    g->nheld = k;
    /* proposals cut by the view change: 57, the client resends */
    for (size_t i = 0; i < g->nwaiters;) {
        struct pg_waiter *w = &g->waiters[i];
        if (w->op >= op) {
            send_reply(g, &w->k, w->operation, w->op, 0, 0,
                       VS_E_TRANSIENT_NOT_COMMITTED);
            waiter_drop(g, w);
        } else {
            i++;
        }
    }
    struct part_stats ps;
    part_stats(g->p, &ps);
    g->last_ts = ps.last_timestamp;
    g->stamp_next = ps.next_offset;
    vs_log_info("partition group %" PRIx64
                ": journal truncated from op %" PRIu64
                " (uncommitted, cut by a view change)",
                g->group, op);
    return 0;
}

static int
do_superblock(struct vs_pgroup *g, const struct vs_vsr_persist *p)
{
    struct pj_state s;
    memset(&s, 0, sizeof(s));
    s.view = p->view;
    s.log_view = p->log_view;
    s.commit_max = p->commit_max;
    s.faulty_op = p->faulty_op;
    s.nonack_op = p->nonack_op;
    s.checkpoint_op = p->checkpoint_op;
    s.checkpoint_checksum = p->checkpoint_checksum;
    s.offset_frontier = part_visible_next(g->p);
    int fd = -1;
    int rc = g->env.state_sync ? pj_state_write_nosync(g->j, &s, &fd)
                               : pj_state_write(g->j, &s);
    if (rc < 0)
        return set_fatal(g, "partition superblock write", rc);
    g->stats.superblock_writes++;
    if (rc == 1) { /* durable once the runtime's fsync is done */
        g->state_asked = 1;
        g->state_pending = *p;
        g->env.state_sync(g->env.ctx, g, fd);
        return 0;
    }
    rc = vsr_on_superblock_durable(g->v, p);
    (void)rc;
    return 0;
}

#define PG_APPLIED_FILE "offsets_applied"

/* Reads the highest applied consumer-offset op (0 when absent). */
static int
applied_load(struct vs_pgroup *g)
{
    uint8_t *b = NULL;
    size_t len = 0;
    int rc = afile_join(g->applied_path, sizeof(g->applied_path),
                        part_dir(g->p), PG_APPLIED_FILE);
    if (rc < 0)
        return rc;
    rc = afile_read_all(part_io(g->p), g->applied_path, 64, &b, &len);
    if (rc == -ENOENT)
        return 0;
    if (rc < 0)
        return rc;
    if (len != 20 || memcmp(b, "VSPA", 4) != 0 ||
        vs_load_u64(b + 12) != vs_xxh3_64(b, 12)) {
        free(b);
        return -EBADMSG;
    }
    g->offsets_applied = vs_load_u64(b + 4);
    free(b);
    return 0;
}

static int
applied_store(struct vs_pgroup *g, uint64_t op)
{
    uint8_t b[20];
    memcpy(b, "VSPA", 4);
    vs_store_u64(b + 4, op);
    vs_store_u64(b + 12, vs_xxh3_64(b, 12));
    int rc = afile_replace(part_io(g->p), part_dir(g->p), PG_APPLIED_FILE, b,
                           sizeof(b));
    if (rc == 0)
        g->offsets_applied = op;
    return rc;
}

/* Applies a consumer-offset op (body layout in pgroup.h). Its result is
 * a function of the committed log up to the op: a store is checked
 * against the committed frontier (the offset after the batches of the
 * ops before it: what polls see), never against uncommitted batches the
 * partition may hold. An op at or below the persisted applied mark (a
 * replay after a restart) is not applied again: a store's result is
 * recomputed from the frontier, a delete's is taken as 0. Any storage
 * failure stops the group before the op counts as applied (the restart
 * applies it again). 0 and *code, or -1 (stopped). */
static int
apply_offset(struct vs_pgroup *g, uint64_t op, uint8_t operation,
             const uint8_t *b, uint32_t len, uint32_t *code)
{
    struct pgroup_offset_op o;
    *code = 0;
    if (pgroup_offset_decode(b, len, &o) < 0) {
        *code = VS_E_INVALID_FORMAT;
        return 0;
    }
    uint64_t frontier = part_visible_next(g->p);
    if (operation == VS_OP_STORE_CONSUMER_OFFSET &&
        (frontier == 0 || o.offset > frontier - 1)) {
        *code = VS_E_INVALID_OFFSET;
        return 0;
    }
    if (op <= g->offsets_applied)
        return 0; /* applied in a prior life */
    struct part_consumer c = {.kind = o.kind == PART_GROUP ? PART_GROUP
                                                           : PART_CONSUMER,
                              .id = o.id,
                              .group_created_op = o.group_created_op};
    if (o.raise && operation == VS_OP_STORE_CONSUMER_OFFSET) {
        /* an auto-commit never lowers the stored offset (a damaged file
         * is rewritten: every replica that can read its own holds the
         * same value) */
        uint64_t cur = 0;
        if (part_offset_get(g->p, &c, &cur) == 0 && cur >= o.offset)
            return 0;
    }
    int rc = operation == VS_OP_STORE_CONSUMER_OFFSET
                 ? part_offset_store(g->p, &c, o.offset)
                 : part_offset_delete(g->p, &c);
    if (rc == -ENOENT && operation == VS_OP_DELETE_CONSUMER_OFFSET) {
        *code = VS_E_CONSUMER_OFFSET_NOT_FOUND;
        rc = 0;
    }
    if (rc == 0)
        rc = applied_store(g, op);
    if (rc < 0) {
        (void)set_fatal(g, "consumer offset apply", rc);
        return -1;
    }
    return 0;
}

/* Applies a trim op (pgroup.h, Trims): the sealed segments below its
 * watermark go, with their .vsr records. Idempotent (a replay after a
 * restart deletes nothing more). 0 and *code, or -1 (stopped). */
static int
apply_trim(struct vs_pgroup *g, uint64_t op, const uint8_t *b, uint32_t len,
           uint32_t *code)
{
    struct pgroup_trim_op t;
    *code = 0;
    if (pgroup_trim_decode(b, len, &t) < 0) {
        *code = VS_E_INVALID_FORMAT;
        return 0;
    }
    int purge = t.kind == PGROUP_TRIM_PURGE;
    if (purge && t.first <= part_purge_generation(g->p))
        return 0; /* this generation is applied (a replay, or a repeat) */
    uint64_t starts[64];
    size_t n = 0;
    uint64_t start, size;
    for (size_t i = 0; n < 64 && part_segment_at(g->p, i, &start, &size) == 0;
         i++)
        if (start < t.watermark)
            starts[n++] = start;
    uint64_t first0 = n ? starts[0] : 0;
    struct part_retention_result res;
    int rc = part_apply_watermark(g->p, t.watermark, &res);
    uint64_t first = 0;
    if (rc == 0 && part_segment_at(g->p, 0, &first, &size) == 0)
        for (size_t i = 0; rc == 0 && i < n && starts[i] < first; i++)
            rc = pj_drop_segment(g->j, starts[i]);
    if (rc == 0 && purge && op > g->offsets_applied) {
        rc = part_offsets_clear(g->p);
        if (rc == 0)
            rc = applied_store(g, op);
    }
    if (rc == 0 && purge)
        rc = part_set_purge_generation(g->p, t.first);
    if (rc < 0) {
        (void)set_fatal(g, purge ? "purge" : "trim", rc);
        return -1;
    }
    g->stats.trims++;
    g->stats.segments_trimmed += res.segments_deleted;
    if (res.segments_deleted > 0)
        vs_log_info("partition group %" PRIx64 ": op %" PRIu64 " (%s) deleted "
                    "%u segments (offsets %" PRIu64 "..%" PRIu64 ", %" PRIu64
                    " bytes)",
                    g->group, op,
                    t.kind == PGROUP_TRIM_RETENTION ? "retention"
                    : purge                         ? "purge"
                                                    : "DeleteSegments",
                    res.segments_deleted, first0, first ? first - 1 : 0,
                    res.bytes_deleted);
    if (!purge && res.segments_deleted > 0 && first0 < t.first)
        vs_log_warn("partition group %" PRIx64 ": op %" PRIu64
                    " named segments from offset %" PRIu64
                    " but this replica's log starts at %" PRIu64,
                    g->group, op, t.first, first0);
    return 0;
}

static int
do_commit(struct vs_pgroup *g, const struct vs_vsr_action *a)
{
    const struct vs_hdr_prepare *h = (const struct vs_hdr_prepare *)a->frame;
    uint32_t code = 0;
    uint64_t base = 0;
    uint8_t out[4];
    if (pj_is_batch_op(h->operation)) {
        pj_set_commit(g->j, a->op);
        if (a->body && a->body_len >= BATCH_HEADER_SIZE) {
            base = batch_base_offset(a->body);
        } else {
            struct vs_wbuf rb; /* a recovered op: read its batch header */
            vs_wbuf_init(&rb);
            if (pj_read(g->j, a->op, &rb) == 0)
                base = batch_base_offset(rb.data + sizeof(*h));
            vs_wbuf_fini(&rb);
        }
    } else {
        const uint8_t *body = a->body;
        struct vs_wbuf rb;
        vs_wbuf_init(&rb);
        if (!body && a->body_len > 0) {
            /* a recovered op: its body is in the journal */
            int rc = pj_read(g->j, a->op, &rb);
            if (rc < 0) {
                vs_wbuf_fini(&rb);
                vs_log_error("partition group %" PRIx64 ": op %" PRIu64
                             " cannot be read for its commit: %s",
                             g->group, a->op, sio_strerror(rc));
                g->fatal = 1;
                return -EIO;
            }
            body = rb.data + sizeof(struct vs_hdr_prepare);
        }
        int rc = 0;
        if (h->operation == VS_OP_STORE_CONSUMER_OFFSET ||
            h->operation == VS_OP_DELETE_CONSUMER_OFFSET)
            rc = apply_offset(g, a->op, h->operation, body, a->body_len, &code);
        else if (h->operation == VS_OP_DELETE_SEGMENTS)
            rc = apply_trim(g, a->op, body, a->body_len, &code);
        vs_wbuf_fini(&rb);
        if (rc < 0 || g->fatal)
            return -VS_EFATAL; /* the COMMIT stays unapplied */
        pj_set_commit(g->j, a->op);
    }
    g->stats.commits++;
    client_record(g, h, base, code);
    struct pg_waiter *w =
        waiter_find(g, h->client, h->request, h->request_checksum);
    if (w) {
        send_reply(g, &w->k, h->operation, a->op, h->timestamp, base, code);
        waiter_drop(g, w);
    }
    vs_store_u32(out, code);
    int rc = vsr_on_commit_applied(g->v, a->op, out, sizeof(out));
    (void)rc;
    /* keep the engine's journal window moving: every applied op is the
     * partition's state, so the checkpoint is the applied op itself */
    struct vs_vsr_persist d;
    vsr_durable(g->v, &d);
    if (a->op - d.checkpoint_op >= g->o.journal_slots / 2) {
        /* the client table first: the ops below the new checkpoint may
         * leave the recovered window, the table must not forget them */
        int src = pgc_save(&g->clients, a->op, part_io(g->p), part_dir(g->p));
        if (src < 0) {
            /* no checkpoint now: the window stays, the next commit tries
             * again (the window filling up holds proposals back) */
            vs_log_warn("partition group %" PRIx64
                        ": saving the client table at op %" PRIu64
                        " failed: %s; checkpoint deferred",
                        g->group, a->op, sio_strerror(src));
            if (src == -VS_EFATAL)
                (void)set_fatal(g, "client table save", src);
            return 0;
        }
        g->clients_op = a->op;
        (void)vsr_checkpoint(g->v, a->op, h->f.checksum);
    }
    return 0;
}

static void
do_send_prepare(struct vs_pgroup *g, const struct vs_vsr_action *a)
{
    vs_wbuf_reset(&g->out);
    int rc = pj_read(g->j, a->op, &g->out);
    if (rc < 0)
        return; /* gone or damaged: the requester asks elsewhere */
    struct vs_hdr_prepare *h = (struct vs_hdr_prepare *)g->out.data;
    if (!vs_u128_eq(h->f.checksum, a->checksum))
        return;
    if (a->retransmit) {
        h->f.view = a->view; /* the primary's retransmit (engine.h) */
    } else {
        h->f.command = VS_CMD_REPAIR_PREPARE;
        g->stats.repairs_served++;
    }
    if (g->env.send)
        (void)g->env.send(g->env.ctx, g, a->replica, g->out.data, g->out.len);
}

/* ---- partition state transfer (pxfer.h) ---- */

static void
xfer_serve_state(void *ctx, struct pxfer_serve_state *s)
{
    struct vs_pgroup *g = ctx;
    struct vs_vsr_persist d;
    vsr_durable(g->v, &d);
    s->settled_primary = pgroup_is_settled_primary(g) && !g->install_pending;
    s->view = d.view;
    s->commit_min = vsr_commit_min(g->v);
    s->commit_max = vsr_commit_max(g->v);
    s->checkpoint_op = d.checkpoint_op;
}

static void
xfer_send(void *ctx, uint8_t replica, const void *frame, size_t len)
{
    struct vs_pgroup *g = ctx;
    if (g->env.send)
        (void)g->env.send(g->env.ctx, g, replica, frame, len);
}

static void
xfer_installed(void *ctx, uint64_t checkpoint_op)
{
    struct vs_pgroup *g = ctx;
    g->install_pending = 1;
    vs_log_info("partition group %" PRIx64 ": the partition at checkpoint op "
                "%" PRIu64 " is staged; the group reopens on it",
                g->group, checkpoint_op);
}

static void
xfer_failed(void *ctx, const char *why)
{
    struct vs_pgroup *g = ctx;
    (void)why;
    if (g->xfer_armed) {
        /* repair resumes; the next RangeEvicted asks again */
        g->xfer_armed = 0;
        (void)vsr_transfer_end(g->v);
    }
}

/* The peer to fetch from: the group's primary, else the one that
 * answered RangeEvicted. */
static uint8_t
xfer_peer(struct vs_pgroup *g, uint8_t fallback)
{
    int pr = vsr_primary(g->v);
    return pr >= 0 && pr != g->o.replica ? (uint8_t)pr : fallback;
}

static void
do_state_transfer(struct vs_pgroup *g, const struct vs_vsr_action *a)
{
    g->stats.state_transfers++;
    if (g->xfer == NULL || g->install_pending || pxfer_fetching(g->xfer))
        return;
    vs_log_warn("partition group %" PRIx64 ": replica %u retains ops only from "
                "%" PRIu64 "; fetching the partition by state transfer",
                g->group, a->replica, a->op);
    if (vsr_transfer_begin(g->v) == 0)
        g->xfer_armed = 1;
    struct vs_vsr_persist d;
    vsr_durable(g->v, &d);
    /* a fresh nonce per fetch: the boot's seed (drawn at random by the
     * runtime on every open, by the simulator from its seed) and the
     * fetch's number */
    uint64_t k[2] = {g->o.seed, ++g->xfer_sessions};
    struct vs_u128 nonce = vs_checksum(k, sizeof(k));
    if (vs_u128_is_zero(nonce))
        nonce.lo = 1;
    if (pxfer_start_nonce(g->xfer, xfer_peer(g, a->replica), d.view, nonce) !=
            0 &&
        g->xfer_armed) {
        g->xfer_armed = 0;
        (void)vsr_transfer_end(g->v);
    }
}

static void
xfer_fsync(void *ctx, const int *fds, size_t n, struct pxfer_sync *tok)
{
    struct vs_pgroup *g = ctx;
    g->env.files_sync(g->env.ctx, g, fds, n, tok);
}

static int
xfer_create(struct vs_pgroup *g)
{
    struct pxfer_opts o = {.cluster = g->o.cluster,
                           .group = g->group,
                           .self = g->o.replica,
                           .budget = g->o.fetch_budget};
    struct pxfer_hooks h = {.ctx = g,
                            .serve_state = xfer_serve_state,
                            .send = xfer_send,
                            .installed = xfer_installed,
                            .failed = xfer_failed,
                            .fsync = g->env.files_sync ? xfer_fsync : NULL};
    return pxfer_create(&o, &h, g->p, g->j, &g->xfer);
}

int
pgroup_install_pending(const struct vs_pgroup *g)
{
    return g->install_pending;
}

void
pgroup_xfer_info(const struct vs_pgroup *g, struct pxfer_info *out)
{
    if (g->xfer != NULL)
        pxfer_info(g->xfer, out);
    else
        memset(out, 0, sizeof(*out));
}

static void
drain(struct vs_pgroup *g)
{
    if (g->draining)
        return;
    g->draining = 1;
    struct vs_vsr_action a;
    while (!g->fatal && vsr_pop(g->v, &a)) {
        switch (a.kind) {
        case VSR_ACT_SEND:
            if (g->env.send)
                (void)g->env.send(g->env.ctx, g, a.replica, a.frame, a.size);
            break;
        case VSR_ACT_JOURNAL_APPEND:
            (void)do_append(g, &a);
            break;
        case VSR_ACT_JOURNAL_TRUNCATE:
            (void)do_truncate(g, a.op);
            break;
        case VSR_ACT_SUPERBLOCK_WRITE:
            (void)do_superblock(g, &a.persist);
            break;
        case VSR_ACT_COMMIT:
            (void)do_commit(g, &a);
            break;
        case VSR_ACT_REPLY:
            /* the COMMIT answered the waiting producer already */
            break;
        case VSR_ACT_SEND_PREPARE:
            do_send_prepare(g, &a);
            break;
        case VSR_ACT_STATE_TRANSFER:
            do_state_transfer(g, &a);
            break;
        }
    }
    g->draining = 0;
}

/* ---- lifecycle ---- */

static uint64_t
recovered_base(struct vs_pgroup *g, const struct vs_hdr_prepare *h)
{
    if (!pj_is_batch_op(h->operation))
        return 0;
    struct vs_wbuf rb;
    uint64_t base = 0;
    vs_wbuf_init(&rb);
    if (pj_read(g->j, h->op, &rb) == 0)
        base = batch_base_offset(rb.data + sizeof(*h));
    vs_wbuf_fini(&rb);
    return base;
}

int
pgroup_open(const struct pgroup_opts *o, struct vs_part *p,
            const struct pgroup_env *env, struct vs_pgroup **out, char *reason,
            size_t reason_len)
{
    *out = NULL;
    if (reason && reason_len)
        reason[0] = 0;
    if (o->replica_count == 0 || o->replica >= o->replica_count ||
        o->journal_slots < 2) {
        if (reason)
            snprintf(reason, reason_len,
                     "bad group options (replica %u of %u, %u slots)",
                     o->replica, o->replica_count, o->journal_slots);
        return -EINVAL;
    }
    struct vs_pgroup *g = vs_xcalloc(1, sizeof(*g));
    g->o = *o;
    g->env = *env;
    g->p = p;
    g->group = pgroup_group_id(&o->id);
    g->every_batch = part_every_batch(p);
    vs_wbuf_init(&g->out);
    pgc_init(&g->clients, PG_CLIENTS_MAX);
    struct pj_recovered rec;
    struct part_verdict verdict;
    int rc = pj_open(p, o->journal_slots, &g->j, &rec, &verdict);
    if (rc < 0) {
        if (reason)
            snprintf(reason, reason_len, "%s",
                     rc == -EBADMSG ? verdict.msg : sio_strerror(rc));
        goto fail;
    }
    /* created by this process with its superblock (part_opts.replicated):
     * that empty state is the prior-life mark, durable before this first
     * run sends anything; a later open (a restart, or a reopen after the
     * group stopped) finds it and recovers */
    int fresh = rec.fresh || (rec.formatted && part_take_created(p));
    if (o->replica_count > 1 && rec.fresh) {
        /* A prior life must be visible to the next boot before this
         * replica sends anything: a replica that restarted with nothing
         * durable would otherwise start again as a fresh member of view 0
         * and, as its primary, propose another op 1 over the one its
         * peers may have acknowledged. The empty state written here makes
         * every later open start Recovering (and probe for the view). */
        struct pj_state s0;
        memset(&s0, 0, sizeof(s0));
        rc = pj_state_write(g->j, &s0);
        if (rc < 0) {
            pj_recovered_free(&rec);
            if (reason)
                snprintf(reason, reason_len,
                         "writing the first partition superblock failed: %s",
                         sio_strerror(rc));
            goto fail;
        }
    }
    struct vs_vsr_options vo;
    memset(&vo, 0, sizeof(vo));
    vo.cluster = o->cluster;
    vo.group = g->group;
    vo.replica = o->replica;
    vo.replica_count = o->replica_count;
    vo.durable.view = rec.state.view;
    vo.durable.log_view = rec.state.log_view;
    vo.durable.commit_max = rec.state.commit_max;
    vo.durable.checkpoint_op = rec.state.checkpoint_op;
    vo.durable.checkpoint_checksum = rec.state.checkpoint_checksum;
    vo.durable.faulty_op = o->replica_count > 1 ? rec.state.faulty_op : 0;
    /* the never-nacked part of it (a damaged cut that may have held
     * acknowledged ops): without it a restart would nack them */
    vo.durable.nonack_op = o->replica_count > 1 ? rec.state.nonack_op : 0;
    vo.headers = rec.headers;
    vo.header_count = rec.count;
    vo.commit_min = rec.state.checkpoint_op;
    vo.recovering = o->replica_count > 1 && !fresh;
    if (vo.recovering) {
        /* the per-boot nonce derives from the seed the runtime draws */
        uint64_t s = o->seed ^ UINT64_C(0x9E3779B97F4A7C15);
        vo.incarnation = vs_checksum(&s, sizeof(s));
        if (vs_u128_is_zero(vo.incarnation))
            vo.incarnation.lo = 1;
    }
    if (o->replica_count > 1) {
        vo.faulty_op = rec.faulty_op;
        vo.faulty_header = rec.has_bad_header ? &rec.bad_header : NULL;
    }
    vo.journal_slots = o->journal_slots;
    vo.pipeline_max = o->pipeline_max;
    vo.body_max = o->body_max;
    vo.seed = o->seed;
    vo.timeouts = o->timeouts;
    /* the client table as saved before the last checkpoint, then the
     * ops at or below the checkpoint it does not cover (applied in a
     * prior life; the replay records the ones above it) */
    rc = pgc_load(&g->clients, part_io(p), part_dir(p), &g->clients_op);
    if (rc < 0) {
        /* a damaged table is not fatal to the partition: it restarts
         * from the recovered window (late copies of proposals older than
         * it are then not recognised) */
        vs_log_warn("partition group %" PRIx64 ": %s/%s unreadable (%s); the "
                    "client table restarts from the journal window",
                    g->group, part_dir(p), PGC_FILE, sio_strerror(rc));
        pgc_clear(&g->clients);
        g->clients_op = 0;
    }
    for (size_t i = 0; i < rec.count; i++)
        if (rec.headers[i].op <= rec.state.checkpoint_op)
            client_record(g, &rec.headers[i],
                          recovered_base(g, &rec.headers[i]), 0);
    char why[256] = "";
    rc = vsr_create(&vo, &g->v, why, sizeof(why));
    pj_recovered_free(&rec);
    if (rc < 0) {
        if (reason)
            snprintf(reason, reason_len,
                     "the VSR engine refused the recovered journal: %s", why);
        goto fail;
    }
    if (o->replica_count > 1 && (rc = xfer_create(g)) < 0) {
        if (reason)
            snprintf(reason, reason_len, "state transfer: out of memory");
        goto fail;
    }
    struct part_stats ps;
    part_stats(p, &ps);
    g->last_ts = ps.last_timestamp;
    g->stamp_next = ps.next_offset;
    rc = applied_load(g);
    if (rc < 0) {
        if (reason)
            snprintf(reason, reason_len, "%s/%s unreadable: %s", part_dir(p),
                     PG_APPLIED_FILE, sio_strerror(rc));
        goto fail;
    }
    drain(g); /* the replay COMMITs */
    if (g->fatal) {
        if (reason)
            snprintf(reason, reason_len, "replaying the committed ops failed");
        rc = -EIO;
        goto fail;
    }
    *out = g;
    return 0;
fail:
    pgroup_close(g);
    return rc;
}

void
pgroup_close(struct vs_pgroup *g)
{
    if (!g)
        return;
    pxfer_destroy(g->xfer);
    vsr_destroy(g->v);
    pj_close(g->j);
    free(g->held);
    pgc_fini(&g->clients);
    vs_wbuf_fini(&g->out);
    free(g);
}

/* ---- inputs ---- */

/* -EREMOTE / -EAGAIN when this replica may not propose. */
static int
proposer_check(struct vs_pgroup *g)
{
    if (g->fatal)
        return -VS_EFATAL;
    if (vsr_is_settled_primary(g->v))
        return 0;
    int pr = vsr_primary(g->v);
    return pr >= 0 && pr != g->o.replica ? -EREMOTE : -EAGAIN;
}

/* A proposal already known by (client, request, request checksum):
 * answered from the client table (committed) or left to its pending
 * commit (prepared, here or by a former primary). 1 handled, 0 new,
 * -ESTALE a request number below the client's highest committed one
 * that matches no cached proposal. */
static int
dedup(struct vs_pgroup *g, const struct vs_hdr_request *req)
{
    struct pg_key k = {req->client, req->request, req->request_checksum};
    const struct pgc_done *d = pgc_done_find(
        &g->clients, req->client, req->request, req->request_checksum);
    if (d) {
        g->stats.duplicates++;
        send_reply(g, &k, d->operation, d->op, 0, d->base_offset, d->code);
        return 1;
    }
    const struct pgc_client *c = pgc_find(&g->clients, req->client);
    if (c && req->request < c->max_request) {
        /* an old request number that is not one of the cached proposals:
         * a late copy; never proposed again */
        g->stats.stale++;
        return -ESTALE;
    }
    uint64_t top = vsr_op(g->v);
    for (uint64_t op = vsr_commit_min(g->v) + 1; op <= top; op++) {
        struct vs_hdr_prepare h;
        if (vsr_header(g->v, op, &h) == 1 &&
            key_eq(&k, h.client, h.request, h.request_checksum)) {
            g->stats.duplicates++;
            waiter_add(g, req, h.operation, op);
            return 1;
        }
    }
    return 0;
}

static int
propose(struct vs_pgroup *g, const struct vs_hdr_request *req, uint8_t op,
        const uint8_t *body, uint32_t len, uint64_t wall_us)
{
    struct vs_hdr_request r = *req;
    r.operation = op;
    r.f.size = (uint32_t)sizeof(r) + len;
    int rc = vsr_on_request(g->v, &r, body, len, wall_us);
    if (rc == 0) {
        g->stats.proposals++;
        waiter_add(g, req, op, vsr_op(g->v));
        drain(g);
        return g->fatal ? -VS_EFATAL : 0;
    }
    if (rc == -ENOSPC)
        rc = -EBUSY; /* journal window full until the checkpoint */
    return rc;
}

int
pgroup_on_send(struct vs_pgroup *g, const struct vs_hdr_request *req,
               uint8_t *batch, size_t len, uint64_t wall_us,
               enum batch_err *berr)
{
    if (berr)
        *berr = BATCH_OK;
    int rc = proposer_check(g);
    if (rc < 0)
        return rc;
    rc = dedup(g, req);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    struct batch_info info;
    enum batch_err be = batch_validate(batch, len, NULL, 1, &info);
    if (be == BATCH_OK && len > g->o.body_max)
        be = BATCH_E_TOO_LARGE;
    if (berr)
        *berr = be;
    if (be != BATCH_OK)
        return -EINVAL;
    /* offsets in op order: the next offset of the log, committed or not
     * (every prepared op is appended as it is prepared) */
    struct part_stats ps;
    part_stats(g->p, &ps);
    uint64_t base =
        ps.next_offset > g->stamp_next ? ps.next_offset : g->stamp_next;
    uint64_t ts = batch_next_timestamp(g->last_ts, wall_us);
    batch_stamp(batch, part_ident(g->p)->partition_id, base, ts);
    rc = propose(g, req, VS_OP_SEND_MESSAGES, batch, (uint32_t)len, wall_us);
    if (rc == 0) {
        g->stamp_next = base + info.message_count;
        g->last_ts = ts;
    } else {
        /* not proposed: the caller may resend it; leave it unstamped */
        batch_stamp(batch, 0, 0, 0);
    }
    return rc;
}

int
pgroup_on_offset(struct vs_pgroup *g, const struct vs_hdr_request *req,
                 uint8_t operation, const struct pgroup_offset_op *o,
                 uint64_t wall_us)
{
    if (operation != VS_OP_STORE_CONSUMER_OFFSET &&
        operation != VS_OP_DELETE_CONSUMER_OFFSET)
        return -EINVAL;
    int rc = proposer_check(g);
    if (rc < 0)
        return rc;
    rc = dedup(g, req);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    uint8_t body[PGROUP_OFFSET_BODY];
    pgroup_offset_encode(o, body);
    return propose(g, req, operation, body, sizeof(body), wall_us);
}

/* Proposes a body without a client (an auto-commit, a trim): the engine
 * keeps no per-client slot for it, so it never holds back a client's own
 * next request. 0 (proposed, or an op with the same body and operation
 * is in flight) or the engine's refusal. */
static int
propose_anon(struct vs_pgroup *g, uint8_t operation, const uint8_t *body,
             uint32_t len, uint64_t wall_us)
{
    struct vs_hdr_request r;
    memset(&r, 0, sizeof(r));
    r.f.cluster = g->o.cluster;
    r.f.size = (uint32_t)sizeof(r) + len;
    r.f.command = VS_CMD_REQUEST;
    r.operation = operation;
    r.request_checksum = vs_checksum(body, len);
    uint64_t top = vsr_op(g->v);
    for (uint64_t op = vsr_commit_min(g->v) + 1; op <= top; op++) {
        struct vs_hdr_prepare h;
        if (vsr_header(g->v, op, &h) == 1 && vs_u128_is_zero(h.client) &&
            h.operation == operation &&
            vs_u128_eq(h.request_checksum, r.request_checksum))
            return 0;
    }
    int rc = vsr_on_request(g->v, &r, body, len, wall_us);
    if (rc == -ENOSPC)
        rc = -EBUSY;
    if (rc < 0)
        return rc;
    g->stats.proposals++;
    drain(g);
    return g->fatal ? -VS_EFATAL : 0;
}

int
pgroup_on_autocommit(struct vs_pgroup *g, const struct pgroup_offset_op *o,
                     uint64_t wall_us)
{
    int rc = proposer_check(g);
    if (rc < 0)
        return rc;
    struct pgroup_offset_op ro = *o;
    ro.raise = 1;
    struct part_consumer c = {.kind = ro.kind == PART_GROUP ? PART_GROUP
                                                            : PART_CONSUMER,
                              .id = ro.id,
                              .group_created_op = ro.group_created_op};
    uint64_t cur = 0;
    if (part_offset_get(g->p, &c, &cur) == 0 && cur >= ro.offset)
        return 0; /* applied already (ops in flight may raise it too) */
    uint8_t body[PGROUP_OFFSET_BODY];
    pgroup_offset_encode(&ro, body);
    return propose_anon(g, VS_OP_STORE_CONSUMER_OFFSET, body, sizeof(body),
                        wall_us);
}

int
pgroup_on_trim(struct vs_pgroup *g, uint8_t kind, uint64_t watermark,
               uint64_t wall_us)
{
    if (kind != PGROUP_TRIM_RETENTION && kind != PGROUP_TRIM_DELETE_SEGMENTS)
        return -EINVAL;
    int rc = proposer_check(g);
    if (rc < 0)
        return rc;
    uint64_t top = vsr_op(g->v);
    for (uint64_t op = vsr_commit_min(g->v) + 1; op <= top; op++) {
        struct vs_hdr_prepare h;
        if (vsr_header(g->v, op, &h) == 1 &&
            h.operation == VS_OP_DELETE_SEGMENTS)
            return 0; /* one trim at a time: the next tick sees its result */
    }
    struct pgroup_trim_op t = {.kind = kind, .watermark = watermark};
    uint64_t size;
    if (part_segment_at(g->p, 0, &t.first, &size) < 0 || watermark <= t.first ||
        watermark > part_active_start(g->p))
        return 0; /* no sealed segment goes */
    uint8_t body[PGROUP_TRIM_BODY];
    pgroup_trim_encode(&t, body);
    return propose_anon(g, VS_OP_DELETE_SEGMENTS, body, sizeof(body), wall_us);
}

int
pgroup_on_purge(struct vs_pgroup *g, uint64_t generation, uint64_t wall_us)
{
    if (generation == 0)
        return -EINVAL;
    int rc = proposer_check(g);
    if (rc < 0)
        return rc;
    if (generation <= part_purge_generation(g->p))
        return 0;
    uint64_t top = vsr_op(g->v);
    for (uint64_t op = vsr_commit_min(g->v) + 1; op <= top; op++) {
        struct vs_hdr_prepare h;
        if (vsr_header(g->v, op, &h) == 1 &&
            h.operation == VS_OP_DELETE_SEGMENTS)
            return 0; /* one trim at a time: the next tick sees its result */
    }
    struct part_stats ps;
    part_stats(g->p, &ps);
    struct pgroup_trim_op t = {.kind = PGROUP_TRIM_PURGE,
                               .first = generation,
                               .watermark = ps.next_offset > g->stamp_next
                                                ? ps.next_offset
                                                : g->stamp_next};
    uint8_t body[PGROUP_TRIM_BODY];
    pgroup_trim_encode(&t, body);
    return propose_anon(g, VS_OP_DELETE_SEGMENTS, body, sizeof(body), wall_us);
}

void
pgroup_trim_encode(const struct pgroup_trim_op *t,
                   uint8_t out[PGROUP_TRIM_BODY])
{
    memset(out, 0, PGROUP_TRIM_BODY);
    out[0] = t->kind;
    vs_store_u64(out + 8, t->first);
    vs_store_u64(out + 16, t->watermark);
}

int
pgroup_trim_decode(const uint8_t *b, size_t len, struct pgroup_trim_op *t)
{
    if (len != PGROUP_TRIM_BODY ||
        (b[0] != PGROUP_TRIM_RETENTION && b[0] != PGROUP_TRIM_DELETE_SEGMENTS &&
         b[0] != PGROUP_TRIM_PURGE))
        return -EINVAL;
    for (int i = 1; i < 8; i++)
        if (b[i])
            return -EINVAL;
    t->kind = b[0];
    t->first = vs_load_u64(b + 8);
    t->watermark = vs_load_u64(b + 16);
    if (t->kind == PGROUP_TRIM_PURGE)
        return t->first > 0 ? 0 : -EINVAL;
    return t->watermark > t->first ? 0 : -EINVAL;
}

enum vsr_verdict
pgroup_on_message(struct vs_pgroup *g, const void *frame, size_t len)
{
    if (g->fatal || g->install_pending)
        return VSR_DROP_STATUS;
    const struct vs_header *h = frame;
    if (len >= VS_HEADER_SIZE && g->xfer != NULL &&
        h->f.command >= VS_CMD_REQUEST_STATE_TRANSFER &&
        h->f.command <= VS_CMD_STATE_CHUNK) {
        /* state transfer frames: the binding's, never the engine's */
        pxfer_on_frame(g->xfer, h->f.replica, frame, len);
        drain(g);
        return VSR_ACCEPTED;
    }
    enum vsr_verdict vd = vsr_on_message(g->v, frame, len);
    drain(g);
    return vd;
}

void
pgroup_heartbeat_now(struct vs_pgroup *g)
{
    if (g->fatal || g->install_pending)
        return;
    vsr_heartbeat_now(g->v);
    drain(g);
}

void
pgroup_tick(struct vs_pgroup *g)
{
    if (g->fatal || g->install_pending)
        return;
    vsr_tick(g->v);
    drain(g);
    if (g->xfer != NULL) {
        /* a new primary while fetching (or the fetch gave up on its
         * peer): ask the primary */
        int pr = vsr_primary(g->v);
        if (pxfer_fetching(g->xfer) && pr >= 0 && pr != g->o.replica &&
            (pxfer_wants_peer(g->xfer) || pr != pxfer_peer(g->xfer)))
            pxfer_retarget(g->xfer, (uint8_t)pr);
        pxfer_tick(g->xfer);
        drain(g);
    }
    /* interval policy: appends were acknowledged once written; fsync them
     * every PG_INTERVAL_TICKS (every-batch asks at each append) */
    if (!g->every_batch && !g->fatal && !g->sync_asked &&
        pj_appends(g->j) > g->synced_seq &&
        ++g->idle_ticks >= PG_INTERVAL_TICKS) {
        g->sync_asked = 1;
        if (g->env.sync)
            g->env.sync(g->env.ctx, g);
    }
}

/* ---- consumer-offset op bodies ---- */

void
pgroup_offset_encode(const struct pgroup_offset_op *o,
                     uint8_t out[PGROUP_OFFSET_BODY])
{
    memset(out, 0, PGROUP_OFFSET_BODY);
    out[0] = o->kind;
    out[1] = o->raise ? 1 : 0;
    vs_store_u32(out + 4, o->id);
    vs_store_u64(out + 8, o->group_created_op);
    vs_store_u64(out + 16, o->offset);
}

int
pgroup_offset_decode(const uint8_t *b, size_t len, struct pgroup_offset_op *o)
{
    if (len != PGROUP_OFFSET_BODY ||
        (b[0] != PART_CONSUMER && b[0] != PART_GROUP) || b[1] > 1 || b[2] ||
        b[3])
        return -EINVAL;
    o->kind = b[0];
    o->raise = b[1];
    o->id = vs_load_u32(b + 4);
    o->group_created_op = vs_load_u64(b + 8);
    o->offset = vs_load_u64(b + 16);
    return 0;
}

/* ---- introspection ---- */

uint64_t
pgroup_id(const struct vs_pgroup *g)
{
    return g->group;
}

int
pgroup_primary(const struct vs_pgroup *g)
{
    return vsr_primary(g->v);
}

int
pgroup_is_settled_primary(const struct vs_pgroup *g)
{
    return !g->fatal && vsr_is_settled_primary(g->v);
}

uint64_t
pgroup_commit(const struct vs_pgroup *g)
{
    return vsr_commit_min(g->v);
}

struct vs_part *
pgroup_part(struct vs_pgroup *g)
{
    return g->p;
}

const struct vs_vsr *
pgroup_engine(const struct vs_pgroup *g)
{
    return g->v;
}

int
pgroup_fatal(const struct vs_pgroup *g)
{
    return g->fatal;
}

void
pgroup_stats(const struct vs_pgroup *g, struct pgroup_stats *out)
{
    *out = g->stats;
}
