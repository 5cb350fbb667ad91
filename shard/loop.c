/*
 * shard/loop.c - the shard processes' event loop; see loop.h.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/errors.h"
#include "common/log.h"
#include "shard/loop.h"

_Noreturn void
shard_fatal(const struct vs_shard_ctx *ctx, const char *fmt, ...)
{
    char reason[VS_SEG_REASON_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    struct vs_proc_shm *p = seg_proc(ctx->seg, ctx->slot);
    memcpy(p->reason, reason, sizeof(reason));
    vs_log_error("%s", reason);
    exit(VS_EXIT_FATAL);
}

static void
shard_loop_on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct shard_loop *l = arg;
    if (sig == SIGHUP) {
        uint32_t lvl = atomic_load_explicit(&l->ctx->seg->hdr->log_level,
                                            memory_order_relaxed);
        if (lvl <= VS_LOG_DEBUG)
            vs_log_set_level((enum vs_log_level)lvl);
        int rc = vs_log_reopen();
        if (rc != 0)
            vs_log_warn("SIGHUP: cannot reopen the log: %s", strerror(-rc));
        if (l->hup_fn != NULL)
            l->hup_fn(l->hup_ctx);
        return;
    }
    vs_log_info("signal %d: stopping", (int)sig);
    if (l->listen_ev != NULL)
        event_del(l->listen_ev);
    event_base_loopbreak(l->base);
}

static void
shard_loop_on_accept(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct shard_loop *l = arg;
    for (int i = 0; i < 64; i++) {
        int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c == -1) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                vs_log_warn("accept: %s", strerror(errno));
            return;
        }
        l->accepted++;
        vs_log_debug("connection accepted and closed (no protocol yet)");
        close(c);
    }
}

static void
shard_loop_on_frame(void *ctx, uint32_t src, const void *frame, uint32_t len)
{
    (void)frame;
    struct shard_loop *l = ctx;
    l->frames_in++;
    if (l->frame_fn != NULL) {
        l->frame_fn(l->frame_ctx, src, frame, len);
        return;
    }
    vs_log_debug("IPC frame of %u bytes from shard %u (no handler yet)", len,
                 src);
}

static void
shard_loop_on_drain(void *ctx, uint32_t dst)
{
    struct shard_loop *l = ctx;
    if (l->drain_fn != NULL)
        l->drain_fn(l->drain_ctx, dst);
}

int
shard_loop_init(struct shard_loop *l, const struct vs_shard_ctx *ctx,
                int listen_fd)
{
    memset(l, 0, sizeof(*l));
    l->ctx = ctx;
    l->listen_fd = listen_fd;
    int rc = -ENOMEM;
    l->base = event_base_new();
    if (l->base == NULL)
        goto fail;
    const int sigs[3] = {SIGTERM, SIGINT, SIGHUP};
    for (int i = 0; i < 3; i++) {
        l->sig[i] = evsignal_new(l->base, sigs[i], shard_loop_on_signal, l);
        if (l->sig[i] == NULL || event_add(l->sig[i], NULL) != 0)
            goto fail;
    }
    struct vs_port_ops ops = {.on_frame = shard_loop_on_frame,
                              .on_drain = shard_loop_on_drain,
                              .ctx = l,
                              .queue_high = ctx->cfg->ring_bytes};
    l->port = port_create(l->base, ctx->seg, ctx->slot, &ops);
    if (l->port == NULL) {
        rc = -errno;
        goto fail;
    }
    if (listen_fd >= 0) {
        l->listen_ev = event_new(l->base, listen_fd, EV_READ | EV_PERSIST,
                                 shard_loop_on_accept, l);
        if (l->listen_ev == NULL || event_add(l->listen_ev, NULL) != 0)
            goto fail;
    }
    return 0;
fail:
    shard_loop_fini(l);
    return rc;
}

void
shard_loop_set_drain_handler(struct shard_loop *l, port_drain_fn *fn, void *ctx)
{
    l->drain_fn = fn;
    l->drain_ctx = ctx;
}

void
shard_loop_set_hup_handler(struct shard_loop *l, void (*fn)(void *), void *ctx)
{
    l->hup_fn = fn;
    l->hup_ctx = ctx;
}

void
shard_loop_set_frame_handler(struct shard_loop *l, port_frame_fn *fn, void *ctx)
{
    l->frame_fn = fn;
    l->frame_ctx = ctx;
}

void
shard_loop_ready(struct shard_loop *l)
{
    struct vs_proc_shm *p = seg_proc(l->ctx->seg, l->ctx->slot);
    /* release: everything set up before is visible with the flag. */
    atomic_store_explicit(&p->ready, 1, memory_order_release);
    ring_doorbell_ring(l->ctx->seg->sup_doorbell);
}

int
shard_loop_run(struct shard_loop *l)
{
    return event_base_dispatch(l->base) == -1 ? -1 : 0;
}

void
shard_loop_fini(struct shard_loop *l)
{
    if (l->listen_ev != NULL)
        event_free(l->listen_ev);
    port_destroy(l->port);
    for (int i = 0; i < 3; i++)
        if (l->sig[i] != NULL)
            event_free(l->sig[i]);
    if (l->base != NULL)
        event_base_free(l->base);
    if (l->listen_fd >= 0)
        close(l->listen_fd);
    memset(l, 0, sizeof(*l));
    l->listen_fd = -1;
}
