/*
 * shard/serve/rxbody.c - direct read of a large frame's body into its
 * own buffer; see rxbody.h. Process: data shards, loop thread.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/log.h"
#include "shard/serve/rxbody.h"
#include "shard/serve/server.h"

/* recv() calls per readiness callback at most (fairness between the
 * connections of the loop). */
#define RX_CALLS_PER_PASS 16

static void
rx_on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct serve_conn *c = arg;
    for (int i = 0; i < RX_CALLS_PER_PASS && c->rx_have < c->rx_size; i++) {
        ssize_t n = recv(fd, c->rx + c->rx_have, c->rx_size - c->rx_have, 0);
        if (n > 0) {
            c->rx_have += (uint32_t)n;
            continue;
        }
        if (n == 0) {
            vs_log_info("client %s: closed in the middle of a frame "
                        "(%u of %u bytes)",
                        c->peer, c->rx_have, c->rx_size);
            serve_conn_free(c);
            return;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return; /* the rest later; the frame timer bounds the wait */
        vs_log_info("client %s: socket error in the middle of a frame: %s",
                    c->peer, strerror(errno));
        serve_conn_free(c);
        return;
    }
    if (c->rx_have < c->rx_size)
        return;
    event_del(c->rx_ev);
    uint8_t *f = c->rx;
    uint32_t size = c->rx_size;
    c->rx = NULL;
    c->rx_size = c->rx_have = 0;
    struct serve *s = c->srv;
    s->frame_own = f; /* a send may keep it until its write is done */
    serve_conn_dispatch_frame(c, f, size);
    free(s->frame_own); /* NULL when taken */
    s->frame_own = NULL;
    serve_conn_resume(c);
}

int
serve_rx_start(struct serve_conn *c, uint32_t size)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    size_t have = evbuffer_get_length(in);
    if (have >= size) /* complete: the caller dispatches it from the input */
        return -EINVAL;
    if (c->rx_ev == NULL) {
        c->rx_ev = event_new(c->srv->base, bufferevent_getfd(c->bev),
                             EV_READ | EV_PERSIST, rx_on_read, c);
        if (c->rx_ev == NULL)
            return -ENOMEM;
    }
    uint8_t *f = malloc(size);
    if (f == NULL)
        return -ENOMEM;
    if (evbuffer_remove(in, f, have) != (int)have) {
        free(f);
        return -ENOMEM;
    }
    c->rx = f;
    c->rx_size = size;
    c->rx_have = (uint32_t)have;
    bufferevent_disable(c->bev, EV_READ);
    if (event_add(c->rx_ev, NULL) != 0) {
        c->rx = NULL;
        c->rx_size = c->rx_have = 0;
        free(f);
        return -ENOMEM;
    }
    c->srv->n.rx_direct++;
    return 0;
}

void
serve_rx_fini(struct serve_conn *c)
{
    if (c->rx_ev != NULL)
        event_free(c->rx_ev);
    c->rx_ev = NULL;
    free(c->rx);
    c->rx = NULL;
    c->rx_size = c->rx_have = 0;
}
