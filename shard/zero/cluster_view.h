/*
 * shard/zero/cluster_view.h - shard 0's account of the cluster for its
 * data shards: who leads, each node's client address, role, status and
 * link, and this node's metadata state transfer (stage, serving peer,
 * bytes, last outcome: commit_transfer_info) (the FWD_CLUSTER frame of
 * shard/fwd.h).
 *
 * Role: cluster_view_fill() derives the view from this node's engine and
 * links only, so it is right at every moment from this node's standpoint:
 * a node is `Leader` only if this replica is Normal in the current view
 * and that node is the view's primary (the primary itself once it is the
 * settled primary, vsr_is_settled_primary; a backup once it adopted the
 * view); during a view change, or while this replica is Recovering, no
 * node is Leader. This node is
 * Healthy when Normal, else Starting; a peer is Healthy while its link is
 * up, else Unreachable. A peer's client address is the one it advertised
 * in its link hello (kept after the link drops). cluster_view_tick() sends
 * the frame to every data shard when it changed and once a second, and
 * logs every change of leader with the leader's node name.
 * Callers: shard 0's main (its 10 ms tick) only.
 */
#ifndef VS_SHARD_ZERO_CLUSTER_VIEW_H
#define VS_SHARD_ZERO_CLUSTER_VIEW_H

#include "common/names.h"
#include "shard/fwd.h"
#include "shard/shard.h"

struct commit;
struct links;
struct vs_port;

struct cluster_view {
    const struct vs_shard_ctx *ctx;
    struct vs_port *port;
    int clustered;
    struct fwd_cluster cur;                            /* last sent */
    char addrs[VS_REPLICAS_MAX][FWD_CLUSTER_ADDR_MAX]; /* last known */
    struct vs_names names;                             /* node names (logs) */
    uint32_t ticks;                                    /* since the last send */
    int sent; /* at least one frame went out */
};

void cluster_view_init(struct cluster_view *v, const struct vs_shard_ctx *ctx,
                       struct vs_port *port, const char *self_addr);
/* Fills *out from the engine of c and the links l (NULL: none up). */
void cluster_view_fill(struct cluster_view *v, const struct commit *c,
                       const struct links *l, struct fwd_cluster *out);
/* Sends FWD_CLUSTER to the data shards on a change or every 100 ticks
 * (a no-op on a one-replica node). */
void cluster_view_tick(struct cluster_view *v, const struct commit *c,
                       const struct links *l);

#endif /* VS_SHARD_ZERO_CLUSTER_VIEW_H */
