/*
 * ipc/port.c - rings + doorbell + back-pressure queues on one libevent
 * loop; see port.h.
 *
 * Invariants: frames to one destination leave in send order (a frame
 * goes straight into the ring only when that destination's queue is
 * empty); a queued frame is retried on every doorbell and every flush;
 * nothing here blocks or drops. At most PORT_BATCH frames per source are
 * delivered per doorbell; if more remain the port rings its own doorbell
 * so other events of the loop get a turn.
 * Callers: the owning shard process's loop only.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <event2/event.h>

#include "common/assert.h"
#include "common/mem.h"
#include "common/metrics.h"
#include "ipc/port.h"

#define PORT_BATCH 4096u

struct port_q {
    uint8_t *buf; /* records [u32 len][payload] from off to len */
    size_t off, len, cap;
};

struct vs_port {
    struct event_base *base;
    const struct vs_seg *seg;
    uint32_t self, n;
    struct vs_port_ops ops;
    struct event *bell;
    struct event *flush_ev;
    int flush_pending;
    struct vs_ring out[VS_SEG_MAX_PROCS];
    struct vs_ring in[VS_SEG_MAX_PROCS];
    struct port_q q[VS_SEG_MAX_PROCS];
    uint8_t congested[VS_SEG_MAX_PROCS];
};

static void port_bell_cb(evutil_socket_t fd, short what, void *arg);
static void port_flush_cb(evutil_socket_t fd, short what, void *arg);

struct vs_port *
port_create(struct event_base *base, const struct vs_seg *seg, uint32_t self,
            const struct vs_port_ops *ops)
{
    if (base == NULL || seg == NULL || ops == NULL || ops->on_frame == NULL ||
        self >= seg->n_procs || seg->doorbell[self] < 0) {
        errno = EINVAL;
        return NULL;
    }
    struct vs_port *p = vs_xcalloc(1, sizeof(*p));
    p->base = base;
    p->seg = seg;
    p->self = self;
    p->n = seg->n_procs;
    p->ops = *ops;
    int rc = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        if (i == self)
            continue;
        size_t len;
        void *m = seg_ring_region(seg, self, i, &len);
        rc = ring_attach(&p->out[i], m, len);
        if (rc != 0)
            goto fail;
        ring_producer_reset(&p->out[i]);
        m = seg_ring_region(seg, i, self, &len);
        rc = ring_attach(&p->in[i], m, len);
        if (rc != 0)
            goto fail;
        /* Frames sent to a previous incarnation of this slot are dropped;
         * a producer blocked on them is woken. */
        if (ring_consumer_reset(&p->in[i]) == 1)
            ring_doorbell_ring(seg->doorbell[i]);
    }
    p->bell = event_new(base, seg->doorbell[self], EV_READ | EV_PERSIST,
                        port_bell_cb, p);
    p->flush_ev = event_new(base, -1, 0, port_flush_cb, p);
    if (p->bell == NULL || p->flush_ev == NULL || event_add(p->bell, NULL)) {
        rc = -ENOMEM;
        goto fail;
    }
    /* Frames may have arrived before the event existed. */
    ring_doorbell_ring(seg->doorbell[self]);
    return p;
fail:
    port_destroy(p);
    errno = -rc;
    return NULL;
}

void
port_destroy(struct vs_port *p)
{
    if (p == NULL)
        return;
    if (p->bell != NULL)
        event_free(p->bell);
    if (p->flush_ev != NULL)
        event_free(p->flush_ev);
    for (uint32_t i = 0; i < p->n; i++)
        free(p->q[i].buf);
    free(p);
}

static void
port_schedule_flush(struct vs_port *p)
{
    if (!p->flush_pending) {
        p->flush_pending = 1;
        event_active(p->flush_ev, EV_TIMEOUT, 0);
    }
}

static void
port_q_append(struct port_q *q, const void *frame, uint32_t len)
{
    size_t need = 4 + (size_t)len;
    if (q->off > 0 && q->len + need > q->cap) {
        memmove(q->buf, q->buf + q->off, q->len - q->off);
        q->len -= q->off;
        q->off = 0;
    }
    if (q->len + need > q->cap) {
        size_t cap = q->cap ? q->cap : 4096;
        while (cap < q->len + need)
            cap *= 2;
        q->buf = vs_xrealloc(q->buf, cap);
        q->cap = cap;
    }
    memcpy(q->buf + q->len, &len, 4);
    if (len > 0)
        memcpy(q->buf + q->len + 4, frame, len);
    q->len += need;
}

/* Moves queued frames into the ring while they fit. */
static void
port_q_drain(struct vs_port *p, uint32_t dst)
{
    struct port_q *q = &p->q[dst];
    while (q->off < q->len) {
        uint32_t len;
        memcpy(&len, q->buf + q->off, 4);
        if (ring_push(&p->out[dst], q->buf + q->off + 4, len) != 0)
            return;
        q->off += 4 + (size_t)len;
    }
    q->off = q->len = 0;
}

size_t
port_queued(const struct vs_port *p, uint32_t dst)
{
    if (dst >= p->n)
        return 0;
    return p->q[dst].len - p->q[dst].off;
}

int
port_send(struct vs_port *p, uint32_t dst, const void *frame, uint32_t len)
{
    if (dst >= p->n || dst == p->self)
        return -EINVAL;
    if (len > ring_max_frame(&p->out[dst]))
        return -EMSGSIZE;
    port_schedule_flush(p);
    vs_metrics_add(VS_M_RING_FRAMES, 1);
    vs_metrics_add(VS_M_RING_BYTES, len);
    if (port_queued(p, dst) == 0 && ring_push(&p->out[dst], frame, len) == 0)
        return 0;
    vs_metrics_add(VS_M_RING_BLOCKED, 1);
    port_q_append(&p->q[dst], frame, len);
    if (port_queued(p, dst) > p->ops.queue_high) {
        p->congested[dst] = 1;
        return 1;
    }
    return 0;
}

/* The gathered pieces copied to dst (len bytes in all). */
static void
gather(uint8_t *dst, const struct iovec *iov, int n)
{
    for (int i = 0; i < n; i++) {
        if (iov[i].iov_len > 0)
            memcpy(dst, iov[i].iov_base, iov[i].iov_len);
        dst += iov[i].iov_len;
    }
}

int
port_sendv(struct vs_port *p, uint32_t dst, const struct iovec *iov, int n)
{
    if (dst >= p->n || dst == p->self || n < 0)
        return -EINVAL;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    if (total > ring_max_frame(&p->out[dst]))
        return -EMSGSIZE;
    uint32_t len = (uint32_t)total;
    if (port_queued(p, dst) == 0) {
        void *slot = ring_reserve(&p->out[dst], len);
        if (slot != NULL) {
            port_schedule_flush(p);
            vs_metrics_add(VS_M_RING_FRAMES, 1);
            vs_metrics_add(VS_M_RING_BYTES, len);
            gather(slot, iov, n);
            ring_commit(&p->out[dst], len);
            return 0;
        }
    }
    /* ring full (or frames queued before it): the queue, as port_send */
    uint8_t *tmp = vs_xmalloc(len > 0 ? len : 1);
    gather(tmp, iov, n);
    int rc = port_send(p, dst, tmp, len);
    free(tmp);
    return rc;
}

void
port_flush(struct vs_port *p)
{
    p->flush_pending = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        if (i == p->self)
            continue;
        if (port_queued(p, i) > 0)
            port_q_drain(p, i);
        if (ring_publish(&p->out[i]) == 1)
            ring_doorbell_ring(p->seg->doorbell[i]);
        if (p->congested[i] && port_queued(p, i) == 0) {
            p->congested[i] = 0;
            if (p->ops.on_drain != NULL)
                p->ops.on_drain(p->ops.ctx, i);
        }
    }
}

static void
port_flush_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    port_flush(arg);
}

/* Delivers up to PORT_BATCH frames from src; returns how many, and sets
 * *more if frames remain. */
static size_t
port_drain_in(struct vs_port *p, uint32_t src, int *more)
{
    struct vs_ring *r = &p->in[src];
    size_t n = 0;
    const void *f;
    uint32_t len;
    int rc = 0;
    while (n < PORT_BATCH && (rc = ring_peek(r, &f, &len)) == 0) {
        p->ops.on_frame(p->ops.ctx, src, f, len);
        ring_pop(r);
        n++;
    }
    if (n == PORT_BATCH)
        *more = 1;
    VS_ASSERT(n == PORT_BATCH || rc == -EAGAIN);
    if (ring_release(r) == 1)
        ring_doorbell_ring(p->seg->doorbell[src]);
    return n;
}

size_t
port_poll(struct vs_port *p)
{
    size_t n = 0;
    int more = 0;
    for (uint32_t i = 0; i < p->n; i++)
        if (i != p->self)
            n += port_drain_in(p, i, &more);
    if (more)
        ring_doorbell_ring(p->seg->doorbell[p->self]);
    return n;
}

static void
port_bell_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct vs_port *p = arg;
    ring_doorbell_drain(fd);
    port_poll(p);
    /* Space may have been freed on our outgoing rings. */
    port_flush(p);
}
