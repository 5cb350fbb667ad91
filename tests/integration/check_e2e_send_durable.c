/*
 * tests/integration/check_e2e_send_durable.c - the client library's send
 * loop (resend on) across a SIGKILL of the whole node.
 *
 * A child process sends numbered batches through the library and reports
 * on a pipe each batch before it is sent ("S i") and each acknowledged one
 * with its base offset ("A i offset"). The node (supervisor and every
 * shard) is SIGKILLed in the middle, then restarted on the SAME address,
 * so the library reconnects, registers again with its client id and
 * resends the batch that was in flight. Afterwards, by polling the whole
 * partition:
 *  - every acknowledged batch is there at its acknowledged offsets, byte
 *    for byte and in order;
 *  - a message appears twice only if it belongs to the batch that was in
 *    flight at the kill (its first copy was never acknowledged);
 *  - nothing that was never sent appears;
 *  - no offset is handed out twice (offsets strictly increase), and the
 *    batches acknowledged after the restart lie above everything before.
 * Every wait is bounded; processes are ended by pid.
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
#include <unistd.h>

#include "common/clock.h"
#include "tests/integration/e2e.h"

#define LOOP_N     60 /* batches */
#define PER        5  /* messages per batch */
#define KILL_AT    20 /* acks before the kill */
#define AFTER_ACKS 10 /* acks required after the restart */

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

/* The payload of message j of batch i: recognisable and of varied size. */
static size_t
payload_of(int i, int j, char *out, size_t cap)
{
    int n = snprintf(out, cap, "batch %03d message %d ", i, j);
    size_t len = (size_t)n + (size_t)((i * 37 + j * 11) % 200);
    if (len > cap)
        len = cap;
    for (size_t k = (size_t)n; k < len; k++)
        out[k] = (char)('a' + (i + j + (int)k) % 26);
    return len;
}

static void
send_child(int fd, const char *addr)
{
    struct vsc_opts o;
    memset(&o, 0, sizeof o);
    o.addr = addr;
    o.io_timeout_ms = 3000;
    o.reconnects = 30; /* 100 ms, 200 ms, ... between attempts */
    struct vsc *c = vsc_create(&o);
    if (c == NULL || vsc_login(c, "iggy", "iggy", NULL) != 0)
        _exit(3);
    struct vsc_id s = vsc_id_name("s"), t = vsc_id_name("t");
    struct vsc_partitioning p = vsc_part_id(0);
    static char bufs[PER][300];
    for (int i = 0; i < LOOP_N; i++) {
        struct vsc_msg m[PER];
        memset(m, 0, sizeof m);
        for (int j = 0; j < PER; j++) {
            m[j].id.lo = (uint64_t)(i * PER + j + 1);
            m[j].payload = bufs[j];
            m[j].payload_len =
                (uint32_t)payload_of(i, j, bufs[j], sizeof bufs[j]);
        }
        char line[64];
        snprintf(line, sizeof line, "S %d\n", i);
        if (write(fd, line, strlen(line)) < 0)
            _exit(4);
        struct vsc_sent out;
        int rc = vsc_send(c, &s, &t, &p, m, PER, &out);
        if (rc != 0 || !out.confirmed) {
            snprintf(line, sizeof line, "E %d %d\n", i, rc);
            (void)!write(fd, line, strlen(line));
            _exit(5);
        }
        snprintf(line, sizeof line, "A %d %llu\n", i,
                 (unsigned long long)out.base_offset);
        if (write(fd, line, strlen(line)) < 0)
            _exit(4);
    }
    vsc_destroy(c);
    _exit(0);
}

struct progress {
    int sent; /* highest index announced */
    int acked;
    int ack[LOOP_N];
    uint64_t ack_offset[LOOP_N];
    int error;
    char buf[8192];
    size_t len;
};

/* Reads lines until `until` acks, EOF (returns 1) or the deadline. */
static int
read_progress(int fd, struct progress *pr, int until, uint32_t ms)
{
    uint64_t deadline = vs_monotonic_ns() + (uint64_t)ms * 1000000u;
    while (pr->acked < until && vs_monotonic_ns() < deadline) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 100) <= 0)
            continue;
        ssize_t k = read(fd, pr->buf + pr->len, sizeof pr->buf - 1 - pr->len);
        if (k <= 0)
            return 1;
        pr->len += (size_t)k;
        pr->buf[pr->len] = '\0';
        char *nl;
        while ((nl = strchr(pr->buf, '\n')) != NULL) {
            *nl = '\0';
            char kind;
            int i;
            unsigned long long off = 0;
            int n = sscanf(pr->buf, "%c %d %llu", &kind, &i, &off);
            if (n >= 2 && i >= 0 && i < LOOP_N) {
                if (kind == 'S' && i > pr->sent)
                    pr->sent = i;
                else if (kind == 'A' && n == 3) {
                    pr->ack[i] = 1;
                    pr->ack_offset[i] = off;
                    pr->acked++;
                } else if (kind == 'E')
                    pr->error = 1;
            }
            pr->len -= (size_t)(nl + 1 - pr->buf);
            memmove(pr->buf, nl + 1, pr->len + 1);
        }
    }
    return 0;
}

START_TEST(test_library_send_loop_survives_node_kill)
{
    e2e_start(&node, 2, NULL);
    char addr[256];
    snprintf(addr, sizeof addr, "%s", node.ready.client);
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    ck_assert_int_eq(vsc_stream_create(c, "s", NULL), 0);
    struct vsc_id s = vsc_id_name("s"), t = vsc_id_name("t");
    ck_assert_int_eq(vsc_topic_create(c, &s, 1, "t", NULL, 0, NULL), 0);
    vsc_destroy(c);

    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        close(pfd[0]);
        send_child(pfd[1], addr);
    }
    close(pfd[1]);
    static struct progress pr;
    memset(&pr, 0, sizeof pr);
    pr.sent = -1;
    read_progress(pfd[0], &pr, KILL_AT, 60000);
    ck_assert_msg(pr.acked >= KILL_AT && !pr.error, "loop stalled: %d acks",
                  pr.acked);

    e2e_kill_node(&node);
    read_progress(pfd[0], &pr, LOOP_N + 1, 200); /* drain what was written */
    int inflight = pr.sent; /* announced; maybe not acknowledged */
    int acked_before = pr.acked;
    uint64_t max_before = 0;
    for (int i = 0; i < LOOP_N; i++)
        if (pr.ack[i] && pr.ack_offset[i] + PER - 1 > max_before)
            max_before = pr.ack_offset[i] + PER - 1;

    const char *same[] = {"--client-addr", addr, NULL};
    e2e_start(&node, 2, same);
    ck_assert_str_eq(node.ready.client, addr);
    /* the library reconnects, re-registers and resends; the loop goes on */
    read_progress(pfd[0], &pr, acked_before + AFTER_ACKS, 60000);
    ck_assert_msg(!pr.error && pr.acked >= acked_before + AFTER_ACKS,
                  "no progress after restart: %d acks (error %d)", pr.acked,
                  pr.error);
    int st;
    kill(child, SIGKILL);
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    read_progress(pfd[0], &pr, LOOP_N + 1, 200);
    close(pfd[0]);

    /* poll the whole partition */
    c = e2e_login(&node, "iggy", "iggy");
    static int copies[LOOP_N * PER + 1];
    static uint64_t first_off[LOOP_N * PER + 1];
    memset(copies, 0, sizeof copies);
    uint64_t next = 0, last = 0;
    int total = 0, have_last = 0;
    for (int round = 0; round < 1000; round++) {
        struct vsc_poll_args a;
        memset(&a, 0, sizeof a);
        struct vsc_id cid = vsc_id_num(0);
        a.consumer = vsc_consumer_single(&cid);
        a.has_partition = 1;
        a.partition_id = 0;
        a.strategy = VSC_POLL_OFFSET;
        a.value = next;
        a.count = 100;
        struct vsc_polled out;
        ck_assert_int_eq(vsc_poll(c, &s, &t, &a, &out), 0);
        if (out.n == 0) {
            vsc_polled_fini(&out);
            break;
        }
        for (size_t k = 0; k < out.n; k++) {
            const struct vsc_message *m = &out.msgs[k];
            ck_assert_msg(
                !have_last || m->offset > last, "offset %llu not above %llu",
                (unsigned long long)m->offset, (unsigned long long)last);
            last = m->offset;
            have_last = 1;
            uint64_t id = m->id.lo;
            ck_assert_uint_eq(m->id.hi, 0);
            ck_assert_msg(id >= 1 && id <= (uint64_t)LOOP_N * PER,
                          "unknown id %llu", (unsigned long long)id);
            int i = (int)((id - 1) / PER), j = (int)((id - 1) % PER);
            ck_assert_msg(i <= pr.sent, "never sent: batch %d", i);
            char want[300];
            size_t wl = payload_of(i, j, want, sizeof want);
            ck_assert_uint_eq(m->payload_len, wl);
            ck_assert(memcmp(m->payload, want, wl) == 0);
            if (copies[id]++ == 0)
                first_off[id] = m->offset;
            total++;
        }
        next = last + 1;
        vsc_polled_fini(&out);
    }
    vsc_destroy(c);

    int dup_batches = 0;
    for (int i = 0; i < LOOP_N; i++) {
        for (int j = 0; j < PER; j++) {
            int id = i * PER + j + 1;
            if (pr.ack[i]) {
                ck_assert_msg(copies[id] >= 1, "acknowledged %d/%d lost", i, j);
            }
            if (copies[id] > 1) {
                ck_assert_msg(i == inflight,
                              "batch %d duplicated but only batch %d was in "
                              "flight at the kill",
                              i, inflight);
                ck_assert_int_le(copies[id], 2);
                if (j == 0)
                    dup_batches++;
            }
        }
        if (pr.ack[i] && copies[i * PER + 1] == 1) {
            /* at its acknowledged offsets, in order */
            for (int j = 0; j < PER; j++)
                ck_assert_uint_eq(first_off[i * PER + j + 1],
                                  pr.ack_offset[i] + (uint64_t)j);
        }
        if (pr.ack[i] && i > inflight) {
            ck_assert_uint_gt(pr.ack_offset[i], max_before);
        }
    }
    fprintf(stderr,
            "killed with batch %d in flight (%d acknowledged before); after "
            "the restart %d acknowledged; %d batch(es) stored twice; %d "
            "messages polled\n",
            inflight, acked_before, pr.acked, dup_batches, total);
    ck_assert_int_le(dup_batches, 1);
    ck_assert_int_ge(total, pr.acked * PER);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_send_durable");
    TCase *tc = tcase_create("send");
    tcase_set_timeout(tc, 240);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_library_send_loop_survives_node_kill);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
