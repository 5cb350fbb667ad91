/*
 * shard/shard0.c - shard 0's process main: the metadata shard and the
 * only writer of the metadata left-right buffer.
 *
 * Current behaviour: shard0_boot() creates DATA/metadata (0700) and
 * nothing else; no storage recovery and no VSR engine run here yet, and
 * the left-right instances are one zeroed page (shard0_instance_size).
 * At start shard 0 becomes the left-right writer and re-publishes the
 * live instance with lr_restore at the published op (first boot: the
 * zero state at op 0), which runs the writer-restart protocol of
 * ipc/lr.c (drain both banks before writing the standby), so a shard 0
 * restarted after a crash never writes an instance a reader is still in.
 * It then serves: IPC frames are counted and logged at debug level,
 * connections on the replica listener (clustered nodes) are accepted
 * and closed. A slow left-right reader rings the supervisor's doorbell
 * (the supervisor kills it after lr_missed_deadlines_kill reports).
 * Process: shard 0 only.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errors.h"
#include "common/layout.h"
#include "common/log.h"
#include "ipc/lr.h"
#include "shard/loop.h"
#include "shard/shard.h"

size_t
shard0_instance_size(const struct vs_config *cfg)
{
    (void)cfg;
    return 4096;
}

int
shard0_boot(const struct vs_config *cfg, char *err, size_t errlen)
{
    char path[VS_CONFIG_PATH_MAX + 64];
    if (snprintf(path, sizeof(path), "%s/%s", cfg->data_dir, VS_METADATA_DIR) >=
        (int)sizeof(path)) {
        snprintf(err, errlen, "data dir path too long: %s", cfg->data_dir);
        return -ENAMETOOLONG;
    }
    if (mkdir(path, 0700) == -1 && errno != EEXIST) {
        int rc = -errno;
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(-rc));
        return rc;
    }
    struct stat st;
    if (stat(path, &st) == -1 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a directory", path);
        return -ENOTDIR;
    }
    return 0;
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

/* Fills the standby with a copy of the live instance (ctx). */
static void
shard0_copy_live(void *instance, size_t size, void *ctx)
{
    memcpy(instance, ctx, size);
}

int
shard0_main(const struct vs_shard_ctx *ctx)
{
    char err[512];
    if (shard0_boot(ctx->cfg, err, sizeof(err)) != 0)
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
    uint64_t op = lr_published_op(&lr);
    rc = lr_restore(&lr, op, shard0_copy_live, (void *)lr_writer_live(&lr));
    if (rc != 0) {
        vs_log_error("left-right restore at op %llu: %s",
                     (unsigned long long)op, strerror(-rc));
        return VS_EXIT_RESTART;
    }

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
    return rc == 0 ? VS_EXIT_OK : VS_EXIT_RESTART;
}
