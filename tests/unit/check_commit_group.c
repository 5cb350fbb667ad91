/*
 * tests/unit/check_commit_group.c - group commit on shard 0
 * (commit_options.group_commit, commit_flush): proposals handled in one
 * pass are journaled without an fsync and not answered; one flush makes
 * them durable with ONE fsync and answers each (in op order, status 0);
 * more proposals than the pipeline holds are queued, not answered 57,
 * and complete after the following flush; a restart finds every flushed
 * op; an fsync failure at the flush is fatal with nothing answered.
 * Driven in-process through tests/unit/commit_fixture.h.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "shard/storage/io.h"
#include "tests/unit/commit_fixture.h"

static void
boot(struct fx *f, struct vs_sio *io)
{
    char err[512];
    fx_init(f);
    f->io = io;
    f->group_commit = 1;
    ck_assert_msg(fx_boot(f, err, sizeof(err)) == 0, "boot: %s", err);
    ck_assert_int_eq(commit_genesis_needed(f->c), 1);
    ck_assert_msg(commit_genesis(f->c, err, sizeof(err)) == 0, "genesis: %s",
                  err);
    /* genesis is internal: durable at once, nothing held */
    ck_assert_int_eq(commit_flush_needed(f->c), 0);
    fx_clear_sent(f);
}

static struct vs_u128
client_n(uint64_t i)
{
    struct vs_u128 c = {0x5000 + i, 0xc0ffee};
    return c;
}

static void
check_replies_ok(const struct fx *f, unsigned n)
{
    ck_assert_uint_eq(f->nsent, n);
    for (unsigned i = 0; i < n; i++) {
        const struct fx_sent *s = &f->sent[i];
        ck_assert_uint_eq(s->h.kind, FWD_REPLY);
        ck_assert_uint_ge(s->len, VS_HEADER_SIZE);
        const struct vs_hdr_reply *r = (const struct vs_hdr_reply *)s->frame;
        ck_assert_uint_eq(r->status, 0);
        if (i > 0) /* answered in op order */
            ck_assert_uint_gt(s->h.session, f->sent[i - 1].h.session);
    }
}

START_TEST(test_one_fsync_for_a_pass)
{
    struct fx f;
    boot(&f, NULL);
    uint64_t op0 = vsr_op(commit_engine(f.c));
    for (uint64_t i = 0; i < 5; i++)
        ck_assert_int_eq(fx_register(&f, client_n(i), 0), 0);
    ck_assert_uint_eq(f.nsent, 0); /* nothing answered before durable */
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), op0 + 5);
    ck_assert_int_eq(commit_flush_needed(f.c), 1);
    ck_assert_uint_eq(commit_stats(f.c)->commits, 1); /* genesis only */
    ck_assert_int_eq(commit_flush(f.c), 0);
    check_replies_ok(&f, 5);
    ck_assert_uint_eq(commit_stats(f.c)->journal_syncs, 1);
    ck_assert_uint_eq(commit_stats(f.c)->grouped_ops, 5);
    ck_assert_uint_eq(commit_stats(f.c)->commits, 6);
    ck_assert_int_eq(commit_flush_needed(f.c), 0);
    /* a flush with nothing held does nothing */
    ck_assert_int_eq(commit_flush(f.c), 0);
    ck_assert_uint_eq(commit_stats(f.c)->journal_syncs, 1);
    /* restart: the flushed ops are all there */
    char err[512];
    fx_stop(&f);
    ck_assert_msg(fx_boot(&f, err, sizeof(err)) == 0, "reboot: %s", err);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), op0 + 5);
    fx_fini(&f);
}
END_TEST

START_TEST(test_queue_beyond_pipeline)
{
    struct fx f;
    boot(&f, NULL);
    const unsigned n = VSR_PIPELINE_MAX + 8;
    for (unsigned i = 0; i < n; i++)
        ck_assert_int_eq(fx_register(&f, client_n(i), 0), 0);
    ck_assert_uint_eq(f.nsent, 0); /* no 57: the extra ones wait */
    ck_assert_uint_eq(commit_stats(f.c)->queued, 8);
    ck_assert_uint_eq(commit_stats(f.c)->transient, 0);
    ck_assert_int_eq(commit_flush(f.c), 0);
    check_replies_ok(&f, VSR_PIPELINE_MAX);
    /* the queued ones were proposed again and are held now */
    ck_assert_int_eq(commit_flush_needed(f.c), 1);
    ck_assert_int_eq(commit_flush(f.c), 0);
    check_replies_ok(&f, n);
    ck_assert_uint_eq(commit_stats(f.c)->journal_syncs, 2);
    ck_assert_uint_eq(commit_stats(f.c)->transient, 0);
    ck_assert_int_eq(commit_flush_needed(f.c), 0);
    fx_fini(&f);
}
END_TEST

START_TEST(test_flush_fsync_failure_is_fatal)
{
    struct sio_fault flt;
    sio_fault_init(&flt, 0);
    struct fx f;
    boot(&f, &flt.io);
    ck_assert_int_eq(fx_register(&f, client_n(1), 0), 0);
    ck_assert_int_eq(fx_register(&f, client_n(2), 0), 0);
    ck_assert_uint_eq(f.nsent, 0);
    sio_fault_arm(&flt, SIO_FSYNC, 1, EIO, -1);
    ck_assert_int_eq(commit_flush(f.c), -VS_EFATAL);
    ck_assert_uint_eq(f.nsent, 0); /* never answered */
    char msg[512];
    commit_fatal_msg(f.c, msg, sizeof(msg));
    ck_assert_ptr_nonnull(strstr(msg, "journal.wal"));
    fx_fini(&f);
}
END_TEST

static Suite *
group_suite(void)
{
    Suite *s = suite_create("commit_group");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_one_fsync_for_a_pass);
    tcase_add_test(tc, test_queue_beyond_pipeline);
    tcase_add_test(tc, test_flush_fsync_failure_is_fatal);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(group_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
