/*
 * shard/serve/clients.c - the node-wide client connection table from a
 * data shard; see clients.h.
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "ipc/conntab.h"
#include "ipc/segment.h"
#include "shard/meta/state.h"
#include "shard/serve/clients.h"
#include "shard/serve/server.h"

/* The table, attached on first use; NULL if the segment has none. */
static struct vs_conntab *
cl_table(struct serve *s)
{
    if (s->conntab.hdr != NULL)
        return &s->conntab;
    if (s->conntab_absent || s->ctx == NULL || s->ctx->seg == NULL)
        return NULL;
    size_t len = 0;
    void *r = seg_conntab_region(s->ctx->seg, &len);
    if (r == NULL || conntab_attach(&s->conntab, r, len) != 0) {
        s->conntab_absent = 1;
        vs_log_warn("data shard %u: no client connection table in the "
                    "shared segment: max_connections is shared out per "
                    "data shard and GetClients lists this shard's only",
                    s->ctx->slot);
        return NULL;
    }
    uint32_t n = conntab_release_owner(&s->conntab, s->ctx->slot);
    if (n > 0)
        vs_log_info("data shard %u: released %u connection entries of its "
                    "previous incarnation",
                    s->ctx->slot, n);
    return &s->conntab;
}

struct vs_conntab *
serve_clients_table(struct serve *s)
{
    return cl_table(s);
}

int
serve_clients_full(struct serve *s)
{
    struct vs_conntab *t = cl_table(s);
    if (t == NULL)
        return s->n.open >= s->max_conns;
    return conntab_used(t) >= t->slots;
}

int
serve_clients_admit(struct serve_conn *c)
{
    c->ct_idx = -1;
    struct vs_conntab *t = cl_table(c->srv);
    if (t == NULL)
        return c->srv->n.open >= c->srv->max_conns ? -EMFILE : 0;
    int idx = conntab_claim(t, c->srv->ctx->slot, c->id, c->peer);
    if (idx < 0)
        return idx;
    c->ct_idx = idx;
    return 0;
}

void
serve_clients_session(struct serve_conn *c)
{
    struct vs_conntab *t = cl_table(c->srv);
    if (t == NULL || c->ct_idx < 0)
        return;
    struct vs_u128 none = {0, 0};
    conntab_set_session(t, c->ct_idx, c->bound ? c->user_id : META_NONE,
                        c->bound ? c->client : none);
}

void
serve_clients_gone(struct serve_conn *c)
{
    struct vs_conntab *t = cl_table(c->srv);
    if (t != NULL && c->ct_idx >= 0)
        conntab_release(t, c->ct_idx);
    c->ct_idx = -1;
}

static void
cl_fill_local(const struct serve_conn *c, struct serve_client_info *ci)
{
    memset(ci, 0, sizeof(*ci));
    ci->client_id = (uint32_t)c->id;
    ci->user_id = c->bound ? c->user_id : META_NONE;
    ci->client = c->bound ? c->client : (struct vs_u128){0, 0};
    memcpy(ci->address, c->peer, sizeof(ci->address));
}

static void
cl_fill(const struct conntab_info *e, struct serve_client_info *ci)
{
    memset(ci, 0, sizeof(*ci));
    ci->client_id = (uint32_t)e->conn_id;
    ci->user_id = e->user_id;
    ci->client = e->client;
    size_t n = strnlen(e->addr, sizeof(ci->address) - 1);
    memcpy(ci->address, e->addr, n);
    ci->address[n] = '\0';
}

int
serve_clients_by_id(void *srv, uint32_t id, struct serve_client_info *out)
{
    struct serve *s = srv;
    struct vs_conntab *t = cl_table(s);
    if (t == NULL) {
        for (struct serve_conn *c = s->all; c; c = c->next)
            if ((uint32_t)c->id == id) {
                cl_fill_local(c, out);
                return 1;
            }
        return 0;
    }
    for (uint32_t i = 0; i < t->slots; i++) {
        struct conntab_info e;
        if (conntab_read(t, i, &e) && (uint32_t)e.conn_id == id) {
            cl_fill(&e, out);
            return 1;
        }
    }
    return 0;
}

void
serve_clients_each(void *srv, serve_client_visit_fn *fn, void *fnarg)
{
    struct serve *s = srv;
    struct vs_conntab *t = cl_table(s);
    struct serve_client_info ci;
    if (t == NULL) {
        for (struct serve_conn *c = s->all; c; c = c->next) {
            cl_fill_local(c, &ci);
            fn(fnarg, &ci);
        }
        return;
    }
    uint32_t used = conntab_used(t), seen = 0;
    for (uint32_t i = 0; i < t->slots && seen < used; i++) {
        struct conntab_info e;
        if (!conntab_read(t, i, &e))
            continue;
        seen++;
        cl_fill(&e, &ci);
        fn(fnarg, &ci);
    }
}
