/*
 * shard/shard0.c - shard 0's process main: the metadata shard and the
 * only writer of the metadata left-right buffer.
 *
 * Boot (shard/shard0_boot.h): the storage recovery verdict of
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
 * Serving today: IPC frames are counted and logged at debug level,
 * connections on the replica listener (clustered nodes) are accepted and
 * closed; the VSR commit path is not bound here yet. A slow left-right
 * reader rings the supervisor's doorbell (the supervisor kills it after
 * lr_missed_deadlines_kill reports).
 * Process: shard 0 only.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/assert.h"
#include "common/errors.h"
#include "common/layout.h"
#include "common/log.h"
#include "ipc/lr.h"
#include "shard/loop.h"
#include "shard/meta/state.h"
#include "shard/shard.h"
#include "shard/shard0_boot.h"

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

struct shard0_fill {
    struct shard0_recovered *rec;
    struct meta_caps caps;
    uint64_t op; /* op the rebuilt state reflects */
    int rc;
    char err[512];
};

/* Builds one instance from the recovered snapshot and journal. Called
 * for the standby, then (after the flip and drain) for the other one:
 * the same deterministic replay gives equal instances. */
static void
shard0_fill_recovered(void *instance, size_t size, void *ctx)
{
    struct shard0_fill *f = ctx;
    if (f->rc != 0)
        return;
    lr_instance_zero(instance, size);
    f->rc = shard0_rebuild_state(instance, &f->caps, f->rec, NULL, NULL, &f->op,
                                 f->err, sizeof(f->err));
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

    struct shard0_fill fill = {.rec = &rec};
    meta_caps_from_config(&fill.caps, ctx->cfg);
    /* The op the rebuilt state will reflect, known before building it:
     * the end of the replay range, else the snapshot's op, else 0. */
    uint64_t op = 0;
    if (rec.r.have_snapshot)
        op = rec.r.snapshot_op;
    if (rec.r.journal_open && rec.r.replay_from <= rec.r.replay_to)
        op = rec.r.replay_to;
    if (op < lr_published_op(&lr))
        shard_fatal(ctx,
                    "refusing to boot: the data dir holds metadata up to op "
                    "%llu but op %llu was already published by this node",
                    (unsigned long long)op,
                    (unsigned long long)lr_published_op(&lr));
    rc = lr_restore(&lr, op, shard0_fill_recovered, &fill);
    if (rc == 0 && fill.rc != 0)
        shard_fatal(ctx, "refusing to boot: %s", fill.err);
    if (rc != 0) {
        vs_log_error("left-right restore at op %llu: %s",
                     (unsigned long long)op, strerror(-rc));
        return VS_EXIT_RESTART;
    }
    VS_ASSERT(fill.op == op);

    struct shard_loop loop;
    rc = shard_loop_init(&loop, ctx, ctx->replica_fd);
    if (rc != 0) {
        vs_log_error("event loop: %s", strerror(-rc));
        return VS_EXIT_RESTART;
    }
    vs_log_info("serving: metadata published at op %llu",
                (unsigned long long)op);
    shard_loop_ready(&loop);
    rc = shard_loop_run(&loop);
    shard_loop_fini(&loop);
    shard0_recovered_fini(&rec);
    return rc == 0 ? VS_EXIT_OK : VS_EXIT_RESTART;
}
