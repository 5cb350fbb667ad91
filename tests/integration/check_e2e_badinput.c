/*
 * tests/integration/check_e2e_badinput.c - bad input on raw sockets
 * against a real vstreamd: random bytes, wrong sizes, oversized frames,
 * bad checksums, unknown codes and commands, requests before login,
 * legacy logins, incompatible versions. Each gets the documented answer
 * (protocol-2 §7, §8, §12: header status, eviction, or a close); the node
 * keeps serving another session throughout, and nothing stored changes.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/errors.h"
#include "tests/integration/e2e.h"

#define WAIT_MS 15000u

static struct vs_node node;
static struct vsc *mon; /* a logged-in session that must keep working */
static char before[4096];

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
    e2e_start(&node, 0, NULL);
    mon = e2e_login(&node, "iggy", "iggy");
    ck_assert_int_eq(vsc_stream_create(mon, "keep", NULL), 0);
    ck_assert_uint_eq(e2e_stream_names(mon, before, sizeof before), 1);
}

static void
teardown(void)
{
    vsc_destroy(mon);
    vs_node_cleanup(&node);
}

/* The node still serves the other session, a new one can log in, and
 * nothing stored changed. Called at the end of every test. */
static void
unchanged(void)
{
    char after[4096];
    struct vsc *c;
    ck_assert_int_eq(vsc_ping(mon), 0);
    ck_assert_uint_eq(e2e_stream_names(mon, after, sizeof after), 1);
    ck_assert_str_eq(after, before);
    c = e2e_login(&node, "iggy", "iggy");
    ck_assert_uint_eq(e2e_stream_names(c, after, sizeof after), 1);
    vsc_destroy(c);
}

static struct vs_u128
rand_client(void)
{
    struct vs_u128 id = {0, 0};
    while (vs_u128_is_zero(id))
        ck_assert(getrandom(&id, sizeof id, 0) == (ssize_t)sizeof id);
    return id;
}

/* Builds a request frame into w (reset first). */
static void
frame(struct vs_wbuf *w, struct vs_u128 client, uint64_t session,
      uint64_t request, uint8_t op, uint32_t code, const void *body, size_t len)
{
    vs_wbuf_reset(w);
    vsc_frame_request(w, client, session, request, op, code, body, len,
                      vsc_operation_is_replicated(op));
}

static int
raw_connect(void)
{
    int fd = vs_connect(node.ready.client);
    ck_assert_int_ge(fd, 0);
    return fd;
}

/* Sends w and reads one reply frame into buf; returns its size. */
static int
exchange(int fd, const struct vs_wbuf *w, uint8_t *buf, size_t cap)
{
    int n;
    ck_assert_int_eq(e2e_send(fd, w->data, w->len), 0);
    n = e2e_recv_frame(fd, buf, cap, WAIT_MS);
    return n;
}

static uint32_t
status_of(const uint8_t *f)
{
    ck_assert_uint_eq(f[60], VS_CMD_REPLY);
    return vs_load_u32(f + 216);
}

/* Registers iggy/iggy on fd with `client`; returns the session. */
static uint64_t
raw_register(int fd, struct vs_u128 client)
{
    struct vs_wbuf b, w;
    uint8_t buf[1024];
    struct vsc_reply r;
    uint32_t uid, proto;
    uint64_t session;
    char ver[256];
    int n;
    vs_wbuf_init(&b);
    vs_wbuf_init(&w);
    vsc_body_login(&b, VSC_PROTOCOL_VERSION, "raw", "1", "iggy", "iggy");
    frame(&w, client, 0, 0, VS_OP_REGISTER, 0, b.data, b.len);
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_gt(n, 256);
    ck_assert_int_eq(vsc_reply_decode(buf, (size_t)n, &r), 0);
    ck_assert_int_eq(
        vsc_decode_login(r.payload, r.payload_len, &uid, &session, &proto, ver),
        0);
    ck_assert_uint_gt(session, 0);
    vs_wbuf_fini(&b);
    vs_wbuf_fini(&w);
    return session;
}

START_TEST(test_before_login)
{
    struct vs_u128 id = rand_client();
    struct vs_wbuf w;
    uint8_t buf[1024], name[] = "\x03xyz";
    int fd = raw_connect(), n;
    vs_wbuf_init(&w);
    /* Ping: status 0, empty body, op 2. */
    frame(&w, id, 0, 1, VS_OP_NON_REPLICATED, 1, NULL, 0);
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_eq(n, 256);
    ck_assert_uint_eq(status_of(buf), 0);
    ck_assert_uint_eq(buf[208], 2);
    /* Every other NR code, vendor codes included: H 40; the connection
     * stays. */
    frame(&w, id, 0, 1, VS_OP_NON_REPLICATED, 201, NULL, 0);
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_eq(n, 256);
    ck_assert_uint_eq(status_of(buf), VS_E_UNAUTHENTICATED);
    frame(&w, id, 0, 1, VS_OP_NON_REPLICATED, 60001, NULL, 0);
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_eq(n, 256);
    ck_assert_uint_eq(status_of(buf), VS_E_UNAUTHENTICATED);
    frame(&w, id, 0, 1, VS_OP_NON_REPLICATED, 1, NULL, 0);
    ck_assert_int_eq(exchange(fd, &w, buf, sizeof buf), 256);
    ck_assert_uint_eq(status_of(buf), 0);
    /* A replicated op before Register: Eviction 1 (NoSession). */
    frame(&w, id, 1, 1, VS_OP_CREATE_STREAM, 202, name, 4);
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_eq(n, 256);
    ck_assert_uint_eq(buf[60], VS_CMD_EVICTION);
    ck_assert_uint_eq(buf[255], VS_EVICT_NO_SESSION);
    close(fd);
    /* Legacy login code 38 as NR: Eviction 15. */
    fd = raw_connect();
    frame(&w, id, 0, 1, VS_OP_NON_REPLICATED, 38, NULL, 0);
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_eq(n, 256);
    ck_assert_uint_eq(buf[60], VS_CMD_EVICTION);
    ck_assert_uint_eq(buf[255], VS_EVICT_MALFORMED_LOGIN);
    close(fd);
    vs_wbuf_fini(&w);
    unchanged();
}
END_TEST

START_TEST(test_login_refusals)
{
    struct vs_u128 id = rand_client();
    struct vs_wbuf b, w;
    uint8_t buf[1024];
    int fd = raw_connect(), n;
    vs_wbuf_init(&b);
    vs_wbuf_init(&w);
    /* Incompatible protocol version: Eviction 14 with the window. */
    vsc_body_login(&b, 10 << 10, "raw", "1", "iggy", "iggy");
    frame(&w, id, 0, 0, VS_OP_REGISTER, 0, b.data, b.len);
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_eq(n, 256);
    ck_assert_uint_eq(buf[60], VS_CMD_EVICTION);
    ck_assert_uint_eq(buf[255], VS_EVICT_INCOMPATIBLE_PROTOCOL);
    ck_assert_uint_eq(vs_load_u32(buf + 144), 11264);
    ck_assert_uint_eq(vs_load_u32(buf + 148), 11264);
    close(fd);
    /* Malformed login body: Eviction 15. */
    fd = raw_connect();
    vs_wbuf_reset(&b);
    vs_wr_u32(&b, VSC_PROTOCOL_VERSION);
    vs_wr_u8(&b, 200); /* sdk name longer than the body */
    frame(&w, id, 0, 0, VS_OP_REGISTER, 0, b.data, b.len);
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_eq(n, 256);
    ck_assert_uint_eq(buf[60], VS_CMD_EVICTION);
    ck_assert_uint_eq(buf[255], VS_EVICT_MALFORMED_LOGIN);
    close(fd);
    /* Wrong password: Eviction 9. */
    fd = raw_connect();
    vs_wbuf_reset(&b);
    vsc_body_login(&b, VSC_PROTOCOL_VERSION, "raw", "1", "iggy", "wrong");
    frame(&w, id, 0, 0, VS_OP_REGISTER, 0, b.data, b.len);
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_eq(n, 256);
    ck_assert_uint_eq(buf[60], VS_CMD_EVICTION);
    ck_assert_uint_eq(buf[255], VS_EVICT_INVALID_CREDENTIALS);
    close(fd);
    vs_wbuf_fini(&b);
    vs_wbuf_fini(&w);
    unchanged();
}
END_TEST

START_TEST(test_after_login_codes_and_checksums)
{
    struct vs_u128 id = rand_client();
    struct vs_wbuf w;
    uint8_t buf[4096], name[] = "\x03"
                                "bad";
    uint64_t s;
    int fd = raw_connect(), n;
    vs_wbuf_init(&w);
    s = raw_register(fd, id);
    /* Unknown NR code: H 3, the connection stays. */
    frame(&w, id, s, 1, VS_OP_NON_REPLICATED, 60001, NULL, 0);
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_eq(n, 256);
    ck_assert_uint_eq(status_of(buf), VS_E_INVALID_COMMAND);
    /* A replicated command code sent as NR: H 5. */
    frame(&w, id, s, 1, VS_OP_NON_REPLICATED, 202, name, 4);
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_eq(n, 256);
    ck_assert_uint_eq(status_of(buf), VS_E_FEATURE_UNAVAILABLE);
    /* Bad request_checksum on a metadata op: H 4, nothing created. */
    frame(&w, id, s, 1, VS_OP_CREATE_STREAM, 202, name, 4);
    w.data[144] ^= 0xff;
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_eq(n, 256);
    ck_assert_uint_eq(status_of(buf), VS_E_INVALID_FORMAT);
    /* ... and on a read. */
    frame(&w, id, s, 1, VS_OP_NON_REPLICATED, 201, NULL, 0);
    vs_store_u64(w.data + 144, 12345);
    n = exchange(fd, &w, buf, sizeof buf);
    ck_assert_int_eq(n, 256);
    ck_assert_uint_eq(status_of(buf), VS_E_INVALID_FORMAT);
    /* Undecodable body (name length beyond the body): H 3. */
    {
        uint8_t bad[] = {26, 'a', 'b'};
        frame(&w, id, s, 1, VS_OP_CREATE_STREAM, 202, bad, sizeof bad);
        n = exchange(fd, &w, buf, sizeof buf);
        ck_assert_int_eq(n, 256);
        ck_assert_uint_eq(status_of(buf), VS_E_INVALID_COMMAND);
    }
    /* Still serving this connection: Ping. */
    frame(&w, id, s, 1, VS_OP_NON_REPLICATED, 1, NULL, 0);
    ck_assert_int_eq(exchange(fd, &w, buf, sizeof buf), 256);
    ck_assert_uint_eq(status_of(buf), 0);
    close(fd);
    vs_wbuf_fini(&w);
    unchanged();
}
END_TEST

START_TEST(test_framing_garbage)
{
    uint8_t junk[4096];
    struct vs_wbuf w;
    struct vs_u128 id = rand_client();
    int fd, i;
    vs_wbuf_init(&w);
    /* Random bytes: evicted or closed. */
    for (i = 0; i < 3; i++) {
        fd = raw_connect();
        ck_assert(getrandom(junk, sizeof junk, 0) == (ssize_t)sizeof junk);
        junk[60] = 5; /* even a plausible command byte does not help */
        (void)e2e_send(fd, junk, sizeof junk);
        ck_assert_msg(e2e_closed(fd, WAIT_MS), "random bytes: still open");
        close(fd);
    }
    /* size < 256. */
    fd = raw_connect();
    frame(&w, id, 0, 1, VS_OP_NON_REPLICATED, 1, NULL, 0);
    vs_store_u32(w.data + 48, 100);
    (void)e2e_send(fd, w.data, w.len);
    ck_assert(e2e_closed(fd, WAIT_MS));
    close(fd);
    /* Oversized: a metadata body over 1 MiB, and a frame over 64 MiB
     * (only the header is sent). */
    fd = raw_connect();
    (void)raw_register(fd, id);
    frame(&w, id, 1, 1, VS_OP_CREATE_STREAM, 202, NULL, 0);
    vs_store_u32(w.data + 48, 256 + 2 * 1024 * 1024);
    (void)e2e_send(fd, w.data, w.len);
    ck_assert(e2e_closed(fd, WAIT_MS));
    close(fd);
    fd = raw_connect();
    frame(&w, id, 0, 1, VS_OP_NON_REPLICATED, 1, NULL, 0);
    vs_store_u32(w.data + 48, VS_FRAME_MAX + 1);
    (void)e2e_send(fd, w.data, w.len);
    ck_assert(e2e_closed(fd, WAIT_MS));
    close(fd);
    /* A command other than Request. */
    fd = raw_connect();
    frame(&w, id, 0, 1, VS_OP_NON_REPLICATED, 1, NULL, 0);
    w.data[60] = 99;
    (void)e2e_send(fd, w.data, w.len);
    ck_assert(e2e_closed(fd, WAIT_MS));
    close(fd);
    vs_wbuf_fini(&w);
    unchanged();
}
END_TEST

START_TEST(test_dropped_without_reply)
{
    /* protocol-2 §7: operation 0, an undefined operation, client 0 get no
     * reply; the connection then still answers a Ping. */
    struct vs_u128 id = rand_client(), zero = {0, 0};
    struct vs_wbuf w;
    uint8_t buf[1024];
    int fd = raw_connect(), n;
    vs_wbuf_init(&w);
    frame(&w, zero, 0, 1, VS_OP_NON_REPLICATED, 1, NULL, 0);
    ck_assert_int_eq(e2e_send(fd, w.data, w.len), 0);
    frame(&w, id, 0, 1, 99, 0, NULL, 0);
    ck_assert_int_eq(e2e_send(fd, w.data, w.len), 0);
    frame(&w, id, 0, 1, VS_OP_NON_REPLICATED, 1, NULL, 0);
    ck_assert_int_eq(e2e_send(fd, w.data, w.len), 0);
    /* The first frame that comes back is the Ping's (possibly after a
     * close if the server treats these as framing errors: accept that
     * too, the documented answers are "no reply" or a close). */
    n = e2e_recv_frame(fd, buf, sizeof buf, WAIT_MS);
    if (n > 0) {
        ck_assert_int_eq(n, 256);
        ck_assert_uint_eq(status_of(buf), 0);
        ck_assert_uint_eq(buf[208], 2);
    } else {
        ck_assert_int_eq(n, 0);
    }
    close(fd);
    vs_wbuf_fini(&w);
    unchanged();
}
END_TEST

static Suite *
e2e_badinput_suite(void)
{
    Suite *s = suite_create("e2e_badinput");
    TCase *tc = tcase_create("badinput");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_before_login);
    tcase_add_test(tc, test_login_refusals);
    tcase_add_test(tc, test_after_login_codes_and_checksums);
    tcase_add_test(tc, test_framing_garbage);
    tcase_add_test(tc, test_dropped_without_reply);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(e2e_badinput_suite());
    int failed;
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
