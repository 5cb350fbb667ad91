/*
 * shard/serve/main.c - a data shard's process main (slots 1..K).
 *
 * Claims its left-right reader slot, maps the metadata instances
 * read-only, then serves Iggy's VSR client protocol on the inherited
 * client listener (shard/serve/serve.h) on its event loop; the IPC
 * port's frames (from shard 0 and from the other data shards) go to the
 * client listener, whose data plane (shard/serve/data.h, parts.h) opens
 * the partitions this shard owns before it is marked ready. With TLS on,
 * the inherited TLS listener is served too (transport.c), and with an
 * http_addr the HTTP endpoint (http.h). On a cluster node it also runs
 * its links to the same shard of every peer (dlinks.h).
 * Process: data shards only.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "ipc/lr.h"
#include "shard/loop.h"
#include "shard/serve/data.h"
#include "shard/serve/dlinks.h"
#include "shard/serve/http.h"
#include "shard/serve/serve.h"
#include "shard/shard.h"

/* SIGHUP (after the loop reopened the log): rotate the TLS certificate. */
static void
worker_on_hup(void *srv)
{
    serve_tls_reload(srv);
}

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
    /* the listener belongs to the client protocol, not the loop */
    rc = shard_loop_init(&loop, ctx, -1);
    if (rc != 0) {
        vs_log_error("event loop: %s", strerror(-rc));
        return VS_EXIT_RESTART;
    }
    struct serve *srv =
        serve_create(loop.base, ctx, &lr, loop.port, ctx->client_fd);
    if (srv == NULL) {
        vs_log_error("client listener: %s", strerror(errno));
        shard_loop_fini(&loop);
        return VS_EXIT_RESTART;
    }
    if (ctx->tls_fd >= 0) {
        /* the supervisor checked the files at start: a failure here means
         * they changed since; retry with back-off rather than stop the
         * node (the other shards go on serving) */
        char err[512];
        if (serve_tls_listen(srv, ctx->tls_fd, err, sizeof(err)) != 0) {
            vs_log_error("TLS listener: %s", err);
            serve_destroy(srv);
            shard_loop_fini(&loop);
            return VS_EXIT_RESTART;
        }
    }
    struct serve_http *http = NULL;
    if (ctx->http_fd >= 0) {
        http = serve_http_create(loop.base, ctx, &lr, ctx->http_fd);
        if (http == NULL) {
            vs_log_error("HTTP endpoint: %s", strerror(errno));
            serve_destroy(srv);
            shard_loop_fini(&loop);
            return VS_EXIT_RESTART;
        }
    }
    struct dlinks *dl = NULL;
    char dlerr[600];
    if (dlinks_start(loop.base, ctx, &dl, dlerr, sizeof(dlerr)) != 0)
        shard_fatal(ctx, "%s", dlerr);
    serve_data_attach_links(srv, dl); /* the partition groups' links */
    shard_loop_set_frame_handler(&loop, serve_on_frame, srv);
    shard_loop_set_hup_handler(&loop, worker_on_hup, srv);
    shard_loop_set_drain_handler(&loop, serve_on_drain, srv);
    vs_log_info("serving: data shard %u of %u, metadata op %llu", ctx->slot,
                ctx->k, (unsigned long long)op);
    shard_loop_ready(&loop);
    rc = shard_loop_run(&loop);
    serve_data_attach_links(srv, NULL);
    dlinks_stop(dl);
    serve_http_destroy(http);
    serve_destroy(srv);
    shard_loop_fini(&loop);
    return rc == 0 ? VS_EXIT_OK : VS_EXIT_RESTART;
}
