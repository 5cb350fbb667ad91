/*
 * shard/serve/reads.h - the NonReplicated reads a data shard answers from
 * the published metadata instance (iggy-client-protocol-2 §1-4, §7):
 * GetStats, GetClusterMetadata, DescribeOptions, GetMe, GetClient(s),
 * GetStream(s), GetTopic(s), GetUser(s), GetPATs, GetGroup(s), SyncGroup,
 * and vstream's GetTopicReplicas (SERVE_C_GET_TOPIC_REPLICAS, authorized
 * like GetTopic), whose body is
 *   [stream_id u32][topic_id u32][replication_factor u8][nodes u8]
 *   [partitions_count u32], then per partition in id order
 *   [partition_id u32][group_id u64][replica_count u8][replicas u8 x
 *   replica_count][primary u8 (view 0, 255 = none)].
 * Partitions are not yet replicated: the primary is the set's view-0
 * member (placement.h), what the partition's group will start with.
 *
 * serve_read() runs inside the caller's read section (the state pointer
 * comes from lr_read_begin and must not be kept), does no I/O on
 * sockets and never blocks; it checks authorization with
 * meta_authz_check (denied -> 41) and answers "not found" on a
 * single-object read with status 0 and an empty body.
 * Connection data (GetMe, GetClient(s)) comes from the serving layer
 * through the callbacks in struct serve_read_env.
 *
 * Callers: data shards on their event loop; tests.
 */
#ifndef VS_SHARD_SERVE_READS_H
#define VS_SHARD_SERVE_READS_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/config.h"
#include "shard/serve/cluster.h"
#include "shard/serve/proto.h"

/* One client connection as GetMe/GetClient(s) report it. */
struct serve_client_info {
    uint32_t client_id;    /* per-connection number */
    uint32_t user_id;      /* META_NONE (0xFFFFFFFF) = not logged in */
    struct vs_u128 client; /* registered client id (groups), 0 if none */
    char address[64];      /* "ip:port" */
};

typedef void serve_client_visit_fn(void *arg,
                                   const struct serve_client_info *ci);

struct serve_read_env {
    const struct vs_config *cfg;
    uint32_t user_id; /* the caller (logged in) */
    const struct serve_client_info *self;
    char listen_ip[64]; /* the client address really served */
    uint16_t listen_port;
    uint64_t start_time_us; /* this process's start (GetStats) */
    /* the node's connections (every data shard's, clients.h): by id (1
     * found, 0 not) and all */
    int (*client_by_id)(void *arg, uint32_t id, struct serve_client_info *out);
    void (*each_client)(void *arg, serve_client_visit_fn *fn, void *fnarg);
    void *arg;
    /* The node's cluster view (NULL or not clustered: one node). */
    const struct serve_cluster *cluster;
};

/* Answers one decoded read into `out` (the reply body). Returns the
 * header status (0, 3, 41). */
uint32_t serve_read(const void *st, const struct serve_read_env *env,
                    const struct serve_read_req *q, struct vs_wbuf *out);

/* Individual record writers (exported for the golden tests). */
void serve_wr_cluster_metadata(struct vs_wbuf *w, const char *cluster,
                               const char *node, const char *ip,
                               uint16_t tcp_port);
void serve_wr_describe_options(struct vs_wbuf *w, uint8_t scope);
void serve_wr_client_info(struct vs_wbuf *w, const void *st,
                          const struct serve_client_info *ci, int details);

#endif /* VS_SHARD_SERVE_READS_H */
