/*
 * tests/integration/check_cluster_admit.c - who may join a real 3-node
 * cluster. Replica 2's node is replaced by an intruder that claims its
 * id and addresses but was formatted with a wrong cluster name, a
 * different replica count, or holds another cluster secret: its peers
 * refuse its links with a log line naming the reason, none of its links
 * comes up and it never learns a committed op (it never joins a quorum),
 * and the other two keep committing. The real replica 2 then rejoins and
 * catches up, so a refusal leaves nothing behind. A peer configured with
 * other replica names is refused too, and a refusal is logged once a
 * minute per (peer, reason): a new reason at once. A node whose config names
 * another cluster than its data dir, or whose replica_names repeat or
 * break the name rules, refuses to boot (exit 2, the reason on stderr).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "tests/integration/cluster.h"
#include "tools/client/vsc.h"

static struct vs_cluster cl;
static struct vs_node intruder;

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
    ck_assert_int_eq(vs_cluster_init(&cl, 3), 0);
    int rc = vs_cluster_start(&cl, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "cluster start: %d", rc);
    ck_assert_int_eq(vs_node_init(&intruder), 0);
}

static void
teardown(void)
{
    vs_node_cleanup(&intruder);
    vs_cluster_cleanup(&cl);
}

static void
create_ok(struct vsc *c, const char *name)
{
    struct vsc_stream s;
    int rc = vsc_stream_create(c, name, &s);
    ck_assert_msg(rc == 0, "create %s: %d %s", name, rc, vsc_last_error(c));
    vsc_stream_fini(&s);
}

static int
has_stream(struct vsc *c, const char *name)
{
    struct vsc_stream s;
    int found = 0;
    struct vsc_id id = vsc_id_name(name);
    if (vsc_stream_get(c, &id, &s, &found) != 0)
        return -1;
    if (found)
        vsc_stream_fini(&s);
    return found;
}

/* Replica 2's arguments with one thing changed: `name` (cluster name,
 * NULL = the cluster's), `four` (a replica count of 4: a fourth address
 * nobody serves), `secret` (NULL = the cluster's), `names` (replica
 * names, NULL = the cluster's defaults). */
static void
intruder_args(const char **argv, size_t max, char *addrs, size_t alen,
              const char *name, int four, const char *secret, const char *names)
{
    size_t k = 0;
    snprintf(addrs, alen, "%s,%s,%s%s%s", cl.replica[0], cl.replica[1],
             cl.replica[2], four ? "," : "", four ? "127.0.0.1:9" : "");
    argv[k++] = "--replica-id";
    argv[k++] = "2";
    argv[k++] = "--replica-addrs";
    argv[k++] = addrs;
    argv[k++] = "--cluster-secret-file";
    argv[k++] = secret != NULL ? secret : cl.secret_file;
    argv[k++] = "--client-addr";
    argv[k++] = cl.client[2];
    argv[k++] = "--with-default-root-credentials";
    if (name != NULL) {
        argv[k++] = "--cluster-name";
        argv[k++] = name;
    }
    if (names != NULL) {
        argv[k++] = "--replica-names";
        argv[k++] = names;
    }
    ck_assert_uint_lt(k, max);
    argv[k] = NULL;
}

/* Formats the intruder's (fresh) data dir and starts it. */
static void
intruder_start(const char *name, int four, const char *secret,
               const char *names)
{
    const char *argv[24];
    char addrs[256];
    /* a fresh data dir for every attempt */
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", intruder.data_dir);
    ck_assert_int_eq(system(cmd), 0);
    argv[0] = "format";
    intruder_args(argv + 1, 23, addrs, sizeof(addrs), name, four, secret,
                  names);
    ck_assert_int_eq(vs_node_spawn(&intruder, argv), 0);
    int st = vs_node_wait_exit(&intruder, 20000);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "format: %d", st);
    intruder_args(argv, 24, addrs, sizeof(addrs), name, four, secret, names);
    int rc = vs_node_start(&intruder, argv, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "intruder start: %d", rc);
}

/* The intruder is refused by replicas 0 and 1 for `reason` (their logs;
 * each peer logs a refusal once a minute, so every case runs on a cluster
 * of its own), none of its links ever comes up, it never learns the
 * cluster's genesis (so no login works on it) nor the stream `probe`
 * committed while it runs, and the cluster keeps committing. */
static void
expect_refused(struct vsc *c0, const char *reason, const char *probe)
{
    char line[160];
    snprintf(line, sizeof(line), "replica link with replica 2 refused: %s",
             reason);
    ck_assert_msg(vs_wait_file_contains(cl.node[0].log_file, line, 15000) == 0,
                  "replica 0 did not log '%s'", line);
    ck_assert_msg(vs_wait_file_contains(cl.node[1].log_file, line, 15000) == 0,
                  "replica 1 did not log '%s'", line);
    create_ok(c0, probe); /* 0 and 1 keep committing */
    uint64_t end = now_ms() + 3000;
    while (now_ms() < end) {
        struct vsc *ci = vs_cluster_connect(&cl, 2, 1500);
        if (ci != NULL) {
            ck_assert_int_ne(vsc_login(ci, "iggy", "iggy", NULL), 0);
            vsc_destroy(ci);
        }
        struct vs_replica_status st;
        ck_assert_int_eq(vs_replica_status(c0, &st), 0);
        ck_assert_uint_ne(st.nodes[2].link, 3); /* never up */
        usleep(300 * 1000);
    }
    ck_assert(!vs_file_contains(intruder.log_file, "link to replica 0 up"));
    ck_assert(!vs_file_contains(intruder.log_file, "link to replica 1 up"));
    ck_assert_int_eq(vs_node_stop(&intruder, 10000), 0);
}

/* Starts the intruder with one wrong setting, checks the refusal, and
 * then (rejoin) lets the real replica 2 come back and catch up. */
static void
run_case(const char *name, int four, const char *secret, const char *names,
         const char *reason, int rejoin)
{
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    create_ok(c0, "before");
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    intruder_start(name, four, secret, names);
    expect_refused(c0, reason, "probe");
    if (rejoin) {
        ck_assert_int_eq(vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS), 0);
        uint64_t end = now_ms() + 20000;
        struct vsc *c2 = NULL;
        int ok = 0;
        while (!ok && now_ms() < end) {
            if (c2 == NULL)
                c2 = vs_cluster_login(&cl, 2, 3000);
            struct vs_replica_status st;
            ok = c2 != NULL && vs_replica_status(c2, &st) == 0 &&
                 st.status == 0 && has_stream(c2, "probe") == 1;
            if (!ok)
                usleep(100 * 1000);
        }
        ck_assert_msg(ok, "replica 2 did not catch up");
        vsc_destroy(c2);
    }
    vsc_destroy(c0);
}

START_TEST(test_wrong_name_refused)
{
    run_case("another-cluster", 0, NULL, NULL, "another cluster", 1);
}
END_TEST

START_TEST(test_wrong_count_refused)
{
    run_case(NULL, 1, NULL, NULL, "different replica count", 0);
}
END_TEST

/* Occurrences of `what` in file path. */
static unsigned
count_in_file(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    unsigned n = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strstr(line, what) != NULL)
            n++;
    fclose(f);
    return n;
}

/* Another secret: bad MAC, logged once a minute however often the
 * peers redial. Then, within that minute, an intruder with the right
 * secret but other replica names: refused for that (both sides compare
 * the names' digest), and the new reason is logged at once. */
START_TEST(test_wrong_secret_refused)
{
    char bad[320];
    snprintf(bad, sizeof(bad), "%.200s/other-secret", cl.dir);
    uint8_t key[32];
    randombytes_buf(key, sizeof(key));
    int fd = open(bad, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, key, sizeof(key)), 32);
    close(fd);
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    create_ok(c0, "before");
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    intruder_start(NULL, 0, bad, NULL);
    expect_refused(c0, "bad MAC", "probe");
    const char *mac_line = "replica link with replica 2 refused: bad MAC";
    ck_assert_uint_eq(count_in_file(cl.node[0].log_file, mac_line), 1);
    ck_assert_uint_eq(count_in_file(cl.node[1].log_file, mac_line), 1);
    intruder_start(NULL, 0, NULL, "x0,x1,x2");
    expect_refused(c0, "different replica names", "probe2");
    ck_assert_uint_eq(count_in_file(cl.node[0].log_file, mac_line), 1);
    ck_assert(vs_file_contains(intruder.log_file, "different replica names"));
    vsc_destroy(c0);
    unlink(bad);
}
END_TEST

START_TEST(test_config_names_other_cluster_refuses_boot)
{
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    const char *argv[24];
    char addrs[256];
    size_t k = 0;
    snprintf(addrs, sizeof(addrs), "%s,%s,%s", cl.replica[0], cl.replica[1],
             cl.replica[2]);
    argv[k++] = "--replica-id";
    argv[k++] = "2";
    argv[k++] = "--replica-addrs";
    argv[k++] = addrs;
    argv[k++] = "--cluster-secret-file";
    argv[k++] = cl.secret_file;
    argv[k++] = "--client-addr";
    argv[k++] = cl.client[2];
    argv[k++] = "--data-dir";
    argv[k++] = cl.node[2].data_dir;
    argv[k++] = "--cluster-name";
    argv[k++] = "another-cluster";
    argv[k] = NULL;
    ck_assert_int_eq(vs_node_spawn(&intruder, argv), 0);
    int st = vs_node_wait_exit(&intruder, 20000);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 2,
                  "boot with another cluster name: status %d", st);
    ck_assert(vs_file_contains(intruder.stderr_file, "cluster"));

    /* names that are not unique, or not valid, refuse the boot too */
    const char *bad[][2] = {{"a,b,a", "unique"}, {"a,b c,d", "not allowed"}};
    for (size_t i = 0; i < 2; i++) {
        argv[k - 2] = "--replica-names";
        argv[k - 1] = bad[i][0];
        ck_assert_int_eq(vs_node_spawn(&intruder, argv), 0);
        st = vs_node_wait_exit(&intruder, 20000);
        ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 2,
                      "boot with replica names %s: status %d", bad[i][0], st);
        ck_assert_msg(vs_file_contains(intruder.stderr_file, bad[i][1]),
                      "no '%s' in %s", bad[i][1], intruder.stderr_file);
    }
}
END_TEST

static Suite *
admit_suite(void)
{
    Suite *s = suite_create("cluster_admit");
    TCase *t = tcase_create("admit");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 180);
    tcase_add_test(t, test_wrong_name_refused);
    tcase_add_test(t, test_wrong_count_refused);
    tcase_add_test(t, test_wrong_secret_refused);
    tcase_add_test(t, test_config_names_other_cluster_refuses_boot);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(admit_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
