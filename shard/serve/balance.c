/*
 * shard/serve/balance.c - even spread of client connections over the
 * data shards; see balance.h. Process: data shards, loop thread.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/mem.h"
#include "ipc/segment.h"
#include "shard/serve/balance.h"
#include "shard/serve/server.h"

/* One per listener: 0 plain TCP, 1 TLS. */
struct serve_bal_lis {
    struct serve *s;
    int tls;
    struct event *retry_ev;
    uint64_t declining_since_ns; /* 0: not declining */
};

struct serve_bal {
    struct serve_bal_lis lis[2];
};

static struct event *
lis_event(struct serve *s, int tls)
{
    return tls ? s->tls_ev : s->listen_ev;
}

int
serve_bal_fair(uint32_t mine, const uint32_t *others, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (others[i] < mine)
            return 0;
    return 1;
}

void
serve_bal_publish(struct serve *s)
{
    struct vs_proc_shm *me = seg_proc(s->ctx->seg, s->ctx->slot);
    atomic_store_explicit(&me->conns, s->n.open, memory_order_relaxed);
}

/* 1 if this shard's count is at most every ready data shard's. */
static int
fair_now(struct serve *s)
{
    uint32_t others[VS_SEG_MAX_PROCS], n = 0;
    for (uint32_t slot = 1; slot <= s->ctx->k && slot < VS_SEG_MAX_PROCS;
         slot++) {
        if (slot == s->ctx->slot)
            continue;
        struct vs_proc_shm *p = seg_proc(s->ctx->seg, slot);
        if (!atomic_load_explicit(&p->ready, memory_order_acquire))
            continue;
        others[n++] = atomic_load_explicit(&p->conns, memory_order_relaxed);
    }
    return serve_bal_fair(s->n.open, others, n);
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct serve_bal_lis *l = arg;
    struct event *ev = lis_event(l->s, l->tls);
    /* level-triggered: fires at once if a connection still waits */
    if (ev != NULL && event_add(ev, NULL) != 0)
        vs_log_warn("%s listener: cannot watch it again",
                    l->tls ? "TLS" : "client");
}

/* Stops watching the listener for a while (another shard should take the
 * waiting connection). */
static void
decline(struct serve *s, struct serve_bal_lis *b, uint64_t now)
{
    struct event *ev = lis_event(s, b->tls);
    if (b->declining_since_ns == 0)
        b->declining_since_ns = now;
    struct timeval tv = {0, SERVE_BAL_RETRY_MS * 1000};
    event_del(ev);
    if (evtimer_add(b->retry_ev, &tv) != 0)
        (void)event_add(ev, NULL); /* keep serving */
}

void
serve_bal_on_accept(struct serve *s, int listen_fd, int tls)
{
    struct serve_bal_lis *b = &s->bal->lis[tls ? 1 : 0];
    for (int i = 0; i < 64; i++) {
        serve_bal_publish(s);
        uint64_t now = vs_monotonic_ns();
        int overdue =
            b->declining_since_ns != 0 &&
            now - b->declining_since_ns >= SERVE_BAL_GRACE_MS * 1000000ull;
        if (!fair_now(s) && !overdue) {
            decline(s, b, now);
            return;
        }
        int c = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c == -1) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                vs_log_warn("accept%s: %s", tls ? " (TLS)" : "",
                            strerror(errno));
            b->declining_since_ns = 0; /* nothing waits */
            return;
        }
        b->declining_since_ns = 0;
        (void)serve_conn_accept(s, c, tls);
    }
    serve_bal_publish(s);
}

int
serve_bal_init(struct serve *s)
{
    s->bal = vs_xcalloc(1, sizeof(*s->bal));
    for (int i = 0; i < 2; i++) {
        struct serve_bal_lis *l = &s->bal->lis[i];
        l->s = s;
        l->tls = i;
        l->retry_ev = evtimer_new(s->base, on_retry, l);
        if (l->retry_ev == NULL)
            return -ENOMEM;
    }
    serve_bal_publish(s);
    return 0;
}

void
serve_bal_fini(struct serve *s)
{
    if (s->bal == NULL)
        return;
    for (int i = 0; i < 2; i++)
        if (s->bal->lis[i].retry_ev != NULL)
            event_free(s->bal->lis[i].retry_ev);
    free(s->bal);
    s->bal = NULL;
}
