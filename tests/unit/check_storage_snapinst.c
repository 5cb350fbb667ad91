/*
 * tests/unit/check_storage_snapinst.c - installing a transferred snapshot
 * on a cluster replica's data dir (shard/storage/snapshot_install.h) and
 * what boots after a crash at any point of it.
 *
 * The replica: checkpoint at op 5 (superblock v2 with op 5's header),
 * journal 5..12 (commit_min 7, so 8..12 is an old view's uncommitted
 * suffix, partly above the snapshot's op 9). The install stores the
 * snapshot of op 9, then the pairing is written. A crash is simulated at
 * every storage call of every kind (the fault injector fails the nth
 * call and every later one); after each, recovery of the real dir must
 * boot either the old state (snapshot 5) or the new one (snapshot 9)
 * with no journal entry above 9 beside the new one. Also: a snapshot
 * not above commit_min is refused with nothing changed; no space for the
 * journal cut changes nothing; after a crash that lost the pairing, the
 * booted replica holds no header of op 9 (checkpoint_header.h: no
 * checkpoint at op 9, the next journaled op's instead, which boots),
 * while a pairing at 9 written without the header, the state an earlier
 * write order left, is still refused.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/layout.h"
#include "shard/storage/checkpoint_header.h"
#include "shard/storage/io.h"
#include "shard/storage/journal.h"
#include "shard/storage/recovery.h"
#include "shard/storage/snapshot_file.h"
#include "shard/storage/snapshot_install.h"
#include "shard/storage/superblock.h"
#include "shard/storage/vsr_state.h"
#include "tests/unit/storage_testutil.h"

#define OLD_OP 5u
#define NEW_OP 9u
#define COMMIT 7u
#define LAST   12u

static char dir[256], meta[300];
static struct vs_hdr_prepare hdr[LAST + 1];
static uint8_t payload[4096];

static void
write_sb(struct vs_sio *io, uint64_t cp, struct vs_u128 cs,
         const struct vs_hdr_prepare *h, int must)
{
    struct vs_vsr_state s = tu_state(1, cp, cs);
    s.replica_count = 3;
    s.checkpoint_prepare = *h;
    struct sb_store st;
    int rc = sb_open(&st, io, meta, NULL);
    uint8_t p[VSR_STATE_SIZE];
    vsr_state_encode(&s, p);
    if (rc == 0)
        rc = sb_write(&st, p, sizeof(p));
    if (must)
        ck_assert_int_eq(rc, 0);
}

/* The replica before the install. */
static void
make_replica(void)
{
    tu_mkdtemp(dir, sizeof(dir), meta, sizeof(meta));
    struct vs_sio io;
    sio_init_real(&io);
    uint8_t p[40];
    struct vs_snapshot_prefix pre = {.format_version = 1, .op = OLD_OP};
    vs_snapshot_prefix_write(p, &pre);
    memset(p + 12, 0x55, sizeof(p) - 12);
    struct vs_u128 cs;
    ck_assert_int_eq(snapfile_write(&io, meta, p, sizeof(p), &cs), 0);
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &io, meta, NULL, NULL), 0);
    struct vs_u128 parent = {0, 0};
    uint8_t body[64];
    for (uint64_t op = OLD_OP; op <= LAST; op++) {
        tu_prepare(&hdr[op], body, 24, op, parent, 1);
        ck_assert_int_eq(wal_append(&w, &hdr[op], body, 24), 0);
        parent = hdr[op].f.checksum;
    }
    wal_close(&w);
    write_sb(&io, OLD_OP, cs, &hdr[OLD_OP], 1);
}

static struct recovery_expect
expect_cluster(void)
{
    struct recovery_expect e = {
        .check_identity = 1,
        .cluster = tu_cluster(),
        .replica_id = 0,
        .replica_count = 3,
        .is_cluster = 1,
    };
    return e;
}

static void
setup(void)
{
    struct vs_snapshot_prefix pre = {.format_version = 1, .op = NEW_OP};
    vs_snapshot_prefix_write(payload, &pre);
    for (size_t i = 12; i < sizeof(payload); i++)
        payload[i] = (uint8_t)(i * 29);
}

/* Boots the real dir through io with recovery's full result (the
 * caller finishes it; its journal keeps using io). */
static void
boot_result(struct vs_sio *io, struct recovery_result *r)
{
    struct recovery_expect e = expect_cluster();
    ck_assert_int_eq(recovery_open(io, dir, &e, r), 0);
}

/* Boots the real dir; returns the snapshot op it boots on. */
static uint64_t
boot_op(void)
{
    struct vs_sio io;
    sio_init_real(&io);
    struct recovery_expect e = expect_cluster();
    struct recovery_result r;
    ck_assert_int_eq(recovery_open(&io, dir, &e, &r), 0);
    ck_assert_msg(r.verdict == RECOVERY_BOOT, "verdict %s: %s",
                  recovery_verdict_name(r.verdict), r.reason);
    ck_assert(r.have_snapshot);
    uint64_t op = r.snapshot_op;
    ck_assert(op == OLD_OP || op == NEW_OP);
    if (op == NEW_OP) {
        /* nothing of the old view's suffix survives beside it */
        ck_assert(wal_empty(&r.journal) || wal_last_op(&r.journal) <= COMMIT);
        ck_assert_uint_eq(r.replay_from, NEW_OP + 1);
        ck_assert_uint_eq(r.replay_to, NEW_OP);
    }
    recovery_result_fini(&r);
    return op;
}

/* The replica's journal opened through a fresh fault injector. */
static void
open_faulty(struct sio_fault *f, struct wal *w)
{
    sio_fault_init(f, 0);
    ck_assert_int_eq(wal_open(w, &f->io, meta, NULL, NULL), 0);
}

/* snapinst_store of the test payload, claimed to be of op `op`. */
static int
store_at(struct sio_fault *f, struct wal *w, uint64_t op, struct vs_u128 *sum,
         char *err, size_t errlen)
{
    return snapinst_store(&f->io, meta, w, COMMIT, payload, sizeof(payload), op,
                          sum, err, errlen);
}

START_TEST(test_install_then_boot)
{
    make_replica();
    struct vs_sio io;
    sio_init_real(&io);
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &io, meta, NULL, NULL), 0);
    struct vs_u128 sum;
    char err[256];
    ck_assert_int_eq(snapinst_store(&io, meta, &w, COMMIT, payload,
                                    sizeof(payload), NEW_OP, &sum, err,
                                    sizeof(err)),
                     0);
    ck_assert(wal_empty(&w));
    wal_close(&w);
    /* before the pairing: the new snapshot boots */
    ck_assert_uint_eq(boot_op(), NEW_OP);
    write_sb(&io, NEW_OP, sum, &hdr[NEW_OP], 1);
    ck_assert_uint_eq(boot_op(), NEW_OP);
    tu_rm_rf(dir);
}
END_TEST

/* A crash after snapshot.bin's rename lost the pairing (here: inside
 * its superblock write): the replica boots on the snapshot knowing only
 * the old checkpoint's header. A checkpoint at the snapshot's op finds no
 * header and is not written; the pairing the old order wrote there
 * without it is refused for good; the next op's checkpoint boots. */
START_TEST(test_lost_pairing_no_headerless_checkpoint)
{
    make_replica();
    struct sio_fault f;
    struct wal w;
    open_faulty(&f, &w);
    struct vs_u128 sum;
    char err[256];
    ck_assert_int_eq(store_at(&f, &w, NEW_OP, &sum, err, sizeof(err)), 0);
    wal_close(&w);
    f.crash_after_fault = 1;
    sio_fault_arm(&f, SIO_RENAME, 1, EIO, -1); /* the slot's rename */
    write_sb(&f.io, NEW_OP, sum, &hdr[NEW_OP], 0);
    ck_assert(f.crashed);

    struct vs_sio io;
    sio_init_real(&io);
    struct recovery_result r;
    boot_result(&io, &r);
    ck_assert_msg(r.verdict == RECOVERY_BOOT, "%s", r.reason);
    ck_assert_uint_eq(r.snapshot_op, NEW_OP);
    ck_assert_uint_eq(r.state.checkpoint_op, OLD_OP);
    ck_assert(wal_empty(&r.journal));
    struct vs_hdr_prepare h;
    ck_assert_int_eq(
        ckpt_header_find(&r.journal, &r.state.checkpoint_prepare, NEW_OP, &h),
        0);
    ck_assert_int_eq(
        ckpt_header_find(&r.journal, &r.state.checkpoint_prepare, 0, &h), 0);
    /* the record found: only for its own op */
    ck_assert_int_eq(
        ckpt_header_find(&r.journal, &r.state.checkpoint_prepare, OLD_OP, &h),
        1);
    ck_assert_uint_eq(h.op, OLD_OP);
    /* the view names op 9's checksum; op 10 is journaled above it */
    struct vs_hdr_prepare next;
    uint8_t body[64];
    tu_prepare(&next, body, 24, NEW_OP + 1, hdr[NEW_OP].f.checksum, 1);
    ck_assert_int_eq(wal_append(&r.journal, &next, body, 24), 0);
    ck_assert_int_eq(ckpt_header_find(&r.journal, &r.state.checkpoint_prepare,
                                      NEW_OP + 1, &h),
                     1);
    ck_assert(vs_u128_eq(h.f.checksum, next.f.checksum));
    recovery_result_fini(&r);

    /* what the old order wrote: checkpoint op 9, no header, nothing in
     * the journal at or above 9 (here: op 10 lost with a torn append) */
    struct vs_hdr_prepare none;
    memset(&none, 0, sizeof(none));
    write_sb(&io, NEW_OP, sum, &none, 1);
    ck_assert_int_eq(wal_open(&w, &io, meta, NULL, NULL), 0);
    ck_assert_int_eq(wal_drain(&w, NEW_OP + 2), 0);
    wal_close(&w);
    boot_result(&io, &r);
    ck_assert_int_eq(r.verdict, RECOVERY_REFUSE_WAL_CHAIN_START);
    recovery_result_fini(&r);

    /* the checkpoint at op 10 with its header, op 10 drained: boots */
    struct vs_u128 sum10;
    uint8_t p10[sizeof(payload)];
    memcpy(p10, payload, sizeof(p10));
    struct vs_snapshot_prefix pre = {.format_version = 1, .op = NEW_OP + 1};
    vs_snapshot_prefix_write(p10, &pre);
    ck_assert_int_eq(snapfile_write(&io, meta, p10, sizeof(p10), &sum10), 0);
    write_sb(&io, NEW_OP + 1, sum10, &next, 1);
    boot_result(&io, &r);
    ck_assert_msg(r.verdict == RECOVERY_BOOT, "%s", r.reason);
    ck_assert_uint_eq(r.snapshot_op, NEW_OP + 1);
    recovery_result_fini(&r);
    tu_rm_rf(dir);
}
END_TEST

START_TEST(test_refusals_change_nothing)
{
    make_replica();
    struct sio_fault f;
    struct wal w;
    open_faulty(&f, &w);
    struct vs_u128 sum;
    char err[256];
    ck_assert_int_eq(store_at(&f, &w, COMMIT, &sum, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "not above commit_min"));
    sio_fault_arm(&f, SIO_WRITE, 1, ENOSPC, -1); /* the cut rewrites */
    ck_assert_int_eq(store_at(&f, &w, NEW_OP, &sum, err, sizeof(err)), -ENOSPC);
    ck_assert_uint_eq(wal_last_op(&w), LAST);
    wal_close(&w);
    ck_assert_uint_eq(boot_op(), OLD_OP);
    tu_rm_rf(dir);
}
END_TEST

/* A crash at the nth call of `kind` during store + pairing. Returns 1 if
 * the fault fired (the sweep goes on), 0 if the run completed. */
static int
crash_at(enum sio_kind kind, uint64_t nth)
{
    make_replica();
    struct sio_fault f;
    struct wal w;
    open_faulty(&f, &w);
    f.crash_after_fault = 1;
    sio_fault_arm(&f, kind, nth, EIO, kind == SIO_WRITE ? 7 : -1);
    struct vs_u128 sum;
    char err[256];
    int rc = store_at(&f, &w, NEW_OP, &sum, err, sizeof(err));
    if (rc == 0)
        write_sb(&f.io, NEW_OP, sum, &hdr[NEW_OP], 0);
    else
        ck_assert(rc == -VS_EFATAL || rc == -ENOSPC);
    int fired = f.crashed;
    wal_close(&w);
    uint64_t op = boot_op();
    if (!fired)
        ck_assert_uint_eq(op, NEW_OP);
    tu_rm_rf(dir);
    return fired;
}

START_TEST(test_crash_at_every_call_boots)
{
    enum sio_kind kinds[] = {SIO_OPEN,   SIO_WRITE,     SIO_FSYNC,
                             SIO_RENAME, SIO_DIR_FSYNC, SIO_FTRUNCATE,
                             SIO_UNLINK, SIO_READ};
    unsigned crashes = 0;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        for (uint64_t nth = 1; nth <= 64; nth++) {
            if (!crash_at(kinds[k], nth))
                break;
            crashes++;
        }
    ck_assert_uint_gt(crashes, 8); /* the sweep reached the steps */
}
END_TEST

static Suite *
snapinst_suite(void)
{
    Suite *s = suite_create("storage_snapinst");
    TCase *t = tcase_create("install");
    tcase_add_unchecked_fixture(t, setup, NULL);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_install_then_boot);
    tcase_add_test(t, test_refusals_change_nothing);
    tcase_add_test(t, test_crash_at_every_call_boots);
    tcase_add_test(t, test_lost_pairing_no_headerless_checkpoint);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(snapinst_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
