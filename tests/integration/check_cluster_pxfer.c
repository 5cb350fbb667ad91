/*
 * tests/integration/check_cluster_pxfer.c - partition state transfer in
 * a real 3-node cluster (partition_replication on, a small journal
 * window: --wal-slots 64, so each partition group keeps 64 ops and
 * checkpoints every 32): a topic of replication factor 3; a consumer
 * offset is stored; one backup node is stopped (SIGKILL) while 400
 * batches are sent and acknowledged, so its peers' journals no longer
 * cover its gap; another offset is stored; restarted, it cannot catch up
 * by repair, fetches the partition by state transfer (its log shows the
 * install), then polls through it return exactly the others' history
 * (every acknowledged message once, at the offset its acknowledgement
 * named) and its stored consumer offset is the others'. The catch-up
 * time and rate are printed.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/errors.h"
#include "tests/integration/cluster.h"
#include "tests/integration/preplica.h"
#include "tools/client/vsc.h"

static struct vs_cluster cl;
static const char *const extra[] = {
    "--partition-replication", "true", "--wal-slots", "64",
    "--checkpoint-margin",     "8",    NULL};

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

static struct prep_history hist[3];

static uint64_t
stored_offset(unsigned node, const char *s, const char *t, uint32_t consumer)
{
    struct vsc *c = prep_login_on(&cl, node, 5000);
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    struct vsc_id cid = vsc_id_num(consumer);
    struct vsc_consumer cons = vsc_consumer_single(&cid);
    struct vsc_offset o;
    int found = 0;
    memset(&o, 0, sizeof(o));
    int rc = vsc_offset_get(c, &cons, &sid, &tid, 1, 0, &o, &found);
    ck_assert_msg(rc == 0 && found, "node %u: offset of consumer %u: %d %s",
                  node, consumer, rc, vsc_last_error(c));
    vsc_destroy(c);
    return o.stored_offset;
}

static void
store_offset(struct vsc *c, const char *s, const char *t, uint32_t consumer,
             uint64_t off)
{
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    struct vsc_id cid = vsc_id_num(consumer);
    struct vsc_consumer cons = vsc_consumer_single(&cid);
    int rc = vsc_offset_store(c, &cons, &sid, &tid, 1, 0, off);
    ck_assert_msg(rc == 0, "store offset: %d %s", rc, vsc_last_error(c));
}

/* 1 if node i's log records an installed partition state transfer. */
static int
log_shows_install(unsigned i)
{
    char cmd[1400];
    snprintf(cmd, sizeof(cmd),
             "cat '%s' '%s' 2>/dev/null | grep -q 'transferred partition "
             "installed'",
             cl.node[i].log_file, cl.node[i].stderr_file);
    return system(cmd) == 0;
}

START_TEST(test_lagging_node_transfers)
{
    struct vsc *adm = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(adm);
    unsigned primary = prep_make_topic(&cl, adm, "px", "t", 3);
    vsc_destroy(adm);
    ck_assert_uint_lt(primary, 3);
    /* the stopped node: a backup of the partition, not node 0 (the
     * metadata primary of a fresh cluster) */
    unsigned victim = 3;
    for (unsigned i = 1; i < 3 && victim == 3; i++)
        if (i != primary)
            victim = i;
    unsigned via = primary; /* the producer talks to the group's primary */
    fprintf(stderr, "partition primary node %u, stopped node %u\n", primary,
            victim);

    enum { BEFORE = 20, DOWN = 400 };
    static uint64_t base[BEFORE + DOWN];
    for (unsigned k = 0; k < BEFORE + DOWN; k++)
        base[k] = UINT64_MAX;
    struct vsc *p = prep_login_on(&cl, via, 30000);
    for (unsigned k = 0; k < BEFORE; k++) {
        int rc = prep_send_batch(p, "px", "t", "x", k, &base[k]);
        ck_assert_msg(rc == 0, "batch %u: %d %s", k, rc, vsc_last_error(p));
    }
    store_offset(p, "px", "t", 7, 55);
    ck_assert_int_gt(vs_node_kill(&cl.node[victim]), -1);
    for (unsigned k = BEFORE; k < BEFORE + DOWN; k++) {
        int rc = prep_send_batch(p, "px", "t", "x", k, &base[k]);
        ck_assert_msg(rc == 0, "batch %u: %d %s", k, rc, vsc_last_error(p));
    }
    store_offset(p, "px", "t", 7, 3333);
    store_offset(p, "px", "t", 8, 12);
    vsc_destroy(p);

    size_t total = (size_t)(BEFORE + DOWN) * PREP_BATCH;
    unsigned alive[2], na = 0;
    for (unsigned i = 0; i < 3; i++)
        if (i != victim)
            alive[na++] = i;
    for (unsigned x = 0; x < 2; x++) {
        prep_wait_history(&cl, alive[x], "px", "t", total, &hist[alive[x]],
                          30000);
        prep_acked_once(&hist[alive[x]], "x", base, BEFORE + DOWN);
    }
    prep_same_history(&hist[alive[0]], &hist[alive[1]], alive[0], alive[1]);

    uint64_t t0 = prep_now_ms();
    int rc = vs_cluster_start_node(&cl, victim, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "restart node %u: %d", victim, rc);
    prep_wait_history(&cl, victim, "px", "t", hist[alive[0]].n, &hist[victim],
                      60000);
    uint64_t ms = prep_now_ms() - t0;
    fprintf(stderr,
            "restarted node %u caught up %zu messages in %llu ms "
            "(%.0f messages/s, restart included)\n",
            victim, hist[victim].n, (unsigned long long)ms,
            ms ? (double)hist[victim].n * 1000.0 / (double)ms : 0.0);
    prep_same_history(&hist[alive[0]], &hist[victim], alive[0], victim);
    prep_acked_once(&hist[victim], "x", base, BEFORE + DOWN);
    ck_assert_msg(log_shows_install(victim),
                  "node %u caught up without a partition state transfer",
                  victim);
    /* the consumer offsets came with it (and the ops above it) */
    uint64_t end = prep_now_ms() + 20000;
    while (prep_now_ms() < end && stored_offset(victim, "px", "t", 8) != 12)
        usleep(100 * 1000);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_eq(stored_offset(i, "px", "t", 7), 3333);
        ck_assert_uint_eq(stored_offset(i, "px", "t", 8), 12);
    }
    /* it keeps serving: sends go on with all three */
    p = prep_login_on(&cl, via, 30000);
    uint64_t b2;
    for (unsigned k = 0; k < 5; k++) {
        rc = prep_send_batch(p, "px", "t", "y", k, &b2);
        ck_assert_msg(rc == 0, "after: %d %s", rc, vsc_last_error(p));
    }
    vsc_destroy(p);
    total += 5 * PREP_BATCH;
    for (unsigned i = 0; i < 3; i++)
        prep_wait_history(&cl, i, "px", "t", total, &hist[i], 30000);
    prep_same_history(&hist[0], &hist[1], 0, 1);
    prep_same_history(&hist[0], &hist[2], 0, 2);
}
END_TEST

static Suite *
pxfer_suite(void)
{
    Suite *s = suite_create("cluster_pxfer");
    TCase *t = tcase_create("lagging");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 300);
    tcase_add_test(t, test_lagging_node_transfers);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(pxfer_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
