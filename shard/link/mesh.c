/*
 * shard/link/mesh.c - a data shard's links with coalesced group beats;
 * see mesh.h for the tick, the checks on received frames and the
 * back-pressure rules.
 *
 * Structure: struct mesh holds the links, the pending tables, the one
 * tick timer and per peer: the beat sequence sent and expected, ticks
 * since the last frame out and in, counters, the refusal log clock.
 * Re-entrancy: the links' callbacks may run inside links_send (never:
 * libevent defers writes) or inside the read loop; a link dropped from
 * on_frame is only marked dead there (links.c), so the mesh never frees
 * under its caller.
 * Process: a data shard (its loop thread); tests.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/log.h"
#include "shard/link/coalesce.h"
#include "shard/link/mesh.h"

#define MESH_TICK_MS        10u
#define MESH_KEEPALIVE      50u
#define MESH_DEAD           500u
#define MESH_ENTRIES        65536u
#define MESH_REFUSAL_LOG_MS 60000u

struct mesh_peer {
    uint64_t seq_out, seq_in;
    uint32_t idle_out, idle_in; /* ticks since a frame left / arrived */
    uint64_t last_log_ns;
    struct mesh_peer_info info;
};

struct mesh {
    struct mesh_opts o;
    struct links *links;
    struct coal *coal;
    struct event *tick;
    struct beat_sender sender;
    struct mesh_peer peers[VS_REPLICAS_MAX];
};

static int
peer_ok(const struct mesh *m, uint8_t peer)
{
    return peer < m->o.links.count && peer != m->o.links.self;
}

static void
refuse(struct mesh *m, uint8_t peer, const char *what)
{
    struct mesh_peer *p = &m->peers[peer];
    uint64_t now = vs_monotonic_ns();
    p->info.bad_frames++;
    if (p->last_log_ns == 0 ||
        now - p->last_log_ns >= (uint64_t)MESH_REFUSAL_LOG_MS * 1000000u) {
        p->last_log_ns = now;
        vs_log_warn("shard %u data link with replica %u: refused a frame: %s",
                    m->o.links.shard, peer, what);
    }
    char why[160];
    snprintf(why, sizeof(why), "refused a frame: %s", what);
    links_drop(m->links, peer, why);
}

static void
on_link_frame(void *ctx, uint8_t peer, const void *frame, size_t len)
{
    struct mesh *m = ctx;
    struct mesh_peer *p = &m->peers[peer];
    const struct vs_frame *f = frame;
    p->idle_in = 0;
    if (f->command != VS_CMD_GROUP_BEAT) {
        if (m->o.on_frame != NULL)
            m->o.on_frame(m->o.ctx, peer, frame, len);
        else
            refuse(m, peer, "unexpected command on a data link");
        return;
    }
    const struct beat_hdr *h;
    const uint8_t *body;
    int rc = beat_decode(frame, len, &m->o.links.cluster, &h, &body);
    if (rc != 0) {
        refuse(m, peer, beat_error_name(rc));
        return;
    }
    if (h->f.replica != peer || h->shard != m->o.links.shard) {
        refuse(m, peer, "beat from another replica or shard");
        return;
    }
    if (h->seq != p->seq_in + 1) {
        refuse(m, peer, "beat out of sequence (repeated or skipped)");
        return;
    }
    p->seq_in = h->seq;
    p->info.beats_in++;
    p->info.entries_in += h->count;
    if (m->o.on_beat != NULL)
        m->o.on_beat(m->o.ctx, peer, h, body);
}

static void
on_link_state(void *ctx, uint8_t peer, int up)
{
    struct mesh *m = ctx;
    struct mesh_peer *p = &m->peers[peer];
    /* a new link is a new sequence on both sides */
    p->seq_in = p->seq_out = 0;
    p->idle_in = p->idle_out = 0;
    if (!up)
        coal_clear(m->coal, peer);
    if (m->o.on_state != NULL)
        m->o.on_state(m->o.ctx, peer, up);
}

static int
emit(void *ctx, uint8_t peer, const void *frame, size_t len)
{
    struct mesh *m = ctx;
    int rc = links_send(m->links, peer, frame, len);
    if (rc == 0) {
        const struct beat_hdr *h = frame;
        m->peers[peer].info.beats_out++;
        m->peers[peer].info.entries_out += h->count;
        m->peers[peer].idle_out = 0;
    }
    return rc;
}

static int
flush_peer(struct mesh *m, uint8_t peer, int keepalive)
{
    struct mesh_peer *p = &m->peers[peer];
    return coal_flush(m->coal, peer, &m->sender, &p->seq_out, keepalive, emit,
                      m);
}

static void
on_link_writable(void *ctx, uint8_t peer)
{
    struct mesh *m = ctx;
    /* what waited for room leaves first, then the producers hear */
    if (coal_pending(m->coal, peer) > 0 && flush_peer(m, peer, 0) < 0)
        return;
    if (m->o.on_writable != NULL)
        m->o.on_writable(m->o.ctx, peer);
}

void
mesh_tick(struct mesh *m)
{
    for (uint8_t i = 0; i < m->o.links.count; i++) {
        if (!peer_ok(m, i))
            continue;
        struct mesh_peer *p = &m->peers[i];
        if (!links_up(m->links, i))
            continue;
        if (++p->idle_in >= m->o.dead_ticks) {
            char why[96];
            snprintf(why, sizeof(why), "no frame from the peer in %u ticks",
                     m->o.dead_ticks);
            links_drop(m->links, i, why);
            continue;
        }
        p->idle_out++;
        (void)flush_peer(m, i, p->idle_out >= m->o.keepalive_ticks);
    }
    if (m->o.on_tick != NULL)
        m->o.on_tick(m->o.ctx);
}

void
mesh_flush(struct mesh *m)
{
    for (uint8_t i = 0; i < m->o.links.count; i++)
        if (peer_ok(m, i) && links_up(m->links, i) &&
            coal_pending(m->coal, i) > 0)
            (void)flush_peer(m, i, 0);
}

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    mesh_tick(arg);
}

int
mesh_create(struct event_base *base, const struct mesh_opts *o, int listen_fd,
            struct mesh **out, char *err, size_t errlen)
{
    *out = NULL;
    if (o->links.shard == 0) {
        snprintf(err, errlen,
                 "data links: the mesh of shard 0 is not a "
                 "data mesh");
        return -EINVAL;
    }
    if (o->links.on_writable != NULL) {
        snprintf(err, errlen, "data links: on_writable belongs to the mesh");
        return -EINVAL;
    }
    struct mesh *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        snprintf(err, errlen, "data links: out of memory");
        return -ENOMEM;
    }
    int rc;
    m->o = *o;
    if (m->o.tick_ms == 0)
        m->o.tick_ms = MESH_TICK_MS;
    if (m->o.keepalive_ticks == 0)
        m->o.keepalive_ticks = MESH_KEEPALIVE;
    if (m->o.dead_ticks == 0)
        m->o.dead_ticks = MESH_DEAD;
    if (m->o.entries_max == 0)
        m->o.entries_max = MESH_ENTRIES;
    if (m->o.links.frame_max != 0 && m->o.links.frame_max < BEAT_FRAME_MAX) {
        snprintf(err, errlen,
                 "data links: frame_max %u is below a full "
                 "beat frame (%u bytes)",
                 m->o.links.frame_max, (unsigned)BEAT_FRAME_MAX);
        rc = -EINVAL;
        goto fail;
    }
    m->o.links.on_writable = on_link_writable;
    m->sender = (struct beat_sender){.cluster = o->links.cluster,
                                     .release = o->links.release_max,
                                     .replica = o->links.self,
                                     .shard = o->links.shard};
    rc = coal_create(o->links.count, m->o.entries_max, &m->coal);
    if (rc != 0) {
        snprintf(err, errlen, "data links: pending tables: %s",
                 rc == -ENOMEM ? "out of memory" : "bad entries_max");
        goto fail;
    }
    m->tick = event_new(base, -1, EV_PERSIST, tick_cb, m);
    if (m->tick == NULL) {
        snprintf(err, errlen, "data links: out of memory");
        rc = -ENOMEM;
        goto fail;
    }
    rc = links_create(base, &m->o.links, listen_fd, on_link_frame,
                      on_link_state, m, &m->links, err, errlen);
    if (rc != 0)
        goto fail;
    struct timeval tv = {.tv_sec = m->o.tick_ms / 1000,
                         .tv_usec = (m->o.tick_ms % 1000) * 1000};
    evtimer_add(m->tick, &tv);
    *out = m;
    return 0;
fail:
    if (m->tick != NULL)
        event_free(m->tick);
    coal_destroy(m->coal);
    free(m);
    return rc;
}

void
mesh_destroy(struct mesh *m)
{
    if (m == NULL)
        return;
    links_destroy(m->links);
    if (m->tick != NULL)
        event_free(m->tick);
    coal_destroy(m->coal);
    free(m);
}

int
mesh_post(struct mesh *m, uint8_t peer, const struct beat_entry *e)
{
    if (!peer_ok(m, peer))
        return -EINVAL;
    if (!links_up(m->links, peer))
        return -ENOTCONN;
    int rc = coal_post(m->coal, peer, e);
    if (rc == -EAGAIN)
        m->peers[peer].info.post_refused++;
    return rc;
}

int
mesh_send(struct mesh *m, uint8_t peer, const void *frame, size_t len)
{
    return links_send(m->links, peer, frame, len);
}

int
mesh_up(const struct mesh *m, uint8_t peer)
{
    return peer_ok(m, peer) && links_up(m->links, peer);
}

uint32_t
mesh_up_count(const struct mesh *m)
{
    uint32_t n = 0;
    for (uint8_t i = 0; i < m->o.links.count; i++)
        n += (uint32_t)mesh_up(m, i);
    return n;
}

void
mesh_peer(const struct mesh *m, uint8_t peer, struct mesh_peer_info *out)
{
    memset(out, 0, sizeof(*out));
    if (!peer_ok(m, peer))
        return;
    *out = m->peers[peer].info;
    links_peer(m->links, peer, &out->link);
    out->pending = coal_pending(m->coal, peer);
}

struct links *
mesh_links(struct mesh *m)
{
    return m->links;
}
