/*
 * tests/integration/check_e2e_lib.c - a real vstreamd driven through the
 * C client library: full CRUD of streams, topics, partitions, users,
 * permissions and tokens; ids from 0 and lookup by name; duplicate,
 * invalid and forbidden requests refused with Iggy's codes (protocol-2
 * §12); login with a password and with a PAT; a user without rights
 * refused, then granted and allowed. One node per test case, port 0.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "tests/integration/e2e.h"

static struct vs_node node;

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
    e2e_start(&node, 0, NULL);
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
}

#define RC(c, expr, want)                                                      \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        ck_assert_msg(rc_ == (want), "%s = %d, want %d (%s)", #expr, rc_,      \
                      (want), vsc_last_error(c));                              \
    } while (0)

START_TEST(test_streams)
{
    struct vsc *c = e2e_connect(&node);
    struct vsc_stream s;
    struct vsc_stream *v;
    struct vsc_id id;
    size_t n;
    int found;
    uint32_t uid = 77;

    RC(c, vsc_ping(c), 0); /* before login */
    RC(c, vsc_login(c, "iggy", "iggy", &uid), 0);
    ck_assert_uint_eq(uid, 0);
    ck_assert_uint_gt(vsc_session(c), 0);

    RC(c, vsc_stream_create(c, "alpha", &s), 0);
    ck_assert_uint_eq(s.id, 0);
    ck_assert_str_eq(s.name, "alpha");
    ck_assert_uint_eq(s.topics_count, 0);
    RC(c, vsc_stream_create(c, "beta", &s), 0);
    ck_assert_uint_eq(s.id, 1);
    RC(c, vsc_stream_create(c, "alpha", NULL), VS_E_STREAM_NAME_ALREADY_EXISTS);

    id = vsc_id_name("beta");
    RC(c, vsc_stream_get(c, &id, &s, &found), 0);
    ck_assert(found);
    ck_assert_uint_eq(s.id, 1);
    vsc_stream_fini(&s);
    id = vsc_id_num(0);
    RC(c, vsc_stream_get(c, &id, &s, &found), 0);
    ck_assert(found);
    ck_assert_str_eq(s.name, "alpha");
    vsc_stream_fini(&s);
    id = vsc_id_name("nope");
    RC(c, vsc_stream_get(c, &id, &s, &found), 0);
    ck_assert(!found);

    RC(c, vsc_stream_list(c, &v, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(v[0].id, 0);
    ck_assert_str_eq(v[1].name, "beta");
    free(v);

    id = vsc_id_num(0);
    RC(c, vsc_stream_update(c, &id, "alpha2"), 0);
    id = vsc_id_name("alpha2");
    RC(c, vsc_stream_get(c, &id, &s, &found), 0);
    ck_assert(found);
    ck_assert_uint_eq(s.id, 0);
    vsc_stream_fini(&s);
    RC(c, vsc_stream_update(c, &id, "beta"), VS_E_STREAM_NAME_ALREADY_EXISTS);
    RC(c, vsc_stream_purge(c, &id), 0);
    RC(c, vsc_stream_delete(c, &id), 0);
    RC(c, vsc_stream_delete(c, &id), VS_E_STREAM_ID_NOT_FOUND);
    id = vsc_id_num(0);
    RC(c, vsc_stream_get(c, &id, &s, &found), 0);
    ck_assert(!found);
    RC(c, vsc_stream_purge(c, &id), VS_E_STREAM_ID_NOT_FOUND);
    /* The smallest free id is reused. */
    RC(c, vsc_stream_create(c, "gamma", &s), 0);
    ck_assert_uint_eq(s.id, 0);
    /* Any characters, case-sensitive. */
    RC(c, vsc_stream_create(c, "Gamma ström \xe2\x98\x83", &s), 0);
    ck_assert_uint_eq(s.id, 2);
    id = vsc_id_name("Gamma ström \xe2\x98\x83");
    RC(c, vsc_stream_get(c, &id, &s, &found), 0);
    ck_assert(found);
    ck_assert_uint_eq(s.id, 2);
    vsc_stream_fini(&s);
    RC(c, vsc_logout(c), 0);
    vsc_destroy(c);
}
END_TEST

START_TEST(test_topics_and_partitions)
{
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    struct vsc_topic t, *tv;
    struct vsc_stream s;
    struct vsc_id sid = vsc_id_name("s"), tid, bad = vsc_id_name("zz");
    struct vs_wbuf o;
    size_t n, i;
    int found;

    RC(c, vsc_stream_create(c, "s", NULL), 0);
    RC(c, vsc_topic_create(c, &sid, 3, "t", NULL, 0, &t), 0);
    ck_assert_uint_eq(t.id, 0);
    ck_assert_str_eq(t.name, "t");
    ck_assert_uint_eq(t.partitions_count, 3);
    ck_assert_uint_eq(t.n_partitions, 3);
    for (i = 0; i < 3; i++)
        ck_assert_uint_eq(t.partitions[i].id, i);
    ck_assert_uint_eq(t.message_expiry, UINT64_MAX);
    ck_assert_uint_eq(t.max_topic_size, UINT64_MAX);
    ck_assert_uint_eq(t.compression, 1);
    vsc_topic_fini(&t);
    RC(c, vsc_topic_create(c, &sid, 1, "t", NULL, 0, NULL),
       VS_E_TOPIC_NAME_ALREADY_EXISTS);
    RC(c, vsc_topic_create(c, &bad, 1, "t", NULL, 0, NULL),
       VS_E_STREAM_ID_NOT_FOUND);
    RC(c, vsc_topic_create(c, &sid, 1001, "big", NULL, 0, NULL),
       VS_E_TOO_MANY_PARTITIONS);

    /* Options: honoured, unknown key 4041, malformed block 3. */
    vs_wbuf_init(&o);
    vsc_opt_u64(&o, "message_expiry", 1000000);
    vsc_opt_str(&o, "compression_algorithm", "gzip");
    RC(c, vsc_topic_create(c, &sid, 0, "opts", o.data, o.len, &t), 0);
    ck_assert_uint_eq(t.id, 1);
    ck_assert_uint_eq(t.partitions_count, 0);
    ck_assert_uint_eq(t.message_expiry, 1000000);
    ck_assert_uint_eq(t.compression, 2);
    ck_assert_uint_gt(t.explicit_len, 0);
    ck_assert_uint_gt(t.derived_len, 0);
    vsc_topic_fini(&t);
    vs_wbuf_reset(&o);
    vsc_opt_u64(&o, "no_such_key", 1);
    RC(c, vsc_topic_create(c, &sid, 1, "o2", o.data, o.len, NULL),
       VS_E_UNSUPPORTED_OPTION_KEY);
    vs_wbuf_reset(&o);
    vs_wr_u8(&o, 2);
    vs_wr_u8(&o, 0);
    RC(c, vsc_topic_create(c, &sid, 1, "o3", o.data, o.len, NULL),
       VS_E_INVALID_COMMAND);
    vs_wbuf_reset(&o);
    vsc_opt_str(&o, "compression_algorithm", "lz77");
    RC(c, vsc_topic_create(c, &sid, 1, "o4", o.data, o.len, NULL),
       VS_E_INVALID_OPTION_VALUE);
    vs_wbuf_fini(&o);

    /* Lookup by names and ids; list. */
    tid = vsc_id_name("t");
    RC(c, vsc_topic_get(c, &sid, &tid, &t, &found), 0);
    ck_assert(found);
    ck_assert_uint_eq(t.n_partitions, 3);
    vsc_topic_fini(&t);
    tid = vsc_id_num(1);
    RC(c, vsc_topic_get(c, &sid, &tid, &t, &found), 0);
    ck_assert(found);
    ck_assert_str_eq(t.name, "opts");
    vsc_topic_fini(&t);
    tid = vsc_id_name("nope");
    RC(c, vsc_topic_get(c, &sid, &tid, &t, &found), 0);
    ck_assert(!found);
    RC(c, vsc_topic_list(c, &sid, &tv, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(tv[0].name, "t");
    ck_assert_str_eq(tv[1].name, "opts");
    for (i = 0; i < n; i++)
        vsc_topic_fini(&tv[i]);
    free(tv);
    RC(c, vsc_stream_get(c, &sid, &s, &found), 0);
    ck_assert(found);
    ck_assert_uint_eq(s.topics_count, 2);
    ck_assert_uint_eq(s.n_topics, 2);
    vsc_stream_fini(&s);

    /* Partitions: add (ids continue), remove the highest, refusals. */
    tid = vsc_id_name("t");
    RC(c, vsc_partitions_create(c, &sid, &tid, 2), 0);
    RC(c, vsc_topic_get(c, &sid, &tid, &t, &found), 0);
    ck_assert_uint_eq(t.n_partitions, 5);
    ck_assert_uint_eq(t.partitions[4].id, 4);
    vsc_topic_fini(&t);
    RC(c, vsc_partitions_delete(c, &sid, &tid, 2), 0);
    RC(c, vsc_topic_get(c, &sid, &tid, &t, &found), 0);
    ck_assert_uint_eq(t.n_partitions, 3);
    ck_assert_uint_eq(t.partitions[2].id, 2);
    vsc_topic_fini(&t);
    RC(c, vsc_partitions_delete(c, &sid, &tid, 10),
       VS_E_INVALID_PARTITIONS_COUNT);
    RC(c, vsc_partitions_create(c, &sid, &tid, 0), VS_E_TOO_MANY_PARTITIONS);

    /* Update, purge, delete. */
    RC(c, vsc_topic_update(c, &sid, &tid, "t2", NULL, 0), 0);
    tid = vsc_id_name("t2");
    RC(c, vsc_topic_get(c, &sid, &tid, &t, &found), 0);
    ck_assert(found);
    ck_assert_uint_eq(t.id, 0);
    vsc_topic_fini(&t);
    RC(c, vsc_topic_purge(c, &sid, &tid), 0);
    RC(c, vsc_topic_delete(c, &sid, &tid), 0);
    RC(c, vsc_topic_delete(c, &sid, &tid), VS_E_TOPIC_ID_NOT_FOUND);
    RC(c, vsc_topic_get(c, &sid, &tid, &t, &found), 0);
    ck_assert(!found);
    vsc_destroy(c);
}
END_TEST

START_TEST(test_users_and_permissions)
{
    struct vsc *root = e2e_login(&node, "iggy", "iggy");
    struct vsc *a;
    struct vsc_user u, *uv;
    struct vsc_perms p;
    struct vsc_stream_perms sp;
    struct vsc_stream *sv;
    struct vsc_id alice = vsc_id_name("alice"), rid = vsc_id_num(0);
    size_t n;
    int found;
    uint32_t uid;

    RC(root, vsc_user_create(root, "alice", "secret1", 1, NULL, &u), 0);
    ck_assert_uint_eq(u.id, 1);
    ck_assert_str_eq(u.name, "alice");
    ck_assert(!u.has_perms);
    vsc_user_fini(&u);
    RC(root, vsc_user_create(root, "alice", "x12", 1, NULL, NULL),
       VS_E_USER_ALREADY_EXISTS);
    RC(root, vsc_user_create(root, "ab", "x12", 1, NULL, NULL),
       VS_E_INVALID_USERNAME);
    RC(root, vsc_user_list(root, &uv, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(uv[0].id, 0);
    ck_assert_str_eq(uv[0].name, "iggy");
    ck_assert_str_eq(uv[1].name, "alice");
    free(uv);

    /* Without rights: refused (reads H 41, writes R 41). */
    a = e2e_connect(&node);
    RC(a, vsc_login(a, "alice", "secret1", &uid), 0);
    ck_assert_uint_eq(uid, 1);
    RC(a, vsc_stream_create(a, "mine", NULL), VS_E_UNAUTHORIZED);
    RC(a, vsc_stream_list(a, &sv, &n), VS_E_UNAUTHORIZED);
    RC(a, vsc_user_list(a, &uv, &n), VS_E_UNAUTHORIZED);
    /* Own record needs no right. */
    RC(a, vsc_user_get(a, &alice, &u, &found), 0);
    ck_assert(found);
    vsc_user_fini(&u);

    /* Granted (global manage/read streams + a stream grant): allowed on the
     * same session. */
    memset(&p, 0, sizeof p);
    memset(&sp, 0, sizeof sp);
    p.global[VSC_G_MANAGE_STREAMS] = 1;
    p.global[VSC_G_READ_STREAMS] = 1;
    sp.stream_id = 5;
    sp.flags[VSC_S_READ_STREAM] = 1;
    p.streams = &sp;
    p.n_streams = 1;
    RC(root, vsc_user_permissions(root, &alice, &p), 0);
    RC(a, vsc_stream_create(a, "mine", NULL), 0);
    RC(a, vsc_stream_list(a, &sv, &n), 0);
    ck_assert_uint_eq(n, 1);
    free(sv);
    RC(root, vsc_user_get(root, &alice, &u, &found), 0);
    ck_assert(found);
    ck_assert(u.has_perms);
    ck_assert_uint_eq(u.perms.global[VSC_G_MANAGE_STREAMS], 1);
    ck_assert_uint_eq(u.perms.global[VSC_G_MANAGE_USERS], 0);
    ck_assert_uint_eq(u.perms.n_streams, 1);
    ck_assert_uint_eq(u.perms.streams[0].stream_id, 5);
    ck_assert_uint_eq(u.perms.streams[0].flags[VSC_S_READ_STREAM], 1);
    vsc_user_fini(&u);
    /* Revoked again: refused again. */
    RC(root, vsc_user_permissions(root, &alice, NULL), 0);
    RC(a, vsc_stream_create(a, "mine2", NULL), VS_E_UNAUTHORIZED);

    /* Root is protected. */
    RC(root, vsc_user_delete(root, &rid), VS_E_CANNOT_DELETE_USER);
    RC(root, vsc_user_permissions(root, &rid, &p),
       VS_E_CANNOT_CHANGE_PERMISSIONS);

    /* Passwords: own change needs the current one. */
    RC(a, vsc_user_passwd(a, &alice, "wrong", "secret2"),
       VS_E_INVALID_CREDENTIALS);
    RC(a, vsc_user_passwd(a, &alice, "secret1", "secret2"), 0);
    vsc_destroy(a);
    a = e2e_connect(&node);
    RC(a, vsc_login(a, "alice", "secret1", NULL), VS_E_INVALID_CREDENTIALS);
    vsc_destroy(a);
    a = e2e_login(&node, "alice", "secret2");
    vsc_destroy(a);

    /* Inactive users cannot log in. */
    RC(root, vsc_user_update(root, &alice, NULL, 2), 0);
    a = e2e_connect(&node);
    RC(a, vsc_login(a, "alice", "secret2", NULL), VS_E_INVALID_CREDENTIALS);
    vsc_destroy(a);
    RC(root, vsc_user_update(root, &alice, "alice2", 1), 0);
    alice = vsc_id_name("alice2");
    RC(root, vsc_user_get(root, &alice, &u, &found), 0);
    ck_assert(found);
    ck_assert_uint_eq(u.status, 1);
    vsc_user_fini(&u);

    RC(root, vsc_user_delete(root, &alice), 0);
    RC(root, vsc_user_get(root, &alice, &u, &found), 0);
    ck_assert(!found);
    RC(root, vsc_user_delete(root, &alice), VS_E_RESOURCE_NOT_FOUND);
    vsc_destroy(root);
}
END_TEST

START_TEST(test_pats)
{
    struct vsc *root = e2e_login(&node, "iggy", "iggy");
    struct vsc *t;
    struct vsc_pat *v;
    char token[256], token2[256];
    size_t n;
    uint32_t uid = 99;

    RC(root, vsc_pat_create(root, "p1", 0, token), 0);
    ck_assert_uint_eq(strlen(token), 68);
    ck_assert_int_eq(token[67], '=');
    RC(root, vsc_pat_create(root, "p1", 0, token2), VS_E_PAT_ALREADY_EXISTS);
    RC(root, vsc_pat_list(root, &v, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(v[0].name, "p1");
    free(v);

    t = e2e_connect(&node);
    RC(t, vsc_login_pat(t, token, &uid), 0);
    ck_assert_uint_eq(uid, 0);
    RC(t, vsc_stream_create(t, "via-pat", NULL), 0);
    vsc_destroy(t);

    t = e2e_connect(&node);
    RC(t, vsc_login_pat(t, "not-a-token-at-all", NULL), VS_E_INVALID_PAT);
    vsc_destroy(t);

    RC(root, vsc_pat_delete(root, "p1"), 0);
    RC(root, vsc_pat_delete(root, "p1"), VS_E_RESOURCE_NOT_FOUND);
    t = e2e_connect(&node);
    RC(t, vsc_login_pat(t, token, NULL), VS_E_INVALID_PAT);
    vsc_destroy(t);
    vsc_destroy(root);
}
END_TEST

START_TEST(test_me_stats_cluster_clients)
{
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    struct vsc_client_info me, other, *cv;
    struct vsc_stats st;
    struct vsc_cluster cl;
    const char *port = strrchr(node.ready.client, ':') + 1;
    size_t n, i;
    int found, seen = 0;

    RC(c, vsc_stream_create(c, "one", NULL), 0);
    RC(c, vsc_me(c, &me), 0);
    ck_assert_uint_eq(me.user_id, 0);
    ck_assert_uint_eq(me.transport, 1);
    ck_assert_ptr_nonnull(strstr(me.address, "127.0.0.1:"));
    RC(c, vsc_client_get(c, me.client_id, &other, &found), 0);
    ck_assert(found);
    ck_assert_mem_eq(&me, &other, sizeof me);
    RC(c, vsc_clients(c, &cv, &n), 0);
    for (i = 0; i < n; i++)
        seen |= cv[i].client_id == me.client_id;
    ck_assert(seen);
    free(cv);
    RC(c, vsc_stats(c, &st), 0);
    ck_assert_uint_eq(st.streams_count, 1);
    ck_assert_uint_ge(st.clients_count, 1);
    RC(c, vsc_cluster(c, &cl), 0);
    ck_assert_uint_eq(cl.n_nodes, 1);
    ck_assert_uint_eq(cl.nodes[0].role, 0);
    ck_assert_uint_eq(cl.nodes[0].status, 0);
    ck_assert_str_eq(cl.nodes[0].ip, "127.0.0.1");
    ck_assert_uint_eq(cl.nodes[0].tcp, (unsigned)atoi(port));
    ck_assert_uint_eq(cl.nodes[0].quic, 0);
    vsc_cluster_fini(&cl);
    vsc_destroy(c);
}
END_TEST

static Suite *
e2e_lib_suite(void)
{
    Suite *s = suite_create("e2e_lib");
    TCase *tc = tcase_create("lib");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_streams);
    tcase_add_test(tc, test_topics_and_partitions);
    tcase_add_test(tc, test_users_and_permissions);
    tcase_add_test(tc, test_pats);
    tcase_add_test(tc, test_me_stats_cluster_clients);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(e2e_lib_suite());
    int failed;
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
