/*
 * shard/serve/dlinks.c - a data shard's mesh from the configuration and
 * its metrics; see dlinks.h.
 *
 * Metrics: gauges (links up, each peer's state) are set each tick;
 * counters (beat frames, refused frames, bytes) are added as deltas of
 * the mesh's counters since the last tick, so a restarted shard's
 * block keeps growing instead of going back to zero.
 * Process: a data shard, loop thread.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>
#include <sodium.h>

#include "common/config.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/names.h"
#include "common/secret.h"
#include "common/wire.h"
#include "server/listen.h"
#include "shard/link/mesh.h"
#include "shard/link/plan.h"
#include "shard/link/replica_tls.h"
#include "shard/serve/dlinks.h"

struct dlinks_seen {
    uint64_t beats_out, beats_in, refused;
    uint64_t sent[VS_REPLICAS_MAX], recv[VS_REPLICAS_MAX];
};

struct dlinks {
    const struct vs_shard_ctx *ctx;
    struct mesh *mesh;
    SSL_CTX *tls_server, *tls_client;
    uint8_t count, self;
    char addrs[VS_REPLICAS_MAX][LINKS_ADDR_MAX];
    struct dlinks_seen seen;
    struct dlinks_hooks hooks; /* on_frame NULL: none */
};

static uint64_t
delta(uint64_t now, uint64_t *last)
{
    uint64_t d = now >= *last ? now - *last : now;
    *last = now;
    return d;
}

static void
dlinks_publish(void *arg)
{
    struct dlinks *d = arg;
    uint64_t beats_out = 0, beats_in = 0, refused = 0;
    for (uint8_t p = 0; p < d->count && p < VS_M_LINKS; p++) {
        if (p == d->self)
            continue;
        struct mesh_peer_info in;
        mesh_peer(d->mesh, p, &in);
        uint64_t state = in.link.state == LINKS_UP     ? 2
                         : in.link.state == LINKS_DOWN ? 0
                                                       : 1;
        vs_metrics_set(VS_M_DLINK_STATE(p), state);
        vs_metrics_add(VS_M_DLINK_SENT(p),
                       delta(in.link.bytes_out, &d->seen.sent[p]));
        vs_metrics_add(VS_M_DLINK_RECV(p),
                       delta(in.link.bytes_in, &d->seen.recv[p]));
        beats_out += in.beats_out;
        beats_in += in.beats_in;
        refused += in.bad_frames + in.link.refusals;
    }
    vs_metrics_set(VS_M_DLINK_UP, mesh_up_count(d->mesh));
    vs_metrics_add(VS_M_DLINK_BEATS_OUT, delta(beats_out, &d->seen.beats_out));
    vs_metrics_add(VS_M_DLINK_BEATS_IN, delta(beats_in, &d->seen.beats_in));
    vs_metrics_add(VS_M_DLINK_REFUSED, delta(refused, &d->seen.refused));
}

static void
dlinks_on_state(void *arg, uint8_t peer, int up)
{
    struct dlinks *d = arg;
    dlinks_publish(d);
    if (d->hooks.on_state != NULL)
        d->hooks.on_state(d->hooks.ctx, peer, up);
}

static void
dlinks_on_tick(void *arg)
{
    struct dlinks *d = arg;
    dlinks_publish(d);
    if (d->hooks.on_tick != NULL)
        d->hooks.on_tick(d->hooks.ctx);
}

/* A frame that is not a beat (partition replication on): the groups'
 * (hooks), else (not attached yet) it ends the link. */
static void
dlinks_on_frame(void *arg, uint8_t peer, const void *frame, size_t len)
{
    struct dlinks *d = arg;
    if (d->hooks.on_frame != NULL) {
        d->hooks.on_frame(d->hooks.ctx, peer, frame, len);
        return;
    }
    links_drop(mesh_links(d->mesh), peer,
               "a frame that is not a beat before the groups are attached");
}

/* A beat frame's entries: the groups' (hooks), else ignored (the beat
 * itself kept the link alive). */
static void
dlinks_on_beat(void *arg, uint8_t peer, const struct beat_hdr *h,
               const uint8_t *body)
{
    struct dlinks *d = arg;
    if (d->hooks.on_beat != NULL)
        d->hooks.on_beat(d->hooks.ctx, peer, h, body);
}

void
dlinks_set_hooks(struct dlinks *d, const struct dlinks_hooks *h)
{
    if (d == NULL)
        return;
    if (h == NULL)
        memset(&d->hooks, 0, sizeof(d->hooks));
    else
        d->hooks = *h;
}

struct mesh *
dlinks_mesh(struct dlinks *d)
{
    return d != NULL ? d->mesh : NULL;
}

void
dlinks_stop(struct dlinks *d)
{
    if (d == NULL)
        return;
    mesh_destroy(d->mesh);
    if (d->tls_server != NULL)
        SSL_CTX_free(d->tls_server);
    if (d->tls_client != NULL)
        SSL_CTX_free(d->tls_client);
    for (uint8_t p = 0; p < d->count && p < VS_M_LINKS; p++)
        if (p != d->self)
            vs_metrics_set(VS_M_DLINK_STATE(p), 0);
    vs_metrics_set(VS_M_DLINK_UP, 0);
    free(d);
}

int
dlinks_start(struct event_base *base, const struct vs_shard_ctx *ctx,
             struct dlinks **out, char *err, size_t errlen)
{
    const struct vs_config *cfg = ctx->cfg;
    uint32_t n = sup_addr_list_count(cfg->replica_addrs);
    char why[512];
    int rc;
    *out = NULL;
    if (n < 2)
        return 0;
    if (n > VS_REPLICAS_MAX || ctx->k > UINT8_MAX || ctx->slot == 0 ||
        ctx->slot > ctx->k) {
        snprintf(err, errlen,
                 "data links: shard %u of %u with %u replicas out of range",
                 ctx->slot, ctx->k, n);
        return -EINVAL;
    }
    if (ctx->replica_fd < 0) {
        snprintf(err, errlen, "data links: shard %u has no listener",
                 ctx->slot);
        return -EINVAL;
    }
    struct dlinks *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        snprintf(err, errlen, "data links: out of memory");
        return -ENOMEM;
    }
    d->ctx = ctx;
    d->count = (uint8_t)n;
    d->self = (uint8_t)cfg->replica_id;
    struct mesh_opts o;
    memset(&o, 0, sizeof(o));
    o.links.self = d->self;
    o.links.count = d->count;
    o.links.shard = (uint8_t)ctx->slot;
    o.links.shard_count = (uint16_t)ctx->k;
    for (uint32_t i = 0; i < n; i++) {
        char entry[LINKS_ADDR_MAX];
        if (sup_addr_list_get(cfg->replica_addrs, i, entry, sizeof(entry)) !=
            0) {
            snprintf(err, errlen,
                     "data links: replica_addrs entry %u is too "
                     "long",
                     i);
            rc = -EINVAL;
            goto fail;
        }
        rc = link_plan_addr(entry, ctx->slot, cfg->data_link_port_stride,
                            d->addrs[i], sizeof(d->addrs[i]), why, sizeof(why));
        if (rc != 0) {
            snprintf(err, errlen, "data links: replica_addrs entry %u: %s", i,
                     why);
            goto fail;
        }
        o.links.addrs[i] = d->addrs[i];
    }
    vs_config_cluster_id(cfg, &o.links.cluster.lo, &o.links.cluster.hi);
    rc = vs_secret_load(cfg->cluster_secret_file, o.links.secret, why,
                        sizeof(why));
    if (rc != 0) {
        snprintf(err, errlen, "data links: %s", why);
        goto fail;
    }
    o.links.release_min = VS_WIRE_FORMAT_VERSION;
    o.links.release_max = VS_WIRE_FORMAT_VERSION;
    /* a peer configured with other replica names is refused, as on
     * shard 0's links */
    struct vs_names *names = malloc(sizeof(*names));
    if (names == NULL) {
        snprintf(err, errlen, "data links: out of memory");
        rc = -ENOMEM;
        goto fail;
    }
    rc = vs_names_resolve(cfg, names, why, sizeof(why));
    o.links.names_digest = rc == 0 ? vs_names_digest(names) : 0;
    free(names);
    if (rc != 0) {
        snprintf(err, errlen, "data links: %s", why);
        goto fail;
    }
    rc = link_tls_load(cfg, &d->tls_server, &d->tls_client, why, sizeof(why));
    if (rc != 0) {
        snprintf(err, errlen, "data links: %s", why);
        goto fail;
    }
    o.links.tls_server = d->tls_server;
    o.links.tls_client = d->tls_client;
    o.on_state = dlinks_on_state;
    o.on_tick = dlinks_on_tick;
    /* without partition replication a frame that is not a beat stays a
     * refusal of the mesh (counted, logged, the link ended) */
    if (cfg->partition_replication) {
        o.on_frame = dlinks_on_frame;
        o.on_beat = dlinks_on_beat;
    }
    o.ctx = d;
    rc = mesh_create(base, &o, ctx->replica_fd, &d->mesh, why, sizeof(why));
    sodium_memzero(o.links.secret, sizeof(o.links.secret));
    if (rc != 0) {
        snprintf(err, errlen, "%s", why);
        goto fail;
    }
    dlinks_publish(d);
    vs_log_info("shard %u data links: listening on %s, %u peer(s)", ctx->slot,
                d->addrs[d->self], n - 1);
    *out = d;
    return 0;
fail:
    sodium_memzero(o.links.secret, sizeof(o.links.secret));
    dlinks_stop(d);
    return rc;
}
