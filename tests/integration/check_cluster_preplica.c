/*
 * tests/integration/check_cluster_preplica.c - replicated partitions in
 * a real 3-node cluster (partition_replication on, two data shards per
 * node, so sends also cross the shards of a node before a data link):
 *  - a topic of replication factor 3: batches sent through every node
 *    (each node's own connection, no leader following) are acknowledged,
 *    and every node's polls return the same history, every acknowledged
 *    message exactly once at the offset its acknowledgement named, and
 *    the node that answered a send serves the batch to its next poll
 *    (read your writes on every node);
 *  - the same bytes sent three times through each node under one request
 *    number (Iggy's SDK numbering) are three sends, each stored at its
 *    own offset, none answered as a resend of another;
 *  - a send to a partition the topic does not have is refused, and the
 *    interim rule no longer refuses the partition plane on backups;
 *  - SIGKILL of the partition group's primary node during a send loop
 *    (the producer on another node): a new primary takes over (the
 *    failover time is printed: kill -> first acknowledged send), every
 *    acknowledged message is present exactly once on both survivors at
 *    its offset, their histories are identical; the killed node restarts,
 *    catches up and serves the identical history.
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
/* Journals that hold the whole run (each group's window is wal_slots
 * ops): the restarted node catches up by repair (a gap beyond the peers'
 * windows needs a partition state transfer, not in this version). */
static const char *const extra[] = {"--partition-replication",
                                    "true",
                                    "--shards",
                                    "2",
                                    "--wal-slots",
                                    "1024",
                                    NULL};

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

START_TEST(test_sends_through_every_node)
{
    struct vsc *adm = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(adm);
    (void)prep_make_topic(&cl, adm, "ps", "t3", 3);
    vsc_destroy(adm);

    enum { PER_NODE = 30 };
    static uint64_t base[3][PER_NODE];
    static const char *const tags[3] = {"n0", "n1", "n2"};
    struct vsc *c[3];
    for (unsigned i = 0; i < 3; i++)
        c[i] = prep_login_on(&cl, i, 20000);
    /* interleaved: every node's sends in turn */
    for (unsigned k = 0; k < PER_NODE; k++)
        for (unsigned i = 0; i < 3; i++) {
            int rc = prep_send_batch(c[i], "ps", "t3", tags[i], k, &base[i][k]);
            ck_assert_msg(rc == 0, "node %u batch %u: %d %s", i, k, rc,
                          vsc_last_error(c[i]));
            /* read your writes: the node that answered the send serves
             * the batch at once, primary of the group or not */
            char first[48], want[48];
            snprintf(want, sizeof(want), "%s-%u-0", tags[i], k);
            size_t n = prep_poll_at(c[i], "ps", "t3", base[i][k], first);
            ck_assert_msg(n == PREP_BATCH && strcmp(first, want) == 0,
                          "node %u: a poll right after batch %u was "
                          "acknowledged at %llu returned %zu messages (%s)",
                          i, k, (unsigned long long)base[i][k], n, first);
        }
    /* the same bytes sent SAME_BYTES times through each node with one
     * request number (Iggy's numbering: partition ops do not advance
     * it): distinct sends, each stored, never answered as a resend */
    enum { SAME_BYTES = 3 };
    uint64_t same_base[3][SAME_BYTES];
    for (unsigned i = 0; i < 3; i++) {
        uint64_t request = vsc_request_counter(c[i]);
        char text[16];
        snprintf(text, sizeof(text), "same-%u", i);
        struct vsc_msg sm;
        memset(&sm, 0, sizeof(sm));
        sm.id = (struct vs_u128){0x5a5a0000u + i, 1};
        sm.origin_timestamp = 1;
        sm.payload = text;
        sm.payload_len = (uint32_t)strlen(text);
        struct vsc_id ssid = vsc_id_name("ps"), stid = vsc_id_name("t3");
        struct vsc_partitioning p0 = vsc_part_id(0);
        for (unsigned r = 0; r < SAME_BYTES; r++) {
            struct vsc_sent sent;
            memset(&sent, 0, sizeof(sent));
            int rc = vsc_send(c[i], &ssid, &stid, &p0, &sm, 1, &sent);
            ck_assert_msg(rc == 0, "node %u same-bytes send %u: %d %s", i, r,
                          rc, vsc_last_error(c[i]));
            same_base[i][r] = sent.base_offset;
            for (unsigned q = 0; q < r; q++)
                ck_assert_msg(same_base[i][q] != sent.base_offset,
                              "node %u: send %u answered with send %u's "
                              "offset %llu",
                              i, r, q, (unsigned long long)sent.base_offset);
        }
        ck_assert_uint_eq(vsc_request_counter(c[i]), request);
    }
    /* a partition the topic does not have: refused, nothing stored */
    struct vsc_msg m;
    memset(&m, 0, sizeof(m));
    m.payload = "x";
    m.payload_len = 1;
    struct vsc_id sid = vsc_id_name("ps"), tid = vsc_id_name("t3");
    struct vsc_partitioning bad = vsc_part_id(7);
    int rc = vsc_send(c[1], &sid, &tid, &bad, &m, 1, NULL);
    ck_assert_msg(rc > 0 && rc != VS_E_NOT_ACCEPTED &&
                      rc != VS_E_TRANSIENT_NOT_COMMITTED,
                  "send to partition 7: %d %s", rc, vsc_last_error(c[1]));
    for (unsigned i = 0; i < 3; i++)
        vsc_destroy(c[i]);

    size_t total = 3u * PER_NODE * PREP_BATCH + 3u * SAME_BYTES;
    for (unsigned i = 0; i < 3; i++) {
        prep_wait_history(&cl, i, "ps", "t3", total, &hist[i], 20000);
        ck_assert_uint_eq(hist[i].n, total);
        for (unsigned t = 0; t < 3; t++)
            prep_acked_once(&hist[i], tags[t], base[t], PER_NODE);
        for (unsigned t = 0; t < 3; t++)
            for (unsigned r = 0; r < SAME_BYTES; r++) {
                char want[16];
                snprintf(want, sizeof(want), "same-%u", t);
                ck_assert_msg(same_base[t][r] < hist[i].n &&
                                  strcmp(hist[i].text[same_base[t][r]], want) ==
                                      0,
                              "node %u: offset %llu is not %s", i,
                              (unsigned long long)same_base[t][r], want);
            }
    }
    prep_same_history(&hist[0], &hist[1], 0, 1);
    prep_same_history(&hist[0], &hist[2], 0, 2);
}
END_TEST

START_TEST(test_kill_group_primary)
{
    struct vsc *adm = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(adm);
    /* a second topic first, so this one's view-0 primary is not node 0
     * (placement spreads leaders): the metadata primary survives */
    (void)prep_make_topic(&cl, adm, "pk", "warm", 3);
    unsigned primary = prep_make_topic(&cl, adm, "pk", "t", 3);
    vsc_destroy(adm);
    ck_assert_uint_lt(primary, 3);
    unsigned via = primary == 0 ? 1 : 0; /* the producer's node survives */
    fprintf(stderr, "partition primary node %u, producer on node %u\n", primary,
            via);

    enum { BATCHES = 200, KILL_AT = 60 };
    static uint64_t base[BATCHES];
    for (unsigned k = 0; k < BATCHES; k++)
        base[k] = UINT64_MAX;
    struct vsc *p = prep_login_on(&cl, via, 30000);
    uint64_t killed_at = 0, first_after = 0;
    for (unsigned k = 0; k < BATCHES; k++) {
        if (k == KILL_AT) {
            ck_assert_int_gt(vs_node_kill(&cl.node[primary]), -1);
            killed_at = prep_now_ms();
        }
        int rc = prep_send_batch(p, "pk", "t", "k", k, &base[k]);
        ck_assert_msg(rc == 0, "batch %u: %d %s", k, rc, vsc_last_error(p));
        if (killed_at != 0 && first_after == 0)
            first_after = prep_now_ms();
    }
    vsc_destroy(p);
    fprintf(stderr,
            "partition failover: kill -> first acknowledged send %llu ms\n",
            (unsigned long long)(first_after - killed_at));

    size_t total = (size_t)BATCHES * PREP_BATCH; /* at least: resends may add */
    unsigned alive[2], na = 0;
    for (unsigned i = 0; i < 3; i++)
        if (i != primary)
            alive[na++] = i;
    for (unsigned x = 0; x < 2; x++) {
        prep_wait_history(&cl, alive[x], "pk", "t", total, &hist[alive[x]],
                          20000);
        prep_acked_once(&hist[alive[x]], "k", base, BATCHES);
    }
    /* the survivors agree on everything either has committed */
    size_t n0 = hist[alive[0]].n, n1 = hist[alive[1]].n;
    if (n0 != n1) {
        size_t want = n0 > n1 ? n0 : n1;
        prep_wait_history(&cl, alive[0], "pk", "t", want, &hist[alive[0]],
                          10000);
        prep_wait_history(&cl, alive[1], "pk", "t", want, &hist[alive[1]],
                          10000);
    }
    prep_same_history(&hist[alive[0]], &hist[alive[1]], alive[0], alive[1]);

    /* the killed node restarts, catches up, serves the same history */
    int rc = vs_cluster_start_node(&cl, primary, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "restart node %u: %d", primary, rc);
    uint64_t t0 = prep_now_ms();
    prep_wait_history(&cl, primary, "pk", "t", hist[alive[0]].n, &hist[primary],
                      30000);
    fprintf(stderr, "restarted node %u caught up %zu messages in %llu ms\n",
            primary, hist[primary].n, (unsigned long long)(prep_now_ms() - t0));
    prep_same_history(&hist[alive[0]], &hist[primary], alive[0], primary);
}
END_TEST

static Suite *
preplica_suite(void)
{
    Suite *s = suite_create("cluster_preplica");
    TCase *t = tcase_create("everywhere");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 180);
    tcase_add_test(t, test_sends_through_every_node);
    suite_add_tcase(s, t);
    TCase *k = tcase_create("kill_primary");
    tcase_add_checked_fixture(k, setup, teardown);
    tcase_set_timeout(k, 240);
    tcase_add_test(k, test_kill_group_primary);
    suite_add_tcase(s, k);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(preplica_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
