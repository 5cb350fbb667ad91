/*
 * tests/integration/check_conn_balance.c - client connections spread
 * evenly over the data shards (shard/serve/balance.h) of a real node:
 *  - 64 connections opened back to back to a two-shard node end up
 *    32 +- 4 on each shard (the kernel's accept race alone can put all
 *    of them on one);
 *  - with one data shard stopped (SIGSTOP), new connections are still
 *    accepted by the other within a bounded time (a stuck shard never
 *    holds clients back), and the stopped one catches up once resumed;
 *  - 64 connections to the TLS listener spread the same way (TLS
 *    accepts go through the same balancer; a self-signed certificate
 *    made with `openssl` in the test).
 * Which shard holds a connection is read from /proc/PID/fd (sockets).
 * Every wait is bounded; processes are ended by pid.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/integration/harness.h"

#define CONNS 64

static struct vs_node node;

static void
setup(void)
{
    const char *args[] = {"--shards", "2", NULL};
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
    ck_assert_int_eq(vs_node_start(&node, args, 30000), 0);
    ck_assert_uint_eq(node.ready.n_shard_pids, 3);
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
}

/* Sockets open in process pid. */
static int
sockets_of(pid_t pid)
{
    char dir[64], path[400], link[128];
    int n = 0;
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t k = readlink(path, link, sizeof link - 1);
        if (k <= 0)
            continue;
        link[k] = '\0';
        n += strncmp(link, "socket:", 7) == 0;
    }
    closedir(d);
    return n;
}

/* Waits (bounded) until the two data shards hold `want` more sockets
 * than base[] together; fills got[]. */
static void
wait_accepted(const int *base, int want, int *got)
{
    pid_t a = node.ready.shard_pids[1], b = node.ready.shard_pids[2];
    uint64_t end = vs_monotonic_ns() + 20ull * 1000000000ull;
    do {
        got[0] = sockets_of(a) - base[0];
        got[1] = sockets_of(b) - base[1];
        if (got[0] + got[1] >= want)
            return;
        usleep(20000);
    } while (vs_monotonic_ns() < end);
    ck_abort_msg("accepted %d + %d of %d", got[0], got[1], want);
}

START_TEST(test_even_spread)
{
    int base[2] = {sockets_of(node.ready.shard_pids[1]),
                   sockets_of(node.ready.shard_pids[2])};
    int fds[CONNS], got[2];
    for (int i = 0; i < CONNS; i++) {
        fds[i] = vs_connect(node.ready.client);
        ck_assert_int_ge(fds[i], 0);
    }
    wait_accepted(base, CONNS, got);
    ck_assert_int_eq(got[0] + got[1], CONNS);
    ck_assert_msg(abs(got[0] - got[1]) <= 8, "spread %d / %d", got[0], got[1]);
    for (int i = 0; i < CONNS; i++)
        close(fds[i]);
}
END_TEST

START_TEST(test_stopped_shard_does_not_hold_clients)
{
    pid_t stopped = node.ready.shard_pids[1];
    int base[2] = {sockets_of(stopped), sockets_of(node.ready.shard_pids[2])};
    int fds[10], got[2];
    ck_assert_int_eq(kill(stopped, SIGSTOP), 0);
    for (int i = 0; i < 10; i++) {
        fds[i] = vs_connect(node.ready.client);
        ck_assert_int_ge(fds[i], 0);
    }
    /* the running shard takes all of them (the stopped one is counted
     * as holding fewer, so this exercises the grace period) */
    wait_accepted(base, 10, got);
    ck_assert_int_eq(got[0], 0);
    ck_assert_int_eq(got[1], 10);
    ck_assert_int_eq(kill(stopped, SIGCONT), 0);
    /* resumed, it gets the next ones until the counts are even again */
    int more[10];
    for (int i = 0; i < 10; i++) {
        more[i] = vs_connect(node.ready.client);
        ck_assert_int_ge(more[i], 0);
    }
    wait_accepted(base, 20, got);
    ck_assert_msg(got[0] >= 6, "resumed shard took %d of 10", got[0]);
    for (int i = 0; i < 10; i++) {
        close(fds[i]);
        close(more[i]);
    }
}
END_TEST

static void
setup_tls(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
    char cert[400], key[400], cmd[1200];
    snprintf(cert, sizeof cert, "%s/server.pem", node.dir);
    snprintf(key, sizeof key, "%s/server.key", node.dir);
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
             "-nodes -keyout %s -out %s -days 2 -subj /CN=localhost "
             ">/dev/null 2>&1",
             key, cert);
    int st = system(cmd);
    ck_assert_msg(st == 0, "openssl failed: %d", st);
    const char *args[] = {
        "--shards",        "2",  "--tls-enabled",  "--tls-addr", "127.0.0.1:0",
        "--tls-cert-file", cert, "--tls-key-file", key,          NULL};
    ck_assert_int_eq(vs_node_start(&node, args, 30000), 0);
    ck_assert_uint_eq(node.ready.n_shard_pids, 3);
    ck_assert_str_ne(node.ready.tls, "");
}

START_TEST(test_tls_even_spread)
{
    int base[2] = {sockets_of(node.ready.shard_pids[1]),
                   sockets_of(node.ready.shard_pids[2])};
    int fds[CONNS], got[2];
    for (int i = 0; i < CONNS; i++) {
        fds[i] = vs_connect(node.ready.tls);
        ck_assert_int_ge(fds[i], 0);
    }
    wait_accepted(base, CONNS, got);
    ck_assert_int_eq(got[0] + got[1], CONNS);
    ck_assert_msg(abs(got[0] - got[1]) <= 8, "TLS spread %d / %d", got[0],
                  got[1]);
    for (int i = 0; i < CONNS; i++)
        close(fds[i]);
}
END_TEST

static Suite *
balance_suite(void)
{
    Suite *s = suite_create("conn_balance");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, test_even_spread);
    tcase_add_test(tc, test_stopped_shard_does_not_hold_clients);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("tls");
    tcase_add_checked_fixture(tt, setup_tls, teardown);
    tcase_set_timeout(tt, 90);
    tcase_add_test(tt, test_tls_even_spread);
    suite_add_tcase(s, tt);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(balance_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
