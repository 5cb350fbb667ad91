/*
 * shard/zero/cluster_view.c - see cluster_view.h. Shard 0 only.
 * At most one FWD_CLUSTER per data shard per tick (10 ms), however fast
 * ops commit.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "ipc/port.h"
#include "shard/vsr/engine.h"
#include "shard/zero/boot.h"
#include "shard/zero/cluster_view.h"
#include "shard/zero/commit.h"
#include "shard/zero/transfer.h"
#include "shard/link/links.h"

#define CLUSTER_VIEW_RESEND_TICKS 100u

void
cluster_view_init(struct cluster_view *v, const struct vs_shard_ctx *ctx,
                  struct vs_port *port, const char *self_addr)
{
    memset(v, 0, sizeof(*v));
    v->ctx = ctx;
    v->port = port;
    v->clustered = shard0_replica_count(ctx->cfg) > 1;
    (void)vs_names_resolve(ctx->cfg, &v->names, NULL, 0); /* checked */
    uint32_t self = ctx->cfg->replica_id;
    if (self < VS_REPLICAS_MAX)
        snprintf(v->addrs[self], sizeof(v->addrs[self]), "%s", self_addr);
}

/* This node's state transfer as zt_info reports it (idle, nothing yet
 * on a node without one). */
static void
fill_xfer(const struct commit *c, struct fwd_cluster_xfer *x)
{
    memset(x, 0, sizeof(*x));
    x->peer = FWD_CLUSTER_NONE;
    struct zt_info zi;
    if (!commit_transfer_info(c, &zi))
        return;
    x->stage = (uint8_t)zi.stage;
    x->peer = zi.peer >= 0 && zi.peer < (int)FWD_CLUSTER_NONE
                  ? (uint8_t)zi.peer
                  : FWD_CLUSTER_NONE;
    x->fetched = zi.fetched;
    x->total = zi.total;
    x->sessions = zi.sessions;
    x->completed = zi.completed;
    x->abandoned = zi.abandoned;
    x->last_bytes = zi.last_bytes;
    x->last_ms = zi.last_secs > 0 ? (uint64_t)(zi.last_secs * 1000.0) : 0;
    size_t n = strnlen(zi.last, sizeof(x->last) - 1); /* cut to fit */
    memcpy(x->last, zi.last, n);
    x->last[n] = '\0';
}

void
cluster_view_fill(struct cluster_view *v, const struct commit *c,
                  const struct links *l, struct fwd_cluster *out)
{
    memset(out, 0, sizeof(*out));
    const struct vs_vsr *e = commit_engine(c);
    uint32_t n = shard0_replica_count(v->ctx->cfg);
    if (n > VS_REPLICAS_MAX)
        n = VS_REPLICAS_MAX;
    uint8_t self = (uint8_t)v->ctx->cfg->replica_id;
    out->count = n;
    out->self = self;
    out->vsr_status = (uint8_t)vsr_status(e);
    out->view = vsr_view(e);
    out->log_view = vsr_log_view(e);
    out->op = vsr_op(e);
    out->commit_min = vsr_commit_min(e);
    out->commit_max = vsr_commit_max(e);
    struct vs_vsr_persist d;
    vsr_durable(e, &d);
    out->checkpoint_op = d.checkpoint_op;
    out->checkpoint_checksum = d.checkpoint_checksum;
    /* Leader: this replica if it is the settled primary; the primary of
     * the view this replica is a Normal backup in; else nobody. */
    int p = vsr_primary(e);
    if (vsr_is_settled_primary(e))
        out->leader = self;
    else if (p >= 0 && p != self)
        out->leader = (uint8_t)p;
    else
        out->leader = FWD_CLUSTER_NONE;
    for (uint32_t i = 0; i < n; i++) {
        struct fwd_cluster_node *nd = &out->nodes[i];
        nd->role = i == out->leader ? 0 : 1;
        if (i == self) {
            nd->link = 255;
            nd->status = vsr_status(e) == VSR_STATUS_NORMAL ? 0 : 1;
        } else {
            struct links_peer_info pi;
            memset(&pi, 0, sizeof(pi));
            if (l != NULL)
                links_peer(l, (uint8_t)i, &pi);
            if (pi.client_addr[0] != '\0' &&
                strlen(pi.client_addr) < sizeof(v->addrs[i]))
                memcpy(v->addrs[i], pi.client_addr, strlen(pi.client_addr) + 1);
            nd->link = (uint8_t)pi.state;
            nd->status = pi.state == LINKS_UP ? 0 : 3;
            nd->bytes_in = pi.bytes_in;
            nd->bytes_out = pi.bytes_out;
        }
        memcpy(nd->client_addr, v->addrs[i], sizeof(nd->client_addr));
        nd->client_addr[sizeof(nd->client_addr) - 1] = '\0';
    }
    fill_xfer(c, &out->xfer);
}

/* 1 if what a client sees (roles, statuses, addresses, view, commit,
 * checkpoint, transfer stage, peer and outcome) changed; link byte
 * counters and transfer progress alone do not count (the once-a-second
 * resend carries them). */
static int
cluster_view_changed(const struct fwd_cluster *a, const struct fwd_cluster *b)
{
    if (a->count != b->count || a->leader != b->leader || a->view != b->view ||
        a->log_view != b->log_view || a->vsr_status != b->vsr_status ||
        a->op != b->op || a->commit_min != b->commit_min ||
        a->commit_max != b->commit_max ||
        a->checkpoint_op != b->checkpoint_op ||
        a->xfer.stage != b->xfer.stage || a->xfer.peer != b->xfer.peer ||
        a->xfer.sessions != b->xfer.sessions ||
        a->xfer.completed != b->xfer.completed ||
        a->xfer.abandoned != b->xfer.abandoned)
        return 1;
    for (uint32_t i = 0; i < a->count; i++)
        if (a->nodes[i].role != b->nodes[i].role ||
            a->nodes[i].status != b->nodes[i].status ||
            a->nodes[i].link != b->nodes[i].link ||
            strcmp(a->nodes[i].client_addr, b->nodes[i].client_addr) != 0)
            return 1;
    return 0;
}

void
cluster_view_tick(struct cluster_view *v, const struct commit *c,
                  const struct links *l)
{
    if (!v->clustered)
        return;
    struct fwd_cluster now;
    cluster_view_fill(v, c, l, &now);
    v->ticks++;
    if (v->sent && v->ticks < CLUSTER_VIEW_RESEND_TICKS &&
        !cluster_view_changed(&now, &v->cur))
        return;
    if (v->sent && now.leader != v->cur.leader) {
        if (now.leader == FWD_CLUSTER_NONE)
            vs_log_info("cluster: view %u, no leader", now.view);
        else
            vs_log_info("cluster: view %u, leader %s (replica %u)", now.view,
                        now.leader < v->names.count ? v->names.name[now.leader]
                                                    : "?",
                        now.leader);
    }
    v->cur = now;
    v->ticks = 0;
    v->sent = 1;
    struct {
        struct fwd_hdr h;
        struct fwd_cluster b;
    } m;
    memset(&m.h, 0, sizeof(m.h));
    m.h.kind = FWD_CLUSTER;
    m.h.payload_len = sizeof(m.b);
    m.b = now;
    for (uint32_t s = 1; s <= v->ctx->k; s++) {
        m.h.worker_slot = s;
        (void)port_send(v->port, s, &m, sizeof(m));
    }
}
