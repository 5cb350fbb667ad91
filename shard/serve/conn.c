/*
 * shard/serve/conn.c - one client connection of a data shard: socket
 * buffers (libevent bufferevent), framing and its limits, the bounded
 * output buffer, the unauthenticated-connection timer, the id table.
 *
 * Framing (iggy-client-protocol §1, DESIGN §5): a frame is a 256-byte
 * header + body with header size = 256 + body. Header size < 256 or a
 * command other than Request -> close (garbage: the stream cannot be
 * trusted). A body over the operation's limit (max_message_body for
 * SendMessages and PollMessages, max_metadata_body otherwise) ->
 * Eviction 6 (InvalidRequestBodySize), then close once flushed.
 * Frames are parsed only while no request is in flight. A frame whose
 * first byte arrived must complete within frame_timeout_ms
 * (frametimer.h), else the connection is closed. The body of a large
 * frame on plain TCP is read straight into its own buffer (rxbody.h);
 * other frames are dispatched from the input buffer (pulled up: free
 * when the frame is in one chain, as small frames are). Between
 * requests a plain-TCP connection may be handed, socket and session, to
 * the data shard that owns its partitions (handoff.h); conn_open and
 * serve_conn_adopt set up the connection that arrives.
 * Metrics (common/metrics.h): connections by transport; each request is
 * timed from its dispatch to the reply (or eviction) frame that answers
 * it and counted by operation and result code.
 * Invariants: see server.h. Process: data shards, loop thread.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <sodium.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/metrics.h"
#include "shard/serve/clients.h"
#include "ipc/conntab.h"
#include "ipc/handoff.h"
#include "shard/serve/frametimer.h"
#include "shard/serve/handoff.h"
#include "shard/serve/rxbody.h"
#include "shard/serve/server.h"

static size_t
bucket_of(uint64_t id)
{
    return (size_t)((id >> 9) ^ (id * UINT64_C(0x9e3779b97f4a7c15) >> 40)) %
           SERVE_BUCKETS;
}

struct serve_conn *
serve_conn_find(struct serve *s, uint64_t id)
{
    for (struct serve_conn *c = s->buckets[bucket_of(id)]; c; c = c->hnext)
        if (c->id == id)
            return c;
    return NULL;
}

static void
conn_unlink(struct serve_conn *c)
{
    struct serve *s = c->srv;
    struct serve_conn **pp = &s->buckets[bucket_of(c->id)];
    while (*pp && *pp != c)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = c->hnext;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->all = c->next;
    if (c->next)
        c->next->prev = c->prev;
}

void
serve_conn_free(struct serve_conn *c)
{
    struct serve *s = c->srv;
    if (c->bound)
        serve_propose_closed(s, c);
    serve_clients_gone(c);
    conn_unlink(c);
    if (c->unauth_ev)
        event_free(c->unauth_ev);
    serve_frame_timer_fini(c);
    serve_rx_fini(c); /* before the fd closes with the bufferevent */
    if (c->bev)
        bufferevent_free(c->bev); /* closes the fd (BEV_OPT_CLOSE_ON_FREE) */
    free(c->body);
    free(c->op);
    sodium_memzero(c->pat_token, sizeof(c->pat_token));
    if (!c->handed_off) { /* a handed connection lives on elsewhere */
        vs_metrics_add(c->tls ? VS_M_CONN_CLOSED_TLS : VS_M_CONN_CLOSED_TCP, 1);
        s->n.closed++;
    }
    vs_metrics_sub(c->tls ? VS_M_CONN_OPEN_TLS : VS_M_CONN_OPEN_TCP, 1);
    free(c);
    s->n.open--;
}

static size_t
out_len(const struct serve_conn *c)
{
    return evbuffer_get_length(bufferevent_get_output(c->bev));
}

size_t
serve_conn_out_len(const struct serve_conn *c)
{
    return out_len(c);
}

void
serve_conn_update_read(struct serve_conn *c)
{
    int on = !c->in_flight && !c->closing && !c->srv->shard0_blocked &&
             c->rx == NULL && out_len(c) <= c->srv->cfg->conn_output_max;
    if (on)
        bufferevent_enable(c->bev, EV_READ);
    else
        bufferevent_disable(c->bev, EV_READ);
    serve_frame_timer_update(c);
}

void
serve_conns_update_read(struct serve *s)
{
    for (struct serve_conn *c = s->all; c; c = c->next)
        serve_conn_update_read(c);
}

/* A reply frame answers the request in flight: count it by operation
 * and result code, with its latency. */
static void
conn_count_reply(struct serve_conn *c, const void *p, size_t len)
{
    struct vs_hdr_reply h;
    if (len < sizeof(h))
        return;
    memcpy(&h, p, sizeof(h));
    if (h.f.command != VS_CMD_REPLY || c->req_started_ns == 0)
        return;
    uint64_t ns = vs_monotonic_ns() - c->req_started_ns;
    c->req_started_ns = 0;
    vs_metrics_request(c->req_metric_op, h.status, ns / 1000u);
}

void
serve_conn_send(struct serve_conn *c, const void *p, size_t len)
{
    vs_metrics_add(VS_M_CLIENT_BYTES_SENT, len);
    conn_count_reply(c, p, len);
    if (bufferevent_write(c->bev, p, len) != 0) {
        vs_log_warn("client %s: output buffer: out of memory", c->peer);
        c->closing = 1;
    }
    if (out_len(c) > c->srv->cfg->conn_output_max)
        bufferevent_disable(c->bev, EV_READ);
}

/* Bodies at least this large are queued apart from their header: one
 * copy into the output (serve_conn_reply) or none (serve_conn_reply_take)
 * instead of a copy into the frame and another into the output. */
#define CONN_REPLY_APART (64u * 1024u)

void
serve_conn_reply(struct serve_conn *c, const struct vs_hdr_request *req,
                 uint32_t status, const void *body, size_t len)
{
    struct vs_wbuf *w = &c->srv->scratch;
    vs_wbuf_reset(w);
    if (len < CONN_REPLY_APART) {
        serve_reply_frame(w, req, status, body, len);
        serve_conn_send(c, w->data, w->len);
        return;
    }
    serve_reply_head(w, req, status, len);
    serve_conn_send(c, w->data, w->len); /* counts the reply */
    vs_metrics_add(VS_M_CLIENT_BYTES_SENT, len);
    if (bufferevent_write(c->bev, body, len) != 0) {
        vs_log_warn("client %s: output buffer: out of memory", c->peer);
        c->closing = 1;
    }
    if (out_len(c) > c->srv->cfg->conn_output_max)
        bufferevent_disable(c->bev, EV_READ);
}

static void
conn_free_ref(const void *data, size_t len, void *arg)
{
    (void)data;
    (void)len;
    free(arg);
}

void
serve_conn_reply_take(struct serve_conn *c, const struct vs_hdr_request *req,
                      uint32_t status, struct vs_wbuf *body)
{
    if (body->len < CONN_REPLY_APART) {
        serve_conn_reply(c, req, status, body->data, body->len);
        return;
    }
    struct vs_wbuf *w = &c->srv->scratch;
    vs_wbuf_reset(w);
    serve_reply_head(w, req, status, body->len);
    serve_conn_send(c, w->data, w->len); /* counts the reply */
    struct evbuffer *out = bufferevent_get_output(c->bev);
    /* the output owns the buffer now; body starts over empty */
    if (evbuffer_add_reference(out, body->data, body->len, conn_free_ref,
                               body->data) != 0) {
        serve_conn_reply(c, req, status, body->data, body->len);
        return;
    }
    vs_metrics_add(VS_M_CLIENT_BYTES_SENT, body->len);
    c->srv->n.poll_zero_copy++;
    /* a new buffer of the same room: the next large reply is read into
     * it without growing (growth would copy) */
    size_t cap = body->cap;
    vs_wbuf_init(body);
    (void)vs_wbuf_reserve(body, cap);
    if (out_len(c) > c->srv->cfg->conn_output_max)
        bufferevent_disable(c->bev, EV_READ);
}

/* The Iggy code an eviction stands for, as the request's result code:
 * a refused login is counted as InvalidCredentials (42), etc. */
static uint32_t
evict_code(uint8_t reason)
{
    switch (reason) {
    case VS_EVICT_NO_SESSION:
        return VS_E_UNAUTHENTICATED;
    case VS_EVICT_INVALID_CREDENTIALS:
        return VS_E_INVALID_CREDENTIALS;
    case VS_EVICT_INVALID_TOKEN:
        return VS_E_INVALID_PAT;
    case VS_EVICT_USER_INACTIVE:
        return VS_E_USER_INACTIVE;
    case VS_EVICT_STALE_CLIENT:
        return VS_E_STALE_CLIENT;
    default:
        return VS_E_INVALID_FORMAT; /* a malformed request */
    }
}

void
serve_conn_evict(struct serve_conn *c, struct vs_u128 client, uint8_t reason)
{
    if (c->req_started_ns != 0) { /* the eviction answers the request */
        uint64_t ns = vs_monotonic_ns() - c->req_started_ns;
        c->req_started_ns = 0;
        vs_metrics_request(c->req_metric_op, evict_code(reason), ns / 1000u);
    }
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    serve_eviction_frame(&w, c->srv->cluster, client, reason);
    serve_conn_send(c, w.data, w.len);
    vs_wbuf_fini(&w);
    c->srv->n.evictions++;
    vs_metrics_add(VS_M_EVICTIONS, 1);
    vs_log_debug("client %s: eviction %u (%s)", c->peer, reason,
                 vs_eviction_reason_name(reason));
}

static void arm_unauth(struct serve_conn *c);

static void
conn_unauth_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct serve_conn *c = arg;
    if (c->bound)
        return;
    if (c->in_flight) { /* a login is being verified: look again later */
        arm_unauth(c);
        return;
    }
    vs_log_info("client %s: not logged in after %u ms: closing", c->peer,
                c->srv->cfg->unauth_timeout_ms);
    serve_conn_free(c);
}

static void
arm_unauth(struct serve_conn *c)
{
    struct timeval tv = {
        .tv_sec = c->srv->cfg->unauth_timeout_ms / 1000,
        .tv_usec = (c->srv->cfg->unauth_timeout_ms % 1000) * 1000,
    };
    evtimer_add(c->unauth_ev, &tv);
}

void
serve_conn_bind(struct serve_conn *c, uint64_t session, uint32_t user,
                struct vs_u128 client)
{
    c->bound = 1;
    c->session = session;
    c->user_id = user;
    c->client = client;
    evtimer_del(c->unauth_ev);
    serve_clients_session(c);
}

void
serve_conn_unbind(struct serve_conn *c)
{
    if (!c->bound)
        return;
    c->bound = 0;
    c->session = 0;
    c->user_id = META_NONE;
    arm_unauth(c);
    serve_clients_session(c);
}

/* 1 = close now (garbage), 0 = frame complete in *size, -1 = need more,
 * 2 = oversized (evicted, closing). */
static int
frame_check(struct serve_conn *c, struct evbuffer *in, uint32_t *size)
{
    size_t have = evbuffer_get_length(in);
    if (have < VS_HEADER_SIZE)
        return -1;
    struct vs_hdr_request h;
    if (evbuffer_copyout(in, &h, sizeof(h)) != (ev_ssize_t)sizeof(h))
        return 1;
    const struct vs_config *cfg = c->srv->cfg;
    uint32_t limit = 0;
    switch (serve_frame_check(&h, have, cfg->max_metadata_body,
                              cfg->max_message_body, size, &limit)) {
    case SERVE_FRAME_GARBAGE:
        vs_log_info("client %s: not a request frame (size %u, command %u): "
                    "closing",
                    c->peer, h.f.size, h.f.command);
        return 1;
    case SERVE_FRAME_OVERSIZED:
        vs_log_info("client %s: body of %u bytes over the limit %u for "
                    "operation %u: evicting",
                    c->peer, h.f.size - VS_HEADER_SIZE, limit, h.operation);
        serve_conn_evict(c, h.client, VS_EVICT_INVALID_REQUEST_BODY_SIZE);
        return 2;
    case SERVE_FRAME_COMPLETE:
        return 0;
    case SERVE_FRAME_NEED_MORE:
        break;
    }
    return -1;
}

static void
conn_finish(struct serve_conn *c)
{
    serve_frame_timer_update(c);
    if (c->closing && !c->in_flight) {
        bufferevent_disable(c->bev, EV_READ);
        if (out_len(c) == 0)
            serve_conn_free(c);
        return;
    }
    serve_conn_update_read(c);
}

void
serve_conn_dispatch_frame(struct serve_conn *c, uint8_t *f, uint32_t size)
{
    struct vs_hdr_request h;
    memcpy(&h, f, sizeof(h));
    c->srv->n.requests++;
    c->frames++;
    vs_metrics_add(VS_M_CLIENT_BYTES_RECEIVED, size);
    c->req_metric_op =
        (uint8_t)vs_metrics_op_index(h.operation, h.command_code);
    c->req_started_ns = vs_monotonic_ns();
    c->dispatching = 1;
    serve_dispatch(c, &h, f + VS_HEADER_SIZE, size - VS_HEADER_SIZE);
    c->dispatching = 0;
}

/* Parses and dispatches buffered frames while nothing is in flight. */
static void
conn_process(struct serve_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    /* stop at the output bound too: the rest waits for the drain */
    while (!c->in_flight && !c->closing && c->rx == NULL &&
           out_len(c) <= c->srv->cfg->conn_output_max) {
        /* between requests: the connection may move to the shard that
         * owns its partitions (handoff.h) with what is buffered */
        int ho = serve_handoff_try(c);
        if (ho == 1)
            return; /* c is freed */
        if (ho == 2)
            break;
        uint32_t size = 0;
        int rc = frame_check(c, in, &size);
        if (rc == -1) {
            /* a large frame whose header is here: its body straight
             * into its own buffer (plain TCP; rxbody.h) */
            if (size >= SERVE_RX_DIRECT_MIN && !c->tls &&
                serve_rx_start(c, size) != 0) {
                vs_log_warn("client %s: no memory for a frame of %u bytes: "
                            "closing",
                            c->peer, size);
                c->closing = 1;
            }
            break;
        }
        if (rc == 1) {
            vs_metrics_add(VS_M_FRAMING_ERRORS, 1);
            serve_conn_free(c);
            return;
        }
        if (rc == 2) {
            c->closing = 1;
            break;
        }
        uint8_t *f = evbuffer_pullup(in, size);
        if (f == NULL) {
            c->closing = 1;
            break;
        }
        serve_conn_dispatch_frame(c, f, size);
        evbuffer_drain(in, size);
    }
    conn_finish(c);
}

void
serve_conn_resume(struct serve_conn *c)
{
    conn_process(c);
}

void
serve_conn_request_done(struct serve_conn *c)
{
    c->in_flight = 0;
    free(c->body);
    c->body = NULL;
    c->body_len = 0;
    free(c->op);
    c->op = NULL;
    if (!c->dispatching) /* else the frame loop in progress continues */
        conn_process(c);
}

void
serve_conns_resume(struct serve *s)
{
    struct serve_conn *c = s->all;
    while (c != NULL) {
        struct serve_conn *next = c->next; /* c may be freed */
        if (!c->in_flight)
            conn_process(c);
        c = next;
    }
}

static void
conn_on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    conn_process(arg);
}

static void
conn_on_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    struct serve_conn *c = arg;
    /* output drained (low watermark 0) */
    if (c->closing && !c->in_flight) {
        serve_conn_free(c);
        return;
    }
    serve_conn_update_read(c);
    /* frames may be waiting in the input while reading was off */
    if (!c->in_flight && !c->srv->shard0_blocked)
        conn_process(c);
}

static void
conn_on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct serve_conn *c = arg;
    serve_transport_event(c, what);
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        vs_log_debug("client %s: %s", c->peer,
                     (what & BEV_EVENT_EOF) ? "closed" : "socket error");
        serve_conn_free(c);
    }
}

static struct serve_conn *
conn_alloc(struct serve *s)
{
    struct serve_conn *c = vs_xcalloc(1, sizeof(*c));
    c->srv = s;
    c->id = (++s->conn_seq << 9) | (s->ctx->slot & 0x1ffu);
    c->user_id = META_NONE;
    c->ct_idx = -1;
    return c;
}

/* Transport, timers and callbacks of c on fd, linked into the tables
 * and counted open. 0, or -ENOMEM with fd closed (c's table entry is
 * the caller's to release). */
static int
conn_open(struct serve_conn *c, int fd, int tls)
{
    struct serve *s = c->srv;
    c->tls = tls != 0;
    c->bev = serve_transport_bev(s, fd, tls); /* closes fd on failure */
    c->unauth_ev = evtimer_new(s->base, conn_unauth_timeout, c);
    if (c->bev == NULL || c->unauth_ev == NULL ||
        serve_frame_timer_init(c) != 0) {
        if (c->bev != NULL)
            bufferevent_free(c->bev);
        c->bev = NULL;
        if (c->unauth_ev)
            event_free(c->unauth_ev);
        c->unauth_ev = NULL;
        serve_frame_timer_fini(c);
        return -ENOMEM;
    }
    bufferevent_setcb(c->bev, conn_on_read, conn_on_write, conn_on_event, c);
    /* large frames in few read/write calls (libevent's default is 16 KiB
     * per call: 64 loop passes for a 1 MiB batch) */
    (void)bufferevent_set_max_single_read(c->bev, c->tls ? SERVE_IO_CHUNK
                                                         : SERVE_RX_HEAD_READ);
    (void)bufferevent_set_max_single_write(c->bev, SERVE_IO_CHUNK);
    size_t b = bucket_of(c->id);
    c->hnext = s->buckets[b];
    s->buckets[b] = c;
    c->next = s->all;
    if (s->all)
        s->all->prev = c;
    s->all = c;
    s->n.open++;
    vs_metrics_add(tls ? VS_M_CONN_OPEN_TLS : VS_M_CONN_OPEN_TCP, 1);
    return 0;
}

int
serve_conn_accept(struct serve *s, int fd, int tls)
{
    if (serve_clients_full(s)) { /* node-wide (clients.h) */
        s->n.refused++;
        vs_metrics_add(tls ? VS_M_CONN_REFUSED_TLS : VS_M_CONN_REFUSED_TCP, 1);
        vs_log_warn("client connection refused: the node has "
                    "max_connections (%u) open",
                    s->cfg->max_connections);
        close(fd);
        return -EMFILE;
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct serve_conn *c = conn_alloc(s);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char ip[INET6_ADDRSTRLEN] = "?";
    uint16_t port = 0;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
            port = ntohs(a->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
            port = ntohs(a->sin6_port);
        }
    }
    snprintf(c->peer, sizeof(c->peer), "%s:%u", ip, (unsigned)port);
    if (serve_clients_admit(c) != 0) { /* lost a race for the last entry */
        s->n.refused++;
        vs_metrics_add(tls ? VS_M_CONN_REFUSED_TLS : VS_M_CONN_REFUSED_TCP, 1);
        vs_log_warn("client %s: refused: the node has max_connections (%u) "
                    "open",
                    c->peer, s->cfg->max_connections);
        close(fd);
        free(c);
        return -EMFILE;
    }
    if (conn_open(c, fd, tls) != 0) {
        serve_clients_gone(c);
        free(c);
        return -ENOMEM;
    }
    s->n.accepted++;
    vs_metrics_add(tls ? VS_M_CONN_ACCEPTED_TLS : VS_M_CONN_ACCEPTED_TCP, 1);
    arm_unauth(c);
    serve_conn_update_read(c);
    vs_log_debug("client %s: connected (connection %llu)", c->peer,
                 (unsigned long long)c->id);
    return 0;
}

int
serve_conn_adopt(struct serve *s, int fd, const struct handoff_msg *m,
                 struct serve_conn **out)
{
    *out = NULL;
    struct serve_conn *c = conn_alloc(s);
    snprintf(c->peer, sizeof(c->peer), "%s", m->peer);
    /* the sender's table entry moves here; if the sender died since
     * (its entries released), a new one, if the node has room */
    if (m->ct_idx >= 0 && serve_clients_table(s) != NULL &&
        conntab_adopt(serve_clients_table(s), m->ct_idx, m->from_slot,
                      s->ctx->slot, c->id) == 0) {
        c->ct_idx = m->ct_idx;
    } else if (serve_clients_full(s) || serve_clients_admit(c) != 0) {
        s->n.refused++;
        vs_metrics_add(VS_M_CONN_REFUSED_TCP, 1);
        vs_log_warn("client %s: handed over from data shard %u but the node "
                    "has max_connections (%u) open: closing",
                    c->peer, m->from_slot, s->cfg->max_connections);
        close(fd);
        free(c);
        return -EMFILE;
    }
    if (conn_open(c, fd, 0) != 0) {
        serve_clients_gone(c);
        free(c);
        return -ENOMEM;
    }
    c->frames = m->frames;
    c->pkey.request = m->part_request;
    c->pkey.subseq = m->part_subseq;
    c->pkey.base = m->part_base;
    c->pkey.status = m->part_status;
    c->pkey.seen = m->part_seen;
    c->last_active_ms = m->last_active_ms;
    if (m->pending_len > 0) {
        /* a bufferevent's input only grows from its socket (the end is
         * frozen): these bytes came before anything still there */
        struct evbuffer *in = bufferevent_get_input(c->bev);
        (void)evbuffer_unfreeze(in, 0);
        int arc = evbuffer_add(in, m->pending, m->pending_len);
        (void)evbuffer_freeze(in, 0);
        if (arc != 0) {
            vs_log_warn("client %s: no memory for its pending input: closing",
                        c->peer);
            serve_conn_free(c);
            return -ENOMEM;
        }
    }
    if (m->flags & HANDOFF_F_BOUND) {
        c->cred.user_created_op = m->cred_user_created_op;
        c->cred.pat = (m->flags & HANDOFF_F_PAT) != 0;
        memcpy(c->cred.digest, m->cred_digest, sizeof(c->cred.digest));
        c->cred_checked_op = m->cred_checked_op;
        c->cred_expiry = m->cred_expiry_us;
        serve_conn_bind(c, m->session, m->user_id, m->client);
        s->cred_scan_op = UINT64_MAX; /* checked again on the next tick */
    } else {
        arm_unauth(c);
    }
    serve_conn_update_read(c);
    *out = c;
    return 0;
}
