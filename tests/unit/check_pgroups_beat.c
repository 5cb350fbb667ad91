/*
 * tests/unit/check_pgroups_beat.c - the partition groups' coalesced
 * heartbeats (shard/serve/pbeat.h over shard/link/beat.h and
 * coalesce.h), with real engines on three in-process nodes
 * (tests/unit/beatnet.h):
 *   - a Commit / Pong frame becomes an entry and is rebuilt byte for
 *     byte; every other frame, or one with a field the entry does not
 *     carry, is refused (it travels as a frame of its own);
 *   - hundreds of idle groups cost one beat frame per link per tick at
 *     most, and no backup's view-change timeout fires for a healthy
 *     primary over several timeouts;
 *   - commits reach the backups through the entries;
 *   - a group whose heartbeats are lost is taken over by a view change
 *     while its neighbours on the same links keep their primaries.
 * Every loop is bounded in ticks.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <string.h>

#include "common/checksum.h"
#include "common/wire.h"
#include "shard/link/beat.h"
#include "shard/serve/pbeat.h"
#include "shard/vsr/engine.h"
#include "tests/unit/beatnet.h"

static const struct vs_u128 cluster = {0xc1, 0xc2};

/* A Commit as the engine builds it (vsr_frame_init, send_heartbeat). */
static void
commit_frame(struct vs_hdr_commit *c)
{
    memset(c, 0, sizeof(*c));
    c->f.cluster = cluster;
    c->f.size = VS_HEADER_SIZE;
    c->f.view = 7;
    c->f.release = VS_WIRE_FORMAT_VERSION;
    c->f.command = VS_CMD_COMMIT;
    c->f.replica = 1;
    c->commit_checksum = (struct vs_u128){0x1234, 0x5678};
    c->timestamp_monotonic = 99;
    c->commit = 41;
    c->checkpoint_op = 32;
    c->group = UINT64_C(0xfeedface00000003);
    vs_frame_seal((struct vs_header *)c);
}

START_TEST(test_round_trip_exact)
{
    struct vs_hdr_commit c;
    commit_frame(&c);
    struct beat_entry e;
    ck_assert_int_eq(
        pbeat_from_frame(&c, sizeof(c), &cluster, VS_WIRE_FORMAT_VERSION, &e),
        0);
    ck_assert_uint_eq(e.kind, BEAT_KIND_COMMIT);
    ck_assert_uint_eq(e.group, c.group);
    ck_assert_uint_eq(e.member, 1);
    ck_assert_uint_eq(e.view, 7);
    ck_assert_uint_eq(e.commit, 41);
    ck_assert_uint_eq(e.op, 32);
    ck_assert_uint_eq(e.timestamp, 99);
    /* through a beat frame and back: the same 256 bytes */
    uint8_t buf[VS_HEADER_SIZE + BEAT_ENTRY_SIZE];
    struct beat_sender s = {.cluster = cluster,
                            .release = VS_WIRE_FORMAT_VERSION,
                            .replica = 2,
                            .shard = 1};
    ck_assert_int_eq(beat_encode(&s, 1, &e, 1, buf, sizeof(buf)),
                     (long)sizeof(buf));
    const struct beat_hdr *h;
    const uint8_t *body;
    ck_assert_int_eq(beat_decode(buf, sizeof(buf), &cluster, &h, &body), 0);
    struct beat_entry d;
    beat_entry_at(body, 0, &d);
    struct vs_header back;
    ck_assert_int_eq(pbeat_to_frame(&d, &cluster, h->f.release, &back), 0);
    ck_assert_int_eq(memcmp(&back, &c, sizeof(c)), 0);

    /* a Pong */
    struct vs_hdr_pong p;
    memset(&p, 0, sizeof(p));
    p.f.cluster = cluster;
    p.f.size = VS_HEADER_SIZE;
    p.f.view = 7;
    p.f.release = VS_WIRE_FORMAT_VERSION;
    p.f.command = VS_CMD_PONG;
    p.f.replica = 2;
    p.timestamp_monotonic = 99;
    p.commit_min = 40;
    p.group = c.group;
    vs_frame_seal((struct vs_header *)&p);
    ck_assert_int_eq(
        pbeat_from_frame(&p, sizeof(p), &cluster, VS_WIRE_FORMAT_VERSION, &e),
        0);
    ck_assert_uint_eq(e.kind, BEAT_KIND_ACK);
    ck_assert_uint_eq(e.commit, 40);
    ck_assert_int_eq(
        pbeat_to_frame(&e, &cluster, VS_WIRE_FORMAT_VERSION, &back), 0);
    ck_assert_int_eq(memcmp(&back, &p, sizeof(p)), 0);
}
END_TEST

START_TEST(test_refusals)
{
    struct vs_hdr_commit c, x;
    struct beat_entry e;
    commit_frame(&c);
    /* a reserved byte the entry does not carry, resealed */
    x = c;
    x.reserved[3] = 1;
    vs_frame_seal((struct vs_header *)&x);
    ck_assert_int_eq(
        pbeat_from_frame(&x, sizeof(x), &cluster, VS_WIRE_FORMAT_VERSION, &e),
        -ENOTSUP);
    /* the common header's reserved bytes */
    x = c;
    x.f.reserved_frame[0] = 1;
    vs_frame_seal((struct vs_header *)&x);
    ck_assert_int_eq(
        pbeat_from_frame(&x, sizeof(x), &cluster, VS_WIRE_FORMAT_VERSION, &e),
        -ENOTSUP);
    /* a broken seal, another cluster, another release, a body */
    x = c;
    x.commit++;
    ck_assert_int_eq(
        pbeat_from_frame(&x, sizeof(x), &cluster, VS_WIRE_FORMAT_VERSION, &e),
        -ENOTSUP);
    struct vs_u128 other = {0xc1, 0xc3};
    ck_assert_int_eq(
        pbeat_from_frame(&c, sizeof(c), &other, VS_WIRE_FORMAT_VERSION, &e),
        -ENOTSUP);
    ck_assert_int_eq(pbeat_from_frame(&c, sizeof(c), &cluster,
                                      VS_WIRE_FORMAT_VERSION + 1, &e),
                     -ENOTSUP);
    uint8_t big[VS_HEADER_SIZE + 1];
    memcpy(big, &c, sizeof(c));
    big[VS_HEADER_SIZE] = 0;
    ck_assert_int_eq(pbeat_from_frame(big, sizeof(big), &cluster,
                                      VS_WIRE_FORMAT_VERSION, &e),
                     -ENOTSUP);
    ck_assert_int_eq(
        pbeat_from_frame(&c, 100, &cluster, VS_WIRE_FORMAT_VERSION, &e),
        -ENOTSUP);
    /* another command (a PrepareOk) goes as a frame */
    struct vs_hdr_prepare_ok ok;
    memset(&ok, 0, sizeof(ok));
    ok.f.cluster = cluster;
    ok.f.size = VS_HEADER_SIZE;
    ok.f.release = VS_WIRE_FORMAT_VERSION;
    ok.f.command = VS_CMD_PREPARE_OK;
    ok.group = 3;
    vs_frame_seal((struct vs_header *)&ok);
    ck_assert_int_eq(
        pbeat_from_frame(&ok, sizeof(ok), &cluster, VS_WIRE_FORMAT_VERSION, &e),
        -ENOTSUP);
    /* entries that are no frame */
    struct vs_header back;
    struct beat_entry bad = {.group = 3, .kind = 9};
    ck_assert_int_eq(
        pbeat_to_frame(&bad, &cluster, VS_WIRE_FORMAT_VERSION, &back), -EINVAL);
    bad.kind = BEAT_KIND_ACK;
    bad.op = 5; /* a Pong has no op */
    ck_assert_int_eq(
        pbeat_to_frame(&bad, &cluster, VS_WIRE_FORMAT_VERSION, &back), -EINVAL);
    bad.op = 0;
    bad.checksum.lo = 1; /* nor a checksum */
    ck_assert_int_eq(
        pbeat_to_frame(&bad, &cluster, VS_WIRE_FORMAT_VERSION, &back), -EINVAL);
}
END_TEST

#define IDLE_GROUPS 300u
#define IDLE_TICKS  1600u /* three backup timeouts (500 ticks + jitter) */

START_TEST(test_idle_groups_one_frame_per_link_per_tick)
{
    struct bn *b;
    ck_assert_int_eq(bn_create(IDLE_GROUPS, 1, 11, &b), 0);
    struct bn_stats st;
    uint64_t worst = 0, last = 0;
    for (unsigned t = 0; t < IDLE_TICKS; t++) {
        bn_tick(b);
        bn_stats(b, &st);
        for (unsigned f = 0; f < BN_NODES; f++)
            for (unsigned to = 0; to < BN_NODES; to++)
                ck_assert_uint_le(st.frames[f][to], (uint64_t)t + 1);
        uint64_t now = st.beat_frames - last;
        last = st.beat_frames;
        if (now > worst)
            worst = now;
    }
    bn_stats(b, &st);
    /* at most one frame per directed link per tick: 6 links */
    ck_assert_uint_le(worst, BN_NODES * (BN_NODES - 1));
    uint64_t frames = 0;
    for (unsigned f = 0; f < BN_NODES; f++)
        for (unsigned to = 0; to < BN_NODES; to++)
            frames += st.frames[f][to];
    /* every engine frame of idle groups was a heartbeat or its answer:
     * all of them rode the beats, exactly rebuilt, none lost */
    ck_assert_uint_eq(frames, st.beat_frames);
    ck_assert_uint_eq(st.fallback, 0);
    ck_assert_uint_gt(st.entries_out, IDLE_GROUPS * 2 * (IDLE_TICKS / 60));
    /* every posted entry arrived but the last tick's, still in flight */
    ck_assert_uint_le(st.entries_in, st.entries_out);
    ck_assert_uint_le(st.entries_out - st.entries_in, 2 * IDLE_GROUPS);
    ck_assert_uint_eq(st.view_changes, 0);
    for (uint32_t g = 0; g < IDLE_GROUPS; g++)
        ck_assert_msg(bn_settled(b, g), "group %u lost its primary", g);
    bn_destroy(b);
}
END_TEST

START_TEST(test_commits_reach_backups_through_beats)
{
    struct bn *b;
    ck_assert_int_eq(bn_create(30, 1, 12, &b), 0);
    for (unsigned t = 0; t < 10; t++)
        bn_tick(b);
    /* three requests on every third group, one per tick */
    unsigned sent[30] = {0};
    for (unsigned t = 0; t < 200; t++) {
        for (uint32_t g = 0; g < 30; g += 3)
            if (sent[g] < 3 && bn_request(b, g, 1000 + t) == 0)
                sent[g]++;
        bn_tick(b);
    }
    /* the last commit is learnt from a heartbeat (a Commit entry) */
    for (unsigned t = 0; t < 120; t++)
        bn_tick(b);
    for (uint32_t g = 0; g < 30; g++)
        for (unsigned i = 0; i < BN_NODES; i++) {
            uint32_t view;
            int status;
            uint64_t commit;
            bn_group(b, g, i, &view, &status, &commit);
            ck_assert_uint_eq(view, 0);
            ck_assert_int_eq(status, VSR_STATUS_NORMAL);
            ck_assert_uint_eq(commit, g % 3 == 0 ? 3 : 0);
        }
    struct bn_stats st;
    bn_stats(b, &st);
    ck_assert_uint_eq(st.requests, 30);
    ck_assert_uint_eq(st.committed, 30);
    ck_assert_uint_eq(st.view_changes, 0);
    bn_destroy(b);
}
END_TEST

START_TEST(test_lost_heartbeats_one_group_view_change)
{
    struct bn *b;
    ck_assert_int_eq(bn_create(12, 1, 13, &b), 0);
    for (unsigned t = 0; t < 100; t++)
        bn_tick(b);
    bn_drop_commits(b, 5);
    for (unsigned t = 0; t < 1200; t++)
        bn_tick(b);
    struct bn_stats st;
    bn_stats(b, &st);
    ck_assert_uint_gt(st.entries_dropped, 0);
    ck_assert_uint_gt(st.view_changes, 0);
    uint32_t view;
    int status;
    uint64_t commit;
    bn_group(b, 5, 1, &view, &status, &commit);
    ck_assert_uint_gt(view, 0);
    for (uint32_t g = 0; g < 12; g++)
        if (g != 5)
            ck_assert_msg(bn_settled(b, g), "group %u lost its primary", g);
    bn_destroy(b);
}
END_TEST

START_TEST(test_uncoalesced_baseline)
{
    /* the same idle groups without coalescing: a frame per heartbeat */
    struct bn *b;
    ck_assert_int_eq(bn_create(60, 0, 11, &b), 0);
    for (unsigned t = 0; t < 600; t++)
        bn_tick(b);
    struct bn_stats st;
    bn_stats(b, &st);
    ck_assert_uint_eq(st.beat_frames, 0);
    uint64_t frames = 0;
    for (unsigned f = 0; f < BN_NODES; f++)
        for (unsigned to = 0; to < BN_NODES; to++)
            frames += st.frames[f][to];
    /* 60 primaries x 2 backups x (Commit + Pong) every 50 ticks */
    ck_assert_uint_ge(frames, 60u * 2 * 2 * (600 / 50 - 1));
    ck_assert_uint_eq(st.view_changes, 0);
    bn_destroy(b);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("pgroups_beat");
    TCase *tc = tcase_create("beat");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_round_trip_exact);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_idle_groups_one_frame_per_link_per_tick);
    tcase_add_test(tc, test_commits_reach_backups_through_beats);
    tcase_add_test(tc, test_lost_heartbeats_one_group_view_change);
    tcase_add_test(tc, test_uncoalesced_baseline);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
