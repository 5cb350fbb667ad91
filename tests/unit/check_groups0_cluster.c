/*
 * tests/unit/check_groups0_cluster.c - the cluster rules of shard 0's
 * consumer-group liveness (shard/zero/groups0.h "Cluster rules") over a
 * real metadata state: the lease of unbound members after a view change,
 * claims (current session only), the origin node's link down past the
 * liveness timeout, a restarted origin (new incarnation), the absence
 * rule counted in reports (a slow node loses nothing), remote connection
 * ends and their grace, a data shard's member set in pieces; and the
 * MemberReport frame's codec and its refusals.
 * The state comes from the in-process commit path of one replica
 * (tests/unit/groups_fixture.h); the rules run on their own groups0.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "shard/zero/forward.h"
#include "shard/zero/groups0.h"
#include "shard/meta/lookup.h"
#include "tests/unit/commit_fixture.h"
#include "tests/unit/groups_fixture.h"

static const struct vs_u128 CLIENT_A = {0x1111, 0xaaaa};
static const struct vs_u128 CLIENT_B = {0x2222, 0xbbbb};

#define T_US   6000000ull /* the liveness timeout the rules get */
#define SELF   0u
#define NODE1  1u
#define NODE2  2u
#define INC1   0x7001ull
#define INC1_B 0x7002ull

static uint64_t
one_incarnation(void *ctx, uint32_t slot)
{
    (void)ctx;
    (void)slot;
    return FX_INCARNATION;
}

static void
boot(struct fx *f)
{
    groups_boot(f, one_incarnation, 5000000);
}

/* A state where A and B are members of group 0 (A joined by the setup,
 * B joins here). */
static void
setup(struct fx *f, struct sess *a, struct sess *b)
{
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    groups_setup(f, a, b, 2, boot, CLIENT_A, CLIENT_B);
    target(op, VS_OP_JOIN_CONSUMER_GROUP);
    ck_assert_uint_eq(op_code(f, b, op), 0);
    free(op);
    ck_assert(groups0_is_member(state(f), CLIENT_A));
    ck_assert(groups0_is_member(state(f), CLIENT_B));
}

static struct groups0 *
rules(void)
{
    struct groups0 *g = groups0_create();
    groups0_set_self(g, SELF);
    groups0_link(g, NODE1, 1, 0);
    groups0_link(g, NODE2, 1, 0);
    groups0_tenure(g, 0);
    return g;
}

static struct fwd_member
claim(const struct sess *s)
{
    struct fwd_member m;
    memset(&m, 0, sizeof(m));
    m.client = s->client;
    m.session = s->session;
    return m;
}

/* The sweep at now: 0 none, 1 A, 2 B, 3 both (bit mask). */
static unsigned
sweep(struct groups0 *g, struct fx *f, uint64_t now)
{
    struct vs_u128 *out;
    size_t n;
    unsigned mask = 0;
    groups0_sweep_members(g, state(f), now, T_US, &out, &n);
    for (size_t i = 0; i < n; i++) {
        if (vs_u128_eq(out[i], CLIENT_A))
            mask |= 1u;
        else if (vs_u128_eq(out[i], CLIENT_B))
            mask |= 2u;
        else
            ck_abort_msg("a client that is no member");
    }
    free(out);
    return mask;
}

/* After a view change no member is bound: each gets the lease, a claim
 * within it binds the member, the unclaimed one goes at the end. */
START_TEST(test_lease_and_claim)
{
    static struct fx f;
    struct sess a, b;
    setup(&f, &a, &b);
    struct groups0 *g = rules();
    ck_assert_uint_eq(sweep(g, &f, 1000000), 0); /* the lease starts */
    ck_assert_uint_eq(sweep(g, &f, 1000000 + T_US - 1), 0);
    struct fwd_member cb = claim(&b);
    ck_assert_int_eq(groups0_report(g, state(&f), NODE1, INC1, 1, &cb, 1), 1);
    ck_assert_int_eq(groups0_has(g, CLIENT_B), 1);
    ck_assert_uint_eq(groups0_session_of(g, CLIENT_B), b.session);
    ck_assert_uint_eq(sweep(g, &f, 1000000 + T_US), 1); /* A only */
    ck_assert_uint_eq(sweep(g, &f, 1000000 + 10 * T_US), 1);
    /* a new tenure forgets the remote binding: B needs a claim again */
    groups0_tenure(g, 100 * T_US);
    ck_assert_int_eq(groups0_has(g, CLIENT_B), 0);
    ck_assert_uint_eq(sweep(g, &f, 100 * T_US), 0);
    ck_assert_uint_eq(sweep(g, &f, 101 * T_US), 3);
    groups0_destroy(g);
    fx_fini(&f);
}
END_TEST

/* A claim counts only with the client's current session, for a member,
 * from another node; the own node's claims bind locally. */
START_TEST(test_claim_checks)
{
    static struct fx f;
    struct sess a, b, a2;
    setup(&f, &a, &b);
    struct groups0 *g = rules();
    struct fwd_member old = claim(&a);
    reg(&f, &a2, CLIENT_A); /* A logged in again: a newer session */
    ck_assert_uint_gt(a2.session, a.session);
    ck_assert_int_eq(groups0_report(g, state(&f), NODE1, INC1, 1, &old, 1), 0);
    ck_assert_int_eq(groups0_has(g, CLIENT_A), 0);
    struct fwd_member zero = claim(&a2);
    zero.session = 0;
    ck_assert_int_eq(groups0_report(g, state(&f), NODE1, INC1, 1, &zero, 1), 0);
    struct fwd_member stranger = claim(&a2);
    stranger.client = (struct vs_u128){0x9999, 0x9999}; /* no member */
    ck_assert_int_eq(groups0_report(g, state(&f), NODE1, INC1, 1, &stranger, 1),
                     0);
    struct fwd_member now = claim(&a2);
    ck_assert_int_eq(groups0_report(g, state(&f), SELF, INC1, 1, &now, 1), -1);
    ck_assert_int_eq(
        groups0_report(g, state(&f), VS_REPLICAS_MAX, INC1, 1, &now, 1), -1);
    /* the own node's data shard claims A: a local binding, left to the
     * connection rules (never swept as remote) */
    now.conn_id = 77;
    groups0_claim_local(g, state(&f), FX_WORKER_SLOT, FX_INCARNATION, &now, 1);
    ck_assert_int_eq(
        groups0_silent(g, CLIENT_A, FX_WORKER_SLOT, FX_INCARNATION, 77), 1);
    ck_assert_int_eq(
        groups0_silent(g, CLIENT_A, FX_WORKER_SLOT, FX_INCARNATION, 78), 0);
    ck_assert_uint_eq(sweep(g, &f, 0), 0);
    ck_assert_uint_eq(sweep(g, &f, 10 * T_US), 2); /* B: never claimed */
    /* an old session's local claim does not displace the binding */
    groups0_claim_local(g, state(&f), FX_WORKER_SLOT, FX_INCARNATION, &old, 1);
    ck_assert_uint_eq(groups0_session_of(g, CLIENT_A), a2.session);
    groups0_destroy(g);
    fx_fini(&f);
}
END_TEST

/* The origin's link down for the liveness timeout: its members are
 * dead; a link back up in time keeps them. */
START_TEST(test_origin_down)
{
    static struct fx f;
    struct sess a, b;
    setup(&f, &a, &b);
    struct groups0 *g = rules();
    groups0_bind_remote(g, CLIENT_A, a.session, NODE1, INC1);
    groups0_bind_remote(g, CLIENT_B, b.session, NODE2, 0);
    ck_assert_uint_eq(groups0_bindings(g), 2);
    groups0_link(g, NODE1, 0, 1000000);
    ck_assert_uint_eq(sweep(g, &f, 1000000 + T_US - 1), 0);
    groups0_link(g, NODE1, 1, 1000000 + T_US - 1); /* back in time */
    ck_assert_uint_eq(sweep(g, &f, 1000000 + 5 * T_US), 0);
    groups0_link(g, NODE1, 0, 10 * T_US);
    groups0_link(g, NODE1, 0, 11 * T_US); /* repeated: from the first */
    ck_assert_uint_eq(sweep(g, &f, 11 * T_US - 1), 0);
    ck_assert_uint_eq(sweep(g, &f, 11 * T_US), 1);
    ck_assert_int_eq(groups0_has(g, CLIENT_A), 0);
    ck_assert_int_eq(groups0_has(g, CLIENT_B), 1);
    /* bindings and self: an own node never counts as a remote origin */
    groups0_bind_remote(g, CLIENT_A, a.session, SELF, INC1);
    ck_assert_int_eq(groups0_has(g, CLIENT_A), 0);
    groups0_destroy(g);
    fx_fini(&f);
}
END_TEST

/* The origin restarted (a new incarnation): what its first complete
 * report does not claim is dead; an incomplete report decides nothing. */
START_TEST(test_incarnation_change)
{
    static struct fx f;
    struct sess a, b;
    setup(&f, &a, &b);
    struct groups0 *g = rules();
    groups0_bind_remote(g, CLIENT_A, a.session, NODE1, INC1);
    groups0_bind_remote(g, CLIENT_B, b.session, NODE1, INC1);
    struct fwd_member cb = claim(&b);
    /* the new incarnation's first report is not complete yet */
    ck_assert_int_eq(groups0_report(g, state(&f), NODE1, INC1_B, 0, NULL, 0),
                     0);
    ck_assert_uint_eq(sweep(g, &f, 1000000), 0);
    ck_assert_int_eq(groups0_report(g, state(&f), NODE1, INC1_B, 1, &cb, 1), 1);
    ck_assert_uint_eq(sweep(g, &f, 1000000), 1); /* A died with the node */
    ck_assert_uint_eq(sweep(g, &f, 2000000), 0); /* B lives on (claimed) */
    /* a forwarded Register of the new incarnation binds with it */
    groups0_bind_remote(g, CLIENT_A, a.session, NODE1, INC1_B);
    ck_assert_uint_eq(sweep(g, &f, 3000000), 0);
    groups0_destroy(g);
    fx_fini(&f);
}
END_TEST

/* Absence counts in complete reports: GROUPS0_MISSED_REPORTS without
 * the client and it is dead; no reports at all (a slow node whose link
 * is up) never removes anyone. */
START_TEST(test_absence_in_reports)
{
    static struct fx f;
    struct sess a, b;
    setup(&f, &a, &b);
    struct groups0 *g = rules();
    groups0_bind_remote(g, CLIENT_A, a.session, NODE1, INC1);
    groups0_bind_remote(g, CLIENT_B, b.session, NODE1, INC1);
    /* a slow node: nothing arrives for a long time, the link is up */
    ck_assert_uint_eq(sweep(g, &f, 1000 * T_US), 0);
    struct fwd_member cb = claim(&b);
    for (unsigned i = 0; i + 1 < GROUPS0_MISSED_REPORTS; i++) {
        ck_assert_int_eq(groups0_report(g, state(&f), NODE1, INC1, 1, &cb, 1),
                         1);
        /* incomplete reports (a fresh shard 0) do not count */
        groups0_report(g, state(&f), NODE1, INC1, 0, NULL, 0);
        ck_assert_uint_eq(sweep(g, &f, 1000 * T_US), 0);
    }
    groups0_report(g, state(&f), NODE1, INC1, 1, &cb, 1);
    ck_assert_uint_eq(sweep(g, &f, 1000 * T_US), 1);
    ck_assert_uint_eq(sweep(g, &f, 1001 * T_US), 0);
    groups0_destroy(g);
    fx_fini(&f);
}
END_TEST

/* A client bound on a node that joins a group long after its Register
 * is not taken for absent: reports claim members only. */
START_TEST(test_join_later)
{
    static struct fx f;
    struct sess a, b;
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    groups_setup(&f, &a, &b, 2, boot, CLIENT_A, CLIENT_B);
    struct groups0 *g = rules();
    groups0_bind_remote(g, CLIENT_A, a.session, NODE1, INC1);
    groups0_bind_remote(g, CLIENT_B, b.session, NODE1, INC1);
    struct fwd_member ca = claim(&a);
    for (unsigned i = 0; i < 3 * GROUPS0_MISSED_REPORTS; i++)
        groups0_report(g, state(&f), NODE1, INC1, 1, &ca, 1);
    target(op, VS_OP_JOIN_CONSUMER_GROUP);
    ck_assert_uint_eq(op_code(&f, &b, op), 0);
    ck_assert_uint_eq(sweep(g, &f, 0), 0);
    for (unsigned i = 0; i + 1 < GROUPS0_MISSED_REPORTS; i++)
        groups0_report(g, state(&f), NODE1, INC1, 1, &ca, 1);
    ck_assert_uint_eq(sweep(g, &f, 0), 0);
    groups0_report(g, state(&f), NODE1, INC1, 1, &ca, 1);
    ck_assert_uint_eq(sweep(g, &f, 0), 2); /* B: never claimed as member */
    free(op);
    groups0_destroy(g);
    fx_fini(&f);
}
END_TEST

/* A remote connection end with the current session removes after the
 * grace unless the client logged in again meanwhile; an end of an older
 * session, or with no session and no binding there, changes nothing. */
START_TEST(test_remote_closed)
{
    static struct fx f;
    struct sess a, b, a2;
    setup(&f, &a, &b);
    struct groups0 *g = rules();
    groups0_bind_remote(g, CLIENT_A, a.session, NODE1, INC1);
    groups0_bind_remote(g, CLIENT_B, b.session, NODE2, INC1);
    groups0_remote_closed(g, state(&f), NODE1, CLIENT_B, 0, 0); /* not there */
    ck_assert_int_eq(groups0_has(g, CLIENT_B), 1);
    groups0_remote_closed(g, state(&f), NODE2, CLIENT_B, 0, 0);
    ck_assert_int_eq(groups0_has(g, CLIENT_B), 0);
    groups0_remote_closed(g, state(&f), NODE1, CLIENT_A, a.session, 0);
    groups0_remote_closed(g, state(&f), NODE1, CLIENT_A, a.session,
                          1); /* dup */
    ck_assert_int_eq(groups0_has(g, CLIENT_A), 0);
    ck_assert_uint_eq(sweep(g, &f, GROUPS0_CLOSE_GRACE_US - 1), 0);
    ck_assert_uint_eq(sweep(g, &f, GROUPS0_CLOSE_GRACE_US), 3);
    ck_assert_uint_eq(sweep(g, &f, GROUPS0_CLOSE_GRACE_US + 1), 0);

    /* A's connection on node 1 closes as the SDK moves to the leader and
     * logs in there: the new session keeps the membership */
    groups0_remote_closed(g, state(&f), NODE1, CLIENT_A, a.session, 0);
    reg(&f, &a2, CLIENT_A);
    groups0_bind_session(g, CLIENT_A, a2.session, FX_WORKER_SLOT,
                         FX_INCARNATION, f.conn);
    ck_assert_uint_eq(sweep(g, &f, 10 * GROUPS0_CLOSE_GRACE_US) & 1u, 0);
    /* a late end of the old session: nothing */
    groups0_remote_closed(g, state(&f), NODE1, CLIENT_A, a.session, 0);
    ck_assert_uint_eq(sweep(g, &f, 20 * GROUPS0_CLOSE_GRACE_US) & 1u, 0);
    ck_assert_int_eq(groups0_has(g, CLIENT_A), 1);
    ck_assert_int_eq(groups0_session_current(state(&f), CLIENT_A, a.session),
                     0);
    ck_assert_int_eq(groups0_session_current(state(&f), CLIENT_A, a2.session),
                     1);
    groups0_destroy(g);
    fx_fini(&f);
}
END_TEST

static uint64_t g_incs[4] = {0, 5, 9, 0};

static uint64_t
inc_of(void *ctx, uint32_t slot)
{
    (void)ctx;
    return slot < 4 ? g_incs[slot] : 0;
}

/* A data shard's member set arrives in pieces; the node's claim is the
 * union of the live shards' last complete sets. */
START_TEST(test_member_pieces)
{
    struct groups0 *g = groups0_create();
    struct fwd_member e[3];
    memset(e, 0, sizeof(e));
    for (int i = 0; i < 3; i++) {
        e[i].client = (struct vs_u128){(uint64_t)i + 1, 0};
        e[i].session = 10u + (uint64_t)i;
    }
    struct fwd_member *out;
    size_t n;
    ck_assert_int_eq(groups0_members_piece(g, 1, 5, e, 2, 1), 0);
    groups0_node_members(g, inc_of, NULL, &out, &n);
    ck_assert_uint_eq(n, 0); /* not complete yet */
    free(out);
    ck_assert_int_eq(groups0_members_piece(g, 1, 5, e + 2, 1, 0), 1);
    ck_assert_int_eq(groups0_members_piece(g, 2, 9, e, 1, 0), 1);
    groups0_node_members(g, inc_of, NULL, &out, &n);
    ck_assert_uint_eq(n, 4);
    free(out);
    /* a new complete set replaces the old; an empty one empties it */
    ck_assert_int_eq(groups0_members_piece(g, 1, 5, NULL, 0, 0), 1);
    groups0_node_members(g, inc_of, NULL, &out, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert(vs_u128_eq(out[0].client, e[0].client));
    free(out);
    /* pieces of an earlier incarnation are dropped, a dead shard's set
     * is left out */
    ck_assert_int_eq(groups0_members_piece(g, 1, 5, e, 3, 1), 0);
    ck_assert_int_eq(groups0_members_piece(g, 1, 6, e, 1, 0), 1);
    g_incs[1] = 6;
    g_incs[2] = 10; /* slot 2 was respawned */
    groups0_node_members(g, inc_of, NULL, &out, &n);
    ck_assert_uint_eq(n, 1);
    free(out);
    groups0_node_members(g, NULL, NULL, &out, &n);
    ck_assert_uint_eq(n, 2);
    free(out);
    g_incs[1] = 5;
    g_incs[2] = 9;
    groups0_destroy(g);
}
END_TEST

/* The MemberReport frame: round trip, and every malformed one refused. */
START_TEST(test_report_frame)
{
    struct vs_u128 cluster = {0x5151, 0x2727};
    struct fwd_member c[2], ev[1];
    memset(c, 0, sizeof(c));
    memset(ev, 0, sizeof(ev));
    c[0].client = CLIENT_A;
    c[0].session = 7;
    c[0].conn_id = 99; /* not sent */
    c[1].client = CLIENT_B;
    c[1].session = 8;
    ev[0].client = CLIENT_B;
    ev[0].session = 6;
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    forward0_report_frame(cluster, 2, 4, INC1, 3, VS_MEMBER_REPORT_COMPLETE, c,
                          2, ev, 1, &w);
    ck_assert_uint_eq(w.len, VS_HEADER_SIZE + 3 * VS_MEMBER_ENTRY_SIZE);
    struct vs_hdr_member_report h;
    const struct fwd_member *e;
    ck_assert_int_eq(forward0_decode_report(w.data, w.len, 2, cluster, &h, &e),
                     0);
    ck_assert_uint_eq(h.incarnation, INC1);
    ck_assert_uint_eq(h.seq, 3);
    ck_assert_uint_eq(h.claims, 2);
    ck_assert_uint_eq(h.events, 1);
    ck_assert_uint_eq(h.flags, VS_MEMBER_REPORT_COMPLETE);
    ck_assert(vs_u128_eq(e[0].client, CLIENT_A));
    ck_assert_uint_eq(e[0].conn_id, 0);
    ck_assert_uint_eq(e[2].session, 6);
    /* another sender, another cluster, a short frame */
    ck_assert_int_eq(forward0_decode_report(w.data, w.len, 1, cluster, &h, &e),
                     -EBADMSG);
    struct vs_u128 other = {1, 1};
    ck_assert_int_eq(forward0_decode_report(w.data, w.len, 2, other, &h, &e),
                     -EBADMSG);
    ck_assert_int_eq(
        forward0_decode_report(w.data, w.len - 32, 2, cluster, &h, &e),
        -EBADMSG);
    /* a flipped body byte, then a flipped header byte */
    w.data[VS_HEADER_SIZE + 5] ^= 1;
    ck_assert_int_eq(forward0_decode_report(w.data, w.len, 2, cluster, &h, &e),
                     -EBADMSG);
    w.data[VS_HEADER_SIZE + 5] ^= 1;
    w.data[140] ^= 1;
    ck_assert_int_eq(forward0_decode_report(w.data, w.len, 2, cluster, &h, &e),
                     -EBADMSG);
    /* counts that do not match the size, unknown flags (resealed) */
    vs_wbuf_reset(&w);
    forward0_report_frame(cluster, 2, 4, INC1, 3, 2, c, 2, ev, 0, &w);
    ck_assert_int_eq(forward0_decode_report(w.data, w.len, 2, cluster, &h, &e),
                     -EBADMSG);
    vs_wbuf_reset(&w);
    forward0_report_frame(cluster, 2, 4, INC1, 3, 0, NULL, 0, NULL, 0, &w);
    ck_assert_int_eq(forward0_decode_report(w.data, w.len, 2, cluster, &h, &e),
                     0);
    memcpy(&h, w.data, sizeof(h));
    h.claims = 1;
    vs_frame_seal((struct vs_header *)&h);
    memcpy(w.data, &h, sizeof(h));
    ck_assert_int_eq(forward0_decode_report(w.data, w.len, 2, cluster, &h, &e),
                     -EBADMSG);
    vs_wbuf_fini(&w);
}
END_TEST

/* A ForwardRequest names the forwarder's incarnation. */
START_TEST(test_forward_incarnation)
{
    struct vs_u128 cluster = {0x5151, 0x2727};
    struct forward0 f;
    forward0_init(&f, 0x1234);
    ck_assert_uint_ne(f.incarnation, 0);
    uint8_t payload[VS_HEADER_SIZE + 8];
    memset(payload, 0, sizeof(payload));
    struct vs_hdr_request *rq = (struct vs_hdr_request *)payload;
    rq->client = CLIENT_A;
    rq->request = 3;
    rq->operation = VS_OP_CREATE_STREAM;
    struct forward0_origin o;
    memset(&o, 0, sizeof(o));
    memcpy(&o.req, payload, sizeof(o.req));
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    ck_assert_int_eq(forward0_request(&f, &o, payload, sizeof(payload), cluster,
                                      1, 0, 0, &w),
                     0);
    uint64_t nonce, inc = 0;
    struct vs_hdr_request req;
    const uint8_t *body;
    uint32_t body_len;
    ck_assert_int_eq(forward0_decode_request_inc(w.data, w.len, cluster, &nonce,
                                                 &inc, &req, &body, &body_len),
                     0);
    ck_assert_uint_eq(inc, f.incarnation);
    ck_assert_uint_eq(body_len, 8);
    vs_wbuf_fini(&w);
    forward0_fini(&f);
}
END_TEST

static Suite *
groups0_cluster_suite(void)
{
    Suite *s = suite_create("groups0_cluster");
    TCase *tc = tcase_create("rules");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_lease_and_claim);
    tcase_add_test(tc, test_claim_checks);
    tcase_add_test(tc, test_origin_down);
    tcase_add_test(tc, test_incarnation_change);
    tcase_add_test(tc, test_absence_in_reports);
    tcase_add_test(tc, test_join_later);
    tcase_add_test(tc, test_remote_closed);
    tcase_add_test(tc, test_member_pieces);
    tcase_add_test(tc, test_report_frame);
    tcase_add_test(tc, test_forward_incarnation);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(groups0_cluster_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
