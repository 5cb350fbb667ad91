/*
 * shard/storage/recovery.c - the boot verdict (steps in recovery.h).
 *
 * Invariants: every input is verified before it is decoded or trusted;
 * in read-only mode nothing on disk is modified (a torn tail is reported
 * as "would cut"); each refusal is one typed verdict with a one-line
 * reason. Callers: shard 0 at boot, vstream-inspect, tests.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/layout.h"
#include "shard/storage/datadir.h"
#include "shard/storage/recovery.h"

static int verdict(struct recovery_result *r, enum recovery_verdict v,
                   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
verdict(struct recovery_result *r, enum recovery_verdict v, const char *fmt,
        ...)
{
    r->verdict = v;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
    va_end(ap);
    return 0;
}

/* 1 if DIR/NAME exists (any type), 0 if not, -errno if unknown. */
static int
file_exists(const char *dir, const char *name)
{
    char path[AFILE_PATH_MAX];
    int rc = afile_join(path, sizeof(path), dir, name);
    if (rc < 0)
        return rc;
    struct stat st;
    if (stat(path, &st) == 0)
        return 1;
    return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
}

static unsigned long long
ull(uint64_t v)
{
    return (unsigned long long)v;
}

static int
check_identity(const struct recovery_expect *e, struct recovery_result *r)
{
    const struct vs_vsr_state *s = &r->state;
    if (!vs_u128_eq(s->cluster, e->cluster))
        return verdict(r, RECOVERY_REFUSE_IDENTITY_CLUSTER,
                       "identity mismatch: superblock cluster %016llx%016llx, "
                       "config "
                       "%016llx%016llx",
                       ull(s->cluster.hi), ull(s->cluster.lo),
                       ull(e->cluster.hi), ull(e->cluster.lo)),
               1;
    if (s->replica_id != e->replica_id)
        return verdict(r, RECOVERY_REFUSE_IDENTITY_REPLICA_ID,
                       "identity mismatch: superblock replica id %u, config "
                       "%u",
                       (unsigned)s->replica_id, (unsigned)e->replica_id),
               1;
    if (s->replica_count != e->replica_count)
        return verdict(r, RECOVERY_REFUSE_IDENTITY_REPLICA_COUNT,
                       "identity mismatch: superblock replica count %u, "
                       "config %u",
                       (unsigned)s->replica_count, (unsigned)e->replica_count),
               1;
    return 0;
}

/* Step 4-5. 1 if a refusal was set. */
static int
check_snapshot(struct vs_sio *io, const char *meta, struct recovery_result *r)
{
    struct snapfile *sn = &r->snap;
    int rc = snapfile_read(io, meta, sn);
    const struct vs_vsr_state *s = &r->state;
    int cp_none =
        s->checkpoint_op == 0 && vs_u128_is_zero(s->checkpoint_checksum);
    switch (sn->status) {
    case SNAPFILE_OK:
        break;
    case SNAPFILE_ABSENT:
        if (!cp_none)
            return verdict(r, RECOVERY_REFUSE_CHECKPOINT_AHEAD,
                           "superblock checkpoint at op %llu but "
                           "snapshot.bin is absent",
                           ull(s->checkpoint_op)),
                   1;
        return 0;
    case SNAPFILE_IO:
        return verdict(r, RECOVERY_REFUSE_IO, "%s (%d)", sn->reason, rc), 1;
    case SNAPFILE_UNKNOWN_FORMAT:
        return verdict(r, RECOVERY_REFUSE_SNAPSHOT_FORMAT, "%s", sn->reason), 1;
    case SNAPFILE_NO_TRAILER:
    case SNAPFILE_BAD_CHECKSUM:
    case SNAPFILE_SHORT_PREFIX:
    case SNAPFILE_TOO_BIG:
        return verdict(r, RECOVERY_REFUSE_SNAPSHOT_TRAILER,
                       "snapshot refused: %s", sn->reason),
               1;
    }
    r->have_snapshot = 1;
    r->snapshot_op = sn->prefix.op;
    r->snapshot_checksum = sn->checksum;
    if (cp_none)
        return 0; /* no checkpoint recorded yet: the snapshot is newer */
    if (s->checkpoint_op > sn->prefix.op)
        return verdict(r, RECOVERY_REFUSE_CHECKPOINT_AHEAD,
                       "superblock checkpoint op %llu is ahead of the "
                       "snapshot's op %llu",
                       ull(s->checkpoint_op), ull(sn->prefix.op)),
               1;
    if (s->checkpoint_op == sn->prefix.op &&
        !vs_u128_eq(s->checkpoint_checksum, sn->checksum))
        return verdict(r, RECOVERY_REFUSE_CHECKPOINT_CHECKSUM,
                       "checkpoint checksum mismatch at op %llu: superblock "
                       "%016llx%016llx, snapshot %016llx%016llx",
                       ull(sn->prefix.op), ull(s->checkpoint_checksum.hi),
                       ull(s->checkpoint_checksum.lo), ull(sn->checksum.hi),
                       ull(sn->checksum.lo)),
               1;
    return 0; /* same pairing, or a superblock lagging a newer snapshot */
}

/* A cluster replica's damaged tail is about to be cut: records it in
 * the superblock first (faulty_op and nonack_op raised to the top of what
 * the cut bytes may hold, faulty_prepare = the damaged entry's header
 * when it verified), so a crash right after the cut still boots knowing
 * the range is faulty and never nacks it. r->state becomes the written
 * state. 0, -VS_EFATAL, or 1 with a refusal set. */
static int
mark_damaged_before_cut(struct vs_sio *io, const char *meta,
                        struct recovery_result *r, const struct wal_scan *s)
{
    uint64_t cut = s->bad_op;
    if (cut == 0)
        cut = (r->have_snapshot ? r->snapshot_op : 0) + 1;
    uint64_t last = cut + (s->bad_span > 0 ? s->bad_span - 1 : 0);
    struct vs_vsr_state st = r->state;
    if (last > st.faulty_op)
        st.faulty_op = last;
    if (last > st.nonack_op)
        st.nonack_op = last;
    if (s->bad_header_valid && s->bad_header.op == cut && s->bad_header.op > 0)
        st.faulty_prepare = s->bad_header;
    uint8_t payload[VSR_STATE_SIZE];
    vsr_state_encode(&st, payload);
    struct vs_vsr_state check;
    if (vsr_state_decode(VSR_STATE_VERSION, payload, sizeof(payload), &check,
                         NULL, 0) != VSR_STATE_OK)
        memset(&st.faulty_prepare, 0, sizeof(st.faulty_prepare));
    vsr_state_encode(&st, payload);
    struct sb_store sb;
    int rc = sb_open(&sb, io, meta, NULL);
    if (rc == 0 && !sb_store_writable(&sb))
        rc = -EROFS;
    if (rc == 0)
        rc = sb_write(&sb, payload, sizeof(payload));
    if (rc == -VS_EFATAL)
        return rc;
    if (rc < 0)
        return verdict(r, RECOVERY_REFUSE_IO,
                       "cannot record the damaged WAL tail (op %llu) as "
                       "faulty in the superblock before cutting it: %s",
                       ull(cut), sio_strerror(rc)),
               1;
    r->state = st;
    rc = sb_read_latest(io, meta, &r->sb);
    if (rc < 0)
        return verdict(r, RECOVERY_REFUSE_IO,
                       "cannot read back the superblock in %s: %s", meta,
                       sio_strerror(rc)),
               1;
    return 0;
}

/* Step 6-7. Returns 0, or -VS_EFATAL. */
static int
check_wal(struct vs_sio *io, const char *meta, const struct recovery_expect *e,
          struct recovery_result *r)
{
    int cut_damaged = e->is_cluster || e->cut_damaged_tail;
    /* Entries at or below the snapshot op are not replayed (they are kept
     * only to repair lagging peers): damage among them drops them. The
     * snapshot op's own entry anchors the hash chain, so it may go only
     * when the superblock records its header. */
    uint64_t snap = r->have_snapshot ? r->snapshot_op : 0;
    uint64_t drop_upto = 0;
    if (snap > 0)
        drop_upto = vsr_state_has_checkpoint_prepare(&r->state) &&
                            snap == r->state.checkpoint_op
                        ? snap
                        : snap - 1;
    struct wal_options opt = {
        .format_known = e->wal_format_known,
        .read_only = e->read_only,
        .cut_damaged_tail = cut_damaged,
        .drop_damaged_upto = drop_upto,
        .unsynced_max = e->wal_unsynced_max,
    };
    struct wal_scan *s = &r->wal_scan;
    int rc;
    if (e->read_only) {
        rc = wal_scan_file(io, meta, &opt, s);
    } else {
        /* A cluster replica's damaged tail may hold acknowledged ops:
         * the first open never cuts it, so its mark is durable in the
         * superblock before the second open cuts. */
        opt.cut_damaged_tail = cut_damaged && !e->is_cluster;
        rc = wal_open(&r->journal, io, meta, &opt, s);
        if (rc == -EBADMSG && e->is_cluster && s->verdict == WAL_DAMAGED_TAIL) {
            rc = mark_damaged_before_cut(io, meta, r, s);
            if (rc != 0)
                return rc < 0 ? rc : 0;
            opt.cut_damaged_tail = 1;
            rc = wal_open(&r->journal, io, meta, &opt, s);
        }
        if (rc == 0)
            r->journal_open = 1;
        else if (rc == -EBADMSG)
            rc = 0; /* refusal: the scan says which */
    }
    if (rc == -VS_EFATAL)
        return rc;
    if (rc < 0)
        return verdict(r, RECOVERY_REFUSE_IO, "cannot read %s/%s: %s", meta,
                       VS_JOURNAL_FILE, sio_strerror(rc));
    r->wal_scanned = 1;
    switch (s->verdict) {
    case WAL_CLEAN:
        break;
    case WAL_TORN_TAIL:
        r->wal_tail_cut = 1;
        break;
    case WAL_DAMAGED_TAIL:
        if (!cut_damaged)
            return verdict(r, RECOVERY_REFUSE_WAL_DAMAGED_TAIL,
                           "%s (one-replica node: start vstreamd with "
                           "--cut-damaged-tail to cut it)",
                           s->reason);
        r->wal_tail_cut = 1;
        if (e->is_cluster) {
            /* never nacked until repaired from peers: the binding
             * persists it as VsrState.faulty_op */
            r->damaged_cut_op = s->bad_op;
            if (r->damaged_cut_op == 0) {
                /* the first entry was unreadable: its op is unknown, so
                 * mark the first op above the state (conservative: a
                 * faulty op is never nacked, and if no peer holds it the
                 * others' nacks still truncate it) */
                r->damaged_cut_op = (r->have_snapshot ? r->snapshot_op : 0) + 1;
            }
            r->damaged_cut_offset = s->bad_offset;
            r->damaged_cut_last =
                r->damaged_cut_op + (s->bad_span > 0 ? s->bad_span - 1 : 0);
        }
        break;
    case WAL_INTERIOR_CORRUPT:
        return verdict(r, RECOVERY_REFUSE_WAL_INTERIOR, "%s", s->reason);
    case WAL_CHAIN_BREAK:
        return verdict(r, RECOVERY_REFUSE_WAL_CHAIN, "%s", s->reason);
    case WAL_UNKNOWN_FORMAT:
        return verdict(r, RECOVERY_REFUSE_WAL_FORMAT, "%s", s->reason);
    }
    uint64_t base = r->have_snapshot ? r->snapshot_op : 0;
    if (s->entries > 0 && s->first_op > base + 1)
        return verdict(r, RECOVERY_REFUSE_WAL_GAP,
                       "WAL gap: the %s ends at op %llu but the WAL starts "
                       "at op %llu",
                       r->have_snapshot ? "snapshot" : "empty state", ull(base),
                       ull(s->first_op));
    if (r->have_snapshot)
        r->replay_from = base + 1;
    else
        r->replay_from = s->entries > 0 ? s->first_op : 1;
    r->replay_to = s->entries > 0 && s->last_op >= r->replay_from
                       ? s->last_op
                       : r->replay_from - 1;
    /* Entries all covered by the snapshot: finish the drain so the next
     * append (snapshot op + 1) starts a fresh chain. */
    if (r->journal_open && r->have_snapshot && !wal_empty(&r->journal) &&
        wal_last_op(&r->journal) < r->snapshot_op) {
        rc = wal_drain(&r->journal, r->snapshot_op);
        if (rc == -VS_EFATAL)
            return rc;
        if (rc < 0)
            return verdict(r, RECOVERY_REFUSE_IO,
                           "cannot drain the WAL behind the snapshot: %s",
                           sio_strerror(rc));
    }
    /* The hash chain restarts from the last WAL entry at or above the
     * state op, or, with no such entry, from the checkpoint op's header
     * the superblock records (version 2). A cluster replica whose
     * snapshot is newer than its superblock pairing (a state transfer
     * installed it and crashed before the pairing was durable) learns
     * the anchor from its view's headers instead: every op at or below
     * the snapshot is committed and in it. */
    int no_entry = s->entries == 0 || s->last_op < base;
    int installed_ahead =
        e->is_cluster && r->have_snapshot && base > r->state.checkpoint_op;
    if (no_entry && (base > 0 || r->state.checkpoint_op > 0) &&
        !installed_ahead &&
        !(vsr_state_has_checkpoint_prepare(&r->state) &&
          base == r->state.checkpoint_op))
        return verdict(r, RECOVERY_REFUSE_WAL_CHAIN_START,
                       "the WAL holds no entry at or above state op %llu "
                       "and the superblock records no header for "
                       "checkpoint op %llu: the hash chain cannot restart",
                       ull(base), ull(r->state.checkpoint_op));
    return 0;
}

int
recovery_open(struct vs_sio *io, const char *data_dir,
              const struct recovery_expect *e, struct recovery_result *r)
{
    memset(r, 0, sizeof(*r));
    r->journal.fd = -1;
    char meta[AFILE_PATH_MAX];
    if (afile_join(meta, sizeof(meta), data_dir, VS_METADATA_DIR) < 0)
        return verdict(r, RECOVERY_REFUSE_IO, "data dir path too long");

    int rc = sb_read_latest(io, meta, &r->sb);
    if (rc < 0)
        return verdict(r, RECOVERY_REFUSE_IO,
                       "cannot read the superblock in %s: %s", meta,
                       sio_strerror(rc));
    r->sb_read_done = 1;
    int has_wal = file_exists(meta, VS_JOURNAL_FILE);
    int has_snap = file_exists(meta, VS_SNAPSHOT_FILE);
    if (has_wal < 0 || has_snap < 0)
        return verdict(r, RECOVERY_REFUSE_IO, "cannot stat files in %s: %s",
                       meta, strerror(-(has_wal < 0 ? has_wal : has_snap)));

    /* Leftovers of replacements that crashed before their rename: the
     * old files win; remove the .tmp files (never in read-only mode). */
    if (!e->read_only) {
        const char *names[] = {VS_SUPERBLOCK_A, VS_SUPERBLOCK_B,
                               VS_SNAPSHOT_FILE};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (has_wal || has_snap || r->sb.verdict != SB_EMPTY)
                (void)afile_cleanup_tmp(io, meta, names[i]);
    }

    /* 1. superblock */
    if (r->sb.verdict == SB_EMPTY) {
        if (has_wal || has_snap)
            return verdict(r, RECOVERY_REFUSE_SUPERBLOCK_MISSING,
                           "both superblock slots are absent beside an "
                           "existing %s%s%s: the superblock was lost",
                           has_wal ? VS_JOURNAL_FILE : "",
                           has_wal && has_snap ? " and " : "",
                           has_snap ? VS_SNAPSHOT_FILE : "");
        if (e->is_cluster && !e->format_requested)
            return verdict(r, RECOVERY_REFUSE_CLUSTER_UNFORMATTED,
                           "empty data dir for a cluster replica: it may be "
                           "a lost disk; run 'vstreamd format' for a new "
                           "cluster or 'vstreamd recover' to rejoin");
        return verdict(r, RECOVERY_FRESH,
                       "fresh node: empty data dir (the superblock is "
                       "written first)");
    }
    if (r->sb.verdict == SB_UNREADABLE)
        return verdict(r, RECOVERY_REFUSE_SUPERBLOCK_UNREADABLE,
                       "superblock unreadable: %s", r->sb.reason);

    /* 2. decode */
    char why[160];
    if (vsr_state_decode(r->sb.version, r->sb.payload, r->sb.payload_len,
                         &r->state, why, sizeof(why)) != VSR_STATE_OK)
        return verdict(r, RECOVERY_REFUSE_SUPERBLOCK_UNDECODABLE,
                       "superblock undecodable (%s, sequence %llu): %s",
                       sb_slot_name(r->sb.newest), ull(r->sb.sequence), why);

    /* 3. identity */
    if (e->check_identity && check_identity(e, r))
        return 0;

    /* 4-5. snapshot and pairing */
    if (check_snapshot(io, meta, r))
        return 0;

    /* 6-7. WAL */
    rc = check_wal(io, meta, e, r);
    if (rc < 0)
        return rc;
    if (r->verdict != RECOVERY_BOOT)
        return 0;
    char dropped[224] = "";
    const struct wal_scan *ws = &r->wal_scan;
    if (ws->dropped) {
        char first[32] = "up to ";
        if (ws->dropped_first_op)
            snprintf(first, sizeof(first), "%llu..", ull(ws->dropped_first_op));
        char at[32] = "the first entry";
        if (ws->dropped_damage_op)
            snprintf(at, sizeof(at), "op %llu", ull(ws->dropped_damage_op));
        snprintf(dropped, sizeof(dropped),
                 "; WAL ops %s%llu %s, the snapshot covers them (damage "
                 "at %s, offset %llu: %s%s)",
                 first, ull(ws->dropped_last_op),
                 e->read_only ? "would be dropped" : "dropped", at,
                 ull(ws->dropped_damage_offset), ws->dropped_damage_kind,
                 ws->dropped > 1 ? ", and more" : "");
    }
    char faulty[128] = "";
    if (r->damaged_cut_op == r->damaged_cut_last && r->damaged_cut_op)
        snprintf(faulty, sizeof(faulty),
                 "; op %llu cut as damage at offset %llu (faulty until "
                 "repaired)",
                 ull(r->damaged_cut_op), ull(r->damaged_cut_offset));
    else if (r->damaged_cut_op)
        snprintf(faulty, sizeof(faulty),
                 "; ops %llu..%llu cut as damage at offset %llu (faulty "
                 "until repaired)",
                 ull(r->damaged_cut_op), ull(r->damaged_cut_last),
                 ull(r->damaged_cut_offset));
    char group[160] = "";
    if (ws->group_last_op)
        snprintf(group, sizeof(group),
                 "; valid entries up to op %llu followed the damage, within "
                 "what group commit leaves unsynced (power loss)",
                 ull(ws->group_last_op));
    else if (ws->mark_cut)
        snprintf(group, sizeof(group),
                 "; the cut starts above the journal's durable mark (op "
                 "%llu): never acknowledged",
                 ull(ws->mark_op));
    return verdict(r, RECOVERY_BOOT,
                   "superblock sequence %llu, view %u, log_view %u, "
                   "commit_max %llu, checkpoint op %llu; snapshot %s%llu; "
                   "replay ops %llu..%llu%s%s%s%s",
                   ull(r->sb.sequence), r->state.view, r->state.log_view,
                   ull(r->state.commit_max), ull(r->state.checkpoint_op),
                   r->have_snapshot ? "op " : "none/",
                   ull(r->have_snapshot ? r->snapshot_op : 0),
                   ull(r->replay_from), ull(r->replay_to),
                   r->wal_tail_cut ? (e->read_only ? " (would cut WAL tail)"
                                                   : " (WAL tail cut)")
                                   : "",
                   dropped, faulty, group);
}

void
recovery_result_fini(struct recovery_result *r)
{
    snapfile_fini(&r->snap);
    if (r->journal_open)
        wal_close(&r->journal);
    r->journal_open = 0;
}

int
recovery_verdict_boots(enum recovery_verdict v)
{
    return v == RECOVERY_BOOT || v == RECOVERY_FRESH;
}

const char *
recovery_verdict_name(enum recovery_verdict v)
{
    switch (v) {
    case RECOVERY_BOOT:
        return "boot";
    case RECOVERY_FRESH:
        return "fresh";
    case RECOVERY_REFUSE_IO:
        return "refuse-io";
    case RECOVERY_REFUSE_CLUSTER_UNFORMATTED:
        return "refuse-cluster-unformatted";
    case RECOVERY_REFUSE_SUPERBLOCK_MISSING:
        return "refuse-superblock-missing";
    case RECOVERY_REFUSE_SUPERBLOCK_UNREADABLE:
        return "refuse-superblock-unreadable";
    case RECOVERY_REFUSE_SUPERBLOCK_UNDECODABLE:
        return "refuse-superblock-undecodable";
    case RECOVERY_REFUSE_IDENTITY_CLUSTER:
        return "refuse-identity-cluster";
    case RECOVERY_REFUSE_IDENTITY_REPLICA_ID:
        return "refuse-identity-replica-id";
    case RECOVERY_REFUSE_IDENTITY_REPLICA_COUNT:
        return "refuse-identity-replica-count";
    case RECOVERY_REFUSE_SNAPSHOT_TRAILER:
        return "refuse-snapshot-trailer";
    case RECOVERY_REFUSE_SNAPSHOT_FORMAT:
        return "refuse-snapshot-format";
    case RECOVERY_REFUSE_CHECKPOINT_AHEAD:
        return "refuse-checkpoint-ahead";
    case RECOVERY_REFUSE_CHECKPOINT_CHECKSUM:
        return "refuse-checkpoint-checksum";
    case RECOVERY_REFUSE_WAL_INTERIOR:
        return "refuse-wal-interior-corruption";
    case RECOVERY_REFUSE_WAL_CHAIN:
        return "refuse-wal-chain-break";
    case RECOVERY_REFUSE_WAL_FORMAT:
        return "refuse-wal-unknown-format";
    case RECOVERY_REFUSE_WAL_DAMAGED_TAIL:
        return "refuse-wal-damaged-tail";
    case RECOVERY_REFUSE_WAL_GAP:
        return "refuse-wal-gap";
    case RECOVERY_REFUSE_WAL_CHAIN_START:
        return "refuse-wal-chain-start";
    }
    return "unknown";
}

int
recovery_format_fresh(struct vs_sio *io, const char *data_dir,
                      const struct vs_vsr_state *initial)
{
    char meta[AFILE_PATH_MAX];
    int rc = afile_join(meta, sizeof(meta), data_dir, VS_METADATA_DIR);
    if (rc < 0)
        return rc;
    uint8_t payload[VSR_STATE_SIZE];
    vsr_state_encode(initial, payload);
    struct vs_vsr_state check;
    if (vsr_state_decode(VSR_STATE_VERSION, payload, sizeof(payload), &check,
                         NULL, 0) != VSR_STATE_OK)
        return -EINVAL;
    rc = datadir_mkdir_p_io(io, data_dir, 0700);
    if (rc == 0)
        rc = datadir_mkdir_p_io(io, meta, 0700);
    if (rc < 0)
        return rc;
    const char *names[] = {VS_SUPERBLOCK_A, VS_SUPERBLOCK_B, VS_JOURNAL_FILE,
                           VS_SNAPSHOT_FILE};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        rc = file_exists(meta, names[i]);
        if (rc < 0)
            return rc;
        if (rc)
            return -EEXIST;
    }
    struct sb_store sb;
    rc = sb_open(&sb, io, meta, NULL);
    if (rc < 0)
        return rc;
    if (!sb_store_writable(&sb))
        return -EROFS;
    return sb_write(&sb, payload, sizeof(payload));
}
