/*
 * shard/zero/commit.h - shard 0's commit path: the I/O-free VSR engine
 * (shard/vsr/engine.h) bound to the metadata
 * journal, the superblock, the left-right buffer, the client table and
 * the data shards' forwarded requests (shard/fwd.h). DESIGN §3-§5,
 * iggy-server-ng.md §2-§4.
 *
 * Role: a struct commit owns the engine, the open journal (moved out of
 * shard0_recovered), the superblock store, the shard-0-private reply part
 * of the client table (struct meta_client_table) and drives the
 * left-right writer. Every input (a forwarded frame, a tick, genesis) is
 * followed by a synchronous drain of the engine's actions:
 *   JOURNAL_APPEND   -> wal_append (fsyncs) -> vsr_on_journal_durable
 *   SUPERBLOCK_WRITE -> sb_write -> vsr_on_superblock_durable
 *   COMMIT           -> lr_publish(op): meta_apply on each instance (the
 *                       first result is kept), the reply frame built from
 *                       prepare + output and recorded in the client table,
 *                       then vsr_on_commit_applied
 *   REPLY            -> FWD_REPLY to the data shard that proposed the op
 * so a request is answered only after it is durable, applied and
 * published (read your writes).
 *
 * FWD_PROPOSE: the client table answers first (Duplicate -> the cached
 * frame byte for byte; NoSession/SessionTooLow/EpochAhead/ChecksumMismatch/
 * AlreadyApplied -> the Eviction of client_table.h, flag FWD_F_UNBIND);
 * Register skips the table (every bind commits); New -> vsr_on_request.
 * Not ready, pipeline full or the client already in flight -> status 57
 * TransientNotCommitted (the SDK resends unchanged); a journal full even
 * after a forced checkpoint, or out of space on the append -> status 1
 * (Error) and nothing of the request stays in the journal (the engine is
 * rebuilt from the journal, its source of truth).
 *
 * Checkpoint (DESIGN §4, three phases, in order; a failed phase skips the
 * later ones and is retried on a later tick): when fewer than
 * cfg->checkpoint_margin of cfg->wal_slots are free, (1) snapshot of the
 * state at commit_min with the client table -> snapshot.bin, (2) the
 * superblock pairing (checkpoint_op, XXH3 of the payload) through the
 * engine, (3) wal_drain_margin(op) keeping op itself and, on a cluster,
 * the engine's repair margin below it (vsr_drain_keep_from), so a backup
 * that installed the previous checkpoint still repairs its suffix. A cluster
 * replica also checkpoints right after applying every multiple of (wal_slots -
 * checkpoint_margin - VSR_PIPELINE_MAX), so all replicas snapshot the
 * same ops and their checkpoint checksums compare.
 *
 * Recovery (commit_create): the state is rebuilt from the verified
 * snapshot and the journal into each left-right instance; the client
 * table's replies from the snapshot's table plus the replayed ops (the
 * same reply builder as live, so a retried request gets the identical
 * frame after a restart); the engine from the superblock and the journal
 * headers, so op numbers and the hash chain continue.
 *
 * Errors: a fatal storage error (-VS_EFATAL from any call) must end the
 * process with exit 2 and commit_fatal_msg() on one line.
 * Cluster (replica_count > 1): the engine's SEND actions go to
 * replica_send; replica frames come in through commit_on_replica_frame.
 * A backup hands every FWD_PROPOSE to the primary (forward.h) and relays
 * the answer only once it applied the op itself; the primary answers a
 * forwarded request exactly as a local one, over the link. Boot applies
 * only ops known committed. Genesis is the first op of the first primary
 * that finds the log empty (commit_tick proposes it). Cached reply
 * frames carry no view and no replica (commit_frames.h), so replicas at
 * one op hold byte-identical snapshots. A replica whose gap is beyond its
 * peers' journals fetches the primary's checkpoint by metadata state
 * transfer (transfer.h over the links' commands 22-25) and installs it
 * (install_state.h); a caught-up primary serves its durable checkpoint.
 * Callers: shard 0 only (tests drive it in-process). Not thread-safe.
 */
#ifndef VS_SHARD_COMMIT_H
#define VS_SHARD_COMMIT_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "ipc/lr.h"
#include "shard/zero/boot.h"
#include "shard/storage/io.h"
#include "shard/storage/journal.h"
#include "shard/vsr/engine.h"

struct commit;

/* Sends one frame (struct fwd_hdr + payload) to process slot dst. */
typedef void commit_send_fn(void *ctx, uint32_t dst, const void *frame,
                            uint32_t len);
/* Sends one whole VSR frame to replica `replica` over its link: 0, or
 * -ENOTCONN / -ENOBUFS (dropped; the engine retransmits). */
typedef int commit_replica_send_fn(void *ctx, uint8_t replica,
                                   const void *frame, uint32_t len);
/* Wall clock in µs for prepare timestamps. */
typedef uint64_t commit_clock_fn(void *ctx);

struct commit_options {
    const struct vs_config *cfg; /* borrowed; outlives the commit */
    struct vs_lr *lr;            /* writer started; borrowed */
    /* Storage I/O for the journal, superblock and snapshot; NULL = a
     * private real one. Borrowed (tests pass a sio_fault's io). */
    struct vs_sio *io;
    commit_send_fn *send;
    void *send_ctx;
    /* Replica links (a cluster; NULL for one replica): the engine's SEND
     * actions and forwarded requests go out here. */
    commit_replica_send_fn *replica_send;
    void *replica_ctx;
    commit_clock_fn *clock; /* NULL: vs_realtime_us */
    void *clock_ctx;
    /* Consumer-group liveness (shard/zero/groups0.h): the current incarnation
     * of a process slot, to drop the memberships of clients bound to a
     * data shard that died (NULL: no such sweep); and the cooperative
     * revocation timeout (0: the config's group_heartbeat_interval_ms;
     * the reference's rebalancing timeout equals its heartbeat). */
    uint64_t (*incarnation)(void *ctx, uint32_t slot);
    void *incarnation_ctx;
    uint64_t rebalancing_timeout_us;
    /* Group commit of client proposals (see commit_flush): 0 = every
     * journal append fsyncs before the next input (tests, benches). */
    int group_commit;
    /* `vstreamd recover` rebuilt this replica after a lost disk: it
     * rejoins without voting until caught up (engine options.rebuilt). */
    int rebuilt;
};

struct commit_stats {
    uint64_t proposals;   /* FWD_PROPOSE frames handled */
    uint64_t commits;     /* ops applied and published */
    uint64_t duplicates;  /* cached replies sent */
    uint64_t evictions;   /* eviction frames sent */
    uint64_t transient;   /* status 57 answers */
    uint64_t refused;     /* other status answers (3, 1) */
    uint64_t enospc;      /* journal appends refused for space */
    uint64_t checkpoints; /* completed (all three phases) */
    uint64_t checkpoint_failures;
    uint64_t dropped;         /* malformed IPC frames dropped */
    uint64_t internal;        /* internal ops (66, 67) committed */
    uint64_t members_removed; /* RemoveConsumerGroupMember proposals */
    uint64_t revocations;     /* CompleteConsumerGroupRevocation proposals */
    uint64_t journal_syncs;   /* group commit: fsyncs by commit_flush */
    uint64_t grouped_ops;     /* group commit: appends they made durable */
    uint64_t queued;          /* group commit: proposals held for room */
    uint64_t forwarded_in;    /* ForwardRequests handled (primary) */
    uint64_t truncations;     /* JOURNAL_TRUNCATE actions (view change) */
    uint64_t repairs_served;  /* RepairPrepares sent to peers */
    uint64_t state_transfer_needed; /* RangeEvicted: repair cannot reach */
};

/* Builds the commit path from the recovered data dir: the state into
 * both left-right instances (lr_restore), the client-table replies, the
 * superblock store and the engine. Takes the open journal out of rec
 * (rec must still be finalized by the caller). Returns 0 and *out, or a
 * negative value with one line in err: -ESTALE (the data dir is behind
 * the op this node already published: acknowledged metadata is missing),
 * -EBADMSG/-EIO (rebuild), -EINVAL (engine refused the recovered log),
 * -VS_EFATAL, -errno. Every error but -VS_EFATAL from a refused data dir
 * ends the process with exit 2 as well. */
int commit_create(const struct commit_options *o, struct shard0_recovered *rec,
                  struct commit **out, char *err, size_t errlen);
/* Closes the journal and frees everything. NULL is accepted. */
void commit_destroy(struct commit *c);

/* 1 if the cluster's first op (GENESIS: root user 0) is not committed
 * (checked on the state, so a node that crashed between its format and
 * its genesis still gets one); on a multi-replica node only while this
 * replica is the Normal primary of an empty log (then commit_genesis
 * proposes it and returns before it commits). */
int commit_genesis_needed(const struct commit *c);
/* Proposes and commits GENESIS with the configured root credentials:
 * --with-default-root-credentials -> iggy/iggy; else root_username and
 * root_password; an empty password -> a random one printed once on
 * stderr and in the log. The password is hashed (argon2id, config cost)
 * before it is proposed. 0, -EALREADY (done before), -VS_EFATAL, or
 * -errno with one line in err. */
int commit_genesis(struct commit *c, char *err, size_t errlen);

/* One IPC frame from process slot src (FWD_PROPOSE, FWD_CLOSED,
 * FWD_MEMBERS, ...; a malformed frame is logged and dropped). 0 or
 * -VS_EFATAL. On a backup of a cluster a connection end of a member is
 * passed to the primary (groups0.h "Cluster rules"), not proposed.
 * FWD_CLOSED of a client's current connection (groups0.h) whose client is
 * a member of any consumer group proposes RemoveConsumerGroupMember (op
 * 66) for it: an internal op (client 0, request 0, no reply) through the
 * same engine path, so the removal is durable, replicated and published
 * like every other op. A FWD_PROPOSE with client 0 is refused (3): only
 * shard 0 proposes internal ops. */
int commit_on_frame(struct commit *c, uint32_t src, const void *frame,
                    uint32_t len);
/* Group commit (options.group_commit): while handling the inputs of one
 * event-loop pass, the journal appends of client proposals (on a backup:
 * of the Prepares and RepairPrepares from the links) are written
 * without an fsync and held (at most the pipeline depth); a proposal the
 * full pipeline refuses is queued instead of answered 57. The caller
 * runs commit_flush once the pass's inputs are handled: ONE fsync makes
 * every held append durable, each is then reported durable to the
 * engine in op order (commits, applies, replies and a backup's PrepareOks
 * follow; an op a view change truncated meanwhile is dropped), and
 * the queued proposals are handled again (their appends are held for the
 * next flush). Requests arriving while that fsync blocks wait in the IPC
 * ring and share the next one. Nothing is answered before its op is
 * durable. An append that must be durable at once (internal ops,
 * genesis) fsyncs inline, which also covers the held ones. 0 or
 * -VS_EFATAL. */
int commit_flush(struct commit *c);
/* 1 if commit_flush has work: held appends, or queued proposals that may
 * fit now (an op committed since they were queued, or a tick passed: a
 * cluster primary's pipeline full of prepares waiting for PrepareOks
 * queues proposals too, and they wait for a commit, not a busy loop). */
int commit_flush_needed(const struct commit *c);
/* A frame from the authenticated link of replica `peer` (shard/zero/
 * links.h): ForwardRequest / ForwardResult go to the forwarding path
 * (forward.h), a backup's MemberReport (consumer-group claims and
 * connection ends, groups0.h "Cluster rules") to the settled primary's
 * liveness bookkeeping, every other command to the engine. 0 or
 * -VS_EFATAL. */
int commit_on_replica_frame(struct commit *c, uint8_t peer, const void *frame,
                            size_t len);
/* The link to `peer` came up (1) or went down (0): a backup forwards only
 * to a primary whose link is up. */
void commit_on_link(struct commit *c, uint8_t peer, int up);

/* A 10 ms tick: engine timers, retries of a failed superblock write or
 * WAL drain, the checkpoint check; once a second (100 ticks) the
 * consumer-group sweep: removals for clients bound to a dead data shard
 * and for removals that could not be proposed earlier, on the settled
 * primary of a cluster the members alive on no node (groups0.h), on a
 * backup this node's MemberReport to the primary instead, and
 * CompleteConsumerGroupRevocation (op 67) for revocations pending past
 * the rebalancing timeout. 0 or -VS_EFATAL. */
int commit_tick(struct commit *c);
/* Runs a checkpoint now if commit_min is past the durable checkpoint
 * (tests, shutdown). 0 (also when a phase failed and will be retried),
 * or -VS_EFATAL. */
int commit_checkpoint_now(struct commit *c);

/* The fatal I/O error on one line ("" if none). */
void commit_fatal_msg(const struct commit *c, char *buf, size_t len);

/* Introspection (tests, logs). */
const struct commit_stats *commit_stats(const struct commit *c);
const struct vs_vsr *commit_engine(const struct commit *c);
const struct wal *commit_journal(const struct commit *c);
/* The metadata state transfer's progress (a cluster replica): 1 and *out,
 * or 0 for a single replica. */
struct zt_info;
int commit_transfer_info(const struct commit *c, struct zt_info *out);
/* The live metadata instance (the writer's own view). */
const void *commit_state(const struct commit *c);

#endif /* VS_SHARD_COMMIT_H */
