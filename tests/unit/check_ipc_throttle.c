/*
 * tests/unit/check_ipc_throttle.c - the shared failed-login throttle
 * table (ipc/throttle.h): the back-off policy (exponential, capped,
 * forgotten after a pause, reset by a success), reports once per
 * interval, probing and eviction in a full window, the attach checks,
 * the region inside a real segment, and several processes updating one
 * key (none lost) with one of them SIGKILLed while holding the lock.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipc/segment.h"
#include "ipc/throttle.h"

static void *
shared_region(uint32_t slots, size_t *len)
{
    *len = throttle_region_size(slots);
    ck_assert_uint_gt(*len, 0);
    void *r = mmap(NULL, *len, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(r, MAP_FAILED);
    ck_assert_int_eq(throttle_region_init(r, *len, slots), 0);
    return r;
}

static const struct throttle_policy pol = {
    .base_ms = 100, .max_ms = 1000, .log_interval_ms = 5000};

START_TEST(test_policy)
{
    size_t len;
    void *r = shared_region(64, &len);
    struct vs_throttle t;
    ck_assert_int_eq(throttle_attach(&t, r, len), 0);
    uint64_t k = throttle_key('u', "alice", 5);
    ck_assert_uint_ne(k, throttle_key('a', "alice", 5));
    ck_assert_uint_eq(throttle_wait_ms(&t, k, 10000, 1000), 0);
    struct throttle_fail f;
    /* 100, 200, 400, 800, then capped at 1000 */
    uint64_t want[] = {100, 200, 400, 800, 1000, 1000};
    uint64_t now = 10000;
    for (int i = 0; i < 6; i++) {
        throttle_failed(&t, k, now, &pol, &f);
        ck_assert_uint_eq(f.failures, (uint32_t)i + 1);
        ck_assert_uint_eq(f.delay_ms, want[i]);
        /* reported at the first failure only (interval 5 s) */
        ck_assert_int_eq(f.report, i == 0);
        ck_assert_uint_eq(throttle_wait_ms(&t, k, now, 1000), want[i]);
        ck_assert_uint_eq(throttle_wait_ms(&t, k, now + want[i] - 1, 1000), 1);
        ck_assert_uint_eq(throttle_wait_ms(&t, k, now + want[i], 1000), 0);
        now += 10;
    }
    /* the interval passed: one report covering the failures since */
    throttle_failed(&t, k, 10000 + 5000, &pol, &f);
    ck_assert_int_eq(f.report, 1);
    ck_assert_uint_eq(f.unlogged, 6);
    /* a pause longer than max_ms: counting starts over */
    throttle_failed(&t, k, 10000 + 5000 + 1001, &pol, &f);
    ck_assert_uint_eq(f.failures, 1);
    ck_assert_uint_eq(f.delay_ms, 100);
    /* a success forgets */
    throttle_succeeded(&t, k);
    ck_assert_uint_eq(throttle_wait_ms(&t, k, 16002, 1000), 0);
    throttle_failed(&t, k, 16003, &pol, &f);
    ck_assert_uint_eq(f.failures, 1);
    ck_assert_int_eq(f.report, 1);
    /* other keys are unaffected */
    ck_assert_uint_eq(
        throttle_wait_ms(&t, throttle_key('u', "bob", 3), 16003, 1000), 0);
    munmap(r, len);
}
END_TEST

START_TEST(test_full_window_and_attach)
{
    size_t len;
    void *r = shared_region(4, &len);
    struct vs_throttle t;
    ck_assert_int_eq(throttle_attach(&t, r, len), 0);
    struct throttle_fail f;
    /* 4 slots, 6 keys: the oldest failures give way */
    for (uint64_t i = 1; i <= 6; i++)
        throttle_failed(&t, throttle_key('a', &i, sizeof(i)), 1000 + i, &pol,
                        &f);
    int present = 0;
    for (uint64_t i = 1; i <= 6; i++)
        present += throttle_wait_ms(&t, throttle_key('a', &i, sizeof(i)), 1007,
                                    1000) > 0;
    ck_assert_int_eq(present, 4);
    uint64_t k6 = 6;
    ck_assert_uint_gt(
        throttle_wait_ms(&t, throttle_key('a', &k6, sizeof(k6)), 1007, 1000),
        0);
    /* attach refuses what is not a table of this build */
    ck_assert_int_eq(throttle_attach(&t, r, 64), -EPROTO);
    uint64_t magic = *(uint64_t *)r;
    *(uint64_t *)r = 0;
    ck_assert_int_eq(throttle_attach(&t, r, len), -EPROTO);
    *(uint64_t *)r = magic;
    ck_assert_int_eq(throttle_attach(&t, r, len), 0);
    ck_assert_uint_eq(throttle_region_size(0), 0);
    ck_assert_int_eq(throttle_region_init(r, 16, 4), -EINVAL);
    munmap(r, len);
}
END_TEST

START_TEST(test_in_segment)
{
    struct vs_seg s;
    struct vs_seg_params p = {.n_procs = 3,
                              .lr_instance_size = 4096,
                              .ring_bytes = 4096,
                              .stats_capacity = 8,
                              .throttle_slots = 128};
    ck_assert_int_eq(seg_create(&s, &p), 0);
    size_t len = 0;
    void *r = seg_throttle_region(&s, &len);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(len, throttle_region_size(128));
    ck_assert((uint8_t *)r + len <= s.base + s.size);
    struct vs_throttle t;
    ck_assert_int_eq(throttle_attach(&t, r, len), 0);
    /* another mapping of the same memfd validates and sees the table */
    struct vs_seg s2;
    ck_assert_int_eq(seg_attach_fd(&s2, s.memfd), 0);
    void *r2 = seg_throttle_region(&s2, &len);
    struct vs_throttle t2;
    ck_assert_int_eq(throttle_attach(&t2, r2, len), 0);
    struct throttle_fail f;
    throttle_failed(&t, 42, 5000, &pol, &f);
    ck_assert_uint_eq(throttle_wait_ms(&t2, 42, 5000, 1000), 100);
    seg_destroy(&s2);
    seg_destroy(&s);
    /* none requested: none there */
    p.throttle_slots = 0;
    ck_assert_int_eq(seg_create(&s, &p), 0);
    ck_assert_ptr_null(seg_throttle_region(&s, &len));
    ck_assert_uint_eq(len, 0);
    seg_destroy(&s);
}
END_TEST

START_TEST(test_processes_and_dead_holder)
{
    size_t len;
    void *r = shared_region(64, &len);
    struct vs_throttle t;
    ck_assert_int_eq(throttle_attach(&t, r, len), 0);
    struct throttle_policy big = {
        .base_ms = 1, .max_ms = 1000000, .log_interval_ms = 1};
    enum { PROCS = 4, EACH = 500 };
    pid_t kids[PROCS];
    for (int i = 0; i < PROCS; i++) {
        kids[i] = fork();
        ck_assert_int_ge(kids[i], 0);
        if (kids[i] == 0) {
            struct throttle_fail f;
            for (int j = 0; j < EACH; j++)
                throttle_failed(&t, 7, 100, &big, &f);
            _exit(0);
        }
    }
    for (int i = 0; i < PROCS; i++) {
        int st;
        ck_assert_int_eq(waitpid(kids[i], &st, 0), kids[i]);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    struct throttle_fail f;
    throttle_failed(&t, 7, 100, &big, &f);
    ck_assert_uint_eq(f.failures, PROCS * EACH + 1);
    /* a process dies holding the lock: the next user recovers it */
    pid_t d = fork();
    ck_assert_int_ge(d, 0);
    if (d == 0) {
        pthread_mutex_lock(&t.hdr->lock.m);
        raise(SIGKILL);
        _exit(1);
    }
    int st;
    ck_assert_int_eq(waitpid(d, &st, 0), d);
    ck_assert(WIFSIGNALED(st));
    throttle_failed(&t, 7, 100, &big, &f);
    ck_assert_uint_eq(f.failures, PROCS * EACH + 2);
    ck_assert_uint_gt(throttle_wait_ms(&t, 7, 100, 1000000), 0);
    munmap(r, len);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("ipc_throttle");
    TCase *tc = tcase_create("ipc_throttle");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_policy);
    tcase_add_test(tc, test_full_window_and_attach);
    tcase_add_test(tc, test_in_segment);
    tcase_add_test(tc, test_processes_and_dead_holder);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
