/*
 * shard/zero/groups0.c - shard 0's consumer-group liveness bookkeeping; see
 * groups0.h for the rules.
 *
 * Storage: small heap arrays searched linearly (bindings: one per
 * registered client, at most the client table's capacity; pending
 * revocations: at most the assignments). A sweep runs once a second, so
 * O(n) scans are fine at these sizes.
 * Invariants: one binding per client id; no clock, no I/O.
 * Process: shard 0 only.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "shard/zero/groups0.h"
#include "shard/meta/index.h"
#include "shard/meta/lookup.h"
#include "shard/meta/state.h"

struct groups0_bind {
    struct vs_u128 client;
    uint32_t slot;
    uint64_t inc;
    uint64_t conn_id;
};

struct groups0_pending {
    struct groups0_revoke r;
    uint64_t since_us;
    int seen; /* marked during a scan */
};

/* The in-flight set last reported by one data shard. */
struct groups0_inflight {
    uint32_t slot;
    uint64_t inc;
    struct fwd_group_part *e;
    size_t n;
};

struct groups0 {
    struct groups0_bind *b;
    size_t nb, capb;
    struct groups0_pending *p;
    size_t np, capp;
    struct groups0_inflight *fl;
    size_t nfl;
};

struct groups0 *
groups0_create(void)
{
    return vs_xcalloc(1, sizeof(struct groups0));
}

void
groups0_destroy(struct groups0 *g)
{
    if (g == NULL)
        return;
    free(g->b);
    free(g->p);
    for (size_t i = 0; i < g->nfl; i++)
        free(g->fl[i].e);
    free(g->fl);
    free(g);
}

static struct groups0_bind *
groups0_find(const struct groups0 *g, struct vs_u128 client)
{
    for (size_t i = 0; i < g->nb; i++)
        if (vs_u128_eq(g->b[i].client, client))
            return &g->b[i];
    return NULL;
}

static void
groups0_drop(struct groups0 *g, struct groups0_bind *b)
{
    *b = g->b[--g->nb];
}

void
groups0_bind(struct groups0 *g, struct vs_u128 client, uint32_t slot,
             uint64_t inc, uint64_t conn_id)
{
    struct groups0_bind *b = groups0_find(g, client);
    if (b == NULL) {
        if (g->nb == g->capb) {
            g->capb = g->capb ? g->capb * 2 : 16;
            g->b = vs_xrealloc(g->b, g->capb * sizeof(*g->b));
        }
        b = &g->b[g->nb++];
        b->client = client;
    }
    b->slot = slot;
    b->inc = inc;
    b->conn_id = conn_id;
}

void
groups0_unbind(struct groups0 *g, struct vs_u128 client)
{
    struct groups0_bind *b = groups0_find(g, client);
    if (b != NULL)
        groups0_drop(g, b);
}

int
groups0_rebind(struct groups0 *g, struct vs_u128 client, uint32_t from_slot,
               uint64_t from_inc, uint64_t from_conn, uint32_t slot,
               uint64_t inc, uint64_t conn_id)
{
    struct groups0_bind *b = groups0_find(g, client);
    if (b == NULL || b->slot != from_slot || b->inc != from_inc ||
        b->conn_id != from_conn)
        return 0;
    b->slot = slot;
    b->inc = inc;
    b->conn_id = conn_id;
    return 1;
}

int
groups0_closed(struct groups0 *g, struct vs_u128 client, uint32_t slot,
               uint64_t inc, uint64_t conn_id)
{
    struct groups0_bind *b = groups0_find(g, client);
    if (b == NULL)
        return 1;
    if (b->slot != slot || b->inc != inc || b->conn_id != conn_id)
        return 0; /* an older connection; the client lives elsewhere */
    groups0_drop(g, b);
    return 1;
}

void
groups0_sweep_dead(struct groups0 *g, groups0_incarnation_fn *fn, void *ctx,
                   struct vs_u128 **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < g->nb;) {
        if (fn(ctx, g->b[i].slot) == g->b[i].inc) {
            i++;
            continue;
        }
        *out = vs_xrealloc(*out, (*n + 1) * sizeof(**out));
        (*out)[(*n)++] = g->b[i].client;
        groups0_drop(g, &g->b[i]);
    }
}

int
groups0_is_member(const void *st, struct vs_u128 client)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    uint32_t cap = meta_tab_cap(st, META_TAB_MEMBER);
    uint32_t seen = 0;
    for (uint32_t i = 0; i < cap && seen < h->count[META_TAB_MEMBER]; i++) {
        const struct meta_member *m = meta_rec_c(st, META_TAB_MEMBER, i);
        if (!m->in_use)
            continue;
        seen++;
        if (vs_u128_eq(m->client_id, client))
            return 1;
    }
    return 0;
}

static struct groups0_pending *
groups0_pending_find(struct groups0 *g, const struct meta_assign *a)
{
    for (size_t i = 0; i < g->np; i++) {
        const struct groups0_revoke *r = &g->p[i].r;
        if (r->stream_id == a->stream_id && r->topic_id == a->topic_id &&
            r->group_id == a->group_id && r->partition_id == a->partition_id)
            return &g->p[i];
    }
    return NULL;
}

void
groups0_due_revocations(struct groups0 *g, const void *st, uint64_t now_us,
                        uint64_t timeout_us, struct groups0_revoke **out,
                        size_t *n)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    uint32_t cap = meta_tab_cap(st, META_TAB_ASSIGN);
    uint32_t seen = 0;
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < g->np; i++)
        g->p[i].seen = 0;
    for (uint32_t i = 0; i < cap && seen < h->count[META_TAB_ASSIGN]; i++) {
        const struct meta_assign *a = meta_rec_c(st, META_TAB_ASSIGN, i);
        struct groups0_pending *p;
        if (!a->in_use)
            continue;
        seen++;
        if (a->revoke_to == META_NONE)
            continue;
        p = groups0_pending_find(g, a);
        if (p == NULL) {
            if (g->np == g->capp) {
                g->capp = g->capp ? g->capp * 2 : 16;
                g->p = vs_xrealloc(g->p, g->capp * sizeof(*g->p));
            }
            p = &g->p[g->np++];
            p->r.stream_id = a->stream_id;
            p->r.topic_id = a->topic_id;
            p->r.group_id = a->group_id;
            p->r.partition_id = a->partition_id;
            p->since_us = now_us;
        }
        p->seen = 1;
        if (now_us - p->since_us >= timeout_us) {
            *out = vs_xrealloc(*out, (*n + 1) * sizeof(**out));
            (*out)[(*n)++] = p->r;
        }
    }
    for (size_t i = 0; i < g->np;) {
        if (g->p[i].seen)
            i++;
        else
            g->p[i] = g->p[--g->np];
    }
}

int
groups0_silent(const struct groups0 *g, struct vs_u128 client, uint32_t slot,
               uint64_t inc, uint64_t conn_id)
{
    const struct groups0_bind *b = groups0_find(g, client);
    if (b == NULL)
        return 1;
    return b->slot == slot && b->inc == inc && b->conn_id == conn_id;
}

int
groups0_revoke_current(const void *st, const struct fwd_group_part *e)
{
    const struct meta_group *grp =
        meta_group_by_id(st, e->stream_id, e->topic_id, e->group_id);
    if (grp == NULL || grp->created_op != e->group_created_op)
        return 0;
    const struct meta_assign *a = meta_assign_get(st, e->stream_id, e->topic_id,
                                                  e->group_id, e->partition_id);
    return a != NULL && a->revoke_to != META_NONE && a->owner == e->owner &&
           a->revoke_to == e->revoke_to;
}

void
groups0_set_inflight(struct groups0 *g, uint32_t slot, uint64_t inc,
                     const struct fwd_group_part *e, size_t n)
{
    struct groups0_inflight *f = NULL;
    for (size_t i = 0; i < g->nfl; i++)
        if (g->fl[i].slot == slot)
            f = &g->fl[i];
    if (f == NULL) {
        g->fl = vs_xrealloc(g->fl, (g->nfl + 1) * sizeof(*g->fl));
        f = &g->fl[g->nfl++];
        memset(f, 0, sizeof(*f));
        f->slot = slot;
    }
    free(f->e);
    f->e = NULL;
    f->inc = inc;
    f->n = n;
    if (n > 0) {
        f->e = vs_xmalloc(n * sizeof(*e));
        memcpy(f->e, e, n * sizeof(*e));
    }
}

static int
groups0_in_list(const uint32_t *v, uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

size_t
groups0_fill_inflight(const struct groups0 *g, const void *st,
                      groups0_incarnation_fn *fn, void *ctx, struct meta_op *op)
{
    const struct meta_stream *s = meta_stream_find(st, &op->stream);
    if (s == NULL)
        return 0;
    const struct meta_topic *t = meta_topic_find(st, s->id, &op->topic);
    if (t == NULL)
        return 0;
    const struct meta_group *grp =
        meta_group_find(st, s->id, t->id, &op->group);
    if (grp == NULL)
        return 0;
    size_t added = 0;
    for (size_t i = 0; i < g->nfl; i++) {
        const struct groups0_inflight *f = &g->fl[i];
        if (fn != NULL && fn(ctx, f->slot) != f->inc)
            continue; /* that data shard died: its polls are gone */
        for (size_t k = 0; k < f->n; k++) {
            const struct fwd_group_part *e = &f->e[k];
            if (e->stream_id != s->id || e->topic_id != t->id ||
                e->group_id != grp->id ||
                e->group_created_op != grp->created_op ||
                e->partition_id >= t->partitions_count ||
                op->inflight_count >= META_INFLIGHT_MAX ||
                groups0_in_list(op->inflight, op->inflight_count,
                                e->partition_id))
                continue;
            op->inflight[op->inflight_count++] = e->partition_id;
            added++;
        }
    }
    return added;
}

size_t
groups0_bindings(const struct groups0 *g)
{
    return g->nb;
}
