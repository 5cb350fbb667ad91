/*
 * tests/integration/check_supervisor.c - the real vstreamd: start and
 * clean stop, shards killed and restarted, a child exiting 2 stops the
 * node, the data-dir lock, the recorded shard count, the supervisor
 * SIGKILLed (children die with it), SIGHUP log reopening, the shutdown
 * deadline. Uses tests/integration/harness.h; 127.0.0.1 and port 0 only;
 * every wait bounded; processes stopped by pid.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/harness.h"

#define START_MS 20000u
#define STOP_MS  20000u

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
start_ok(struct vs_node *n, const char *const *args)
{
    int rc = vs_node_start(n, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d (%s), status %d", rc, strerror(-rc),
                  n->status);
}

static void
stop_clean(struct vs_node *n)
{
    pid_t kids[64];
    size_t nk = n->ready.n_shard_pids;
    memcpy(kids, n->ready.shard_pids, nk * sizeof(pid_t));
    int st = vs_node_stop(n, STOP_MS);
    ck_assert_msg(st >= 0, "stop timed out");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d", st);
    ck_assert_int_eq(vs_wait_gone(kids, nk, STOP_MS), 0);
    pid_t orphans[8];
    ck_assert_uint_eq(vs_harness_orphans_wait(NULL, 0, orphans, 8, STOP_MS), 0);
}

static long
read_long(const char *path)
{
    char buf[64] = {0};
    int fd = open(path, O_RDONLY);
    if (fd == -1)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    return n > 0 ? strtol(buf, NULL, 10) : -1;
}

START_TEST(test_start_serve_stop)
{
    char pidfile[400];
    snprintf(pidfile, sizeof(pidfile), "%s/vstreamd.pid", node.dir);
    const char *args[] = {"--shards", "2", "--pid-file", pidfile, NULL};
    start_ok(&node, args);
    ck_assert_int_eq(node.ready.pid, node.pid);
    ck_assert_uint_eq(node.ready.n_shard_pids, 3);
    ck_assert_str_eq(node.ready.replica, "");
    ck_assert_int_eq(strncmp(node.ready.client, "127.0.0.1:", 10), 0);
    ck_assert_int_ne(atoi(node.ready.client + 10), 0);
    ck_assert_int_eq(read_long(pidfile), node.pid);
    char p[400];
    snprintf(p, sizeof(p), "%s/shards", node.data_dir);
    ck_assert_int_eq(read_long(p), 2);
    snprintf(p, sizeof(p), "%s/metadata", node.data_dir);
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    snprintf(p, sizeof(p), "/proc/%d/oom_score_adj", (int)node.pid);
    long sup_oom = read_long(p);
    for (size_t i = 0; i < 3; i++) {
        pid_t c = node.ready.shard_pids[i];
        ck_assert_int_eq(vs_proc_ppid(c), node.pid);
        snprintf(p, sizeof(p), "/proc/%d/oom_score_adj", (int)c);
        ck_assert_int_gt(read_long(p), sup_oom < 1000 ? sup_oom : 999);
    }
    pid_t kids[8];
    ck_assert_uint_eq(vs_proc_children(node.pid, kids, 8), 3);
    /* A data shard accepts and closes cleanly (no protocol yet). */
    for (int i = 0; i < 4; i++) {
        int fd = vs_connect(node.ready.client);
        ck_assert_int_ge(fd, 0);
        char b;
        ck_assert_int_eq(read(fd, &b, 1), 0);
        close(fd);
    }
    stop_clean(&node);
    ck_assert_int_eq(access(pidfile, F_OK), -1);
    ck_assert(vs_file_contains(node.log_file, "node stopped"));
}
END_TEST

/* SIGKILL shard 0 and each data shard: restarted, logged; the others
 * keep their pids. */
START_TEST(test_kill_each_shard)
{
    const char *args[] = {"--shards", "2", NULL};
    start_ok(&node, args);
    for (size_t slot = 0; slot < 3; slot++) {
        struct vs_ready_info before = node.ready;
        pid_t victim = before.shard_pids[slot];
        ck_assert_int_eq(kill(victim, SIGKILL), 0);
        ck_assert_int_eq(vs_node_wait_respawn(&node, slot, victim, START_MS),
                         0);
        for (size_t j = 0; j < 3; j++)
            if (j != slot)
                ck_assert_int_eq(node.ready.shard_pids[j],
                                 before.shard_pids[j]);
        ck_assert_int_eq(vs_proc_ppid(node.ready.shard_pids[slot]), node.pid);
        char want[128];
        snprintf(want, sizeof(want), "shard %zu (pid %d) killed by signal 9",
                 slot, (int)victim);
        ck_assert_int_eq(vs_wait_file_contains(node.log_file, want, 5000), 0);
        snprintf(want, sizeof(want), "shard %zu started", slot);
        ck_assert(vs_file_contains(node.log_file, want));
    }
    /* still serving */
    int fd = vs_connect(node.ready.client);
    ck_assert_int_ge(fd, 0);
    close(fd);
    stop_clean(&node);
}
END_TEST

/* Shard 0 refuses to boot (the storage verdict: a corrupt superblock
 * beside an absent one): exit 2 from the child stops the whole node with
 * its reason and code 2, and nothing on disk is touched. */
START_TEST(test_child_exit_2_stops_node)
{
    ck_assert_int_eq(mkdir(node.data_dir, 0700), 0);
    char p[400];
    snprintf(p, sizeof(p), "%s/metadata", node.data_dir);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/metadata/superblock.a", node.data_dir);
    int fd = open(p, O_WRONLY | O_CREAT, 0600);
    ck_assert_int_ge(fd, 0);
    static const char junk[100] = "not a superblock record";
    ck_assert_int_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
    close(fd);
    const char *args[] = {"--shards", "1", NULL};
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_int_eq(rc, -ECHILD);
    ck_assert(WIFEXITED(node.status));
    ck_assert_int_eq(WEXITSTATUS(node.status), 2);
    ck_assert(vs_file_contains(node.stderr_file, "shard 0 refused to run: "));
    ck_assert(vs_file_contains(node.stderr_file,
                               "refusing to boot: superblock unreadable: "
                               "superblock.a"));
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_size, (off_t)sizeof(junk)); /* evidence kept */
    snprintf(p, sizeof(p), "%s/metadata/superblock.b", node.data_dir);
    ck_assert_int_eq(access(p, F_OK), -1); /* nothing written over it */
    ck_assert(vs_file_contains(node.log_file, "shard 0 refused to run"));
    /* no restart was attempted and nobody is left */
    ck_assert(!vs_file_contains(node.log_file, "shard 0 restarts"));
    pid_t orphans[8];
    ck_assert_uint_eq(vs_harness_orphans_wait(NULL, 0, orphans, 8, STOP_MS), 0);
    ck_assert_int_eq(access(node.ready_file, F_OK), -1);
}
END_TEST

/* A second node on the same data dir exits 2 naming the holder. */
START_TEST(test_data_dir_locked)
{
    const char *args[] = {"--shards", "1", NULL};
    start_ok(&node, args);
    struct vs_node second;
    ck_assert_int_eq(vs_node_init(&second), 0);
    const char *args2[] = {"--data-dir", node.data_dir, NULL};
    ck_assert_int_eq(vs_node_spawn(&second, args2), 0);
    int st = vs_node_wait_exit(&second, STOP_MS);
    ck_assert(st >= 0 && WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 2);
    char want[512];
    snprintf(want, sizeof(want), "data dir %s is locked by vstreamd pid %d",
             node.data_dir, (int)node.pid);
    ck_assert(vs_file_contains(second.stderr_file, want));
    vs_node_cleanup(&second);
    /* the first node is unaffected */
    ck_assert_int_eq(vs_node_read_ready(&node), 0);
    stop_clean(&node);
}
END_TEST

/* K is recorded at first boot; a different explicit --shards is refused
 * with exit 2; without --shards the recorded K is used. */
START_TEST(test_shards_recorded)
{
    const char *a2[] = {"--shards", "2", NULL};
    start_ok(&node, a2);
    stop_clean(&node);
    const char *a3[] = {"--shards", "3", NULL};
    ck_assert_int_eq(vs_node_start(&node, a3, START_MS), -ECHILD);
    ck_assert(WIFEXITED(node.status) && WEXITSTATUS(node.status) == 2);
    ck_assert(vs_file_contains(node.stderr_file,
                               "--shards 3 differs from the 2 shards"));
    start_ok(&node, NULL);
    ck_assert_uint_eq(node.ready.n_shard_pids, 3);
    stop_clean(&node);
}
END_TEST

/* The supervisor SIGKILLed: the shards die with it (PDEATHSIG); the
 * lock is free again once they are gone. */
START_TEST(test_supervisor_killed)
{
    const char *args[] = {"--shards", "2", NULL};
    start_ok(&node, args);
    struct vs_ready_info r = node.ready;
    vs_node_kill(&node);
    ck_assert_int_eq(vs_wait_gone(r.shard_pids, r.n_shard_pids, STOP_MS), 0);
    pid_t orphans[8];
    ck_assert_uint_eq(vs_harness_orphans_wait(NULL, 0, orphans, 8, STOP_MS), 0);
    start_ok(&node, args);
    stop_clean(&node);
}
END_TEST

/* SIGHUP reopens the log file (after rotation) and reloads the level. */
START_TEST(test_sighup_reopens_log)
{
    const char *args[] = {"--shards", "1", NULL};
    start_ok(&node, args);
    char rotated[400];
    snprintf(rotated, sizeof(rotated), "%s.1", node.log_file);
    ck_assert_int_eq(rename(node.log_file, rotated), 0);
    ck_assert_int_eq(kill(node.pid, SIGHUP), 0);
    ck_assert_int_eq(
        vs_wait_file_contains(node.log_file, "SIGHUP: log reopened", 10000), 0);
    ck_assert(!vs_file_contains(rotated, "SIGHUP: log reopened"));
    stop_clean(&node);
    ck_assert(vs_file_contains(node.log_file, "node stopped"));
}
END_TEST

/* A shard that does not stop is SIGKILLed at the shutdown deadline;
 * the node still exits 0. A second SIGTERM forces it at once. */
START_TEST(test_shutdown_deadline_and_second_signal)
{
    const char *args[] = {"--shards", "2", "--shutdown-timeout-ms", "300",
                          NULL};
    start_ok(&node, args);
    pid_t stuck = node.ready.shard_pids[1];
    ck_assert_int_eq(kill(stuck, SIGSTOP), 0);
    stop_clean(&node);
    char want[128];
    snprintf(want, sizeof(want), "shard 1 (pid %d) did not stop in 300 ms",
             (int)stuck);
    ck_assert(vs_file_contains(node.log_file, want));

    const char *args2[] = {"--shards", "2", "--shutdown-timeout-ms", "600000",
                           NULL};
    start_ok(&node, args2);
    stuck = node.ready.shard_pids[2];
    ck_assert_int_eq(kill(stuck, SIGSTOP), 0);
    ck_assert_int_eq(kill(node.pid, SIGTERM), 0);
    ck_assert_int_eq(
        vs_wait_file_contains(node.log_file, "stopping: 3 shard(s)", 10000), 0);
    ck_assert_int_eq(kill(node.pid, SIGINT), 0);
    stop_clean(&node);
    ck_assert(vs_file_contains(node.log_file, "second signal"));
}
END_TEST

START_TEST(test_bad_flag_exits_2)
{
    const char *args[] = {"--no-such-flag", "1", NULL};
    ck_assert_int_eq(vs_node_start(&node, args, START_MS), -ECHILD);
    ck_assert(WIFEXITED(node.status) && WEXITSTATUS(node.status) == 2);
    const char *args2[] = {"--replica-id", "1", NULL};
    ck_assert_int_eq(vs_node_start(&node, args2, START_MS), -ECHILD);
    ck_assert(WIFEXITED(node.status) && WEXITSTATUS(node.status) == 2);
    ck_assert(vs_file_contains(node.stderr_file, "needs replica_addrs"));
}
END_TEST

/* A secret file for the cluster tests: 32 random bytes, mode 0600. */
static void
make_secret(char *path, size_t len, mode_t mode)
{
    snprintf(path, len, "/tmp/vs-secret-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    uint8_t key[32];
    for (size_t i = 0; i < sizeof(key); i++)
        key[i] = (uint8_t)(rand() & 0xff);
    ck_assert_int_eq(write(fd, key, sizeof(key)), (ssize_t)sizeof(key));
    ck_assert_int_eq(fchmod(fd, mode), 0);
    close(fd);
}

/* Clustered: this replica's address is bound and reported; a multi-node
 * replica without a usable cluster secret refuses to start. */
START_TEST(test_replica_listener)
{
    char secret[64], open_secret[64];
    make_secret(secret, sizeof(secret), 0600);
    make_secret(open_secret, sizeof(open_secret), 0644);
    const char *args[] = {"--shards",
                          "1",
                          "--replica-addrs",
                          "127.0.0.1:0,127.0.0.1:1",
                          "--cluster-secret-file",
                          secret,
                          NULL};
    /* a cluster replica refuses an empty data dir (it may be a lost
     * disk) until `vstreamd format` formats it */
    ck_assert_int_eq(vs_node_start(&node, args, START_MS), -ECHILD);
    ck_assert_int_eq(WEXITSTATUS(node.status), 2);
    ck_assert(vs_file_contains(node.stderr_file, "format"));
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "'%s' --data-dir '%s' --replica-addrs "
             "127.0.0.1:0,127.0.0.1:1 format >/dev/null",
             getenv("VSTREAMD"), node.data_dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_ne(system(cmd), 0); /* never formats over a superblock */

    /* no secret, or one others can read: exit 2 with the reason */
    const char *no_secret[] = {"--shards", "1", "--replica-addrs",
                               "127.0.0.1:0,127.0.0.1:1", NULL};
    ck_assert_int_eq(vs_node_start(&node, no_secret, START_MS), -ECHILD);
    ck_assert_int_eq(WEXITSTATUS(node.status), 2);
    ck_assert(vs_file_contains(node.stderr_file, "cluster_secret_file"));
    const char *bad_mode[] = {"--shards",
                              "1",
                              "--replica-addrs",
                              "127.0.0.1:0,127.0.0.1:1",
                              "--cluster-secret-file",
                              open_secret,
                              NULL};
    ck_assert_int_eq(vs_node_start(&node, bad_mode, START_MS), -ECHILD);
    ck_assert_int_eq(WEXITSTATUS(node.status), 2);
    ck_assert(vs_file_contains(node.stderr_file, "chmod 0600"));

    start_ok(&node, args);
    ck_assert_int_eq(strncmp(node.ready.replica, "127.0.0.1:", 10), 0);
    ck_assert_int_ne(atoi(node.ready.replica + 10), 0);
    int fd = vs_connect(node.ready.replica);
    ck_assert_int_ge(fd, 0);
    close(fd);
    stop_clean(&node);
    unlink(secret);
    unlink(open_secret);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("supervisor");
    TCase *tc = tcase_create("supervisor");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_start_serve_stop);
    tcase_add_test(tc, test_kill_each_shard);
    tcase_add_test(tc, test_child_exit_2_stops_node);
    tcase_add_test(tc, test_data_dir_locked);
    tcase_add_test(tc, test_shards_recorded);
    tcase_add_test(tc, test_supervisor_killed);
    tcase_add_test(tc, test_sighup_reopens_log);
    tcase_add_test(tc, test_shutdown_deadline_and_second_signal);
    tcase_add_test(tc, test_bad_flag_exits_2);
    tcase_add_test(tc, test_replica_listener);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
