/*
 * tests/integration/check_data_gcommit.c - group commit of the data
 * shards under fsync-every-batch (shard/serve/gcommit.h), end to end on
 * a two-shard node: six concurrent producers, two per partition (so sends
 * queue behind a partition's waiting batch, and half of them are
 * forwarded between shards), each send acknowledged with its base offset.
 * Afterwards every acknowledged batch is at its offset byte for byte, the
 * offsets of each partition are exactly 0..n-1 (no gap, no duplicate);
 * after a SIGKILL of the whole node and a restart on the same data dir
 * the same holds (acknowledged means durable). A clean stop logs the
 * group-commit counters (every send held, fsyncs no more than sends).
 * The same producers under the interval policy with frames above the
 * direct-read size (each batch written off the loop from the buffer it
 * was received in, or from the IPC reassembly buffer when forwarded):
 * the same checks, and again after a clean stop and a restart. Both
 * again with segment_write_offload false (writes on the loop, only the
 * fsyncs on the threads).
 * Every wait is bounded; processes are ended by pid.
 */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/e2e.h"

#define PRODUCERS 6
#define PARTS     3
#define BATCHES   15
#define PER       4

static struct vs_node node;
static const struct vsc_id SID = {2, 0, "gc"};
static const struct vsc_id TID = {2, 0, "t"};

struct prod {
    int index;
    uint64_t acked[BATCHES]; /* base offsets */
    int err;
    char msg[256];
    pthread_t th;
};

/* 1: the node runs with segment_write_offload false */
static int g_inline;

/* Starts the node (again), on `addr` if not NULL. */
static void
start_node(const char *addr)
{
    const char *args[8];
    size_t k = 0;
    if (addr != NULL) {
        args[k++] = "--client-addr";
        args[k++] = addr;
    }
    if (g_inline) {
        args[k++] = "--segment-write-offload";
        args[k++] = "false";
    }
    args[k] = NULL;
    e2e_start(&node, 2, args);
}

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
    start_node(NULL);
}

static void
setup_inline(void)
{
    g_inline = 1;
    setup();
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
    g_inline = 0;
}

/* Big payloads: PER of them make a frame above SERVE_RX_DIRECT_MIN. */
#define BIG_LEN 20000
static int g_big;

static size_t
payload_of(int p, int b, int m, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "p%d-b%d-m%d-%0*d", p, b, m,
                                (p * 7 + b * 3 + m) % 50 + 1, 0);
    if (!g_big)
        return n;
    for (; n < BIG_LEN && n < cap; n++)
        out[n] = (char)('a' + (p * 5 + b * 3 + m + (int)n) % 26);
    return n;
}

static void *
producer(void *arg)
{
    struct prod *pr = arg;
    struct vsc_opts o;
    memset(&o, 0, sizeof o);
    o.addr = node.ready.client;
    struct vsc *c = vsc_create(&o);
    if (c == NULL || vsc_login(c, "iggy", "iggy", NULL) != 0) {
        pr->err = 1;
        snprintf(pr->msg, sizeof pr->msg, "login");
        vsc_destroy(c);
        return NULL;
    }
    struct vsc_partitioning part = vsc_part_id((uint32_t)(pr->index % PARTS));
    for (int b = 0; b < BATCHES && !pr->err; b++) {
        static __thread char pay[PER][BIG_LEN + 96];
        struct vsc_msg m[PER];
        struct vsc_sent sent;
        memset(m, 0, sizeof m);
        for (int k = 0; k < PER; k++) {
            m[k].id.lo = (uint64_t)(pr->index * 10000 + b * 10 + k + 1);
            m[k].payload = pay[k];
            m[k].payload_len =
                (uint32_t)payload_of(pr->index, b, k, pay[k], sizeof pay[k]);
        }
        if (vsc_send(c, &SID, &TID, &part, m, PER, &sent) != 0 ||
            !sent.confirmed) {
            pr->err = 1;
            snprintf(pr->msg, sizeof pr->msg, "send %d: %s", b,
                     vsc_last_error(c));
            break;
        }
        pr->acked[b] = sent.base_offset;
    }
    vsc_destroy(c);
    return NULL;
}

/* Polls partition `part` whole and checks it against the acks. */
static void
check_partition(struct vsc *c, const struct prod *pr, uint32_t part)
{
    enum { N = PRODUCERS / PARTS * BATCHES * PER };
    static char seen[N];
    struct vsc_id cid = vsc_id_num(99);
    uint64_t next = 0;
    memset(seen, 0, sizeof seen);
    for (int round = 0; round < 100 && next < N; round++) {
        struct vsc_poll_args a;
        struct vsc_polled r;
        memset(&a, 0, sizeof a);
        a.consumer = vsc_consumer_single(&cid);
        a.has_partition = 1;
        a.partition_id = part;
        a.strategy = VSC_POLL_OFFSET;
        a.value = next;
        a.count = 25;
        ck_assert_int_eq(vsc_poll(c, &SID, &TID, &a, &r), 0);
        ck_assert_uint_gt(r.n, 0);
        for (size_t i = 0; i < r.n; i++) {
            ck_assert_uint_eq(r.msgs[i].offset, next); /* no gap, no dup */
            int id = (int)r.msgs[i].id.lo - 1;
            int p = id / 10000, b = id % 10000 / 10, k = id % 10;
            static char want[BIG_LEN + 96];
            size_t wl = payload_of(p, b, k, want, sizeof want);
            ck_assert_int_eq(p % PARTS, (int)part);
            ck_assert_uint_eq(pr[p].acked[b] + (uint64_t)k, next);
            ck_assert_uint_eq(r.msgs[i].payload_len, wl);
            ck_assert_mem_eq(r.msgs[i].payload, want, wl);
            ck_assert_int_eq(seen[next], 0);
            seen[next] = 1;
            next++;
        }
        vsc_polled_fini(&r);
    }
    ck_assert_uint_eq(next, N);
}

START_TEST(test_concurrent_fsync_sends_durable)
{
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    struct vs_wbuf opts;
    vs_wbuf_init(&opts);
    vsc_opt_bool(&opts, "enforce_fsync", 1);
    ck_assert_int_eq(vsc_stream_create(c, "gc", NULL), 0);
    ck_assert_int_eq(
        vsc_topic_create(c, &SID, PARTS, "t", opts.data, opts.len, NULL), 0);
    vs_wbuf_fini(&opts);
    vsc_destroy(c);

    static struct prod pr[PRODUCERS];
    memset(pr, 0, sizeof pr);
    for (int i = 0; i < PRODUCERS; i++) {
        pr[i].index = i;
        ck_assert_int_eq(pthread_create(&pr[i].th, NULL, producer, &pr[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pr[i].th, NULL);
    for (int i = 0; i < PRODUCERS; i++)
        ck_assert_msg(pr[i].err == 0, "producer %d: %s", i, pr[i].msg);

    c = e2e_login(&node, "iggy", "iggy");
    for (uint32_t p = 0; p < PARTS; p++)
        check_partition(c, pr, p);
    vsc_destroy(c);

    /* acknowledged means durable: kill -9 everything, restart */
    char addr[256];
    snprintf(addr, sizeof addr, "%s", node.ready.client);
    e2e_kill_node(&node);
    start_node(addr);
    c = e2e_login(&node, "iggy", "iggy");
    for (uint32_t p = 0; p < PARTS; p++)
        check_partition(c, pr, p);
    vsc_destroy(c);
}
END_TEST

/* A clean stop logs each shard's group-commit counters: sends were held
 * and made durable by fsyncs, never more fsyncs than sends held. */
START_TEST(test_counters_logged)
{
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    struct vs_wbuf opts;
    vs_wbuf_init(&opts);
    vsc_opt_bool(&opts, "enforce_fsync", 1);
    ck_assert_int_eq(vsc_stream_create(c, "gc", NULL), 0);
    ck_assert_int_eq(
        vsc_topic_create(c, &SID, PARTS, "t", opts.data, opts.len, NULL), 0);
    vs_wbuf_fini(&opts);
    vsc_destroy(c);
    static struct prod pr[PRODUCERS];
    memset(pr, 0, sizeof pr);
    for (int i = 0; i < PRODUCERS; i++) {
        pr[i].index = i;
        ck_assert_int_eq(pthread_create(&pr[i].th, NULL, producer, &pr[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pr[i].th, NULL);
    for (int i = 0; i < PRODUCERS; i++)
        ck_assert_msg(pr[i].err == 0, "producer %d: %s", i, pr[i].msg);
    ck_assert_int_eq(vs_node_stop(&node, 20000), 0);
    FILE *lf = fopen(node.log_file, "r");
    ck_assert_ptr_nonnull(lf);
    char line[1024];
    unsigned long long held = 0, fsyncs = 0;
    int lines = 0;
    while (fgets(line, sizeof line, lf) != NULL) {
        const char *q = strstr(line, "group commit: ");
        unsigned long long h, f, g, qd;
        if (q && sscanf(q,
                        "group commit: %llu sends held for %llu fsyncs in "
                        "%llu groups, %llu queued",
                        &h, &f, &g, &qd) == 4) {
            held += h;
            fsyncs += f;
            lines++;
        }
    }
    fclose(lf);
    ck_assert_int_eq(lines, 2); /* one per data shard */
    ck_assert_uint_eq(held, PRODUCERS * BATCHES);
    ck_assert_uint_gt(fsyncs, 0);
    ck_assert_uint_le(fsyncs, held);
}
END_TEST

/* The interval policy: sends are held until their batch is written off
 * the loop (not until an fsync); big frames are taken, not copied. */
START_TEST(test_interval_big_sends_in_order)
{
    g_big = 1;
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    ck_assert_int_eq(vsc_stream_create(c, "gc", NULL), 0);
    ck_assert_int_eq(vsc_topic_create(c, &SID, PARTS, "t", NULL, 0, NULL), 0);
    vsc_destroy(c);
    static struct prod pr[PRODUCERS];
    memset(pr, 0, sizeof pr);
    for (int i = 0; i < PRODUCERS; i++) {
        pr[i].index = i;
        ck_assert_int_eq(pthread_create(&pr[i].th, NULL, producer, &pr[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pr[i].th, NULL);
    for (int i = 0; i < PRODUCERS; i++)
        ck_assert_msg(pr[i].err == 0, "producer %d: %s", i, pr[i].msg);
    c = e2e_login(&node, "iggy", "iggy");
    for (uint32_t p = 0; p < PARTS; p++)
        check_partition(c, pr, p);
    vsc_destroy(c);
    /* a clean stop flushes what was written: all of it after a restart */
    char addr[256];
    snprintf(addr, sizeof addr, "%s", node.ready.client);
    ck_assert_int_eq(vs_node_stop(&node, 20000), 0);
    start_node(addr);
    c = e2e_login(&node, "iggy", "iggy");
    for (uint32_t p = 0; p < PARTS; p++)
        check_partition(c, pr, p);
    vsc_destroy(c);
    g_big = 0;
}
END_TEST

static Suite *
gcommit_suite(void)
{
    Suite *s = suite_create("data_gcommit");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_concurrent_fsync_sends_durable);
    tcase_add_test(tc, test_counters_logged);
    tcase_add_test(tc, test_interval_big_sends_in_order);
    suite_add_tcase(s, tc);
    tc = tcase_create("inline_writes");
    tcase_add_checked_fixture(tc, setup_inline, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_concurrent_fsync_sends_durable);
    tcase_add_test(tc, test_interval_big_sends_in_order);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(gcommit_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
