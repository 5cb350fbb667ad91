/*
 * shard/serve/frametimer.c - the frame timer of a client connection; see
 * frametimer.h.
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <errno.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/log.h"
#include "shard/serve/frametimer.h"
#include "shard/serve/server.h"

static void
ft_fire(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct serve_conn *c = arg;
    c->frame_armed = 0;
    size_t have =
        evbuffer_get_length(bufferevent_get_input(c->bev)) + c->rx_have;
    vs_log_info("client %s: a frame started %u ms ago is still incomplete "
                "(%zu bytes buffered): closing",
                c->peer, c->srv->cfg->frame_timeout_ms, have);
    c->srv->frames_timed_out++;
    serve_conn_free(c);
}

int
serve_frame_timer_init(struct serve_conn *c)
{
    c->frame_ev = evtimer_new(c->srv->base, ft_fire, c);
    return c->frame_ev != NULL ? 0 : -ENOMEM;
}

void
serve_frame_timer_fini(struct serve_conn *c)
{
    if (c->frame_ev != NULL)
        event_free(c->frame_ev);
    c->frame_ev = NULL;
    c->frame_armed = 0;
}

void
serve_frame_timer_update(struct serve_conn *c)
{
    if (c->frame_ev == NULL)
        return;
    size_t have = evbuffer_get_length(bufferevent_get_input(c->bev));
    int reading = (bufferevent_get_enabled(c->bev) & EV_READ) != 0;
    /* a frame read straight into place (rxbody.h) is a partial frame
     * too, while the bufferevent itself does not read */
    int want = ((have > 0 && reading) || c->rx != NULL) && !c->in_flight &&
               !c->closing;
    if (!want) {
        if (c->frame_armed)
            evtimer_del(c->frame_ev);
        c->frame_armed = 0;
        return;
    }
    /* the frame now first in the buffer: the one the timer runs for, or
     * a new one (frames of this connection completed since) */
    if (c->frame_armed && c->frame_seq == c->frames)
        return;
    c->frame_seq = c->frames;
    c->frame_armed = 1;
    uint32_t ms = c->srv->cfg->frame_timeout_ms;
    struct timeval tv = {.tv_sec = ms / 1000,
                         .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    evtimer_add(c->frame_ev, &tv);
}
