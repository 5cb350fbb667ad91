/*
 * tests/integration/check_cluster_partition.c - link faults in a real
 * 3-node cluster through the test's TCP fault proxy (proxy.h): every
 * replica link (the lower id dials the higher) goes through a proxy the
 * test can cut and heal.
 *  - One backup cut off: the other two keep committing; healed, it
 *    catches up (by repair) and lists everything.
 *  - The primary isolated: the other two elect a new primary and commit
 *    through it; a request sent to the old primary is never acknowledged
 *    and never appears; healed, the old primary follows the new view as a
 *    backup and sees what was committed meanwhile.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/errors.h"
#include "tests/integration/cluster.h"
#include "tests/integration/proxy.h"
#include "tools/client/vsc.h"

static struct vs_cluster cl;
static struct vs_proxy *px[3][3]; /* px[i][j], i < j: i dials j */

static uint64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* 1 if addr's port is one the cluster picked for its nodes (they bind
 * it only when they start, so a proxy's bind to port 0 may get it). */
static int
port_taken(const char *addr)
{
    const char *p = strrchr(addr, ':');
    for (unsigned k = 0; k < cl.n && p != NULL; k++) {
        const char *c = strrchr(cl.client[k], ':');
        const char *r = strrchr(cl.replica[k], ':');
        if ((c && strcmp(c, p) == 0) || (r && strcmp(r, p) == 0))
            return 1;
    }
    return 0;
}

/* A proxy to target on a port no node of the cluster will bind: a
 * rejected one keeps its port while the next is tried, then goes. */
static struct vs_proxy *
proxy_avoiding(const char *target, char *addr)
{
    struct vs_proxy *rejected[16];
    unsigned nrej = 0;
    struct vs_proxy *p = NULL;
    while (nrej < 16) {
        p = vs_proxy_start(target, addr);
        ck_assert_ptr_nonnull(p);
        if (!port_taken(addr))
            break;
        rejected[nrej++] = p;
        p = NULL;
    }
    for (unsigned k = 0; k < nrej; k++)
        vs_proxy_stop(rejected[k]);
    ck_assert_ptr_nonnull(p);
    return p;
}

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_cluster_init(&cl, 3), 0);
    for (unsigned i = 0; i < 3; i++)
        for (unsigned j = i + 1; j < 3; j++) {
            char a[32];
            px[i][j] = proxy_avoiding(cl.replica[j], a);
            vs_cluster_set_peer(&cl, i, j, a);
        }
    int rc = vs_cluster_start(&cl, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "cluster start: %d", rc);
}

static void
teardown(void)
{
    vs_cluster_cleanup(&cl);
    for (unsigned i = 0; i < 3; i++)
        for (unsigned j = i + 1; j < 3; j++)
            vs_proxy_stop(px[i][j]);
}

/* Cuts (1) or heals (0) every link of node k. */
static void
isolate(unsigned k, int cut)
{
    for (unsigned i = 0; i < 3; i++)
        for (unsigned j = i + 1; j < 3; j++)
            if (i == k || j == k)
                (cut ? vs_proxy_cut : vs_proxy_heal)(px[i][j]);
}

static int
has_stream(struct vsc *c, const char *name)
{
    struct vsc_stream s;
    int found = 0;
    struct vsc_id id = vsc_id_name(name);
    if (vsc_stream_get(c, &id, &s, &found) != 0)
        return -1;
    if (found)
        vsc_stream_fini(&s);
    return found;
}

static void
create_ok(struct vsc *c, const char *name)
{
    struct vsc_stream s;
    int rc = vsc_stream_create(c, name, &s);
    ck_assert_msg(rc == 0, "create %s: %d %s", name, rc, vsc_last_error(c));
    vsc_stream_fini(&s);
}

/* Waits until node c lists `name` (bounded). */
static void
wait_stream(struct vsc *c, const char *name, uint32_t ms)
{
    uint64_t end = now_ms() + ms;
    int f;
    while ((f = has_stream(c, name)) != 1 && now_ms() < end)
        usleep(50 * 1000);
    ck_assert_msg(f == 1, "stream %s never arrived", name);
}

START_TEST(test_cut_backup_then_heal)
{
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    struct vsc *c2 = vs_cluster_login(&cl, 2, 20000);
    ck_assert_ptr_nonnull(c2);
    create_ok(c0, "before");
    wait_stream(c2, "before", 10000);

    isolate(2, 1);
    char name[32];
    for (unsigned k = 0; k < 20; k++) {
        snprintf(name, sizeof(name), "cut-%u", k);
        create_ok(c0, name); /* 2 of 3 still commit */
    }
    ck_assert_int_eq(has_stream(c2, "cut-19"), 0); /* cut off: stale */

    isolate(2, 0);
    /* healed: it catches up (a view change it started alone may move the
     * primary meanwhile; the data is the same) */
    wait_stream(c2, "cut-19", 30000);
    for (unsigned k = 0; k < 20; k++) {
        snprintf(name, sizeof(name), "cut-%u", k);
        ck_assert_int_eq(has_stream(c2, name), 1);
    }
    vsc_destroy(c0);
    vsc_destroy(c2);
}
END_TEST

START_TEST(test_isolate_primary)
{
    struct vsc *c[3];
    for (unsigned i = 0; i < 3; i++) {
        c[i] = vs_cluster_login(&cl, i, 20000);
        ck_assert_msg(c[i] != NULL, "login on %u", i);
    }
    create_ok(c[0], "v0");
    isolate(0, 1);

    /* Nodes 1 and 2 elect a new primary (heartbeat timeout, then the view
     * change), bounded. */
    uint64_t t0 = now_ms();
    struct vs_replica_status st;
    int elected = 0;
    while (!elected && now_ms() < t0 + 30000) {
        ck_assert_int_eq(vs_replica_status(c[1], &st), 0);
        elected =
            st.status == 0 && st.view > 0 && st.leader != 0 && st.leader != 255;
        if (!elected)
            usleep(100 * 1000);
    }
    ck_assert_msg(elected, "no new primary: status %u view %u leader %u",
                  st.status, st.view, st.leader);
    fprintf(stderr, "isolated primary replaced after %llu ms (view %u)\n",
            (unsigned long long)(now_ms() - t0), st.view);
    unsigned leader = st.leader;
    create_ok(c[leader], "v1"); /* the new primary commits */

    /* The old primary cannot commit: a request there is never
     * acknowledged (57 until the handle's deadline). */
    struct vsc_opts o;
    memset(&o, 0, sizeof(o));
    o.addr = cl.client[0];
    o.io_timeout_ms = 2000;
    o.no_follow = 1;
    struct vsc *h = vsc_create(&o);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(vsc_connect(h), 0);
    ck_assert_int_ne(vsc_login(h, "iggy", "iggy", NULL), 0);
    vsc_destroy(h);
    struct vsc_stream s;
    ck_assert_int_ne(vsc_stream_create(c[0], "lost", &s), 0);

    isolate(0, 0);
    /* Healed: the old primary joins the new view as a backup. */
    int joined = 0;
    uint64_t end = now_ms() + 30000;
    struct vsc *back = NULL;
    while (!joined && now_ms() < end) {
        if (back == NULL)
            back = vs_cluster_login(&cl, 0, 3000);
        if (back != NULL && vs_replica_status(back, &st) == 0)
            joined = st.status == 0 && st.view > 0 && st.leader != 0 &&
                     st.leader != 255;
        if (!joined)
            usleep(100 * 1000);
    }
    ck_assert_msg(joined, "old primary did not join the new view");
    wait_stream(back, "v1", 10000);
    ck_assert_int_eq(has_stream(back, "lost"), 0);
    ck_assert_int_eq(has_stream(c[leader], "lost"), 0);
    vsc_destroy(back);
    for (unsigned i = 0; i < 3; i++)
        vsc_destroy(c[i]);
}
END_TEST

static Suite *
partition_suite(void)
{
    Suite *s = suite_create("cluster_partition");
    TCase *t = tcase_create("links");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 180);
    tcase_add_test(t, test_cut_backup_then_heal);
    tcase_add_test(t, test_isolate_primary);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(partition_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
