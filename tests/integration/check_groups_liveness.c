/*
 * tests/integration/check_groups_liveness.c - consumer-group liveness on
 * a real vstreamd (two data shards, a small group_heartbeat_interval_ms):
 *  - heartbeat loss: a member that stays connected but sends nothing for
 *    1.2 x the interval is evicted (StaleClient) and loses its partitions
 *    to the member that keeps pinging (which keeps its own throughout);
 *  - a client that reconnects to the other data shard (same client id,
 *    new Register) and keeps pinging stays a member although its old
 *    connection is silent;
 *  - cooperative rebalance: a partition polled without commit becomes a
 *    pending revocation on a join; it moves as soon as the revoking
 *    member commits what it polled (the node logs the early completion),
 *    and, in another group where it never commits, after the
 *    rebalancing timeout (= the interval; logged as such).
 * Every wait is a bounded retry loop (count and wall time); no assertion
 * depends on how long something took.
 */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/integration/e2e.h"

static struct vs_node node;

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
}

static void
start(const char *interval_ms)
{
    const char *extra[] = {"--group-heartbeat-interval-ms", interval_ms, NULL};
    e2e_start(&node, 2, extra);
}

#define OK(c, call)                                                            \
    do {                                                                       \
        int rc_ = (call);                                                      \
        ck_assert_msg(rc_ == 0, "%s -> %d: %s", #call, rc_,                    \
                      vsc_last_error(c));                                      \
    } while (0)

static const struct vsc_id SID = {2, 0, "ls"};
static const struct vsc_id TID = {2, 0, "t"};
static const struct vsc_id GID = {2, 0, "g"};
static const struct vsc_id GID2 = {2, 0, "g2"};

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void
make_topic(struct vsc *c, uint32_t parts)
{
    OK(c, vsc_stream_create(c, "ls", NULL));
    OK(c, vsc_topic_create(c, &SID, parts, "t", NULL, 0, NULL));
    OK(c, vsc_group_create(c, &SID, &TID, "g", NULL));
}

/* SyncGroup: bitmask of c's partitions; *member 0/1. */
static uint32_t
synced_g(struct vsc *c, const struct vsc_id *g, int *member)
{
    uint32_t *parts, mask = 0;
    size_t n;
    uint64_t gen;
    OK(c, vsc_group_sync(c, &SID, &TID, g, &gen, &parts, &n, member));
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_lt(parts[i], 32);
        mask |= 1u << parts[i];
    }
    free(parts);
    return mask;
}

static uint32_t
synced(struct vsc *c)
{
    int member;
    uint32_t m = synced_g(c, &GID, &member);
    ck_assert_int_eq(member, 1);
    return m;
}

/* The data shard slot of c's connection (client id = counter<<9|slot). */
static uint32_t
slot_of(struct vsc *c)
{
    struct vsc_client_info me;
    OK(c, vsc_me(c, &me));
    return me.client_id & 0x1ffu;
}

/* 1 if the node's log holds `needle`. */
static int
log_has(const char *needle)
{
    FILE *f = fopen(node.log_file, "r");
    if (f == NULL)
        return 0;
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f) != NULL)
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

START_TEST(test_silent_member_loses_partitions)
{
    start("1000"); /* limit 1.2 s */
    struct vsc *adm = e2e_login(&node, "iggy", "iggy");
    struct vsc *a = e2e_login(&node, "iggy", "iggy");
    struct vsc *b = e2e_login(&node, "iggy", "iggy");
    make_topic(adm, 4);
    OK(a, vsc_group_join(a, &SID, &TID, &GID));
    OK(b, vsc_group_join(b, &SID, &TID, &GID));
    uint32_t ma = synced(a), mb = synced(b);
    ck_assert_int_eq(__builtin_popcount(ma), 2);
    ck_assert_uint_eq(ma | mb, 0xf);
    ck_assert_uint_eq(ma & mb, 0);
    /* a goes silent (connected); b pings and keeps its partitions */
    int took = 0;
    for (int i = 0; i < 200 && !took; i++) {
        OK(b, vsc_ping(b));
        sleep_ms(100);
        if (i % 3 == 2) {
            uint32_t m = synced(b);
            ck_assert_uint_eq(m & mb, mb); /* never lost its own */
            took = m == 0xf;
        }
    }
    ck_assert_msg(took, "the silent member was never removed");
    /* a's session ended with its memberships: its next call reads the
     * StaleClient eviction (30); it logs in again on a new session */
    ck_assert_int_eq(vsc_ping(a), 30);
    OK(a, vsc_login(a, "iggy", "iggy", NULL));
    int member = 1;
    uint32_t m = synced_g(a, &GID, &member);
    ck_assert_int_eq(member, 0);
    ck_assert_uint_eq(m, 0);
    struct vsc_group g;
    int found;
    OK(b, vsc_group_get(b, &SID, &TID, &GID, &g, &found));
    ck_assert_int_eq(found, 1);
    ck_assert_uint_eq(g.members_count, 1);
    vsc_group_fini(&g);
    ck_assert(log_has("silent for"));
    ck_assert(log_has("evicted (StaleClient), its memberships released"));
    /* b, still pinging for more than the limit, stays a member (a pings
     * too now, as an SDK does, and keeps its new session) */
    for (int i = 0; i < 25; i++) {
        OK(b, vsc_ping(b));
        OK(a, vsc_ping(a));
        sleep_ms(100);
    }
    ck_assert_uint_eq(synced(b), 0xf);
    /* a may join again (the SDK does on an empty Sync) */
    OK(a, vsc_group_join(a, &SID, &TID, &GID));
    ck_assert_int_eq(__builtin_popcount(synced(a)), 2);
    vsc_destroy(a);
    vsc_destroy(b);
    vsc_destroy(adm);
}
END_TEST

START_TEST(test_reconnect_other_shard_keeps_member)
{
    start("1000");
    struct vsc *adm = e2e_login(&node, "iggy", "iggy");
    struct vsc *a = e2e_login(&node, "iggy", "iggy");
    make_topic(adm, 2);
    OK(a, vsc_group_join(a, &SID, &TID, &GID));
    ck_assert_uint_eq(synced(a), 0x3);
    uint32_t slot = slot_of(a);
    /* The same client reconnects on the OTHER data shard. Which shard
     * accepts a connection is the kernel's choice (both watch the one
     * listener), so stop the shard `a` is on: only the other can accept.
     * It is continued right after, so its report of the old, silent
     * connection happens (and must be ignored: the binding moved). */
    ck_assert_uint_lt(slot, node.ready.n_shard_pids);
    pid_t old_shard = node.ready.shard_pids[slot];
    ck_assert_int_eq(kill(old_shard, SIGSTOP), 0);
    struct vsc *a2 = e2e_connect(&node);
    vsc_set_client_id(a2, vsc_client_id(a));
    OK(a2, vsc_login(a2, "iggy", "iggy", NULL));
    ck_assert_uint_ne(slot_of(a2), slot);
    ck_assert_int_eq(kill(old_shard, SIGCONT), 0);
    /* the old connection stays open and silent; a2 pings for more than
     * three limits and stays a member with every partition */
    for (int i = 0; i < 40; i++) {
        OK(a2, vsc_ping(a2));
        OK(adm, vsc_ping(adm));
        sleep_ms(100);
    }
    ck_assert_uint_eq(synced(a2), 0x3);
    struct vsc_group g;
    int found;
    OK(a2, vsc_group_get(a2, &SID, &TID, &GID, &g, &found));
    ck_assert_uint_eq(g.members_count, 1);
    vsc_group_fini(&g);
    ck_assert(!log_has("silent for"));
    /* a2 goes silent as well: now the member is removed */
    int gone = 0;
    for (int i = 0; i < 100 && !gone; i++) {
        sleep_ms(100);
        OK(adm, vsc_group_get(adm, &SID, &TID, &GID, &g, &found));
        gone = g.members_count == 0;
        vsc_group_fini(&g);
    }
    ck_assert_msg(gone, "the silent reconnected member was never removed");
    vsc_destroy(a2);
    vsc_destroy(a);
    vsc_destroy(adm);
}
END_TEST

/* Sends n one-byte messages to partition p. */
static void
send_n(struct vsc *c, uint32_t p, uint32_t n)
{
    struct vsc_msg m[16];
    ck_assert_uint_le(n, 16);
    memset(m, 0, sizeof(m));
    for (uint32_t i = 0; i < n; i++) {
        m[i].payload = "x";
        m[i].payload_len = 1;
    }
    struct vsc_partitioning pt = vsc_part_id(p);
    OK(c, vsc_send(c, &SID, &TID, &pt, m, n, NULL));
}

/* c polls partition p for group g from offset 0 (count 5, no commit):
 * returns the last offset polled. */
static uint64_t
poll_uncommitted(struct vsc *c, const struct vsc_id *g, uint32_t p)
{
    struct vsc_poll_args pa;
    memset(&pa, 0, sizeof(pa));
    pa.consumer = vsc_consumer_group(g);
    pa.has_partition = 1;
    pa.partition_id = p;
    pa.strategy = VSC_POLL_OFFSET;
    pa.value = 0;
    pa.count = 5;
    struct vsc_polled out;
    OK(c, vsc_poll(c, &SID, &TID, &pa, &out));
    ck_assert_uint_eq(out.partition_id, p);
    ck_assert_uint_eq(out.n, 5);
    uint64_t last = out.msgs[out.n - 1].offset;
    vsc_polled_fini(&out);
    return last;
}

/* a owns {0,1} of group g and polled partition 1 without committing; b
 * joins: partition 1 must be a pending revocation (neither member's Sync
 * lists it). Retries (bounded) in case the in-flight report had not
 * reached shard 0 when b joined. Returns the last offset a polled. */
static uint64_t
pending_revocation(struct vsc *a, struct vsc *b, const struct vsc_id *g)
{
    int member;
    for (int attempt = 0; attempt < 5; attempt++) {
        OK(a, vsc_group_join(a, &SID, &TID, g));
        ck_assert_uint_eq(synced_g(a, g, &member), 0x3);
        uint64_t last = poll_uncommitted(a, g, 1);
        for (int i = 0; i < 10 * (attempt + 1); i++) { /* report settles */
            OK(a, vsc_ping(a));
            OK(b, vsc_ping(b));
            sleep_ms(100);
        }
        OK(b, vsc_group_join(b, &SID, &TID, g));
        uint32_t ma = synced_g(a, g, &member);
        uint32_t mb = synced_g(b, g, &member);
        ck_assert_int_eq(member, 1);
        if (ma == 0x1 && mb == 0)
            return last;
        /* it moved at once: start over */
        ck_assert_uint_eq(ma | mb, 0x3);
        OK(b, vsc_group_leave(b, &SID, &TID, g));
    }
    ck_abort_msg("partition 1 never became a pending revocation");
    return 0;
}

START_TEST(test_cooperative_revocation)
{
    start("4000"); /* limit 4.8 s; rebalancing timeout 4 s */
    struct vsc *adm = e2e_login(&node, "iggy", "iggy");
    struct vsc *a = e2e_login(&node, "iggy", "iggy");
    struct vsc *b = e2e_login(&node, "iggy", "iggy");
    make_topic(adm, 2);
    OK(adm, vsc_group_create(adm, &SID, &TID, "g2", NULL));
    send_n(adm, 0, 10);
    send_n(adm, 1, 10);

    /* early: a commits what it polled */
    uint64_t last = pending_revocation(a, b, &GID);
    struct vsc_consumer cg = vsc_consumer_group(&GID);
    OK(a, vsc_offset_store(a, &cg, &SID, &TID, 1, 1, last));
    int moved = 0;
    for (int i = 0; i < 200 && !moved; i++) {
        sleep_ms(50);
        OK(a, vsc_ping(a));
        moved = synced(b) == 0x2;
    }
    ck_assert_msg(moved, "the revocation never completed");
    ck_assert_uint_eq(synced(a), 0x1);
    ck_assert(log_has("the revoking member committed what it polled"));
    ck_assert(!log_has("after the rebalancing timeout"));

    /* fallback: in g2, a never commits; both stay active */
    pending_revocation(a, b, &GID2);
    moved = 0;
    int member;
    for (int i = 0; i < 400 && !moved; i++) {
        sleep_ms(50);
        OK(a, vsc_ping(a));
        moved = synced_g(b, &GID2, &member) == 0x2;
    }
    ck_assert_msg(moved, "the revocation never timed out");
    ck_assert_uint_eq(synced_g(a, &GID2, &member), 0x1);
    ck_assert(log_has("after the rebalancing timeout"));
    vsc_destroy(a);
    vsc_destroy(b);
    vsc_destroy(adm);
}
END_TEST

static Suite *
liveness_suite(void)
{
    Suite *s = suite_create("groups_liveness");
    TCase *tc = tcase_create("node");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_silent_member_loses_partitions);
    tcase_add_test(tc, test_reconnect_other_shard_keeps_member);
    tcase_add_test(tc, test_cooperative_revocation);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(liveness_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
