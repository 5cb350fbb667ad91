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
 * Frames are parsed only while no request is in flight.
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

#include "common/log.h"
#include "common/mem.h"
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
    conn_unlink(c);
    if (c->unauth_ev)
        event_free(c->unauth_ev);
    if (c->bev)
        bufferevent_free(c->bev); /* closes the fd (BEV_OPT_CLOSE_ON_FREE) */
    free(c->body);
    free(c->op);
    sodium_memzero(c->pat_token, sizeof(c->pat_token));
    free(c);
    s->n.closed++;
    s->n.open--;
}

static size_t
out_len(const struct serve_conn *c)
{
    return evbuffer_get_length(bufferevent_get_output(c->bev));
}

void
serve_conn_update_read(struct serve_conn *c)
{
    int on = !c->in_flight && !c->closing && !c->srv->shard0_blocked &&
             out_len(c) <= c->srv->cfg->conn_output_max;
    if (on)
        bufferevent_enable(c->bev, EV_READ);
    else
        bufferevent_disable(c->bev, EV_READ);
}

void
serve_conns_update_read(struct serve *s)
{
    for (struct serve_conn *c = s->all; c; c = c->next)
        serve_conn_update_read(c);
}

void
serve_conn_send(struct serve_conn *c, const void *p, size_t len)
{
    if (bufferevent_write(c->bev, p, len) != 0) {
        vs_log_warn("client %s: output buffer: out of memory", c->peer);
        c->closing = 1;
    }
    if (out_len(c) > c->srv->cfg->conn_output_max)
        bufferevent_disable(c->bev, EV_READ);
}

void
serve_conn_reply(struct serve_conn *c, const struct vs_hdr_request *req,
                 uint32_t status, const void *body, size_t len)
{
    struct vs_wbuf *w = &c->srv->scratch;
    vs_wbuf_reset(w);
    serve_reply_frame(w, req, status, body, len);
    serve_conn_send(c, w->data, w->len);
}

void
serve_conn_evict(struct serve_conn *c, struct vs_u128 client, uint8_t reason)
{
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    serve_eviction_frame(&w, c->srv->cluster, client, reason);
    serve_conn_send(c, w.data, w.len);
    vs_wbuf_fini(&w);
    c->srv->n.evictions++;
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
    if (c->closing && !c->in_flight) {
        bufferevent_disable(c->bev, EV_READ);
        if (out_len(c) == 0)
            serve_conn_free(c);
        return;
    }
    serve_conn_update_read(c);
}

/* Parses and dispatches buffered frames while nothing is in flight. */
static void
conn_process(struct serve_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    /* stop at the output bound too: the rest waits for the drain */
    while (!c->in_flight && !c->closing &&
           out_len(c) <= c->srv->cfg->conn_output_max) {
        uint32_t size = 0;
        int rc = frame_check(c, in, &size);
        if (rc == -1)
            break;
        if (rc == 1) {
            serve_conn_free(c);
            return;
        }
        if (rc == 2) {
            c->closing = 1;
            break;
        }
        const uint8_t *f = evbuffer_pullup(in, size);
        if (f == NULL) {
            c->closing = 1;
            break;
        }
        struct vs_hdr_request h;
        memcpy(&h, f, sizeof(h));
        c->srv->n.requests++;
        c->dispatching = 1;
        serve_dispatch(c, &h, f + VS_HEADER_SIZE, size - VS_HEADER_SIZE);
        c->dispatching = 0;
        evbuffer_drain(in, size);
    }
    conn_finish(c);
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
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        vs_log_debug("client %s: %s", c->peer,
                     (what & BEV_EVENT_EOF) ? "closed" : "socket error");
        serve_conn_free(c);
    }
}

int
serve_conn_accept(struct serve *s, int fd)
{
    if (s->n.open >= s->max_conns) {
        s->n.refused++;
        vs_log_warn("client connection refused: %u connections open (limit "
                    "%u per data shard)",
                    s->n.open, s->max_conns);
        close(fd);
        return -EMFILE;
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct serve_conn *c = vs_xcalloc(1, sizeof(*c));
    c->srv = s;
    c->id = (++s->conn_seq << 9) | (s->ctx->slot & 0x1ffu);
    c->user_id = META_NONE;
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
    c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->unauth_ev = evtimer_new(s->base, conn_unauth_timeout, c);
    if (c->bev == NULL || c->unauth_ev == NULL) {
        if (c->bev == NULL)
            close(fd);
        else
            bufferevent_free(c->bev);
        if (c->unauth_ev)
            event_free(c->unauth_ev);
        free(c);
        return -ENOMEM;
    }
    bufferevent_setcb(c->bev, conn_on_read, conn_on_write, conn_on_event, c);
    size_t b = bucket_of(c->id);
    c->hnext = s->buckets[b];
    s->buckets[b] = c;
    c->next = s->all;
    if (s->all)
        s->all->prev = c;
    s->all = c;
    s->n.accepted++;
    s->n.open++;
    arm_unauth(c);
    serve_conn_update_read(c);
    vs_log_debug("client %s: connected (connection %llu)", c->peer,
                 (unsigned long long)c->id);
    return 0;
}
