/*
 * tests/unit/check_groups0.c - consumer-group membership on shard 0:
 * FWD_CLOSED of a member's connection proposes RemoveConsumerGroupMember
 * (66) through the commit path as an internal op (client 0, no reply); a
 * close of an older connection of a re-registered client is ignored; a
 * dead data shard (new incarnation) removes the members bound to it; a
 * pending cooperative revocation completes (67) after the rebalancing
 * timeout; the removals are durable (a reboot keeps them). Plus the pure
 * bookkeeping of shard/zero/groups0.h.
 * Drives shard 0's commit path in-process (tests/unit/commit_fixture.h)
 * with a fake clock.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "shard/zero/groups0.h"
#include "shard/meta/lookup.h"
#include "tests/unit/commit_fixture.h"
#include "tests/unit/groups_fixture.h"

static const struct vs_u128 CLIENT_A = {0x1111, 0xaaaa};
static const struct vs_u128 CLIENT_B = {0x2222, 0xbbbb};

static uint64_t g_incarnation = FX_INCARNATION;

static uint64_t
fake_incarnation(void *ctx, uint32_t slot)
{
    (void)ctx;
    return slot == FX_WORKER_SLOT ? g_incarnation : 1;
}

static void
boot(struct fx *f)
{
    groups_boot(f, fake_incarnation, 5000000);
}

static void
setup(struct fx *f, struct sess *a, struct sess *b, uint32_t parts)
{
    groups_setup(f, a, b, parts, boot, CLIENT_A, CLIENT_B);
}

static uint32_t
owner_of(struct fx *f, uint32_t p)
{
    const struct meta_assign *as = meta_assign_get(state(f), 0, 0, 0, p);
    return as ? as->owner : META_NONE;
}

static int
closed(struct fx *f, struct vs_u128 client, uint64_t inc, uint64_t conn)
{
    struct fwd_hdr h;
    memset(&h, 0, sizeof(h));
    h.kind = FWD_CLOSED;
    h.worker_slot = FX_WORKER_SLOT;
    h.worker_incarnation = inc;
    h.conn_id = conn;
    h.client = client;
    return commit_on_frame(f->c, FX_WORKER_SLOT, &h, sizeof(h));
}

static void
ticks(struct fx *f, int n)
{
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(commit_tick(f->c), 0);
}

START_TEST(test_closed_removes_member)
{
    static struct fx f;
    struct sess a, b;
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    setup(&f, &a, &b, 4);
    target(op, VS_OP_JOIN_CONSUMER_GROUP);
    ck_assert_uint_eq(op_code(&f, &b, op), 0);
    ck_assert_ptr_nonnull(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A));
    ck_assert_ptr_nonnull(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_B));
    uint64_t commits = commit_stats(f.c)->commits;

    /* a close of another connection of A (not its binding): ignored */
    fx_clear_sent(&f);
    ck_assert_int_eq(closed(&f, CLIENT_A, FX_INCARNATION, a.conn + 1000), 0);
    ck_assert_ptr_nonnull(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A));
    ck_assert_uint_eq(commit_stats(f.c)->commits, commits);

    /* A's own connection closes: removed by an internal op, no reply */
    ck_assert_int_eq(closed(&f, CLIENT_A, FX_INCARNATION, a.conn), 0);
    ck_assert_ptr_null(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A));
    ck_assert_uint_eq(commit_stats(f.c)->commits, commits + 1);
    ck_assert_uint_eq(commit_stats(f.c)->members_removed, 1);
    ck_assert_uint_eq(commit_stats(f.c)->internal, 1);
    ck_assert_uint_eq(f.nsent, 0);
    /* B (member id 1) took every partition (eager rebalance) */
    const struct meta_member *mb =
        meta_member_by_client(state(&f), 0, 0, 0, CLIENT_B);
    ck_assert_ptr_nonnull(mb);
    for (uint32_t p = 0; p < 4; p++)
        ck_assert_uint_eq(owner_of(&f, p), mb->member_id);
    const struct vs_hdr_prepare *last =
        wal_header(commit_journal(f.c), vsr_op(commit_engine(f.c)));
    ck_assert_ptr_nonnull(last);
    ck_assert_uint_eq(last->operation, VS_OP_REMOVE_CONSUMER_GROUP_MEMBER);
    ck_assert(vs_u128_is_zero(last->client));

    /* a second close (no binding left, not a member): nothing proposed */
    ck_assert_int_eq(closed(&f, CLIENT_A, FX_INCARNATION, a.conn), 0);
    ck_assert_uint_eq(commit_stats(f.c)->commits, commits + 1);

    /* durable: a reboot replays the removal */
    fx_stop(&f);
    boot(&f);
    ck_assert_ptr_null(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A));
    ck_assert_ptr_nonnull(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_B));
    /* after the reboot no binding is known: a close counts */
    ck_assert_int_eq(closed(&f, CLIENT_B, FX_INCARNATION, 12345), 0);
    ck_assert_ptr_null(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_B));
    ck_assert_ptr_null(meta_assign_get(state(&f), 0, 0, 0, 0));
    free(op);
    fx_fini(&f);
}
END_TEST

START_TEST(test_dead_shard_sweep)
{
    static struct fx f;
    struct sess a, b;
    setup(&f, &a, &b, 2);
    g_incarnation = FX_INCARNATION;
    ticks(&f, 150);
    ck_assert_ptr_nonnull(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A));
    /* the data shard was respawned: A's connection died with it */
    g_incarnation = FX_INCARNATION + 1;
    ticks(&f, 100);
    ck_assert_ptr_null(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A));
    ck_assert_uint_eq(commit_stats(f.c)->members_removed, 1);
    ck_assert_ptr_null(meta_assign_get(state(&f), 0, 0, 0, 0));
    g_incarnation = FX_INCARNATION;
    fx_fini(&f);
}
END_TEST

START_TEST(test_revocation_timeout)
{
    static struct fx f;
    struct sess a, b;
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    setup(&f, &a, &b, 2);
    const struct meta_member *ma =
        meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A);
    uint32_t ida = ma->member_id;
    ck_assert_uint_eq(owner_of(&f, 0), ida);
    ck_assert_uint_eq(owner_of(&f, 1), ida);
    /* B joins while partition 1 is in flight: a pending revocation */
    target(op, VS_OP_JOIN_CONSUMER_GROUP);
    op->inflight_count = 1;
    op->inflight[0] = 1;
    ck_assert_uint_eq(op_code(&f, &b, op), 0);
    const struct meta_assign *as = meta_assign_get(state(&f), 0, 0, 0, 1);
    ck_assert_uint_eq(as->owner, ida);
    ck_assert_uint_ne(as->revoke_to, META_NONE);
    uint32_t idb = as->revoke_to;
    ticks(&f, 100); /* first seen */
    f.wall += 4000000;
    ticks(&f, 100); /* 4 s < 5 s: still pending */
    as = meta_assign_get(state(&f), 0, 0, 0, 1);
    ck_assert_uint_ne(as->revoke_to, META_NONE);
    ck_assert_uint_eq(commit_stats(f.c)->revocations, 0);
    f.wall += 2000000;
    ticks(&f, 100);
    as = meta_assign_get(state(&f), 0, 0, 0, 1);
    ck_assert_uint_eq(as->owner, idb);
    ck_assert_uint_eq(as->revoke_to, META_NONE);
    ck_assert_uint_eq(commit_stats(f.c)->revocations, 1);
    ck_assert_uint_eq(owner_of(&f, 0), ida);
    f.wall += 60000000;
    ticks(&f, 100); /* nothing pending any more */
    ck_assert_uint_eq(commit_stats(f.c)->revocations, 1);
    free(op);
    fx_fini(&f);
}
END_TEST

START_TEST(test_client_zero_proposal_refused)
{
    static struct fx f;
    struct sess a, b;
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    setup(&f, &a, &b, 1);
    /* a data shard cannot propose an internal op: only shard 0 does */
    meta_op_init(op, VS_OP_REMOVE_CONSUMER_GROUP_MEMBER);
    op->client = CLIENT_A;
    fx_clear_sent(&f);
    struct vs_u128 zero = {0, 0};
    ck_assert_int_eq(fx_propose(&f, zero, a.session, 9, 0, op), 0);
    ck_assert_uint_eq(f.nsent, 1);
    const struct vs_hdr_reply *r = (const void *)fx_last(&f)->frame;
    ck_assert_uint_eq(r->status, 3);
    ck_assert_ptr_nonnull(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A));
    free(op);
    fx_fini(&f);
}
END_TEST

static uint64_t
inc_of(void *ctx, uint32_t slot)
{
    return ((const uint64_t *)ctx)[slot];
}

START_TEST(test_bookkeeping)
{
    struct groups0 *g = groups0_create();
    struct vs_u128 c1 = {1, 0}, c2 = {2, 0}, c3 = {3, 0};
    uint64_t incs[3] = {0, 5, 9};
    struct vs_u128 *dead;
    size_t n;
    groups0_bind(g, c1, 1, 5, 10);
    groups0_bind(g, c2, 2, 9, 11);
    groups0_bind(g, c3, 1, 5, 12);
    ck_assert_uint_eq(groups0_bindings(g), 3);
    /* re-register on another shard: the old connection's close is stale */
    groups0_bind(g, c1, 2, 9, 20);
    ck_assert_uint_eq(groups0_bindings(g), 3);
    ck_assert_int_eq(groups0_closed(g, c1, 1, 5, 10), 0);
    ck_assert_int_eq(groups0_closed(g, c1, 2, 9, 20), 1);
    ck_assert_int_eq(groups0_closed(g, c1, 2, 9, 20), 1); /* unknown: act */
    ck_assert_uint_eq(groups0_bindings(g), 2);
    groups0_unbind(g, c2);
    ck_assert_uint_eq(groups0_bindings(g), 1);
    groups0_sweep_dead(g, inc_of, incs, &dead, &n);
    ck_assert_uint_eq(n, 0);
    free(dead);
    incs[1] = 6;
    groups0_sweep_dead(g, inc_of, incs, &dead, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert(vs_u128_eq(dead[0], c3));
    free(dead);
    ck_assert_uint_eq(groups0_bindings(g), 0);
    groups0_destroy(g);
}
END_TEST

/* A bound connection handed to another data shard (FWD_REBIND): the
 * binding follows it, so the new connection's close and silence count,
 * the old one's do not, and the old shard's restart is no disconnect. */
START_TEST(test_rebind_follows_handoff)
{
    struct groups0 *g = groups0_create();
    struct vs_u128 c1 = {1, 0}, c2 = {2, 0};
    uint64_t incs[3] = {0, 5, 9};
    struct vs_u128 *dead;
    size_t n;
    groups0_bind(g, c1, 1, 5, 10);
    groups0_bind(g, c2, 1, 5, 11);
    /* a rebind naming another connection than the binding: ignored */
    ck_assert_int_eq(groups0_rebind(g, c1, 1, 5, 99, 2, 9, 30), 0);
    ck_assert_int_eq(groups0_rebind(g, c1, 1, 4, 10, 2, 9, 30), 0);
    ck_assert_int_eq(
        groups0_rebind(g, (struct vs_u128){7, 0}, 1, 5, 10, 2, 9, 30), 0);
    ck_assert_int_eq(groups0_silent(g, c1, 1, 5, 10), 1);
    ck_assert_int_eq(groups0_rebind(g, c1, 1, 5, 10, 2, 9, 30), 1);
    ck_assert_int_eq(groups0_silent(g, c1, 1, 5, 10), 0);
    ck_assert_int_eq(groups0_silent(g, c1, 2, 9, 30), 1);
    /* the first shard restarts: only c2 (still there) is a disconnect */
    incs[1] = 6;
    groups0_sweep_dead(g, inc_of, incs, &dead, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert(vs_u128_eq(dead[0], c2));
    free(dead);
    /* the old connection's close is stale, the new one's counts */
    ck_assert_int_eq(groups0_closed(g, c1, 1, 5, 10), 0);
    ck_assert_int_eq(groups0_closed(g, c1, 2, 9, 30), 1);
    ck_assert_uint_eq(groups0_bindings(g), 0);
    groups0_destroy(g);
}
END_TEST

static Suite *
groups0_suite(void)
{
    Suite *s = suite_create("groups0");
    TCase *tc = tcase_create("membership");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_closed_removes_member);
    tcase_add_test(tc, test_dead_shard_sweep);
    tcase_add_test(tc, test_revocation_timeout);
    tcase_add_test(tc, test_client_zero_proposal_refused);
    tcase_add_test(tc, test_bookkeeping);
    tcase_add_test(tc, test_rebind_follows_handoff);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(groups0_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
