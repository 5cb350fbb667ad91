/*
 * tests/unit/check_data_nosync.c - the group-commit side of the
 * partition engine (part_append_nosync, part_sync_target, part_sync_done,
 * part_visible_next, part_sync_due): under every-batch an appended batch
 * stays invisible to polls of every strategy until the fsync covering it
 * is reported done; a target taken before later appends makes only what
 * it covered visible; part_flush makes everything visible; the interval
 * policy never hides; a refused batch changes nothing; the handle's fd
 * is a real descriptor of the active log (fdatasync on a dup succeeds).
 * Test code only.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/storage/io.h"
#include "tests/unit/data_testutil.h"

static char g_root[256], g_parts[300];
static struct sio_fault g_f;
static const struct part_id g_id = {1, 2, 3, 77};

static void
setup(void)
{
    dt_mkdtemp(g_root, sizeof(g_root), g_parts, sizeof(g_parts));
    sio_fault_init(&g_f, 0);
}

static void
teardown(void)
{
    dt_rm_rf(g_root);
}

static struct vs_part *
open_part(enum part_durability d)
{
    struct part_opts o;
    struct vs_part *p = NULL;
    struct part_verdict v;
    part_opts_default(&o);
    o.segment_size = 64 * 1024;
    o.durability = d;
    int rc = part_open(&g_f.io, g_parts, &g_id, &o, 1, 0, &p, &v);
    ck_assert_msg(rc == 0, "open: %d %s", rc, v.msg);
    return p;
}

/* Appends a 3-message batch without fsync; returns its base offset. */
static uint64_t
append3(struct vs_part *p, uint64_t seed)
{
    uint32_t pl[3] = {40, 41, 42}, hl[3] = {0, 0, 0};
    size_t len;
    uint8_t *b = dt_batch(seed, 3, pl, hl, &len);
    struct part_append_result r;
    ck_assert_int_eq(part_append_nosync(p, b, len, seed, &r, NULL), 0);
    free(b);
    return r.base_offset;
}

/* Messages a poll of the strategy returns (count 100). */
static uint32_t
polled(struct vs_part *p, enum part_strategy s, uint64_t value)
{
    struct vs_wbuf out;
    struct part_poll_result r;
    vs_wbuf_init(&out);
    ck_assert_int_eq(part_poll(p, s, value, 100, 1 << 20, &out, &r), 0);
    vs_wbuf_fini(&out);
    return r.count;
}

static void
fsync_target(struct part_sync_target *t)
{
    int fd = fcntl(t->fd, F_DUPFD_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fdatasync(fd), 0);
    close(fd);
}

START_TEST(test_hidden_until_synced)
{
    struct vs_part *p = open_part(PART_FSYNC_EVERY_BATCH);
    struct part_sync_target t;
    ck_assert_int_eq(part_sync_due(p, 0), 0);
    ck_assert_uint_eq(append3(p, 1), 0);
    ck_assert_int_eq(part_sync_due(p, 0), 1);
    ck_assert_uint_eq(part_visible_next(p), 0);
    ck_assert_uint_eq(polled(p, PART_POLL_OFFSET, 0), 0);
    ck_assert_uint_eq(polled(p, PART_POLL_FIRST, 0), 0);
    ck_assert_uint_eq(polled(p, PART_POLL_LAST, 0), 0);
    ck_assert_uint_eq(polled(p, PART_POLL_TIMESTAMP, 0), 0);
    ck_assert_int_eq(part_sync_target(p, &t), 0);
    ck_assert_uint_eq(t.next_offset, 3);
    ck_assert_uint_gt(t.unsynced_bytes, 0);
    fsync_target(&t);
    part_sync_done(p, &t, 5);
    ck_assert_int_eq(part_sync_due(p, 0), 0);
    ck_assert_uint_eq(part_visible_next(p), 3);
    ck_assert_uint_eq(polled(p, PART_POLL_OFFSET, 0), 3);
    ck_assert_uint_eq(polled(p, PART_POLL_LAST, 0), 3);
    ck_assert_int_eq(part_close(p), 0);
}
END_TEST

START_TEST(test_target_covers_only_what_it_saw)
{
    struct vs_part *p = open_part(PART_FSYNC_EVERY_BATCH);
    struct part_sync_target t;
    append3(p, 1);
    ck_assert_int_eq(part_sync_target(p, &t), 0);
    /* appended after the target was taken: still hidden when it is done */
    ck_assert_uint_eq(append3(p, 2), 3);
    fsync_target(&t);
    part_sync_done(p, &t, 5);
    ck_assert_uint_eq(part_visible_next(p), 3);
    ck_assert_uint_eq(polled(p, PART_POLL_OFFSET, 0), 3);
    ck_assert_uint_eq(polled(p, PART_POLL_OFFSET, 3), 0);
    ck_assert_uint_eq(polled(p, PART_POLL_LAST, 0), 3);
    ck_assert_int_eq(part_sync_due(p, 0), 1);
    /* part_flush syncs inline: everything visible */
    ck_assert_int_eq(part_flush(p), 0);
    ck_assert_uint_eq(part_visible_next(p), 6);
    ck_assert_uint_eq(polled(p, PART_POLL_OFFSET, 0), 6);
    ck_assert_int_eq(part_sync_due(p, 0), 0);
    ck_assert_int_eq(part_close(p), 0);
}
END_TEST

START_TEST(test_interval_never_hides)
{
    struct vs_part *p = open_part(PART_FSYNC_INTERVAL);
    ck_assert_int_eq(part_every_batch(p), 0);
    append3(p, 1);
    ck_assert_uint_eq(part_visible_next(p), 3);
    ck_assert_uint_eq(polled(p, PART_POLL_OFFSET, 0), 3);
    /* unsynced: due only after the interval (100 ms default) */
    struct part_sync_target t;
    ck_assert_int_eq(part_sync_target(p, &t), 0);
    part_sync_done(p, &t, 1000);
    ck_assert_int_eq(part_sync_due(p, 1000), 0);
    append3(p, 2);
    ck_assert_int_eq(part_sync_due(p, 1050), 0);
    ck_assert_int_eq(part_sync_due(p, 1100), 1);
    ck_assert_int_eq(part_close(p), 0);
}
END_TEST

START_TEST(test_refused_batch_changes_nothing)
{
    struct vs_part *p = open_part(PART_FSYNC_EVERY_BATCH);
    ck_assert_int_eq(part_every_batch(p), 1);
    uint32_t pl[2] = {10, 10}, hl[2] = {0, 0};
    size_t len;
    uint8_t *b = dt_batch(1, 2, pl, hl, &len);
    b[256 + 60] ^= 1;
    enum batch_err be;
    ck_assert_int_eq(part_append_nosync(p, b, len, 1, NULL, &be), -EINVAL);
    ck_assert_int_eq(be, BATCH_E_MSG_CHECKSUM);
    ck_assert_int_eq(part_sync_due(p, 0), 0);
    ck_assert_uint_eq(part_visible_next(p), 0);
    free(b);
    ck_assert_int_eq(part_close(p), 0);
}
END_TEST

START_TEST(test_reopen_after_unsynced_close)
{
    /* a clean close syncs: the batch appended without fsync is there */
    struct vs_part *p = open_part(PART_FSYNC_EVERY_BATCH);
    append3(p, 1);
    ck_assert_int_eq(part_close(p), 0);
    p = open_part(PART_FSYNC_EVERY_BATCH);
    ck_assert_uint_eq(part_visible_next(p), 3);
    ck_assert_uint_eq(polled(p, PART_POLL_OFFSET, 0), 3);
    ck_assert_int_eq(part_close(p), 0);
}
END_TEST

static Suite *
nosync_suite(void)
{
    Suite *s = suite_create("data_nosync");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_hidden_until_synced);
    tcase_add_test(tc, test_target_covers_only_what_it_saw);
    tcase_add_test(tc, test_interval_never_hides);
    tcase_add_test(tc, test_refused_batch_changes_nothing);
    tcase_add_test(tc, test_reopen_after_unsynced_close);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(nosync_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
