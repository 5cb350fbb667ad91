/*
 * tests/integration/check_e2e_groups.c - consumer groups and consumer
 * offsets through a real vstreamd (two data shards).
 *
 *  - 3 consumers join a group on a 6-partition topic: SyncGroup gives
 *    each 2 distinct partitions covering all 6; one leaves, and one is
 *    killed (its socket closed without a LeaveGroup: the data shard's
 *    FWD_CLOSED makes shard 0 propose RemoveConsumerGroupMember): the
 *    remaining members take over every partition.
 *  - With auto-commit, 3 consumers drain 120 messages; one consumer is
 *    restarted (closed, a new client joins) in the middle: no message is
 *    read twice by the group and every message is read.
 *  - Consumer offsets (single consumer and group) survive a node restart.
 *  - The CLI: group create/list/get/delete, poll --group.
 * Every wait is a bounded retry loop (count and wall time).
 */
#include "config.h"

#include <check.h>
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
    e2e_start(&node, 2, NULL);
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
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

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void
make_topic(struct vsc *c, uint32_t parts)
{
    OK(c, vsc_stream_create(c, "gs", NULL));
    OK(c, vsc_topic_create(c, &SID, parts, "t", NULL, 0, NULL));
    OK(c, vsc_group_create(c, &SID, &TID, "g", NULL));
}

/* SyncGroup of c: bitmask of its partitions (asserts membership). */
static uint32_t
synced(struct vsc *c)
{
    uint32_t *parts, mask = 0;
    size_t n;
    uint64_t gen;
    int member;
    OK(c, vsc_group_sync(c, &SID, &TID, &GID, &gen, &parts, &n, &member));
    ck_assert_int_eq(member, 1);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_lt(parts[i], 32);
        ck_assert_msg(!(mask & (1u << parts[i])), "partition twice");
        mask |= 1u << parts[i];
    }
    free(parts);
    return mask;
}

static int
popcount(uint32_t v)
{
    return __builtin_popcount(v);
}

/* Waits (bounded) until the members' masks are disjoint and cover `all`. */
static void
wait_cover(struct vsc **cs, size_t n, uint32_t all)
{
    for (int tries = 0; tries < 300; tries++) {
        uint32_t u = 0;
        int disjoint = 1;
        for (size_t i = 0; i < n; i++) {
            uint32_t m = synced(cs[i]);
            if (u & m)
                disjoint = 0;
            u |= m;
        }
        if (disjoint && u == all)
            return;
        sleep_ms(50);
    }
    ck_abort_msg("the group never covered every partition");
}

START_TEST(test_three_members_leave_and_kill)
{
    struct vsc *c[3];
    struct vsc_group g;
    int found;
    for (int i = 0; i < 3; i++)
        c[i] = e2e_login(&node, "iggy", "iggy");
    make_topic(c[0], 6);
    for (int i = 0; i < 3; i++)
        OK(c[i], vsc_group_join(c[i], &SID, &TID, &GID));
    uint32_t u = 0;
    for (int i = 0; i < 3; i++) {
        uint32_t m = synced(c[i]);
        ck_assert_int_eq(popcount(m), 2);
        ck_assert_uint_eq(u & m, 0);
        u |= m;
    }
    ck_assert_uint_eq(u, 0x3f);
    OK(c[0], vsc_group_get(c[0], &SID, &TID, &GID, &g, &found));
    ck_assert_int_eq(found, 1);
    ck_assert_uint_eq(g.members_count, 3);
    vsc_group_fini(&g);

    /* c[2] leaves */
    OK(c[2], vsc_group_leave(c[2], &SID, &TID, &GID));
    {
        uint64_t gen;
        uint32_t *parts;
        size_t n;
        int member;
        OK(c[2],
           vsc_group_sync(c[2], &SID, &TID, &GID, &gen, &parts, &n, &member));
        ck_assert_int_eq(member, 0);
    }
    wait_cover(c, 2, 0x3f);

    /* c[1] is killed: its socket closes without a LeaveGroup */
    vsc_destroy(c[1]);
    wait_cover(c, 1, 0x3f);
    ck_assert_uint_eq(synced(c[0]), 0x3f);
    OK(c[0], vsc_group_get(c[0], &SID, &TID, &GID, &g, &found));
    ck_assert_uint_eq(g.members_count, 1);
    vsc_group_fini(&g);
    vsc_destroy(c[0]);
    vsc_destroy(c[2]);
}
END_TEST

/* Polls every assigned partition once with auto-commit; records reads. */
static size_t
group_round(struct vsc *c, uint8_t *seen, uint32_t per_part, int *dups)
{
    uint32_t *parts;
    size_t n, got = 0;
    uint64_t gen;
    int member;
    OK(c, vsc_group_sync(c, &SID, &TID, &GID, &gen, &parts, &n, &member));
    for (size_t i = 0; i < n; i++) {
        struct vsc_poll_args a;
        struct vsc_polled r;
        memset(&a, 0, sizeof a);
        a.consumer = vsc_consumer_group(&GID);
        a.has_partition = 1;
        a.partition_id = parts[i];
        a.strategy = VSC_POLL_NEXT;
        a.count = 4;
        a.auto_commit = 1;
        OK(c, vsc_poll(c, &SID, &TID, &a, &r));
        for (size_t k = 0; k < r.n; k++) {
            size_t at = (size_t)parts[i] * per_part + r.msgs[k].offset;
            ck_assert_uint_lt(r.msgs[k].offset, per_part);
            if (seen[at])
                (*dups)++;
            seen[at] = 1;
            got++;
        }
        vsc_polled_fini(&r);
    }
    free(parts);
    return got;
}

START_TEST(test_auto_commit_no_double_reads)
{
    enum { PARTS = 6, PER = 20 };
    struct vsc *c[3];
    uint8_t seen[PARTS * PER];
    size_t total = 0;
    int dups = 0;
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < 3; i++)
        c[i] = e2e_login(&node, "iggy", "iggy");
    make_topic(c[0], PARTS);
    for (uint32_t p = 0; p < PARTS; p++) {
        struct vsc_msg m[PER];
        struct vsc_partitioning part = vsc_part_id(p);
        char txt[PER][16];
        memset(m, 0, sizeof m);
        for (int k = 0; k < PER; k++) {
            snprintf(txt[k], sizeof txt[k], "p%u-%d", p, k);
            m[k].payload = txt[k];
            m[k].payload_len = (uint32_t)strlen(txt[k]);
        }
        OK(c[0], vsc_send(c[0], &SID, &TID, &part, m, PER, NULL));
    }
    for (int i = 0; i < 3; i++)
        OK(c[i], vsc_group_join(c[i], &SID, &TID, &GID));
    for (int round = 0; round < 200 && total < PARTS * PER; round++) {
        for (int i = 0; i < 3; i++)
            total += group_round(c[i], seen, PER, &dups);
        if (round == 2) {
            /* restart consumer 1: a new client joins in its place */
            vsc_destroy(c[1]);
            c[1] = e2e_login(&node, "iggy", "iggy");
            OK(c[1], vsc_group_join(c[1], &SID, &TID, &GID));
        }
    }
    ck_assert_int_eq(dups, 0);
    ck_assert_uint_eq(total, PARTS * PER);
    for (size_t i = 0; i < sizeof seen; i++)
        ck_assert_uint_eq(seen[i], 1);
    for (int i = 0; i < 3; i++)
        vsc_destroy(c[i]);
}
END_TEST

START_TEST(test_offsets_survive_restart)
{
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    struct vsc_id cname = vsc_id_name("reader-1");
    struct vsc_consumer single = vsc_consumer_single(&cname);
    struct vsc_consumer grp = vsc_consumer_group(&GID);
    struct vsc_partitioning p0 = vsc_part_id(0), p1 = vsc_part_id(1);
    struct vsc_msg m[5];
    struct vsc_offset o;
    int found;
    memset(m, 0, sizeof m);
    make_topic(c, 2);
    OK(c, vsc_send(c, &SID, &TID, &p0, m, 5, NULL));
    OK(c, vsc_send(c, &SID, &TID, &p1, m, 5, NULL));
    OK(c, vsc_offset_store(c, &single, &SID, &TID, 1, 0, 3));
    OK(c, vsc_group_join(c, &SID, &TID, &GID));
    OK(c, vsc_offset_store(c, &grp, &SID, &TID, 1, 1, 2));
    vsc_destroy(c);

    ck_assert_int_eq(vs_node_stop(&node, 20000), 0);
    e2e_start(&node, 2, NULL);
    c = e2e_login(&node, "iggy", "iggy");
    OK(c, vsc_offset_get(c, &single, &SID, &TID, 1, 0, &o, &found));
    ck_assert_int_eq(found, 1);
    ck_assert_uint_eq(o.stored_offset, 3);
    ck_assert_uint_eq(o.current_offset, 4);
    OK(c, vsc_offset_get(c, &grp, &SID, &TID, 1, 1, &o, &found));
    ck_assert_int_eq(found, 1);
    ck_assert_uint_eq(o.stored_offset, 2);
    /* nothing stored for the other partition */
    OK(c, vsc_offset_get(c, &single, &SID, &TID, 1, 1, &o, &found));
    ck_assert_int_eq(found, 0);
    vsc_destroy(c);
}
END_TEST

static int
cli(char *out, size_t cap, const char *const *args)
{
    static char err[4096];
    int rc = e2e_cli(&node, "iggy", NULL, out, cap, err, sizeof err, args);
    if (rc != 0)
        fprintf(stderr, "cli rc %d: %s\n", rc, err);
    return rc;
}

START_TEST(test_cli_groups)
{
    static char out[65536];
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    struct vsc_partitioning p = vsc_part_balanced();
    struct vsc_msg m[4];
    struct vsc_sent s1, s2;
    memset(m, 0, sizeof m);
    for (int i = 0; i < 4; i++) {
        m[i].payload = "x";
        m[i].payload_len = 1;
    }
    OK(c, vsc_stream_create(c, "gs", NULL));
    OK(c, vsc_topic_create(c, &SID, 2, "t", NULL, 0, NULL));
    /* balanced: one batch per partition, round robin */
    OK(c, vsc_send(c, &SID, &TID, &p, m, 2, &s1));
    OK(c, vsc_send(c, &SID, &TID, &p, m + 2, 2, &s2));
    ck_assert_uint_ne(s1.partition_id, s2.partition_id);
    const char *create[] = {"group", "create", "gs", "t", "cg", "--json", NULL};
    ck_assert_int_eq(cli(out, sizeof out, create), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"name\":\"cg\""));
    ck_assert_ptr_nonnull(strstr(out, "\"members_count\":0"));
    const char *list[] = {"group", "list", "gs", "t", NULL};
    ck_assert_int_eq(cli(out, sizeof out, list), 0);
    ck_assert_ptr_nonnull(strstr(out, " cg\n"));
    /* poll --group: join, sync, poll its partitions, leave */
    const char *poll[] = {"poll",          "gs",     "t", "--group", "cg",
                          "--auto-commit", "--json", NULL};
    ck_assert_int_eq(cli(out, sizeof out, poll), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"partition_id\":0"));
    ck_assert_ptr_nonnull(strstr(out, "\"partition_id\":1"));
    /* everything was committed: a second group poll reads nothing */
    ck_assert_int_eq(cli(out, sizeof out, poll), 0);
    ck_assert_str_eq(out, "{\"messages\":[]}\n");
    const char *get[] = {"group", "get", "gs", "t", "cg", "--json", NULL};
    ck_assert_int_eq(cli(out, sizeof out, get), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"members_count\":0"));
    const char *del[] = {"group", "delete", "gs", "t", "cg", NULL};
    ck_assert_int_eq(cli(out, sizeof out, del), 0);
    ck_assert_int_eq(cli(out, sizeof out, get), 2);
    vsc_destroy(c);
}
END_TEST

static Suite *
e2e_groups_suite(void)
{
    Suite *s = suite_create("e2e_groups");
    TCase *tc = tcase_create("groups");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_three_members_leave_and_kill);
    tcase_add_test(tc, test_auto_commit_no_double_reads);
    tcase_add_test(tc, test_offsets_survive_restart);
    tcase_add_test(tc, test_cli_groups);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(e2e_groups_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
