/*
 * shard/serve/gcommit.c - group commit of a data shard's appends; see
 * gcommit.h. Threads: the loop thread (everything but sync_thread) and
 * GC_SYNC_THREADS sync threads (sync_thread: fdatasync of dup'd fds,
 * nothing else; the files of one group are synced in parallel, each by
 * one thread, because the device completes concurrent flushes together:
 * one fdatasync at a time left most of its bandwidth unused).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/mem.h"
#include "shard/data/batch.h"
#include "shard/data/pjournal.h"
#include "shard/serve/gcommit.h"
#include "shard/serve/server.h"

#define GC_SYNC_THREADS 4

/* One partition of a group: the write of its held send (if any), its
 * fsync target, and the thread's result. */
struct gc_item {
    struct part_id id;
    struct part_sync_target t;
    char path[600];
    int fd; /* dup'd; -1: no fsync wanted (an interval send's write) */
    int err;
    int journal; /* a replicated partition's journal file (no dpart) */
    struct part_write *pw; /* the held send's write (in flight.holds) */
    size_t hold;           /* its index in flight.holds */
    int synced;            /* the thread's fdatasync ran and succeeded */
};

/* A journal fsync of a replicated partition (gcommit_journal_sync). */
struct gc_jsync {
    uint64_t key;
    struct pj_sync_target t;
    gc_jdone_fn *done;
    void *ctx;
    int fd[2]; /* dup'd log and vsr fds, until handed to the items */
};

/* A held send: its write (begun on the loop, run by a sync thread), and
 * its answer once written (interval) or written and durable
 * (every-batch). */
struct gc_hold {
    struct gc_waiter w;
    uint8_t body[32];
    size_t len;
    struct part_id id;
    struct part_write pw; /* has_write: begun, run by a sync thread */
    int has_write;
    void *own;       /* the buffer pw.buf lies in: freed when answered */
    int every;       /* an every-batch partition's */
    uint32_t status; /* on_done: the answer's status */
};

struct gc_group {
    struct part_id *ids; /* partitions to fsync (each once) */
    size_t n_ids, cap_ids;
    struct gc_hold *holds;
    size_t n_holds, cap_holds;
    struct gc_item *items; /* sealed */
    size_t n_items;
    struct gc_jsync *js; /* journal fsyncs */
    size_t n_js, cap_js;
};

/* A send waiting for its partition's previous batch to be durable. */
struct gc_queued {
    struct data_cmd cmd;
    uint8_t *batch; /* within own */
    size_t len;
    void *own;
    struct gc_waiter w;
    uint32_t status; /* run_queued: the refusal to answer */
    struct gc_queued *next;
};

struct serve_gcommit {
    struct serve *s;
    struct dparts *parts;
    gc_exec_fn *exec;
    gc_answer_fn *answer;
    int offload; /* writes on the sync threads (else on the loop) */
    struct gc_group next, flight;
    int in_flight; /* flight handed to the thread */
    struct gc_queued *q_head, *q_tail;
    struct event *kick_ev, *done_ev;
    int kick_pending;
    int efd;
    struct vs_wbuf out;
    struct gc_counters n;
    /* thread hand-off (mu): the loop sets work, the thread that syncs
     * the group's last item clears it; claim = the next item to take,
     * done = items synced */
    pthread_t thread[GC_SYNC_THREADS];
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int work, stop;
    size_t claim, done;
};

static uint64_t
now_ms(void)
{
    return vs_monotonic_ns() / 1000000u;
}

static int
id_eq(const struct part_id *a, const struct part_id *b)
{
    return a->stream_id == b->stream_id && a->topic_id == b->topic_id &&
           a->partition_id == b->partition_id && a->created_op == b->created_op;
}

static int
group_has(const struct gc_group *gr, const struct part_id *id)
{
    for (size_t i = 0; i < gr->n_ids; i++)
        if (id_eq(&gr->ids[i], id))
            return 1;
    return 0;
}

static void
group_add_id(struct gc_group *gr, const struct part_id *id)
{
    if (group_has(gr, id))
        return;
    if (gr->n_ids == gr->cap_ids) {
        gr->cap_ids = gr->cap_ids ? 2 * gr->cap_ids : 16;
        gr->ids = vs_xrealloc(gr->ids, gr->cap_ids * sizeof(*gr->ids));
    }
    gr->ids[gr->n_ids++] = *id;
}

static struct gc_hold *
group_add_hold(struct gc_group *gr, const struct gc_waiter *w,
               const uint8_t *body, size_t len)
{
    if (gr->n_holds == gr->cap_holds) {
        gr->cap_holds = gr->cap_holds ? 2 * gr->cap_holds : 16;
        gr->holds = vs_xrealloc(gr->holds, gr->cap_holds * sizeof(*gr->holds));
    }
    struct gc_hold *h = &gr->holds[gr->n_holds++];
    memset(h, 0, sizeof(*h));
    h->w = *w;
    h->len = len < sizeof(h->body) ? len : sizeof(h->body);
    memcpy(h->body, body, h->len);
    h->pw.fd = -1;
    return h;
}

/* Lets go of the holds' writes and buffers (answered, or stopping). */
static void
holds_free(struct gc_hold *holds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        part_write_release(&holds[i].pw);
        free(holds[i].own);
        holds[i].own = NULL;
    }
}

static void
group_clear(struct gc_group *gr)
{
    for (size_t i = 0; i < gr->n_js; i++)
        for (int k = 0; k < 2; k++)
            if (gr->js[i].fd[k] >= 0)
                close(gr->js[i].fd[k]);
    gr->n_js = 0;
    gr->n_ids = 0;
    holds_free(gr->holds, gr->n_holds);
    gr->n_holds = 0;
    free(gr->items);
    gr->items = NULL;
    gr->n_items = 0;
}

static void
group_fini(struct gc_group *gr)
{
    for (size_t i = 0; i < gr->n_items; i++)
        if (gr->items[i].fd >= 0)
            close(gr->items[i].fd);
    group_clear(gr);
    free(gr->ids);
    free(gr->holds);
    free(gr->js);
    memset(gr, 0, sizeof(*gr));
}

/* 1 if the partition is in the next group or in the one in flight. */
static int
in_some_group(const struct serve_gcommit *g, const struct part_id *id)
{
    if (group_has(&g->next, id))
        return 1;
    return g->in_flight && group_has(&g->flight, id);
}

static void *
sync_thread(void *arg)
{
    struct serve_gcommit *g = arg;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->stop && !(g->work && g->claim < g->flight.n_items))
            pthread_cond_wait(&g->cv, &g->mu);
        if (!(g->work && g->claim < g->flight.n_items))
            break; /* stopping, nothing left to take */
        /* the loop does not touch flight.items while work is set; each
         * item is taken by exactly one thread */
        struct gc_item *it = &g->flight.items[g->claim++];
        pthread_mutex_unlock(&g->mu);
        /* the write first, in the item's own thread: a partition's
         * bytes are written and then synced by the same thread, and a
         * partition has one item per group (order per partition) */
        if (it->pw != NULL)
            part_write_run(it->pw);
        if (it->fd >= 0 && (it->pw == NULL || it->pw->err == 0)) {
            int rc;
            do
                rc = fdatasync(it->fd);
            while (rc == -1 && errno == EINTR);
            it->err = rc == -1 ? errno : 0;
            it->synced = rc == 0;
        }
        if (it->fd >= 0)
            close(it->fd);
        it->fd = -1;
        pthread_mutex_lock(&g->mu);
        if (++g->done == g->flight.n_items) {
            g->work = 0;
            uint64_t one = 1;
            ssize_t n;
            do
                n = write(g->efd, &one, sizeof(one));
            while (n == -1 && errno == EINTR);
        }
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Moves the next group into flight and starts the thread on it. */
static void
seal_and_submit(struct serve_gcommit *g)
{
    if (g->in_flight ||
        (g->next.n_ids == 0 && g->next.n_holds == 0 && g->next.n_js == 0))
        return;
    struct gc_group tmp = g->flight;
    g->flight = g->next;
    g->next = tmp;
    group_clear(&g->next);
    struct gc_group *f = &g->flight;
    f->items = vs_xcalloc(f->n_ids + 2 * f->n_js + 1, sizeof(*f->items));
    f->n_items = 0;
    for (size_t i = 0; i < f->n_js; i++)
        for (int k = 0; k < 2; k++) {
            if (f->js[i].fd[k] < 0)
                continue; /* a superblock fsync: one file */
            int state = k == 1 && f->js[i].t.log_fd < 0;
            struct gc_item *it = &f->items[f->n_items++];
            it->fd = f->js[i].fd[k];
            f->js[i].fd[k] = -1; /* closed by the thread that syncs it */
            it->journal = 1;
            snprintf(it->path, sizeof(it->path),
                     "the %s file of partition group %016llx",
                     k == 0  ? "log"
                     : state ? "superblock"
                             : "journal",
                     (unsigned long long)f->js[i].key);
        }
    uint64_t now = now_ms();
    for (size_t i = 0; i < f->n_ids; i++) {
        struct dpart *dp = dparts_find(g->parts, &f->ids[i]);
        struct gc_item *it = &f->items[f->n_items];
        if (dp == NULL || part_sync_target(dp->p, &it->t) != 0)
            continue; /* deleted meanwhile: nothing left to make durable */
        it->id = f->ids[i];
        it->fd = -1;
        it->err = 0;
        /* the partition's held send, if any (one: a later one queues
         * while its write is pending) */
        for (size_t k = 0; k < f->n_holds; k++)
            if (f->holds[k].has_write && id_eq(&f->holds[k].id, &it->id)) {
                it->pw = &f->holds[k].pw;
                it->hold = k;
            }
        if (part_every_batch(dp->p) || part_sync_due(dp->p, now)) {
            it->fd = fcntl(it->t.fd, F_DUPFD_CLOEXEC, 0);
            if (it->fd < 0)
                shard_fatal(g->s->ctx, "fsync of %s: dup: %s", it->t.path,
                            strerror(errno));
        }
        snprintf(it->path, sizeof(it->path), "%s", it->t.path);
        it->t.path = NULL; /* the handle's string may go; use it->path */
        f->n_items++;
    }
    g->in_flight = 1;
    g->n.groups++;
    if (f->n_items == 0) { /* nothing to sync: completes at once */
        uint64_t one = 1;
        ssize_t n;
        do
            n = write(g->efd, &one, sizeof(one));
        while (n == -1 && errno == EINTR);
        return;
    }
    pthread_mutex_lock(&g->mu);
    g->claim = 0;
    g->done = 0;
    g->work = 1;
    /* as many threads as there are items (a thread that finishes one
     * takes the next): waking all four for a group of one costs a
     * context switch each for nothing */
    for (size_t i = 0; i < f->n_items && i < GC_SYNC_THREADS; i++)
        pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void
on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct serve_gcommit *g = arg;
    g->kick_pending = 0;
    seal_and_submit(g);
}

/* Seals after the callbacks already active in this loop pass ran, so
 * requests that arrived together share the fsync. */
static void
kick(struct serve_gcommit *g)
{
    if (g->in_flight || g->kick_pending)
        return;
    g->kick_pending = 1;
    event_active(g->kick_ev, EV_TIMEOUT, 1);
}

/* Begins the append now (the partition has no batch waiting) and holds
 * w; the write runs with the next group. `own`: the buffer batch lies
 * in, taken (NULL: the stamped batch is copied once the begin accepted
 * it). */
static uint32_t
append_and_hold(struct serve_gcommit *g, struct dpart *dp,
                const struct data_cmd *cmd, uint8_t *batch, size_t len,
                void *own, const struct gc_waiter *w)
{
    vs_wbuf_reset(&g->out);
    struct part_write pw;
    memset(&pw, 0, sizeof(pw));
    pw.fd = -1;
    uint32_t st =
        g->exec(g->s, dp, cmd, batch, len, &g->out, g->offload ? &pw : NULL);
    if (st != 0 || !g->offload) { /* refused, or already written */
        free(own);
        own = NULL;
    }
    if (st != 0)
        return st;
    if (!g->offload) {
        group_add_id(&g->next, &dp->id);
        struct gc_hold *h =
            group_add_hold(&g->next, w, g->out.data, g->out.len);
        h->id = dp->id;
        h->every = part_every_batch(dp->p);
        g->n.held++;
        kick(g);
        return 0;
    }
    if (own == NULL) { /* the caller's buffer goes when we return */
        own = vs_xmalloc(len ? len : 1);
        memcpy(own, batch, len);
        pw.buf = own;
    }
    group_add_id(&g->next, &dp->id);
    struct gc_hold *h = group_add_hold(&g->next, w, g->out.data, g->out.len);
    h->id = dp->id;
    h->pw = pw;
    h->has_write = 1;
    h->own = own;
    h->every = part_every_batch(dp->p);
    g->n.held++;
    kick(g);
    return 0;
}

/* 1 while a send to dp must wait: its write is pending, or (every-batch)
 * its previous batch is not durable yet. */
static int
waiting(const struct dpart *dp)
{
    if (part_write_pending(dp->p))
        return 1;
    return part_every_batch(dp->p) && part_sync_due(dp->p, 0);
}

uint32_t
gcommit_send(struct serve_gcommit *g, struct dpart *dp,
             const struct data_cmd *cmd, uint8_t *batch, size_t len,
             const struct gc_waiter *w, void **own)
{
    void *mine = NULL;
    if (own != NULL && *own != NULL) { /* batch lies in *own: take it */
        mine = *own;
        *own = NULL;
    }
    int queued_same = 0;
    for (struct gc_queued *q = g->q_head; q && !queued_same; q = q->next)
        queued_same = q->cmd.stream_id == cmd->stream_id &&
                      q->cmd.topic_id == cmd->topic_id &&
                      q->cmd.partition_id == cmd->partition_id &&
                      q->cmd.created_op == cmd->created_op;
    if (!waiting(dp) && !queued_same)
        return append_and_hold(g, dp, cmd, batch, len, mine, w);
    /* behind the partition's previous batch: kept (copied only when the
     * caller's buffer is not ours to take), appended after it, in
     * arrival order */
    struct gc_queued *q = vs_xcalloc(1, sizeof(*q));
    q->cmd = *cmd;
    if (mine != NULL) {
        q->own = mine;
        q->batch = batch;
    } else {
        q->own = vs_xmalloc(len ? len : 1);
        memcpy(q->own, batch, len);
        q->batch = q->own;
    }
    q->len = len;
    q->w = *w;
    if (g->q_tail)
        g->q_tail->next = q;
    else
        g->q_head = q;
    g->q_tail = q;
    g->n.queued++;
    kick(g);
    return 0;
}

/* Runs the queued sends whose partition has no batch waiting any more,
 * in arrival order (a partition's later sends stay behind its first).
 * Refusals are answered only once the queue is consistent again: an
 * answer lets its connection send, which may queue behind these. */
static void
run_queued(struct serve_gcommit *g)
{
    struct gc_queued **pp = &g->q_head, *q, *refused = NULL;
    struct part_id blocked[64];
    size_t n_blocked = 0;
    g->q_tail = NULL;
    while ((q = *pp) != NULL) {
        struct part_id id = {
            .stream_id = q->cmd.stream_id,
            .topic_id = q->cmd.topic_id,
            .partition_id = q->cmd.partition_id,
            .created_op = q->cmd.created_op,
        };
        int behind = n_blocked == sizeof(blocked) / sizeof(blocked[0]);
        for (size_t i = 0; i < n_blocked && !behind; i++)
            behind = id_eq(&blocked[i], &id);
        struct dpart *dp = behind ? NULL : dparts_find(g->parts, &id);
        uint32_t st = 0;
        if (!behind && dp == NULL) {
            st = VS_E_RESOURCE_NOT_FOUND; /* deleted meanwhile */
            free(q->own);
        } else if (!behind && !waiting(dp)) {
            /* the hold takes q->own (or frees it on a refusal) */
            st = append_and_hold(g, dp, &q->cmd, q->batch, q->len, q->own,
                                 &q->w);
        } else {
            if (!behind)
                blocked[n_blocked++] = id;
            g->q_tail = q;
            pp = &q->next;
            continue;
        }
        *pp = q->next;
        q->own = NULL;
        q->batch = NULL;
        if (st != 0) {
            q->status = st;
            q->next = refused;
            refused = q;
        } else {
            free(q);
        }
    }
    while (refused != NULL) {
        q = refused;
        refused = q->next;
        g->answer(g->s, &q->w, q->status, NULL, 0);
        free(q);
    }
}

/* The end of a held send's write on the loop: its status. */
static uint32_t
end_write(struct serve_gcommit *g, struct gc_hold *h, struct dpart *dp)
{
    if (dp == NULL) { /* deleted meanwhile */
        part_write_release(&h->pw);
        return VS_E_RESOURCE_NOT_FOUND;
    }
    int rc = part_append_end(dp->p, &h->pw);
    dparts_check_fatal(g->parts, rc, "append");
    if (rc == -ENOSPC) {
        vs_log_warn("partition %u.%u.%u: out of space: send refused",
                    h->id.stream_id, h->id.topic_id, h->id.partition_id);
        return VS_E_CANNOT_SAVE_MESSAGES;
    }
    if (rc == -ECANCELED) /* purged meanwhile: the client resends */
        return VS_E_TRANSIENT_NOT_COMMITTED;
    if (rc != 0)
        return VS_E_CANNOT_APPEND_TO_FILE;
    dparts_stats_note(g->parts, dp);
    vs_metrics_add(VS_M_MESSAGES_SENT, batch_count(h->pw.buf));
    vs_metrics_add(VS_M_MESSAGES_SENT_BYTES, h->pw.len);
    return 0;
}

static void
on_done(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct serve_gcommit *g = arg;
    uint64_t v;
    ssize_t r;
    do
        r = read(fd, &v, sizeof(v));
    while (r == -1 && errno == EINTR);
    pthread_mutex_lock(&g->mu);
    int busy = g->work;
    pthread_mutex_unlock(&g->mu);
    if (busy || !g->in_flight)
        return;
    struct gc_group *f = &g->flight;
    uint64_t now = now_ms();
    size_t n = f->n_holds;
    struct gc_hold *holds = f->holds;
    char *ended = vs_xcalloc(n ? n : 1, 1);
    for (size_t i = 0; i < f->n_items; i++) {
        struct gc_item *it = &f->items[i];
        if (it->err != 0)
            shard_fatal(g->s->ctx, "fsync of %s: %s", it->path,
                        strerror(it->err));
        if (it->journal) {
            g->n.fsyncs++;
            continue;
        }
        struct dpart *dp = dparts_find(g->parts, &it->id);
        struct part_sync_target t = it->t;
        if (it->pw != NULL) {
            struct gc_hold *h = &holds[it->hold];
            h->status = end_write(g, h, dp);
            ended[it->hold] = 1;
            if (h->status == 0) { /* the fsync covered the batch too */
                t.unsynced_bytes += h->pw.len;
                t.next_offset = h->pw.next;
            } else {
                it->synced = 0; /* nothing of it to mark */
            }
        }
        if (dp != NULL && it->synced) {
            part_sync_done(dp->p, &t, now);
            g->n.fsyncs++;
        }
    }
    /* writes whose partition had no item (deleted, or no active segment) */
    for (size_t k = 0; k < n; k++)
        if (holds[k].has_write && !ended[k]) {
            struct dpart *dp = dparts_find(g->parts, &holds[k].id);
            if (dp != NULL && holds[k].pw.err == 0)
                holds[k].pw.err = -EIO; /* never written */
            holds[k].status = end_write(g, &holds[k], dp);
        }
    free(ended);
    g->in_flight = 0;
    f->holds = NULL;
    f->n_holds = 0;
    f->cap_holds = 0;
    size_t n_js = f->n_js;
    struct gc_jsync *js = f->js;
    f->js = NULL;
    f->n_js = 0;
    f->cap_js = 0;
    group_clear(f);
    /* the journals' completions (their groups go on: PrepareOk) */
    for (size_t i = 0; i < n_js; i++)
        js[i].done(js[i].ctx, js[i].key, &js[i].t);
    free(js);
    /* interval partitions written now: their fsync when due */
    for (size_t k = 0; k < n; k++)
        if (holds[k].status == 0 && !holds[k].every) {
            struct dpart *dp = dparts_find(g->parts, &holds[k].id);
            if (dp != NULL)
                gcommit_note(g, dp, now);
        }
    /* queued sends first: they arrived before anything the answers
     * below let their connections send */
    run_queued(g);
    /* answers only now that their batches are written (and durable
     * under every-batch) */
    for (size_t i = 0; i < n; i++)
        g->answer(g->s, &holds[i].w, holds[i].status,
                  holds[i].status == 0 ? holds[i].body : NULL,
                  holds[i].status == 0 ? holds[i].len : 0);
    holds_free(holds, n);
    free(holds);
    seal_and_submit(g);
}

void
gcommit_note(struct serve_gcommit *g, struct dpart *dp, uint64_t now)
{
    if (!part_sync_due(dp->p, now) || in_some_group(g, &dp->id))
        return;
    group_add_id(&g->next, &dp->id);
    kick(g);
}

void
gcommit_journal_sync(struct serve_gcommit *g, uint64_t key,
                     const struct pj_sync_target *t, gc_jdone_fn *done,
                     void *ctx)
{
    struct gc_group *gr = &g->next;
    if (gr->n_js == gr->cap_js) {
        gr->cap_js = gr->cap_js ? 2 * gr->cap_js : 16;
        gr->js = vs_xrealloc(gr->js, gr->cap_js * sizeof(*gr->js));
    }
    struct gc_jsync *j = &gr->js[gr->n_js];
    memset(j, 0, sizeof(*j));
    j->key = key;
    j->t = *t;
    j->done = done;
    j->ctx = ctx;
    int src[2] = {t->log_fd, t->vsr_fd};
    for (int k = 0; k < 2; k++) {
        if (src[k] < 0) { /* a superblock fsync has one file */
            j->fd[k] = -1;
            continue;
        }
        j->fd[k] = fcntl(src[k], F_DUPFD_CLOEXEC, 0);
        if (j->fd[k] < 0)
            shard_fatal(g->s->ctx, "fsync of partition group %016llx: dup: %s",
                        (unsigned long long)key, strerror(errno));
    }
    gr->n_js++;
    kick(g);
}

void
gcommit_tick(struct serve_gcommit *g, uint64_t now)
{
    for (struct dpart *dp = g->parts->all; dp; dp = dp->next)
        if (!part_every_batch(dp->p))
            gcommit_note(g, dp, now);
}

void
gcommit_counters(const struct serve_gcommit *g, struct gc_counters *out)
{
    *out = g->n;
}

struct serve_gcommit *
gcommit_create(struct serve *s, struct dparts *parts, gc_exec_fn *exec,
               gc_answer_fn *answer, int offload)
{
    struct serve_gcommit *g = vs_xcalloc(1, sizeof(*g));
    int err = 0;
    g->efd = -1;
    g->s = s;
    g->parts = parts;
    g->exec = exec;
    g->answer = answer;
    g->offload = offload;
    vs_wbuf_init(&g->out);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (g->efd == -1) {
        err = errno;
        goto fail;
    }
    g->done_ev = event_new(s->base, g->efd, EV_READ | EV_PERSIST, on_done, g);
    g->kick_ev = event_new(s->base, -1, 0, on_kick, g);
    if (g->done_ev == NULL || g->kick_ev == NULL ||
        event_add(g->done_ev, NULL) != 0) {
        err = ENOMEM;
        goto fail;
    }
    for (int i = 0; i < GC_SYNC_THREADS; i++) {
        err = pthread_create(&g->thread[i], NULL, sync_thread, g);
        if (err != 0)
            goto fail;
        g->started++;
    }
    return g;
fail:
    gcommit_destroy(g);
    errno = err;
    return NULL;
}

void
gcommit_destroy(struct serve_gcommit *g)
{
    if (g == NULL)
        return;
    if (g->started > 0) {
        pthread_mutex_lock(&g->mu);
        g->stop = 1;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        for (int i = 0; i < g->started; i++)
            pthread_join(g->thread[i], NULL);
    }
    if (g->done_ev)
        event_free(g->done_ev);
    if (g->kick_ev)
        event_free(g->kick_ev);
    if (g->efd >= 0)
        close(g->efd);
    while (g->q_head) {
        struct gc_queued *q = g->q_head;
        g->q_head = q->next;
        free(q->own);
        free(q);
    }
    group_fini(&g->next);
    group_fini(&g->flight);
    vs_wbuf_fini(&g->out);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}
