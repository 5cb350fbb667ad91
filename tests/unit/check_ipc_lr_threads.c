/*
 * tests/unit/check_ipc_lr_threads.c - the left-right protocol with
 * threads standing in for processes, so ThreadSanitizer can check its
 * memory ordering (./configure --enable-tsan; make check
 * TESTS=tests/unit/check_ipc_lr_threads). One writer thread publishes
 * into a region in ordinary memory; reader threads, one reader slot
 * each (one struct vs_lr handle per thread, as one per process), verify
 * a checksum over the instance inside every read section. Also runs in
 * the normal and ASan legs.
 */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/checksum.h"
#include "common/log.h"
#include "ipc/lr.h"

#define N_READERS 3u
#define N_VALS    64u
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define N_OPS 2000u
#else
#define N_OPS 10000u
#endif

struct ts_state {
    uint64_t op;
    uint64_t vals[N_VALS];
    uint64_t check;
};

static void *region;
static size_t region_len;
static _Atomic int stop;
static _Atomic uint64_t violations;
static _Atomic uint64_t reads;

static uint64_t
ts_check(const struct ts_state *s)
{
    return vs_xxh3_64(s, offsetof(struct ts_state, check));
}

static void
ts_apply(void *inst, size_t size, void *ctx)
{
    (void)size;
    struct ts_state *s = inst;
    uint64_t op = *(const uint64_t *)ctx;
    s->op = op;
    s->vals[op % N_VALS] += op;
    s->vals[(op * 5u + 3u) % N_VALS] ^= op << 7;
    s->check = ts_check(s);
}

static void
ts_init(void *inst, size_t size, void *ctx)
{
    (void)ctx;
    memset(inst, 0, size);
    struct ts_state *s = inst;
    s->check = ts_check(s);
}

static void *
reader_thread(void *arg)
{
    uint32_t slot = (uint32_t)(uintptr_t)arg;
    struct vs_lr lr;
    if (lr_attach(&lr, region, region_len) != 0 ||
        lr_reader_start(&lr, slot) != 0) {
        atomic_fetch_add(&violations, 1000000);
        return NULL;
    }
    uint64_t last = 0;
    while (!atomic_load(&stop)) {
        uint64_t op;
        const struct ts_state *s = lr_read_begin(&lr, &op);
        if (ts_check(s) != s->check || s->op != op || op < last)
            atomic_fetch_add(&violations, 1);
        lr_read_end(&lr);
        last = op;
        atomic_fetch_add_explicit(&reads, 1, memory_order_relaxed);
        usleep(1);
    }
    return NULL;
}

START_TEST(test_threads)
{
    vs_log_set_level(VS_LOG_ERROR);
    region_len = lr_region_size(N_READERS + 1, sizeof(struct ts_state));
    ck_assert_int_eq(
        posix_memalign(&region, (size_t)sysconf(_SC_PAGESIZE), region_len), 0);
    ck_assert_int_eq(lr_region_init(region, region_len, N_READERS + 1,
                                    sizeof(struct ts_state)),
                     0);
    struct vs_lr w;
    ck_assert_int_eq(lr_attach(&w, region, region_len), 0);
    struct vs_lr_writer_opts o = {.deadline_ns = 1000000000u};
    ck_assert_int_eq(lr_writer_start(&w, &o), 0);
    ck_assert_int_eq(lr_restore(&w, 0, ts_init, NULL), 0);
    pthread_t th[N_READERS];
    for (uint32_t i = 0; i < N_READERS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, reader_thread,
                                        (void *)(uintptr_t)(i + 1)),
                         0);
    for (uint64_t op = 1; op <= N_OPS; op++)
        ck_assert_int_eq(lr_publish(&w, op, ts_apply, &op), 0);
    atomic_store(&stop, 1);
    for (uint32_t i = 0; i < N_READERS; i++)
        pthread_join(th[i], NULL);
    ck_assert_uint_eq(atomic_load(&violations), 0);
    ck_assert_uint_gt(atomic_load(&reads), 0);
    const struct ts_state *live = lr_writer_live(&w);
    ck_assert_uint_eq(live->op, N_OPS);
    ck_assert_int_eq(memcmp(w.inst[0], w.inst[1], sizeof(struct ts_state)), 0);
    free(region);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("ipc_lr_threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
