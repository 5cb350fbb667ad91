/*
 * shard/serve/dlinks.h - a data shard's links to the same shard of every
 * peer node (shard/link/mesh.h), set up from the node's configuration.
 *
 * Role: on a cluster node, data shard s opens its mesh: it listens on
 * the inherited listener the supervisor bound for it
 * (server/datalinks.h) and dials shard s of every higher replica id at
 * the address shard/link/plan.h derives from replica_addrs; the handshake
 * uses the cluster secret (and, with replica_tls_enabled, mutual TLS),
 * as shard 0's links do. Each tick it publishes the links' state and
 * counters in this process's metrics block (common/metrics.h: the
 * vstream_data_link* families).
 * They carry the coalesced beat frames (keepalives: the partition groups
 * do not post beat entries yet) and, with partition_replication, the
 * frames of the shard's partition groups (shard/serve/pgroups.h), which
 * reach the runtime through the hooks; without partition_replication a
 * frame that is not a beat is refused by the mesh (counted, the link
 * ended), as before.
 * Callers: the data shard's main (shard/serve/main.c), loop thread.
 */
#ifndef VS_SHARD_SERVE_DLINKS_H
#define VS_SHARD_SERVE_DLINKS_H

#include <stddef.h>

#include "shard/shard.h"

struct event_base;
struct dlinks;

/* Starts the mesh of data shard ctx->slot. 0 with *out (NULL on a
 * one-replica node: nothing to link), or -errno with the one-line reason
 * in err (a configuration the supervisor let through that still fails:
 * the caller refuses to run). */
int dlinks_start(struct event_base *base, const struct vs_shard_ctx *ctx,
                 struct dlinks **out, char *err, size_t errlen);
/* What the shard's partition-group runtime gets from the links: frames
 * other than beats, each tick (after the beats' flush) and link state. */
struct beat_hdr;
struct dlinks_hooks {
    void (*on_frame)(void *ctx, uint8_t peer, const void *frame, size_t len);
    /* a valid beat frame's entries (mesh.h on_beat); NULL: ignored */
    void (*on_beat)(void *ctx, uint8_t peer, const struct beat_hdr *h,
                    const uint8_t *body);
    void (*on_tick)(void *ctx);
    void (*on_state)(void *ctx, uint8_t peer, int up);
    void *ctx;
};
/* Sets (or with NULL clears) the hooks. */
void dlinks_set_hooks(struct dlinks *d, const struct dlinks_hooks *h);
struct mesh;
struct mesh *dlinks_mesh(struct dlinks *d);

/* Closes the links and frees. NULL is accepted. */
void dlinks_stop(struct dlinks *d);

#endif /* VS_SHARD_SERVE_DLINKS_H */
