/*
 * tests/integration/check_data_bigframes.c - large SendMessages frames on
 * a real vstreamd with 2 data shards, whose bodies the server reads
 * straight into their own buffers (shard/serve/rxbody.h), and large poll
 * replies queued without a copy: a batch written in small pieces with
 * pauses (short reads) to a partition of the connection's shard and to
 * one of the other shard (forwarded), polled back exact; two large
 * frames and a Ping in one write answered in order; a client that
 * disconnects in the middle of a body (nothing stored, the node serves
 * on); a body over max_message_body (eviction 6, closed); a client that
 * stops in the middle of a body (closed by the frame timer). The shards'
 * counters after a clean stop show the direct path and the no-copy poll
 * replies ran. Every wait is bounded; the node is stopped by pid.
 * Callers: make check (INTEG_TESTS, INTEG_FAST_TESTS).
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/data_raw.h"
#include "tests/integration/harness.h"

#define START_MS 20000u
#define READ_MS  15000u
#define NPARTS   8u
#define MSGS     200u /* x MSG_SIZE: a ~210 KB batch, over 64 KiB */
#define MSG_SIZE 1000u

static struct vs_node node;

static void
sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static uint64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

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
start(const char *const *extra)
{
    const char *args[16] = {"--shards", "2",
                            "--with-default-root-credentials=true"};
    size_t k = 3;
    while (extra && *extra && k < 15)
        args[k++] = *extra++;
    args[k] = NULL;
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d, status %d", rc, node.status);
}

/* 1 if the node still runs the processes it started with (no shard
 * crashed and was respawned) and serves a Ping on a new connection. */
static int
same_processes_serving(const struct vs_ready_info *before)
{
    ck_assert_int_eq(vs_node_read_ready(&node), 0);
    if (node.ready.n_shard_pids != before->n_shard_pids)
        return 0;
    for (size_t i = 0; i < before->n_shard_pids; i++)
        if (node.ready.shard_pids[i] != before->shard_pids[i])
            return 0;
    int fd = vs_connect(node.ready.client);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(rc_send(fd, 2, 1, NULL, 0, 0x99, 0, 0), 0);
    struct rc_frame r;
    int ok = rc_read(fd, &r, READ_MS) == 1 && r.command == 8;
    if (ok)
        rc_frame_fini(&r);
    close(fd);
    return ok;
}

/* A SendMessages frame of MSGS messages "tag-i" (padded) to partition p. */
static uint8_t *
big_send_frame(struct dr_sess *s, uint32_t p, const char *tag, size_t *n)
{
    size_t bl, len;
    uint8_t *batch = dr_batch_sized(tag, MSGS, MSG_SIZE, &bl);
    uint8_t *body = dr_send_body(0, 0, 2, &p, 4, batch, bl, MSGS, &len);
    s->request++;
    uint8_t *f = rc_build(160, 0, body, (uint32_t)len, s->client, s->request,
                          s->session, n);
    free(batch);
    free(body);
    return f;
}

/* Writes f in pieces of `piece` bytes, pausing `pause` ms every 16. */
static void
send_pieces(int fd, const uint8_t *f, size_t n, size_t piece, unsigned pause)
{
    size_t done = 0, k = 0;
    while (done < n) {
        size_t m = n - done < piece ? n - done : piece;
        ck_assert_int_eq(rc_send_all(fd, f + done, m), 0);
        done += m;
        if (++k % 16 == 0)
            sleep_ms(pause);
    }
}

static void
expect_sent(int fd, uint32_t p)
{
    struct rc_frame r;
    ck_assert_int_eq(rc_read(fd, &r, READ_MS), 1);
    ck_assert_uint_eq(r.command, 8);
    ck_assert_uint_eq(r.operation, 160);
    ck_assert_msg(r.status == 0, "send to %u: status %u", p, r.status);
    ck_assert_uint_eq(r.body_len, 4 + 12 + 8);
    uint32_t got;
    memcpy(&got, r.body + 12, 4);
    ck_assert_uint_eq(got, p);
    rc_frame_fini(&r);
}

/* Polls partition p from `from` and checks `count` messages "tag-i". */
static void
expect_polled(struct dr_sess *s, uint32_t p, uint64_t from, const char *tag,
              uint32_t count)
{
    static struct dr_poll out;
    dr_poll(s, 1, 7, 0, 0, 1, p, 1, from, count, 0, &out);
    ck_assert_uint_eq(out.status, 0);
    ck_assert_uint_eq(out.count, count);
    for (uint32_t i = 0; i < count; i++) {
        char want[64];
        snprintf(want, sizeof(want), "%s-%u", tag, i);
        ck_assert_uint_eq(out.m[i].offset, from + i);
        ck_assert_uint_eq(out.m[i].len, MSG_SIZE);
        ck_assert_msg(strncmp(out.m[i].payload, want, strlen(want)) == 0 &&
                          out.m[i].payload[strlen(want)] == 'x',
                      "message %u: %.40s", i, out.m[i].payload);
    }
}

/* One partition owned by the connection's shard, one by the other. */
static void
pick_parts(struct dr_sess *s, uint32_t *local, uint32_t *remote)
{
    uint32_t mine = dr_my_shard(s);
    *local = *remote = UINT32_MAX;
    for (uint32_t p = 0; p < NPARTS; p++) {
        if (dr_owner(0, 0, p, 2) == mine) {
            if (*local == UINT32_MAX)
                *local = p;
        } else if (*remote == UINT32_MAX) {
            *remote = p;
        }
    }
    ck_assert_uint_ne(*local, UINT32_MAX);
    ck_assert_uint_ne(*remote, UINT32_MAX);
}

/* The "frames read straight into place" counters of a clean stop,
 * summed over the data shards. */
static void
stop_counters(unsigned long long *direct, unsigned long long *nocopy)
{
    ck_assert_int_eq(vs_node_stop(&node, 20000), 0);
    FILE *lf = fopen(node.log_file, "r");
    ck_assert_ptr_nonnull(lf);
    char line[1024];
    *direct = *nocopy = 0;
    int found = 0;
    while (fgets(line, sizeof(line), lf) != NULL) {
        char *q = strstr(line, "data shard ");
        unsigned sh;
        unsigned long long a, b;
        if (q && sscanf(q,
                        "data shard %u: %llu frames read straight into "
                        "place, %llu poll replies queued without a copy",
                        &sh, &a, &b) == 3) {
            *direct += a;
            *nocopy += b;
            found++;
        }
    }
    fclose(lf);
    ck_assert_msg(found == 2, "%d counter lines in %s", found, node.log_file);
}

START_TEST(test_pieces_and_pipelining)
{
    start(NULL);
    struct dr_sess s;
    dr_login(&s, &node, 0x5151);
    dr_create_stream(&s, "st");
    dr_create_topic(&s, 0, "tp", NPARTS, NULL, 0);
    uint32_t local, remote;
    pick_parts(&s, &local, &remote);
    size_t n;
    /* short reads: the body arrives in 1000-byte pieces with pauses */
    uint8_t *f = big_send_frame(&s, local, "loc", &n);
    send_pieces(s.fd, f, n, 1000, 5);
    expect_sent(s.fd, local);
    free(f);
    f = big_send_frame(&s, remote, "rem", &n);
    send_pieces(s.fd, f, n, 7777, 2);
    expect_sent(s.fd, remote);
    free(f);
    /* two large frames and a Ping in one write: answered in order */
    size_t n1, n2, n3;
    uint8_t *f1 = big_send_frame(&s, local, "two", &n1);
    uint8_t *f2 = big_send_frame(&s, remote, "two", &n2);
    uint8_t *f3 = rc_build(2, 1, NULL, 0, s.client, 0, s.session, &n3);
    uint8_t *all = malloc(n1 + n2 + n3);
    ck_assert_ptr_nonnull(all);
    memcpy(all, f1, n1);
    memcpy(all + n1, f2, n2);
    memcpy(all + n1 + n2, f3, n3);
    ck_assert_int_eq(rc_send_all(s.fd, all, n1 + n2 + n3), 0);
    expect_sent(s.fd, local);
    expect_sent(s.fd, remote);
    struct rc_frame r;
    ck_assert_int_eq(rc_read(s.fd, &r, READ_MS), 1);
    ck_assert_uint_eq(r.command, 8);
    ck_assert_uint_eq(r.operation, 2); /* the Ping, last */
    rc_frame_fini(&r);
    free(all);
    free(f1);
    free(f2);
    free(f3);
    /* polled back exact: large replies, local (no copy) and forwarded */
    expect_polled(&s, local, 0, "loc", MSGS);
    expect_polled(&s, local, MSGS, "two", MSGS);
    expect_polled(&s, remote, 0, "rem", MSGS);
    expect_polled(&s, remote, MSGS, "two", MSGS);
    dr_close(&s);
    unsigned long long direct, nocopy;
    stop_counters(&direct, &nocopy);
    ck_assert_uint_ge(direct, 4); /* the 4 large sends */
    ck_assert_uint_ge(nocopy, 2); /* the 2 local large polls */
}
END_TEST

/* A client that disconnects in the middle of a body: nothing of it is
 * stored and the node serves the next client. */
START_TEST(test_disconnect_mid_body)
{
    start(NULL);
    struct vs_ready_info before = node.ready;
    struct dr_sess s;
    dr_login(&s, &node, 0x5252);
    dr_create_stream(&s, "st");
    dr_create_topic(&s, 0, "tp", NPARTS, NULL, 0);
    uint32_t local, remote;
    pick_parts(&s, &local, &remote);
    size_t n;
    uint8_t *f = big_send_frame(&s, local, "cut", &n);
    ck_assert_int_eq(rc_send_all(s.fd, f, n / 2), 0);
    sleep_ms(200); /* the server is reading the body into place */
    free(f);
    dr_close(&s);
    struct dr_sess t;
    dr_login(&t, &node, 0x5353);
    struct dr_poll *out = calloc(1, sizeof(*out));
    ck_assert_ptr_nonnull(out);
    dr_poll(&t, 1, 7, 0, 0, 1, local, 1, 0, 10, 0, out);
    ck_assert_uint_eq(out->status, 0);
    ck_assert_uint_eq(out->count, 0); /* the partial frame stored nothing */
    free(out);
    f = big_send_frame(&t, local, "after", &n);
    ck_assert_int_eq(rc_send_all(t.fd, f, n), 0);
    expect_sent(t.fd, local);
    free(f);
    expect_polled(&t, local, 0, "after", MSGS);
    dr_close(&t);
    ck_assert(same_processes_serving(&before));
}
END_TEST

/* A body over max_message_body: eviction 6 (InvalidRequestBodySize) and
 * close, before any of it is read; a large body within it is served. */
START_TEST(test_over_limit)
{
    const char *extra[] = {"--max-message-body", "150000", NULL};
    start(extra);
    struct vs_ready_info before = node.ready;
    struct dr_sess s;
    dr_login(&s, &node, 0x5454);
    dr_create_stream(&s, "st");
    dr_create_topic(&s, 0, "tp", NPARTS, NULL, 0);
    uint32_t local, remote;
    pick_parts(&s, &local, &remote);
    /* within the limit (~107 KB): read into place and stored */
    size_t bl, len, n;
    uint8_t *batch = dr_batch_sized("in", 100, MSG_SIZE, &bl);
    uint8_t *body = dr_send_body(0, 0, 2, &remote, 4, batch, bl, 100, &len);
    s.request++;
    uint8_t *f = rc_build(160, 0, body, (uint32_t)len, s.client, s.request,
                          s.session, &n);
    ck_assert_int_eq(rc_send_all(s.fd, f, n), 0);
    expect_sent(s.fd, remote);
    free(f);
    free(body);
    free(batch);
    /* over it: only the header is sent, the eviction comes at once */
    f = big_send_frame(&s, local, "over", &n);
    ck_assert_int_eq(rc_send_all(s.fd, f, 256), 0);
    struct rc_frame r;
    ck_assert_int_eq(rc_read(s.fd, &r, READ_MS), 1);
    ck_assert_uint_eq(r.command, 13);
    ck_assert_uint_eq(r.reason, 6);
    rc_frame_fini(&r);
    ck_assert_int_eq(rc_wait_closed(s.fd, READ_MS), 1);
    free(f);
    dr_close(&s);
    ck_assert(same_processes_serving(&before));
}
END_TEST

/* A client that stops in the middle of a body read into place: closed by
 * the frame timer (the direct read keeps it running). */
START_TEST(test_stall_mid_body)
{
    const char *extra[] = {"--frame-timeout-ms", "600", NULL};
    start(extra);
    struct vs_ready_info before = node.ready;
    struct dr_sess s;
    dr_login(&s, &node, 0x5555);
    dr_create_stream(&s, "st");
    dr_create_topic(&s, 0, "tp", NPARTS, NULL, 0);
    uint32_t local, remote;
    pick_parts(&s, &local, &remote);
    size_t n;
    uint8_t *f = big_send_frame(&s, local, "stall", &n);
    uint64_t t0 = now_ms();
    ck_assert_int_eq(rc_send_all(s.fd, f, n - 1000), 0);
    ck_assert_int_eq(rc_wait_closed(s.fd, READ_MS), 1);
    ck_assert_uint_ge(now_ms() - t0, 500);
    free(f);
    dr_close(&s);
    ck_assert(same_processes_serving(&before));
}
END_TEST

static Suite *
suite(void)
{
    Suite *su = suite_create("data_bigframes");
    TCase *tc = tcase_create("bigframes");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_pieces_and_pipelining);
    tcase_add_test(tc, test_disconnect_mid_body);
    tcase_add_test(tc, test_over_limit);
    tcase_add_test(tc, test_stall_mid_body);
    suite_add_tcase(su, tc);
    return su;
}

int
main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
