/*
 * shard/serve/handoff.c - handing a client connection to the data shard
 * that owns its partitions, and taking one over; see handoff.h for the
 * rule. Process: data shards, loop thread.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/log.h"
#include "common/mem.h"
#include "common/metrics.h"
#include "ipc/handoff.h"
#include "ipc/segment.h"
#include "shard/fwd.h"
#include "shard/meta/state.h"
#include "shard/serve/handoff.h"
#include "shard/serve/server.h"

_Static_assert(HANDOFF_DIGEST_LEN == META_DIGEST_LEN, "credential digest");
_Static_assert(HANDOFF_PEER_MAX >= sizeof(((struct serve_conn *)0)->peer),
               "peer address");

/* Messages taken from the channel per wake-up (the rest on the next). */
#define HO_RECV_BATCH 16

struct serve_ho {
    int rx; /* this shard's channel, -1: none */
    struct event *rx_ev;
    uint8_t *buf; /* HANDOFF_MSG_MAX bytes, in and out */
    int send_warned;
};

void
serve_handoff_note(struct serve_conn *c, uint32_t owner)
{
    struct serve *s = c->srv;
    if (owner == s->ctx->slot) {
        c->ho_run = 0;
        return;
    }
    if (owner != c->ho_target) {
        c->ho_target = owner;
        c->ho_run = 0;
    }
    if (c->ho_run < UINT32_MAX)
        c->ho_run++;
}

/* 1 if c is between requests (handoff.h), except for its output. */
static int
ho_idle(const struct serve_conn *c)
{
    return !c->tls && c->bound && !c->in_flight && !c->closing &&
           !c->data_pending && !c->fwd_pending && c->rx == NULL &&
           c->op == NULL && c->body == NULL;
}

int
serve_handoff_try(struct serve_conn *c)
{
    struct serve *s = c->srv;
    uint32_t after = s->cfg->conn_handoff_after;
    struct serve_ho *h = s->ho;
    if (after == 0 || h == NULL || c->ho_run < after || !ho_idle(c))
        return 0;
    uint32_t to = c->ho_target;
    const struct vs_seg *seg = s->ctx->seg;
    if (to == 0 || to == s->ctx->slot || to > s->ctx->k ||
        to >= VS_SEG_MAX_PROCS || seg->handoff_tx[to] < 0) {
        c->ho_run = 0;
        return 0;
    }
    if (!atomic_load_explicit(&seg_proc(seg, to)->ready,
                              memory_order_acquire)) {
        c->ho_run = 0; /* look again after another run */
        return 0;
    }
    struct evbuffer *in = bufferevent_get_input(c->bev);
    size_t plen = evbuffer_get_length(in);
    if (plen > HANDOFF_PENDING_MAX)
        return 0; /* the next boundary, once parsed */
    if (serve_conn_out_len(c) > 0)
        return 2; /* replies first: conn.c parses on once they are written */
    struct handoff_msg m;
    memset(&m, 0, sizeof(m));
    m.flags = HANDOFF_F_BOUND | (c->cred.pat ? HANDOFF_F_PAT : 0);
    m.from_slot = s->ctx->slot;
    m.from_incarnation = s->ctx->incarnation;
    m.conn_id = c->id;
    m.ct_idx = c->ct_idx;
    m.user_id = c->user_id;
    m.session = c->session;
    m.client = c->client;
    m.cred_user_created_op = c->cred.user_created_op;
    m.cred_checked_op = c->cred_checked_op;
    m.cred_expiry_us = c->cred_expiry;
    m.last_active_ms = c->last_active_ms;
    if (c->cred.pat)
        memcpy(m.cred_digest, c->cred.digest, HANDOFF_DIGEST_LEN);
    snprintf(m.peer, sizeof(m.peer), "%s", c->peer);
    m.frames = c->frames;
    m.part_request = c->pkey.request;
    m.part_subseq = c->pkey.subseq;
    m.part_base = c->pkey.base;
    m.part_status = c->pkey.status;
    m.part_seen = c->pkey.seen;
    m.pending_len = (uint32_t)plen;
    m.pending = plen > 0 ? evbuffer_pullup(in, (ev_ssize_t)plen) : NULL;
    if (plen > 0 && m.pending == NULL)
        return 0;
    int n = handoff_encode(&m, h->buf, HANDOFF_MSG_MAX);
    if (n < 0)
        return 0;
    int rc = handoff_send(seg->handoff_tx[to], bufferevent_getfd(c->bev),
                          h->buf, (size_t)n);
    if (rc != 0) {
        s->n.handoff_failed++;
        c->ho_run = 0; /* keep serving it here; maybe later */
        if (rc != -EAGAIN && !h->send_warned) {
            h->send_warned = 1;
            vs_log_warn("client %s: cannot hand the connection to data "
                        "shard %u: %s (it stays here)",
                        c->peer, to, strerror(-rc));
        }
        return 0;
    }
    vs_log_info("client %s: connection %llu handed to data shard %u after "
                "%u data requests in a row for its partitions",
                c->peer, (unsigned long long)c->id, to, c->ho_run);
    s->n.handed_out++;
    vs_metrics_add(VS_M_CONN_HANDED_OFF, 1);
    /* the session and the table entry go with it: no FWD_CLOSED, no
     * release; freeing closes only this process's descriptor */
    c->handed_off = 1;
    c->bound = 0;
    c->ct_idx = -1;
    serve_conn_free(c);
    return 1;
}

/* Tells shard 0 where the client's bound connection went (fwd.h). */
static void
ho_rebind(struct serve *s, const struct handoff_msg *m, uint64_t conn_id)
{
    struct {
        struct fwd_hdr h;
        struct fwd_rebind rb;
    } f;
    memset(&f, 0, sizeof(f));
    f.h.kind = FWD_REBIND;
    f.h.worker_slot = s->ctx->slot;
    f.h.worker_incarnation = s->ctx->incarnation;
    f.h.conn_id = conn_id;
    f.h.payload_len = sizeof(f.rb);
    f.h.client = m->client;
    f.rb.from_slot = m->from_slot;
    f.rb.from_incarnation = m->from_incarnation;
    f.rb.from_conn_id = m->conn_id;
    (void)port_send(s->port, 0, &f, sizeof(f));
}

static void
ho_on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct serve *s = arg;
    struct serve_ho *h = s->ho;
    for (int i = 0; i < HO_RECV_BATCH; i++) {
        size_t len = 0;
        int cfd = -1;
        int rc = handoff_recv(h->rx, h->buf, HANDOFF_MSG_MAX, &len, &cfd);
        if (rc == -EAGAIN)
            return;
        if (rc != 0) {
            s->n.handoff_failed++;
            vs_log_warn("data shard %u: connection handoff message "
                        "refused: %s",
                        s->ctx->slot, strerror(-rc));
            if (rc != -EBADMSG)
                return;
            continue;
        }
        struct handoff_msg m;
        rc = handoff_decode(h->buf, len, &m);
        if (rc == 0 && (m.from_slot == 0 || m.from_slot == s->ctx->slot ||
                        m.from_slot > s->ctx->k))
            rc = -EBADMSG;
        if (rc != 0) {
            s->n.handoff_failed++;
            vs_log_warn("data shard %u: connection handoff message "
                        "refused (%s): closing that connection",
                        s->ctx->slot,
                        rc == -EPROTO ? "unknown version" : "malformed");
            close(cfd);
            continue;
        }
        struct serve_conn *c = NULL;
        if (serve_conn_adopt(s, cfd, &m, &c) != 0) {
            s->n.handoff_failed++;
            continue;
        }
        s->n.handed_in++;
        vs_log_info("data shard %u: took over connection %llu of %s from "
                    "data shard %u (now %llu)",
                    s->ctx->slot, (unsigned long long)m.conn_id, m.peer,
                    m.from_slot, (unsigned long long)c->id);
        if (m.flags & HANDOFF_F_BOUND)
            ho_rebind(s, &m, c->id);
        /* the requests that came with it, in order (may free c) */
        serve_conn_resume(c);
    }
    /* more may wait: level-triggered, the event fires again */
}

int
serve_handoff_init(struct serve *s)
{
    struct serve_ho *h = vs_xcalloc(1, sizeof(*h));
    s->ho = h;
    h->rx = -1;
    h->buf = vs_xmalloc(HANDOFF_MSG_MAX);
    const struct vs_seg *seg = s->ctx->seg;
    uint32_t slot = s->ctx->slot;
    if (seg == NULL || slot == 0 || slot >= VS_SEG_MAX_PROCS ||
        seg->handoff_rx[slot] < 0)
        return 0; /* off: never sends (no target channel) nor receives */
    h->rx = seg->handoff_rx[slot];
    h->rx_ev = event_new(s->base, h->rx, EV_READ | EV_PERSIST, ho_on_read, s);
    if (h->rx_ev == NULL || event_add(h->rx_ev, NULL) != 0)
        return -ENOMEM;
    return 0;
}

void
serve_handoff_fini(struct serve *s)
{
    struct serve_ho *h = s->ho;
    if (h == NULL)
        return;
    if (h->rx_ev != NULL)
        event_free(h->rx_ev);
    if (s->n.handed_out + s->n.handed_in + s->n.handoff_failed > 0)
        vs_log_info("data shard %u: %llu connections handed to other data "
                    "shards, %llu taken over, %llu handoffs failed",
                    s->ctx->slot, (unsigned long long)s->n.handed_out,
                    (unsigned long long)s->n.handed_in,
                    (unsigned long long)s->n.handoff_failed);
    free(h->buf);
    free(h);
    s->ho = NULL;
}
