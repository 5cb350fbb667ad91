/*
 * tests/unit/check_groups_liveness.c - consumer-group liveness reports
 * (shard/fwd.h FWD_MEMBER_SILENT, FWD_GROUP_REPORT) on shard 0's commit
 * path, and the pure pieces behind them:
 *  - a silent report of a member's current connection removes it from its
 *    groups (op 66, internal); a report of another connection of the
 *    client (it registered again elsewhere) or of a non-member does not;
 *  - a "revocation done" report completes a pending revocation (op 67)
 *    only while the live assignment is the one reported;
 *  - the in-flight set of a live data shard fills a JoinGroup's in-flight
 *    list (a pending revocation); a dead incarnation's set is ignored;
 *  - malformed reports are dropped;
 *  - shard/serve/polled.h: the table and the rules.
 * Drives the commit path in-process (tests/unit/commit_fixture.h).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shard/zero/groups0.h"
#include "shard/meta/lookup.h"
#include "shard/serve/polled.h"
#include "tests/unit/commit_fixture.h"
#include "tests/unit/groups_fixture.h"

static const struct vs_u128 CLIENT_A = {0x1111, 0xaaaa};
static const struct vs_u128 CLIENT_B = {0x2222, 0xbbbb};

static uint64_t
fake_incarnation(void *ctx, uint32_t slot)
{
    (void)ctx;
    return slot == FX_WORKER_SLOT ? FX_INCARNATION : 1;
}

static void
boot(struct fx *f)
{
    groups_boot(f, fake_incarnation, 3600000000ull); /* never in these tests */
}

static void
setup(struct fx *f, struct sess *a, struct sess *b, uint32_t parts)
{
    groups_setup(f, a, b, parts, boot, CLIENT_A, CLIENT_B);
}

static uint64_t
group_op(struct fx *f)
{
    const struct meta_group *g = meta_group_by_id(state(f), 0, 0, 0);
    ck_assert_ptr_nonnull(g);
    return g->created_op;
}

static int
silent(struct fx *f, struct vs_u128 client, uint64_t conn)
{
    struct fwd_hdr h;
    memset(&h, 0, sizeof(h));
    h.kind = FWD_MEMBER_SILENT;
    h.worker_slot = FX_WORKER_SLOT;
    h.worker_incarnation = FX_INCARNATION;
    h.conn_id = conn;
    h.client = client;
    return commit_on_frame(f->c, FX_WORKER_SLOT, &h, sizeof(h));
}

/* FWD_GROUP_REPORT from the worker slot with incarnation inc. */
static int
report(struct fx *f, uint64_t inc, const struct fwd_group_part *done,
       uint32_t nd, const struct fwd_group_part *fl, uint32_t nf)
{
    uint8_t buf[sizeof(struct fwd_hdr) + 8 + 16 * sizeof(*done)];
    struct fwd_hdr h;
    ck_assert_uint_le(nd + nf, 16);
    memset(&h, 0, sizeof(h));
    h.kind = FWD_GROUP_REPORT;
    h.worker_slot = FX_WORKER_SLOT;
    h.worker_incarnation = inc;
    h.payload_len = 8 + (nd + nf) * (uint32_t)sizeof(*done);
    memcpy(buf, &h, sizeof(h));
    vs_store_u32(buf + sizeof(h), nd);
    vs_store_u32(buf + sizeof(h) + 4, nf);
    uint8_t *p = buf + sizeof(h) + 8;
    if (nd > 0)
        memcpy(p, done, nd * sizeof(*done));
    if (nf > 0)
        memcpy(p + nd * sizeof(*done), fl, nf * sizeof(*fl));
    return commit_on_frame(f->c, FX_WORKER_SLOT, buf,
                           (uint32_t)sizeof(h) + h.payload_len);
}

static struct fwd_group_part
part(struct fx *f, uint32_t pid, uint32_t owner, uint32_t to)
{
    struct fwd_group_part e;
    memset(&e, 0, sizeof(e));
    e.partition_id = pid;
    e.group_created_op = group_op(f);
    e.owner = owner;
    e.revoke_to = to;
    return e;
}

START_TEST(test_silent_member_removed)
{
    static struct fx f;
    struct sess a, b;
    setup(&f, &a, &b, 4);
    uint64_t commits = commit_stats(f.c)->commits;
    /* another connection of A (A registered again elsewhere): ignored */
    ck_assert_int_eq(silent(&f, CLIENT_A, a.conn + 1000), 0);
    ck_assert_ptr_nonnull(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A));
    ck_assert_uint_eq(commit_stats(f.c)->commits, commits);
    /* B is no member: nothing to remove */
    ck_assert_int_eq(silent(&f, CLIENT_B, b.conn), 0);
    ck_assert_uint_eq(commit_stats(f.c)->commits, commits);
    /* a client id of zero is never acted on */
    ck_assert_int_eq(silent(&f, (struct vs_u128){0, 0}, a.conn), 0);
    ck_assert_uint_eq(commit_stats(f.c)->commits, commits);
    /* A's current connection is silent: removed through op 66 */
    fx_clear_sent(&f);
    ck_assert_int_eq(silent(&f, CLIENT_A, a.conn), 0);
    ck_assert_ptr_null(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A));
    ck_assert_ptr_null(meta_assign_get(state(&f), 0, 0, 0, 0));
    ck_assert_uint_eq(commit_stats(f.c)->commits, commits + 1);
    ck_assert_uint_eq(commit_stats(f.c)->members_removed, 1);
    ck_assert_uint_eq(f.nsent, 0); /* internal op: no reply */
    const struct vs_hdr_prepare *last =
        wal_header(commit_journal(f.c), vsr_op(commit_engine(f.c)));
    ck_assert_uint_eq(last->operation, VS_OP_REMOVE_CONSUMER_GROUP_MEMBER);
    /* the session stays: A may join again on the same connection */
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    target(op, VS_OP_JOIN_CONSUMER_GROUP);
    ck_assert_uint_eq(op_code(&f, &a, op), 0);
    ck_assert_ptr_nonnull(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A));
    /* the binding stayed too: a second silence removes it again */
    ck_assert_int_eq(silent(&f, CLIENT_A, a.conn), 0);
    ck_assert_ptr_null(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A));
    free(op);
    fx_fini(&f);
}
END_TEST

START_TEST(test_revocation_done_report)
{
    static struct fx f;
    struct sess a, b;
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    setup(&f, &a, &b, 2);
    uint32_t ida =
        meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A)->member_id;
    target(op, VS_OP_JOIN_CONSUMER_GROUP);
    op->inflight_count = 1;
    op->inflight[0] = 1;
    ck_assert_uint_eq(op_code(&f, &b, op), 0);
    const struct meta_assign *as = meta_assign_get(state(&f), 0, 0, 0, 1);
    ck_assert_uint_eq(as->owner, ida);
    uint32_t idb = as->revoke_to;
    ck_assert_uint_ne(idb, META_NONE);
    uint64_t commits = commit_stats(f.c)->commits;

    /* not as reported (owner, target, group incarnation, partition) */
    struct fwd_group_part bad[4] = {
        part(&f, 1, idb, ida), part(&f, 1, ida, ida + 7), part(&f, 1, ida, idb),
        part(&f, 0, ida, idb)};
    bad[2].group_created_op++;
    ck_assert_int_eq(report(&f, FX_INCARNATION, bad, 4, NULL, 0), 0);
    ck_assert_uint_eq(commit_stats(f.c)->commits, commits);
    as = meta_assign_get(state(&f), 0, 0, 0, 1);
    ck_assert_uint_eq(as->revoke_to, idb);

    /* as reported: op 67 at once, no timeout */
    struct fwd_group_part ok = part(&f, 1, ida, idb);
    ck_assert_int_eq(report(&f, FX_INCARNATION, &ok, 1, NULL, 0), 0);
    as = meta_assign_get(state(&f), 0, 0, 0, 1);
    ck_assert_uint_eq(as->owner, idb);
    ck_assert_uint_eq(as->revoke_to, META_NONE);
    ck_assert_uint_eq(commit_stats(f.c)->revocations, 1);
    ck_assert_uint_eq(commit_stats(f.c)->commits, commits + 1);
    const struct vs_hdr_prepare *last =
        wal_header(commit_journal(f.c), vsr_op(commit_engine(f.c)));
    ck_assert_uint_eq(last->operation,
                      VS_OP_COMPLETE_CONSUMER_GROUP_REVOCATION);
    /* a repeated report (the data shard saw the old state): nothing */
    ck_assert_int_eq(report(&f, FX_INCARNATION, &ok, 1, NULL, 0), 0);
    ck_assert_uint_eq(commit_stats(f.c)->commits, commits + 1);
    free(op);
    fx_fini(&f);
}
END_TEST

START_TEST(test_inflight_fills_join)
{
    static struct fx f;
    struct sess a, b;
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    setup(&f, &a, &b, 2);
    uint32_t ida =
        meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A)->member_id;
    /* a dead incarnation's set is ignored: partition 1 moves at once */
    struct fwd_group_part fl = part(&f, 1, 0, 0);
    ck_assert_int_eq(report(&f, FX_INCARNATION + 3, NULL, 0, &fl, 1), 0);
    target(op, VS_OP_JOIN_CONSUMER_GROUP);
    ck_assert_uint_eq(op_code(&f, &b, op), 0);
    const struct meta_assign *as = meta_assign_get(state(&f), 0, 0, 0, 1);
    ck_assert_uint_ne(as->owner, ida);
    ck_assert_uint_eq(as->revoke_to, META_NONE);
    target(op, VS_OP_LEAVE_CONSUMER_GROUP);
    ck_assert_uint_eq(op_code(&f, &b, op), 0);
    ck_assert_uint_eq(meta_assign_get(state(&f), 0, 0, 0, 1)->owner, ida);

    /* the live shard reports partition 1 (and junk) in flight */
    struct fwd_group_part sets[3] = {part(&f, 1, 0, 0), part(&f, 9, 0, 0),
                                     part(&f, 0, 0, 0)};
    sets[2].group_id = 5; /* another group */
    ck_assert_int_eq(report(&f, FX_INCARNATION, NULL, 0, sets, 3), 0);
    target(op, VS_OP_JOIN_CONSUMER_GROUP);
    ck_assert_uint_eq(op_code(&f, &b, op), 0);
    as = meta_assign_get(state(&f), 0, 0, 0, 1);
    ck_assert_uint_eq(as->owner, ida);
    ck_assert_uint_ne(as->revoke_to, META_NONE);
    /* the proposed body carried exactly [1] */
    struct wal *w = (struct wal *)(uintptr_t)commit_journal(f.c);
    uint64_t opn = vsr_op(commit_engine(f.c));
    const struct vs_hdr_prepare *h = wal_header(w, opn);
    ck_assert_uint_eq(h->operation, VS_OP_JOIN_CONSUMER_GROUP);
    uint32_t blen = h->f.size - VS_HEADER_SIZE;
    uint8_t *body = vs_xmalloc(blen);
    ck_assert_int_eq(wal_read_body(w, opn, body, blen), (long)blen);
    struct meta_op *dec = vs_xcalloc(1, sizeof(*dec));
    ck_assert_int_eq(meta_op_decode(body, blen, dec), 0);
    ck_assert_uint_eq(dec->inflight_count, 1);
    ck_assert_uint_eq(dec->inflight[0], 1);
    free(dec);
    free(body);

    /* an empty set replaces it: the next join moves at once */
    target(op, VS_OP_LEAVE_CONSUMER_GROUP);
    ck_assert_uint_eq(op_code(&f, &b, op), 0);
    ck_assert_int_eq(report(&f, FX_INCARNATION, NULL, 0, NULL, 0), 0);
    target(op, VS_OP_JOIN_CONSUMER_GROUP);
    ck_assert_uint_eq(op_code(&f, &b, op), 0);
    as = meta_assign_get(state(&f), 0, 0, 0, 1);
    ck_assert_uint_ne(as->owner, ida);
    ck_assert_uint_eq(as->revoke_to, META_NONE);
    free(op);
    fx_fini(&f);
}
END_TEST

START_TEST(test_bad_reports_dropped)
{
    static struct fx f;
    struct sess a, b;
    setup(&f, &a, &b, 2);
    uint64_t dropped = commit_stats(f.c)->dropped;
    uint8_t buf[sizeof(struct fwd_hdr) + 8 + 40];
    struct fwd_hdr h;
    memset(&h, 0, sizeof(h));
    memset(buf, 0, sizeof(buf));
    h.kind = FWD_GROUP_REPORT;
    h.worker_slot = FX_WORKER_SLOT;
    h.worker_incarnation = FX_INCARNATION;
    /* too short for the counts */
    h.payload_len = 4;
    memcpy(buf, &h, sizeof(h));
    ck_assert_int_eq(commit_on_frame(f.c, FX_WORKER_SLOT, buf, sizeof(h) + 4),
                     0);
    ck_assert_uint_eq(commit_stats(f.c)->dropped, dropped + 1);
    /* counts that do not match the length (one entry + 8 stray bytes) */
    h.payload_len = 8 + 40;
    memcpy(buf, &h, sizeof(h));
    vs_store_u32(buf + sizeof(h), 1);
    ck_assert_int_eq(commit_on_frame(f.c, FX_WORKER_SLOT, buf, sizeof(buf)), 0);
    ck_assert_uint_eq(commit_stats(f.c)->dropped, dropped + 2);
    /* huge counts (overflow attempt) */
    vs_store_u32(buf + sizeof(h), UINT32_MAX);
    vs_store_u32(buf + sizeof(h) + 4, UINT32_MAX);
    ck_assert_int_eq(commit_on_frame(f.c, FX_WORKER_SLOT, buf, sizeof(buf)), 0);
    ck_assert_uint_eq(commit_stats(f.c)->dropped, dropped + 3);
    ck_assert_ptr_nonnull(meta_member_by_client(state(&f), 0, 0, 0, CLIENT_A));
    fx_fini(&f);
}
END_TEST

static struct polled_key
key(uint32_t pid, uint64_t pco, uint64_t cl)
{
    struct polled_key k;
    memset(&k, 0, sizeof(k));
    k.stream_id = 1;
    k.topic_id = 2;
    k.partition_id = pid;
    k.group_id = 3;
    k.part_created_op = pco;
    k.group_created_op = 40;
    k.client = (struct vs_u128){cl, 0};
    return k;
}

START_TEST(test_polled_table)
{
    struct polled t;
    uint64_t last = 0;
    polled_init(&t);
    struct polled_key k1 = key(0, 10, 1), k2 = key(0, 11, 1),
                      k3 = key(0, 10, 2);
    ck_assert_int_eq(polled_get(&t, &k1, &last), 0);
    ck_assert_int_eq(polled_set(&t, &k1, 5), 0);
    ck_assert_int_eq(polled_set(&t, &k2, 6), 0); /* reused partition id */
    ck_assert_int_eq(polled_set(&t, &k3, 7), 0); /* another member */
    ck_assert_uint_eq(t.n, 3);
    ck_assert_int_eq(polled_get(&t, &k1, &last), 1);
    ck_assert_uint_eq(last, 5);
    ck_assert_int_eq(polled_set(&t, &k1, 3), 0); /* the latest poll wins */
    ck_assert_int_eq(polled_get(&t, &k1, &last), 1);
    ck_assert_uint_eq(last, 3);
    ck_assert_uint_eq(t.n, 3);
    polled_del(&t, &k2);
    ck_assert_int_eq(polled_get(&t, &k2, &last), 0);
    ck_assert_int_eq(polled_get(&t, &k3, &last), 1);
    ck_assert_uint_eq(last, 7);
    polled_del(&t, &k2); /* absent: no-op */
    ck_assert_uint_eq(t.n, 2);
    polled_del_at(&t, 0);
    polled_del_at(&t, 5); /* out of range: no-op */
    ck_assert_uint_eq(t.n, 1);
    for (uint32_t i = 0; i < 100; i++) {
        struct polled_key k = key(i, 1, 9);
        ck_assert_int_eq(polled_set(&t, &k, i), 0);
    }
    ck_assert_uint_eq(t.n, 101);
    struct polled_key k50 = key(50, 1, 9);
    ck_assert_int_eq(polled_get(&t, &k50, &last), 1);
    ck_assert_uint_eq(last, 50);
    polled_fini(&t);
    ck_assert_uint_eq(t.n, 0);
}
END_TEST

START_TEST(test_polled_rules)
{
    /* revocation: never polled -> done; else committed >= last */
    ck_assert_int_eq(polled_revoke_done(0, 0, 0, 0), 1);
    ck_assert_int_eq(polled_revoke_done(1, 10, 0, 0), 0);
    ck_assert_int_eq(polled_revoke_done(1, 10, 1, 9), 0);
    ck_assert_int_eq(polled_revoke_done(1, 10, 1, 10), 1);
    ck_assert_int_eq(polled_revoke_done(1, 10, 1, 11), 1);
    /* in flight: nothing committed, or committed below last */
    ck_assert_int_eq(polled_in_flight(0, 0, 0), 1);
    ck_assert_int_eq(polled_in_flight(10, 1, 9), 1);
    ck_assert_int_eq(polled_in_flight(10, 1, 10), 0);
    ck_assert_int_eq(polled_in_flight(10, 1, 20), 0);

    struct fwd_group_part e[5];
    memset(e, 0, sizeof(e));
    e[0].partition_id = 3;
    e[1].partition_id = 1;
    e[2].partition_id = 3;
    e[3].group_id = 1;
    e[3].partition_id = 0;
    e[4].partition_id = 1;
    size_t n = polled_parts_normalize(e, 5);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(e[0].partition_id, 1);
    ck_assert_uint_eq(e[1].partition_id, 3);
    ck_assert_uint_eq(e[2].group_id, 1);
    ck_assert_uint_eq(polled_parts_normalize(e, 0), 0);
    ck_assert_uint_eq(polled_parts_normalize(e, 1), 1);
}
END_TEST

START_TEST(test_groups0_pure)
{
    struct groups0 *g = groups0_create();
    struct vs_u128 c1 = {1, 0};
    /* no binding: act (shard 0 restarted) */
    ck_assert_int_eq(groups0_silent(g, c1, 1, 5, 10), 1);
    groups0_bind(g, c1, 1, 5, 10);
    ck_assert_int_eq(groups0_silent(g, c1, 1, 5, 10), 1);
    ck_assert_int_eq(groups0_silent(g, c1, 1, 5, 11), 0);
    ck_assert_int_eq(groups0_silent(g, c1, 2, 5, 10), 0);
    ck_assert_int_eq(groups0_silent(g, c1, 1, 6, 10), 0);
    ck_assert_uint_eq(groups0_bindings(g), 1); /* silence keeps it */
    /* sets are replaced per slot; a second slot adds its own */
    struct fwd_group_part e[2];
    memset(e, 0, sizeof(e));
    groups0_set_inflight(g, 1, 5, e, 2);
    groups0_set_inflight(g, 1, 5, e, 1);
    groups0_set_inflight(g, 2, 9, e, 0);
    groups0_set_inflight(g, 2, 9, NULL, 0);
    groups0_destroy(g);
}
END_TEST

static Suite *
liveness_suite(void)
{
    Suite *s = suite_create("groups_liveness");
    TCase *tc = tcase_create("commit");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_silent_member_removed);
    tcase_add_test(tc, test_revocation_done_report);
    tcase_add_test(tc, test_inflight_fills_join);
    tcase_add_test(tc, test_bad_reports_dropped);
    suite_add_tcase(s, tc);
    TCase *tp = tcase_create("pure");
    tcase_add_test(tp, test_polled_table);
    tcase_add_test(tp, test_polled_rules);
    tcase_add_test(tp, test_groups0_pure);
    suite_add_tcase(s, tp);
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
