/*
 * shard/zero/main.c - shard 0's process main: the metadata shard and the
 * only writer of the metadata left-right buffer.
 *
 * Boot (shard/zero/boot.h): the storage recovery verdict of
 * DATA/metadata; a refusal or a fatal storage error ends the process with
 * exit 2 and the one-line reason, which stops the node (no restart loop).
 * A fresh one-replica dir is formatted (superblock first). The metadata
 * state (shard/meta) is then rebuilt from the verified snapshot and the
 * journal into the standby instance and published with lr_restore at the
 * recovered op: the writer-restart protocol of ipc/lr.c drains both banks
 * before writing, and each instance is built by the same deterministic
 * replay (no copy, so untouched capacity costs no memory). A recovered op
 * below the op already published by an earlier shard 0 of this node means
 * acknowledged metadata is missing from disk: refuse (exit 2).
 *
 * Serving: the commit path (shard/zero/commit.h) owns the VSR engine, the
 * journal, the superblock and the client table; IPC frames from the data
 * shards (FWD_PROPOSE, FWD_CLOSED) go to it and its FWD_REPLY frames go
 * out through the port; a 10 ms libevent timer ticks it. On a node whose
 * genesis op has not committed (a freshly formatted one) the root user
 * is created before the slot is marked ready. A fatal storage error ends
 * the process with exit 2 and the file and errno on one line. Connections
 * on the replica listener (clustered nodes) are accepted and closed until
 * the cluster issue binds them. A slow left-right reader rings the
 * supervisor's doorbell (the supervisor kills it after
 * lr_missed_deadlines_kill reports).
 * Process: shard 0 only.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <event2/event.h>

#include "common/assert.h"
#include "common/errors.h"
#include "common/layout.h"
#include "common/log.h"
#include "ipc/lr.h"
#include "shard/zero/commit.h"
#include "shard/loop.h"
#include "shard/meta/state.h"
#include "shard/shard.h"
#include "shard/zero/boot.h"
#include "shard/zero/gauges.h"

size_t
shard0_instance_size(const struct vs_config *cfg)
{
    struct meta_caps caps;
    meta_caps_from_config(&caps, cfg);
    return meta_state_size(&caps);
}

static void
shard0_on_slow(void *ctx, uint32_t slot, int32_t pid, uint32_t missed)
{
    (void)slot;
    (void)pid;
    (void)missed;
    const struct vs_shard_ctx *c = ctx;
    ring_doorbell_ring(c->seg->sup_doorbell);
}

struct shard0_serve {
    const struct vs_shard_ctx *ctx;
    struct shard_loop loop;
    struct commit *commit;
    struct event *flush_ev; /* group commit: commit_flush after a pass */
};

static _Noreturn void
shard0_storage_fatal(struct shard0_serve *s)
{
    char msg[512];
    commit_fatal_msg(s->commit, msg, sizeof(msg));
    shard_fatal(s->ctx, "fatal storage error: %s", msg);
}

static void
shard0_send(void *arg, uint32_t dst, const void *frame, uint32_t len)
{
    struct shard0_serve *s = arg;
    int rc = port_send(s->loop.port, dst, frame, len);
    if (rc < 0)
        vs_log_error("reply of %u bytes to shard %u not sent: %s", len, dst,
                     strerror(-rc));
}

static void
shard0_on_frame(void *arg, uint32_t src, const void *frame, uint32_t len)
{
    struct shard0_serve *s = arg;
    if (commit_on_frame(s->commit, src, frame, len) != 0)
        shard0_storage_fatal(s);
    /* group commit: one fsync once this pass's frames are handled */
    if (commit_flush_needed(s->commit))
        event_active(s->flush_ev, EV_TIMEOUT, 1);
}

static void
shard0_on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct shard0_serve *s = arg;
    if (commit_flush(s->commit) != 0)
        shard0_storage_fatal(s);
    if (commit_flush_needed(s->commit)) /* queued proposals now held */
        event_active(s->flush_ev, EV_TIMEOUT, 1);
}

static void
shard0_on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct shard0_serve *s = arg;
    if (commit_tick(s->commit) != 0)
        shard0_storage_fatal(s);
    shard0_gauges_publish(s->commit);
}

/* commit_options.incarnation: a slot's current spawn count, so shard 0
 * drops the group memberships of clients whose data shard died. */
static uint64_t
shard0_incarnation(void *ctx, uint32_t slot)
{
    struct vs_proc_shm *p = seg_proc((const struct vs_seg *)ctx, slot);
    return atomic_load_explicit(&p->incarnation, memory_order_relaxed);
}

int
shard0_main(const struct vs_shard_ctx *ctx)
{
    char err[512];
    struct shard0_recovered rec;
    if (shard0_boot(ctx->cfg, &rec, err, sizeof(err)) != 0)
        shard_fatal(ctx, "%s", err);

    struct vs_lr lr;
    size_t len;
    void *region = seg_lr_region(ctx->seg, &len);
    int rc = lr_attach(&lr, region, len);
    if (rc != 0) {
        vs_log_error("left-right region: %s", strerror(-rc));
        return VS_EXIT_RESTART;
    }
    struct vs_lr_writer_opts opts = {
        .deadline_ns = (uint64_t)ctx->cfg->lr_reader_deadline_ms * 1000000u,
        .on_slow = shard0_on_slow,
        .ctx = (void *)ctx,
    };
    lr_writer_start(&lr, &opts);

    static struct shard0_serve s;
    memset(&s, 0, sizeof(s));
    s.ctx = ctx;
    rc = shard_loop_init(&s.loop, ctx, ctx->replica_fd);
    if (rc != 0) {
        vs_log_error("event loop: %s", strerror(-rc));
        return VS_EXIT_RESTART;
    }

    /* The state rebuilt from snapshot + journal is published (both
     * instances) before the engine takes over; a refusal is exit 2. */
    struct commit_options co = {
        .cfg = ctx->cfg,
        .lr = &lr,
        .send = shard0_send,
        .send_ctx = &s,
        .incarnation = shard0_incarnation,
        .incarnation_ctx = (void *)ctx->seg,
        .group_commit = 1,
    };
    rc = commit_create(&co, &rec, &s.commit, err, sizeof(err));
    shard0_recovered_fini(&rec);
    if (rc != 0)
        shard_fatal(ctx, "refusing to boot: %s", err);

    if (commit_genesis_needed(s.commit)) {
        rc = commit_genesis(s.commit, err, sizeof(err));
        if (rc != 0)
            shard_fatal(ctx, "genesis (root user) failed: %s", err);
    }

    s.flush_ev = event_new(s.loop.base, -1, 0, shard0_on_flush, &s);
    if (s.flush_ev == NULL) {
        vs_log_error("flush event: cannot create it");
        return VS_EXIT_RESTART;
    }
    struct timeval tick = {0, 10000};
    struct event *tick_ev =
        event_new(s.loop.base, -1, EV_PERSIST, shard0_on_tick, &s);
    if (tick_ev == NULL || event_add(tick_ev, &tick) != 0) {
        vs_log_error("tick timer: cannot create it");
        return VS_EXIT_RESTART;
    }
    shard_loop_set_frame_handler(&s.loop, shard0_on_frame, &s);
    vs_log_info("serving: metadata published at op %llu",
                (unsigned long long)lr_published_op(&lr));
    shard0_gauges_publish(s.commit);
    shard_loop_ready(&s.loop);
    rc = shard_loop_run(&s.loop);
    /* held appends of the last pass: durable and answered before exit */
    if (commit_flush_needed(s.commit) && commit_flush(s.commit) != 0)
        shard0_storage_fatal(&s);
    event_free(tick_ev);
    event_free(s.flush_ev);
    shard_loop_fini(&s.loop);
    commit_destroy(s.commit);
    return rc == 0 ? VS_EXIT_OK : VS_EXIT_RESTART;
}
