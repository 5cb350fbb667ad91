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
    uint64_t session; /* the Register's op (meta_session.epoch); 0 unknown */
    uint8_t node;     /* replica holding the connection (self: local) */
    /* local: the data shard's connection */
    uint32_t slot;
    uint64_t inc;
    uint64_t conn_id;
    /* remote: the node's incarnation when bound (0 unknown) and its
     * complete-report count at the last claim */
    uint64_t node_inc;
    uint64_t seen;
};

/* What the primary knows of another node. */
struct groups0_node {
    int up;
    uint64_t down_since_us;
    uint64_t inc;     /* its shard 0's incarnation, last reported */
    uint64_t reports; /* complete reports received this tenure */
};

/* A member with no binding: since when (the lease). */
struct groups0_unbound {
    struct vs_u128 client;
    uint64_t since_us;
    int seen;
};

/* A remote connection end waiting for its grace (groups0_remote_closed). */
struct groups0_closing {
    struct vs_u128 client;
    uint64_t session; /* 0: unknown (then: still unbound at due) */
    uint64_t due_us;
};

/* The member set a data shard last reported (FWD_MEMBERS). */
struct groups0_slotset {
    uint32_t slot;
    uint64_t inc;
    struct fwd_member *e; /* the last complete set */
    size_t n;
    int complete;            /* e is a complete set of inc */
    struct fwd_member *part; /* pieces of the set being received */
    size_t npart;
    uint64_t part_inc;
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
    uint8_t self;
    struct groups0_node nodes[VS_REPLICAS_MAX];
    struct groups0_unbound *u;
    size_t nu, capu;
    struct groups0_slotset *ss;
    size_t nss;
    struct groups0_closing *cl;
    size_t nc, capc;
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
    free(g->u);
    free(g->cl);
    for (size_t i = 0; i < g->nss; i++) {
        free(g->ss[i].e);
        free(g->ss[i].part);
    }
    free(g->ss);
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

static struct groups0_bind *
groups0_get(struct groups0 *g, struct vs_u128 client)
{
    struct groups0_bind *b = groups0_find(g, client);
    if (b == NULL) {
        if (g->nb == g->capb) {
            g->capb = g->capb ? g->capb * 2 : 16;
            g->b = vs_xrealloc(g->b, g->capb * sizeof(*g->b));
        }
        b = &g->b[g->nb++];
        memset(b, 0, sizeof(*b));
        b->client = client;
    }
    return b;
}

void
groups0_bind_session(struct groups0 *g, struct vs_u128 client, uint64_t session,
                     uint32_t slot, uint64_t inc, uint64_t conn_id)
{
    struct groups0_bind *b = groups0_get(g, client);
    b->session = session;
    b->node = g->self;
    b->slot = slot;
    b->inc = inc;
    b->conn_id = conn_id;
    b->node_inc = 0;
    b->seen = 0;
}

void
groups0_bind(struct groups0 *g, struct vs_u128 client, uint32_t slot,
             uint64_t inc, uint64_t conn_id)
{
    groups0_bind_session(g, client, 0, slot, inc, conn_id);
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
    if (b == NULL || b->node != g->self || b->slot != from_slot ||
        b->inc != from_inc || b->conn_id != from_conn)
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
    if (b->node != g->self || b->slot != slot || b->inc != inc ||
        b->conn_id != conn_id)
        return 0; /* an older connection; the client lives elsewhere */
    groups0_drop(g, b);
    return 1;
}

void
groups0_sweep_dead_sessions(struct groups0 *g, groups0_incarnation_fn *fn,
                            void *ctx, struct vs_u128 **out,
                            uint64_t **sessions, size_t *n)
{
    *out = NULL;
    if (sessions != NULL)
        *sessions = NULL;
    *n = 0;
    for (size_t i = 0; i < g->nb;) {
        if (g->b[i].node != g->self || fn(ctx, g->b[i].slot) == g->b[i].inc) {
            i++;
            continue;
        }
        *out = vs_xrealloc(*out, (*n + 1) * sizeof(**out));
        if (sessions != NULL) {
            *sessions = vs_xrealloc(*sessions, (*n + 1) * sizeof(**sessions));
            (*sessions)[*n] = g->b[i].session;
        }
        (*out)[(*n)++] = g->b[i].client;
        groups0_drop(g, &g->b[i]);
    }
}

void
groups0_sweep_dead(struct groups0 *g, groups0_incarnation_fn *fn, void *ctx,
                   struct vs_u128 **out, size_t *n)
{
    groups0_sweep_dead_sessions(g, fn, ctx, out, NULL, n);
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
    return b->node == g->self && b->slot == slot && b->inc == inc &&
           b->conn_id == conn_id;
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

/* ------------------------------------------------- cluster liveness */

void
groups0_set_self(struct groups0 *g, uint8_t self)
{
    g->self = self;
}

int
groups0_has(const struct groups0 *g, struct vs_u128 client)
{
    return groups0_find(g, client) != NULL;
}

uint64_t
groups0_session_of(const struct groups0 *g, struct vs_u128 client)
{
    const struct groups0_bind *b = groups0_find(g, client);
    return b != NULL ? b->session : 0;
}

int
groups0_session_current(const void *st, struct vs_u128 client, uint64_t session)
{
    const struct meta_session *m = meta_session_by_client(st, client);
    if (m == NULL)
        return 1; /* no session left: no connection can hold one */
    return session != 0 && m->epoch == session;
}

void
groups0_link(struct groups0 *g, uint8_t node, int up, uint64_t now_us)
{
    if (node >= VS_REPLICAS_MAX)
        return;
    struct groups0_node *n = &g->nodes[node];
    if (up == n->up && (up || n->down_since_us != 0))
        return;
    n->up = up;
    if (!up)
        n->down_since_us = now_us;
}

void
groups0_tenure(struct groups0 *g, uint64_t now_us)
{
    for (size_t i = 0; i < g->nb;) {
        if (g->b[i].node != g->self)
            groups0_drop(g, &g->b[i]);
        else
            i++;
    }
    g->nu = 0;
    g->nc = 0;
    for (size_t i = 0; i < VS_REPLICAS_MAX; i++) {
        struct groups0_node *n = &g->nodes[i];
        n->reports = 0;
        if (!n->up)
            n->down_since_us = now_us;
    }
}

void
groups0_bind_remote(struct groups0 *g, struct vs_u128 client, uint64_t session,
                    uint8_t node, uint64_t node_inc)
{
    if (node >= VS_REPLICAS_MAX || node == g->self)
        return;
    struct groups0_node *n = &g->nodes[node];
    if (node_inc != 0 && node_inc != n->inc) {
        /* the node restarted: its reports say what lives from now on */
        n->inc = node_inc;
        n->reports = 0;
    }
    struct groups0_bind *b = groups0_get(g, client);
    b->session = session;
    b->node = node;
    b->slot = 0;
    b->inc = 0;
    b->conn_id = 0;
    b->node_inc = node_inc != 0 ? node_inc : n->inc;
    b->seen = n->reports;
}

/* A complete report of `node` claims members only: its bindings of
 * clients that are no members now count as seen, so a client that joins
 * a group later is not taken for absent. */
static void
groups0_refresh_others(struct groups0 *g, const struct vs_u128 *ids, size_t nm,
                       uint8_t node)
{
    for (size_t i = 0; i < g->nb; i++) {
        struct groups0_bind *b = &g->b[i];
        if (b->node == node && !meta_member_ids_has(ids, nm, b->client))
            b->seen = g->nodes[node].reports;
    }
}

int
groups0_report(struct groups0 *g, const void *st, uint8_t node, uint64_t inc,
               int complete, const struct fwd_member *e, size_t n)
{
    if (node >= VS_REPLICAS_MAX || node == g->self)
        return -1;
    struct groups0_node *nd = &g->nodes[node];
    if (inc != 0 && inc != nd->inc) {
        nd->inc = inc;
        nd->reports = 0;
    }
    size_t nm;
    struct vs_u128 *ids = meta_member_ids(st, &nm);
    if (complete) {
        nd->reports++;
        groups0_refresh_others(g, ids, nm, node);
    }
    int claimed = 0;
    for (size_t i = 0; i < n; i++) {
        if (!meta_member_ids_has(ids, nm, e[i].client))
            continue;
        const struct meta_session *m = meta_session_by_client(st, e[i].client);
        if (m == NULL || e[i].session == 0 || m->epoch != e[i].session)
            continue; /* an older connection of a client that moved on */
        struct groups0_bind *b = groups0_get(g, e[i].client);
        b->session = e[i].session;
        b->node = node;
        b->slot = 0;
        b->inc = 0;
        b->conn_id = 0;
        b->node_inc = nd->inc;
        b->seen = nd->reports;
        claimed++;
    }
    free(ids);
    return claimed;
}

void
groups0_remote_closed(struct groups0 *g, const void *st, uint8_t node,
                      struct vs_u128 client, uint64_t session, uint64_t now_us)
{
    struct groups0_bind *b = groups0_find(g, client);
    if (session == 0) {
        /* the node did not know the connection's session (a dead data
         * shard it had no binding for): only a binding there counts */
        if (b == NULL || b->node != node)
            return;
        session = b->session;
    }
    if (session != 0 && !groups0_session_current(st, client, session))
        return; /* an older session: the client lives on elsewhere */
    if (b != NULL && b->node == node && (session == 0 || b->session == session))
        groups0_drop(g, b);
    for (size_t i = 0; i < g->nc; i++)
        if (vs_u128_eq(g->cl[i].client, client) && g->cl[i].session == session)
            return; /* already pending */
    if (g->nc == g->capc) {
        g->capc = g->capc ? g->capc * 2 : 16;
        g->cl = vs_xrealloc(g->cl, g->capc * sizeof(*g->cl));
    }
    struct groups0_closing *c = &g->cl[g->nc++];
    c->client = client;
    c->session = session;
    c->due_us = now_us + GROUPS0_CLOSE_GRACE_US;
}

void
groups0_claim_local(struct groups0 *g, const void *st, uint32_t slot,
                    uint64_t inc, const struct fwd_member *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct meta_session *m = meta_session_by_client(st, e[i].client);
        if (m == NULL || e[i].session == 0 || m->epoch != e[i].session)
            continue;
        struct groups0_bind *b = groups0_find(g, e[i].client);
        if (b != NULL && b->node == g->self && b->session == e[i].session)
            continue; /* bound already (FWD_REBIND moves it) */
        groups0_bind_session(g, e[i].client, e[i].session, slot, inc,
                             e[i].conn_id);
    }
}

static struct groups0_slotset *
groups0_slotset(struct groups0 *g, uint32_t slot)
{
    for (size_t i = 0; i < g->nss; i++)
        if (g->ss[i].slot == slot)
            return &g->ss[i];
    g->ss = vs_xrealloc(g->ss, (g->nss + 1) * sizeof(*g->ss));
    struct groups0_slotset *s = &g->ss[g->nss++];
    memset(s, 0, sizeof(*s));
    s->slot = slot;
    return s;
}

int
groups0_members_piece(struct groups0 *g, uint32_t slot, uint64_t inc,
                      const struct fwd_member *e, size_t n, int more)
{
    struct groups0_slotset *s = groups0_slotset(g, slot);
    if (s->part_inc != inc)
        s->npart = 0; /* pieces of an earlier incarnation */
    s->part_inc = inc;
    if (n > 0) {
        s->part = vs_xrealloc(s->part, (s->npart + n) * sizeof(*e));
        memcpy(s->part + s->npart, e, n * sizeof(*e));
        s->npart += n;
    }
    if (more)
        return 0;
    free(s->e);
    s->e = s->part;
    s->n = s->npart;
    s->inc = inc;
    s->complete = 1;
    s->part = NULL;
    s->npart = 0;
    return 1;
}

void
groups0_node_members(const struct groups0 *g, groups0_incarnation_fn *fn,
                     void *ctx, struct fwd_member **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < g->nss; i++) {
        const struct groups0_slotset *s = &g->ss[i];
        if (!s->complete || s->n == 0 ||
            (fn != NULL && fn(ctx, s->slot) != s->inc))
            continue; /* that data shard died: its connections are gone */
        *out = vs_xrealloc(*out, (*n + s->n) * sizeof(**out));
        memcpy(*out + *n, s->e, s->n * sizeof(**out));
        *n += s->n;
    }
}

static struct groups0_unbound *
groups0_unbound_get(struct groups0 *g, struct vs_u128 client, uint64_t now_us)
{
    for (size_t i = 0; i < g->nu; i++)
        if (vs_u128_eq(g->u[i].client, client))
            return &g->u[i];
    if (g->nu == g->capu) {
        g->capu = g->capu ? g->capu * 2 : 16;
        g->u = vs_xrealloc(g->u, g->capu * sizeof(*g->u));
    }
    struct groups0_unbound *u = &g->u[g->nu++];
    u->client = client;
    u->since_us = now_us;
    u->seen = 0;
    return u;
}

/* 1 if the remote binding b no longer proves a live connection. */
static int
groups0_remote_dead(const struct groups0 *g, const struct groups0_bind *b,
                    uint64_t now_us, uint64_t timeout_us)
{
    const struct groups0_node *n = &g->nodes[b->node];
    if (!n->up && now_us - n->down_since_us >= timeout_us)
        return 1; /* origin unreachable past the liveness timeout */
    if (n->inc != 0 && b->node_inc != 0 && b->node_inc != n->inc &&
        n->reports >= 1)
        return 1; /* the node restarted and its report did not claim it */
    return n->reports >= b->seen + GROUPS0_MISSED_REPORTS;
}

void
groups0_sweep_members(struct groups0 *g, const void *st, uint64_t now_us,
                      uint64_t timeout_us, struct vs_u128 **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < g->nc;) {
        struct groups0_closing *c = &g->cl[i];
        if (now_us < c->due_us) {
            i++;
            continue;
        }
        const struct groups0_bind *b = groups0_find(g, c->client);
        int gone = c->session != 0
                       ? groups0_session_current(st, c->client, c->session)
                       : b == NULL;
        if (gone && groups0_is_member(st, c->client)) {
            *out = vs_xrealloc(*out, (*n + 1) * sizeof(**out));
            (*out)[(*n)++] = c->client;
        }
        *c = g->cl[--g->nc];
    }
    for (size_t i = 0; i < g->nu; i++)
        g->u[i].seen = 0;
    const struct meta_hdr *h = meta_hdr_c(st);
    uint32_t cap = meta_tab_cap(st, META_TAB_MEMBER);
    uint32_t seen = 0;
    for (uint32_t i = 0; i < cap && seen < h->count[META_TAB_MEMBER]; i++) {
        const struct meta_member *m = meta_rec_c(st, META_TAB_MEMBER, i);
        if (!m->in_use)
            continue;
        seen++;
        struct vs_u128 client = m->client_id;
        int listed = 0;
        for (size_t k = 0; k < *n && !listed; k++)
            listed = vs_u128_eq((*out)[k], client);
        if (listed)
            continue; /* a member of several groups */
        struct groups0_bind *b = groups0_find(g, client);
        if (b != NULL && b->node == g->self)
            continue; /* local: the connection's own rules */
        if (b != NULL && !groups0_remote_dead(g, b, now_us, timeout_us))
            continue;
        int dead = b != NULL;
        if (b != NULL)
            groups0_drop(g, b);
        if (!dead) {
            struct groups0_unbound *u = groups0_unbound_get(g, client, now_us);
            u->seen = 1;
            dead = now_us - u->since_us >= timeout_us;
            if (!dead)
                continue; /* still in its lease */
        }
        *out = vs_xrealloc(*out, (*n + 1) * sizeof(**out));
        (*out)[(*n)++] = client;
    }
    /* forget the lease of clients bound, claimed or no longer members */
    for (size_t i = 0; i < g->nu;) {
        const struct groups0_bind *b = groups0_find(g, g->u[i].client);
        if (g->u[i].seen && b == NULL)
            i++;
        else
            g->u[i] = g->u[--g->nu];
    }
}
