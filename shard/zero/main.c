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
 * the process with exit 2 and the file and errno on one line.
 *
 * Cluster (replica_addrs names more than one replica): shard 0 loads the
 * cluster secret (refusing to start without a valid one, exit 2), takes
 * the replica listener over into the replica links (shard/link/links.h)
 * (comparing the replica names' digest with every peer's) and binds them
 * to the commit path: the engine's SEND actions go to
 * links_send, every frame of an authenticated link to
 * commit_on_replica_frame, link state changes to commit_on_link. The
 * node's client address advertised to the peers is the bound address of
 * the client listener (read from the inherited fd, then closed). The
 * cluster status the data shards serve (cluster_view.h) is sent to them
 * on every change and once a second. A slow left-right reader rings the
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
#include <sodium.h>

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
#include "shard/zero/cluster_view.h"
#include "shard/link/links.h"
#include "shard/link/replica_tls.h"
#include "common/names.h"
#include "common/secret.h"
#include "server/listen.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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
    struct links *links;    /* NULL for one replica */
    SSL_CTX *tls_server, *tls_client; /* replica TLS; NULL when off */
    char client_addr[LINKS_ADDR_MAX];
    struct cluster_view view;
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

/* Group commit: commit_flush (the fsync of the held appends) runs after
 * the loop's next poll rather than at the end of this pass, so the
 * prepares this pass queued on the replica links are written to the
 * sockets first (the backups journal them while this node fsyncs) and
 * the frames that arrived meanwhile join the same fsync. */
static void
shard0_flush_soon(struct shard0_serve *s)
{
    static const struct timeval now = {0, 0};
    event_add(s->flush_ev, &now);
}

static void
shard0_on_frame(void *arg, uint32_t src, const void *frame, uint32_t len)
{
    struct shard0_serve *s = arg;
    if (commit_on_frame(s->commit, src, frame, len) != 0)
        shard0_storage_fatal(s);
    /* group commit: one fsync once this pass's frames are handled */
    if (commit_flush_needed(s->commit))
        shard0_flush_soon(s);
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
        shard0_flush_soon(s);
}

static int
shard0_replica_send(void *arg, uint8_t replica, const void *frame, uint32_t len)
{
    struct shard0_serve *s = arg;
    if (s->links == NULL)
        return -ENOTCONN;
    return links_send(s->links, replica, frame, len);
}

static void
shard0_on_link_frame(void *arg, uint8_t peer, const void *frame, size_t len)
{
    struct shard0_serve *s = arg;
    if (s->commit == NULL)
        return;
    if (commit_on_replica_frame(s->commit, peer, frame, len) != 0)
        shard0_storage_fatal(s);
    /* a forwarded proposal is held like a local one: flush this pass */
    if (s->flush_ev != NULL && commit_flush_needed(s->commit))
        shard0_flush_soon(s);
}

static void
shard0_on_link_state(void *arg, uint8_t peer, int up)
{
    struct shard0_serve *s = arg;
    vs_log_info("replica link to %u %s", peer, up ? "up" : "down");
    if (s->commit != NULL)
        commit_on_link(s->commit, peer, up);
}

/* The bound address of the inherited client listener ("" if none). */
static void
shard0_client_addr(const struct vs_shard_ctx *ctx, char *out, size_t len)
{
    out[0] = '\0';
    if (ctx->client_fd < 0)
        return;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char h[INET6_ADDRSTRLEN];
    if (getsockname(ctx->client_fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &s6->sin6_addr, h, sizeof(h));
            snprintf(out, len, "[%s]:%u", h, ntohs(s6->sin6_port));
        } else if (ss.ss_family == AF_INET) {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &s4->sin_addr, h, sizeof(h));
            snprintf(out, len, "%s:%u", h, ntohs(s4->sin_port));
        }
    }
    close(ctx->client_fd);
}

/* A cluster's replica links, bound to s->commit. Refusals are exit 2. */
static void
shard0_links_start(struct shard0_serve *s)
{
    const struct vs_shard_ctx *ctx = s->ctx;
    const struct vs_config *cfg = ctx->cfg;
    struct links_opts o;
    memset(&o, 0, sizeof(o));
    uint32_t n = shard0_replica_count(cfg);
    o.self = (uint8_t)cfg->replica_id;
    o.count = (uint8_t)n;
    static char addrs[VS_REPLICAS_MAX][LINKS_ADDR_MAX];
    for (uint32_t i = 0; i < n && i < VS_REPLICAS_MAX; i++) {
        if (sup_addr_list_get(cfg->replica_addrs, i, addrs[i],
                              sizeof(addrs[i])) != 0)
            shard_fatal(ctx, "replica_addrs: entry %u is not HOST:PORT", i);
        o.addrs[i] = addrs[i];
    }
    vs_config_cluster_id(cfg, &o.cluster.lo, &o.cluster.hi);
    char err[512];
    if (cfg->cluster_secret_file[0] == '\0')
        shard_fatal(ctx,
                    "a replica of a %u-node cluster needs "
                    "cluster_secret_file (--cluster-secret-file)",
                    n);
    int rc =
        vs_secret_load(cfg->cluster_secret_file, o.secret, err, sizeof(err));
    if (rc != 0)
        shard_fatal(ctx, "%s", err);
    o.release_min = VS_WIRE_FORMAT_VERSION;
    o.release_max = VS_WIRE_FORMAT_VERSION;
    o.client_addr = s->client_addr;
    /* a peer configured with other replica names is refused */
    static struct vs_names names;
    if (vs_names_resolve(cfg, &names, err, sizeof(err)) != 0)
        shard_fatal(ctx, "%s", err);
    o.names_digest = vs_names_digest(&names);
    /* mutual TLS (replica_tls_enabled): shard/link/replica_tls.h */
    if (link_tls_load(cfg, &s->tls_server, &s->tls_client, err, sizeof(err)) !=
        0)
        shard_fatal(ctx, "%s", err);
    o.tls_server = s->tls_server;
    o.tls_client = s->tls_client;
    rc = links_create(s->loop.base, &o, ctx->replica_fd, shard0_on_link_frame,
                      shard0_on_link_state, s, &s->links, err, sizeof(err));
    sodium_memzero(o.secret, sizeof(o.secret));
    if (rc != 0)
        shard_fatal(ctx, "replica links: %s", err);
}

static void
shard0_on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct shard0_serve *s = arg;
    if (commit_tick(s->commit) != 0)
        shard0_storage_fatal(s);
    if (s->flush_ev != NULL && commit_flush_needed(s->commit))
        shard0_flush_soon(s);
    shard0_gauges_publish(s->commit, s->links);
    cluster_view_tick(&s->view, s->commit, s->links);
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
    shard0_client_addr(ctx, s.client_addr, sizeof(s.client_addr));
    int clustered = shard0_replica_count(ctx->cfg) > 1;
    /* A cluster's replica listener belongs to the links. */
    rc = shard_loop_init(&s.loop, ctx, clustered ? -1 : ctx->replica_fd);
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
        .replica_send = clustered ? shard0_replica_send : NULL,
        .replica_ctx = &s,
        .incarnation = shard0_incarnation,
        .incarnation_ctx = (void *)ctx->seg,
        .group_commit = 1,
        .rebuilt = rec.rebuilt,
    };
    rc = commit_create(&co, &rec, &s.commit, err, sizeof(err));
    shard0_recovered_fini(&rec);
    if (rc != 0)
        shard_fatal(ctx, "refusing to boot: %s", err);

    cluster_view_init(&s.view, ctx, s.loop.port, s.client_addr);
    if (clustered)
        shard0_links_start(&s);

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
    shard0_gauges_publish(s.commit, s.links);
    shard_loop_ready(&s.loop);
    rc = shard_loop_run(&s.loop);
    /* held appends of the last pass: durable and answered before exit */
    if (commit_flush_needed(s.commit) && commit_flush(s.commit) != 0)
        shard0_storage_fatal(&s);
    event_free(tick_ev);
    event_free(s.flush_ev);
    links_destroy(s.links);
    s.links = NULL;
    if (s.tls_server != NULL)
        SSL_CTX_free(s.tls_server);
    if (s.tls_client != NULL)
        SSL_CTX_free(s.tls_client);
    shard_loop_fini(&s.loop);
    commit_destroy(s.commit);
    return rc == 0 ? VS_EXIT_OK : VS_EXIT_RESTART;
}
