/*
 * shard/serve/parts.h - the partitions a data shard owns: opened on the
 * owning shard when the published metadata lists them, closed and removed
 * when it stops listing them, reconciled with the directories on disk,
 * and ticked for the durability policy and retention (DESIGN §1,
 * §4).
 *
 * Ownership: partition (s, t, p) belongs to data shard
 * meta_partition_owner(p, K) = 1 + XXH3(group id) % K; a shard opens only
 * its own. Directories are DATA/partitions/<s>.<t>.<p>.<created_op>
 * (shard/data/pdir.h), so a reused id never meets a dead partition's files.
 *
 * Sync (dparts_sync): whenever the published op moved (polled by the
 * caller on a short timer, at start and before every data request), the
 * owned partitions of the published state are collected inside one read
 * section (no I/O inside it), then, outside it:
 *   - a listed partition not open yet is created/opened (part_open with
 *     create = 1 and the metadata's purge generation) BEFORE any request
 *     for it is served -- unless its directory is missing and its
 *     created_op is at or below created_hw (it existed): refusal (exit 2);
 *     the directories of several new ones (a CreateTopic's partitions)
 *     are made together first (part_create_many: their fsyncs shared, one
 *     fsync of the partitions directory for all);
 *   - a listed one whose purge generation rose is purged (part_purge,
 *     idempotent by generation); a DeleteSegments watermark above the one
 *     applied is applied (part_apply_watermark, idempotent);
 *   - an open one the state no longer lists was deleted: closed and its
 *     directory removed (pdir_remove, crash safe).
 *
 * Reconcile rule (once per process): stray directories are removed only
 * after shard 0 has published the recovered state. Shard 0 marks its slot
 * `ready` only after lr_restore published the state recovered from its
 * snapshot and WAL (and genesis committed), and published ops never go
 * back; so `slot 0 ready && published op >= 1` implies published op >=
 * the recovered commit. Then, for the directories this shard owns:
 *   - a directory created by an op ABOVE the published op means the
 *     metadata lost or rolled back acknowledged ops: refusal (exit 2);
 *   - metadata listing no partition at all beside existing partition
 *     directories: refusal (exit 2), never a deletion (pdir_reconcile's
 *     -EBADE);
 *   - otherwise directories the state does not list (created at or below
 *     the published op, so their delete was published) are removed.
 *
 * Stats (DESIGN §2, ipc/stats.h): every open partition has an entry in
 * the shared stats table, keyed by (group id, created_op) and written
 * only here, by its owner: claimed with part_stats() at open (recomputed
 * from the files), republished after every append (dparts_stats_note,
 * called by the send path), purge, DeleteSegments watermark and
 * retention deletion, released (cleared) when the partition is deleted or
 * closed. At start the shard first reclaims entries its previous
 * incarnation left. A claim that finds the table full is retried at the
 * next publication. After a (re)start a partition's counters appear when
 * its owner opens it: at the owner's first sync after shard 0 published
 * the recovered state (its data timer, or its first data request); until
 * then readers report zeros for it.
 *
 * Errors: a refused partition (part_open -EBADMSG) or a fatal I/O error
 * (-VS_EFATAL) ends the process through shard_fatal (exit 2, one line:
 * the verdict or sio_fatal_msg). A partition that cannot be created for
 * lack of space is retried at the next sync.
 *
 * Invariants: only the owning shard opens a partition directory; every
 * handle belongs to the loop thread of this process.
 * Callers: the data shard's loop thread (shard/serve).
 */
#ifndef VS_SHARD_SERVE_PARTS_H
#define VS_SHARD_SERVE_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include "ipc/lr.h"
#include "ipc/stats.h"
#include "shard/data/partition.h"
#include "shard/shard.h"
#include "shard/storage/io.h"

/* One owned, open partition. */
struct dpart {
    struct part_id id;
    struct vs_part *p;
    uint64_t purge_gen;      /* applied purge generation */
    uint64_t watermark;      /* applied DeleteSegments watermark */
    uint64_t message_expiry; /* µs; 0 / UINT64_MAX = never */
    uint64_t max_bytes;      /* share of max_topic_size; 0/MAX = none */
    uint32_t seen;           /* sync epoch */
    uint32_t stats_ix;       /* stats entry, VS_STATS_NONE if none */
    struct dpart *hnext;     /* hash chain */
    struct dpart *next;      /* all open partitions */
    /* the metadata's DeleteSegments watermark (applied or not) */
    uint64_t meta_watermark;
    /* the metadata's purge generation (applied or not) */
    uint64_t meta_purge_gen;
    /* 1: a member of a replica set of more than one (pgroups.h): its
     * retention, DeleteSegments and purges are ops of its group, never
     * run here on this node's own (its open never purges either) */
    int grouped;
};

struct dparts {
    const struct vs_shard_ctx *ctx;
    struct vs_lr *lr;
    struct vs_sio io;
    char dir[4096]; /* DATA/partitions */
    uint64_t synced_op;
    uint32_t epoch;
    int reconciled;
    uint32_t count;
    struct dpart *all;
    struct dpart **buckets;
    size_t nbuckets;
    uint64_t opened, removed, stray_removed; /* counters (logs, tests) */
    /* every owned partition created by an op <= created_hw had its
     * directory made (DATA/partitions/.created.<slot>, persisted after a
     * complete sync): a listed one at or below it whose directory is
     * missing lost acknowledged data -- refusal, never a fresh empty one */
    uint64_t created_hw;
    struct vs_stats stats; /* the shared stats table (capacity 0: none) */
    /* called with a partition about to be closed or removed, before its
     * handle goes (a replicated partition's group lets go of it:
     * pgroups.h); set after dparts_init, NULL: none */
    void (*on_close)(void *ctx, struct dpart *dp);
    void *on_close_ctx;
};

/* Creates DATA/partitions if needed. 0 or -errno (the caller stops). */
int dparts_init(struct dparts *d, const struct vs_shard_ctx *ctx,
                struct vs_lr *lr);
/* Closes every open partition (part_close: floor written, fsynced). */
void dparts_fini(struct dparts *d);

/* Brings the open set up to the published op (see above); then
 * reconciles once if the rule allows. Fatal errors exit the process. */
void dparts_sync(struct dparts *d);

/* The open partition with exactly these ids and created_op, or NULL. */
struct dpart *dparts_find(struct dparts *d, const struct part_id *id);

/* Interval durability policy: part_tick on every open partition. */
void dparts_tick_fsync(struct dparts *d, uint64_t now_ms);
/* Retention: part_retention on every open partition. */
void dparts_tick_retention(struct dparts *d, uint64_t now_us);

/* Republishes an owned partition's stats entry from part_stats (claims
 * one if it has none yet). Call after every successful append. */
void dparts_stats_note(struct dparts *d, struct dpart *dp);

/* Ends the process (exit 2) if rc is -VS_EFATAL, with the io's message;
 * `what` names the operation. Returns otherwise. */
void dparts_check_fatal(struct dparts *d, int rc, const char *what);

/* Partition state transfer: closes dp's partition, swaps in the staged
 * directory (shard/data/pinstall.h) and reopens it with the same options
 * (its replicated group is closed first by the caller). 0; any failure
 * ends the process (exit 2): the next boot completes or rolls back. */
int dparts_reinstall(struct dparts *d, struct dpart *dp);

/* 1 if data shard `slot` of K owns partition (s, t, p). */
int dparts_owner_is(uint32_t stream_id, uint32_t topic_id,
                    uint32_t partition_id, uint32_t k, uint32_t slot);

#endif /* VS_SHARD_SERVE_PARTS_H */
