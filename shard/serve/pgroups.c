/*
 * shard/serve/pgroups.c - the replicated partitions' runtime of a data
 * shard; see pgroups.h for the rules.
 *
 * Answers never run inside a group's callback: env->reply, link losses,
 * time-outs and deletions queue the answer (struct pg_ready) and one
 * deferred event delivers the queue from a fresh loop pass, so an answer
 * that lets a connection send its next request never re-enters a group
 * while it is performing actions.
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <sodium.h>

#include "common/checksum.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/metrics.h"
#include "server/listen.h"
#include "shard/data/batch.h"
#include "shard/link/mesh.h"
#include "shard/meta/lookup.h"
#include "shard/meta/state.h"
#include "shard/serve/pbeat.h"
#include "shard/serve/pgroup.h"
#include "shard/serve/pgroups.h"
#include "shard/serve/pheld.h"
#include "shard/serve/pxfer.h"
#include "shard/serve/server.h"

#define PG_BUCKETS 4096u
#define PG_NONE    0xFFu
/* the members' stats entries are refreshed every this many ticks */
#define PG_STATS_TICKS 100u
/* partition state transfers fetching at once on this shard: each holds
 * its artifacts in memory (up to XFER_ARTIFACT_CAP each) */
#define PGROUPS_FETCHES_MAX 2u

struct pg_hdr_request { /* PGROUPS_CMD_REQUEST */
    struct vs_frame f;
    uint64_t nonce;      /* 128 */
    uint32_t hops;       /* 136 */
    uint32_t reserved0;  /* 140 */
    struct data_cmd cmd; /* 144 */
    uint8_t reserved[48];
};
_Static_assert(sizeof(struct pg_hdr_request) == VS_HEADER_SIZE, "request");
_Static_assert(offsetof(struct pg_hdr_request, cmd) == 144, "request cmd");

struct pg_hdr_result { /* PGROUPS_CMD_RESULT */
    struct vs_frame f;
    uint64_t nonce;     /* 128 */
    uint32_t status;    /* 136 */
    uint32_t reserved0; /* 140 */
    /* 144: the group op that answered (a committed send or offset op),
     * 0 when none or from an older peer: the asking node answers its
     * client once its own replica applied it */
    uint64_t op;
    uint8_t reserved[104];
};
_Static_assert(sizeof(struct pg_hdr_result) == VS_HEADER_SIZE, "result");
_Static_assert(offsetof(struct pg_hdr_result, op) == 144, "result op");

struct serve_pgroups;

/* One owned partition with a replica set. */
struct pg_entry {
    struct serve_pgroups *pg;
    struct part_id id;
    uint64_t gid;
    uint8_t count, self_ix; /* self_ix PG_NONE: not a member */
    uint8_t replicas[VS_REPLICAS_MAX];
    struct vs_pgroup *g; /* member of a set of more than one, opened */
    int refused;         /* pgroup_open refused it (logged once) */
    uint64_t reopen_ms;  /* a stopped group is reopened from then on */
    uint64_t gen;        /* groups opened on it (an fsync names its own) */
    int sync_pending, sync_again;
    int state_pending;     /* a superblock fsync in flight (env_state_sync) */
    uint64_t stats_commit; /* the commit its stats entry shows */
    int dead; /* closed while an fsync was in flight: freed by it */
    struct pg_entry *hnext, *next;
};

/* A proposed send waiting for its group's reply. */
struct pg_wait {
    uint64_t gid;
    struct vs_u128 client;
    uint64_t request;
    struct vs_u128 checksum; /* the request checksum proposed */
    uint32_t messages;       /* a send's message count and bytes */
    size_t bytes;
    struct gc_waiter w;
    uint64_t deadline_ms;
    struct pg_wait *next;
};

/* A command forwarded to a peer node, waiting for its result. */
struct pg_fwd {
    uint64_t nonce;
    uint8_t node;
    struct part_id id; /* the partition asked about */
    struct gc_waiter w;
    uint64_t deadline_ms;
    struct pg_fwd *next;
};

/* An answer to deliver from a fresh loop pass. */
struct pg_ready {
    struct gc_waiter w;
    uint32_t status;
    uint8_t *body;
    size_t len;
    struct part_id id; /* stats of a committed send (created_op 0: none) */
    uint64_t gid, op;  /* a link waiter's group and answering op, or 0 */
    struct pg_ready *next;
};

struct serve_pgroups {
    struct serve *s;
    struct dparts *parts;
    struct pxfer_budget fetch_budget; /* the groups' state transfers */
    struct serve_gcommit *gc;
    pgroups_exec_fn *exec;
    gc_answer_fn *answer;
    struct mesh *mesh;
    uint8_t self, nodes;
    uint64_t synced_op;
    int resync;
    struct pg_entry *buckets[PG_BUCKETS];
    struct pg_entry *all;
    struct pg_wait *waits;
    struct pg_fwd *fwds;
    struct pheld_list held; /* read your writes (pheld.h) */
    struct pg_ready *ready_head, *ready_tail;
    struct event *ready_ev;
    int ready_armed;
    uint64_t nonce, ticks;
    struct pgroup_env env;
    struct vs_wbuf out, rx, tx;
    struct pgroups_counters n;
};

static uint64_t
mono_ms(void)
{
    return vs_monotonic_ns() / 1000000u;
}

static int
id_eq(const struct part_id *a, const struct part_id *b)
{
    return a->stream_id == b->stream_id && a->topic_id == b->topic_id &&
           a->partition_id == b->partition_id && a->created_op == b->created_op;
}

static size_t
bucket_of(uint64_t gid)
{
    uint64_t h = gid * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> 52) & (PG_BUCKETS - 1);
}

static struct pg_entry *
find_gid(struct serve_pgroups *pg, uint64_t gid)
{
    for (struct pg_entry *e = pg->buckets[bucket_of(gid)]; e; e = e->hnext)
        if (e->gid == gid && !e->dead)
            return e;
    return NULL;
}

static struct pg_entry *
find_id(struct serve_pgroups *pg, const struct part_id *id)
{
    uint64_t gid = pgroup_group_id(id);
    for (struct pg_entry *e = pg->buckets[bucket_of(gid)]; e; e = e->hnext)
        if (e->gid == gid && !e->dead && id_eq(&e->id, id))
            return e;
    return NULL;
}

static struct pg_entry *
entry_of(struct serve_pgroups *pg, struct vs_pgroup *g)
{
    struct pg_entry *e = find_gid(pg, pgroup_id(g));
    return e != NULL && e->g == g ? e : NULL;
}

/* ------------------------------------------------------------ answers */

static struct pg_ready *
ready_push(struct serve_pgroups *pg, const struct gc_waiter *w, uint32_t status,
           const uint8_t *body, size_t len, const struct part_id *stats)
{
    struct pg_ready *r = vs_xcalloc(1, sizeof(*r));
    r->w = *w;
    r->status = status;
    if (status == 0 && len > 0) {
        r->body = vs_xmalloc(len);
        memcpy(r->body, body, len);
        r->len = len;
    }
    if (stats != NULL)
        r->id = *stats;
    if (pg->ready_tail)
        pg->ready_tail->next = r;
    else
        pg->ready_head = r;
    pg->ready_tail = r;
    if (!pg->ready_armed) {
        pg->ready_armed = 1;
        event_active(pg->ready_ev, EV_TIMEOUT, 1);
    }
    return r;
}

static void send_result(struct serve_pgroups *pg, uint8_t peer, uint64_t nonce,
                        uint32_t status, uint64_t op, const uint8_t *body,
                        size_t len);

static void
on_ready(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct serve_pgroups *pg = arg;
    pg->ready_armed = 0;
    /* answers may queue more: deliver only what is queued now */
    struct pg_ready *r = pg->ready_head;
    pg->ready_head = pg->ready_tail = NULL;
    int beat = 0;
    while (r != NULL) {
        struct pg_ready *next = r->next;
        if (r->id.created_op != 0) {
            struct dpart *dp = dparts_find(pg->parts, &r->id);
            if (dp != NULL)
                dparts_stats_note(pg->parts, dp);
        }
        if (r->w.link && r->op != 0) {
            /* a peer forwarded it: the result names the op, and the
             * commit goes to the backups now, so the peer's replica
             * applies it without waiting for the next heartbeat */
            send_result(pg, r->w.peer, r->w.nonce, r->status, r->op, r->body,
                        r->len);
            struct pg_entry *e = find_gid(pg, r->gid);
            if (e != NULL && e->g != NULL) {
                pgroup_heartbeat_now(e->g);
                beat = 1;
            }
        } else {
            pg->answer(pg->s, &r->w, r->status, r->body, r->len);
        }
        free(r->body);
        free(r);
        r = next;
    }
    if (beat && pg->mesh != NULL)
        mesh_flush(pg->mesh);
}

/* pheld_commit_fn: the commit of this node's replica of id's group. */
static int
held_commit(void *ctx, const struct part_id *id, uint64_t *commit)
{
    struct pg_entry *e = find_id(ctx, id);
    if (e == NULL || e->g == NULL)
        return 0;
    *commit = pgroup_commit(e->g);
    return 1;
}

/* pheld_answer_fn: the acknowledged result, from a fresh loop pass. */
static void
held_answer(void *ctx, const struct gc_waiter *w, const uint8_t *body,
            size_t len)
{
    ready_push(ctx, w, 0, body, len, NULL);
}

/* ------------------------------------------------------- group env */

static int
env_send(void *ctx, struct vs_pgroup *g, uint8_t replica, const void *frame,
         size_t len)
{
    struct serve_pgroups *pg = ctx;
    struct pg_entry *e = entry_of(pg, g);
    if (e == NULL || replica >= e->count || pg->mesh == NULL)
        return -ENOTCONN;
    uint8_t node = e->replicas[replica];
    if (node == pg->self)
        return -EINVAL;
    /* a heartbeat or its answer rides the link's coalesced beat */
    struct beat_entry be;
    if (pbeat_from_frame(frame, len, &pg->s->cluster, VS_WIRE_FORMAT_VERSION,
                         &be) == 0) {
        int rc = mesh_post(pg->mesh, node, &be);
        if (rc == 0) {
            pg->n.beat_out++;
            return 0;
        }
        if (rc != -EAGAIN)
            return rc;
        /* the pending table is full: the frame goes on its own */
    }
    return mesh_send(pg->mesh, node, frame, len);
}

static void
env_reply(void *ctx, struct vs_pgroup *g, struct vs_u128 client,
          const void *frame, size_t len)
{
    struct serve_pgroups *pg = ctx;
    if (len < VS_HEADER_SIZE)
        return;
    struct vs_hdr_reply h;
    memcpy(&h, frame, sizeof(h));
    uint64_t gid = pgroup_id(g);
    struct pg_entry *e = entry_of(pg, g);
    const uint8_t *body = (const uint8_t *)frame + VS_HEADER_SIZE;
    size_t blen = len - VS_HEADER_SIZE;
    for (struct pg_wait **pp = &pg->waits, *w; (w = *pp) != NULL;) {
        if (w->gid != gid || !vs_u128_eq(w->client, client) ||
            w->request != h.request ||
            (!vs_u128_is_zero(h.request_checksum) &&
             !vs_u128_eq(h.request_checksum, w->checksum))) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        struct pg_ready *r =
            ready_push(pg, &w->w, h.status, body, blen,
                       h.status == 0 && e != NULL ? &e->id : NULL);
        if (w->w.link && h.status == 0) {
            r->gid = gid;
            r->op = h.op;
        }
        pg->n.replied++;
        if (h.status == 0 && w->messages > 0) {
            vs_metrics_add(VS_M_MESSAGES_SENT, w->messages);
            vs_metrics_add(VS_M_MESSAGES_SENT_BYTES, w->bytes);
        }
        free(w);
    }
}

static void sync_issue(struct pg_entry *e);

static void
sync_done(void *ctx, uint64_t gen, const struct pj_sync_target *t)
{
    struct pg_entry *e = ctx;
    e->sync_pending = 0;
    if (e->dead) {
        if (!e->state_pending)
            free(e);
        return;
    }
    if (e->g == NULL || gen != e->gen) {
        e->sync_again = 0; /* that group was closed: its fsync is moot */
        return;
    }
    e->pg->n.syncs++;
    pgroup_on_synced(e->g, t);
    if (e->sync_again && e->g != NULL) {
        e->sync_again = 0;
        sync_issue(e);
    }
}

static void
sync_issue(struct pg_entry *e)
{
    struct pj_sync_target t;
    int rc = pgroup_sync_target(e->g, &t);
    if (rc != 0) { /* the group stopped: the tick closes and reopens it */
        vs_log_error("partition %u.%u.%u: journal fsync target: %s",
                     e->id.stream_id, e->id.topic_id, e->id.partition_id,
                     sio_strerror(rc));
        return;
    }
    e->sync_pending = 1;
    gcommit_journal_sync(e->pg->gc, e->gen, &t, sync_done, e);
}

/* A superblock fsync done on the sync threads: the group's engine hears
 * of the write now (unless that group was closed meanwhile). */
static void
state_done(void *ctx, uint64_t gen, const struct pj_sync_target *t)
{
    (void)t;
    struct pg_entry *e = ctx;
    e->state_pending = 0;
    if (e->dead) {
        if (!e->sync_pending)
            free(e);
        return;
    }
    if (e->g != NULL && gen == e->gen)
        pgroup_on_state_synced(e->g);
}

static void
env_state_sync(void *ctx, struct vs_pgroup *g, int fd)
{
    struct serve_pgroups *pg = ctx;
    struct pg_entry *e = entry_of(pg, g);
    if (e == NULL)
        return;
    struct pj_sync_target t;
    memset(&t, 0, sizeof(t));
    t.log_fd = -1;
    t.vsr_fd = fd;
    e->state_pending = 1;
    pg->n.state_syncs++;
    gcommit_journal_sync(pg->gc, e->gen, &t, state_done, e);
}

static void
env_sync(void *ctx, struct vs_pgroup *g)
{
    struct serve_pgroups *pg = ctx;
    struct pg_entry *e = entry_of(pg, g);
    if (e == NULL)
        return;
    if (e->sync_pending) {
        e->sync_again = 1; /* after the one in flight */
        return;
    }
    sync_issue(e);
}

/* A state transfer's fsyncs (env->files_sync): pairs of fds per sync
 * request; the last completion continues the install. */
struct pg_files_sync {
    struct pxfer_sync *tok;
    size_t left;
};

static void
files_done(void *ctx, uint64_t key, const struct pj_sync_target *t)
{
    (void)key;
    (void)t;
    struct pg_files_sync *fs = ctx;
    if (--fs->left > 0)
        return;
    pxfer_fsynced(fs->tok);
    free(fs);
}

static void
env_files_sync(void *ctx, struct vs_pgroup *g, const int *fds, size_t n,
               struct pxfer_sync *tok)
{
    struct serve_pgroups *pg = ctx;
    if (n == 0) {
        pxfer_fsynced(tok);
        return;
    }
    struct pg_files_sync *fs = vs_xcalloc(1, sizeof(*fs));
    fs->tok = tok;
    fs->left = (n + 1) / 2;
    for (size_t i = 0; i < n; i += 2) {
        struct pj_sync_target t;
        memset(&t, 0, sizeof(t));
        t.log_fd = fds[i];
        t.vsr_fd = i + 1 < n ? fds[i + 1] : -1;
        gcommit_journal_sync(pg->gc, pgroup_id(g), &t, files_done, fs);
    }
    pg->n.files_syncs += n;
}

/* ------------------------------------------------------- membership */

/* Answers 57 to every waiter of group gid (its group went away). */
static void
waits_fail(struct serve_pgroups *pg, uint64_t gid)
{
    for (struct pg_wait **pp = &pg->waits, *w; (w = *pp) != NULL;) {
        if (w->gid != gid) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        ready_push(pg, &w->w, VS_E_TRANSIENT_NOT_COMMITTED, NULL, 0, NULL);
        free(w);
    }
}

/* What a sync read about one open partition (inside the read section). */
struct pg_seen {
    struct part_id id;
    uint8_t count;
    uint8_t replicas[VS_REPLICAS_MAX];
};

static void
group_open(struct serve_pgroups *pg, struct pg_entry *e)
{
    const struct vs_config *cfg = pg->s->cfg;
    struct dpart *dp = dparts_find(pg->parts, &e->id);
    if (dp == NULL)
        return;
    dp->grouped = 1; /* retention is the group's, even while it is closed */
    struct pgroup_opts o;
    memset(&o, 0, sizeof(o));
    o.cluster = pg->s->cluster;
    o.id = e->id;
    o.replica = e->self_ix;
    o.replica_count = e->count;
    o.journal_slots = cfg->wal_slots;
    o.pipeline_max =
        VSR_PIPELINE_MAX < cfg->wal_slots ? VSR_PIPELINE_MAX : cfg->wal_slots;
    uint64_t body_max = (uint64_t)cfg->max_message_body;
    if (body_max > VS_FRAME_MAX - VS_HEADER_SIZE)
        body_max = VS_FRAME_MAX - VS_HEADER_SIZE;
    o.body_max = (uint32_t)body_max;
    /* a fresh seed on every open: a restarted replica's incarnation
     * derives from it (pgroup.h) */
    o.seed =
        ((uint64_t)randombytes_random() << 32 | randombytes_random()) ^ e->gid;
    o.fetch_budget = &pg->fetch_budget;
    char reason[256] = "";
    int rc = pgroup_open(&o, dp->p, &pg->env, &e->g, reason, sizeof(reason));
    if (rc != 0) {
        e->g = NULL;
        e->refused = 1;
        pg->n.refused++;
        vs_log_error("partition %u.%u.%u@%llu: its group cannot run here "
                     "(%s): the partition is not served on this node",
                     e->id.stream_id, e->id.topic_id, e->id.partition_id,
                     (unsigned long long)e->id.created_op,
                     reason[0] ? reason : strerror(-rc));
        return;
    }
    e->gen++;
    pg->n.opened++;
    pg->n.groups++;
    vs_log_info("partition %u.%u.%u@%llu: group %016llx open, replica %u of "
                "%u",
                e->id.stream_id, e->id.topic_id, e->id.partition_id,
                (unsigned long long)e->id.created_op,
                (unsigned long long)e->gid, e->self_ix, e->count);
}

/* A group that stopped (out of space on its journal, a fatal I/O
 * error): closed, its waiters answered 57, reopened (recovering from its
 * files) after PGROUPS_REOPEN_MS. */
static void
group_stop(struct serve_pgroups *pg, struct pg_entry *e, uint64_t now)
{
    vs_log_error("partition %u.%u.%u: its group stopped (journal out of "
                 "space or an I/O error): reopened in %u ms",
                 e->id.stream_id, e->id.topic_id, e->id.partition_id,
                 PGROUPS_REOPEN_MS);
    pgroup_close(e->g);
    e->g = NULL;
    pg->n.closed++;
    pg->n.groups--;
    waits_fail(pg, e->gid);
    e->reopen_ms = now + PGROUPS_REOPEN_MS;
}

static void
entry_add(struct serve_pgroups *pg, const struct pg_seen *s)
{
    struct pg_entry *e = vs_xcalloc(1, sizeof(*e));
    e->pg = pg;
    e->id = s->id;
    e->gid = pgroup_group_id(&s->id);
    e->count = s->count;
    e->self_ix = PG_NONE;
    for (uint8_t i = 0; i < s->count && i < VS_REPLICAS_MAX; i++) {
        e->replicas[i] = s->replicas[i];
        if (s->replicas[i] == pg->self)
            e->self_ix = i;
    }
    size_t b = bucket_of(e->gid);
    e->hnext = pg->buckets[b];
    pg->buckets[b] = e;
    e->next = pg->all;
    pg->all = e;
    if (e->count > 1 && e->self_ix != PG_NONE)
        group_open(pg, e);
}

void
pgroups_sync(struct serve_pgroups *pg)
{
    if (pg == NULL)
        return;
    uint64_t pub = lr_published_op(pg->parts->lr);
    if (pub == pg->synced_op && !pg->resync)
        return;
    struct pg_seen *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t op = 0;
    const void *st = lr_read_begin(pg->parts->lr, &op);
    for (struct dpart *dp = pg->parts->all; op != 0 && dp; dp = dp->next) {
        const struct meta_partition *p = meta_partition_by_id(
            st, dp->id.stream_id, dp->id.topic_id, dp->id.partition_id);
        if (p == NULL || p->created_op != dp->id.created_op)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            v = vs_xrealloc(v, cap * sizeof(*v));
        }
        struct pg_seen *s = &v[n++];
        memset(s, 0, sizeof(*s));
        s->id = dp->id;
        s->count = p->replica_count <= VS_REPLICAS_MAX ? p->replica_count
                                                       : VS_REPLICAS_MAX;
        memcpy(s->replicas, p->replicas, s->count);
    }
    lr_read_end(pg->parts->lr);
    for (size_t i = 0; i < n; i++)
        if (find_id(pg, &v[i].id) == NULL)
            entry_add(pg, &v[i]);
    free(v);
    pg->synced_op = op;
    pg->resync = 0;
}

/* The close hook of dparts (parts.h): the group lets go of the partition
 * before its handle goes; its waiters are answered 57 (the client's
 * resend then finds the partition gone). */
static void
on_part_close(void *ctx, struct dpart *dp)
{
    struct serve_pgroups *pg = ctx;
    struct pg_entry *e = find_id(pg, &dp->id);
    if (e == NULL)
        return;
    if (e->g != NULL) {
        pgroup_close(e->g);
        e->g = NULL;
        pg->n.closed++;
        pg->n.groups--;
    }
    waits_fail(pg, e->gid);
    struct pg_entry **pp = &pg->buckets[bucket_of(e->gid)];
    while (*pp && *pp != e)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = e->hnext;
    pp = &pg->all;
    while (*pp && *pp != e)
        pp = &(*pp)->next;
    if (*pp)
        *pp = e->next;
    if (e->sync_pending || e->state_pending)
        e->dead = 1; /* its fsyncs' completion frees it */
    else
        free(e);
}

/* ------------------------------------------------------------- links */

/* Seals a frame of this module: header fields set, body follows it. */
static void
seal(struct serve_pgroups *pg, struct vs_header *h, uint8_t command,
     const uint8_t *body, size_t blen)
{
    h->f.cluster = pg->s->cluster;
    h->f.size = (uint32_t)(VS_HEADER_SIZE + blen);
    h->f.release = VS_WIRE_FORMAT_VERSION;
    h->f.command = command;
    h->f.replica = pg->self;
    memset(&h->f.checksum_body, 0, sizeof(h->f.checksum_body));
    if (blen > 0)
        h->f.checksum_body = vs_body_checksum(body, blen);
    vs_frame_seal(h);
}

/* 1 if a frame of this module is whole and intact. */
static int
frame_ok(struct serve_pgroups *pg, const void *frame, size_t len)
{
    const struct vs_header *h = frame;
    if (len < VS_HEADER_SIZE || h->f.size != len || !vs_frame_verify(h) ||
        !vs_u128_eq(h->f.cluster, pg->s->cluster))
        return 0;
    size_t blen = len - VS_HEADER_SIZE;
    struct vs_u128 want = {0, 0};
    if (blen > 0)
        want = vs_body_checksum((const uint8_t *)frame + VS_HEADER_SIZE, blen);
    return vs_u128_eq(h->f.checksum_body, want);
}

static void
send_result(struct serve_pgroups *pg, uint8_t peer, uint64_t nonce,
            uint32_t status, uint64_t op, const uint8_t *body, size_t len)
{
    if (pg->mesh == NULL)
        return;
    if (status != 0)
        len = 0;
    vs_wbuf_reset(&pg->tx);
    struct pg_hdr_result h;
    memset(&h, 0, sizeof(h));
    h.nonce = nonce;
    h.status = status;
    h.op = status == 0 ? op : 0;
    seal(pg, (struct vs_header *)&h, PGROUPS_CMD_RESULT, body, len);
    vs_wr_bytes(&pg->tx, &h, sizeof(h));
    if (len > 0)
        vs_wr_bytes(&pg->tx, body, len);
    int rc = mesh_send(pg->mesh, peer, pg->tx.data, pg->tx.len);
    if (rc != 0)
        vs_log_warn("data link to replica %u: a forwarded command's answer "
                    "was not sent (%s): the peer answers its client 57",
                    peer, strerror(-rc));
}

void
pgroups_answer_link(struct serve_pgroups *pg, const struct gc_waiter *w,
                    uint32_t status, const uint8_t *body, size_t len)
{
    if (pg == NULL)
        return;
    send_result(pg, w->peer, w->nonce, status, 0, body, len);
}

/* Forwards cmd to node: PGROUPS_DEFERRED (w answered with the result) or
 * 57 when the link cannot take it now. Without a waiter (w NULL: an
 * auto-commit) 0 once queued, and the result is not awaited. */
static uint32_t
forward(struct serve_pgroups *pg, uint8_t node, const struct data_cmd *cmd,
        const struct vs_hdr_request *req, const uint8_t *data, size_t dlen,
        const struct gc_waiter *w, uint32_t hops)
{
    if (pg->mesh == NULL || node == pg->self || hops >= PGROUPS_HOPS_MAX ||
        !mesh_up(pg->mesh, node) ||
        dlen > VS_FRAME_MAX - 2 * (size_t)VS_HEADER_SIZE) {
        pg->n.forward_failed++;
        return VS_E_TRANSIENT_NOT_COMMITTED;
    }
    struct pg_hdr_request h;
    memset(&h, 0, sizeof(h));
    h.nonce = ++pg->nonce;
    h.hops = hops + 1;
    h.cmd = *cmd;
    vs_wbuf_reset(&pg->tx);
    vs_wr_bytes(&pg->tx, &h, sizeof(h));
    vs_wr_bytes(&pg->tx, req, VS_HEADER_SIZE);
    if (dlen > 0)
        vs_wr_bytes(&pg->tx, data, dlen);
    struct vs_header *hp = (struct vs_header *)pg->tx.data;
    seal(pg, hp, PGROUPS_CMD_REQUEST, pg->tx.data + VS_HEADER_SIZE,
         pg->tx.len - VS_HEADER_SIZE);
    int rc = mesh_send(pg->mesh, node, pg->tx.data, pg->tx.len);
    if (pg->tx.cap > (size_t)4 << 20) { /* do not keep a huge buffer */
        vs_wbuf_fini(&pg->tx);
        vs_wbuf_init(&pg->tx);
    }
    if (rc != 0) {
        pg->n.forward_failed++;
        return VS_E_TRANSIENT_NOT_COMMITTED;
    }
    pg->n.forwarded++;
    if (w == NULL)
        return 0; /* fire and forget: its result is dropped (on_result) */
    struct pg_fwd *f = vs_xcalloc(1, sizeof(*f));
    f->nonce = h.nonce;
    f->node = node;
    f->id = (struct part_id){.stream_id = cmd->stream_id,
                             .topic_id = cmd->topic_id,
                             .partition_id = cmd->partition_id,
                             .created_op = cmd->created_op};
    f->w = *w;
    f->deadline_ms = mono_ms() + PGROUPS_FWD_TIMEOUT_MS;
    f->next = pg->fwds;
    pg->fwds = f;
    return PGROUPS_DEFERRED;
}

static void
on_request(struct serve_pgroups *pg, uint8_t peer, const void *frame,
           size_t len)
{
    struct pg_hdr_request h;
    memcpy(&h, frame, sizeof(h));
    if (len < 2 * (size_t)VS_HEADER_SIZE || h.hops == 0 ||
        h.hops > PGROUPS_HOPS_MAX) {
        send_result(pg, peer, h.nonce, VS_E_INVALID_COMMAND, 0, NULL, 0);
        return;
    }
    struct vs_hdr_request req;
    memcpy(&req, (const uint8_t *)frame + VS_HEADER_SIZE, sizeof(req));
    /* the batch is stamped in place: a copy of our own */
    size_t dlen = len - 2 * (size_t)VS_HEADER_SIZE;
    vs_wbuf_reset(&pg->rx);
    vs_wr_bytes(&pg->rx, (const uint8_t *)frame + 2 * VS_HEADER_SIZE, dlen);
    struct gc_waiter w;
    memset(&w, 0, sizeof(w));
    w.link = 1;
    w.peer = peer;
    w.nonce = h.nonce;
    vs_wbuf_reset(&pg->out);
    uint32_t st = pg->exec(pg->s, &h.cmd, &req, dlen ? pg->rx.data : NULL, dlen,
                           &pg->out, &w, h.hops);
    if (pg->rx.cap > (size_t)4 << 20) {
        vs_wbuf_fini(&pg->rx);
        vs_wbuf_init(&pg->rx);
    }
    if (st == PGROUPS_DEFERRED)
        return;
    send_result(pg, peer, h.nonce, st, 0, pg->out.data, pg->out.len);
}

static void
on_result(struct serve_pgroups *pg, uint8_t peer, const void *frame, size_t len)
{
    struct pg_hdr_result h;
    memcpy(&h, frame, sizeof(h));
    for (struct pg_fwd **pp = &pg->fwds, *f; (f = *pp) != NULL; pp = &f->next) {
        if (f->nonce != h.nonce || f->node != peer)
            continue;
        *pp = f->next;
        const uint8_t *body = (const uint8_t *)frame + VS_HEADER_SIZE;
        size_t blen = len - VS_HEADER_SIZE;
        if (!pheld_offer(&pg->held, &f->id, h.status, h.op, &f->w, body, blen,
                         mono_ms()))
            ready_push(pg, &f->w, h.status, body, blen, NULL);
        free(f);
        return;
    }
    /* answered 57 already (time-out): the late result is dropped */
}

void
pgroups_on_frame(void *arg, uint8_t peer, const void *frame, size_t len)
{
    struct serve_pgroups *pg = arg;
    const struct vs_header *h = frame;
    pg->n.frames_in++;
    if (h->f.command == PGROUPS_CMD_REQUEST ||
        h->f.command == PGROUPS_CMD_RESULT) {
        if (!frame_ok(pg, frame, len) || h->f.replica != peer) {
            pg->n.frames_dropped++;
            vs_log_warn("data link with replica %u: a damaged forwarded "
                        "command dropped",
                        peer);
            return;
        }
        if (h->f.command == PGROUPS_CMD_REQUEST)
            on_request(pg, peer, frame, len);
        else
            on_result(pg, peer, frame, len);
        return;
    }
    uint64_t gid = 0;
    struct pg_entry *e = NULL;
    if (h->f.command <= VS_CMD_MAX &&
        vsr_frame_group(h, &gid) != VSR_FRAME_NONE)
        e = find_gid(pg, gid);
    /* the engine checks the rest; the link must be the member's own,
     * except for a prepare, whose replica field names the primary that
     * made it (a repair or a new primary's retransmit relays it as is) */
    int relayed =
        h->f.command == VS_CMD_PREPARE || h->f.command == VS_CMD_REPAIR_PREPARE;
    if (e == NULL || e->g == NULL || h->f.replica >= e->count ||
        (!relayed && e->replicas[h->f.replica] != peer)) {
        pg->n.frames_dropped++;
        return;
    }
    (void)pgroup_on_message(e->g, frame, len);
    if (pheld_any(&pg->held))
        (void)pheld_release(&pg->held, mono_ms());
}

/* A beat frame's entries: each rebuilt into its Commit / Pong frame
 * (pbeat.h) for its group, when the link's peer is the member the entry
 * names (the engine checks the rest as for any frame). */
void
pgroups_on_beat(void *arg, uint8_t peer, const struct beat_hdr *h,
                const uint8_t *body)
{
    struct serve_pgroups *pg = arg;
    for (uint32_t i = 0; i < h->count; i++) {
        struct beat_entry be;
        beat_entry_at(body, i, &be);
        struct pg_entry *e = find_gid(pg, be.group);
        struct vs_header f;
        if (e == NULL || e->g == NULL || be.member >= e->count ||
            e->replicas[be.member] != peer ||
            pbeat_to_frame(&be, &pg->s->cluster, h->f.release, &f) != 0) {
            pg->n.beat_dropped++;
            continue;
        }
        pg->n.beat_in++;
        (void)pgroup_on_message(e->g, &f, sizeof(f));
    }
    if (pheld_any(&pg->held))
        (void)pheld_release(&pg->held, mono_ms());
}

/* A fetched partition is staged (pgroup_install_pending): the group and
 * the partition close, the directories swap, both reopen (the engine
 * recovers at the installed checkpoint and repairs above it). */
static void
group_reinstall(struct serve_pgroups *pg, struct pg_entry *e)
{
    struct dpart *dp = dparts_find(pg->parts, &e->id);
    pgroup_close(e->g);
    e->g = NULL;
    pg->n.closed++;
    pg->n.groups--;
    waits_fail(pg, e->gid);
    if (dp == NULL)
        return;
    (void)dparts_reinstall(pg->parts, dp);
    vs_log_info("partition %u.%u.%u@%llu: transferred partition installed",
                e->id.stream_id, e->id.topic_id, e->id.partition_id,
                (unsigned long long)e->id.created_op);
    group_open(pg, e);
    if (e->g == NULL) /* refused: retried like a stopped group */
        e->reopen_ms = mono_ms() + PGROUPS_REOPEN_MS;
}

void
pgroups_on_tick(void *arg)
{
    struct serve_pgroups *pg = arg;
    uint64_t now = mono_ms();
    int stats = ++pg->ticks % PG_STATS_TICKS == 0;
    for (struct pg_entry *e = pg->all; e; e = e->next) {
        if (e->g != NULL && pgroup_fatal(e->g))
            group_stop(pg, e, now);
        /* a staged install swaps in once no fsync of the group is in
         * flight (its completion must not reach the reopened group) */
        if (e->g != NULL && pgroup_install_pending(e->g) && !e->state_pending &&
            !e->sync_pending)
            group_reinstall(pg, e);
        /* reopened once no fsync of the stopped group is in flight: the
         * superblock it reads back is then durable */
        if (e->g == NULL && e->reopen_ms != 0 && e->reopen_ms <= now &&
            !e->state_pending && !e->sync_pending) {
            e->reopen_ms = 0;
            group_open(pg, e);
            if (e->g == NULL) { /* still refused: try again later */
                e->refused = 0;
                e->reopen_ms = now + PGROUPS_REOPEN_MS;
            }
        }
        if (e->g != NULL)
            pgroup_tick(e->g);
        if (stats && e->g != NULL && pgroup_commit(e->g) != e->stats_commit) {
            /* a member's commits move its counters (GetTopic, /metrics) */
            e->stats_commit = pgroup_commit(e->g);
            struct dpart *dp = dparts_find(pg->parts, &e->id);
            if (dp != NULL)
                dparts_stats_note(pg->parts, dp);
        }
    }
    for (struct pg_fwd **pp = &pg->fwds, *f; (f = *pp) != NULL;) {
        if (f->deadline_ms > now) {
            pp = &f->next;
            continue;
        }
        *pp = f->next;
        pg->n.timed_out++;
        ready_push(pg, &f->w, VS_E_TRANSIENT_NOT_COMMITTED, NULL, 0, NULL);
        free(f);
    }
    for (struct pg_wait **pp = &pg->waits, *w; (w = *pp) != NULL;) {
        if (w->deadline_ms > now) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        pg->n.timed_out++;
        ready_push(pg, &w->w, VS_E_TRANSIENT_NOT_COMMITTED, NULL, 0, NULL);
        free(w);
    }
    (void)pheld_release(&pg->held, now);
    /* this tick's heartbeats leave now, one beat frame per link */
    if (pg->mesh != NULL)
        mesh_flush(pg->mesh);
}

void
pgroups_on_state(void *arg, uint8_t peer, int up)
{
    struct serve_pgroups *pg = arg;
    if (up)
        return;
    for (struct pg_fwd **pp = &pg->fwds, *f; (f = *pp) != NULL;) {
        if (f->node != peer) {
            pp = &f->next;
            continue;
        }
        *pp = f->next;
        pg->n.forward_failed++;
        ready_push(pg, &f->w, VS_E_TRANSIENT_NOT_COMMITTED, NULL, 0, NULL);
        free(f);
    }
}

void
pgroups_attach(struct serve_pgroups *pg, struct mesh *m)
{
    if (pg != NULL)
        pg->mesh = m;
}

/* ------------------------------------------------------------ routing */

/* Unlinks and frees w if it is still waiting (a reply may have taken it
 * already). */
static void
wait_drop(struct serve_pgroups *pg, struct pg_wait *w)
{
    for (struct pg_wait **pp = &pg->waits; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            free(w);
            return;
        }
}

/* A poll's auto-commit on a member e of a set of more than one: proposed
 * here when this node is the primary, else forwarded to the primary
 * without a waiter. The status of a forwarded one (0, or 57 when it
 * could not be proposed: dropped, as Iggy's auto-commit is best effort). */
static uint32_t
autocommit_run(struct serve_pgroups *pg, struct pg_entry *e,
               const struct data_cmd *cmd, uint32_t hops)
{
    if (e->g == NULL)
        return VS_E_TRANSIENT_NOT_COMMITTED;
    struct pgroup_offset_op oo;
    memset(&oo, 0, sizeof(oo));
    oo.kind = cmd->consumer_kind == 2 ? PART_GROUP : PART_CONSUMER;
    oo.id = cmd->consumer_id;
    oo.group_created_op = cmd->group_created_op;
    oo.offset = cmd->value;
    oo.raise = 1;
    int rc = pgroup_on_autocommit(e->g, &oo, vs_realtime_us());
    if (rc == 0) {
        pg->n.proposed++;
        return 0;
    }
    if (rc == -EREMOTE) {
        int p = pgroup_primary(e->g);
        if (p < 0 || p >= e->count)
            return VS_E_TRANSIENT_NOT_COMMITTED;
        struct vs_hdr_request none;
        memset(&none, 0, sizeof(none));
        uint32_t st =
            forward(pg, e->replicas[p], cmd, &none, NULL, 0, NULL, hops);
        return st == PGROUPS_DEFERRED ? 0 : st;
    }
    vs_log_debug("partition %u.%u.%u: auto-commit of offset %" PRIu64
                 " not proposed: %s",
                 cmd->stream_id, cmd->topic_id, cmd->partition_id, cmd->value,
                 rc == -VS_EFATAL ? "the group stopped" : strerror(-rc));
    return VS_E_TRANSIENT_NOT_COMMITTED;
}

void
pgroups_tick_retention(struct serve_pgroups *pg, uint64_t now_us)
{
    if (pg == NULL)
        return;
    for (struct pg_entry *e = pg->all; e; e = e->next) {
        if (e->g == NULL || !pgroup_is_settled_primary(e->g))
            continue;
        struct dpart *dp = dparts_find(pg->parts, &e->id);
        if (dp == NULL)
            continue;
        if (dp->meta_purge_gen > part_purge_generation(dp->p)) {
            int prc =
                pgroup_on_purge(e->g, dp->meta_purge_gen, vs_realtime_us());
            if (prc < 0)
                vs_log_debug(
                    "partition %u.%u.%u: purge %" PRIu64 " not proposed: %s",
                    e->id.stream_id, e->id.topic_id, e->id.partition_id,
                    dp->meta_purge_gen,
                    prc == -VS_EFATAL ? "the group stopped" : strerror(-prc));
            continue; /* retention after it */
        }
        uint64_t wm = part_retention_watermark(
            dp->p, now_us, dp->message_expiry, dp->max_bytes, 0);
        uint8_t kind = PGROUP_TRIM_RETENTION;
        uint64_t md =
            part_retention_watermark(dp->p, now_us, 0, 0, dp->meta_watermark);
        if (md > wm) {
            wm = md;
            kind = PGROUP_TRIM_DELETE_SEGMENTS;
        }
        if (wm == 0)
            continue;
        int rc = pgroup_on_trim(e->g, kind, wm, vs_realtime_us());
        if (rc < 0)
            vs_log_debug(
                "partition %u.%u.%u: trim below offset %" PRIu64
                " not proposed: %s",
                e->id.stream_id, e->id.topic_id, e->id.partition_id, wm,
                rc == -VS_EFATAL ? "the group stopped" : strerror(-rc));
    }
}

int
pgroups_autocommit(struct serve_pgroups *pg, struct dpart *dp,
                   const struct data_cmd *poll, uint64_t offset)
{
    if (pg == NULL)
        return 0;
    struct pg_entry *e = find_id(pg, &dp->id);
    if (e == NULL || e->count <= 1 || e->self_ix == PG_NONE)
        return 0;
    struct data_cmd c = *poll;
    c.kind = DATA_OFFSET_STORE;
    c.value = offset;
    c.autocommit = 1;
    c.count = 0;
    (void)autocommit_run(pg, e, &c, 0);
    return 1;
}

uint32_t
pgroups_exec(struct serve_pgroups *pg, struct dpart *dp,
             const struct data_cmd *cmd, const struct vs_hdr_request *req,
             uint8_t *data, size_t dlen, const struct gc_waiter *w,
             uint32_t hops)
{
    struct pg_entry *e = find_id(pg, &dp->id);
    if (e == NULL) {
        pg->resync = 1;
        pgroups_sync(pg);
        e = find_id(pg, &dp->id);
    }
    if (e == NULL || e->count == 0)
        return PGROUPS_PASS; /* no replica set: today's path */
    if (e->self_ix == PG_NONE ||
        (e->count == 1 && e->replicas[0] != pg->self)) {
        /* the partition lives on other nodes (a command without a waiter,
         * DeleteSegments, acts on the local files as before) */
        if (w == NULL || req == NULL)
            return cmd->kind == DATA_SEND ? VS_E_TRANSIENT_NOT_COMMITTED
                                          : PGROUPS_PASS;
        return forward(pg, e->replicas[0], cmd, req, data, dlen, w, hops);
    }
    if (e->count == 1)
        return PGROUPS_PASS;
    if (e->g == NULL)
        return e->refused ? VS_E_NOT_ACCEPTED : VS_E_TRANSIENT_NOT_COMMITTED;
    int offset_op =
        cmd->kind == DATA_OFFSET_STORE || cmd->kind == DATA_OFFSET_DELETE;
    if (cmd->kind == DATA_OFFSET_STORE && cmd->autocommit)
        return autocommit_run(pg, e, cmd, hops);
    if (cmd->kind == DATA_OFFSET_GET && w != NULL && req != NULL &&
        !pgroup_is_settled_primary(e->g)) {
        /* a store is answered once the primary applied it; a backup
         * applies it only when it hears the commit: read on the primary
         * (the local replica when it is unreachable) */
        int p = pgroup_primary(e->g);
        if (p >= 0 && p < e->count && e->replicas[p] != pg->self &&
            pg->mesh != NULL && hops < PGROUPS_HOPS_MAX &&
            mesh_up(pg->mesh, e->replicas[p]))
            return forward(pg, e->replicas[p], cmd, req, data, dlen, w, hops);
    }
    if (cmd->kind != DATA_SEND && !offset_op)
        return PGROUPS_PASS; /* the local replica; polls capped by pj */
    if (w == NULL || req == NULL)
        return VS_E_TRANSIENT_NOT_COMMITTED;
    struct pgroup_offset_op oo;
    uint8_t ob[PGROUP_OFFSET_BODY];
    if (offset_op) {
        memset(&oo, 0, sizeof(oo));
        oo.kind = cmd->consumer_kind == 2 ? PART_GROUP : PART_CONSUMER;
        oo.id = cmd->consumer_id;
        oo.group_created_op = cmd->group_created_op;
        oo.offset = cmd->kind == DATA_OFFSET_STORE ? cmd->value : 0;
        pgroup_offset_encode(&oo, ob);
    }
    /* a client's sends keep its request number (at-least-once): the
     * request checksum tells a resend from the next batch */
    struct vs_hdr_request rq = *req;
    if (vs_u128_is_zero(rq.request_checksum))
        rq.request_checksum =
            offset_op ? vs_checksum(ob, sizeof(ob)) : vs_checksum(data, dlen);
    /* the waiter first: a group may reply at once (a deduplicated
     * resend of a committed send) */
    struct pg_wait *pw = vs_xcalloc(1, sizeof(*pw));
    pw->gid = e->gid;
    pw->client = rq.client;
    pw->request = rq.request;
    pw->checksum = rq.request_checksum;
    if (!offset_op && dlen >= BATCH_HEADER_SIZE) {
        pw->messages = batch_count(data);
        pw->bytes = dlen;
    }
    pw->w = *w;
    pw->deadline_ms = mono_ms() + PGROUPS_WAIT_TIMEOUT_MS;
    pw->next = pg->waits;
    pg->waits = pw;
    enum batch_err berr = BATCH_OK;
    int rc;
    if (offset_op)
        rc = pgroup_on_offset(e->g, &rq,
                              cmd->kind == DATA_OFFSET_STORE
                                  ? VS_OP_STORE_CONSUMER_OFFSET
                                  : VS_OP_DELETE_CONSUMER_OFFSET,
                              &oo, vs_realtime_us());
    else
        rc = pgroup_on_send(e->g, &rq, data, dlen, vs_realtime_us(), &berr);
    if (rc == 0) {
        pg->n.proposed++;
        return PGROUPS_DEFERRED;
    }
    wait_drop(pg, pw); /* refused: answered now */
    if (rc == -EREMOTE) {
        int p = pgroup_primary(e->g);
        if (p < 0 || p >= e->count)
            return VS_E_TRANSIENT_NOT_COMMITTED;
        return forward(pg, e->replicas[p], cmd, req, data, dlen, w, hops);
    }
    if (rc == -EINVAL && offset_op)
        return VS_E_INVALID_COMMAND;
    if (rc == -EINVAL) {
        vs_log_debug("partition %u.%u.%u: batch refused: %s", cmd->stream_id,
                     cmd->topic_id, cmd->partition_id, batch_err_str(berr));
        return batch_err_code(berr);
    }
    if (rc == -ENOSPC)
        return VS_E_CANNOT_SAVE_MESSAGES;
    /* -EAGAIN no settled primary, -EBUSY pipeline full, -EALREADY the
     * client's previous proposal not committed yet, -VS_EFATAL the group
     * stopped (the tick reopens it): the client resends */
    return VS_E_TRANSIENT_NOT_COMMITTED;
}

/* --------------------------------------------------------- lifecycle */

struct serve_pgroups *
pgroups_create(struct serve *s, struct dparts *parts, struct serve_gcommit *gc,
               pgroups_exec_fn *exec, gc_answer_fn *answer)
{
    const struct vs_config *cfg = s->cfg;
    uint32_t nodes = sup_addr_list_count(cfg->replica_addrs);
    if (!cfg->partition_replication || nodes < 2 || gc == NULL)
        return NULL;
    struct serve_pgroups *pg = vs_xcalloc(1, sizeof(*pg));
    pg->s = s;
    pg->parts = parts;
    pg->gc = gc;
    pg->exec = exec;
    pg->answer = answer;
    pg->self = (uint8_t)cfg->replica_id;
    pg->nodes = (uint8_t)nodes;
    pg->nonce = vs_monotonic_ns();
    pg->env.ctx = pg;
    pg->env.send = env_send;
    pg->env.reply = env_reply;
    pg->env.sync = env_sync;
    pg->env.state_sync = env_state_sync;
    pg->env.files_sync = env_files_sync;
    pg->fetch_budget.max = PGROUPS_FETCHES_MAX;
    pheld_init(&pg->held, held_commit, held_answer, pg);
    vs_wbuf_init(&pg->out);
    vs_wbuf_init(&pg->rx);
    vs_wbuf_init(&pg->tx);
    pg->ready_ev = event_new(s->base, -1, 0, on_ready, pg);
    if (pg->ready_ev == NULL) {
        pgroups_destroy(pg);
        errno = ENOMEM;
        return NULL;
    }
    parts->on_close = on_part_close;
    parts->on_close_ctx = pg;
    vs_log_info("shard %u: partition replication on (experimental): replica "
                "%u of %u nodes",
                s->ctx->slot, pg->self, nodes);
    return pg;
}

void
pgroups_destroy(struct serve_pgroups *pg)
{
    if (pg == NULL)
        return;
    if (pg->parts->on_close_ctx == pg) {
        pg->parts->on_close = NULL;
        pg->parts->on_close_ctx = NULL;
    }
    while (pg->all != NULL) {
        struct pg_entry *e = pg->all;
        pg->all = e->next;
        if (e->g != NULL)
            pgroup_close(e->g);
        e->g = NULL;
        /* an fsync in flight completes nowhere: gcommit_destroy follows
         * without another loop pass */
        free(e);
    }
    while (pg->waits) {
        struct pg_wait *w = pg->waits;
        pg->waits = w->next;
        free(w);
    }
    while (pg->fwds) {
        struct pg_fwd *f = pg->fwds;
        pg->fwds = f->next;
        free(f);
    }
    pheld_clear(&pg->held);
    while (pg->ready_head) {
        struct pg_ready *r = pg->ready_head;
        pg->ready_head = r->next;
        free(r->body);
        free(r);
    }
    if (pg->ready_ev != NULL)
        event_free(pg->ready_ev);
    vs_wbuf_fini(&pg->out);
    vs_wbuf_fini(&pg->rx);
    vs_wbuf_fini(&pg->tx);
    free(pg);
}

void
pgroups_counters(const struct serve_pgroups *pg, struct pgroups_counters *out)
{
    memset(out, 0, sizeof(*out));
    if (pg == NULL)
        return;
    *out = pg->n;
    out->held = pg->held.held;
    out->held_late = pg->held.late;
}
