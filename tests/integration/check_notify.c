/*
 * tests/integration/check_notify.c - systemd readiness of a real
 * vstreamd: with $NOTIFY_SOCKET pointing at a datagram socket of the
 * test (as systemd sets it for Type=notify units), the supervisor sends
 * READY=1 with a STATUS= line once the node serves (the ready file
 * exists by then), a degraded STATUS= while a crashed shard restarts and
 * a serving one after, WATCHDOG=1 keep-alives at half $WATCHDOG_USEC,
 * and STOPPING=1 on SIGTERM. All waits bounded.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/integration/e2e.h"

static struct vs_node node;
static int sock = -1;

/* Waits for a datagram containing `needle` (skipping others) within
 * timeout_ms; copies the last one read into out. 1 if found. */
static int
wait_msg(const char *needle, uint32_t timeout_ms, char *out, size_t cap,
         int *ready_count)
{
    uint64_t deadline = vs_monotonic_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        uint64_t now = vs_monotonic_ns();
        if (now >= deadline)
            return 0;
        struct pollfd p = {.fd = sock, .events = POLLIN};
        if (poll(&p, 1, (int)((deadline - now) / 1000000u) + 1) <= 0)
            continue;
        ssize_t n = recv(sock, out, cap - 1, 0);
        if (n <= 0)
            continue;
        out[n] = '\0';
        if (ready_count && strstr(out, "READY=1"))
            (*ready_count)++;
        if (strstr(out, needle))
            return 1;
    }
}

START_TEST(test_notify_lifecycle)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
    char path[400];
    snprintf(path, sizeof path, "%s/notify.sock", node.dir);
    sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(sock, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    ck_assert_uint_lt(strlen(path), sizeof sa.sun_path);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    ck_assert_int_eq(bind(sock, (struct sockaddr *)&sa, sizeof sa), 0);
    setenv("NOTIFY_SOCKET", path, 1);
    setenv("WATCHDOG_USEC", "400000", 1);
    unsetenv("WATCHDOG_PID");
    e2e_start(&node, 2, NULL);
    char msg[1024];
    int ready = 0;
    /* READY=1 arrives once, with the serving status */
    ck_assert(wait_msg("READY=1", 10000, msg, sizeof msg, &ready));
    ck_assert_msg(strstr(msg, "STATUS=serving: client 127.0.0.1:"), "%s", msg);
    ck_assert(vs_proc_alive(node.ready.pid));
    /* keep-alives every WATCHDOG_USEC / 2 */
    uint64_t t0 = vs_monotonic_ns();
    ck_assert(wait_msg("WATCHDOG=1", 5000, msg, sizeof msg, &ready));
    ck_assert(wait_msg("WATCHDOG=1", 5000, msg, sizeof msg, &ready));
    ck_assert_uint_lt(vs_monotonic_ns() - t0, 3000000000ull);
    /* a data shard crashes: degraded, then serving again */
    pid_t victim = node.ready.shard_pids[1];
    ck_assert_int_eq(kill(victim, SIGKILL), 0);
    ck_assert(wait_msg("STATUS=degraded: shard 1 restarting", 10000, msg,
                       sizeof msg, &ready));
    ck_assert(wait_msg("STATUS=serving", 30000, msg, sizeof msg, &ready));
    ck_assert_int_eq(ready, 1); /* READY=1 only once */
    /* SIGTERM: STOPPING=1, then a clean exit */
    ck_assert_int_eq(kill(node.pid, SIGTERM), 0);
    ck_assert(wait_msg("STOPPING=1", 10000, msg, sizeof msg, &ready));
    int st = vs_node_wait_exit(&node, 20000);
    ck_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(sock);
    vs_node_cleanup(&node);
}
END_TEST

/* Without $NOTIFY_SOCKET nothing is sent and the node runs as before. */
START_TEST(test_no_notify_socket)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    e2e_start(&node, 1, NULL);
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    ck_assert_int_eq(vsc_ping(c), 0);
    vsc_destroy(c);
    int st = vs_node_stop(&node, 20000);
    ck_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    vs_node_cleanup(&node);
}
END_TEST

static Suite *
notify_suite(void)
{
    Suite *s = suite_create("notify");
    TCase *t = tcase_create("notify");
    tcase_add_test(t, test_notify_lifecycle);
    tcase_add_test(t, test_no_notify_socket);
    tcase_set_timeout(t, 120);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(notify_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
