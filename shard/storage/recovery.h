/*
 * shard/storage/recovery.h - the boot verdict of a replica's data dir.
 *
 * Role: one function, recovery_open, reads superblock, snapshot and WAL
 * of DATA/metadata and returns either what to recover from (VsrState,
 * verified snapshot payload, WAL range to replay, an open journal) or a
 * typed refusal with a one-line reason. vstreamd's shard 0 calls it at
 * boot (a refusal -> the reason on one line, exit 2, no restart);
 * vstream-inspect calls it read-only (nothing is ever modified: a torn
 * tail is reported as "would cut").
 *
 * Order (verify before decode; every check is a typed refusal):
 *  1. superblock: Empty / Present / Unreadable (slot and why). Empty with
 *     journal.wal or snapshot.bin present -> refuse (the superblock is
 *     written before anything else, so that is damage). Empty and nothing
 *     else: fresh for a one-replica node; a cluster replica refuses
 *     unless `format` was requested (DESIGN §4).
 *  2. VsrState decode (version, length, log_view <= view).
 *  3. identity vs config: cluster, replica id, replica count.
 *  4. snapshot: trailer, payload prefix, known payload format.
 *  5. pairing: checkpoint_op > snapshot op -> refuse; same op with a
 *     different checksum -> refuse; superblock lagging a newer complete
 *     snapshot -> accepted. No snapshot requires checkpoint (0, 0).
 *  6. WAL scan: interior corruption (op, offset), chain break, unknown
 *     format -> refuse; torn tail -> cut; damaged tail -> cut for a
 *     cluster replica (repaired from peers), refused for a one-replica
 *     node unless cut_damaged_tail (the cluster replica's cut op is
 *     reported in damaged_cut_op). A cluster replica records the cut in
 *     the superblock BEFORE cutting (VsrState faulty_op and nonack_op
 *     raised to damaged_cut_last, faulty_prepare = the entry's header
 *     when it verified; `state` is then the state written), so a crash
 *     right after the cut still boots with the range faulty, never
 *     nacked; a failed write refuses (RECOVERY_REFUSE_IO) and cuts
 *     nothing. A gap between the snapshot and the first WAL op ->
 *     refuse.
 *     Damage at or below the snapshot op (those entries are not replayed;
 *     the checkpoint drain keeps them only to repair peers) with a valid
 *     entry after it is no refusal: the retained journal starts at that
 *     entry, the older ones are dropped from the file and the summary
 *     names the range (wal_options.drop_damaged_upto). The snapshot op's
 *     own entry may go only when the superblock records its header
 *     (checkpoint op == snapshot op); the limit is one op lower otherwise.
 *     No WAL entry at or above the state op (empty, or wholly behind
 *     the snapshot) beside a checkpoint is fine only when the superblock
 *     records the checkpoint op's header and the snapshot is at that op
 *     (the chain restarts from it); otherwise refuse.
 *  7. replay range: (snapshot op, WAL last op].
 *
 * Use at boot (shard 0):
 *   recovery_open -> RECOVERY_FRESH: recovery_format_fresh, then
 *   recovery_open again (-> BOOT with an empty journal);
 *   BOOT: take the snapshot payload (snapfile_take_payload(&r.snap, ..),
 *   owned by the caller), decode it, replay journal ops replay_from ..
 *   replay_to (wal_header / wal_read_body on r.journal, which the caller
 *   then owns: move the struct, do not call recovery_result_fini on an
 *   open journal you keep -- set r.journal_open = 0 first), and sb_open
 *   the superblock store for later writes;
 *   a refusal: print r.reason on one line, exit 2.
 * A -VS_EFATAL return: print sio_fatal_msg(io), exit 2.
 * In writable mode leftover superblock/snapshot .tmp files are removed
 * (their replacement crashed before the rename: the old files win).
 *
 * Callers: shard 0 at boot, vstream-inspect, tests.
 */
#ifndef VS_SHARD_STORAGE_RECOVERY_H
#define VS_SHARD_STORAGE_RECOVERY_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/storage/io.h"
#include "shard/storage/journal.h"
#include "shard/storage/snapshot_file.h"
#include "shard/storage/superblock.h"
#include "shard/storage/vsr_state.h"

enum recovery_verdict {
    RECOVERY_BOOT = 0, /* recovered state below */
    RECOVERY_FRESH,    /* empty one-replica dir: recovery_format_fresh */
    /* refusals */
    RECOVERY_REFUSE_IO,                  /* could not read a file */
    RECOVERY_REFUSE_CLUSTER_UNFORMATTED, /* empty dir, cluster replica */
    RECOVERY_REFUSE_SUPERBLOCK_MISSING,  /* both absent beside data */
    RECOVERY_REFUSE_SUPERBLOCK_UNREADABLE,
    RECOVERY_REFUSE_SUPERBLOCK_UNDECODABLE,
    RECOVERY_REFUSE_IDENTITY_CLUSTER,
    RECOVERY_REFUSE_IDENTITY_REPLICA_ID,
    RECOVERY_REFUSE_IDENTITY_REPLICA_COUNT,
    RECOVERY_REFUSE_SNAPSHOT_TRAILER,
    RECOVERY_REFUSE_SNAPSHOT_FORMAT,
    RECOVERY_REFUSE_CHECKPOINT_AHEAD,
    RECOVERY_REFUSE_CHECKPOINT_CHECKSUM,
    RECOVERY_REFUSE_WAL_INTERIOR,
    RECOVERY_REFUSE_WAL_CHAIN,
    RECOVERY_REFUSE_WAL_FORMAT,
    RECOVERY_REFUSE_WAL_DAMAGED_TAIL,
    RECOVERY_REFUSE_WAL_GAP,
    RECOVERY_REFUSE_WAL_CHAIN_START, /* no entry, no recorded header */
};

struct recovery_expect {
    int check_identity; /* 0: skip step 3 (vstream-inspect w/o config) */
    struct vs_u128 cluster;
    uint8_t replica_id;
    uint8_t replica_count;
    int is_cluster;       /* replica_count > 1 */
    int format_requested; /* `vstreamd format`: empty cluster dir is OK */
    int cut_damaged_tail; /* one-replica: cut a damaged WAL tail */
    int read_only;        /* vstream-inspect: modify nothing */
    wal_format_known_fn *wal_format_known; /* NULL: default gate */
    /* appends the journal's writer may leave unsynced at once
     * (wal_options.unsynced_max; 0: every append fsynced). Shard 0 and
     * vstream-inspect: WAL_GROUP_UNSYNCED_MAX. */
    uint32_t wal_unsynced_max;
};

struct recovery_result {
    enum recovery_verdict verdict;
    char reason[480]; /* one line: the refusal, or a summary */

    /* what was read (for vstream-inspect; filled as far as it got) */
    int sb_read_done;
    struct sb_read sb;
    struct snapfile snap; /* payload owned until taken */
    int wal_scanned;
    struct wal_scan wal_scan;
    int wal_tail_cut; /* a torn/damaged tail was (or would be) cut */
    /* cluster replica: the op cut (or that would be cut) as a damaged
     * tail, 0 if none. It may have been acknowledged: the binding
     * persists it as VsrState.faulty_op and never nacks it until it is
     * repaired. An unreadable first entry (op unknown) reports the first
     * op above the state. A one-replica node refuses instead (or, with
     * cut_damaged_tail, cuts it and this stays 0). */
    uint64_t damaged_cut_op;
    uint64_t damaged_cut_offset;
    /* The highest op the cut bytes may have held (>= damaged_cut_op; see
     * wal_scan.bad_span): every op in damaged_cut_op..damaged_cut_last may
     * have been acknowledged, so the cluster binding hands this op to its
     * engine as the top of the faulty range (VsrState.faulty_op). */
    uint64_t damaged_cut_last;

    /* RECOVERY_BOOT */
    struct vs_vsr_state state;
    int have_snapshot;
    uint64_t snapshot_op;
    struct vs_u128 snapshot_checksum;
    uint64_t replay_from, replay_to; /* inclusive; empty if from > to */
    struct wal journal;              /* open unless read_only */
    int journal_open;
};

/* Computes the verdict for DATA (the node's data dir). Returns 0 with
 * out->verdict set (boot, fresh, or a refusal), or -VS_EFATAL if cutting
 * a tail failed fatally. Free with recovery_result_fini. */
int recovery_open(struct vs_sio *io, const char *data_dir,
                  const struct recovery_expect *expect,
                  struct recovery_result *out);
void recovery_result_fini(struct recovery_result *r);
/* 1 if the verdict lets the node boot (BOOT or FRESH). */
int recovery_verdict_boots(enum recovery_verdict v);
const char *recovery_verdict_name(enum recovery_verdict v);

/* Formats a fresh node: creates DATA/metadata (0700) and writes the
 * first superblock (sequence 1) with `initial` before anything else.
 * Refuses (-EEXIST) if a superblock slot, the WAL or a snapshot exists.
 * 0, -EEXIST, -ENOSPC, -errno, -VS_EFATAL. */
int recovery_format_fresh(struct vs_sio *io, const char *data_dir,
                          const struct vs_vsr_state *initial);

#endif /* VS_SHARD_STORAGE_RECOVERY_H */
