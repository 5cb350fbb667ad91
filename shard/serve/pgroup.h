/*
 * shard/serve/pgroup.h - one replicated partition's consensus group on
 * this node: the VSR engine (shard/vsr/engine.h) bound to the partition's
 * journal (shard/data/pjournal.h) and to the data shard's links.
 *
 * Role: the data shard that owns a partition (its shard s on every node
 * of the partition's replica set) runs one pgroup per replicated
 * partition. The shard's runtime (pgroups, shard/serve/pgroups.h) routes
 * link frames to it by the header's group id, ticks it, and hands it the
 * sends of producers; this file performs the engine's actions:
 *   SEND              -> env->send (data link to shard s of that node)
 *   JOURNAL_APPEND    -> pj_append, then an fsync (env->sync, off the loop,
 *                        shared by every group of the shard), then
 *                        vsr_on_journal_durable for each op it covered
 *   JOURNAL_TRUNCATE  -> pj_truncate_from
 *   SUPERBLOCK_WRITE  -> pj_state_write (durable) -> on_superblock_durable
 *   COMMIT            -> pj_set_commit (the batch becomes visible to
 *                        polls), consumer-offset / retention ops applied
 *                        to the partition, vsr_on_commit_applied
 *   REPLY             -> env->reply to the producer (after the commit)
 *   SEND_PREPARE      -> pj_read, then env->send with command 19
 *   STATE_TRANSFER    -> partition state transfer (later; counted)
 *
 * Group ids: pgroup_group_id() of the partition's identity; never equal
 * to VS_METADATA_GROUP. Replica index = the node's position in the
 * partition's replica set (meta_partition.replicas); the engine's primary
 * of view v is replicas[v % count] (placement.h's rule).
 * Offsets: the primary stamps a send's batch (base_offset = next offset
 * of its log, committed or not, in op order) before it is proposed; the
 * prepare body is that stamped batch, so every replica stores the same
 * bytes.
 * Deduplication: by the Register'd client id and request number (the
 * request header's client/request), never by the transport/connection id.
 * Invariants: no PrepareOk before durable; no reply before commit; polls
 * never see an uncommitted batch. Process: data shards, loop thread.
 */
#ifndef VS_SHARD_SERVE_PGROUP_H
#define VS_SHARD_SERVE_PGROUP_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/data/partition.h"
#include "shard/data/pjournal.h"
#include "shard/vsr/engine.h"

struct vs_pgroup;

/* What the shard's runtime provides to a group. */
struct pgroup_env {
    void *ctx;
    /* Queues frame (header + body) to replica index `replica` of this
     * group. 0, or -EAGAIN when the link's queue is full (the engine
     * retransmits), or -ENOTCONN. */
    int (*send)(void *ctx, struct vs_pgroup *g, uint8_t replica,
                const void *frame, size_t len);
    /* The committed answer of a producer's send (a reply frame). */
    void (*reply)(void *ctx, struct vs_pgroup *g, struct vs_u128 client,
                  const void *frame, size_t len);
    /* Asks for an fsync of the group's journal off the loop; the runtime
     * calls pgroup_on_synced(g, &t) on the loop when done. */
    void (*sync)(void *ctx, struct vs_pgroup *g);
};

struct pgroup_opts {
    struct vs_u128 cluster;
    struct part_id id;
    uint8_t replica;       /* this node's index in the replica set */
    uint8_t replica_count; /* the replica set's size */
    uint32_t journal_slots;
    uint32_t pipeline_max;
    uint32_t body_max;
    uint64_t seed;
    struct vs_vsr_timeouts timeouts;
};

/* The group id of a partition (a pure function of its identity; the same
 * on every node). */
uint64_t pgroup_group_id(const struct part_id *id);

/* Opens the group on an opened partition: pj_open, then vsr_create from
 * what it recovered (Recovering when it had a prior life). 0, or -errno
 * with one line in `reason` (a refusal: the shard logs it and keeps the
 * partition unserved). */
int pgroup_open(const struct pgroup_opts *o, struct vs_part *p,
                const struct pgroup_env *env, struct vs_pgroup **out,
                char *reason, size_t reason_len);
void pgroup_close(struct vs_pgroup *g);

/* A producer's send on this node: stamp and propose (primary only).
 * 0 (the reply comes through env->reply after the commit), -EREMOTE (not
 * the primary: pgroup_primary() names the replica to forward to),
 * -EAGAIN (no settled primary), -EBUSY (pipeline full), -EINVAL (batch
 * refused; *berr says why). */
int pgroup_on_send(struct vs_pgroup *g, const struct vs_hdr_request *req,
                   uint8_t *batch, size_t len, uint64_t wall_us,
                   enum batch_err *berr);
/* A frame from a peer's shard for this group. */
enum vsr_verdict pgroup_on_message(struct vs_pgroup *g, const void *frame,
                                   size_t len);
void pgroup_tick(struct vs_pgroup *g);
void pgroup_on_synced(struct vs_pgroup *g, const struct pj_sync_target *t);

/* Introspection. */
uint64_t pgroup_id(const struct vs_pgroup *g);
int pgroup_primary(const struct vs_pgroup *g); /* replica index, -1 none */
int pgroup_is_settled_primary(const struct vs_pgroup *g);
uint64_t pgroup_commit(const struct vs_pgroup *g);
struct vs_part *pgroup_part(struct vs_pgroup *g);

#endif /* VS_SHARD_SERVE_PGROUP_H */
