/*
 * tests/integration/cluster.h - a local cluster of real vstreamd nodes
 * for the integration tests (check_cluster_*).
 *
 * Role: vs_cluster_init() creates n nodes (harness.h: a temp dir each),
 * picks free loopback ports for every node's client and replica
 * listeners (bound once to port 0, read back, closed; the nodes bind them
 * again; a replica port is taken only if its data shards' link ports,
 * port + s x 100 for s up to VS_CLUSTER_SHARDS_MAX, are free as well and
 * cannot meet another node's), writes the cluster secret (32 random bytes, mode
 * 0600) and runs `vstreamd format` on every data dir. vs_cluster_start_node()
 * starts one node with the cluster flags (--replica-id, --replica-addrs, the
 * secret,
 * --with-default-root-credentials, its client address) plus the test's
 * extra arguments. A test may point node i's entry for replica j at a
 * fault proxy (tests/integration/proxy.h) with vs_cluster_set_peer()
 * before starting node i. Every wait is bounded; nodes are stopped by
 * pid (harness.h); vs_cluster_cleanup() kills what still runs and
 * removes every dir.
 * Callers: the Check-forked test process of the cluster tests.
 */
#ifndef VS_TESTS_CLUSTER_H
#define VS_TESTS_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "tests/integration/harness.h"

#define VS_CLUSTER_MAX      5u
#define VS_CLUSTER_START_MS 30000u
/* Data shards' link ports the port picker keeps free (shard/link/plan.h,
 * the default data_link_port_stride). */
#define VS_CLUSTER_SHARDS_MAX 8
#define VS_CLUSTER_STRIDE     100

struct vs_cluster {
    unsigned n;
    struct vs_node node[VS_CLUSTER_MAX];
    char client[VS_CLUSTER_MAX][32];  /* "127.0.0.1:PORT" */
    char replica[VS_CLUSTER_MAX][32]; /* where node i listens */
    /* peer[i][j]: node i's address for replica j (default replica[j]) */
    char peer[VS_CLUSTER_MAX][VS_CLUSTER_MAX][32];
    char dir[256]; /* secret and scratch */
    char secret_file[320];
    const char *const *extra; /* more arguments for every node, or NULL */
};

/* Picks a free loopback port (bind 0, read back, close). >0 or -errno. */
int vs_free_port(void);

/* Creates n nodes, their ports, the secret, and formats every data dir.
 * 0 or -errno (the formats' stderr is in each node's stderr file). */
int vs_cluster_init(struct vs_cluster *cl, unsigned n);
/* Node i's address for replica j (a fault proxy, say). */
void vs_cluster_set_peer(struct vs_cluster *cl, unsigned i, unsigned j,
                         const char *addr);
/* Builds node i's arguments (cluster flags + extra) into argv[max]
 * (NULL-terminated; strings live in cl or are literals). Returns argc. */
size_t vs_cluster_args(struct vs_cluster *cl, unsigned i, const char **argv,
                       size_t max, char *addrs, size_t addrs_len);
/* Starts node i and waits for its ready file. 0 or as vs_node_start. */
int vs_cluster_start_node(struct vs_cluster *cl, unsigned i,
                          uint32_t timeout_ms);
/* Starts every node. 0 or the first error. */
int vs_cluster_start(struct vs_cluster *cl, uint32_t timeout_ms);
/* Kills every running node (SIGKILL, reaped) and removes the dirs
 * (kept, and named on stderr, when VS_KEEP_CLUSTER is set). */
void vs_cluster_cleanup(struct vs_cluster *cl);

/* ---- client-side helpers (the C client library) ---- */
struct vsc;

/* A node's own account of the cluster (GetReplicaStatus, vendor code
 * 9100; layout in shard/serve/cluster.h). */
struct vs_replica_status {
    uint32_t count;
    uint8_t self, status, leader;
    uint32_t view, log_view;
    uint64_t op, commit_min, commit_max, checkpoint_op;
    uint64_t checkpoint_lo, checkpoint_hi;
    struct {
        char addr[64];
        uint8_t role, status, link;
    } nodes[VS_CLUSTER_MAX];
};

/* Connects to node i (library handle, io timeout io_ms, no leader
 * following; not logged in). */
struct vsc *vs_cluster_connect(struct vs_cluster *cl, unsigned i,
                               uint32_t io_ms);
/* Logs in as iggy/iggy on node i, retrying (bounded by timeout_ms) while
 * the cluster has no root user yet or no settled primary. NULL on
 * timeout. */
struct vsc *vs_cluster_login(struct vs_cluster *cl, unsigned i,
                             uint32_t timeout_ms);
/* GetReplicaStatus on a logged-in handle. 0 or the call's error. */
int vs_replica_status(struct vsc *c, struct vs_replica_status *out);

#endif /* VS_TESTS_CLUSTER_H */
