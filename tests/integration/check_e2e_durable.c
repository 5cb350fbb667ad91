/*
 * tests/integration/check_e2e_durable.c - at-most-once and durability of
 * the one-replica commit path, end to end.
 *
 * At-most-once: a CreateStream frame resent with the same client id and
 * request number (through the library's resend hook and on a raw socket
 * after a Register with the same client id), before and after SIGKILL of
 * the whole node and a restart, gets byte-identical cached reply bytes,
 * and exactly one stream exists.
 * Durability: a child process runs a loop of metadata changes and reports
 * on a pipe each request before it is sent ("S i"), each acknowledged one
 * ("A i") and each refused one ("R i"); the test SIGKILLs the whole node
 * (supervisor and shards) in the middle, or shard 0 alone, restarts, and
 * checks every acknowledged change is there and none that was refused or
 * never sent.
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

#include "common/buf.h"
#include "common/clock.h"
#include "common/errors.h"
#include "tests/integration/e2e.h"

#define LOOP_N  60
#define KILL_AT 20

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

/* Re-registers `client` on a raw socket and sends `req` (session patched)
 * to get the reply bytes. */
static int
raw_resend(struct vs_u128 client, const uint8_t *req, size_t len, uint8_t *out,
           size_t cap)
{
    struct vs_wbuf b, w;
    uint8_t buf[1024];
    struct vsc_reply r;
    uint32_t uid, proto;
    uint64_t session;
    char ver[256];
    int fd = vs_connect(node.ready.client), n;
    ck_assert_int_ge(fd, 0);
    vs_wbuf_init(&b);
    vs_wbuf_init(&w);
    vsc_body_login(&b, VSC_PROTOCOL_VERSION, "raw", "1", "iggy", "iggy");
    vsc_frame_request(&w, client, 0, 0, VS_OP_REGISTER, 0, b.data, b.len, 1);
    ck_assert_int_eq(e2e_send(fd, w.data, w.len), 0);
    n = e2e_recv_frame(fd, buf, sizeof buf, 20000);
    ck_assert_int_gt(n, 256);
    ck_assert_int_eq(vsc_reply_decode(buf, (size_t)n, &r), 0);
    ck_assert_int_eq(
        vsc_decode_login(r.payload, r.payload_len, &uid, &session, &proto, ver),
        0);
    vs_wbuf_reset(&w);
    vs_wr_bytes(&w, req, len);
    vs_store_u64(w.data + 184, session);
    ck_assert_int_eq(e2e_send(fd, w.data, w.len), 0);
    n = e2e_recv_frame(fd, out, cap, 20000);
    close(fd);
    vs_wbuf_fini(&b);
    vs_wbuf_fini(&w);
    return n;
}

START_TEST(test_at_most_once)
{
    struct vsc *c = e2e_login(&node, "iggy", "iggy"), *other;
    uint8_t req[1024], rep[1024], again[1024];
    const uint8_t *p;
    size_t req_len, rep_len, len;
    char names[4096];
    struct vsc_stream s;
    int n;

    ck_assert_int_eq(vsc_stream_create(c, "amo", &s), 0);
    ck_assert_uint_eq(s.id, 0);
    p = vsc_last_request(c, &req_len);
    ck_assert_uint_le(req_len, sizeof req);
    memcpy(req, p, req_len);
    ck_assert_uint_eq(vs_load_u64(req + 168), 1); /* request number */
    p = vsc_last_reply(c, &rep_len);
    ck_assert_uint_le(rep_len, sizeof rep);
    memcpy(rep, p, rep_len);

    /* Resent through the library: reconnect, Register with the same id. */
    ck_assert_int_eq(vsc_resend_last(c), 0);
    p = vsc_last_reply(c, &len);
    ck_assert_uint_eq(len, rep_len);
    ck_assert_mem_eq(p, rep, rep_len);
    /* And on a raw socket (its Register supersedes the library's session,
     * which the next vsc_resend_last re-registers). */
    n = raw_resend(vsc_client_id(c), req, req_len, again, sizeof again);
    ck_assert_int_eq(n, (int)rep_len);
    ck_assert_mem_eq(again, rep, rep_len);
    other = e2e_login(&node, "iggy", "iggy");
    ck_assert_uint_eq(e2e_stream_names(other, names, sizeof names), 1);
    vsc_destroy(other);

    /* SIGKILL the whole node, restart on the same data dir. */
    e2e_kill_node(&node);
    e2e_start(&node, 0, NULL);
    n = raw_resend(vsc_client_id(c), req, req_len, again, sizeof again);
    ck_assert_int_eq(n, (int)rep_len);
    ck_assert_mem_eq(again, rep, rep_len);
    vsc_set_addr(c, node.ready.client);
    ck_assert_int_eq(vsc_resend_last(c), 0);
    p = vsc_last_reply(c, &len);
    ck_assert_uint_eq(len, rep_len);
    ck_assert_mem_eq(p, rep, rep_len);
    ck_assert_uint_eq(e2e_stream_names(c, names, sizeof names), 1);
    ck_assert_str_eq(names, "amo\n");
    /* The session goes on with the next request number. */
    ck_assert_int_eq(vsc_stream_create(c, "amo2", NULL), 0);
    ck_assert_uint_eq(vs_load_u64(vsc_last_request(c, &len) + 168), 2);
    ck_assert_int_eq(vsc_stream_create(c, "amo", NULL),
                     VS_E_STREAM_NAME_ALREADY_EXISTS);
    vsc_destroy(c);
}
END_TEST

/* The loop of the child: creates d-i, and every 4th step also tries to
 * rename a missing stream to r-i (refused with 1009). Reports on fd. */
static void
loop_child(int fd, const char *addr)
{
    struct vsc_opts o;
    struct vsc *c;
    char line[64], name[32];
    int i, rc;
    memset(&o, 0, sizeof o);
    o.addr = addr;
    /* A request whose reply never comes (shard 0 died with it) is resent
     * after 3 s on a new connection with the same request number. */
    o.io_timeout_ms = 3000;
    o.reconnects = 8;
    c = vsc_create(&o);
    if (vsc_login(c, "iggy", "iggy", NULL) != 0)
        _exit(3);
    for (i = 0; i < LOOP_N; i++) {
        snprintf(name, sizeof name, "d-%03d", i);
        snprintf(line, sizeof line, "S %d\n", i);
        if (write(fd, line, strlen(line)) < 0)
            _exit(4);
        rc = vsc_stream_create(c, name, NULL);
        if (rc != 0) {
            snprintf(line, sizeof line, "E %d %d\n", i, rc);
            (void)!write(fd, line, strlen(line));
            _exit(rc < 0 ? 5 : 6);
        }
        snprintf(line, sizeof line, "A %d\n", i);
        if (write(fd, line, strlen(line)) < 0)
            _exit(4);
        if (i % 4 == 0) {
            struct vsc_id id;
            char missing[32], to[32];
            snprintf(missing, sizeof missing, "missing-%03d", i);
            snprintf(to, sizeof to, "r-%03d", i);
            id = vsc_id_name(missing);
            rc = vsc_stream_update(c, &id, to);
            if (rc != VS_E_STREAM_ID_NOT_FOUND) {
                snprintf(line, sizeof line, "E %d %d\n", i, rc);
                (void)!write(fd, line, strlen(line));
                _exit(7);
            }
            snprintf(line, sizeof line, "R %d\n", i);
            if (write(fd, line, strlen(line)) < 0)
                _exit(4);
        }
    }
    vsc_destroy(c);
    _exit(0);
}

struct progress {
    int sent;  /* highest index announced */
    int acked; /* count of acks */
    int ack[LOOP_N];
    int error; /* 1 after an "E" line */
    int error_rc;
    char buf[8192];
    size_t len;
};

/* Reads lines until `until_acks` acks, EOF, or the deadline. 1 at EOF. */
static int
read_progress(int fd, struct progress *pr, int until_acks, uint32_t ms)
{
    uint64_t deadline = vs_monotonic_ns() + (uint64_t)ms * 1000000u;
    while (pr->acked < until_acks && vs_monotonic_ns() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        char *nl;
        ssize_t k;
        if (poll(&p, 1, 200) <= 0)
            continue;
        k = read(fd, pr->buf + pr->len, sizeof pr->buf - 1 - pr->len);
        if (k <= 0)
            return 1;
        pr->len += (size_t)k;
        pr->buf[pr->len] = '\0';
        while ((nl = strchr(pr->buf, '\n')) != NULL) {
            char kind;
            int i;
            *nl = '\0';
            if (sscanf(pr->buf, "%c %d", &kind, &i) == 2 && i >= 0 &&
                i < LOOP_N) {
                if (kind == 'S' && i > pr->sent)
                    pr->sent = i;
                else if (kind == 'A') {
                    pr->ack[i] = 1;
                    pr->acked++;
                } else if (kind == 'E') {
                    pr->error = 1;
                    (void)sscanf(pr->buf, "%c %d %d", &kind, &i, &pr->error_rc);
                }
            }
            pr->len -= (size_t)(nl + 1 - pr->buf);
            memmove(pr->buf, nl + 1, pr->len + 1);
        }
    }
    return 0;
}

/* After a restart: every acked d-i exists, no d-j beyond the last sent,
 * no r-*; each name at most once. Returns how many d-* exist. */
static int
verify_state(const struct progress *pr)
{
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    struct vsc_stream *v;
    size_t n, i;
    int seen[LOOP_N] = {0}, count = 0;
    ck_assert_int_eq(vsc_stream_list(c, &v, &n), 0);
    for (i = 0; i < n; i++) {
        int j;
        ck_assert_msg(strncmp(v[i].name, "r-", 2) != 0,
                      "refused change present: %s", v[i].name);
        ck_assert_msg(sscanf(v[i].name, "d-%d", &j) == 1, "stray %s",
                      v[i].name);
        ck_assert_msg(j >= 0 && j <= pr->sent, "never sent: %s (sent %d)",
                      v[i].name, pr->sent);
        ck_assert_msg(!seen[j], "twice: %s", v[i].name);
        seen[j] = 1;
        count++;
    }
    for (i = 0; i < LOOP_N; i++)
        ck_assert_msg(!pr->ack[i] || seen[i], "acked d-%03zu lost", i);
    free(v);
    vsc_destroy(c);
    return count;
}

static pid_t
start_loop(int *rfd)
{
    int p[2];
    pid_t pid;
    ck_assert_int_eq(pipe(p), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[0]);
        loop_child(p[1], node.ready.client);
    }
    close(p[1]);
    *rfd = p[0];
    return pid;
}

START_TEST(test_durability_whole_node)
{
    static struct progress pr;
    int fd, st, count;
    pid_t child;
    memset(&pr, 0, sizeof pr);
    pr.sent = -1;
    child = start_loop(&fd);
    read_progress(fd, &pr, KILL_AT, 60000);
    ck_assert_msg(pr.acked >= KILL_AT && !pr.error, "loop stalled: %d acks",
                  pr.acked);
    e2e_kill_node(&node);
    kill(child, SIGKILL);
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    read_progress(fd, &pr, LOOP_N + 1, 1000); /* what was already written */
    close(fd);
    e2e_start(&node, 0, NULL);
    count = verify_state(&pr);
    ck_assert_int_ge(count, pr.acked);
    ck_assert_int_le(count, pr.sent + 1);
}
END_TEST

START_TEST(test_durability_shard0)
{
    static struct progress pr;
    int fd, st, count;
    pid_t child, s0;
    memset(&pr, 0, sizeof pr);
    pr.sent = -1;
    child = start_loop(&fd);
    read_progress(fd, &pr, KILL_AT, 60000);
    ck_assert_msg(pr.acked >= KILL_AT && !pr.error, "loop stalled: %d acks",
                  pr.acked);
    ck_assert_int_eq(vs_node_read_ready(&node), 0);
    ck_assert_uint_ge(node.ready.n_shard_pids, 2);
    s0 = node.ready.shard_pids[0];
    ck_assert_int_eq(kill(s0, SIGKILL), 0);
    ck_assert_int_eq(vs_node_wait_respawn(&node, 0, s0, 30000), 0);
    /* The loop goes on through the restart of shard 0, at most once. */
    read_progress(fd, &pr, LOOP_N, 90000);
    close(fd);
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "loop child failed: status %d (error %d rc %d)", st, pr.error,
                  pr.error_rc);
    ck_assert_int_eq(pr.acked, LOOP_N);
    count = verify_state(&pr);
    ck_assert_int_eq(count, LOOP_N);
    /* And the same after a whole-node restart. */
    e2e_kill_node(&node);
    e2e_start(&node, 0, NULL);
    ck_assert_int_eq(verify_state(&pr), LOOP_N);
}
END_TEST

static Suite *
e2e_durable_suite(void)
{
    Suite *s = suite_create("e2e_durable");
    TCase *tc = tcase_create("durable");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_at_most_once);
    tcase_add_test(tc, test_durability_whole_node);
    tcase_add_test(tc, test_durability_shard0);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(e2e_durable_suite());
    int failed;
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
