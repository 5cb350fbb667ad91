/*
 * tests/integration/check_data_durable.c - durability and retention of
 * the data plane on a real vstreamd (raw frames):
 *  - SIGKILL of the whole node during a send loop, restart: every
 *    acknowledged batch is there at its acknowledged offset, in order,
 *    nothing unsent appears, no offset is reused afterwards, consumer
 *    offsets survive;
 *  - SIGKILL of only the data shard owning the partition (the connection
 *    lives on the other shard, so its sends are forwarded): the client
 *    gets 57 while the owner is away and resends; afterwards the same
 *    checks, and a batch appears twice only if it was resent;
 *  - retention: message_expiry deletes the oldest (sealed) segments;
 *    max_topic_size deletes the oldest segments first.
 * Every wait is bounded; nodes are stopped by pid (harness).
 * Callers: make check (INTEG_TESTS).
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

#include "tests/integration/data_raw.h"
#include "tests/integration/harness.h"

#define START_MS  20000u
#define MAX_BATCH 4000u
#define PER_BATCH 10u

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
start(unsigned shards)
{
    char k[8];
    snprintf(k, sizeof(k), "%u", shards);
    const char *args[] = {"--shards", k, "--with-default-root-credentials=true",
                          NULL};
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d, status %d", rc, node.status);
}

static void
nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Progress records the sending child writes to its pipe. */
struct prog {
    uint32_t kind; /* 1 acked, 2 resent after 57 */
    uint32_t batch;
    uint64_t base;
};

/* The sending child: batches "b<i>" of PER_BATCH messages to partition
 * p, resending a batch answered 57 (after 20 ms); stops when the
 * connection fails, on `stop_fd` readable, or after MAX_BATCH batches. */
static _Noreturn void
sender(uint32_t p, int out_fd, int stop_fd, struct dr_sess *sp)
{
    struct dr_sess s = *sp;
    for (uint32_t i = 0; i < MAX_BATCH; i++) {
        char tag[32];
        snprintf(tag, sizeof(tag), "b%u", i);
        size_t bl, len;
        uint8_t *batch = dr_batch_sized(tag, PER_BATCH, 64, &bl);
        uint8_t *body =
            dr_send_body(0, 0, 2, &p, 4, batch, bl, PER_BATCH, &len);
        for (int tries = 0;; tries++) {
            struct pollfd pf = {.fd = stop_fd, .events = POLLIN};
            if (poll(&pf, 1, 0) > 0)
                _exit(0);
            if (rc_send(s.fd, 160, 0, body, (uint32_t)len, s.client, 1,
                        s.session) != 0)
                _exit(0);
            struct rc_frame f;
            if (rc_read(s.fd, &f, 15000) != 1)
                _exit(0);
            if (f.status == 57 && tries < 500) {
                struct prog pr = {2, i, 0};
                if (write(out_fd, &pr, sizeof(pr)) != sizeof(pr))
                    _exit(1);
                rc_frame_fini(&f);
                nap_ms(20);
                continue;
            }
            if (f.status != 0 || f.body_len != 24)
                _exit(2);
            struct prog pr = {1, i, 0};
            memcpy(&pr.base, f.body + 16, 8);
            rc_frame_fini(&f);
            if (write(out_fd, &pr, sizeof(pr)) != sizeof(pr))
                _exit(1);
            break;
        }
        free(batch);
        free(body);
    }
    _exit(0);
}

struct run {
    uint64_t acked_base[MAX_BATCH];
    uint8_t acked[MAX_BATCH];
    uint8_t resent[MAX_BATCH];
    uint32_t n_acked;
    uint32_t last;
};

/* Reads progress until `want` acks (or EOF / 20 s). */
static void
read_prog(int fd, struct run *r, uint32_t want)
{
    for (int spins = 0; r->n_acked < want && spins < 2000; spins++) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 10) <= 0)
            continue;
        struct prog pr;
        ssize_t k = read(fd, &pr, sizeof(pr));
        if (k <= 0)
            return;
        ck_assert_int_eq(k, (ssize_t)sizeof(pr));
        ck_assert_uint_lt(pr.batch, MAX_BATCH);
        if (pr.kind == 2) {
            r->resent[pr.batch] = 1;
        } else {
            ck_assert(!r->acked[pr.batch]);
            r->acked[pr.batch] = 1;
            r->acked_base[pr.batch] = pr.base;
            r->n_acked++;
        }
        if (pr.batch > r->last)
            r->last = pr.batch;
    }
}

/* Polls partition p entirely and checks it against the run. Returns the
 * next offset after the last message. */
static uint64_t
verify(struct dr_sess *s, uint32_t p, const struct run *r)
{
    static struct dr_poll pl;
    static uint8_t count[MAX_BATCH][PER_BATCH];
    memset(count, 0, sizeof(count));
    uint64_t next = 0, prev_offset = 0;
    int any = 0;
    int64_t prev_batch = -1;
    uint32_t seen_acked = 0;
    for (int rounds = 0; rounds < 1000; rounds++) {
        dr_poll(s, 1, 1, 0, 0, 1, p, 1, next, 500, 0, &pl);
        ck_assert_uint_eq(pl.status, 0);
        if (pl.n == 0)
            break;
        for (uint32_t i = 0; i < pl.n; i++) {
            const struct dr_msg *m = &pl.m[i];
            unsigned b, j;
            ck_assert_msg(sscanf(m->payload, "b%u-%u", &b, &j) == 2,
                          "payload %s", m->payload);
            ck_assert_uint_lt(b, MAX_BATCH);
            ck_assert_uint_lt(j, PER_BATCH);
            ck_assert_uint_eq(m->len, 64);
            /* nothing unsent appears */
            ck_assert_uint_le(b, r->last + 1);
            if (any)
                ck_assert_uint_gt(m->offset, prev_offset);
            any = 1;
            prev_offset = m->offset;
            count[b][j]++;
            /* a batch twice only if it was resent */
            ck_assert_msg(count[b][j] == 1 || r->resent[b],
                          "batch %u message %u twice, never resent", b, j);
            if (r->acked[b] && m->offset == r->acked_base[b] + j) {
                if (j == 0) {
                    /* acknowledged batches in order */
                    ck_assert_int_lt(prev_batch, (int64_t)b);
                    prev_batch = b;
                }
                if (j == PER_BATCH - 1)
                    seen_acked++;
            }
        }
        next = pl.m[pl.n - 1].offset + 1;
    }
    /* every acknowledged batch at its acknowledged offsets */
    ck_assert_uint_eq(seen_acked, r->n_acked);
    return next;
}

static void
prepare(struct dr_sess *s, uint32_t parts)
{
    dr_login(s, &node, 0x4444);
    dr_create_stream(s, "st");
    dr_create_topic(s, 0, "tp", parts, NULL, 0);
}

START_TEST(test_kill_node_in_send_loop)
{
    start(2);
    struct dr_sess s;
    prepare(&s, 4);
    uint32_t p = 1;
    /* a consumer offset stored before the crash */
    size_t bl, len;
    uint8_t *batch = dr_batch("pre", 2, &bl);
    uint32_t p3 = 3;
    uint8_t *body = dr_send_body(0, 0, 2, &p3, 4, batch, bl, 2, &len);
    ck_assert_uint_eq(dr_send(&s, body, len, NULL, NULL), 0);
    free(batch);
    free(body);
    ck_assert_uint_eq(dr_offset_store(&s, 1, 77, 0, 0, 3, 1), 0);
    dr_close(&s);

    int pfd[2], sfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    ck_assert_int_eq(pipe(sfd), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        close(pfd[0]);
        close(sfd[1]);
        struct dr_sess t;
        dr_login(&t, &node, 0x5555);
        sender(p, pfd[1], sfd[0], &t);
    }
    close(pfd[1]);
    close(sfd[0]);
    static struct run r;
    memset(&r, 0, sizeof(r));
    read_prog(pfd[0], &r, 40);
    ck_assert_uint_ge(r.n_acked, 40);
    dr_kill_node(&node);
    read_prog(pfd[0], &r, MAX_BATCH); /* until the child saw the end */
    close(sfd[1]);
    /* the harness reaps orphans, which may include the sender */
    int st = 0;
    pid_t w = waitpid(child, &st, 0);
    ck_assert(w == child || (w == -1 && errno == ECHILD));
    if (w == child)
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(pfd[0]);

    start(2);
    dr_login(&s, &node, 0x6666);
    uint64_t end = verify(&s, p, &r);
    /* no offset reused: the next send lands at or after the end */
    batch = dr_batch_sized("b0", PER_BATCH, 64, &bl);
    body = dr_send_body(0, 0, 2, &p, 4, batch, bl, PER_BATCH, &len);
    uint64_t base = 0;
    ck_assert_uint_eq(dr_send(&s, body, len, NULL, &base), 0);
    ck_assert_uint_ge(base, end);
    free(batch);
    free(body);
    uint64_t stored = 0;
    ck_assert_int_eq(dr_offset_get(&s, 1, 77, 0, 0, 3, &stored), 1);
    ck_assert_uint_eq(stored, 1);
    dr_close(&s);
}
END_TEST

START_TEST(test_kill_owning_shard)
{
    start(2);
    struct dr_sess s;
    prepare(&s, 4);
    dr_close(&s);
    /* The sender's connection, on whichever data shard the kernel gave it
     * (both watch one listener), and a partition owned by the OTHER data
     * shard, so its sends are forwarded. */
    struct dr_sess t;
    dr_login(&t, &node, 0x8000);
    uint32_t mine = dr_my_shard(&t);
    uint32_t p = 0;
    while (p < 4 && dr_owner(0, 0, p, 2) == mine)
        p++;
    ck_assert_uint_lt(p, 4);
    uint32_t owner = dr_owner(0, 0, p, 2);

    int pfd[2], sfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    ck_assert_int_eq(pipe(sfd), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        close(pfd[0]);
        close(sfd[1]);
        sender(p, pfd[1], sfd[0], &t);
    }
    close(t.fd); /* the child owns the connection */
    close(pfd[1]);
    close(sfd[0]);
    static struct run r;
    memset(&r, 0, sizeof(r));
    read_prog(pfd[0], &r, 30);
    ck_assert_uint_ge(r.n_acked, 30);
    pid_t old = node.ready.shard_pids[owner];
    ck_assert_int_gt(old, 0);
    ck_assert_int_eq(kill(old, SIGKILL), 0);
    ck_assert_int_eq(vs_node_wait_respawn(&node, owner, old, 20000), 0);
    read_prog(pfd[0], &r, r.n_acked + 30);
    ck_assert_int_eq(write(sfd[1], "x", 1), 1);
    read_prog(pfd[0], &r, MAX_BATCH);
    int st;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(pfd[0]);
    close(sfd[1]);
    /* the owner's outage was seen: some batch was answered 57 */
    uint32_t resent = 0;
    for (uint32_t i = 0; i < MAX_BATCH; i++)
        resent += r.resent[i];
    ck_assert_uint_gt(resent, 0);

    dr_login(&s, &node, 0xaaaa);
    (void)verify(&s, p, &r);
    dr_close(&s);
}
END_TEST

/* Polls First/1 until the first offset is above 0 (bounded). */
static uint64_t
wait_first_above_zero(struct dr_sess *s, uint32_t topic)
{
    static struct dr_poll pl;
    for (int i = 0; i < 300; i++) {
        dr_poll(s, 1, 1, 0, topic, 1, 0, 3, 0, 1, 0, &pl);
        ck_assert_uint_eq(pl.status, 0);
        ck_assert_uint_eq(pl.n, 1);
        if (pl.m[0].offset > 0)
            return pl.m[0].offset;
        nap_ms(50);
    }
    return 0;
}

START_TEST(test_retention)
{
    start(1);
    struct dr_sess s;
    dr_login(&s, &node, 0xbbbb);
    dr_create_stream(&s, "st");
    uint8_t opts[256];
    size_t ol = 0;
    dr_opt_u64(opts, &ol, "message_expiry", 1000000); /* 1 s */
    dr_create_topic(&s, 0, "exp", 1, opts, ol);
    ol = 0;
    dr_opt_u64(opts, &ol, "segment_size", 1u << 20);
    dr_opt_u64(opts, &ol, "max_topic_size", 2u << 20);
    dr_create_topic(&s, 0, "cap", 1, opts, ol);
    /* 3.5 MiB into each: 1 MiB segments (the test profile's segment_size
     * for "exp", the topic's for "cap") */
    for (uint32_t t = 0; t < 2; t++)
        for (uint32_t i = 0; i < 35; i++) {
            char tag[32];
            snprintf(tag, sizeof(tag), "b%u", i);
            size_t bl, len;
            uint32_t p = 0;
            uint8_t *batch = dr_batch_sized(tag, 100, 1000, &bl);
            uint8_t *body = dr_send_body(0, t, 2, &p, 4, batch, bl, 100, &len);
            uint64_t base = 0;
            ck_assert_uint_eq(dr_send(&s, body, len, NULL, &base), 0);
            ck_assert_uint_eq(base, i * 100u);
            free(batch);
            free(body);
        }
    /* expiry: the oldest segments go (the active one stays) */
    uint64_t first = wait_first_above_zero(&s, 0);
    ck_assert_uint_gt(first, 0);
    static struct dr_poll pl;
    dr_poll(&s, 1, 1, 0, 0, 1, 0, 4, 0, 1, 0, &pl);
    ck_assert_uint_eq(pl.n, 1);
    ck_assert_uint_eq(pl.m[0].offset, 3499);
    /* size cap: oldest first, the newest kept */
    first = wait_first_above_zero(&s, 1);
    ck_assert_uint_gt(first, 0);
    dr_poll(&s, 1, 1, 0, 1, 1, 0, 1, 0, 500, 0, &pl);
    ck_assert_uint_gt(pl.n, 0);
    ck_assert_uint_eq(pl.m[0].offset, first);
    dr_poll(&s, 1, 1, 0, 1, 1, 0, 4, 0, 1, 0, &pl);
    ck_assert_uint_eq(pl.m[0].offset, 3499);
    /* what is left is within the cap plus the active segment */
    ck_assert_uint_ge(first, 3500u - (3u << 20) / 1100u);
    dr_close(&s);
}
END_TEST

static Suite *
data_durable_suite(void)
{
    Suite *s = suite_create("data_durable");
    TCase *t = tcase_create("durable");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_kill_node_in_send_loop);
    tcase_add_test(t, test_kill_owning_shard);
    tcase_add_test(t, test_retention);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(data_durable_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
