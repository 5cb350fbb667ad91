/*
 * shard/worker.c - a data shard's process main (slots 1..K).
 *
 * Current behaviour: claims its left-right reader slot, maps the
 * metadata instances read-only, reads the published op once, then
 * serves on its event loop: it accepts client connections from the
 * inherited client listener and closes them (the client protocol comes
 * later), and counts IPC frames. Partitions, client sessions and
 * forwarding are not here yet.
 * Process: data shards only.
 */
#include "config.h"

#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "ipc/lr.h"
#include "shard/loop.h"
#include "shard/shard.h"

int
worker_main(const struct vs_shard_ctx *ctx)
{
    struct vs_lr lr;
    size_t len;
    void *region = seg_lr_region(ctx->seg, &len);
    int rc = lr_attach(&lr, region, len);
    if (rc == 0)
        rc = lr_reader_start(&lr, ctx->slot);
    if (rc == 0)
        rc = lr_protect_readonly(&lr);
    if (rc != 0) {
        vs_log_error("left-right reader: %s", strerror(-rc));
        return VS_EXIT_RESTART;
    }
    uint64_t op = 0;
    (void)lr_read_begin(&lr, &op);
    lr_read_end(&lr);

    struct shard_loop loop;
    rc = shard_loop_init(&loop, ctx, ctx->client_fd);
    if (rc != 0) {
        vs_log_error("event loop: %s", strerror(-rc));
        return VS_EXIT_RESTART;
    }
    vs_log_info("serving: data shard %u of %u, metadata op %llu", ctx->slot,
                ctx->k, (unsigned long long)op);
    shard_loop_ready(&loop);
    rc = shard_loop_run(&loop);
    shard_loop_fini(&loop);
    return rc == 0 ? VS_EXIT_OK : VS_EXIT_RESTART;
}
