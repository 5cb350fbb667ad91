/*
 * shard/serve/data.h - the data plane of a data shard's client protocol
 *: SendMessages (op 160), PollMessages (NR 100), consumer
 * offsets (NR 120 get, op 161 store, op 162 delete), FlushUnsavedBuffer
 * (NR 102), with the request executed on the partition's owning shard.
 *
 * Flow: the shard that owns the client connection decodes the body,
 * resolves stream/topic (by id or name) in the published state, checks
 * permissions (meta_authz_check: H 41), chooses the partition (send:
 * PartitionId, Balanced = a per-topic round robin of this shard,
 * MessagesKey = XXH32(key) % count over the partitions in ascending id
 * order), applies the consumer-group fence (poll: the re-sync sentinel
 * `partition_id = 0xFFFFFFFF`, count 0; offsets: H 20) and builds a
 * struct data_cmd naming the partition by (ids, created_op). If this
 * shard owns the partition (parts.h), the command runs at once; else it
 * is forwarded as FWD_DATA_REQUEST (shard/fwd.h) and the connection stays
 * in flight until the owner's FWD_DATA_REPLY (or 57 if the owner died).
 * A connection whose requests keep going to one other shard is handed to
 * that shard between requests (handoff.h), so forwarding stays rare.
 * On the owner the command runs against the open partition
 * (shard/data/partition.h): a bad batch is refused with its Iggy code and
 * nothing is stored; out of space, or free space on the data dir's
 * filesystem below disk_watermark_bytes, refuses sends (4006) while reads
 * keep working.
 *
 * Replies: send = op 160, not result-framed, exactly one confirmation
 * `[1 u32][stream u32][topic u32][partition u32][base_offset u64]`;
 * poll = `[partition u32][current_offset u64][count u32]` + the batch
 * records (count = messages returned); get offset = `[partition u32]
 * [current_offset u64][stored u64]` or empty; store/delete = result
 * section `00000000`; flush = empty. Sends and offset ops never touch the
 * client table (at-least-once, the request number does not advance).
 *
 * Callers: the data shard's loop thread (serve.c).
 */
#ifndef VS_SHARD_SERVE_DATA_H
#define VS_SHARD_SERVE_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

struct serve;
struct serve_conn;

enum data_kind {
    DATA_SEND = 1,
    DATA_POLL = 2,
    DATA_OFFSET_GET = 3,
    DATA_OFFSET_STORE = 4,
    DATA_OFFSET_DELETE = 5,
    DATA_FLUSH = 6,
};

/* A resolved data-plane command (the FWD_DATA_REQUEST payload head; the
 * batch of a send follows it). Same binary on both ends (one build). */
struct data_cmd {
    uint32_t kind; /* enum data_kind */
    uint32_t stream_id;
    uint32_t topic_id;
    uint32_t partition_id;
    uint64_t created_op;       /* of the partition */
    uint32_t consumer_kind;    /* 0 none, 1 consumer, 2 group */
    uint32_t consumer_id;      /* offset key / group id */
    uint64_t group_created_op; /* consumer_kind 2 */
    uint64_t value;            /* poll strategy value; store: offset */
    uint32_t strategy;         /* enum part_strategy (poll) */
    uint32_t count;            /* poll */
    uint32_t autocommit;       /* poll */
    uint32_t fsync;            /* flush */
};
_Static_assert(sizeof(struct data_cmd) == 64, "data_cmd layout");

/* Creates the owned-partition set (opening what the published state
 * lists) and the data-plane timer. 0 or -errno. */
int serve_data_init(struct serve *s);
void serve_data_fini(struct serve *s);

/* Gives the partition groups (pgroups.h) the shard's data links (NULL:
 * detach them before the links are stopped). */
struct dlinks;
void serve_data_attach_links(struct serve *s, struct dlinks *dl);
/* 1 if partition replication runs on this shard: the interim rule
 * (cluster.h: only the leader's node serves the partition plane) no
 * longer applies, the partition's replica set decides. */
int serve_data_replicated(const struct serve *s);

/* 1 if the request is the data plane's (op 160..162, NR 100/102/120). */
int serve_data_is_data(unsigned operation, uint32_t code);
/* Serves one data-plane request of a bound connection (exactly one
 * answer, now or when the owner replies). */
void serve_data_request(struct serve_conn *c, const struct vs_hdr_request *req,
                        const uint8_t *body, size_t len);
/* IPC: FWD_DATA_REQUEST / FWD_DATA_REPLY from data shard `src`. */
void serve_data_on_frame(struct serve *s, uint32_t src, const void *frame,
                         uint32_t len);

#endif /* VS_SHARD_SERVE_DATA_H */
