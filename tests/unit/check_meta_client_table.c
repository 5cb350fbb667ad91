/*
 * tests/unit/check_meta_client_table.c - the client table: every
 * check_request outcome and its single answer, register/re-register/
 * logout, duplicate replies byte-identical, CreatePAT never cached with
 * its token, eviction order (smallest latest_commit, first slot on ties)
 * across checkpoint/restore, and the capacity knob applied before a full
 * table is restored.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "shard/meta/client_table.h"
#include "shard/meta/lookup.h"
#include "shard/meta/snapshot_codec.h"
#include "meta_fixture.h"

static void *st;
static struct th_run run;
static struct meta_caps caps;
static struct meta_client_table ct;

static void
setup(void)
{
    th_caps(&caps);
    st = th_state(&caps);
    th_run_init(&run);
    meta_ct_init(&ct);
    ck_assert_uint_eq(th_genesis(st, &run), 0);
}

static void
teardown(void)
{
    meta_ct_fini(&ct);
    meta_result_fini(&run.res);
    free(st);
}

static struct vs_u128
ck_of(uint64_t req)
{
    struct vs_u128 c = {req * 7919, 0};
    return c;
}

static uint32_t
stream_req(uint64_t client, uint64_t req, const char *name)
{
    struct meta_op op;
    meta_op_init(&op, VS_OP_CREATE_STREAM);
    meta_op_set_name(&op, name, strlen(name));
    return fx_request(st, &run, &ct, client, 0, req, &op);
}

static enum meta_ct_outcome
check(uint64_t client, uint64_t session, uint64_t req, struct vs_u128 c,
      const uint8_t **reply, size_t *len)
{
    const uint8_t *r;
    size_t n;
    if (!reply) {
        reply = &r;
        len = &n;
    }
    return meta_ct_check_request(&ct, st, th_client(client), session, req, c,
                                 reply, len);
}

START_TEST(test_outcomes)
{
    fx_register(st, &run, &ct, 0xA, 0);
    uint64_t epoch = meta_session_by_client(st, th_client(0xA))->epoch;
    ck_assert_uint_eq(epoch, run.op);
    ck_assert_int_eq(check(0xB, epoch, 1, ck_of(1), NULL, NULL),
                     META_CT_NO_SESSION);
    ck_assert_int_eq(check(0xA, epoch, 1, ck_of(1), NULL, NULL), META_CT_NEW);
    ck_assert_uint_eq(stream_req(0xA, 1, "s1"), 0);
    const uint8_t *reply;
    size_t len;
    ck_assert_int_eq(check(0xA, epoch, 1, ck_of(1), &reply, &len),
                     META_CT_DUPLICATE);
    /* the cached reply is the exact frame recorded at commit */
    struct vs_wbuf body;
    vs_wbuf_init(&body);
    meta_reply_body_write(0, run.res.payload.data, run.res.payload.len, &body);
    size_t fl;
    uint8_t *frame =
        th_reply_frame(run.op, 1, ck_of(1), body.data, body.len, &fl);
    ck_assert_uint_eq(len, fl);
    ck_assert_int_eq(memcmp(reply, frame, fl), 0);
    free(frame);
    vs_wbuf_fini(&body);
    struct vs_u128 other = {1, 2};
    ck_assert_int_eq(check(0xA, epoch, 1, other, NULL, NULL),
                     META_CT_CHECKSUM_MISMATCH);
    ck_assert_int_eq(check(0xA, epoch - 1, 2, ck_of(2), NULL, NULL),
                     META_CT_SESSION_TOO_LOW);
    ck_assert_int_eq(check(0xA, epoch + 1, 2, ck_of(2), NULL, NULL),
                     META_CT_EPOCH_AHEAD);
    /* gaps are fine: New */
    ck_assert_int_eq(check(0xA, epoch, 9, ck_of(9), NULL, NULL), META_CT_NEW);
    /* age request 1 out of the 5-reply ring (Register is never cached) */
    for (uint64_t q = 2; q <= 6; q++) {
        char n[4] = {'s', (char)('0' + q), 0, 0};
        stream_req(0xA, q, n);
    }
    ck_assert_int_eq(check(0xA, epoch, 1, ck_of(1), NULL, NULL),
                     META_CT_ALREADY_APPLIED);
    ck_assert_int_eq(check(0xA, epoch, 2, ck_of(2), NULL, NULL),
                     META_CT_DUPLICATE);
    /* a failed op is executed too: its refusal is the cached reply */
    ck_assert_uint_eq(stream_req(0xA, 7, "s1"),
                      VS_E_STREAM_NAME_ALREADY_EXISTS);
    ck_assert_int_eq(check(0xA, epoch, 7, ck_of(7), &reply, &len),
                     META_CT_DUPLICATE);
    ck_assert_uint_eq(vs_load_u32(reply + VS_HEADER_SIZE + 8),
                      VS_E_STREAM_NAME_ALREADY_EXISTS);
    /* check_request changes nothing */
    struct vs_wbuf a, b;
    vs_wbuf_init(&a);
    vs_wbuf_init(&b);
    meta_snapshot_encode(st, &ct, &a);
    for (int i = 0; i < 10; i++)
        check(0xA, epoch, (uint64_t)i, ck_of((uint64_t)i), NULL, NULL);
    meta_snapshot_encode(st, &ct, &b);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_int_eq(memcmp(a.data, b.data, a.len), 0);
    vs_wbuf_fini(&a);
    vs_wbuf_fini(&b);
}
END_TEST

START_TEST(test_answers)
{
    uint8_t reason;
    struct vs_u128 c = {1, 0};
    ck_assert_int_eq(meta_ct_answer(META_CT_NEW, c, &reason), META_CT_EXECUTE);
    ck_assert_int_eq(meta_ct_answer(META_CT_DUPLICATE, c, &reason),
                     META_CT_REPLY);
    ck_assert_int_eq(meta_ct_answer(META_CT_NO_SESSION, c, &reason),
                     META_CT_EVICT);
    ck_assert_uint_eq(reason, 1);
    ck_assert_int_eq(meta_ct_answer(META_CT_SESSION_TOO_LOW, c, &reason),
                     META_CT_EVICT);
    ck_assert_uint_eq(reason, 7);
    ck_assert_int_eq(meta_ct_answer(META_CT_EPOCH_AHEAD, c, &reason),
                     META_CT_EVICT);
    ck_assert_uint_eq(reason, 12);
    ck_assert_int_eq(meta_ct_answer(META_CT_CHECKSUM_MISMATCH, c, &reason),
                     META_CT_EVICT);
    ck_assert_uint_eq(reason, 5);
    ck_assert_int_eq(meta_ct_answer(META_CT_ALREADY_APPLIED, c, &reason),
                     META_CT_EVICT);
    ck_assert_uint_eq(reason, 12);
    for (int o = META_CT_NEW; o <= META_CT_CHECKSUM_MISMATCH; o++)
        ck_assert_str_ne(meta_ct_outcome_name(o), "unknown");
}
END_TEST

START_TEST(test_reregister_and_logout)
{
    fx_register(st, &run, &ct, 0xA, 0);
    stream_req(0xA, 1, "s1");
    stream_req(0xA, 2, "s2");
    uint64_t e1 = meta_session_by_client(st, th_client(0xA))->epoch;
    fx_register(st, &run, &ct, 0xA, 0);
    const struct meta_session *s = meta_session_by_client(st, th_client(0xA));
    ck_assert_uint_gt(s->epoch, e1);
    ck_assert_uint_eq(s->watermark, 2);
    ck_assert_int_eq(check(0xA, s->epoch, 2, ck_of(2), NULL, NULL),
                     META_CT_DUPLICATE);
    ck_assert_int_eq(check(0xA, e1, 3, ck_of(3), NULL, NULL),
                     META_CT_SESSION_TOO_LOW);
    struct meta_op op;
    meta_op_init(&op, VS_OP_LOGOUT);
    ck_assert_uint_eq(th_apply_full(st, &run, 0, th_client(0xA), 3, &op), 0);
    ck_assert_ptr_null(meta_session_by_client(st, th_client(0xA)));
    ck_assert_int_eq(check(0xA, s->epoch, 4, ck_of(4), NULL, NULL),
                     META_CT_NO_SESSION);
    /* a register of an unknown or inactive user fails */
    meta_op_init(&op, VS_OP_REGISTER);
    op.user_id = 5;
    ck_assert_uint_eq(th_apply_full(st, &run, 5, th_client(0xE), 0, &op),
                      VS_E_INVALID_CREDENTIALS);
}
END_TEST

/* A request admitted while its client still had a session, committed
 * after the session ended (a logout here; an eviction by other clients'
 * registers in a full table is the same), never executes: no watermark
 * could record it, so a retry after a new register would run it twice. */
START_TEST(test_sessionless_request_never_executes)
{
    fx_register(st, &run, &ct, 0xB, 0);
    struct meta_op op;
    meta_op_init(&op, VS_OP_LOGOUT);
    ck_assert_uint_eq(th_apply_full(st, &run, 0, th_client(0xB), 1, &op), 0);
    ck_assert_ptr_null(meta_session_by_client(st, th_client(0xB)));
    meta_op_init(&op, VS_OP_CREATE_STREAM);
    meta_op_set_name(&op, "once", 4);
    ck_assert_uint_eq(th_apply_full(st, &run, 0, th_client(0xB), 2, &op),
                      VS_E_UNAUTHENTICATED);
    ck_assert_ptr_null(meta_stream_by_name(st, "once", 4));
    /* registered again, the retry executes exactly once */
    fx_register(st, &run, &ct, 0xB, 0);
    ck_assert_uint_eq(th_apply_full(st, &run, 0, th_client(0xB), 2, &op), 0);
    ck_assert_ptr_nonnull(meta_stream_by_name(st, "once", 4));
    ck_assert_uint_eq(meta_session_by_client(st, th_client(0xB))->watermark, 2);
    /* internal ops (client 0) and unnumbered ones still run */
    meta_op_set_name(&op, "internal", 8);
    ck_assert_uint_eq(th_apply_full(st, &run, 0, th_client(0), 0, &op), 0);
}
END_TEST

START_TEST(test_create_pat_never_cached)
{
    fx_register(st, &run, &ct, 0xA, 0);
    struct meta_op op;
    meta_op_init(&op, VS_OP_CREATE_PAT);
    meta_op_set_name(&op, "tok", 3);
    uint8_t dg[32];
    memset(dg, 3, 32);
    meta_op_set_secret(&op, dg, 32);
    ck_assert_uint_eq(th_apply_full(st, &run, 0, th_client(0xA), 1, &op), 0);
    /* the live reply carries the token, appended by the serving layer */
    uint8_t body[4 + 1 + 68];
    memset(body, 0, 4);
    body[4] = 68;
    memset(body + 5, 'T', 68);
    size_t fl;
    uint8_t *f = th_reply_frame(run.op, 1, ck_of(1), body, sizeof(body), &fl);
    meta_ct_record_reply(&ct, st, th_client(0xA), VS_OP_CREATE_PAT, f, fl);
    free(f);
    const uint8_t *reply;
    size_t len;
    uint64_t epoch = meta_session_by_client(st, th_client(0xA))->epoch;
    ck_assert_int_eq(check(0xA, epoch, 1, ck_of(1), &reply, &len),
                     META_CT_DUPLICATE);
    ck_assert_uint_eq(len, VS_HEADER_SIZE + 12);
    ck_assert_uint_eq(vs_load_u32(reply + VS_HEADER_SIZE), 1);
    ck_assert_uint_eq(vs_load_u32(reply + VS_HEADER_SIZE + 8),
                      VS_E_PAT_ALREADY_EXISTS);
    ck_assert_ptr_null(memchr(reply + VS_HEADER_SIZE, 'T', 12));
    ck_assert_uint_eq(vs_load_u32(reply + 48), len);
}
END_TEST

/* Victim of the next register into a full table of `s`. */
static uint64_t
victim_after_register(void *s, struct th_run *r, uint64_t newcomer)
{
    struct meta_op op;
    meta_op_init(&op, VS_OP_REGISTER);
    op.user_id = 0;
    ck_assert_uint_eq(th_apply_full(s, r, 0, th_client(newcomer), 0, &op), 0);
    if (r->res.evicted_slot == META_NONE)
        return 0;
    return r->res.evicted_client.lo;
}

START_TEST(test_eviction_order_survives_restore)
{
    /* capacity 4: clients 1..4 in slots 0..3 */
    for (uint64_t c = 1; c <= 4; c++)
        fx_register(st, &run, &ct, c, 0);
    /* latest commits: client 3 oldest after 1, 2 and 4 act */
    stream_req(1, 1, "a");
    stream_req(2, 1, "b");
    stream_req(4, 1, "c");
    /* checkpoint and restore */
    struct vs_wbuf e;
    vs_wbuf_init(&e);
    meta_snapshot_encode(st, &ct, &e);
    void *s2 = th_state(&caps);
    struct meta_client_table ct2;
    meta_ct_init(&ct2);
    ck_assert_int_eq(meta_snapshot_decode(e.data, e.len, s2, &ct2),
                     META_SNAP_OK);
    struct th_run r2 = run;
    meta_result_init(&r2.res);
    ck_assert_uint_eq(victim_after_register(st, &run, 9), 3);
    ck_assert_uint_eq(victim_after_register(s2, &r2, 9), 3);
    ck_assert_uint_eq(run.res.session_slot, 2);
    ck_assert_uint_eq(r2.res.session_slot, 2);
    /* ties: first slot. Fresh table, four registers with no requests:
     * latest_commit differs (register op), so force a tie through the
     * transfer form, which sets latest_commit from the replies */
    meta_result_fini(&r2.res);
    meta_ct_fini(&ct2);
    free(s2);
    vs_wbuf_fini(&e);
}
END_TEST

START_TEST(test_capacity_knob_full_table_restore)
{
    for (uint64_t c = 1; c <= 4; c++)
        fx_register(st, &run, &ct, c, 0);
    struct vs_wbuf e;
    vs_wbuf_init(&e);
    meta_snapshot_encode(st, &ct, &e);
    /* a node configured with 2 slots restores a full table of 4 */
    struct meta_caps small = caps;
    small.clients = 2;
    void *s2 = th_state(&small);
    ck_assert_uint_eq(meta_hdr_c(s2)->client_capacity, 2);
    struct meta_client_table ct2;
    meta_ct_init(&ct2);
    ck_assert_int_eq(meta_snapshot_decode(e.data, e.len, s2, &ct2),
                     META_SNAP_OK);
    ck_assert_uint_eq(meta_hdr_c(s2)->client_capacity, 4);
    for (uint64_t c = 1; c <= 4; c++)
        ck_assert_ptr_nonnull(meta_session_by_client(s2, th_client(c)));
    struct th_run r2 = run;
    meta_result_init(&r2.res);
    ck_assert_uint_eq(victim_after_register(s2, &r2, 7), 1);
    /* a node configured with 8 grows to 8: no eviction */
    struct meta_caps big = caps;
    big.clients = 8;
    void *s3 = th_state(&big);
    ck_assert_int_eq(meta_snapshot_decode(e.data, e.len, s3, NULL),
                     META_SNAP_OK);
    ck_assert_uint_eq(meta_hdr_c(s3)->client_capacity, 8);
    ck_assert_uint_eq(victim_after_register(s3, &r2, 8), 0);
    /* the transfer form installs with the same rule */
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    ck_assert_int_eq(meta_ct_transfer_encode(&ct, st, &w), 0);
    struct meta_ct_image img;
    ck_assert_int_eq(meta_ct_transfer_decode(w.data, w.len, &img), 0);
    void *s4 = th_state(&small);
    ck_assert_uint_eq(th_genesis(s4, &r2), 0);
    ck_assert_int_eq(meta_ct_install_sessions(s4, &img), 0);
    ck_assert_uint_eq(meta_hdr_c(s4)->client_capacity, 4);
    struct meta_client_table ct4;
    meta_ct_init(&ct4);
    meta_ct_install_replies(&ct4, s4, &img);
    for (uint32_t i = 0; i < img.count; i++) /* rings as encoded */
        ck_assert_int_eq(meta_ct_latest(&ct4, s4, i) != NULL,
                         img.e[i].ring_len > 0);
    /* ties: every entry's latest_commit = its register op here, so the
     * smallest is client 1 in slot 0 */
    ck_assert_uint_eq(victim_after_register(s4, &r2, 11), 1);
    meta_ct_image_fini(&img);
    meta_ct_fini(&ct4);
    vs_wbuf_fini(&w);
    meta_result_fini(&r2.res);
    meta_ct_fini(&ct2);
    free(s2);
    free(s3);
    free(s4);
    vs_wbuf_fini(&e);
}
END_TEST

START_TEST(test_eviction_tie_first_slot)
{
    /* equal latest_commit: install a transfer image whose replies
     * carry op 0, so latest_commit = epoch, with two equal epochs */
    struct meta_ct_image img;
    img.version = 0; /* hand-built: packed */
    img.count = 4;
    img.e = calloc(4, sizeof(*img.e));
    for (uint32_t i = 0; i < 4; i++) {
        img.e[i].client = th_client(100 + i);
        img.e[i].epoch = i < 2 ? 5 : 3; /* slots 2, 3 tie lowest */
        img.e[i].ring_len = 1;
        size_t n;
        struct vs_u128 z = {0, 0};
        img.e[i].ring[0].bytes = th_reply_frame(0, 0, z, NULL, 0, &n);
        img.e[i].ring[0].len = (uint32_t)n;
    }
    ck_assert_int_eq(meta_ct_install_sessions(st, &img), 0);
    run.op = 10;
    ck_assert_uint_eq(victim_after_register(st, &run, 200), 102);
    ck_assert_uint_eq(run.res.evicted_slot, 2);
    meta_ct_image_fini(&img);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("meta_client_table");
    TCase *tc = tcase_create("client_table");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_outcomes);
    tcase_add_test(tc, test_answers);
    tcase_add_test(tc, test_reregister_and_logout);
    tcase_add_test(tc, test_create_pat_never_cached);
    tcase_add_test(tc, test_sessionless_request_never_executes);
    tcase_add_test(tc, test_eviction_order_survives_restore);
    tcase_add_test(tc, test_capacity_knob_full_table_restore);
    tcase_add_test(tc, test_eviction_tie_first_slot);
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
