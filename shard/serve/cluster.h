/*
 * shard/serve/cluster.h - a data shard's copy of its node's view of the
 * cluster (FWD_CLUSTER from shard 0, shard/fwd.h) and what it serves
 * from it.
 *
 * Role: GetClusterMetadata on a cluster node lists every replica by its
 * configured name (common/names.h: replica_names, default "replica-<id>")
 * at the client address it advertised, `Leader` for the
 * settled primary of the current view only (none during a view change),
 * `Follower` for the others, status Healthy / Starting / Unreachable as
 * shard 0 reports them (shard/zero/cluster_view.h); before the first
 * report it lists this node alone as a Starting Follower. The vendor read
 * GetReplicaStatus (SERVE_C_REPLICA_STATUS, NonReplicated, login needed)
 * returns the whole report for `vstream cluster`:
 *   [count u32][self u8][status u8][leader u8 (255 none)][view u32]
 *   [log_view u32][op u64][commit_min u64][commit_max u64]
 *   [checkpoint_op u64][checkpoint_checksum u128], then per node [addr_len
 * u32][addr][role u8] [status u8][link u8 (links_state, 255 self)][bytes_in
 * u64][bytes_out u64], then (once a report arrived) this node's metadata
 * state transfer as a trailer a reader of the older layout ignores (it
 * stops after the last node; a reader of this one finds no trailer in an
 * older server's reply):
 *   [version u8 = 1][stage u8 (0 idle, 1 awaiting target, 2 fetching,
 *   3 installing)][peer u8 (serving replica, 255 none)][fetched u64]
 *   [total u64 (bytes of the running session; 0 until the manifest)]
 *   [sessions u64][completed u64][abandoned u64][last_bytes u64]
 *   [last_ms u64 (bytes and duration of the last installed session)]
 *   [last_len u32][last (how the last session ended, "" none)].
 * Until partitions are replicated only the leader's node
 * serves the partition plane (send, poll, offsets, flush): on any other cluster
 * node such a request is answered status 58 NotAccepted (the SDKs retry it;
 * ours move to the leader first) with the body [len u32][leader client
 * address] ("" when no leader is settled), so one partition never has two
 * histories.
 * Callers: data shards, on their loop thread.
 */
#ifndef VS_SHARD_SERVE_CLUSTER_H
#define VS_SHARD_SERVE_CLUSTER_H

#include <stdint.h>

#include "common/buf.h"
#include "common/names.h"
#include "shard/fwd.h"

/* Vendor NonReplicated code of GetReplicaStatus. */
#define SERVE_C_REPLICA_STATUS 9100u
/* The version byte of GetReplicaStatus's transfer trailer. */
#define SERVE_CLUSTER_XFER_VERSION 1u

struct serve_cluster {
    int clustered; /* replica_addrs names more than one replica */
    int have;      /* a report arrived */
    uint8_t self;
    struct vs_names names; /* every replica's name */
    struct fwd_cluster v;
};

struct vs_config;

/* From the (finalized) config: replica count, this node's id, names. */
void serve_cluster_init(struct serve_cluster *sc, const struct vs_config *cfg);
/* A FWD_CLUSTER frame from shard 0 (header included): 0, or -EBADMSG
 * (wrong size or count: dropped). */
int serve_cluster_on_frame(struct serve_cluster *sc, const void *frame,
                           uint32_t len);
/* 1 if this node must refuse the partition plane now; then the refusal
 * body (the leader's client address) is in body. */
int serve_cluster_refuses_data(const struct serve_cluster *sc,
                               struct vs_wbuf *body);
/* GetClusterMetadata's body for a cluster node. */
void serve_cluster_write_metadata(const struct serve_cluster *sc,
                                  const char *cluster, struct vs_wbuf *w);
/* GetReplicaStatus's body. */
void serve_cluster_write_status(const struct serve_cluster *sc,
                                struct vs_wbuf *w);

#endif /* VS_SHARD_SERVE_CLUSTER_H */
