/*
 * tests/integration/check_cluster_failover.c - SIGKILL of the primary of
 * a real 3-node cluster while a client library loop creates streams
 * (resend on, leader following on, pointed at a backup first): the
 * library settles on the leader, a new primary takes over within
 * seconds, every acknowledged stream exists exactly once on every
 * surviving node, nothing that was not sent exists; the killed node
 * restarts as a backup (Recovering, then Normal in the new view, never
 * Leader) and catches up. Prints the failover time (kill -> first
 * acknowledged create) for the close.
 */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/errors.h"
#include "tests/integration/cluster.h"
#include "tools/client/vsc.h"

#define N_STREAMS 1000u
#define KILL_AT   300u

static struct vs_cluster cl;
/* A WAL that holds the whole run: the restarted node catches up by
 * repair (a gap beyond the peers' journals needs state transfer). */
static const char *const extra[] = {"--max-streams", "2048", "--wal-slots",
                                    "4096", NULL};

static uint64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_cluster_init(&cl, 3), 0);
    cl.extra = extra;
    int rc = vs_cluster_start(&cl, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "cluster start: %d", rc);
}

static void
teardown(void)
{
    vs_cluster_cleanup(&cl);
}

/* Counts the streams named f-NNNN on node i; asserts each appears at
 * most once and only for indices < sent. */
static unsigned
count_streams(struct vsc *c, unsigned sent, unsigned char *seen)
{
    struct vsc_stream *v = NULL;
    size_t n = 0;
    int rc = vsc_stream_list(c, &v, &n);
    ck_assert_msg(rc == 0, "stream list: %d %s", rc, vsc_last_error(c));
    memset(seen, 0, N_STREAMS);
    unsigned count = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned idx;
        ck_assert_msg(sscanf(v[k].name, "f-%u", &idx) == 1, "stream %s",
                      v[k].name);
        ck_assert_msg(idx < sent, "stream %s was never sent", v[k].name);
        ck_assert_msg(!seen[idx], "stream %s twice", v[k].name);
        seen[idx] = 1;
        count++;
        vsc_stream_fini(&v[k]);
    }
    free(v);
    return count;
}

START_TEST(test_kill_primary_during_creates)
{
    /* The library pointed at a backup settles on the leader. */
    struct vsc_opts o;
    memset(&o, 0, sizeof(o));
    o.addr = cl.client[1];
    o.io_timeout_ms = 30000;
    o.reconnects = 10;
    struct vsc *h = NULL;
    uint64_t end = now_ms() + 20000;
    int rc = -1;
    while (rc != 0 && now_ms() < end) {
        vsc_destroy(h);
        h = vsc_create(&o);
        ck_assert_ptr_nonnull(h);
        rc = vsc_login(h, "iggy", "iggy", NULL);
        if (rc != 0)
            usleep(100 * 1000);
    }
    ck_assert_msg(rc == 0, "login: %s", vsc_last_error(h));
    ck_assert_str_eq(vsc_addr(h), cl.client[0]);

    static unsigned char acked[N_STREAMS], seen[N_STREAMS];
    memset(acked, 0, sizeof(acked));
    uint64_t killed_at = 0, first_after = 0;
    unsigned sent = 0;
    char name[32];
    for (unsigned i = 0; i < N_STREAMS; i++) {
        if (i == KILL_AT) {
            ck_assert_int_gt(vs_node_kill(&cl.node[0]), -1);
            killed_at = now_ms();
        }
        struct vsc_stream s;
        snprintf(name, sizeof(name), "f-%04u", i);
        sent = i + 1;
        rc = vsc_stream_create(h, name, &s);
        ck_assert_msg(rc == 0, "create %s: %d %s", name, rc, vsc_last_error(h));
        vsc_stream_fini(&s);
        acked[i] = 1;
        if (killed_at != 0 && first_after == 0)
            first_after = now_ms();
    }
    ck_assert(killed_at != 0 && first_after != 0);
    fprintf(stderr, "failover: kill -> first acknowledged create %llu ms\n",
            (unsigned long long)(first_after - killed_at));
    ck_assert_msg(first_after - killed_at < 20000, "failover took %llu ms",
                  (unsigned long long)(first_after - killed_at));
    ck_assert(strcmp(vsc_addr(h), cl.client[0]) != 0); /* followed */

    /* Every acknowledged stream exactly once on both survivors. */
    for (unsigned i = 1; i < 3; i++) {
        struct vsc *c = vs_cluster_login(&cl, i, 20000);
        ck_assert_ptr_nonnull(c);
        unsigned n = 0;
        uint64_t until = now_ms() + 10000;
        while ((n = count_streams(c, sent, seen)) < N_STREAMS &&
               now_ms() < until)
            usleep(50 * 1000);
        ck_assert_uint_eq(n, N_STREAMS);
        for (unsigned k = 0; k < N_STREAMS; k++)
            ck_assert(!acked[k] || seen[k]);
        vsc_destroy(c);
    }

    /* The old primary restarts as a backup and catches up. */
    rc = vs_cluster_start_node(&cl, 0, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "restart node 0: %d", rc);
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    struct vs_replica_status st;
    int caught = 0;
    uint64_t until = now_ms() + 20000;
    while (!caught && now_ms() < until) {
        ck_assert_int_eq(vs_replica_status(c0, &st), 0);
        caught = st.status == 0 && st.view > 0 && st.leader != 0 &&
                 count_streams(c0, sent, seen) == N_STREAMS;
        if (!caught)
            usleep(100 * 1000);
    }
    ck_assert_msg(caught, "node 0: status %u view %u leader %u", st.status,
                  st.view, st.leader);
    vsc_destroy(c0);
    vsc_destroy(h);
}
END_TEST

static Suite *
failover_suite(void)
{
    Suite *s = suite_create("cluster_failover");
    TCase *t = tcase_create("kill_primary");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 240);
    tcase_add_test(t, test_kill_primary_during_creates);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(failover_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
