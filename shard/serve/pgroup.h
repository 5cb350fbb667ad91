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
 *                        (interval policy: durable once written)
 *   JOURNAL_TRUNCATE  -> pj_truncate_from
 *   SUPERBLOCK_WRITE  -> pj_state_write (durable, an fsync on the loop:
 *                        view changes and checkpoints only) ->
 *                        on_superblock_durable
 *   COMMIT            -> pj_set_commit (the batch becomes visible to
 *                        polls), consumer-offset ops (store, delete) and
 *                        trim ops (retention, DeleteSegments, purges:
 *                        see Trims)
 *                        applied to the partition, vsr_on_commit_applied
 *   REPLY             -> not used: the COMMIT answers the proposal's
 *                        waiter through env->reply (see Replies below)
 *   SEND_PREPARE      -> pj_read, then env->send with command 19
 *   STATE_TRANSFER    -> partition state transfer (pxfer.h): the engine
 *                        is armed (vsr_transfer_begin) and the group's
 *                        primary asked for its partition at its
 *                        checkpoint; commands 22-25 of the group go to
 *                        pxfer, never to the engine. A fetched partition
 *                        staged and verified stops the group
 *                        (pgroup_install_pending): the runtime closes it
 *                        and the partition, swaps the directories
 *                        (shard/data/pinstall.h) and reopens both; the
 *                        engine recovers at the checkpoint and repairs
 *                        above it. A session that ends without an install
 *                        disarms the engine (repair resumes and asks
 *                        again).
 * Replies come from COMMIT, not from the engine's REPLY action. A
 * proposal's key is (client, request, request_checksum): a client's sends
 * do not advance the request number, so the runtime stamps the request
 * checksum (XXH3 of the batch as received when the client left it zero)
 * and consecutive batches differ by it. Every replica keeps a client
 * table (client id -> its last 4 committed proposals with op, base offset
 * and result, built from the committed prepares' headers; at most 4096
 * clients per group, least recently committed evicted) and the primary a
 * list of waiters for the proposals it accepted or recognised as already
 * prepared (an op adopted from a former primary); the COMMIT of a
 * waiter's op answers it. A retry of a committed proposal is answered
 * again from the table; of an uncommitted one, at its commit; a proposal
 * cut by a view change is answered status 57
 * (VS_E_TRANSIENT_NOT_COMMITTED: the client resends, the new primary
 * deduplicates). A request number below the client's highest committed
 * one is never proposed again (answered if it is one of the cached four,
 * else -ESTALE). The table (shard/serve/pgclients.h) is saved to the
 * partition's `clients` file before every checkpoint and loaded at open,
 * so it survives restarts beyond the recovered journal window.
 * At-least-once edge: a copy of a proposal at the client's current
 * request number that arrives after four newer batches with that number
 * committed is not recognised and is stored again (Iggy's SDKs send
 * every batch at one request number).
 * Consumer-offset ops: a store's result is checked against the committed
 * frontier at the op (deterministic on every replica); the highest
 * applied offset op is persisted (<partition>/offsets_applied) so a
 * replay after a restart does not apply it again; a storage failure in
 * the apply stops the group (the op is applied again after the restart).
 * A poll's auto-commit on a replica is such an op too (a raising store,
 * proposed by the primary, forwarded to it from a backup): the offset a
 * consumer reads back on any replica is the group's.
 * Trims: retention (message expiry, size cap) and DeleteSegments of a
 * replicated partition are ops of its group (operation
 * VS_OP_DELETE_SEGMENTS, body PGROUP_TRIM_BODY): only the primary
 * proposes one (pgroup_on_trim), naming the range of sealed segments that
 * go ([first, watermark): the first segment's start and the start of the
 * first one that stays, as its own log has them); every replica applies it
 * at its op with part_apply_watermark (the same sealed segments: the
 * replicas' logs are byte-identical up to the commit, and every op before
 * the trim is applied first) and removes their .vsr records
 * (pj_drop_segment). A backup never runs retention on its own.
 * Purges (PurgeTopic, PurgeStream) are trims of kind PGROUP_TRIM_PURGE
 * at the group's next offset W when proposed: a replica appending one
 * seals its active segment (every replica then has a segment boundary
 * at W, since every op before it is appended first and every later one
 * after); committing it, a replica whose partition has an older purge
 * generation deletes every segment below W, every consumer offset
 * (gated by the applied offset-op mark on a replay), and records the
 * generation (part_set_purge_generation); offsets continue from W (a
 * group never reuses an offset). The ops of
 * deleted segments then read as gone (a peer asking for them is answered
 * by another replica or falls back to a state transfer).
 * Reply frames (env->reply): a struct vs_hdr_reply echoing client,
 * request, request_checksum and operation, with status; status 0 carries
 * the body: a send's confirmation [1 u32][stream u32][topic u32]
 * [partition u32][base_offset u64] (data.h), an offset op's result
 * section 00000000; a non-zero status has no body.
 * Checkpoints: the applied log is the partition's state, so after every
 * journal_slots / 2 applied ops the binding checkpoints at the applied op
 * (checksum = its prepare's identity) and the window moves.
 * Out of space on a journal append, or a fatal I/O error: the group stops
 * (pgroup_fatal() is 1; nothing more is written or acknowledged); the
 * runtime closes it and reopens it (after freeing space) or exits 2.
 *
 * Group ids: pgroup_group_id() of the partition's identity; never equal
 * to VS_METADATA_GROUP. Replica index = the node's position in the
 * partition's replica set (meta_partition.replicas); the engine's primary
 * of view v is replicas[v % count] (placement.h's rule).
 * Offsets: the primary stamps a send's batch (base_offset = next offset
 * of its log, committed or not, in op order) before it is proposed; the
 * prepare body is that stamped batch, so every replica stores the same
 * bytes.
 * Deduplication: by the Register'd client id, request number and request
 * checksum of the request header (see Replies above), never by the
 * transport/connection id.
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

struct pxfer_sync;   /* shard/serve/pxfer.h */
struct pxfer_budget; /* shard/serve/pxfer.h */

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
    /* Asks for an fsync of the group's journal off the loop: the runtime
     * takes the target with pj_sync_target(pgroup_journal(g), &t) (or
     * pgroup_sync_target) on the loop, fsyncs t.log_fd and t.vsr_fd (dup
     * them first if the fsync runs on another thread), and calls
     * pgroup_on_synced(g, &t) on the loop when done. Not called again
     * until pgroup_on_synced. Under the interval policy appends count as
     * durable once written (the PrepareOk goes at once) and the sync is
     * asked every 10 ticks while appends are unsynced. */
    void (*sync)(void *ctx, struct vs_pgroup *g);
    /* Asks for the fsync of the superblock file `fd` (written, not yet
     * durable) off the loop: the runtime dups fd, fsyncs it and calls
     * pgroup_on_state_synced(g) on the loop. The engine hears of the
     * write only then, so what waits for it (R1: PrepareOk, Commit,
     * view change messages) stays withheld until the fsync completed;
     * one at a time (the engine has one write in flight). NULL: the
     * write is fsynced on the calling thread. */
    void (*state_sync)(void *ctx, struct vs_pgroup *g, int fd);
    /* Asks for the fsync of fds[0..n) (a partition state transfer's
     * staged files and directories) off the loop: the runtime dups them
     * (they are closed when this returns), fsyncs them and calls
     * pxfer_fsynced(tok) on the loop (shard/serve/pxfer.h). NULL: they
     * are fsynced on the calling thread. */
    void (*files_sync)(void *ctx, struct vs_pgroup *g, const int *fds, size_t n,
                       struct pxfer_sync *tok);
};

struct pgroup_opts {
    struct vs_u128 cluster;
    struct part_id id;
    uint8_t replica;       /* this node's index in the replica set */
    uint8_t replica_count; /* the replica set's size */
    uint32_t journal_slots;
    uint32_t pipeline_max;
    uint32_t body_max;
    /* The engine's seed; a restarted replica's incarnation derives from
     * it, so the runtime draws a fresh one on every boot. */
    uint64_t seed;
    struct vs_vsr_timeouts timeouts;
    /* The data shard's partition state transfer budget (pxfer.h),
     * shared by its groups; NULL: no limit. */
    struct pxfer_budget *fetch_budget;
};

/* Counters (logs, metrics, tests). */
struct pgroup_stats {
    uint64_t proposals, duplicates, replies, waiters_dropped;
    uint64_t appends, syncs, commits, truncations, superblock_writes;
    uint64_t repairs_served, state_transfers, enospc, stale;
    uint64_t trims, segments_trimmed;
};

/* The body of a consumer-offset op (VS_OP_STORE_CONSUMER_OFFSET /
 * VS_OP_DELETE_CONSUMER_OFFSET), 24 bytes little endian:
 * kind u8 (enum part_consumer_kind) | raise u8 | 2 zero bytes | id u32 |
 * group_created_op u64 | offset u64 (0 for a delete). raise (stores
 * only) is 1 for a poll's auto-commit: the stored offset is raised to
 * `offset`, never lowered (an explicit store sets it as given). */
#define PGROUP_OFFSET_BODY 24u
struct pgroup_offset_op {
    uint8_t kind;
    uint8_t raise;
    uint32_t id;
    uint64_t group_created_op;
    uint64_t offset;
};
void pgroup_offset_encode(const struct pgroup_offset_op *o,
                          uint8_t out[PGROUP_OFFSET_BODY]);
/* 0, or -EINVAL for a body of another size, kind, a raise flag above 1
 * or non-zero padding. */
int pgroup_offset_decode(const uint8_t *b, size_t len,
                         struct pgroup_offset_op *o);

/* The body of a trim op (VS_OP_DELETE_SEGMENTS in a partition group), 24
 * bytes little endian: kind u8 (enum pgroup_trim_kind) | 7 zero bytes |
 * first u64 (start offset of the first segment the proposer held) |
 * watermark u64 (start offset of the first segment that stays; every
 * sealed segment whose messages all lie below it goes). */
#define PGROUP_TRIM_BODY 24u
enum pgroup_trim_kind {
    PGROUP_TRIM_RETENTION = 1,       /* message expiry or the size cap */
    PGROUP_TRIM_DELETE_SEGMENTS = 2, /* the metadata's watermark */
    /* PurgeTopic / PurgeStream: `first` carries the metadata's purge
     * generation, `watermark` the offset the purge stops at (the next
     * offset when it was proposed; 0 for an empty partition) */
    PGROUP_TRIM_PURGE = 3
};
struct pgroup_trim_op {
    uint8_t kind;
    uint64_t first;
    uint64_t watermark;
};
void pgroup_trim_encode(const struct pgroup_trim_op *t,
                        uint8_t out[PGROUP_TRIM_BODY]);
/* 0, or -EINVAL (size, kind, padding, watermark not above first; for a
 * purge, a generation of 0). */
int pgroup_trim_decode(const uint8_t *b, size_t len, struct pgroup_trim_op *t);

/* The group id of a partition (a pure function of its identity; the same
 * on every node). */
uint64_t pgroup_group_id(const struct part_id *id);

/* Opens the group on an opened partition: pj_open, then vsr_create from
 * what it recovered (Recovering when it had a prior life). A fresh
 * member of a multi-replica group first writes an empty partition
 * superblock (durable), so any later open counts as a prior life even if
 * nothing else became durable before a crash. 0, or -errno
 * with one line in `reason` (a refusal: the shard logs it and keeps the
 * partition unserved). */
int pgroup_open(const struct pgroup_opts *o, struct vs_part *p,
                const struct pgroup_env *env, struct vs_pgroup **out,
                char *reason, size_t reason_len);
/* Frees the group and its journal handle without any fsync (a sync in
 * flight is abandoned: the runtime drops its completion); the partition
 * stays open, the caller closes it after. */
void pgroup_close(struct vs_pgroup *g);

/* A producer's send on this node: stamp and propose (primary only).
 * 0 (the reply comes through env->reply after the commit; also for a
 * retry of a request already prepared or committed, which is answered
 * without a new op), -EREMOTE (not the primary: pgroup_primary() names
 * the replica to forward to), -EAGAIN (no settled primary), -EBUSY
 * (pipeline or journal window full), -EALREADY (this client has another
 * request in flight), -ESTALE (a request number below the client's
 * highest committed one that is not among its cached proposals: a late
 * copy, never proposed again), -EINVAL (batch refused; *berr says why),
 * -VS_EFATAL (the group stopped). A refused batch is left unstamped. */
int pgroup_on_send(struct vs_pgroup *g, const struct vs_hdr_request *req,
                   uint8_t *batch, size_t len, uint64_t wall_us,
                   enum batch_err *berr);
/* A consumer-offset op on the primary (same results as pgroup_on_send;
 * the reply's status carries the apply result: 0, 4100 InvalidOffset,
 * 3021 not found). */
int pgroup_on_offset(struct vs_pgroup *g, const struct vs_hdr_request *req,
                     uint8_t operation, const struct pgroup_offset_op *o,
                     uint64_t wall_us);
/* A poll's auto-commit on the primary: proposes a raising store (o->raise
 * is forced to 1) without a client and without a waiter (best effort, as
 * Iggy's: the poll's reply does not wait for it; every replica applies
 * it at its op). 0 (proposed, or nothing to do: the applied offset is
 * already at or above it, or the same op is in flight), or
 * pgroup_on_send's -EREMOTE / -EAGAIN / -EBUSY / -VS_EFATAL. */
int pgroup_on_autocommit(struct vs_pgroup *g, const struct pgroup_offset_op *o,
                         uint64_t wall_us);
/* A trim on the primary (see Trims): proposes it without a client. 0
 * (proposed, or nothing to do: the watermark deletes no segment here, or
 * a trim is in flight already), or pgroup_on_send's -EREMOTE / -EAGAIN /
 * -EBUSY / -VS_EFATAL, -EINVAL (a bad kind). */
int pgroup_on_trim(struct vs_pgroup *g, uint8_t kind, uint64_t watermark,
                   uint64_t wall_us);
/* A purge on the primary (see Trims, purges): proposes purge generation
 * `generation` at the group's next offset. 0 (proposed, or nothing to
 * do: the partition has it, or a trim or purge is in flight), or
 * pgroup_on_send's -EREMOTE / -EAGAIN / -EBUSY / -VS_EFATAL, -EINVAL
 * (generation 0). */
int pgroup_on_purge(struct vs_pgroup *g, uint64_t generation, uint64_t wall_us);
/* The group's journal (for pj_sync_target). */
struct vs_pjournal *pgroup_journal(struct vs_pgroup *g);
/* Takes the sync target env->sync asked for (see pgroup_env). 0 or
 * -errno (the group stopped). */
int pgroup_sync_target(struct vs_pgroup *g, struct pj_sync_target *t);
/* Takes the target, fsyncs on the calling thread, completes (tests,
 * shutdown). 0 or -VS_EFATAL. */
int pgroup_sync_now(struct vs_pgroup *g);
/* A frame from a peer's shard for this group. */
enum vsr_verdict pgroup_on_message(struct vs_pgroup *g, const void *frame,
                                   size_t len);
void pgroup_tick(struct vs_pgroup *g);
/* A settled primary sends its commit to the backups now
 * (vsr_heartbeat_now): a node that forwarded a request waits for it. */
void pgroup_heartbeat_now(struct vs_pgroup *g);
void pgroup_on_synced(struct vs_pgroup *g, const struct pj_sync_target *t);
/* The superblock fsync env->state_sync asked for completed. */
void pgroup_on_state_synced(struct vs_pgroup *g);

/* Introspection. */
uint64_t pgroup_id(const struct vs_pgroup *g);
int pgroup_primary(const struct vs_pgroup *g); /* replica index, -1 none */
int pgroup_is_settled_primary(const struct vs_pgroup *g);
uint64_t pgroup_commit(const struct vs_pgroup *g); /* applied op */
struct vs_part *pgroup_part(struct vs_pgroup *g);
const struct vs_vsr *pgroup_engine(const struct vs_pgroup *g);
int pgroup_fatal(const struct vs_pgroup *g); /* 1: stopped */
void pgroup_stats(const struct vs_pgroup *g, struct pgroup_stats *out);
/* 1 once a fetched partition is staged (pxfer.h): the group takes no
 * more input; close it, swap (pinstall_swap) and reopen. */
int pgroup_install_pending(const struct vs_pgroup *g);
struct pxfer_info;
void pgroup_xfer_info(const struct vs_pgroup *g, struct pxfer_info *out);

#endif /* VS_SHARD_SERVE_PGROUP_H */
