/*
 * tests/integration/check_serve_basic.c - the data shards' client
 * listener on a real vstreamd (127.0.0.1, port 0, --profile test):
 * answers before login (Ping, H 40, Eviction 1 / 15), H 3 for an
 * unknown operation with the connection still usable, request_checksum
 * (H 4), failed logins (Eviction 9, Eviction 14 with the window),
 * framing errors (oversized -> Eviction 6 + close, size < 256 and
 * garbage -> close) with the node serving others, the unauthenticated
 * timeout, max_connections, and replies under output back-pressure
 * (every pipelined request answered exactly once, in order); with shard
 * 0's commit path: login (password and PAT), GetClusterMetadata, reads
 * of one's own writes, pre-consensus refusals, permissions (H/R 41),
 * ChangePassword, Logout.
 * Every wait is bounded; nodes are stopped by pid (harness).
 * Callers: make check (INTEG_TESTS, INTEG_FAST_TESTS).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/rawclient.h"

#define START_MS 20000u
#define READ_MS  10000u

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
start(const char *const *args)
{
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d (%s), status %d", rc, strerror(-rc),
                  node.status);
}

static int
conn(void)
{
    int fd = vs_connect(node.ready.client);
    ck_assert_msg(fd >= 0, "connect %s: %d", node.ready.client, fd);
    return fd;
}

/* Sends a request and reads one frame (asserted present). */
static void
roundtrip(int fd, uint8_t op, uint32_t code, const void *body, uint32_t blen,
          uint64_t request, uint64_t session, struct rc_frame *f)
{
    ck_assert_int_eq(rc_send(fd, op, code, body, blen, 77, request, session),
                     0);
    int rc = rc_read(fd, f, READ_MS);
    ck_assert_msg(rc == 1, "read: %d", rc);
}

static void
expect_reply(int fd, uint8_t op, uint32_t code, const void *body, uint32_t blen,
             uint32_t status)
{
    struct rc_frame f;
    roundtrip(fd, op, code, body, blen, op == 1 ? 0 : 1, 0, &f);
    ck_assert_uint_eq(f.command, 8);
    ck_assert_uint_eq(f.operation, op);
    ck_assert_uint_eq(f.status, status);
    ck_assert_uint_eq(f.body_len, 0);
    rc_frame_fini(&f);
}

static void
expect_eviction(int fd, uint8_t op, uint32_t code, const void *body,
                uint32_t blen, uint8_t reason)
{
    struct rc_frame f;
    roundtrip(fd, op, code, body, blen, op == 1 ? 0 : 1,
              (op == 1 || op == 2) ? 0 : 1, &f);
    ck_assert_uint_eq(f.command, 13);
    ck_assert_uint_eq(f.size, 256);
    ck_assert_uint_eq(f.reason, reason);
    ck_assert_uint_eq(f.proto_version, 11264);
    ck_assert_uint_eq(f.proto_min, 11264);
    rc_frame_fini(&f);
}

static const char *const one_shard[] = {"--shards", "1", NULL};

START_TEST(test_before_login)
{
    start(one_shard);
    int fd = conn();
    /* Ping: status 0, empty body, op 2 */
    expect_reply(fd, 2, 1, NULL, 0, 0);
    /* reads and vendor codes before login: H 40 */
    expect_reply(fd, 2, 201, NULL, 0, 40);
    expect_reply(fd, 2, 12, NULL, 0, 40);
    expect_reply(fd, 2, 60001, NULL, 0, 40);
    /* an undefined operation: H 3, the connection stays */
    expect_reply(fd, 99, 0, NULL, 0, 3);
    expect_reply(fd, 0, 0, NULL, 0, 3);
    expect_reply(fd, 2, 1, NULL, 0, 0);
    /* legacy login codes 38 / 44: Eviction 15 */
    expect_eviction(fd, 2, 38, "x", 1, 15);
    expect_eviction(fd, 2, 44, NULL, 0, 15);
    /* a replicated op before login: Eviction 1 NoSession */
    uint8_t cs[] = {3, 'a', 'b', 'c'};
    expect_eviction(fd, 128, 0, cs, sizeof(cs), 1);
    expect_eviction(fd, 3, 0, NULL, 0, 1);
    expect_eviction(fd, 160, 0, cs, sizeof(cs), 1);
    /* still serving the same connection */
    expect_reply(fd, 2, 1, NULL, 0, 0);
    close(fd);
}
END_TEST

START_TEST(test_request_checksum)
{
    start(one_shard);
    int fd = conn();
    size_t n;
    uint8_t body[1] = {1};
    uint8_t *f = rc_build(2, 13, body, 1, 77, 1, 0, &n);
    f[144] = 0x55; /* a wrong non-zero request_checksum */
    ck_assert_int_eq(rc_send_all(fd, f, n), 0);
    free(f);
    struct rc_frame r;
    ck_assert_int_eq(rc_read(fd, &r, READ_MS), 1);
    ck_assert_uint_eq(r.command, 8);
    ck_assert_uint_eq(r.status, 4);
    rc_frame_fini(&r);
    expect_reply(fd, 2, 1, NULL, 0, 0);
    close(fd);
}
END_TEST

START_TEST(test_login_refusals)
{
    start(one_shard);
    int fd = conn();
    size_t n;
    /* wrong credentials (and lengths): Eviction 9 */
    uint8_t *b = rc_login_body(11264, "iggy", "wrong-password", &n);
    expect_eviction(fd, 1, 0, b, (uint32_t)n, 9);
    free(b);
    b = rc_login_body(11264, "no", "pw", &n);
    expect_eviction(fd, 1, 0, b, (uint32_t)n, 9);
    free(b);
    /* a 0.10 client: Eviction 14 with the window @144/@148 */
    b = rc_login_body((10u << 10), "iggy", "iggy", &n);
    expect_eviction(fd, 1, 0, b, (uint32_t)n, 14);
    free(b);
    /* no ClientVersionInfo prefix: Eviction 15 */
    uint8_t junk[3] = {0, 0x2c, 0};
    expect_eviction(fd, 1, 0, junk, sizeof(junk), 15);
    /* the connection keeps serving */
    expect_reply(fd, 2, 1, NULL, 0, 0);
    close(fd);
}
END_TEST

START_TEST(test_oversized_frame)
{
    start(one_shard);
    int other = conn();
    expect_reply(other, 2, 1, NULL, 0, 0);
    int fd = conn();
    /* a metadata frame declaring 1 MiB + 1 body bytes (limit 1 MiB) */
    uint8_t h[256];
    size_t n;
    uint8_t *f = rc_build(128, 0, NULL, 0, 77, 1, 1, &n);
    memcpy(h, f, 256);
    free(f);
    uint32_t size = 256 + (1u << 20) + 1;
    memcpy(h + 48, &size, 4);
    ck_assert_int_eq(rc_send_all(fd, h, sizeof(h)), 0);
    struct rc_frame r;
    ck_assert_int_eq(rc_read(fd, &r, READ_MS), 1);
    ck_assert_uint_eq(r.command, 13);
    ck_assert_uint_eq(r.reason, 6);
    rc_frame_fini(&r);
    ck_assert_int_eq(rc_wait_closed(fd, READ_MS), 1);
    close(fd);
    /* the node keeps serving others, old and new connections */
    expect_reply(other, 2, 1, NULL, 0, 0);
    fd = conn();
    expect_reply(fd, 2, 1, NULL, 0, 0);
    close(fd);
    close(other);
}
END_TEST

START_TEST(test_garbage_closes)
{
    start(one_shard);
    int other = conn();
    /* random bytes: a "size" >= 256 but command != Request */
    int fd = conn();
    uint8_t g[512];
    uint64_t x = 0x243f6a8885a308d3ull;
    for (size_t i = 0; i < sizeof(g); i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        g[i] = (uint8_t)x;
    }
    uint32_t size = 512;
    memcpy(g + 48, &size, 4);
    g[60] = 0x77;
    ck_assert_int_eq(rc_send_all(fd, g, sizeof(g)), 0);
    ck_assert_int_eq(rc_wait_closed(fd, READ_MS), 1);
    close(fd);
    /* size < 256: close */
    fd = conn();
    size_t n;
    uint8_t *f = rc_build(2, 1, NULL, 0, 77, 1, 0, &n);
    size = 100;
    memcpy(f + 48, &size, 4);
    ck_assert_int_eq(rc_send_all(fd, f, n), 0);
    free(f);
    ck_assert_int_eq(rc_wait_closed(fd, READ_MS), 1);
    close(fd);
    /* others keep being served */
    expect_reply(other, 2, 1, NULL, 0, 0);
    close(other);
}
END_TEST

START_TEST(test_unauth_timeout)
{
    const char *const args[] = {"--shards", "1", "--unauth-timeout-ms", "300",
                                NULL};
    start(args);
    int fd = conn();
    expect_reply(fd, 2, 1, NULL, 0, 0);
    ck_assert_int_eq(rc_wait_closed(fd, READ_MS), 1);
    close(fd);
    fd = conn();
    expect_reply(fd, 2, 1, NULL, 0, 0);
    close(fd);
}
END_TEST

START_TEST(test_max_connections)
{
    const char *const args[] = {"--shards", "1", "--max-connections", "2",
                                NULL};
    start(args);
    int a = conn();
    int b = conn();
    expect_reply(a, 2, 1, NULL, 0, 0);
    expect_reply(b, 2, 1, NULL, 0, 0);
    int c = conn(); /* TCP accepts it; the shard closes it at once */
    ck_assert_int_eq(rc_wait_closed(c, READ_MS), 1);
    close(c);
    close(a);
    /* a slot is free again (bounded retry: the close reaches the shard
     * asynchronously) */
    int ok = 0;
    for (int i = 0; i < 50 && !ok; i++) {
        int d = conn();
        if (rc_send(d, 2, 1, NULL, 0, 77, 1, 0) == 0) {
            struct rc_frame f;
            if (rc_read(d, &f, 2000) == 1) {
                ok = f.command == 8 && f.status == 0;
                rc_frame_fini(&f);
            }
        }
        close(d);
        if (!ok)
            usleep(100 * 1000);
    }
    ck_assert(ok);
    expect_reply(b, 2, 1, NULL, 0, 0);
    close(b);
}
END_TEST

START_TEST(test_output_backpressure)
{
    /* a client pipelining requests without reading its replies: the
     * shard stops reading it at conn_output_max; once the client reads,
     * every request is answered exactly once, in order */
    const char *const args[] = {"--shards", "1", "--conn-output-max", "4096",
                                NULL};
    start(args);
    int fd = conn();
    const uint32_t total = 60000; /* 15 MB of pings and of replies */
    size_t n;
    uint8_t *one = rc_build(2, 1, NULL, 0, 77, 1, 0, &n);
    uint8_t *all = malloc(n * total);
    for (uint32_t i = 0; i < total; i++) {
        memcpy(all + n * i, one, n);
        uint64_t req = i + 1;
        memcpy(all + n * i + 168, &req, 8);
    }
    free(one);
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    size_t sent = 0, want = n * total;
    uint32_t got = 0;
    static uint8_t in[65536];
    size_t have = 0;
    int stalled = 0;
    for (long rounds = 0; rounds < 2000000 && got < total; rounds++) {
        if (sent < want) {
            ssize_t w = write(fd, all + sent, want - sent);
            if (w > 0)
                sent += (size_t)w;
            else if (w == -1 && errno == EAGAIN)
                stalled = 1; /* the server stopped reading us */
            else
                ck_abort_msg("write: %s", strerror(errno));
        }
        if (!stalled && sent < want)
            continue;
        /* read replies (pings: 256-byte frames, empty bodies) */
        ssize_t r = read(fd, in + have, sizeof(in) - have);
        if (r == -1 && errno == EAGAIN) {
            usleep(200);
            continue;
        }
        ck_assert_int_gt(r, 0);
        have += (size_t)r;
        size_t off = 0;
        while (have - off >= 256) {
            uint64_t req;
            memcpy(&req, in + off + 200, 8);
            ck_assert_uint_eq(in[off + 60], 8);
            ck_assert_uint_eq(req, (uint64_t)got + 1); /* in order */
            got++;
            off += 256;
        }
        memmove(in, in + off, have - off);
        have -= off;
    }
    ck_assert(stalled);
    ck_assert_uint_eq(got, total);
    free(all);
    close(fd);
}
END_TEST

/* ---- with shard 0's commit path: login, reads, proposals ---- */

static const char *const root_args[] = {
    "--shards", "2", "--with-default-root-credentials=true", NULL};

struct sess {
    int fd;
    uint64_t client;
    uint64_t session;
    uint64_t request; /* last metadata request number used */
};

static uint8_t *
pat_body(const uint8_t *token, uint8_t tlen, size_t *len)
{
    size_t n;
    uint8_t *b = rc_login_body(11264, "xx", "", &n);
    n = 4 + 1 + 8 + 1 + 13; /* keep the ClientVersionInfo prefix */
    b = realloc(b, n + 1 + tlen + 4);
    b[n++] = tlen;
    memcpy(b + n, token, tlen);
    n += tlen;
    memset(b + n, 0, 4);
    *len = n + 4;
    return b;
}

/* Register; returns the reply (asserted a Reply) */
static void
login_frame(struct sess *s, const uint8_t *body, size_t n, struct rc_frame *f)
{
    ck_assert_int_eq(rc_send(s->fd, 1, 0, body, (uint32_t)n, s->client, 0, 0),
                     0);
    ck_assert_int_eq(rc_read(s->fd, f, READ_MS), 1);
}

static void
login_ok(struct sess *s, const char *user, const char *pw, uint32_t expect_user)
{
    size_t n;
    uint8_t *b = rc_login_body(11264, user, pw, &n);
    struct rc_frame f;
    login_frame(s, b, n, &f);
    free(b);
    ck_assert_uint_eq(f.command, 8);
    ck_assert_uint_eq(f.operation, 1);
    ck_assert_uint_eq(f.status, 0);
    /* [count 0][user_id][session][protocol][version string] */
    ck_assert_uint_ge(f.body_len, 4 + 4 + 8 + 4 + 1);
    uint32_t v;
    memcpy(&v, f.body, 4);
    ck_assert_uint_eq(v, 0);
    memcpy(&v, f.body + 4, 4);
    ck_assert_uint_eq(v, expect_user);
    memcpy(&s->session, f.body + 8, 8);
    ck_assert_uint_gt(s->session, 0);
    memcpy(&v, f.body + 16, 4);
    ck_assert_uint_eq(v, 11264);
    rc_frame_fini(&f);
    s->request = 0;
}

static void
nr(struct sess *s, uint32_t code, const void *body, uint32_t blen,
   struct rc_frame *f)
{
    ck_assert_int_eq(rc_send(s->fd, 2, code, body, blen, s->client,
                             s->request + 1, s->session),
                     0);
    ck_assert_int_eq(rc_read(s->fd, f, READ_MS), 1);
    ck_assert_uint_eq(f->command, 8);
    ck_assert_uint_eq(f->operation, 2);
}

static void
meta(struct sess *s, uint8_t op, const void *body, uint32_t blen,
     struct rc_frame *f)
{
    s->request++;
    ck_assert_int_eq(
        rc_send(s->fd, op, 0, body, blen, s->client, s->request, s->session),
        0);
    ck_assert_int_eq(rc_read(s->fd, f, READ_MS), 1);
}

static uint32_t
result_code(const struct rc_frame *f)
{
    uint32_t count, code = 0;
    ck_assert_uint_ge(f->body_len, 4);
    memcpy(&count, f->body, 4);
    if (count > 0) {
        ck_assert_uint_ge(f->body_len, 12);
        memcpy(&code, f->body + 8, 4);
    }
    return code;
}

START_TEST(test_login_and_reads)
{
    start(root_args);
    struct sess s = {.fd = conn(), .client = 0x1234};
    login_ok(&s, "iggy", "iggy", 0);
    struct rc_frame f;
    /* GetClusterMetadata: config names, the address really served */
    nr(&s, 12, NULL, 0, &f);
    ck_assert_uint_eq(f.status, 0);
    {
        const uint8_t *p = f.body;
        uint32_t l;
        memcpy(&l, p, 4);
        ck_assert_uint_eq(l, 7);
        ck_assert(memcmp(p + 4, "vstream", 7) == 0);
        p += 4 + 7;
        memcpy(&l, p, 4);
        ck_assert_uint_eq(l, 1); /* nodes */
        p += 4;
        memcpy(&l, p, 4);
        ck_assert(memcmp(p + 4, "vstream-node", l) == 0);
        p += 4 + l;
        memcpy(&l, p, 4);
        ck_assert(memcmp(p + 4, "127.0.0.1", l) == 0);
        p += 4 + l;
        uint16_t ports[4];
        memcpy(ports, p, 8);
        const char *colon = strrchr(node.ready.client, ':');
        ck_assert_uint_eq(ports[0], (uint16_t)atoi(colon + 1));
        ck_assert_uint_eq(ports[1], 0);
        ck_assert_uint_eq(ports[2], 0);
        ck_assert_uint_eq(ports[3], 0);
        ck_assert_uint_eq(p[8], 0); /* Leader */
        ck_assert_uint_eq(p[9], 0); /* Healthy */
        ck_assert_uint_eq(f.body_len, (uint32_t)(p + 10 - f.body));
    }
    rc_frame_fini(&f);
    /* after login: unknown code H 3 and the connection stays; a
     * replicated code as NR H 5; 39 as NR status 0 empty */
    nr(&s, 60001, NULL, 0, &f);
    ck_assert_uint_eq(f.status, 3);
    rc_frame_fini(&f);
    nr(&s, 1, NULL, 0, &f);
    ck_assert_uint_eq(f.status, 0);
    rc_frame_fini(&f);
    nr(&s, 202, "\x01x", 2, &f);
    ck_assert_uint_eq(f.status, 5);
    rc_frame_fini(&f);
    nr(&s, 39, NULL, 0, &f);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(f.body_len, 0);
    rc_frame_fini(&f);
    /* GetMe: user 0 */
    nr(&s, 20, NULL, 0, &f);
    ck_assert_uint_eq(f.status, 0);
    uint32_t v;
    memcpy(&v, f.body + 4, 4);
    ck_assert_uint_eq(v, 0);
    rc_frame_fini(&f);
    /* CreateStream "orders": result section + StreamRecord id 0 */
    meta(&s, 128, "\x06orders", 7, &f);
    ck_assert_uint_eq(f.operation, 128);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(result_code(&f), 0);
    memcpy(&v, f.body + 4, 4);
    ck_assert_uint_eq(v, 0);
    rc_frame_fini(&f);
    /* read your writes, by name, on the same connection */
    nr(&s, 200, "\x02\x06orders", 8, &f);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_gt(f.body_len, 33);
    ck_assert(memcmp(f.body + 33, "orders", 6) == 0);
    rc_frame_fini(&f);
    /* duplicate name: R 1012; not found read: status 0, empty */
    meta(&s, 128, "\x06orders", 7, &f);
    ck_assert_uint_eq(result_code(&f), 1012);
    rc_frame_fini(&f);
    nr(&s, 200, "\x01\x04\x09\x00\x00\x00", 6, &f);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(f.body_len, 0);
    rc_frame_fini(&f);
    /* pre-consensus checks in the header: bad name H 3, option 4041 */
    meta(&s, 128, "\x00", 1, &f);
    ck_assert_uint_eq(f.status, 3);
    ck_assert_uint_eq(f.body_len, 0);
    rc_frame_fini(&f);
    meta(&s, 132,
         "\x01\x04\x00\x00\x00\x00\x01\x00\x00\x00\x01t"
         "\x02\x03\x00\x00\x00"
         "foo\x02\x01\x00\x00\x00x",
         12 + 8 + 6, &f);
    ck_assert_uint_eq(f.status, 4041);
    rc_frame_fini(&f);
    /* DescribeOptions(topic): 8 entries */
    nr(&s, 13, "\x01", 1, &f);
    ck_assert_uint_eq(f.status, 0);
    memcpy(&v, f.body, 4);
    ck_assert_uint_eq(v, 8);
    rc_frame_fini(&f);
    /* a second connection sees the stream (another data shard, maybe) */
    struct sess s2 = {.fd = conn(), .client = 0x5678};
    login_ok(&s2, "iggy", "iggy", 0);
    nr(&s2, 201, NULL, 0, &f);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(f.body_len, 33 + 6 + 4);
    rc_frame_fini(&f);
    close(s2.fd);
    /* Logout: status 0, empty body; then reads are H 40 */
    meta(&s, 3, NULL, 0, &f);
    ck_assert_uint_eq(f.command, 8);
    ck_assert_uint_eq(f.operation, 3);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(f.body_len, 0);
    rc_frame_fini(&f);
    nr(&s, 201, NULL, 0, &f);
    ck_assert_uint_eq(f.status, 40);
    rc_frame_fini(&f);
    close(s.fd);
}
END_TEST

START_TEST(test_users_and_tokens)
{
    start(root_args);
    struct sess root = {.fd = conn(), .client = 0x1111};
    login_ok(&root, "iggy", "iggy", 0);
    struct rc_frame f;
    /* CreatePAT: 00000000 + [68][token] */
    meta(&root, 146, "\x03tok\x00\x00\x00\x00\x00\x00\x00\x00", 12, &f);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(f.body_len, 4 + 1 + 68);
    ck_assert_uint_eq(result_code(&f), 0);
    ck_assert_uint_eq(f.body[4], 68);
    uint8_t token[68];
    memcpy(token, f.body + 5, 68);
    ck_assert_uint_eq(token[67], '=');
    rc_frame_fini(&f);
    /* CreateUser alice (no permissions), and an inactive bob */
    meta(&root, 141,
         "\x05"
         "alice"
         "\x07"
         "secret1"
         "\x01\x00",
         16, &f);
    ck_assert_uint_eq(result_code(&f), 0);
    rc_frame_fini(&f);
    meta(&root, 141,
         "\x03"
         "bob"
         "\x07"
         "secret1"
         "\x02\x00",
         14, &f);
    ck_assert_uint_eq(result_code(&f), 0);
    rc_frame_fini(&f);

    /* PAT login on a new connection: root's user id */
    struct sess p = {.fd = conn(), .client = 0x2222};
    size_t n;
    uint8_t *b = pat_body(token, 68, &n);
    login_frame(&p, b, n, &f);
    ck_assert_uint_eq(f.command, 8);
    ck_assert_uint_eq(f.status, 0);
    uint32_t v;
    memcpy(&v, f.body + 4, 4);
    ck_assert_uint_eq(v, 0);
    rc_frame_fini(&f);
    /* a wrong token: Eviction 10 */
    b[4 + 1 + 8 + 1 + 13 + 1] ^= 1;
    p.client = 0x2223;
    login_frame(&p, b, n, &f);
    ck_assert_uint_eq(f.command, 13);
    ck_assert_uint_eq(f.reason, 10);
    rc_frame_fini(&f);
    free(b);
    close(p.fd);

    /* alice: logs in, reads are denied (H 41), metadata ops R 41 */
    struct sess a = {.fd = conn(), .client = 0x3333};
    login_ok(&a, "alice", "secret1", 1);
    nr(&a, 201, NULL, 0, &f);
    ck_assert_uint_eq(f.status, 41);
    rc_frame_fini(&f);
    meta(&a, 128,
         "\x03"
         "abc",
         4, &f);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(result_code(&f), 41);
    rc_frame_fini(&f);
    /* her own password: wrong current H 42, right one accepted */
    meta(&a, 144,
         "\x02\x05"
         "alice"
         "\x05"
         "wrong"
         "\x07"
         "secret2",
         22, &f);
    ck_assert_uint_eq(f.status, 42);
    rc_frame_fini(&f);
    meta(&a, 144,
         "\x02\x05"
         "alice"
         "\x07"
         "secret1"
         "\x07"
         "secret2",
         24, &f);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(result_code(&f), 0);
    rc_frame_fini(&f);
    close(a.fd);
    /* the old password no longer works (Eviction 9), the new one does */
    struct sess a2 = {.fd = conn(), .client = 0x4444};
    b = rc_login_body(11264, "alice", "secret1", &n);
    login_frame(&a2, b, n, &f);
    free(b);
    ck_assert_uint_eq(f.command, 13);
    ck_assert_uint_eq(f.reason, 9);
    rc_frame_fini(&f);
    a2.client = 0x4445;
    login_ok(&a2, "alice", "secret2", 1);
    close(a2.fd);
    /* an inactive user: Eviction 9 (password shape) */
    struct sess bb = {.fd = conn(), .client = 0x5555};
    b = rc_login_body(11264, "bob", "secret1", &n);
    login_frame(&bb, b, n, &f);
    free(b);
    ck_assert_uint_eq(f.command, 13);
    ck_assert_uint_eq(f.reason, 9);
    rc_frame_fini(&f);
    close(bb.fd);
    close(root.fd);
}
END_TEST

/* A request forwarded to a shard 0 that dies before answering gets 57
 * (resend) instead of silence; the resend of the same frame then runs it
 * exactly once, and a second resend gets the identical cached reply. */
START_TEST(test_forward_lost_with_shard0)
{
    start(root_args);
    struct sess s = {.fd = conn(), .client = 0x5157};
    login_ok(&s, "iggy", "iggy", 0);
    pid_t shard0 = node.ready.shard_pids[0];
    ck_assert_int_gt(shard0, 0);
    ck_assert_int_eq(kill(shard0, SIGSTOP), 0);
    static const uint8_t body[] = {6, 'l', 'o', 's', 't', '-', '1'};
    struct rc_frame f;
    s.request++;
    ck_assert_int_eq(rc_send(s.fd, 128, 0, body, sizeof(body), s.client,
                             s.request, s.session),
                     0);
    /* the forward is stuck in the stopped shard 0: no answer yet */
    ck_assert_int_eq(rc_read(s.fd, &f, 300), -ETIMEDOUT);
    ck_assert_int_eq(kill(shard0, SIGKILL), 0);
    ck_assert_int_eq(rc_read(s.fd, &f, READ_MS), 1);
    ck_assert_uint_eq(f.status, 57);
    ck_assert_uint_eq(f.body_len, 0);
    rc_frame_fini(&f);
    /* resend the identical frame until the new shard 0 serves it */
    uint8_t *first = NULL;
    uint32_t first_len = 0;
    for (int i = 0; i < 400 && first == NULL; i++) {
        ck_assert_int_eq(rc_send(s.fd, 128, 0, body, sizeof(body), s.client,
                                 s.request, s.session),
                         0);
        ck_assert_int_eq(rc_read(s.fd, &f, READ_MS), 1);
        if (f.status == 57) {
            rc_frame_fini(&f);
            usleep(50000);
            continue;
        }
        ck_assert_uint_eq(f.status, 0);
        ck_assert_uint_eq(result_code(&f), 0);
        first_len = f.body_len;
        first = malloc(first_len);
        memcpy(first, f.body, first_len);
        rc_frame_fini(&f);
    }
    ck_assert_ptr_nonnull(first);
    ck_assert_int_eq(rc_send(s.fd, 128, 0, body, sizeof(body), s.client,
                             s.request, s.session),
                     0);
    ck_assert_int_eq(rc_read(s.fd, &f, READ_MS), 1);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(f.body_len, first_len);
    ck_assert(memcmp(f.body, first, first_len) == 0);
    rc_frame_fini(&f);
    free(first);
    /* exactly one stream of that name: GetStreams lists one record */
    nr(&s, 201, NULL, 0, &f);
    ck_assert_uint_eq(f.status, 0);
    int found = 0;
    for (uint32_t i = 0; i + 7 <= f.body_len; i++)
        found += memcmp(f.body + i, "\x06lost-1", 7) == 0;
    ck_assert_int_eq(found, 1);
    rc_frame_fini(&f);
    close(s.fd);
}
END_TEST

static Suite *
serve_basic_suite(void)
{
    Suite *s = suite_create("serve_basic");
    TCase *t = tcase_create("listener");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_before_login);
    tcase_add_test(t, test_request_checksum);
    tcase_add_test(t, test_login_refusals);
    tcase_add_test(t, test_oversized_frame);
    tcase_add_test(t, test_garbage_closes);
    tcase_add_test(t, test_unauth_timeout);
    tcase_add_test(t, test_max_connections);
    tcase_add_test(t, test_output_backpressure);
    tcase_add_test(t, test_login_and_reads);
    tcase_add_test(t, test_users_and_tokens);
    tcase_add_test(t, test_forward_lost_with_shard0);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(serve_basic_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
