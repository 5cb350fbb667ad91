/*
 * tests/integration/check_conn_handoff.c - a client connection moves to
 * the data shard that owns its partitions (shard/serve/handoff.h) on a
 * real two-shard vstreamd (raw frames, conn_handoff_after 4):
 *  - a connection sending to a partition of the other shard is handed
 *    to it (GetMe shows the new shard, both shards log it, once, and
 *    /metrics counts one handoff and only the first run's bytes as
 *    forwarded), with
 *    requests pipelined across the handoff: every reply comes back in
 *    order with consecutive base offsets, and a poll afterwards sees
 *    every message in order;
 *  - the session lives on: after the handoff the shard that accepted the
 *    connection is killed, and the same connection keeps sending and
 *    polling without logging in again;
 *  - the receiving shard is killed right after it took the connection
 *    over while a child keeps sending: the connection dies with it, and
 *    after the restart every acknowledged batch is there at its
 *    acknowledged offset;
 *  - with conn_handoff_after 0 the connection stays where it was
 *    accepted.
 * Every wait is bounded; processes are ended by pid (harness).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/integration/data_raw.h"
#include "tests/integration/harness.h"

#define START_MS  20000u
#define PER_BATCH 10u
#define MAX_BATCH 3000u

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
start(const char *after)
{
    const char *args[] = {"--shards",
                          "2",
                          "--with-default-root-credentials=true",
                          "--conn-handoff-after",
                          after,
                          "--http-addr",
                          "127.0.0.1:0",
                          NULL};
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d, status %d", rc, node.status);
    ck_assert_uint_eq(node.ready.n_shard_pids, 3);
}

static void
nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Lines of the node's log containing needle. */
static int
log_count(const char *needle)
{
    FILE *f = fopen(node.log_file, "r");
    if (f == NULL)
        return 0;
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static void
wait_log(const char *needle, uint32_t ms)
{
    uint64_t end = vs_monotonic_ns() + (uint64_t)ms * 1000000u;
    while (log_count(needle) == 0) {
        ck_assert_msg(vs_monotonic_ns() < end, "no \"%s\" in the log", needle);
        nap_ms(10);
    }
}

/* The value of the unlabeled series `name` in the node's /metrics. */
static double
metric(const char *name)
{
    int fd = vs_connect(node.ready.http);
    ck_assert_int_ge(fd, 0);
    const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: "
                      "close\r\n\r\n";
    ck_assert_int_eq(rc_send_all(fd, req, strlen(req)), 0);
    static char buf[1 << 20];
    size_t n = 0;
    uint64_t end = vs_monotonic_ns() + 10ull * 1000000000ull;
    for (;;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        ck_assert_msg(vs_monotonic_ns() < end, "/metrics: no answer");
        if (poll(&pf, 1, 100) <= 0)
            continue;
        ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
        if (k <= 0)
            break;
        n += (size_t)k;
        ck_assert_uint_lt(n, sizeof(buf) - 1);
    }
    close(fd);
    buf[n] = '\0';
    char key[128];
    snprintf(key, sizeof(key), "\n%s ", name);
    const char *at = strstr(buf, key);
    ck_assert_msg(at != NULL, "no %s in /metrics", name);
    return strtod(at + strlen(key), NULL);
}

/* The SendMessages body of batch "b<i>" to partition p (heap). */
static uint8_t *
send_body(uint32_t p, uint32_t i, size_t *len)
{
    char tag[32];
    snprintf(tag, sizeof(tag), "b%u", i);
    size_t bl;
    uint8_t *batch = dr_batch_sized(tag, PER_BATCH, 64, &bl);
    uint8_t *body = dr_send_body(0, 0, 2, &p, 4, batch, bl, PER_BATCH, len);
    free(batch);
    return body;
}

/* Sends batch i to p and checks it landed at offset i * PER_BATCH. */
static void
send_one(struct dr_sess *s, uint32_t p, uint32_t i)
{
    size_t len;
    uint8_t *body = send_body(p, i, &len);
    uint32_t part = 0;
    uint64_t base = 0;
    ck_assert_uint_eq(dr_send(s, body, len, &part, &base), 0);
    ck_assert_uint_eq(part, p);
    ck_assert_uint_eq(base, (uint64_t)i * PER_BATCH);
    free(body);
}

/* Polls partition p from 0 and checks batches 0..n-1 in order. */
static void
verify_all(struct dr_sess *s, uint32_t p, uint32_t n)
{
    static struct dr_poll pl;
    uint64_t next = 0;
    for (int rounds = 0; rounds < 100 && next < (uint64_t)n * PER_BATCH;
         rounds++) {
        dr_poll(s, 1, 1, 0, 0, 1, p, 1, next, 500, 0, &pl);
        ck_assert_uint_eq(pl.status, 0);
        ck_assert_uint_gt(pl.n, 0);
        for (uint32_t k = 0; k < pl.n; k++) {
            char want[32];
            snprintf(want, sizeof(want), "b%u-%u", (unsigned)(next / PER_BATCH),
                     (unsigned)(next % PER_BATCH));
            ck_assert_uint_eq(pl.m[k].offset, next);
            ck_assert_msg(strncmp(pl.m[k].payload, want, strlen(want)) == 0 &&
                              pl.m[k].payload[strlen(want)] == 'x',
                          "offset %llu: %s, want %s", (unsigned long long)next,
                          pl.m[k].payload, want);
            next++;
        }
    }
    ck_assert_uint_eq(next, (uint64_t)n * PER_BATCH);
    dr_poll(s, 1, 1, 0, 0, 1, p, 1, next, 500, 0, &pl);
    ck_assert_uint_eq(pl.n, 0); /* nothing more */
}

/* A partition of topic 0 (8 partitions) owned by the other shard. */
static uint32_t
foreign_partition(struct dr_sess *s, uint32_t *mine, uint32_t *owner)
{
    *mine = dr_my_shard(s);
    ck_assert(*mine == 1 || *mine == 2);
    for (uint32_t p = 0; p < 8; p++)
        if (dr_owner(0, 0, p, 2) != *mine) {
            *owner = dr_owner(0, 0, p, 2);
            return p;
        }
    ck_abort_msg("all 8 partitions on shard %u", *mine);
    return 0;
}

static void
create_topic(struct dr_sess *s)
{
    dr_create_stream(s, "ho");
    dr_create_topic(s, 0, "t", 8, NULL, 0);
}

START_TEST(test_handoff_keeps_order)
{
    start("4");
    struct dr_sess s;
    dr_login(&s, &node, 0x4801);
    create_topic(&s);
    uint32_t mine, owner;
    uint32_t p = foreign_partition(&s, &mine, &owner);
    for (uint32_t i = 0; i < 3; i++)
        send_one(&s, p, i); /* forwarded: three in a row */
    ck_assert_uint_eq(dr_my_shard(&s), mine);
    /* six sends in one write: the fourth request of the run is answered
     * by forwarding, then the connection moves with the other five
     * still unread in its input */
    uint8_t *all = NULL;
    size_t total = 0;
    for (uint32_t i = 3; i < 9; i++) {
        size_t len, flen;
        uint8_t *body = send_body(p, i, &len);
        uint8_t *f = rc_build(160, 0, body, (uint32_t)len, s.client,
                              s.request + 1, s.session, &flen);
        all = realloc(all, total + flen);
        memcpy(all + total, f, flen);
        total += flen;
        free(f);
        free(body);
    }
    ck_assert_int_eq(rc_send_all(s.fd, all, total), 0);
    free(all);
    for (uint32_t i = 3; i < 9; i++) {
        struct rc_frame f;
        ck_assert_int_eq(rc_read(s.fd, &f, DR_READ_MS), 1);
        ck_assert_uint_eq(f.operation, 160);
        ck_assert_uint_eq(f.status, 0);
        ck_assert_uint_eq(f.body_len, 24);
        uint64_t base;
        memcpy(&base, f.body + 16, 8);
        ck_assert_uint_eq(base, (uint64_t)i * PER_BATCH); /* in order */
        rc_frame_fini(&f);
    }
    ck_assert_uint_eq(dr_my_shard(&s), owner);
    for (uint32_t i = 9; i < 20; i++)
        send_one(&s, p, i);
    verify_all(&s, p, 20);
    char line[128];
    snprintf(line, sizeof(line),
             "handed to data shard %u after 4 data "
             "requests",
             owner);
    ck_assert_int_eq(log_count(line), 1);
    snprintf(line, sizeof(line), "data shard %u: took over connection", owner);
    ck_assert_int_eq(log_count(line), 1);
    /* the node's metrics: one handoff; only the first run was forwarded */
    ck_assert(metric("vstream_connections_handed_off_total") == 1.0);
    double fwd = metric("vstream_data_forwarded_bytes_total");
    ck_assert_msg(fwd > 0 && fwd < 5 * 2000.0, "forwarded %.0f bytes", fwd);
    dr_close(&s);
    /* the counters, at a clean stop */
    ck_assert_int_eq(vs_node_stop(&node, 20000), 0);
    snprintf(line, sizeof(line),
             "data shard %u: 1 connections handed to other data shards, 0 "
             "taken over, 0 handoffs failed",
             mine);
    ck_assert_int_eq(log_count(line), 1);
}
END_TEST

START_TEST(test_session_outlives_the_first_shard)
{
    start("4");
    struct dr_sess s;
    dr_login(&s, &node, 0x4802);
    create_topic(&s);
    uint32_t mine, owner;
    uint32_t p = foreign_partition(&s, &mine, &owner);
    for (uint32_t i = 0; i < 4; i++)
        send_one(&s, p, i);
    ck_assert_uint_eq(dr_my_shard(&s), owner);
    pid_t first = node.ready.shard_pids[mine];
    ck_assert_int_eq(kill(first, SIGKILL), 0);
    ck_assert_int_eq(vs_node_wait_respawn(&node, mine, first, 20000), 0);
    /* the same connection and session go on */
    for (uint32_t i = 4; i < 10; i++)
        send_one(&s, p, i);
    verify_all(&s, p, 10);
    ck_assert_uint_eq(dr_my_shard(&s), owner);
    dr_close(&s);
}
END_TEST

/* Progress of the sending child: batch i acknowledged at base. */
struct prog {
    uint32_t batch;
    uint64_t base;
};

static _Noreturn void
sender(struct dr_sess s, uint32_t p, int out_fd)
{
    for (uint32_t i = 0; i < MAX_BATCH; i++) {
        size_t len;
        uint8_t *body = send_body(p, i, &len);
        if (rc_send(s.fd, 160, 0, body, (uint32_t)len, s.client, 1,
                    s.session) != 0)
            _exit(0);
        struct rc_frame f;
        if (rc_read(s.fd, &f, 15000) != 1)
            _exit(0);
        if (f.status != 0 || f.body_len != 24)
            _exit(0); /* 57 once the owner went away: stop */
        struct prog pr = {i, 0};
        memcpy(&pr.base, f.body + 16, 8);
        rc_frame_fini(&f);
        free(body);
        if (write(out_fd, &pr, sizeof(pr)) != sizeof(pr))
            _exit(1);
    }
    _exit(0);
}

START_TEST(test_receiver_killed_keeps_acked)
{
    start("4");
    struct dr_sess s;
    dr_login(&s, &node, 0x4803);
    create_topic(&s);
    uint32_t mine, owner;
    uint32_t p = foreign_partition(&s, &mine, &owner);
    int pf[2];
    ck_assert_int_eq(pipe(pf), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        close(pf[0]);
        sender(s, p, pf[1]);
    }
    close(pf[1]);
    char line[128];
    snprintf(line, sizeof(line), "data shard %u: took over connection", owner);
    wait_log(line, 20000);
    pid_t recv_pid = node.ready.shard_pids[owner];
    ck_assert_int_eq(kill(recv_pid, SIGKILL), 0);
    /* the child stops when its connection dies with the shard */
    int st;
    uint64_t end = vs_monotonic_ns() + 30ull * 1000000000ull;
    while (waitpid(child, &st, WNOHANG) == 0) {
        ck_assert_msg(vs_monotonic_ns() < end, "sender did not stop");
        nap_ms(10);
    }
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    static uint64_t acked[MAX_BATCH];
    uint32_t n = 0;
    struct prog pr;
    while (read(pf[0], &pr, sizeof(pr)) == (ssize_t)sizeof(pr)) {
        ck_assert_uint_eq(pr.batch, n); /* one at a time, in order */
        acked[n++] = pr.base;
    }
    close(pf[0]);
    ck_assert_uint_ge(n, 4); /* the run that moved it was acknowledged */
    dr_close(&s);
    ck_assert_int_eq(vs_node_wait_respawn(&node, owner, recv_pid, 20000), 0);
    /* every acknowledged batch at its acknowledged offset, in order */
    struct dr_sess t;
    dr_login(&t, &node, 0x4804);
    static struct dr_poll pl;
    uint64_t next = 0;
    for (uint32_t b = 0; b < n;) {
        ck_assert_uint_eq(acked[b], (uint64_t)b * PER_BATCH);
        dr_poll(&t, 1, 1, 0, 0, 1, p, 1, next, 500, 0, &pl);
        ck_assert_uint_eq(pl.status, 0);
        ck_assert_msg(pl.n > 0, "acknowledged batch %u missing", b);
        for (uint32_t k = 0; k < pl.n && b < n; k++, next++) {
            char want[32];
            snprintf(want, sizeof(want), "b%u-%u", (unsigned)(next / 10),
                     (unsigned)(next % 10));
            ck_assert_uint_eq(pl.m[k].offset, next);
            ck_assert(strncmp(pl.m[k].payload, want, strlen(want)) == 0);
            if (next % PER_BATCH == PER_BATCH - 1)
                b++;
        }
    }
    dr_close(&t);
}
END_TEST

START_TEST(test_off_stays)
{
    start("0");
    struct dr_sess s;
    dr_login(&s, &node, 0x4805);
    create_topic(&s);
    uint32_t mine, owner;
    uint32_t p = foreign_partition(&s, &mine, &owner);
    for (uint32_t i = 0; i < 12; i++)
        send_one(&s, p, i);
    ck_assert_uint_eq(dr_my_shard(&s), mine);
    verify_all(&s, p, 12);
    ck_assert_int_eq(log_count("took over connection"), 0);
    dr_close(&s);
}
END_TEST

static Suite *
handoff_suite(void)
{
    Suite *s = suite_create("conn_handoff");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_handoff_keeps_order);
    tcase_add_test(tc, test_session_outlives_the_first_shard);
    tcase_add_test(tc, test_receiver_killed_keeps_acked);
    tcase_add_test(tc, test_off_stays);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(handoff_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
