/*
 * tests/unit/check_zero_install.c - installing a fetched metadata state
 * on shard 0 (shard/zero/install_state.h) against a feature-rich state
 * (tests/unit/meta_fixture.h: users, grants, PATs, topics, groups,
 * sessions with cached replies).
 *
 * Covers: the checks refuse (-EPROTO, nothing to free) a missing, foreign
 * or corrupt op header, an undecodable snapshot or one of another op, an
 * undecodable client table; zinst_write leaves snapshot.bin, an empty
 * journal and both left-right instances at the snapshot's op, byte-equal
 * to the source when re-encoded, with the published op moved forward;
 * zinst_table installs the primary's reply rings only when the state's
 * sessions agree slot for slot, and changes nothing otherwise.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/checksum.h"
#include "shard/meta/snapshot_codec.h"
#include "shard/storage/snapshot_file.h"
#include "shard/zero/install_state.h"
#include "tests/unit/meta_fixture.h"
#include "tests/unit/storage_testutil.h"

static struct meta_caps caps;
static void *src;
static struct meta_client_table src_ct;
static struct vs_wbuf snap, table;
static struct vs_hdr_prepare prep;
static uint64_t src_op;

static void
setup(void)
{
    th_caps(&caps);
    src = th_state(&caps);
    meta_ct_init(&src_ct);
    struct th_run r;
    th_run_init(&r);
    fx_build(src, &r, &src_ct);
    src_op = r.op;
    meta_result_fini(&r.res);
    vs_wbuf_init(&snap);
    vs_wbuf_init(&table);
    meta_snapshot_encode(src, &src_ct, &snap);
    ck_assert_int_eq(meta_ct_transfer_encode(&src_ct, src, &table), 0);
    uint8_t body[24];
    tu_prepare(&prep, body, sizeof(body), src_op, (struct vs_u128){1, 2}, 1);
}

static void
teardown(void)
{
    vs_wbuf_fini(&snap);
    vs_wbuf_fini(&table);
    meta_ct_fini(&src_ct);
    free(src);
}

static struct zt_artifacts
artifacts(void)
{
    struct zt_artifacts a = {
        .snapshot = snap.data,
        .snapshot_len = snap.len,
        .snapshot_op = src_op,
        .table = table.data,
        .table_len = table.len,
        .table_frontier = src_op,
        .prepare = (const uint8_t *)&prep,
        .commit_op = src_op,
        .commit_max = src_op,
    };
    return a;
}

START_TEST(test_check_accepts_and_refuses)
{
    struct zinst_scratch sc;
    char err[256];
    struct zt_artifacts a = artifacts();
    ck_assert_int_eq(zinst_check(&caps, &a, &sc, err, sizeof(err)), 0);
    ck_assert_uint_eq(sc.table_op, src_op);
    ck_assert_uint_eq(sc.prepare.op, src_op);
    ck_assert_uint_gt(sc.img.count, 0);
    zinst_scratch_fini(&sc);

    a.prepare = NULL; /* no header: a restart could not anchor */
    ck_assert_int_eq(zinst_check(&caps, &a, &sc, err, sizeof(err)), -EPROTO);
    ck_assert_ptr_nonnull(strstr(err, "no header"));
    struct vs_hdr_prepare bad = prep;
    bad.op = src_op - 1; /* another op's header */
    a = artifacts();
    a.prepare = (const uint8_t *)&bad;
    ck_assert_int_eq(zinst_check(&caps, &a, &sc, err, sizeof(err)), -EPROTO);
    bad = prep;
    bad.timestamp ^= 1; /* its identity checksum no longer verifies */
    ck_assert_int_eq(zinst_check(&caps, &a, &sc, err, sizeof(err)), -EPROTO);

    a = artifacts();
    a.snapshot_len = snap.len - 3; /* cut short */
    ck_assert_int_eq(zinst_check(&caps, &a, &sc, err, sizeof(err)), -EPROTO);
    ck_assert_ptr_nonnull(strstr(err, "does not decode"));
    a = artifacts();
    a.snapshot_op = src_op + 1; /* the manifest names another op */
    struct vs_hdr_prepare other;
    uint8_t body[24];
    tu_prepare(&other, body, sizeof(body), src_op + 1, (struct vs_u128){1, 2},
               1);
    a.prepare = (const uint8_t *)&other;
    ck_assert_int_eq(zinst_check(&caps, &a, &sc, err, sizeof(err)), -EPROTO);
    ck_assert_ptr_nonnull(strstr(err, "holds op"));

    a = artifacts();
    uint8_t *t = malloc(table.len);
    memcpy(t, table.data, table.len);
    t[table.len / 2] ^= 0x40; /* its checksum fails */
    a.table = t;
    ck_assert_int_eq(zinst_check(&caps, &a, &sc, err, sizeof(err)), -EPROTO);
    ck_assert_ptr_nonnull(strstr(err, "client table"));
    free(t);
}
END_TEST

START_TEST(test_write_restores_both_instances)
{
    char dir[256], meta[300];
    tu_mkdtemp(dir, sizeof(dir), meta, sizeof(meta));
    struct vs_sio io;
    sio_init_real(&io);
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &io, meta, NULL, NULL), 0);
    size_t sz = meta_state_size(&caps);
    size_t rlen = lr_region_size(2, sz);
    void *region = mmap(NULL, rlen, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(region != MAP_FAILED);
    struct vs_lr lr;
    struct vs_lr_writer_opts wo = {.deadline_ns = 1000000000ull};
    ck_assert_int_eq(lr_region_init(region, rlen, 2, sz), 0);
    ck_assert_int_eq(lr_attach(&lr, region, rlen), 0);
    ck_assert_int_eq(lr_writer_start(&lr, &wo), 0);

    struct zt_artifacts a = artifacts();
    struct meta_client_table ct;
    meta_ct_init(&ct);
    struct vs_u128 sum;
    char err[256];
    struct zinst_scratch sc;
    ck_assert_int_eq(zinst_check(&caps, &a, &sc, err, sizeof(err)), 0);
    ck_assert_int_eq(zinst_write(&io, meta, &w, 0, &lr, &sc, &ct, &a, &sum, err,
                                 sizeof(err)),
                     0);
    ck_assert_uint_eq(lr_published_op(&lr), src_op);
    ck_assert(wal_empty(&w));
    /* both instances re-encode to the source's bytes */
    for (int i = 0; i < 2; i++) {
        struct vs_wbuf out;
        vs_wbuf_init(&out);
        meta_snapshot_encode(lr.inst[i], &ct, &out);
        ck_assert_uint_eq(out.len, snap.len);
        ck_assert_int_eq(memcmp(out.data, snap.data, snap.len), 0);
        vs_wbuf_fini(&out);
    }
    struct snapfile f;
    ck_assert_int_eq(snapfile_read(&io, meta, &f), 0);
    ck_assert_int_eq(f.status, SNAPFILE_OK);
    ck_assert(vs_u128_eq(f.checksum, sum));
    ck_assert_uint_eq(f.prefix.op, src_op);
    snapfile_fini(&f);

    /* the rings of the primary, once the sessions agree */
    ck_assert_int_eq(
        zinst_table(&ct, lr_writer_live(&lr), &sc.img, err, sizeof(err)), 0);
    struct vs_wbuf again;
    vs_wbuf_init(&again);
    ck_assert_int_eq(meta_ct_transfer_encode(&ct, lr_writer_live(&lr), &again),
                     0);
    ck_assert_uint_eq(again.len, table.len);
    ck_assert_int_eq(memcmp(again.data, table.data, table.len), 0);

    /* a state whose sessions differ (one more Register) refuses it */
    void *st2 = th_state(&caps);
    struct meta_client_table ct2;
    meta_ct_init(&ct2);
    struct th_run r;
    th_run_init(&r);
    fx_build(st2, &r, &ct2);
    fx_register(st2, &r, &ct2, 0xC9, 0);
    ck_assert_int_eq(zinst_table(&ct2, st2, &sc.img, err, sizeof(err)),
                     -EPROTO);
    ck_assert_ptr_nonnull(strstr(err, "sessions"));
    meta_result_fini(&r.res);
    meta_ct_fini(&ct2);
    free(st2);
    zinst_scratch_fini(&sc);
    vs_wbuf_fini(&again);
    meta_ct_fini(&ct);
    wal_close(&w);
    munmap(region, rlen);
    tu_rm_rf(dir);
}
END_TEST

static Suite *
install_suite(void)
{
    Suite *s = suite_create("zero_install");
    TCase *t = tcase_create("install");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_check_accepts_and_refuses);
    tcase_add_test(t, test_write_restores_both_instances);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(install_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
