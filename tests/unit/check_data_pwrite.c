/*
 * tests/unit/check_data_pwrite.c - appends whose write runs on another
 * thread (shard/data/partition.h: part_append_begin, part_write_run,
 * part_append_end): order and offsets across segment rolls with each
 * write on its own thread, nothing visible or accounted before the end,
 * one write at a time per partition (-EBUSY), ENOSPC cut back at every
 * tear, any other write error fatal, a purge between begin and end
 * cancels, a tail cut waits for the end, a handle closed with a write
 * begun.
 * Test code only. Its I/O goes through the fault injector's vs_sio table,
 * whose fsync returns without a disk flush (the tests judge order and
 * error paths, not durability).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/data/pdir.h"
#include "shard/storage/io.h"
#include "tests/unit/data_testutil.h"

static char g_root[256], g_parts[300];
static struct sio_fault g_f;
static const struct part_id g_id = {1, 2, 3, 77};

static void
setup(void)
{
    dt_mkdtemp(g_root, sizeof(g_root), g_parts, sizeof(g_parts));
    sio_fault_init(&g_f, 1);
}

static void
teardown(void)
{
    dt_rm_rf(g_root);
}

static void
small_opts(struct part_opts *o, enum part_durability d)
{
    part_opts_default(o);
    o->segment_size = 16 * 1024;
    o->index_interval = 512;
    o->durability = d;
}

static struct vs_part *
must_open(const struct part_opts *o, int create, uint64_t gen)
{
    struct vs_part *p = NULL;
    struct part_verdict v;
    int rc = part_open(&g_f.io, g_parts, &g_id, o, create, gen, &p, &v);
    ck_assert_msg(rc == 0, "open: %d %s", rc, v.msg);
    return p;
}

static void
log_path(char *out, size_t cap, uint64_t start)
{
    char name[128];
    pdir_name(name, sizeof(name), &g_id);
    snprintf(out, cap, "%s/%s/%020" PRIu64 ".log", g_parts, name, start);
}

static void *
writer(void *arg)
{
    part_write_run(arg);
    return NULL;
}

/* part_write_run on a thread of its own, joined (the loop's io calls are
 * none meanwhile, as the fault injector requires). */
static void
run_on_thread(struct part_write *w)
{
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, writer, w), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
}

/* Messages a poll from offset 0 returns, and the offset of each message
 * checked to be first + its index (no gap, strictly in order). */
static uint64_t
poll_count(struct vs_part *p, uint64_t first)
{
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    struct part_poll_result r;
    memset(&r, 0, sizeof(r));
    ck_assert_int_eq(
        part_poll(p, PART_POLL_OFFSET, 0, UINT32_MAX, SIZE_MAX, &w, &r), 0);
    uint64_t expect = first;
    for (size_t pos = 0; pos < w.len;) {
        const uint8_t *b = w.data + pos;
        ck_assert_uint_eq(batch_base_offset(b), expect);
        expect += batch_count(b);
        pos += batch_length(b);
    }
    ck_assert_uint_eq(expect - first, r.count);
    vs_wbuf_fini(&w);
    return r.count;
}

/* Begins, writes on a thread and ends one random batch; the messages. */
static uint32_t
append_threaded(struct vs_part *p, uint64_t *rng, uint64_t wall)
{
    size_t len;
    uint32_t n;
    uint8_t *b = dt_rand_batch(rng, 4, 900, &len, &n);
    struct part_append_result res;
    struct part_write w;
    struct part_stats before, mid;
    part_stats(p, &before);
    ck_assert_int_eq(part_append_begin(p, b, len, wall, &res, NULL, &w), 0);
    ck_assert_uint_eq(res.base_offset, before.next_offset);
    ck_assert_uint_eq(res.message_count, n);
    ck_assert(part_write_pending(p));
    /* nothing accounted yet; no second append of any kind may begin */
    part_stats(p, &mid);
    ck_assert_uint_eq(mid.next_offset, before.next_offset);
    ck_assert_uint_eq(mid.size_bytes, before.size_bytes);
    size_t len2;
    uint32_t n2;
    uint8_t *b2 = dt_rand_batch(rng, 2, 100, &len2, &n2);
    struct part_write w2;
    ck_assert_int_eq(part_append_begin(p, b2, len2, wall, NULL, NULL, &w2),
                     -EBUSY);
    ck_assert_int_eq(w2.fd, -1);
    ck_assert_int_eq(part_append(p, b2, len2, wall, NULL, NULL), -EBUSY);
    ck_assert_int_eq(part_append_nosync(p, b2, len2, wall, NULL, NULL), -EBUSY);
    free(b2);
    run_on_thread(&w);
    ck_assert_int_eq(w.err, 0);
    ck_assert_uint_eq(w.written, len);
    /* written but not ended: still invisible */
    ck_assert_uint_eq(part_visible_next(p), before.next_offset);
    ck_assert_int_eq(part_append_end(p, &w), 0);
    ck_assert_int_eq(w.fd, -1);
    ck_assert(!part_write_pending(p));
    struct part_stats after;
    part_stats(p, &after);
    ck_assert_uint_eq(after.next_offset, before.next_offset + n);
    ck_assert_uint_eq(after.size_bytes, before.size_bytes + len);
    free(b);
    return n;
}

/* Every-batch: a batch ended is hidden until an fsync covers it. */
static void
sync_now(struct vs_part *p)
{
    struct part_sync_target t;
    ck_assert_int_eq(part_sync_target(p, &t), 0);
    ck_assert_int_eq(fdatasync(t.fd), 0);
    part_sync_done(p, &t, 1);
}

START_TEST(test_threaded_order_across_rolls)
{
    struct part_opts o;
    small_opts(&o, PART_FSYNC_EVERY_BATCH);
    struct vs_part *p = must_open(&o, 1, 0);
    uint64_t rng = 11, total = 0;
    for (int i = 0; i < 60; i++) {
        uint64_t vis = part_visible_next(p);
        total += append_threaded(p, &rng, 1000 + (uint64_t)i);
        ck_assert_uint_eq(part_visible_next(p), vis); /* not durable yet */
        sync_now(p);
        ck_assert_uint_eq(part_visible_next(p), total);
    }
    struct part_stats st;
    part_stats(p, &st);
    ck_assert_uint_gt(st.segments, 3); /* the writes crossed rolls */
    ck_assert_uint_eq(poll_count(p, 0), total);
    ck_assert_int_eq(part_close(p), 0);
    /* a restart finds every batch, in order, index and all */
    p = must_open(&o, 0, 0);
    ck_assert_uint_eq(poll_count(p, 0), total);
    total += append_threaded(p, &rng, 5000);
    sync_now(p);
    ck_assert_uint_eq(poll_count(p, 0), total);
    ck_assert_int_eq(part_close(p), 0);
}
END_TEST

START_TEST(test_threaded_interval_visible_at_end)
{
    struct part_opts o;
    small_opts(&o, PART_FSYNC_INTERVAL);
    o.frontier_step = 4;
    struct vs_part *p = must_open(&o, 1, 0);
    uint64_t rng = 12, total = 0;
    for (int i = 0; i < 20; i++) {
        total += append_threaded(p, &rng, 10 + (uint64_t)i);
        ck_assert_uint_eq(part_visible_next(p), total);
    }
    struct part_stats st;
    part_stats(p, &st);
    ck_assert_uint_gt(st.unsynced_bytes, 0);
    ck_assert_uint_eq(poll_count(p, 0), total);
    ck_assert_int_eq(part_close(p), 0);
    p = must_open(&o, 0, 0);
    ck_assert_uint_eq(poll_count(p, 0), total);
    ck_assert_int_eq(part_close(p), 0);
}
END_TEST

START_TEST(test_threaded_enospc_cut_back)
{
    struct part_opts o;
    small_opts(&o, PART_FSYNC_EVERY_BATCH);
    o.segment_size = 1 << 20;
    struct vs_part *p = must_open(&o, 1, 0);
    uint64_t rng = 13, total = 0;
    for (int i = 0; i < 3; i++) {
        total += append_threaded(p, &rng, 1);
        sync_now(p);
    }
    struct part_stats before;
    part_stats(p, &before);
    char log[1024];
    log_path(log, sizeof(log), 0);
    for (int k = 0; k < 8; k++) {
        size_t len;
        uint32_t n;
        uint8_t *b = dt_rand_batch(&rng, 3, 400, &len, &n);
        /* torn anywhere in the batch (a short write first, then ENOSPC
         * on the writer's next call), or nothing written */
        long tear = (long)(len * (size_t)k / 8);
        struct part_write w;
        ck_assert_int_eq(part_append_begin(p, b, len, 2, NULL, NULL, &w), 0);
        sio_fault_arm(&g_f, SIO_WRITE, 1, ENOSPC, tear);
        run_on_thread(&w);
        ck_assert_int_eq(w.err, -ENOSPC);
        ck_assert_uint_eq(w.written, (size_t)tear);
        ck_assert_int_eq(part_append_end(p, &w), -ENOSPC);
        ck_assert(!sio_is_fatal(&g_f.io));
        ck_assert(!part_write_pending(p));
        struct part_stats st;
        part_stats(p, &st);
        ck_assert_uint_eq(st.next_offset, before.next_offset);
        ck_assert_uint_eq(st.size_bytes, before.size_bytes);
        ck_assert_int_eq(dt_file_size(log), (off_t)before.size_bytes);
        ck_assert_uint_eq(poll_count(p, 0), total); /* reads still work */
        free(b);
    }
    sio_fault_reset(&g_f);
    /* the next append takes the offset the refused one had */
    total += append_threaded(p, &rng, 3);
    sync_now(p);
    ck_assert_uint_eq(poll_count(p, 0), total);
    ck_assert_int_eq(part_close(p), 0);
    p = must_open(&o, 0, 0);
    ck_assert_uint_eq(poll_count(p, 0), total);
    ck_assert_int_eq(part_close(p), 0);
}
END_TEST

START_TEST(test_threaded_eio_fatal)
{
    struct part_opts o;
    small_opts(&o, PART_FSYNC_EVERY_BATCH);
    struct vs_part *p = must_open(&o, 1, 0);
    uint64_t rng = 14, total = 0;
    for (int i = 0; i < 4; i++) {
        total += append_threaded(p, &rng, 1);
        sync_now(p);
    }
    size_t len;
    uint32_t n;
    uint8_t *b = dt_rand_batch(&rng, 3, 400, &len, &n);
    struct part_write w;
    ck_assert_int_eq(part_append_begin(p, b, len, 2, NULL, NULL, &w), 0);
    sio_fault_arm(&g_f, SIO_WRITE, 1, EIO, 7); /* torn, then EIO */
    run_on_thread(&w);
    ck_assert_int_eq(w.err, -EIO);
    /* classified on the loop, as sio_pwrite_all would: fatal, poisoned */
    ck_assert(!sio_is_fatal(&g_f.io));
    ck_assert_int_eq(part_append_end(p, &w), -VS_EFATAL);
    ck_assert(sio_is_fatal(&g_f.io));
    char msg[700];
    sio_fatal_msg(&g_f.io, msg, sizeof(msg));
    ck_assert_msg(strstr(msg, ".log") != NULL, "%s", msg);
    /* nothing more is accepted */
    free(b);
    b = dt_rand_batch(&rng, 3, 400, &len, &n);
    struct part_write w2;
    ck_assert_int_eq(part_append_begin(p, b, len, 3, NULL, NULL, &w2),
                     -VS_EFATAL);
    ck_assert_int_eq(w2.fd, -1);
    part_abandon(p);
    free(b);
    /* the restart cuts the torn bytes and keeps every acknowledged batch */
    sio_fault_reset(&g_f);
    p = must_open(&o, 0, 0);
    ck_assert_uint_eq(poll_count(p, 0), total);
    ck_assert_int_eq(part_close(p), 0);
}
END_TEST

START_TEST(test_threaded_cancelled_by_purge_and_cut)
{
    struct part_opts o;
    small_opts(&o, PART_FSYNC_EVERY_BATCH);
    struct vs_part *p = must_open(&o, 1, 0);
    uint64_t rng = 15;
    uint64_t first = append_threaded(p, &rng, 1);
    sync_now(p);
    /* a purge between begin and end: the end accounts nothing */
    size_t len;
    uint32_t n;
    uint8_t *b = dt_rand_batch(&rng, 3, 400, &len, &n);
    struct part_write w;
    ck_assert_int_eq(part_append_begin(p, b, len, 2, NULL, NULL, &w), 0);
    ck_assert_int_eq(part_purge(p, 1), 0);
    ck_assert(!part_write_pending(p));
    run_on_thread(&w); /* into its own fd of the removed file */
    ck_assert_int_eq(w.err, 0);
    ck_assert_int_eq(part_append_end(p, &w), -ECANCELED);
    struct part_stats st;
    part_stats(p, &st);
    ck_assert(st.empty);
    ck_assert_uint_eq(st.next_offset, 0);
    ck_assert_uint_eq(st.size_bytes, 0);
    free(b);
    uint64_t after = append_threaded(p, &rng, 3);
    sync_now(p);
    ck_assert_uint_eq(poll_count(p, 0), after);
    /* a tail cut is refused while a write is begun (it would land past
     * the cut), and works once it ended */
    uint64_t more = append_threaded(p, &rng, 4);
    sync_now(p);
    b = dt_rand_batch(&rng, 3, 400, &len, &n);
    ck_assert_int_eq(part_append_begin(p, b, len, 5, NULL, NULL, &w), 0);
    ck_assert_int_eq(part_truncate_tail(p, after), -EBUSY);
    run_on_thread(&w);
    ck_assert_int_eq(part_append_end(p, &w), 0);
    sync_now(p);
    ck_assert_uint_eq(poll_count(p, 0), after + more + n);
    ck_assert_int_eq(part_truncate_tail(p, after), 0);
    part_stats(p, &st);
    ck_assert_uint_eq(st.next_offset, after);
    ck_assert_uint_eq(poll_count(p, 0), after);
    free(b);
    (void)first;
    ck_assert_int_eq(part_close(p), 0);
    p = must_open(&o, 0, 1);
    ck_assert_uint_eq(poll_count(p, 0), after);
    ck_assert_int_eq(part_close(p), 0);
}
END_TEST

START_TEST(test_threaded_handle_gone)
{
    struct part_opts o;
    small_opts(&o, PART_FSYNC_EVERY_BATCH);
    struct vs_part *p = must_open(&o, 1, 0);
    uint64_t rng = 16;
    uint64_t total = append_threaded(p, &rng, 1);
    sync_now(p);
    size_t len;
    uint32_t n;
    uint8_t *b = dt_rand_batch(&rng, 3, 400, &len, &n);
    struct part_write w;
    ck_assert_int_eq(part_append_begin(p, b, len, 2, NULL, NULL, &w), 0);
    /* the shard stops with the write begun: the handle closes (the
     * floor it records excludes the batch), the write lets go */
    ck_assert_int_eq(part_close(p), 0);
    run_on_thread(&w);
    ck_assert_int_eq(w.err, 0);
    part_write_release(&w);
    ck_assert_int_eq(w.fd, -1);
    part_write_release(&w); /* idempotent */
    /* the unacknowledged batch landed after the close: a restart keeps
     * a complete valid batch, or nothing of it; never damage */
    p = must_open(&o, 0, 0);
    uint64_t got = poll_count(p, 0);
    ck_assert(got == total || got == total + n);
    ck_assert_int_eq(part_close(p), 0);
    free(b);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("data_pwrite");
    TCase *tc = tcase_create("threaded");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_threaded_order_across_rolls);
    tcase_add_test(tc, test_threaded_interval_visible_at_end);
    tcase_add_test(tc, test_threaded_enospc_cut_back);
    tcase_add_test(tc, test_threaded_eio_fatal);
    tcase_add_test(tc, test_threaded_cancelled_by_purge_and_cut);
    tcase_add_test(tc, test_threaded_handle_gone);
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
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
