/*
 * tests/integration/check_cluster_repsets.c - replica sets on a real
 * 3-node cluster: topics created with replication factor 1, 2, 3 and 0
 * (the default, min(3, nodes) = 3) get the sets the placement rule
 * decides, view-0 leadership spread evenly over the nodes; a factor of 4
 * is refused with 2018 InvalidReplicationFactor and nothing is stored;
 * every node reports the same sets (GetTopicReplicas and `vstream topic
 * get`); a node restarted recovers them from its WAL, and after a
 * checkpoint from its snapshot (byte-identical on the three nodes).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/errors.h"
#include "tests/integration/cluster.h"
#include "tests/integration/e2e.h"
#include "tools/client/vsc.h"

static struct vs_cluster cl;

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
    int rc = vs_cluster_start(&cl, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "cluster start: %d", rc);
}

static void
teardown(void)
{
    vs_cluster_cleanup(&cl);
}

#define NTOPICS 4
static const char *const topic_names[NTOPICS] = {"rf1", "rf2", "rf3", "rf0"};
static const uint8_t topic_rf[NTOPICS] = {1, 2, 3, 0};

static int
create_topic(struct vsc *c, const char *name, uint32_t parts, uint8_t rf)
{
    struct vs_wbuf o;
    vs_wbuf_init(&o);
    vsc_opt_replication_factor(&o, rf);
    struct vsc_id s = vsc_id_name("rs");
    struct vsc_topic t;
    int rc = vsc_topic_create(c, &s, parts, name, o.data, o.len, &t);
    if (rc == 0)
        vsc_topic_fini(&t);
    vs_wbuf_fini(&o);
    return rc;
}

/* The sets of every test topic as node `c` reports them, as text
 * ("rf1:1 0/0 1/1 2/2;..." = factor, then per partition its set/primary),
 * into buf; 0, or -ENOENT while a topic is not there yet. */
static int
sets_text(struct vsc *c, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (unsigned k = 0; k < NTOPICS; k++) {
        struct vsc_id s = vsc_id_name("rs");
        struct vsc_id t = vsc_id_name(topic_names[k]);
        struct vsc_topic_replicas r;
        int found = 0;
        int rc = vsc_topic_replicas(c, &s, &t, &r, &found);
        if (rc != 0)
            return rc;
        if (!found)
            return -ENOENT;
        at += (size_t)snprintf(buf + at, len - at, "%s:%u", topic_names[k],
                               r.replication_factor);
        for (size_t p = 0; p < r.n_partitions && at < len; p++) {
            at += (size_t)snprintf(buf + at, len - at, " ");
            for (uint8_t m = 0; m < r.partitions[p].count && at < len; m++)
                at += (size_t)snprintf(buf + at, len - at, "%s%u", m ? "," : "",
                                       r.partitions[p].replicas[m]);
            at += (size_t)snprintf(buf + at, len - at, "/%u",
                                   r.partitions[p].primary);
        }
        at += (size_t)snprintf(buf + at, len - at, ";");
        vsc_topic_replicas_fini(&r);
    }
    return 0;
}

/* What the placement rule decides for the four topics of 3 partitions
 * each, created in this order on 3 nodes: leaders rotate 0,1,2 and every
 * node leads four of the twelve partitions. */
static const char want[] = "rf1:1 0/0 1/1 2/2;"
                           "rf2:2 0,1/0 1,2/1 2,0/2;"
                           "rf3:3 0,1,2/0 1,2,0/1 2,0,1/2;"
                           "rf0:3 0,1,2/0 1,2,0/1 2,0,1/2;";

/* Logs in on node i and waits (bounded) until it reports the sets. */
static void
expect_sets(unsigned i, uint32_t ms)
{
    uint64_t end = now_ms() + ms;
    char got[1024] = "";
    struct vsc *c = NULL;
    int rc = -1;
    while (now_ms() < end) {
        if (c == NULL)
            c = vs_cluster_login(&cl, i, 5000);
        if (c != NULL && (rc = sets_text(c, got, sizeof(got))) == 0 &&
            strcmp(got, want) == 0)
            break;
        usleep(100 * 1000);
    }
    ck_assert_msg(c != NULL, "node %u: no login", i);
    ck_assert_msg(rc == 0 && strcmp(got, want) == 0,
                  "node %u: rc %d sets \"%s\", want \"%s\"", i, rc, got, want);
    vsc_destroy(c);
}

static void
create_all(void)
{
    struct vsc *c = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c);
    struct vsc_stream s;
    int rc = vsc_stream_create(c, "rs", &s);
    ck_assert_msg(rc == 0, "stream: %d %s", rc, vsc_last_error(c));
    vsc_stream_fini(&s);
    for (unsigned k = 0; k < NTOPICS; k++) {
        rc = create_topic(c, topic_names[k], 3, topic_rf[k]);
        ck_assert_msg(rc == 0, "topic %s: %d %s", topic_names[k], rc,
                      vsc_last_error(c));
    }
    /* more than the node count: refused, nothing stored */
    ck_assert_int_eq(create_topic(c, "rf4", 3, 4),
                     VS_E_INVALID_REPLICATION_FACTOR);
    ck_assert_int_eq(create_topic(c, "rf33", 1, 33),
                     VS_E_INVALID_REPLICATION_FACTOR);
    struct vsc_id sid = vsc_id_name("rs");
    struct vsc_id tid = vsc_id_name("rf4");
    struct vsc_topic t;
    int found = 1;
    ck_assert_int_eq(vsc_topic_get(c, &sid, &tid, &t, &found), 0);
    ck_assert_int_eq(found, 0);
    vsc_destroy(c);
}

START_TEST(test_sets_agree_and_survive_restarts)
{
    create_all();
    for (unsigned i = 0; i < 3; i++)
        expect_sets(i, 20000);
    /* no node stored the refused topic, and the stream has 4 topics */
    for (unsigned i = 0; i < 3; i++) {
        struct vsc *c = vs_cluster_login(&cl, i, 20000);
        ck_assert_ptr_nonnull(c);
        struct vsc_id sid = vsc_id_name("rs");
        struct vsc_stream s;
        int found = 0;
        ck_assert_int_eq(vsc_stream_get(c, &sid, &s, &found), 0);
        ck_assert_int_eq(found, 1);
        ck_assert_uint_eq(s.topics_count, NTOPICS);
        vsc_stream_fini(&s);
        vsc_destroy(c);
    }

    /* the CLI on a backup shows the sets and refuses a factor of 4 */
    char out[8192], err[4096];
    const char *get[] = {"topic", "get", "rs", "rf2", NULL};
    ck_assert_int_eq(e2e_cli(&cl.node[2], "iggy", NULL, out, sizeof(out), err,
                             sizeof(err), get),
                     0);
    ck_assert_msg(strstr(out, "replication factor: 2 (of 3 nodes)") != NULL,
                  "%s", out);
    ck_assert_msg(strstr(out, "PRIMARY(VIEW 0)") != NULL, "%s", out);
    ck_assert_msg(strstr(out, " 1,2 ") != NULL, "%s", out);
    const char *getj[] = {"topic", "get", "rs", "rf3", "--json", NULL};
    ck_assert_int_eq(e2e_cli(&cl.node[1], "iggy", NULL, out, sizeof(out), err,
                             sizeof(err), getj),
                     0);
    ck_assert_msg(strstr(out, "\"replicas\":[2,0,1],\"primary\":2") != NULL,
                  "%s", out);
    const char *bad[] = {"topic", "create", "rs", "big", "--replication-factor",
                         "4",     NULL};
    ck_assert_int_eq(e2e_cli(&cl.node[0], "iggy", NULL, out, sizeof(out), err,
                             sizeof(err), bad),
                     2);
    ck_assert_msg(strstr(err, "(2018)") != NULL, "%s", err);

    /* a backup restarted before any checkpoint: its sets come from the
     * WAL */
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS), 0);
    expect_sets(2, 30000);

    /* past a checkpoint (the test profile checkpoints every 24 ops) the
     * snapshot holds them: byte-identical on every node */
    struct vsc *c = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c);
    char name[32];
    for (unsigned k = 0; k < 30; k++) {
        struct vsc_stream s;
        snprintf(name, sizeof(name), "pad-%u", k);
        int rc = vsc_stream_create(c, name, &s);
        ck_assert_msg(rc == 0, "%s: %d %s", name, rc, vsc_last_error(c));
        vsc_stream_fini(&s);
    }
    vsc_destroy(c);
    struct vsc *h[3];
    struct vs_replica_status st[3];
    for (unsigned i = 0; i < 3; i++) {
        h[i] = vs_cluster_login(&cl, i, 20000);
        ck_assert_ptr_nonnull(h[i]);
    }
    uint64_t end = now_ms() + 20000;
    int same = 0;
    while (!same && now_ms() < end) {
        for (unsigned i = 0; i < 3; i++)
            ck_assert_int_eq(vs_replica_status(h[i], &st[i]), 0);
        same = st[0].checkpoint_op >= 24 &&
               st[1].checkpoint_op == st[0].checkpoint_op &&
               st[2].checkpoint_op == st[0].checkpoint_op &&
               st[1].checkpoint_lo == st[0].checkpoint_lo &&
               st[2].checkpoint_lo == st[0].checkpoint_lo;
        if (!same)
            usleep(50 * 1000);
    }
    ck_assert_msg(same, "checkpoints %llu %llu %llu",
                  (unsigned long long)st[0].checkpoint_op,
                  (unsigned long long)st[1].checkpoint_op,
                  (unsigned long long)st[2].checkpoint_op);
    for (unsigned i = 0; i < 3; i++)
        vsc_destroy(h[i]);
    /* the restarted node boots from its snapshot (SIGKILL: no clean
     * shutdown) and reports the same sets */
    ck_assert_int_gt(vs_node_kill(&cl.node[1]), -1);
    ck_assert_int_eq(vs_cluster_start_node(&cl, 1, VS_CLUSTER_START_MS), 0);
    expect_sets(1, 30000);
    struct vsc *c1 = vs_cluster_login(&cl, 1, 20000);
    ck_assert_ptr_nonnull(c1);
    struct vs_replica_status s1;
    ck_assert_int_eq(vs_replica_status(c1, &s1), 0);
    ck_assert_uint_ge(s1.checkpoint_op, 24);
    vsc_destroy(c1);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("cluster_repsets");
    TCase *tc = tcase_create("repsets");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_sets_agree_and_survive_restarts);
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
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
