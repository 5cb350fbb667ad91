/*
 * tests/unit/check_storage_recovery.c - the boot verdict: fresh and
 * unformatted dirs, every typed refusal, the accepted lagging superblock,
 * WAL tails, damage below the snapshot op (dropped) and above it
 * (refused), read-only mode, recovery_format_fresh.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard/storage/recovery.h"
#include "storage_testutil.h"

struct dd {
    char dir[256];
    char meta[300];
    struct vs_sio io;
    struct vs_u128 last; /* checksum of the last WAL entry written */
    uint64_t last_op;
};

static void
dd_init(struct dd *d)
{
    tu_mkdtemp(d->dir, sizeof(d->dir), d->meta, sizeof(d->meta));
    sio_init_real(&d->io);
    d->last = (struct vs_u128){0, 0};
    d->last_op = 0;
}

static void
dd_superblock(struct dd *d, const struct vs_vsr_state *s)
{
    struct sb_store st;
    ck_assert_int_eq(sb_open(&st, &d->io, d->meta, NULL), 0);
    uint8_t p[VSR_STATE_SIZE];
    vsr_state_encode(s, p);
    ck_assert_int_eq(sb_write(&st, p, sizeof(p)), 0);
}

/* Writes a snapshot at `op`; returns its payload checksum. */
static struct vs_u128
dd_snapshot(struct dd *d, uint32_t version, uint64_t op)
{
    uint8_t p[40];
    struct vs_snapshot_prefix pre = {.format_version = version, .op = op};
    vs_snapshot_prefix_write(p, &pre);
    memset(p + 12, (int)op, sizeof(p) - 12);
    struct vs_u128 cs;
    ck_assert_int_eq(snapfile_write(&d->io, d->meta, p, sizeof(p), &cs), 0);
    return cs;
}

/* Appends ops from..to to the WAL (chained). */
static void
dd_wal(struct dd *d, uint64_t from, uint64_t to)
{
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &d->io, d->meta, NULL, NULL), 0);
    uint8_t body[64];
    for (uint64_t op = from; op <= to; op++) {
        struct vs_hdr_prepare h;
        tu_prepare(&h, body, 20 + op % 7, op, d->last, 1);
        ck_assert_int_eq(wal_append(&w, &h, body, 20 + op % 7), 0);
        d->last = h.f.checksum;
        d->last_op = op;
    }
    wal_close(&w);
}

static struct recovery_expect
expect_one(void)
{
    struct recovery_expect e = {
        .check_identity = 1,
        .cluster = tu_cluster(),
        .replica_id = 0,
        .replica_count = 1,
    };
    return e;
}

/* Replica 2 of a 3-node cluster (view 1, no checkpoint) whose WAL holds
 * ops 1..last, each fsynced (the durable mark at last). */
static void
dd_cluster_replica(struct dd *d, uint64_t last)
{
    dd_init(d);
    struct vs_vsr_state s = tu_state(1, 0, (struct vs_u128){0, 0});
    s.replica_count = 3;
    s.replica_id = 2;
    dd_superblock(d, &s);
    dd_wal(d, 1, last);
}

/* What boot expects of that replica. */
static struct recovery_expect
expect_cluster(void)
{
    struct recovery_expect e = expect_one();
    e.replica_count = 3;
    e.replica_id = 2;
    e.is_cluster = 1;
    return e;
}

static enum recovery_verdict
run(struct dd *d, const struct recovery_expect *e, struct recovery_result *r)
{
    ck_assert_int_eq(recovery_open(&d->io, d->dir, e, r), 0);
    return r->verdict;
}

static struct recovery_result res;

START_TEST(test_fresh_and_unformatted)
{
    struct dd d;
    dd_init(&d);
    struct recovery_expect e = expect_one();
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_FRESH);
    ck_assert(recovery_verdict_boots(res.verdict));
    recovery_result_fini(&res);
    /* a cluster replica refuses an empty dir unless formatting */
    e.replica_count = 3;
    e.is_cluster = 1;
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_CLUSTER_UNFORMATTED);
    ck_assert(!recovery_verdict_boots(res.verdict));
    ck_assert_ptr_nonnull(strstr(res.reason, "format"));
    recovery_result_fini(&res);
    e.format_requested = 1;
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_FRESH);
    recovery_result_fini(&res);
    /* a dir that does not exist at all is empty too */
    tu_rm_rf(d.dir);
    e = expect_one();
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_FRESH);
    recovery_result_fini(&res);

    /* format: the superblock first, then a boot with nothing to replay */
    struct vs_vsr_state s = tu_state(0, 0, (struct vs_u128){0, 0});
    ck_assert_int_eq(recovery_format_fresh(&d.io, d.dir, &s), 0);
    ck_assert(tu_exists(d.meta, VS_SUPERBLOCK_A));
    ck_assert(!tu_exists(d.meta, VS_JOURNAL_FILE));
    ck_assert_int_eq(recovery_format_fresh(&d.io, d.dir, &s), -EEXIST);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert(!res.have_snapshot);
    ck_assert_uint_gt(res.replay_from, res.replay_to);
    ck_assert(res.journal_open);
    ck_assert(wal_empty(&res.journal));
    recovery_result_fini(&res);
    s.log_view = 5; /* invalid initial state */
    tu_rm_rf(d.dir);
    ck_assert_int_eq(recovery_format_fresh(&d.io, d.dir, &s), -EINVAL);
    tu_rm_rf(d.dir);
}
END_TEST

START_TEST(test_superblock_missing_beside_data)
{
    struct dd d;
    dd_init(&d);
    struct recovery_expect e = expect_one();
    dd_wal(&d, 1, 2);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_SUPERBLOCK_MISSING);
    ck_assert_ptr_nonnull(strstr(res.reason, "journal.wal"));
    recovery_result_fini(&res);
    tu_rm_rf(d.dir);
    dd_init(&d);
    dd_snapshot(&d, 1, 4);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_SUPERBLOCK_MISSING);
    ck_assert_ptr_nonnull(strstr(res.reason, "snapshot.bin"));
    recovery_result_fini(&res);
    tu_rm_rf(d.dir);
}
END_TEST

START_TEST(test_superblock_refusals)
{
    struct dd d;
    dd_init(&d);
    struct recovery_expect e = expect_one();
    struct vs_vsr_state s = tu_state(2, 0, (struct vs_u128){0, 0});
    dd_superblock(&d, &s);
    dd_superblock(&d, &s);
    /* corrupt slot b (the newest) beside a valid a */
    size_t len;
    uint8_t *b = tu_read_file(d.meta, VS_SUPERBLOCK_B, &len);
    b[30] ^= 1;
    tu_write_file(d.meta, VS_SUPERBLOCK_B, b, len);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_SUPERBLOCK_UNREADABLE);
    ck_assert_ptr_nonnull(strstr(res.reason, "superblock.b"));
    recovery_result_fini(&res);
    free(b);
    tu_rm_rf(d.dir);

    /* undecodable: a clean record whose payload is not a VsrState */
    dd_init(&d);
    struct sb_store st;
    ck_assert_int_eq(sb_open(&st, &d.io, d.meta, NULL), 0);
    ck_assert_int_eq(sb_write(&st, "short", 5), 0);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_SUPERBLOCK_UNDECODABLE);
    recovery_result_fini(&res);
    s.log_view = s.view + 1;
    uint8_t p[VSR_STATE_SIZE];
    vsr_state_encode(&s, p);
    ck_assert_int_eq(sb_write(&st, p, sizeof(p)), 0);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_SUPERBLOCK_UNDECODABLE);
    ck_assert_ptr_nonnull(strstr(res.reason, "log_view"));
    recovery_result_fini(&res);
    tu_rm_rf(d.dir);
}
END_TEST

START_TEST(test_identity)
{
    struct dd d;
    dd_init(&d);
    struct vs_vsr_state s = tu_state(1, 0, (struct vs_u128){0, 0});
    dd_superblock(&d, &s);
    struct recovery_expect e = expect_one();
    e.cluster.lo ^= 1;
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_IDENTITY_CLUSTER);
    recovery_result_fini(&res);
    e = expect_one();
    e.replica_id = 1;
    e.replica_count = 3;
    e.is_cluster = 1;
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_IDENTITY_REPLICA_ID);
    recovery_result_fini(&res);
    e.replica_id = 0;
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_IDENTITY_REPLICA_COUNT);
    recovery_result_fini(&res);
    e.check_identity = 0;
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    recovery_result_fini(&res);
    tu_rm_rf(d.dir);
}
END_TEST

START_TEST(test_snapshot_pairing)
{
    struct recovery_expect e = expect_one();
    struct dd d;
    /* same op, same checksum: boot, replay after the snapshot */
    dd_init(&d);
    struct vs_u128 cs = dd_snapshot(&d, 1, 5);
    struct vs_vsr_state s = tu_state(1, 5, cs);
    dd_superblock(&d, &s);
    dd_wal(&d, 5, 9);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert(res.have_snapshot);
    ck_assert_uint_eq(res.snapshot_op, 5);
    ck_assert_uint_eq(res.replay_from, 6);
    ck_assert_uint_eq(res.replay_to, 9);
    ck_assert_ptr_nonnull(wal_header(&res.journal, 9));
    ck_assert_uint_eq(res.snap.payload_len, 40);
    recovery_result_fini(&res);

    /* a crashed snapshot replacement: the .tmp is ignored and removed */
    tu_write_file(d.meta, "snapshot.bin.tmp", "partial", 7);
    struct recovery_expect ro = e;
    ro.read_only = 1;
    ck_assert_int_eq(run(&d, &ro, &res), RECOVERY_BOOT);
    recovery_result_fini(&res);
    ck_assert(tu_exists(d.meta, "snapshot.bin.tmp"));
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_uint_eq(res.snapshot_op, 5);
    size_t plen;
    uint8_t *payload = snapfile_take_payload(&res.snap, &plen);
    ck_assert_uint_eq(plen, 40);
    ck_assert_uint_eq(payload[12], 5);
    free(payload);
    recovery_result_fini(&res);
    ck_assert(!tu_exists(d.meta, "snapshot.bin.tmp"));

    /* checkpoint checksum mismatch at the same op */
    s.checkpoint_checksum.lo ^= 1;
    dd_superblock(&d, &s);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_CHECKPOINT_CHECKSUM);
    ck_assert_ptr_nonnull(strstr(res.reason, "op 5"));
    recovery_result_fini(&res);

    /* checkpoint ahead of the snapshot */
    s = tu_state(1, 7, cs);
    dd_superblock(&d, &s);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_CHECKPOINT_AHEAD);
    recovery_result_fini(&res);

    /* superblock lagging a newer complete snapshot: accepted */
    s = tu_state(1, 5, cs);
    dd_superblock(&d, &s);
    dd_snapshot(&d, 1, 8);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_uint_eq(res.snapshot_op, 8);
    ck_assert_uint_eq(res.replay_from, 9);
    ck_assert_uint_eq(res.replay_to, 9);
    recovery_result_fini(&res);

    /* bad trailer, unknown payload format */
    size_t len;
    uint8_t *b = tu_read_file(d.meta, VS_SNAPSHOT_FILE, &len);
    b[20] ^= 8;
    tu_write_file(d.meta, VS_SNAPSHOT_FILE, b, len);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_SNAPSHOT_TRAILER);
    recovery_result_fini(&res);
    tu_write_file(d.meta, VS_SNAPSHOT_FILE, b, 10);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_SNAPSHOT_TRAILER);
    recovery_result_fini(&res);
    free(b);
    dd_snapshot(&d, 4, 8);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_SNAPSHOT_FORMAT);
    ck_assert_ptr_nonnull(strstr(res.reason, "version 4"));
    recovery_result_fini(&res);

    /* checkpoint recorded but the snapshot is gone */
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", d.meta, VS_SNAPSHOT_FILE);
    remove(path);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_CHECKPOINT_AHEAD);
    recovery_result_fini(&res);
    tu_rm_rf(d.dir);
}
END_TEST

START_TEST(test_wal_verdicts)
{
    struct recovery_expect e = expect_one();
    struct dd d;
    dd_init(&d);
    struct vs_u128 cs = dd_snapshot(&d, 1, 3);
    struct vs_vsr_state s = tu_state(1, 3, cs);
    dd_superblock(&d, &s);
    dd_wal(&d, 3, 8);
    size_t len;
    uint8_t *orig = tu_read_file(d.meta, VS_JOURNAL_FILE, &len);

    /* interior corruption: refused with op and offset */
    uint8_t *b = vs_xmalloc(len);
    memcpy(b, orig, len);
    b[300] ^= 1; /* inside op 4's header (op 3 is ~279 bytes) */
    tu_write_file(d.meta, VS_JOURNAL_FILE, b, len);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_WAL_INTERIOR);
    ck_assert_ptr_nonnull(strstr(res.reason, "op 4"));
    ck_assert_ptr_nonnull(strstr(res.reason, "offset"));
    recovery_result_fini(&res);

    /* damaged tail: one replica refuses, the flag cuts, a cluster cuts */
    memcpy(b, orig, len);
    b[len - 2] ^= 1;
    tu_write_file(d.meta, VS_JOURNAL_FILE, b, len);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_WAL_DAMAGED_TAIL);
    ck_assert_ptr_nonnull(strstr(res.reason, "--cut-damaged-tail"));
    recovery_result_fini(&res);
    struct recovery_expect ro = e;
    ro.read_only = 1;
    ro.cut_damaged_tail = 1;
    ck_assert_int_eq(run(&d, &ro, &res), RECOVERY_BOOT);
    ck_assert(res.wal_tail_cut);
    ck_assert(!res.journal_open);
    ck_assert_ptr_nonnull(strstr(res.reason, "would cut"));
    recovery_result_fini(&res);
    size_t now;
    free(tu_read_file(d.meta, VS_JOURNAL_FILE, &now));
    ck_assert_uint_eq(now, len); /* read-only: untouched */
    e.cut_damaged_tail = 1;
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_uint_eq(res.replay_to, 7);
    recovery_result_fini(&res);
    e.cut_damaged_tail = 0;

    /* torn tail: cut, boot */
    tu_write_file(d.meta, VS_JOURNAL_FILE, orig, len - 5);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert(res.wal_tail_cut);
    ck_assert_uint_eq(res.replay_to, 7);
    recovery_result_fini(&res);

    /* chain break, unknown format */
    memcpy(b, orig, len);
    tu_write_file(d.meta, VS_JOURNAL_FILE, orig, len);
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &d.io, d.meta, NULL, NULL), 0);
    uint8_t body[64];
    struct vs_hdr_prepare h;
    tu_prepare(&h, body, 10, 9, d.last, 1);
    ck_assert_int_eq(wal_append(&w, &h, body, 10), 0);
    wal_close(&w);
    size_t l2;
    uint8_t *c = tu_read_file(d.meta, VS_JOURNAL_FILE, &l2);
    struct vs_u128 bad = {1, 2};
    tu_prepare(&h, body, 10, 9, bad, 1);
    memcpy(c + len, &h, sizeof(h));
    memcpy(c + len + VS_HEADER_SIZE, body, 10);
    tu_write_file(d.meta, VS_JOURNAL_FILE, c, l2);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_WAL_CHAIN);
    recovery_result_fini(&res);
    tu_prepare(&h, body, 10, 9, d.last, 3);
    memcpy(c + len, &h, sizeof(h));
    memcpy(c + len + VS_HEADER_SIZE, body, 10);
    tu_write_file(d.meta, VS_JOURNAL_FILE, c, l2);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_WAL_FORMAT);
    recovery_result_fini(&res);
    free(c);

    /* gap between the snapshot and the WAL */
    tu_write_file(d.meta, VS_JOURNAL_FILE, "", 0);
    d.last = (struct vs_u128){0, 0};
    dd_wal(&d, 6, 7);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_WAL_GAP);
    recovery_result_fini(&res);

    /* a WAL wholly behind the snapshot, and a superblock (as version 1
     * wrote it) without the checkpoint op's header: the hash chain
     * cannot restart -- refused, read-only (inspect) and writable alike */
    tu_write_file(d.meta, VS_JOURNAL_FILE, "", 0);
    d.last = (struct vs_u128){0, 0};
    dd_wal(&d, 1, 2);
    ro = e;
    ro.read_only = 1;
    ck_assert_int_eq(run(&d, &ro, &res), RECOVERY_REFUSE_WAL_CHAIN_START);
    recovery_result_fini(&res);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_WAL_CHAIN_START);
    ck_assert_ptr_nonnull(strstr(res.reason, "checkpoint op 3"));
    recovery_result_fini(&res);
    /* with the header recorded (version 2): boot, drained, nothing to
     * replay; the same for a WAL that held only the checkpoint op and
     * lost it as a damaged tail */
    struct vs_hdr_prepare cp;
    tu_prepare(&cp, body, 10, 3, (struct vs_u128){7, 7}, 2);
    s.checkpoint_prepare = cp;
    dd_superblock(&d, &s);
    ck_assert_int_eq(run(&d, &ro, &res), RECOVERY_BOOT);
    recovery_result_fini(&res);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_uint_gt(res.replay_from, res.replay_to);
    ck_assert(wal_empty(&res.journal));
    recovery_result_fini(&res);
    tu_write_file(d.meta, VS_JOURNAL_FILE, &cp, sizeof(cp));
    {
        uint8_t *w3 = vs_xmalloc(sizeof(cp) + 10);
        memcpy(w3, &cp, sizeof(cp));
        memcpy(w3 + sizeof(cp), body, 10);
        w3[sizeof(cp) + 3] ^= 1; /* body damage */
        tu_write_file(d.meta, VS_JOURNAL_FILE, w3, sizeof(cp) + 10);
        free(w3);
    }
    ro.cut_damaged_tail = 1;
    ck_assert_int_eq(run(&d, &ro, &res), RECOVERY_BOOT);
    recovery_result_fini(&res);
    e.cut_damaged_tail = 1;
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert(res.wal_tail_cut);
    ck_assert(wal_empty(&res.journal));
    recovery_result_fini(&res);
    e.cut_damaged_tail = 0;
    free(b);
    free(orig);
    tu_rm_rf(d.dir);
}
END_TEST

START_TEST(test_cluster_damaged_tail_cut)
{
    struct dd d;
    dd_cluster_replica(&d, 4);
    size_t len;
    uint8_t *b = tu_read_file(d.meta, VS_JOURNAL_FILE, &len);
    b[len - 1] ^= 0x80;
    tu_write_file(d.meta, VS_JOURNAL_FILE, b, len);
    free(b);
    struct recovery_expect e = expect_cluster();
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert(res.wal_tail_cut);
    ck_assert_int_eq(res.wal_scan.verdict, WAL_DAMAGED_TAIL);
    ck_assert_uint_eq(wal_last_op(&res.journal), 3);
    ck_assert_uint_eq(res.replay_from, 1);
    ck_assert_uint_eq(res.replay_to, 3);
    /* the op cut as damage is reported, to be persisted as faulty */
    ck_assert_uint_eq(res.damaged_cut_op, 4);
    /* only the body failed: the header gives the entry's size, it ends
     * the file, so the range is that one op, and its header is kept */
    ck_assert_uint_eq(res.damaged_cut_last, 4);
    ck_assert(res.wal_scan.bad_header_valid);
    ck_assert_uint_eq(res.wal_scan.bad_header.op, 4);
    ck_assert_ptr_nonnull(strstr(res.reason, "op 4 cut as damage"));
    /* the mark was durable before the cut: the superblock on disk names
     * the range and the cut entry's header, and the state returned is
     * the state written */
    ck_assert_uint_eq(res.state.faulty_op, 4);
    ck_assert_uint_eq(res.state.nonack_op, 4);
    ck_assert(vsr_state_has_faulty_prepare(&res.state));
    ck_assert_uint_eq(res.state.faulty_prepare.op, 4);
    ck_assert_uint_eq(res.sb.sequence, 2);
    recovery_result_fini(&res);
    /* a crash right after the cut: the next boot finds a clean WAL and
     * still the faulty range with its header */
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_int_eq(res.wal_scan.verdict, WAL_CLEAN);
    ck_assert_uint_eq(res.damaged_cut_op, 0);
    ck_assert_uint_eq(res.state.faulty_op, 4);
    ck_assert_uint_eq(res.state.nonack_op, 4);
    ck_assert(vsr_state_has_faulty_prepare(&res.state));
    ck_assert_uint_eq(res.state.faulty_prepare.op, 4);
    recovery_result_fini(&res);
    tu_rm_rf(d.dir);
}
END_TEST

/* A cluster replica under shard 0's group commit, an older release's
 * journal (no durable mark) that lost the
 * unsynced page of op 2's header but kept ops 3 and 4 (a power loss): a
 * torn tail cut at op 2 (never acknowledged, nothing faulty); the classic
 * rules would refuse it as interior. */
static size_t entry_at(const uint8_t *b, size_t len, uint64_t op);

START_TEST(test_cluster_unsynced_group_tail_cut)
{
    struct dd d;
    dd_cluster_replica(&d, 4);
    size_t len;
    uint8_t *b = tu_read_file(d.meta, VS_JOURNAL_FILE, &len);
    size_t at2 = entry_at(b, len, 2);
    memset(b + at2, 0, VS_HEADER_SIZE);
    tu_write_file(d.meta, VS_JOURNAL_FILE, b, len);
    free(b);
    tu_mark_remove(d.meta); /* an older release's journal */
    struct recovery_expect e = expect_cluster();
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_WAL_INTERIOR);
    recovery_result_fini(&res);
    e.wal_unsynced_max = WAL_GROUP_UNSYNCED_MAX;
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert(res.wal_tail_cut);
    ck_assert_int_eq(res.wal_scan.verdict, WAL_TORN_TAIL);
    ck_assert_uint_eq(wal_last_op(&res.journal), 1);
    ck_assert_uint_eq(res.damaged_cut_op, 0);
    ck_assert_ptr_nonnull(strstr(res.reason, "valid entries up to op 4"));
    /* the journal now keeps a durable mark, from its last op */
    ck_assert(tu_exists(d.meta, WAL_MARK_FILE));
    ck_assert_uint_eq(res.journal.mark.op, 1);
    recovery_result_fini(&res);
    tu_rm_rf(d.dir);
}
END_TEST

/* The same group write with the journal's durable mark: op 2 zeroed at
 * or below the mark was fsynced and damaged since (entries after it may
 * have been acknowledged): refused as interior; above it the write never
 * completed its fsync: cut, nothing faulty (nackable). A damaged last
 * entry above the mark is cut the same way, never marked faulty. */
START_TEST(test_cluster_group_tail_marked)
{
    struct dd d;
    dd_cluster_replica(&d, 4);
    size_t len;
    uint8_t *b = tu_read_file(d.meta, VS_JOURNAL_FILE, &len);
    uint8_t *orig = vs_xmalloc(len);
    memcpy(orig, b, len);
    size_t at2 = entry_at(b, len, 2);
    memset(b + at2, 0, VS_HEADER_SIZE);
    tu_write_file(d.meta, VS_JOURNAL_FILE, b, len);
    struct recovery_expect e = expect_cluster();
    e.wal_unsynced_max = WAL_GROUP_UNSYNCED_MAX;
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_WAL_INTERIOR);
    recovery_result_fini(&res);
    tu_mark_set(d.meta, 1);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert(res.wal_tail_cut);
    ck_assert_int_eq(res.wal_scan.verdict, WAL_TORN_TAIL);
    ck_assert(res.wal_scan.mark_cut);
    ck_assert_uint_eq(wal_last_op(&res.journal), 1);
    ck_assert_uint_eq(res.damaged_cut_op, 0);
    ck_assert_uint_eq(res.state.faulty_op, 0);
    recovery_result_fini(&res);

    /* op 4's body damaged, the mark at 3 */
    size_t at4 = entry_at(orig, len, 4);
    orig[at4 + VS_HEADER_SIZE + 2] ^= 0x01;
    tu_write_file(d.meta, VS_JOURNAL_FILE, orig, len);
    tu_mark_set(d.meta, 3);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_int_eq(res.wal_scan.verdict, WAL_TORN_TAIL);
    ck_assert_uint_eq(wal_last_op(&res.journal), 3);
    ck_assert_uint_eq(res.damaged_cut_op, 0);
    ck_assert_uint_eq(res.state.faulty_op, 0);
    recovery_result_fini(&res);
    /* ... and at 4 (fsynced): the damaged tail, faulty */
    tu_write_file(d.meta, VS_JOURNAL_FILE, orig, len);
    tu_mark_set(d.meta, 4);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_int_eq(res.wal_scan.verdict, WAL_DAMAGED_TAIL);
    ck_assert_uint_eq(res.damaged_cut_op, 4);
    ck_assert_uint_eq(res.state.faulty_op, 4);
    recovery_result_fini(&res);
    free(b);
    free(orig);
    tu_rm_rf(d.dir);
}
END_TEST

/* A cluster replica whose only journal entry is damaged beyond reading
 * its op (a flipped command byte): the op is unknown, so the first op
 * above the state is reported faulty (never nacked until repaired). */
START_TEST(test_cluster_unreadable_first_entry_marked)
{
    struct dd d;
    dd_cluster_replica(&d, 1);
    size_t len;
    uint8_t *b = tu_read_file(d.meta, VS_JOURNAL_FILE, &len);
    b[60] ^= 0x40; /* the command byte: the header no longer parses */
    tu_write_file(d.meta, VS_JOURNAL_FILE, b, len);
    free(b);
    struct recovery_expect e = expect_cluster();
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_int_eq(res.wal_scan.verdict, WAL_DAMAGED_TAIL);
    ck_assert(wal_empty(&res.journal));
    ck_assert_uint_eq(res.damaged_cut_op, 1);
    /* the header is unreadable: every whole header's worth of the cut
     * bytes may have been an entry (each may have been acknowledged) */
    ck_assert(!res.wal_scan.bad_header_valid);
    uint64_t whole = len / VS_HEADER_SIZE;
    ck_assert_uint_eq(res.damaged_cut_last, whole > 0 ? whole : 1);
    ck_assert_ptr_nonnull(strstr(res.reason, "cut as damage"));
    recovery_result_fini(&res);
    tu_rm_rf(d.dir);
}
END_TEST

/* Byte offset of `op`'s entry in a journal image (entries back to back,
 * sizes from their headers). */
static size_t
entry_at(const uint8_t *b, size_t len, uint64_t op)
{
    size_t pos = 0;
    while (pos + VS_HEADER_SIZE <= len) {
        struct vs_hdr_prepare h;
        memcpy(&h, b + pos, sizeof(h));
        if (h.op == op)
            return pos;
        ck_assert_uint_ge(h.f.size, VS_HEADER_SIZE);
        pos += h.f.size;
    }
    ck_abort_msg("op %llu not in the journal image", (unsigned long long)op);
    return 0;
}

/* Writes the journal image with one bit flipped in each listed op's
 * header (at byte 100 of it: a checksummed field). */
static void
rot_ops(struct dd *d, const uint8_t *orig, size_t len, const uint64_t *ops,
        size_t n)
{
    uint8_t *b = vs_xmalloc(len);
    memcpy(b, orig, len);
    for (size_t i = 0; i < n; i++)
        b[entry_at(orig, len, ops[i]) + 100] ^= 4;
    tu_write_file(d->meta, VS_JOURNAL_FILE, b, len);
    free(b);
}

/* Entries at or below the snapshot op are kept only to repair peers:
 * damage among them drops them (and every older entry) instead of
 * refusing the boot; damage above it refuses as interior corruption. */
START_TEST(test_wal_damage_below_snapshot)
{
    struct recovery_expect e = expect_one();
    struct dd d;
    dd_init(&d);
    struct vs_u128 cs = dd_snapshot(&d, 1, 6);
    struct vs_vsr_state s = tu_state(1, 6, cs);
    dd_superblock(&d, &s);
    dd_wal(&d, 1, 9);
    size_t len;
    uint8_t *orig = tu_read_file(d.meta, VS_JOURNAL_FILE, &len);

    /* op 3 rots: read-only reports the drop and modifies nothing */
    uint64_t three = 3;
    rot_ops(&d, orig, len, &three, 1);
    struct recovery_expect ro = e;
    ro.read_only = 1;
    ck_assert_int_eq(run(&d, &ro, &res), RECOVERY_BOOT);
    ck_assert_ptr_nonnull(strstr(res.reason, "WAL ops 1..3 would be dropped"));
    recovery_result_fini(&res);
    size_t now;
    free(tu_read_file(d.meta, VS_JOURNAL_FILE, &now));
    ck_assert_uint_eq(now, len);
    /* writable: boots, ops 1..3 gone, replay after the snapshot */
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_ptr_nonnull(strstr(res.reason, "WAL ops 1..3 dropped"));
    ck_assert_ptr_nonnull(strstr(res.reason, "damage at op 3"));
    ck_assert_uint_eq(res.wal_scan.dropped, 1);
    ck_assert_uint_eq(wal_first_op(&res.journal), 4);
    ck_assert_uint_eq(wal_last_op(&res.journal), 9);
    ck_assert_ptr_null(wal_header(&res.journal, 3));
    ck_assert_uint_eq(res.replay_from, 7);
    ck_assert_uint_eq(res.replay_to, 9);
    uint8_t body[64];
    ck_assert_int_ge(wal_read_body(&res.journal, 9, body, sizeof(body)), 0);
    /* the journal still appends after the rewrite */
    struct vs_hdr_prepare h;
    tu_prepare(&h, body, 12, 10, d.last, 1);
    ck_assert_int_eq(wal_append(&res.journal, &h, body, 12), 0);
    d.last = h.f.checksum;
    recovery_result_fini(&res);
    /* the drop is durable: the file holds ops 4..10 only */
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_uint_eq(res.wal_scan.dropped, 0);
    ck_assert_int_eq(res.wal_scan.verdict, WAL_CLEAN);
    ck_assert_uint_eq(wal_first_op(&res.journal), 4);
    ck_assert_uint_eq(wal_last_op(&res.journal), 10);
    recovery_result_fini(&res);
    size_t l4;
    uint8_t *b4 = tu_read_file(d.meta, VS_JOURNAL_FILE, &l4);
    ck_assert_uint_eq(entry_at(b4, l4, 4), 0);
    free(b4);

    /* two damaged ranges below the snapshot: both dropped */
    tu_write_file(d.meta, VS_JOURNAL_FILE, orig, len);
    uint64_t two_four[] = {2, 4};
    rot_ops(&d, orig, len, two_four, 2);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_uint_eq(res.wal_scan.dropped, 2);
    ck_assert_uint_eq(wal_first_op(&res.journal), 5);
    ck_assert_ptr_nonnull(strstr(res.reason, "WAL ops 1..4 dropped"));
    ck_assert_ptr_nonnull(strstr(res.reason, "and more"));
    recovery_result_fini(&res);

    /* the first entry rots: its op is unknown, the rest is kept */
    uint64_t one = 1;
    tu_write_file(d.meta, VS_JOURNAL_FILE, orig, len);
    rot_ops(&d, orig, len, &one, 1);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_uint_eq(wal_first_op(&res.journal), 2);
    ck_assert_ptr_nonnull(strstr(res.reason, "WAL ops up to 1 dropped"));
    recovery_result_fini(&res);

    /* the snapshot op's own entry anchors the chain: without the
     * superblock's record of its header it is interior corruption */
    uint64_t six = 6;
    tu_write_file(d.meta, VS_JOURNAL_FILE, orig, len);
    rot_ops(&d, orig, len, &six, 1);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_WAL_INTERIOR);
    ck_assert_ptr_nonnull(strstr(res.reason, "op 6"));
    recovery_result_fini(&res);
    /* with it recorded (VsrState v2): dropped, the chain restarts from
     * the recorded header */
    struct vs_hdr_prepare cp;
    memcpy(&cp, orig + entry_at(orig, len, 6), sizeof(cp));
    s.checkpoint_prepare = cp;
    dd_superblock(&d, &s);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_BOOT);
    ck_assert_uint_eq(wal_first_op(&res.journal), 7);
    ck_assert_ptr_nonnull(strstr(res.reason, "WAL ops 1..6 dropped"));
    ck_assert_uint_eq(res.replay_from, 7);
    ck_assert_uint_eq(res.replay_to, 9);
    recovery_result_fini(&res);

    /* above the snapshot op: refused as before, one replica or cluster */
    uint64_t seven = 7;
    tu_write_file(d.meta, VS_JOURNAL_FILE, orig, len);
    rot_ops(&d, orig, len, &seven, 1);
    ck_assert_int_eq(run(&d, &e, &res), RECOVERY_REFUSE_WAL_INTERIOR);
    ck_assert_ptr_nonnull(strstr(res.reason, "op 7"));
    recovery_result_fini(&res);
    s.replica_count = 3;
    s.replica_id = 1;
    dd_superblock(&d, &s);
    struct recovery_expect ec = e;
    ec.replica_count = 3;
    ec.replica_id = 1;
    ec.is_cluster = 1;
    ck_assert_int_eq(run(&d, &ec, &res), RECOVERY_REFUSE_WAL_INTERIOR);
    recovery_result_fini(&res);
    /* ... while a cluster replica drops damage below it, with nothing
     * marked faulty (no op it may have to serve is lost) */
    tu_write_file(d.meta, VS_JOURNAL_FILE, orig, len);
    rot_ops(&d, orig, len, &three, 1);
    ck_assert_int_eq(run(&d, &ec, &res), RECOVERY_BOOT);
    ck_assert_uint_eq(wal_first_op(&res.journal), 4);
    ck_assert_uint_eq(res.damaged_cut_op, 0);
    ck_assert(!res.wal_tail_cut);
    recovery_result_fini(&res);
    free(orig);
    tu_rm_rf(d.dir);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("storage_recovery");
    TCase *tc = tcase_create("recovery");
    tcase_add_test(tc, test_fresh_and_unformatted);
    tcase_add_test(tc, test_superblock_missing_beside_data);
    tcase_add_test(tc, test_superblock_refusals);
    tcase_add_test(tc, test_identity);
    tcase_add_test(tc, test_snapshot_pairing);
    tcase_add_test(tc, test_wal_verdicts);
    tcase_add_test(tc, test_cluster_damaged_tail_cut);
    tcase_add_test(tc, test_cluster_unsynced_group_tail_cut);
    tcase_add_test(tc, test_cluster_group_tail_marked);
    tcase_add_test(tc, test_cluster_unreadable_first_entry_marked);
    tcase_add_test(tc, test_wal_damage_below_snapshot);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
