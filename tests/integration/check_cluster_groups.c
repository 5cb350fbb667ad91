/*
 * tests/integration/check_cluster_groups.c - consumer groups on a real
 * 3-node cluster behave as on one node: members joined through two
 * different backups are visible (membership, disjoint assignment
 * covering every partition) on every node; a member continues on the
 * leader's node with its client id and keeps its partitions; the offsets
 * it stores are read back at once by handles that started on every node
 * (with partition replication, on a node that is not the partition
 * group's primary too); a member leaving through its
 * backup hands its partitions over on every node. Liveness across
 * nodes (shard/zero/groups0.h "Cluster rules"): a member on a backup
 * whose connection closes, or whose node is SIGKILLed, and a member of a
 * SIGKILLed leader's node that never comes back, are removed within a
 * bounded time, while the live members keep theirs throughout (after a
 * failover too: a member on a backup outlives the new primary's lease).
 */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
    static const char *const extra[] = {"--group-heartbeat-interval-ms", "5000",
                                        NULL};
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

#define OK(c, call)                                                            \
    do {                                                                       \
        int rc_ = (call);                                                      \
        ck_assert_msg(rc_ == 0, "%s -> %d: %s", #call, rc_,                    \
                      vsc_last_error(c));                                      \
    } while (0)

static const struct vsc_id SID = {2, 0, "gs"};
static const struct vsc_id TID = {2, 0, "t"};
static const struct vsc_id GID = {2, 0, "g"};

#define PARTS 4u
#define ALL   ((1u << PARTS) - 1u)

/* SyncGroup of c: bitmask of its partitions, -1 if not a member. */
static int64_t
synced(struct vsc *c)
{
    uint32_t *parts;
    size_t n;
    uint64_t gen;
    int member;
    OK(c, vsc_group_sync(c, &SID, &TID, &GID, &gen, &parts, &n, &member));
    uint32_t mask = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_lt(parts[i], PARTS);
        ck_assert_msg(!(mask & (1u << parts[i])), "partition twice");
        mask |= 1u << parts[i];
    }
    free(parts);
    return member ? (int64_t)mask : -1;
}

/* Members of the group as node i's handle c reads it, -1 if unknown. */
static int64_t
members_on(struct vsc *c)
{
    struct vsc_group g;
    int found = 0;
    if (vsc_group_get(c, &SID, &TID, &GID, &g, &found) != 0 || !found)
        return -1;
    int64_t n = g.members_count;
    vsc_group_fini(&g);
    return n;
}

/* Waits (bounded) until node handle c reads `want` members. */
static void
wait_members(struct vsc *c, unsigned node, int64_t want, uint32_t ms)
{
    uint64_t end = now_ms() + ms;
    int64_t got = -1;
    while ((got = members_on(c)) != want && now_ms() < end)
        usleep(50 * 1000);
    ck_assert_msg(got == want, "node %u reads %lld members, want %lld", node,
                  (long long)got, (long long)want);
}

/* A handle starting on node i that follows the leader. */
static struct vsc *
follower_handle(unsigned i, struct vs_u128 *client)
{
    struct vsc_opts o;
    memset(&o, 0, sizeof(o));
    o.addr = cl.client[i];
    o.io_timeout_ms = 10000;
    o.connect_timeout_ms = 2000;
    struct vsc *c = vsc_create(&o);
    ck_assert_ptr_nonnull(c);
    if (client != NULL)
        vsc_set_client_id(c, *client);
    OK(c, vsc_login(c, "iggy", "iggy", NULL));
    ck_assert_str_eq(vsc_addr(c), cl.client[0]); /* moved to the leader */
    return c;
}

/* Stream, topic of PARTS partitions with 3 messages each, group; members
 * a (through node 1) and b (through node 2) joined; returns lead's
 * handle and the members' masks. */
static struct vsc *
make_group(struct vsc **a, struct vsc **b, int64_t *ma, int64_t *mb)
{
    struct vsc *lead = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(lead);
    OK(lead, vsc_stream_create(lead, "gs", NULL));
    OK(lead, vsc_topic_create(lead, &SID, PARTS, "t", NULL, 0, NULL));
    OK(lead, vsc_group_create(lead, &SID, &TID, "g", NULL));
    for (uint32_t p = 0; p < PARTS; p++) {
        const char *msgs[] = {"m0", "m1", "m2"};
        for (int k = 0; k < 3; k++) {
            struct vsc_msg m;
            memset(&m, 0, sizeof(m));
            m.payload = (const uint8_t *)msgs[k];
            m.payload_len = 2;
            struct vsc_partitioning pp = vsc_part_id(p);
            struct vsc_sent sent;
            OK(lead, vsc_send(lead, &SID, &TID, &pp, &m, 1, &sent));
        }
    }
    *a = vs_cluster_login(&cl, 1, 20000);
    *b = vs_cluster_login(&cl, 2, 20000);
    ck_assert_ptr_nonnull(*a);
    ck_assert_ptr_nonnull(*b);
    OK(*a, vsc_group_join(*a, &SID, &TID, &GID));
    OK(*b, vsc_group_join(*b, &SID, &TID, &GID));
    wait_members(lead, 0, 2, 10000);
    wait_members(*a, 1, 2, 10000);
    wait_members(*b, 2, 2, 10000);
    *ma = synced(*a);
    *mb = synced(*b);
    ck_assert_int_ge(*ma, 1);
    ck_assert_int_ge(*mb, 1);
    ck_assert_uint_eq((uint64_t)*ma & (uint64_t)*mb, 0);
    ck_assert_uint_eq((uint64_t)*ma | (uint64_t)*mb, ALL);
    return lead;
}

/* Waits (bounded) until c alone holds every partition and lead reads one
 * member. */
static void
wait_sole_member(struct vsc *lead, struct vsc *c, const char *what)
{
    uint64_t end = now_ms() + 30000;
    int64_t m = -1, n = -1;
    while (now_ms() < end) {
        m = synced(c);
        n = members_on(lead);
        if (m == ALL && n == 1)
            return;
        usleep(100 * 1000);
    }
    ck_abort_msg("%s: the remaining member holds %llx, %lld members", what,
                 (unsigned long long)m, (long long)n);
}

START_TEST(test_group_across_nodes)
{
    struct vsc *a, *b;
    int64_t ma, mb;
    struct vsc *lead = make_group(&a, &b, &ma, &mb);

    /* A goes on on the leader's node with its client id: the same member
     * with the same partitions; it polls and stores an offset on each */
    struct vs_u128 aid = vsc_client_id(a);
    struct vsc *a2 = follower_handle(1, &aid);
    ck_assert_int_eq(synced(a2), ma);
    wait_members(lead, 0, 2, 10000);
    for (uint32_t p = 0; p < PARTS; p++) {
        if (!((uint64_t)ma & (1u << p)))
            continue;
        struct vsc_poll_args pa;
        memset(&pa, 0, sizeof(pa));
        pa.consumer = vsc_consumer_group(&GID);
        pa.has_partition = 1;
        pa.partition_id = p;
        pa.strategy = VSC_POLL_FIRST;
        pa.count = 2;
        struct vsc_polled r;
        OK(a2, vsc_poll(a2, &SID, &TID, &pa, &r));
        ck_assert_uint_eq(r.n, 2);
        vsc_polled_fini(&r);
        struct vsc_consumer gc = vsc_consumer_group(&GID);
        OK(a2, vsc_offset_store(a2, &gc, &SID, &TID, 1, p, 1));
    }
    /* the stored offsets, read by handles that started on every node */
    for (unsigned i = 0; i < 3; i++) {
        struct vsc *r = follower_handle(i, NULL);
        for (uint32_t p = 0; p < PARTS; p++) {
            struct vsc_consumer gc = vsc_consumer_group(&GID);
            struct vsc_offset off;
            int found = 0;
            OK(r, vsc_offset_get(r, &gc, &SID, &TID, 1, p, &off, &found));
            if ((uint64_t)ma & (1u << p)) {
                ck_assert_int_eq(found, 1);
                ck_assert_uint_eq(off.stored_offset, 1);
            } else {
                ck_assert_int_eq(found, 0);
            }
        }
        vsc_destroy(r);
    }

    /* B leaves through its backup: A (on the leader) gets everything */
    OK(b, vsc_group_leave(b, &SID, &TID, &GID));
    wait_sole_member(lead, a2, "after B left");
    for (unsigned i = 1; i < 3; i++) {
        struct vsc *r = vs_cluster_login(&cl, i, 20000);
        ck_assert_ptr_nonnull(r);
        wait_members(r, i, 1, 10000);
        vsc_destroy(r);
    }
    vsc_destroy(a2);
    vsc_destroy(b);
    vsc_destroy(a);
    vsc_destroy(lead);
}
END_TEST

/* Liveness of members whose connection is on a backup: a closed
 * connection (an event to the primary), then a SIGKILLed node (its link
 * down past the liveness timeout, 1.2 x 5000 ms here). */
START_TEST(test_backup_member_liveness)
{
    struct vsc *a, *b;
    int64_t ma, mb;
    struct vsc *lead = make_group(&a, &b, &ma, &mb);
    /* B's connection (node 2) closes without a LeaveGroup */
    vsc_destroy(b);
    wait_sole_member(lead, a, "after B's connection closed");
    /* B joins again through node 2, whose node then dies */
    b = vs_cluster_login(&cl, 2, 20000);
    ck_assert_ptr_nonnull(b);
    OK(b, vsc_group_join(b, &SID, &TID, &GID));
    wait_members(lead, 0, 2, 10000);
    e2e_kill_node(&cl.node[2]);
    wait_sole_member(lead, a, "after B's node died");
    vsc_destroy(b);
    vsc_destroy(a);
    vsc_destroy(lead);
}
END_TEST

/* SyncGroup of c without asserting (a node may answer a transient error
 * during a view change): its mask, -1 if not a member, -2 on an error. */
static int64_t
synced_try(struct vsc *c)
{
    uint32_t *parts;
    size_t n;
    uint64_t gen;
    int member;
    if (vsc_group_sync(c, &SID, &TID, &GID, &gen, &parts, &n, &member) != 0)
        return -2;
    uint32_t mask = 0;
    for (size_t i = 0; i < n; i++)
        mask |= 1u << parts[i];
    free(parts);
    return member ? (int64_t)mask : -1;
}

/* Members A and B on the leader's node (they followed it), D on backup
 * 2; the leader dies. A follows the new leader (its handle reconnects
 * with its client id), B never comes back: B must be removed (unclaimed
 * past the new primary's lease), while D, whose connection lives on a
 * backup the new primary knows no binding for, is claimed by its node
 * and never loses its membership; A and D end up with every partition. */
START_TEST(test_leader_death_member_liveness)
{
    struct vsc *lead = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(lead);
    OK(lead, vsc_stream_create(lead, "gs", NULL));
    OK(lead, vsc_topic_create(lead, &SID, PARTS, "t", NULL, 0, NULL));
    OK(lead, vsc_group_create(lead, &SID, &TID, "g", NULL));
    struct vsc *a = follower_handle(1, NULL);
    struct vsc *b = follower_handle(2, NULL);
    struct vsc *d = vs_cluster_login(&cl, 2, 20000);
    ck_assert_ptr_nonnull(d);
    OK(a, vsc_group_join(a, &SID, &TID, &GID));
    OK(b, vsc_group_join(b, &SID, &TID, &GID));
    OK(d, vsc_group_join(d, &SID, &TID, &GID));
    wait_members(lead, 0, 3, 10000);
    wait_members(d, 2, 3, 10000);
    vsc_destroy(lead);
    e2e_kill_node(&cl.node[0]);
    vsc_destroy(b); /* B is gone with the old leader */
    struct vsc *r = vs_cluster_login(&cl, 1, 30000);
    ck_assert_ptr_nonnull(r);
    uint64_t end = now_ms() + 30000, done = 0;
    int64_t m = -1, md = -1, n = -1;
    while (now_ms() < end) {
        m = synced(a); /* reconnects to the new leader */
        md = synced_try(d);
        ck_assert_msg(md != -1, "D (alive on a backup) lost its membership");
        n = members_on(r);
        int settled =
            n == 2 && m >= 0 && md >= 0 && (m & md) == 0 && (m | md) == ALL;
        if (settled && done == 0)
            done = now_ms() + 1500; /* D must stay past B's removal */
        if (done != 0 && now_ms() >= done)
            break;
        usleep(200 * 1000);
    }
    ck_assert_msg(done != 0 && n == 2 && (m | md) == ALL,
                  "after the leader died: A holds %llx, D %llx, %lld members",
                  (unsigned long long)m, (unsigned long long)md, (long long)n);
    vsc_destroy(r);
    vsc_destroy(d);
    vsc_destroy(a);
}
END_TEST

static Suite *
groups_suite(void)
{
    Suite *s = suite_create("cluster_groups");
    TCase *t = tcase_create("three_nodes");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_group_across_nodes);
    tcase_add_test(t, test_backup_member_liveness);
    tcase_add_test(t, test_leader_death_member_liveness);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(groups_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
