/*
 * tests/unit/check_forward0.c - the backup's table of forwarded requests
 * (shard/zero/forward.h): frames round-trip sealed, a result is relayed
 * only once this node applied its op, every entry is answered exactly
 * once (relay, 57 on a primary change or link loss, 57 on timeouts),
 * forged, foreign and stale results are dropped, and a full table says
 * so.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/wire.h"
#include "shard/zero/forward.h"

static const struct vs_u128 CLUSTER = {0x1234, 0x5678};

struct answers {
    unsigned n;
    uint32_t status[8];
    uint64_t conn[8];
    uint32_t flags[8];
    uint32_t frame_len[8];
};

static void
on_answer(void *ctx, const struct forward0_answer *a)
{
    struct answers *s = ctx;
    ck_assert_uint_lt(s->n, 8);
    s->status[s->n] = a->status;
    s->conn[s->n] = a->origin.conn_id;
    s->flags[s->n] = a->flags;
    s->frame_len[s->n] = a->frame_len;
    s->n++;
}

/* A request payload: header + a small op body. */
static void
payload(struct vs_wbuf *w, uint64_t request)
{
    struct vs_hdr_request r;
    memset(&r, 0, sizeof(r));
    r.f.command = VS_CMD_REQUEST;
    r.f.size = VS_HEADER_SIZE + 5;
    r.client = (struct vs_u128){7, 9};
    r.request = request;
    r.operation = VS_OP_CREATE_STREAM;
    vs_wr_bytes(w, &r, sizeof(r));
    vs_wr_bytes(w, "hello", 5);
}

static struct forward0_origin
origin(uint64_t conn, const struct vs_wbuf *p)
{
    struct forward0_origin o;
    memset(&o, 0, sizeof(o));
    o.slot = 1;
    o.incarnation = 3;
    o.conn_id = conn;
    memcpy(&o.req, p->data, sizeof(o.req));
    return o;
}

/* The primary's answer to the ForwardRequest in fr: a Reply for op. */
static void
result_for(const struct vs_wbuf *fr, uint8_t primary, uint64_t op,
           struct vs_wbuf *out)
{
    uint64_t nonce;
    struct vs_hdr_request req;
    const uint8_t *body;
    uint32_t body_len;
    ck_assert_int_eq(forward0_decode_request(fr->data, fr->len, CLUSTER, &nonce,
                                             &req, &body, &body_len),
                     0);
    ck_assert_uint_eq(body_len, 5);
    ck_assert(memcmp(body, "hello", 5) == 0);
    struct vs_hdr_reply r;
    memset(&r, 0, sizeof(r));
    r.f.command = VS_CMD_REPLY;
    r.f.size = sizeof(r);
    r.op = op;
    forward0_result_frame(CLUSTER, primary, 1, nonce, op, 1, 42, 5, req.client,
                          &r, sizeof(r), out);
}

START_TEST(test_relay_after_apply)
{
    struct forward0 f;
    forward0_init(&f, 0xabc0);
    struct vs_wbuf p, fr, res;
    vs_wbuf_init(&p);
    vs_wbuf_init(&fr);
    vs_wbuf_init(&res);
    payload(&p, 1);
    struct forward0_origin o = origin(11, &p);
    ck_assert_int_eq(forward0_request(&f, &o, p.data, (uint32_t)p.len, CLUSTER,
                                      2, 1, 1, &fr),
                     0);
    ck_assert_uint_eq(fr.len, VS_HEADER_SIZE + p.len);
    result_for(&fr, 1, 40, &res);
    /* from another replica than the one asked: forged, dropped */
    ck_assert_int_eq(forward0_on_result(&f, 0, res.data, res.len, CLUSTER),
                     -EBADMSG);
    /* a flipped byte breaks the seal */
    res.data[VS_HEADER_SIZE + 3] ^= 1;
    ck_assert_int_eq(forward0_on_result(&f, 1, res.data, res.len, CLUSTER),
                     -EBADMSG);
    res.data[VS_HEADER_SIZE + 3] ^= 1;
    /* another cluster */
    struct vs_u128 other = {1, 1};
    ck_assert_int_eq(forward0_on_result(&f, 1, res.data, res.len, other),
                     -EBADMSG);
    ck_assert_int_eq(forward0_on_result(&f, 1, res.data, res.len, CLUSTER), 0);
    /* the same result again: no such request any more */
    ck_assert_int_eq(forward0_on_result(&f, 1, res.data, res.len, CLUSTER),
                     -ENOENT);
    struct answers a = {0};
    forward0_release(&f, 39, on_answer, &a); /* not applied yet */
    ck_assert_uint_eq(a.n, 0);
    forward0_release(&f, 40, on_answer, &a);
    ck_assert_uint_eq(a.n, 1);
    ck_assert_uint_eq(a.status[0], 0);
    ck_assert_uint_eq(a.conn[0], 11);
    ck_assert_uint_eq(a.flags[0], 1);
    ck_assert_uint_eq(a.frame_len[0], VS_HEADER_SIZE);
    forward0_release(&f, 100, on_answer, &a); /* exactly once */
    ck_assert_uint_eq(a.n, 1);
    ck_assert_uint_eq(f.used, 0);
    vs_wbuf_fini(&p);
    vs_wbuf_fini(&fr);
    vs_wbuf_fini(&res);
    forward0_fini(&f);
}
END_TEST

START_TEST(test_primary_change_and_timeouts)
{
    struct forward0 f;
    forward0_init(&f, 0x1000);
    struct vs_wbuf p, fr, res;
    vs_wbuf_init(&p);
    vs_wbuf_init(&fr);
    vs_wbuf_init(&res);
    payload(&p, 2);
    struct forward0_origin o1 = origin(1, &p), o2 = origin(2, &p),
                           o3 = origin(3, &p);
    ck_assert_int_eq(forward0_request(&f, &o1, p.data, (uint32_t)p.len, CLUSTER,
                                      2, 1, 1, &fr),
                     0);
    vs_wbuf_reset(&fr);
    ck_assert_int_eq(forward0_request(&f, &o2, p.data, (uint32_t)p.len, CLUSTER,
                                      2, 1, 0, &fr),
                     0);
    vs_wbuf_reset(&fr);
    ck_assert_int_eq(forward0_request(&f, &o3, p.data, (uint32_t)p.len, CLUSTER,
                                      2, 1, 0, &fr),
                     0);
    result_for(&fr, 0, 9, &res);
    ck_assert_int_eq(forward0_on_result(&f, 0, res.data, res.len, CLUSTER), 0);
    struct answers a = {0};
    /* primary is now 0: the request sent to 1 is answered 57 at once */
    forward0_tick(&f, 1, 0, on_answer, &a);
    ck_assert_uint_eq(a.n, 1);
    ck_assert_uint_eq(a.status[0], VS_E_TRANSIENT_NOT_COMMITTED);
    ck_assert_uint_eq(a.conn[0], 1);
    /* the one waiting for primary 0 waits until its timeout */
    for (unsigned t = 0; t < FORWARD0_PRIMARY_TICKS - 1; t++)
        forward0_tick(&f, 1, 0, on_answer, &a);
    ck_assert_uint_eq(a.n, 1);
    forward0_tick(&f, 1, 0, on_answer, &a);
    forward0_tick(&f, 1, 0, on_answer, &a);
    ck_assert_uint_eq(a.n, 2);
    ck_assert_uint_eq(a.conn[1], 2);
    ck_assert_uint_eq(a.status[1], VS_E_TRANSIENT_NOT_COMMITTED);
    /* the parked result of conn 3 expires if op 9 is never applied */
    for (unsigned t = 0; t < FORWARD0_APPLY_TICKS + 1; t++)
        forward0_tick(&f, 0, 0, on_answer, &a);
    ck_assert_uint_eq(a.n, 3);
    ck_assert_uint_eq(a.conn[2], 3);
    ck_assert_uint_eq(a.status[2], VS_E_TRANSIENT_NOT_COMMITTED);
    ck_assert_uint_eq(f.used, 0);
    ck_assert_uint_eq(f.expired, 1);
    ck_assert_uint_eq(f.failed, 2);
    vs_wbuf_fini(&p);
    vs_wbuf_fini(&fr);
    vs_wbuf_fini(&res);
    forward0_fini(&f);
}
END_TEST

START_TEST(test_bad_input_and_full_table)
{
    struct forward0 f;
    forward0_init(&f, 0);
    struct vs_wbuf p, fr;
    vs_wbuf_init(&p);
    vs_wbuf_init(&fr);
    payload(&p, 3);
    struct forward0_origin o = origin(5, &p);
    /* a payload without a request header */
    ck_assert_int_eq(
        forward0_request(&f, &o, p.data, 100, CLUSTER, 2, 1, 1, &fr), -EINVAL);
    /* truncated and mislabelled frames do not decode */
    ck_assert_int_eq(forward0_request(&f, &o, p.data, (uint32_t)p.len, CLUSTER,
                                      2, 1, 1, &fr),
                     0);
    uint64_t nonce;
    struct vs_hdr_request req;
    const uint8_t *body;
    uint32_t bl;
    for (size_t cut = 0; cut < fr.len; cut += 37)
        ck_assert_int_eq(forward0_decode_request(fr.data, cut, CLUSTER, &nonce,
                                                 &req, &body, &bl),
                         -EBADMSG);
    fr.data[60] = VS_CMD_FORWARD_RESULT; /* command byte: seal breaks */
    ck_assert_int_eq(forward0_decode_request(fr.data, fr.len, CLUSTER, &nonce,
                                             &req, &body, &bl),
                     -EBADMSG);
    ck_assert_int_eq(forward0_on_result(&f, 1, fr.data, 100, CLUSTER),
                     -EBADMSG);
    /* fill the table: the next one is refused, nothing is lost */
    for (unsigned i = 1; i < FORWARD0_MAX; i++) {
        vs_wbuf_reset(&fr);
        ck_assert_int_eq(forward0_request(&f, &o, p.data, (uint32_t)p.len,
                                          CLUSTER, 2, 1, 1, &fr),
                         0);
    }
    vs_wbuf_reset(&fr);
    ck_assert_int_eq(forward0_request(&f, &o, p.data, (uint32_t)p.len, CLUSTER,
                                      2, 1, 1, &fr),
                     -ENOBUFS);
    ck_assert_uint_eq(f.used, FORWARD0_MAX);
    vs_wbuf_fini(&p);
    vs_wbuf_fini(&fr);
    forward0_fini(&f);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("forward0");
    TCase *t = tcase_create("table");
    tcase_add_test(t, test_relay_after_apply);
    tcase_add_test(t, test_primary_change_and_timeouts);
    tcase_add_test(t, test_bad_input_and_full_table);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
