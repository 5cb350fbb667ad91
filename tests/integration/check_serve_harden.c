/*
 * tests/integration/check_serve_harden.c - hardening of the data shards'
 * client listener on real vstreamd nodes (127.0.0.1, --profile test):
 * logins on a node that has just started (answered 57 or 58 until the
 * published metadata can judge them, never refused as final); failed
 * logins throttled per user name and per address across data shards;
 * the frame timeout; stale authenticated clients evicted (StaleClient);
 * sessions that end with their credentials, permission changes at once;
 * GetClients and max_connections node-wide.
 * Every wait is bounded; nodes are stopped by pid (harness).
 * Callers: make check (INTEG_TESTS, INTEG_FAST_TESTS).
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
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
sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t
now_ms(void)
{
    return vs_monotonic_ns() / 1000000u;
}

/* A port that was free a moment ago on 127.0.0.1. */
static unsigned
free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t l = sizeof(a);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* A fresh node each round; the client connects the instant the port
 * answers and logs in at once, resending on the transient statuses 57
 * and 58 as the SDKs do (57: the metadata shard's engine is not ready to
 * propose yet): the login succeeds and is never refused. */
START_TEST(test_login_the_instant_the_port_answers)
{
    int retried_rounds = 0;
    for (int round = 0; round < 5; round++) {
        struct vs_node n;
        ck_assert_int_eq(vs_node_init(&n), 0);
        char addr[64];
        snprintf(addr, sizeof(addr), "127.0.0.1:%u", free_port());
        const char *args[] = {"--shards",
                              "2",
                              "--client-addr",
                              addr,
                              "--with-default-root-credentials=true",
                              NULL};
        ck_assert_int_eq(vs_node_spawn(&n, args), 0);
        int fd = -1;
        uint64_t t0 = now_ms();
        while (fd < 0 && now_ms() - t0 < START_MS) {
            fd = vs_connect(addr);
            if (fd < 0)
                sleep_ms(1);
        }
        ck_assert_msg(fd >= 0, "round %d: %s never answered", round, addr);
        size_t len;
        uint8_t *b = rc_login_body(11264, "iggy", "iggy", &len);
        int retries = 0;
        struct rc_frame f;
        for (;;) {
            ck_assert_int_eq(rc_send(fd, 1, 0, b, (uint32_t)len,
                                     0x5150u + (uint64_t)round, 0, 0),
                             0);
            ck_assert_int_eq(rc_read(fd, &f, READ_MS), 1);
            ck_assert_msg(f.command == 8,
                          "round %d: login refused as final: command %u "
                          "reason %u after %d retries",
                          round, f.command, f.reason, retries);
            if (f.status != 58 && f.status != 57)
                break;
            rc_frame_fini(&f);
            retries++;
            ck_assert_int_lt(retries, 10000);
            sleep_ms(1);
        }
        free(b);
        ck_assert_uint_eq(f.operation, 1);
        ck_assert_uint_eq(f.status, 0);
        rc_frame_fini(&f);
        if (retries > 0)
            retried_rounds++;
        close(fd);
        /* the ready file still means "serves" */
        t0 = now_ms();
        while (vs_node_read_ready(&n) != 0 && now_ms() - t0 < START_MS)
            sleep_ms(5);
        ck_assert_str_eq(n.ready.client, addr);
        int st = vs_node_stop(&n, START_MS);
        ck_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        vs_node_cleanup(&n);
    }
    printf("check_serve_harden: %d of 5 fresh nodes answered 57 or 58 first\n",
           retried_rounds);
}
END_TEST

/* One login on a new connection: returns the frame's command (8 reply,
 * 13 eviction) and stores status / reason. */
static int
login_once(const char *addr, const char *user, const char *pw, uint32_t *status,
           uint8_t *reason)
{
    int fd = vs_connect(addr);
    ck_assert_msg(fd >= 0, "connect %s: %d", addr, fd);
    size_t len;
    uint8_t *b = rc_login_body(11264, user, pw, &len);
    static uint64_t client = 0x7000;
    ck_assert_int_eq(rc_send(fd, 1, 0, b, (uint32_t)len, ++client, 0, 0), 0);
    free(b);
    struct rc_frame f;
    ck_assert_int_eq(rc_read(fd, &f, READ_MS), 1);
    int cmd = f.command;
    *status = f.status;
    *reason = f.reason;
    rc_frame_fini(&f);
    close(fd);
    return cmd;
}

static void
expect_login(const char *addr, const char *user, const char *pw, int command,
             uint32_t status_or_reason)
{
    uint32_t st = 0;
    uint8_t reason = 0;
    int cmd = login_once(addr, user, pw, &st, &reason);
    ck_assert_msg(cmd == command &&
                      (cmd == 8 ? st : reason) == status_or_reason,
                  "login %s: command %d status %u reason %u, want %d/%u", user,
                  cmd, st, reason, command, status_or_reason);
}

/* Logs in until the readiness gate lets the login through. */
static void
login_when_ready(const char *addr, const char *user, const char *pw)
{
    for (int i = 0; i < 2000; i++) {
        uint32_t st = 0;
        uint8_t reason = 0;
        int cmd = login_once(addr, user, pw, &st, &reason);
        ck_assert_int_eq(cmd, 8);
        if (st == 0)
            return;
        ck_assert_uint_eq(st, 58);
        sleep_ms(5);
    }
    ck_abort_msg("never logged in");
}

static int
count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strstr(line, needle) != NULL)
            n++;
    fclose(f);
    return n;
}

/* Failed logins are throttled per user name and per source address on
 * every data shard, whatever connection the next attempt uses: 58 inside
 * the back-off (also for the right password), exponential, reset by a
 * success; logged once per interval. */
START_TEST(test_login_throttle)
{
    const char *args[] = {"--shards",
                          "2",
                          "--with-default-root-credentials=true",
                          "--login-backoff-base-ms",
                          "1000",
                          "--login-backoff-max-ms",
                          "8000",
                          NULL};
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d", rc);
    const char *addr = node.ready.client;
    login_when_ready(addr, "iggy", "iggy");
    expect_login(addr, "iggy", "wrong-password", 13, 9);
    uint64_t t0 = now_ms();
    /* new connections (spread over the data shards): the right password
     * and another name from this address wait too */
    for (int i = 0; i < 6; i++)
        expect_login(addr, "iggy", "iggy", 8, 58);
    expect_login(addr, "someone", "whatever", 8, 58);
    ck_assert_uint_lt(now_ms() - t0, 1000);
    sleep_ms(1100);
    /* the second failure in a row: 2 s */
    expect_login(addr, "iggy", "wrong-again", 13, 9);
    t0 = now_ms();
    sleep_ms(1100);
    expect_login(addr, "iggy", "iggy", 8, 58);
    ck_assert_uint_lt(now_ms() - t0, 2000);
    sleep_ms(1000);
    expect_login(addr, "iggy", "iggy", 8, 0);
    /* the name is forgiven by the success; the address is not (its last
     * back-off has passed, so the next failure doubles it again) */
    expect_login(addr, "iggy", "iggy", 8, 0);
    /* failures logged once per interval (10 s): one line per name and
     * address despite two failures */
    ck_assert_int_eq(count_lines(node.log_file, "failed logins as user 'iggy'"),
                     1);
    ck_assert_int_eq(count_lines(node.log_file, "failed logins from 127.0.0.1"),
                     1);
    int st = vs_node_stop(&node, START_MS);
    ck_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

/* Logs in on fd (client id `client`), retrying 58; returns the session. */
static uint64_t
login_on(int fd, uint64_t client, const char *user, const char *pw)
{
    size_t len;
    uint8_t *b = rc_login_body(11264, user, pw, &len);
    for (int i = 0; i < 2000; i++) {
        ck_assert_int_eq(rc_send(fd, 1, 0, b, (uint32_t)len, client, 0, 0), 0);
        struct rc_frame f;
        ck_assert_int_eq(rc_read(fd, &f, READ_MS), 1);
        ck_assert_uint_eq(f.command, 8);
        if (f.status == 0) {
            uint64_t session = 0;
            ck_assert_uint_ge(f.body_len, 16);
            memcpy(&session, f.body + 8, 8);
            rc_frame_fini(&f);
            free(b);
            return session;
        }
        ck_assert_uint_eq(f.status, 58);
        rc_frame_fini(&f);
        sleep_ms(5);
    }
    ck_abort_msg("login never answered");
    return 0;
}

/* A frame whose first byte arrived must complete within frame_timeout_ms,
 * logged in or not; a frame completed in pieces inside it is served. */
START_TEST(test_frame_timeout)
{
    const char *args[] = {"--shards",
                          "1",
                          "--frame-timeout-ms",
                          "600",
                          "--with-default-root-credentials=true",
                          NULL};
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d", rc);
    const char *addr = node.ready.client;
    size_t n;
    /* a Ping in two pieces 200 ms apart: served */
    int fd = vs_connect(addr);
    ck_assert_int_ge(fd, 0);
    uint8_t *f = rc_build(2, 1, NULL, 0, 77, 1, 0, &n);
    ck_assert_int_eq(rc_send_all(fd, f, 100), 0);
    sleep_ms(200);
    ck_assert_int_eq(rc_send_all(fd, f + 100, n - 100), 0);
    struct rc_frame r;
    ck_assert_int_eq(rc_read(fd, &r, READ_MS), 1);
    ck_assert_uint_eq(r.command, 8);
    ck_assert_uint_eq(r.status, 0);
    rc_frame_fini(&r);
    /* idle between frames is not a partial frame: still open */
    ck_assert_int_eq(rc_wait_closed(fd, 1000), 0);
    /* half a header, then nothing: closed */
    uint64_t t0 = now_ms();
    ck_assert_int_eq(rc_send_all(fd, f, 100), 0);
    ck_assert_int_eq(rc_wait_closed(fd, READ_MS), 1);
    ck_assert_uint_ge(now_ms() - t0, 500);
    close(fd);
    /* a logged-in client trickling a frame byte by byte (more bytes never
     * extend the deadline): closed */
    fd = vs_connect(addr);
    ck_assert_int_ge(fd, 0);
    login_on(fd, 0x4242, "iggy", "iggy");
    t0 = now_ms();
    int closed = 0;
    for (size_t i = 0; i < n && !closed; i++) {
        if (rc_send_all(fd, f + i, 1) != 0)
            break;
        closed = rc_wait_closed(fd, 50);
    }
    if (!closed)
        closed = rc_wait_closed(fd, READ_MS);
    ck_assert_int_eq(closed, 1);
    ck_assert_uint_lt(now_ms() - t0, 5000);
    close(fd);
    free(f);
    ck_assert(vs_file_contains(node.log_file, "is still incomplete"));
    /* the node serves on */
    fd = vs_connect(addr);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(rc_send(fd, 2, 1, NULL, 0, 78, 1, 0), 0);
    ck_assert_int_eq(rc_read(fd, &r, READ_MS), 1);
    ck_assert_uint_eq(r.status, 0);
    rc_frame_fini(&r);
    close(fd);
    int st = vs_node_stop(&node, START_MS);
    ck_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

/* An authenticated client silent past 1.2 x the heartbeat interval is
 * evicted with StaleClient (13) and its session ends; one that pings
 * keeps it. */
START_TEST(test_stale_client_evicted)
{
    const char *args[] = {"--shards",
                          "2",
                          "--group-heartbeat-interval-ms",
                          "500",
                          "--with-default-root-credentials=true",
                          NULL};
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d", rc);
    const char *addr = node.ready.client;
    int quiet = vs_connect(addr), busy = vs_connect(addr);
    ck_assert(quiet >= 0 && busy >= 0);
    uint64_t sq = login_on(quiet, 0x1001, "iggy", "iggy");
    uint64_t sb = login_on(busy, 0x1002, "iggy", "iggy");
    struct rc_frame r;
    for (int i = 0; i < 10; i++) { /* 1.5 s, limit 0.6 s */
        ck_assert_int_eq(rc_send(busy, 2, 1, NULL, 0, 0x1002, 1, sb), 0);
        ck_assert_int_eq(rc_read(busy, &r, READ_MS), 1);
        ck_assert_uint_eq(r.command, 8);
        ck_assert_uint_eq(r.status, 0);
        rc_frame_fini(&r);
        sleep_ms(150);
    }
    /* the silent one: the eviction is waiting before any answer */
    ck_assert_int_eq(rc_read(quiet, &r, READ_MS), 1);
    ck_assert_uint_eq(r.command, 13);
    ck_assert_uint_eq(r.reason, 13);
    rc_frame_fini(&r);
    /* its session is gone: a metadata request is refused (Eviction 1) */
    ck_assert_int_eq(rc_send(quiet, 128, 0, "\x01x", 2, 0x1001, 1, sq), 0);
    ck_assert_int_eq(rc_read(quiet, &r, READ_MS), 1);
    ck_assert_uint_eq(r.command, 13);
    ck_assert_uint_eq(r.reason, 1);
    rc_frame_fini(&r);
    /* the busy one still has its session: GetMe (code 20) answers */
    ck_assert_int_eq(rc_send(busy, 2, 20, NULL, 0, 0x1002, 1, sb), 0);
    ck_assert_int_eq(rc_read(busy, &r, READ_MS), 1);
    ck_assert_uint_eq(r.command, 8);
    ck_assert_uint_eq(r.status, 0);
    rc_frame_fini(&r);
    ck_assert(vs_file_contains(node.log_file, "evicted (StaleClient)"));
    close(quiet);
    close(busy);
    int st = vs_node_stop(&node, START_MS);
    ck_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

/* A Register body of the token shape (the ClientVersionInfo prefix of
 * rc_login_body, then [tlen][token][ctx_len u32 = 0]). */
static uint8_t *
pat_body(const uint8_t *token, uint8_t tlen, size_t *len)
{
    size_t n;
    uint8_t *b = rc_login_body(11264, "xx", "", &n);
    n = 4 + 1 + 8 + 1 + 13;
    b = realloc(b, n + 1 + tlen + 4);
    b[n++] = tlen;
    memcpy(b + n, token, tlen);
    n += tlen;
    memset(b + n, 0, 4);
    *len = n + 4;
    return b;
}

struct sess {
    int fd;
    uint64_t client, session, request;
};

static void
sess_login(struct sess *s, const char *addr, uint64_t client,
           const uint8_t *body, size_t len)
{
    s->fd = vs_connect(addr);
    ck_assert_int_ge(s->fd, 0);
    s->client = client;
    s->request = 0;
    ck_assert_int_eq(rc_send(s->fd, 1, 0, body, (uint32_t)len, client, 0, 0),
                     0);
    struct rc_frame f;
    ck_assert_int_eq(rc_read(s->fd, &f, READ_MS), 1);
    ck_assert_msg(f.command == 8 && f.status == 0, "login: %u/%u/%u", f.command,
                  f.status, f.reason);
    memcpy(&s->session, f.body + 8, 8);
    rc_frame_fini(&f);
}

/* A replicated request; returns its result code (first entry, 0 if
 * none). */
static uint32_t
sess_meta(struct sess *s, uint8_t op, const void *body, uint32_t len,
          struct rc_frame *out)
{
    s->request++;
    ck_assert_int_eq(
        rc_send(s->fd, op, 0, body, len, s->client, s->request, s->session), 0);
    struct rc_frame f;
    ck_assert_int_eq(rc_read(s->fd, &f, READ_MS), 1);
    ck_assert_msg(f.command == 8 && f.status == 0 && f.body_len >= 4,
                  "op %u: command %u status %u reason %u", op, f.command,
                  f.status, f.reason);
    /* the result section: [count u32], the first entry's code @8 */
    uint32_t count, r = 0;
    memcpy(&count, f.body, 4);
    if (count > 0) {
        ck_assert_uint_ge(f.body_len, 12);
        memcpy(&r, f.body + 8, 4);
    }
    if (out != NULL)
        *out = f;
    else
        rc_frame_fini(&f);
    return r;
}

/* The session ended by itself: an eviction with `reason` arrives
 * without a request. */
static void
expect_ended(struct sess *s, uint8_t reason)
{
    struct rc_frame f;
    ck_assert_int_eq(rc_read(s->fd, &f, READ_MS), 1);
    ck_assert_msg(f.command == 13 && f.reason == reason,
                  "want eviction %u, got command %u reason %u", reason,
                  f.command, f.reason);
    rc_frame_fini(&f);
    /* and it is over: a metadata op is NoSession (1) */
    s->request++;
    ck_assert_int_eq(
        rc_send(s->fd, 128, 0, "\x01z", 2, s->client, s->request, s->session),
        0);
    ck_assert_int_eq(rc_read(s->fd, &f, READ_MS), 1);
    ck_assert_uint_eq(f.command, 13);
    ck_assert_uint_eq(f.reason, 1);
    rc_frame_fini(&f);
    close(s->fd);
}

/* Nothing arrives on s within ms (its session goes on). */
static void
expect_quiet(struct sess *s, uint32_t ms)
{
    struct rc_frame f;
    ck_assert_int_eq(rc_read(s->fd, &f, ms), -ETIMEDOUT);
}

static void
pat_create(struct sess *root, const char *name, uint64_t expiry_us,
           uint8_t token[68])
{
    uint8_t b[64];
    size_t nl = strlen(name);
    b[0] = (uint8_t)nl;
    memcpy(b + 1, name, nl);
    memcpy(b + 1 + nl, &expiry_us, 8);
    struct rc_frame f;
    ck_assert_uint_eq(sess_meta(root, 146, b, (uint32_t)(nl + 9), &f), 0);
    ck_assert_uint_eq(f.body_len, 4 + 1 + 68);
    memcpy(token, f.body + 5, 68);
    rc_frame_fini(&f);
}

/* Sessions end with their credentials: token deleted or expired ->
 * Eviction 10, user deactivated -> 11, user deleted -> 9; a permission
 * change applies to open sessions at once. */
START_TEST(test_sessions_end_with_credentials)
{
    const char *args[] = {"--shards", "2",
                          "--with-default-root-credentials=true", NULL};
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d", rc);
    const char *addr = node.ready.client;
    login_when_ready(addr, "iggy", "iggy");
    size_t n;
    uint8_t *b = rc_login_body(11264, "iggy", "iggy", &n);
    struct sess root;
    sess_login(&root, addr, 0xA001, b, n);
    free(b);
    ck_assert_uint_eq(sess_meta(&root, 141,
                                "\x05"
                                "alice"
                                "\x07"
                                "secret1"
                                "\x01\x00",
                                16, NULL),
                      0);
    ck_assert_uint_eq(sess_meta(&root, 141,
                                "\x05"
                                "carol"
                                "\x07"
                                "secret1"
                                "\x01\x00",
                                16, NULL),
                      0);
    uint8_t t1[68], t2[68];
    pat_create(&root, "t1", 0, t1);
    uint64_t t2_at = now_ms();
    pat_create(&root, "t2", 2000000, t2); /* expires in 2 s */

    struct sess a, c, p1, p2;
    b = rc_login_body(11264, "alice", "secret1", &n);
    sess_login(&a, addr, 0xA002, b, n);
    free(b);
    b = rc_login_body(11264, "carol", "secret1", &n);
    sess_login(&c, addr, 0xA003, b, n);
    free(b);
    b = pat_body(t1, 68, &n);
    sess_login(&p1, addr, 0xA004, b, n);
    free(b);
    b = pat_body(t2, 68, &n);
    sess_login(&p2, addr, 0xA005, b, n);
    free(b);

    /* permissions: alice may not create a stream; granted manage_streams
     * it works on the same session at once; revoked, refused again */
    ck_assert_uint_eq(sess_meta(&a, 128, "\x04str1", 5, NULL), 41);
    static const uint8_t grant[] = {1, 4, 1, 0, 0, 0, 1, 11, 0, 0, 0,
                                    0, 0, 0, 0, 1, 0, 0, 0,  0, 0, 0};
    ck_assert_uint_eq(sess_meta(&root, 145, grant, sizeof(grant), NULL), 0);
    ck_assert_uint_eq(sess_meta(&a, 128, "\x04str1", 5, NULL), 0);
    static const uint8_t revoke[] = {1, 4, 1, 0, 0, 0, 0};
    ck_assert_uint_eq(sess_meta(&root, 145, revoke, sizeof(revoke), NULL), 0);
    ck_assert_uint_eq(sess_meta(&a, 128, "\x04str2", 5, NULL), 41);

    /* carol deactivated: UserInactive (11), without a request */
    static const uint8_t deact[] = {1, 4, 2, 0, 0, 0, 0, 1, 2};
    ck_assert_uint_eq(sess_meta(&root, 142, deact, sizeof(deact), NULL), 0);
    expect_ended(&c, 11);
    /* alice deleted: InvalidCredentials (9) */
    static const uint8_t del[] = {1, 4, 1, 0, 0, 0};
    ck_assert_uint_eq(sess_meta(&root, 143, del, sizeof(del), NULL), 0);
    expect_ended(&a, 9);
    /* token t1 deleted: its session ends (10); t2's goes on */
    ck_assert_uint_eq(sess_meta(&root, 147, "\x02t1", 3, NULL), 0);
    expect_ended(&p1, 10);
    uint64_t left = now_ms() - t2_at < 1500 ? 1500 - (now_ms() - t2_at) : 0;
    if (left > 0)
        expect_quiet(&p2, (uint32_t)left);
    /* t2 expires: its session ends (10) */
    expect_ended(&p2, 10);
    ck_assert(vs_file_contains(node.log_file, "the user was deactivated"));
    ck_assert(vs_file_contains(node.log_file,
                               "its access token was deleted or expired"));
    /* root's password session is untouched */
    ck_assert_uint_eq(sess_meta(&root, 128, "\x04str3", 5, NULL), 0);
    close(root.fd);
    int st = vs_node_stop(&node, START_MS);
    ck_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

/* 1 if a new connection is served (a Ping answered), 0 if the node
 * closed it; the open fd is returned in *fd (-1 when closed). */
static int
try_conn(const char *addr, int *fd)
{
    *fd = vs_connect(addr);
    ck_assert_int_ge(*fd, 0);
    ck_assert_int_eq(rc_send(*fd, 2, 1, NULL, 0, 99, 1, 0), 0);
    struct rc_frame f;
    int rc = rc_read(*fd, &f, READ_MS);
    if (rc == 1) {
        ck_assert_uint_eq(f.command, 8);
        rc_frame_fini(&f);
        return 1;
    }
    ck_assert_msg(rc == 0 || rc == -ECONNRESET, "read: %d", rc);
    close(*fd);
    *fd = -1;
    return 0;
}

/* GetClients lists the connections of every data shard, and
 * max_connections holds for the node, not per data shard. */
START_TEST(test_clients_node_wide)
{
    const char *args[] = {"--shards",
                          "2",
                          "--max-connections",
                          "5",
                          "--with-default-root-credentials=true",
                          NULL};
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d", rc);
    const char *addr = node.ready.client;
    login_when_ready(addr, "iggy", "iggy");
    int root = vs_connect(addr);
    ck_assert_int_ge(root, 0);
    uint64_t sr = login_on(root, 0xB001, "iggy", "iggy");
    /* root's data shard (GetMe: client_id = counter << 9 | slot) */
    struct rc_frame f;
    ck_assert_int_eq(rc_send(root, 2, 20, NULL, 0, 0xB001, 1, sr), 0);
    ck_assert_int_eq(rc_read(root, &f, READ_MS), 1);
    ck_assert_uint_eq(f.status, 0);
    uint32_t me;
    memcpy(&me, f.body, 4);
    rc_frame_fini(&f);
    uint32_t slot = me & 0x1ffu;
    ck_assert(slot >= 1 && slot < node.ready.n_shard_pids);
    /* which shard accepts is the kernel's choice (both watch the one
     * listener): stop root's, so the next connection lands on the other */
    pid_t sp = node.ready.shard_pids[slot];
    int fds[8], open_n = 0;
    ck_assert_int_eq(kill(sp, SIGSTOP), 0);
    int fd0;
    int served = try_conn(addr, &fd0);
    ck_assert_int_eq(kill(sp, SIGCONT), 0);
    ck_assert(served);
    fds[open_n++] = fd0;
    /* 3 more fill the node (5); the next ones are refused, whichever
     * data shard takes them */
    for (int i = 0; i < 7; i++) {
        int fd;
        if (try_conn(addr, &fd))
            fds[open_n++] = fd;
    }
    ck_assert_int_eq(open_n, 4);
    ck_assert(vs_file_contains(node.log_file, "max_connections (5)"));
    /* GetClients (code 22) from root's shard: all 5, from both shards */
    ck_assert_int_eq(rc_send(root, 2, 22, NULL, 0, 0xB001, 1, sr), 0);
    ck_assert_int_eq(rc_read(root, &f, READ_MS), 1);
    ck_assert_uint_eq(f.command, 8);
    ck_assert_uint_eq(f.status, 0);
    int listed = 0, logged_in = 0;
    uint32_t slots_seen = 0;
    for (uint32_t off = 0; off + 17 <= f.body_len; listed++) {
        uint32_t id, user, alen;
        memcpy(&id, f.body + off, 4);
        memcpy(&user, f.body + off + 4, 4);
        memcpy(&alen, f.body + off + 9, 4);
        slots_seen |= 1u << (id & 0x1ffu);
        if (user == 0)
            logged_in++;
        off += 4 + 4 + 1 + 4 + alen + 4;
    }
    rc_frame_fini(&f);
    ck_assert_int_eq(listed, 5);
    ck_assert_int_eq(logged_in, 1);
    ck_assert_msg(slots_seen == 0x6, "data shard slots seen: %#x", slots_seen);
    /* a closed connection frees its place */
    close(fds[--open_n]);
    int fd = -1, ok = 0;
    for (int i = 0; i < 200 && !ok; i++) {
        ok = try_conn(addr, &fd);
        if (!ok)
            sleep_ms(10);
    }
    ck_assert(ok);
    close(fd);
    for (int i = 0; i < open_n; i++)
        close(fds[i]);
    close(root);
    int st = vs_node_stop(&node, START_MS);
    ck_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("serve_harden");
    TCase *tc = tcase_create("serve_harden");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_login_the_instant_the_port_answers);
    tcase_add_test(tc, test_login_throttle);
    tcase_add_test(tc, test_frame_timeout);
    tcase_add_test(tc, test_stale_client_evicted);
    tcase_add_test(tc, test_sessions_end_with_credentials);
    tcase_add_test(tc, test_clients_node_wide);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
