/*
 * tests/unit/check_ipc_metrics.c - the per-process metrics blocks
 * (common/metrics.h, ipc/metrics.h): slot map and label tables, the
 * histogram bucket rule, binding a process's block inside a segment,
 * gauges cleared and counters kept across a reaped process, and writer
 * PROCESSES updating their blocks while a reader sums them: values never
 * go backwards and the final sums are exact (bounded loops).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/metrics.h"
#include "common/wire.h"
#include "ipc/metrics.h"
#include "ipc/segment.h"

static struct vs_seg_params
params(uint32_t n)
{
    struct vs_seg_params p = {
        .n_procs = n, .lr_instance_size = 5000, .ring_bytes = 4096};
    return p;
}

START_TEST(test_tables)
{
    uint32_t n;
    const struct vs_metric_desc *d = vs_metrics_scalars(&n);
    ck_assert_uint_eq(n, VS_M_SCALARS_END);
    for (uint32_t i = 0; i < n; i++) {
        ck_assert(strncmp(d[i].name, "vstream_", 8) == 0);
        /* a family's first entry carries its help */
        if (i == 0 || strcmp(d[i].name, d[i - 1].name) != 0)
            ck_assert(d[i].help[0] != '\0');
        /* counters end in _total; no family is both kinds */
        size_t l = strlen(d[i].name);
        int total = l > 6 && strcmp(d[i].name + l - 6, "_total") == 0;
        ck_assert_int_eq(total, d[i].kind == VS_MK_COUNTER);
    }
    ck_assert_uint_le(VS_M_END, VS_METRICS_SLOTS);
    /* operation map */
    ck_assert_uint_eq(vs_metrics_op_index(VS_OP_REGISTER, 0), VS_MO_REGISTER);
    ck_assert_uint_eq(vs_metrics_op_index(VS_OP_SEND_MESSAGES, 0), VS_MO_SEND);
    ck_assert_uint_eq(vs_metrics_op_index(VS_OP_NON_REPLICATED, 100),
                      VS_MO_POLL);
    ck_assert_uint_eq(vs_metrics_op_index(VS_OP_NON_REPLICATED, 1), VS_MO_PING);
    ck_assert_uint_eq(vs_metrics_op_index(VS_OP_NON_REPLICATED, 201),
                      VS_MO_READ);
    ck_assert_uint_eq(vs_metrics_op_index(VS_OP_CREATE_STREAM, 0),
                      VS_MO_META_FIRST);
    ck_assert_uint_eq(vs_metrics_op_index(VS_OP_LEAVE_CONSUMER_GROUP, 0),
                      VS_MO_SEND - 1);
    ck_assert_uint_eq(vs_metrics_op_index(250, 0), VS_MO_OTHER);
    ck_assert_str_eq(vs_metrics_op_name(VS_MO_META_FIRST), "CreateStream");
    ck_assert_str_eq(vs_metrics_op_name(VS_MO_SEND - 1), "LeaveConsumerGroup");
    for (uint32_t i = 0; i < VS_MO_COUNT; i++) {
        ck_assert_str_ne(vs_metrics_op_name(i), "unknown");
        ck_assert_uint_lt(vs_metrics_op_class(i), VS_MC_COUNT);
    }
    ck_assert_int_eq(vs_metrics_op_class(VS_MO_SEND), VS_MC_SEND);
    ck_assert_int_eq(vs_metrics_op_class(VS_MO_POLL), VS_MC_POLL);
    ck_assert_int_eq(vs_metrics_op_class(VS_MO_META_FIRST), VS_MC_METADATA);
    ck_assert_str_eq(vs_metrics_code_name(VS_MR_COUNT - 1), "other");
    for (uint32_t i = 1; i < VS_MH_BOUNDS; i++)
        ck_assert_uint_gt(vs_metrics_bound_us(i), vs_metrics_bound_us(i - 1));
}
END_TEST

START_TEST(test_histogram_and_requests)
{
    static struct vs_metrics_block_shm b;
    struct vs_metrics_block_shm *keep = vs_metrics_me;
    vs_metrics_me = &b;
    uint32_t base = VS_M_HIST_FSYNC;
    vs_metrics_observe_us(base, 0);        /* first bucket */
    vs_metrics_observe_us(base, 50);       /* le 50us: still first */
    vs_metrics_observe_us(base, 51);       /* second */
    vs_metrics_observe_us(base, 99999999); /* +Inf */
    ck_assert_uint_eq(b.v[base + 0], 2);
    ck_assert_uint_eq(b.v[base + 1], 1);
    ck_assert_uint_eq(b.v[base + VS_MH_BOUNDS], 1);
    ck_assert_uint_eq(b.v[base + VS_MH_BOUNDS + 1], 0 + 50 + 51 + 99999999);
    ck_assert_uint_eq(b.v[base + VS_MH_BOUNDS + 2], 4);

    vs_metrics_request(VS_MO_REGISTER, VS_E_INVALID_CREDENTIALS, 10);
    vs_metrics_request(VS_MO_REGISTER, 0, 10);
    vs_metrics_request(VS_MO_REGISTER, 99999, 10); /* "other" */
    uint32_t row = VS_M_REQ + VS_MO_REGISTER * VS_MR_COUNT;
    uint64_t sum = 0;
    for (uint32_t c = 0; c < VS_MR_COUNT; c++)
        sum += b.v[row + c];
    ck_assert_uint_eq(sum, 3);
    ck_assert_uint_eq(b.v[row + VS_MR_COUNT - 1], 1);
    ck_assert_uint_eq(b.v[row], 1); /* code 0 is index 0 */
    uint32_t h = VS_M_HIST_REQ + VS_MC_LOGIN * VS_MH_SLOTS;
    ck_assert_uint_eq(b.v[h + VS_MH_BOUNDS + 2], 3);
    /* every named code lands in the slot of its own name */
    for (uint32_t i = 0; i + 1 < VS_MR_COUNT; i++) {
        uint32_t code = (uint32_t)atoi(vs_metrics_code_name(i));
        uint32_t slot = VS_M_REQ + VS_MO_READ * VS_MR_COUNT + i;
        uint64_t before = b.v[slot];
        vs_metrics_request(VS_MO_READ, code, 1);
        ck_assert_uint_eq(b.v[slot], before + 1);
    }
    vs_metrics_me = keep;
}
END_TEST

START_TEST(test_segment_bind_and_clear)
{
    struct vs_seg s;
    struct vs_seg_params p = params(3);
    ck_assert_int_eq(seg_create(&s, &p), 0);
    ck_assert_uint_eq(s.hdr->metrics_block_size,
                      sizeof(struct vs_metrics_block_shm));
    ck_assert_uint_eq(s.hdr->metrics_off % (uint64_t)sysconf(_SC_PAGESIZE), 0);
    ck_assert_uint_le(
        s.hdr->metrics_off + 3 * sizeof(struct vs_metrics_block_shm), s.size);
    struct vs_metrics_block_shm *keep = vs_metrics_me;
    metrics_bind(&s, 2);
    vs_metrics_add(VS_M_CONN_ACCEPTED_TCP, 5);
    vs_metrics_add(VS_M_CONN_OPEN_TCP, 3);
    vs_metrics_sub(VS_M_CONN_OPEN_TCP, 1);
    metrics_bind(&s, 1);
    vs_metrics_add(VS_M_CONN_ACCEPTED_TCP, 1);
    ck_assert_uint_eq(metrics_read(&s, 2, VS_M_CONN_ACCEPTED_TCP), 5);
    ck_assert_uint_eq(metrics_sum(&s, VS_M_CONN_ACCEPTED_TCP), 6);
    ck_assert_uint_eq(metrics_sum(&s, VS_M_CONN_OPEN_TCP), 2);
    /* the process in slot 2 is reaped: gauges go, counters stay */
    seg_slot_clear(&s, 2);
    ck_assert_uint_eq(metrics_sum(&s, VS_M_CONN_OPEN_TCP), 0);
    ck_assert_uint_eq(metrics_sum(&s, VS_M_CONN_ACCEPTED_TCP), 6);
    /* a new incarnation binding its block starts its gauges at zero */
    metrics_bind(&s, 2);
    vs_metrics_add(VS_M_CONN_OPEN_TCP, 1);
    metrics_bind(&s, 2);
    ck_assert_uint_eq(metrics_read(&s, 2, VS_M_CONN_OPEN_TCP), 0);
    ck_assert_uint_eq(metrics_read(&s, 2, VS_M_CONN_ACCEPTED_TCP), 5);
    vs_metrics_me = keep;
    seg_destroy(&s);
}
END_TEST

/* Two writer processes, one reader: sums never go backwards and end at
 * the exact total. */
START_TEST(test_processes)
{
    struct vs_seg s;
    struct vs_seg_params p = params(3);
    ck_assert_int_eq(seg_create(&s, &p), 0);
    const uint64_t n = 200000;
    pid_t pid[2];
    for (int w = 0; w < 2; w++) {
        pid[w] = fork();
        ck_assert_int_ne(pid[w], -1);
        if (pid[w] == 0) {
            metrics_bind(&s, (uint32_t)w + 1);
            for (uint64_t i = 0; i < n; i++) {
                vs_metrics_add(VS_M_CLIENT_BYTES_SENT, 3);
                vs_metrics_observe_us(VS_M_HIST_FSYNC, i % 2000);
            }
            _exit(0);
        }
    }
    uint64_t last = 0, reads = 0;
    for (int done = 0; done < 2 && reads < 100000000u; reads++) {
        uint64_t v = metrics_sum(&s, VS_M_CLIENT_BYTES_SENT);
        ck_assert_uint_ge(v, last);
        ck_assert_uint_eq(v % 3, 0);
        last = v;
        if (v == 2 * 3 * n)
            done = 2;
    }
    for (int w = 0; w < 2; w++) {
        int st;
        ck_assert_int_eq(waitpid(pid[w], &st, 0), pid[w]);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    ck_assert_uint_eq(metrics_sum(&s, VS_M_CLIENT_BYTES_SENT), 2 * 3 * n);
    ck_assert_uint_eq(metrics_sum(&s, VS_M_HIST_FSYNC + VS_MH_BOUNDS + 2),
                      2 * n);
    seg_destroy(&s);
}
END_TEST

static Suite *
metrics_suite(void)
{
    Suite *s = suite_create("ipc_metrics");
    TCase *t = tcase_create("metrics");
    tcase_add_test(t, test_tables);
    tcase_add_test(t, test_histogram_and_requests);
    tcase_add_test(t, test_segment_bind_and_clear);
    tcase_add_test(t, test_processes);
    tcase_set_timeout(t, 120);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(metrics_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
