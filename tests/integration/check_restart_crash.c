/*
 * tests/integration/check_restart_crash.c - a node SIGKILLed as a whole
 * (supervisor and every shard at once, as `kill -9` of its process group
 * or systemd's final SIGKILL does) and restarted at once, 30 times: no
 * restart may exit 2 (exit 2 means "do not restart"), every one serves;
 * the wait for the dying node's lock is logged. Uses harness.h; 127.0.0.1
 * and port 0; every wait bounded; processes stopped by pid.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"

#define START_MS 30000u
#define STOP_MS  20000u
#define CYCLES   30

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

/* SIGKILL to every process of the node in one sweep, then reap the
 * supervisor. Returns how many shards were killed. */
static size_t
kill_node(struct vs_node *n)
{
    pid_t kids[64];
    size_t nk = vs_proc_children(n->pid, kids, 64);
    if (nk > 64)
        nk = 64;
    (void)kill(n->pid, SIGKILL);
    for (size_t i = 0; i < nk; i++)
        (void)kill(kids[i], SIGKILL);
    vs_node_kill(n); /* reaps the supervisor */
    return nk;
}

/* Occurrences of needle in the file (the log is appended to by every
 * boot of the node). */
static int
count_in_file(const char *path, const char *needle)
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

START_TEST(test_kill9_restart_cycles)
{
    /* production-sized tables: the shards have a large metadata mapping
     * to tear down, as a real node does */
    const char *args[] = {"--shards",
                          "2",
                          "--max-partitions",
                          "1000000",
                          "--max-topics",
                          "100000",
                          "--max-group-members",
                          "100000",
                          NULL};
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "first start: %d, status %d", rc, node.status);
    for (int i = 0; i < CYCLES; i++) {
        size_t nk = kill_node(&node);
        ck_assert_uint_ge(nk, 1);
        /* restart at once: the killed shards may still be exiting */
        rc = vs_node_start(&node, args, START_MS);
        if (rc == -ECHILD)
            ck_abort_msg("cycle %d: restart exited with status %d (exit "
                         "code %d)",
                         i, node.status,
                         WIFEXITED(node.status) ? WEXITSTATUS(node.status)
                                                : -1);
        ck_assert_msg(rc == 0, "cycle %d: restart: %d (%s)", i, rc,
                      strerror(-rc));
        /* it serves: the client port answers */
        int fd = vs_connect(node.ready.client);
        ck_assert_msg(fd >= 0, "cycle %d: connect %s: %d", i, node.ready.client,
                      fd);
        close(fd);
    }
    int waited = count_in_file(node.log_file, "which is gone or dying");
    printf("check_restart_crash: %d of %d restarts waited for the dying "
           "node's lock\n",
           waited, CYCLES);
    pid_t kids[64];
    size_t nk = node.ready.n_shard_pids;
    memcpy(kids, node.ready.shard_pids, nk * sizeof(pid_t));
    int st = vs_node_stop(&node, STOP_MS);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "stop: %d",
                  st);
    ck_assert_int_eq(vs_wait_gone(kids, nk, STOP_MS), 0);
    pid_t orphans[8];
    ck_assert_uint_eq(vs_harness_orphans_wait(NULL, 0, orphans, 8, STOP_MS), 0);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("restart_crash");
    TCase *tc = tcase_create("restart_crash");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_kill9_restart_cycles);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
