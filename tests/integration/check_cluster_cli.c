/*
 * tests/integration/check_cluster_cli.c - `vstream cluster` on a real
 * 3-node cluster: every row's numbers come from that node itself with
 * one meaning (COMMIT = the node's own commit_min, at least what it had
 * applied before the CLI ran; LAG = the cluster commit minus COMMIT, 0 on
 * the leader; OP >= COMMIT), the table has the
 * documented columns, `--help` defines each of them, `--json` carries the
 * same fields per node, and a stopped node shows '-' / null with its link
 * down while the others keep their numbers. Nodes carry the names given
 * by replica_names.
 */
#include "config.h"

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/cluster.h"
#include "tests/integration/e2e.h"
#include "tools/client/vsc.h"

static struct vs_cluster cl;

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
    static const char *const extra[] = {"--replica-names", "alpha,beta,gamma",
                                        NULL};
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_cluster_init(&cl, 3), 0);
    cl.extra = extra;
    int rc = vs_cluster_start(&cl, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "cluster start: %d", rc);
}

static void
teardown(void)
{
    vs_cluster_cleanup(&cl);
}

/* The value of `"key":` in the k-th node object of a `--json cluster`
 * output (digits, or "null" -> -1). -2 when absent. */
static int64_t
json_node_u64(const char *out, unsigned k, const char *key)
{
    const char *p = strstr(out, "\"nodes\":[");
    if (p == NULL)
        return -2;
    for (unsigned i = 0; i <= k; i++) {
        p = strchr(p + 1, '{');
        if (p == NULL)
            return -2;
    }
    const char *end = strchr(p, '}');
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *v = strstr(p, pat);
    if (v == NULL || v > end)
        return -2;
    v += strlen(pat);
    if (strncmp(v, "null", 4) == 0)
        return -1;
    return (int64_t)strtoull(v, NULL, 10);
}

static int
run_cli(unsigned node, const char *const *args, char *out, size_t cap)
{
    char err[4096];
    int st =
        e2e_cli(&cl.node[node], "iggy", NULL, out, cap, err, sizeof(err), args);
    ck_assert_msg(st == 0, "vstream: %d %s", st, err);
    return st;
}

static void
create_streams(unsigned n)
{
    struct vsc *c = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c);
    for (unsigned i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "cli-%u", i);
        struct vsc_stream s;
        int rc = vsc_stream_create(c, name, &s);
        ck_assert_msg(rc == 0, "create %s: %d %s", name, rc, vsc_last_error(c));
        vsc_stream_fini(&s);
    }
    vsc_destroy(c);
}

/* Waits (bounded) until every node's own commit_min reaches the
 * primary's; returns that commit. */
static uint64_t
wait_all_committed(void)
{
    struct vsc *c[3];
    for (unsigned i = 0; i < 3; i++) {
        c[i] = vs_cluster_login(&cl, i, 20000);
        ck_assert_ptr_nonnull(c[i]);
    }
    struct vs_replica_status st;
    ck_assert_int_eq(vs_replica_status(c[0], &st), 0);
    uint64_t target = st.commit_min;
    for (unsigned i = 1; i < 3; i++) {
        uint64_t end = now_ms() + 10000;
        int ok = 0;
        while (!ok && now_ms() < end) {
            ok = vs_replica_status(c[i], &st) == 0 && st.commit_min >= target;
            if (!ok)
                usleep(50 * 1000);
        }
        ck_assert_msg(ok, "node %u stays behind commit %llu", i,
                      (unsigned long long)target);
    }
    for (unsigned i = 0; i < 3; i++)
        vsc_destroy(c[i]);
    return target;
}

START_TEST(test_columns_agree)
{
    create_streams(5);
    uint64_t target = wait_all_committed();
    static char out[16384];
    const char *cj[] = {"--json", "cluster", NULL};
    run_cli(1, cj, out, sizeof(out));
    const char *cc = strstr(out, "\"cluster_commit\":");
    ck_assert_msg(cc != NULL, "%s", out);
    int64_t cluster_commit =
        strtoll(cc + strlen("\"cluster_commit\":"), NULL, 10);
    /* the CLI's own logins are the only ops since: its handle (on node 1,
     * then on the leader it moves to, with a Logout between) and one per
     * node */
    ck_assert_msg(cluster_commit >= (int64_t)target &&
                      cluster_commit <= (int64_t)target + 8,
                  "cluster_commit %lld, target %llu: %s",
                  (long long)cluster_commit, (unsigned long long)target, out);
    for (unsigned k = 0; k < 3; k++) {
        int64_t commit = json_node_u64(out, k, "commit");
        int64_t cmax = json_node_u64(out, k, "commit_max");
        int64_t lag = json_node_u64(out, k, "lag");
        ck_assert_int_eq(json_node_u64(out, k, "replica"), k);
        /* one meaning everywhere: the node's own commit_min, never less
         * than what it had applied before the CLI ran */
        ck_assert_msg(commit >= (int64_t)target, "node %u commit: %s", k, out);
        ck_assert_int_ge(cmax, commit);
        ck_assert_int_le(cmax, cluster_commit);
        ck_assert_int_ge(json_node_u64(out, k, "op"), commit);
        ck_assert_int_eq(lag, cluster_commit - commit);
        ck_assert_int_ge(json_node_u64(out, k, "view"), 0);
        ck_assert_int_ge(json_node_u64(out, k, "log_view"), 0);
        ck_assert_int_ge(json_node_u64(out, k, "checkpoint"), 0);
        /* every node reports its state transfer */
        ck_assert_int_ge(json_node_u64(out, k, "transfer_sessions"), 0);
        ck_assert_int_ge(json_node_u64(out, k, "transfer_completed"), 0);
        ck_assert_int_ge(json_node_u64(out, k, "transfer_fetched"), 0);
    }
    /* the configured names, in replica order */
    const char *a = strstr(out, "\"name\":\"alpha\""),
               *b = strstr(out, "\"name\":\"beta\""),
               *g = strstr(out, "\"name\":\"gamma\"");
    ck_assert_msg(a != NULL && b != NULL && g != NULL && a < b && b < g, "%s",
                  out);
    /* the leader (replica 0, view 0) knows every commit first */
    ck_assert(strstr(out, "\"role\":\"leader\"") != NULL);
    ck_assert_int_eq(json_node_u64(out, 0, "lag"), 0);
    ck_assert(strstr(out, "\"vsr_status\":\"normal\"") != NULL);
    ck_assert(strstr(out, "\"vsr_status\":null") == NULL);
    ck_assert(strstr(out, "\"transfer_stage\":\"") != NULL);
    ck_assert(strstr(out, "\"transfer_stage\":null") == NULL);

    /* the table: the documented header, one row per node, LAG 0 */
    const char *ct[] = {"cluster", NULL};
    run_cli(2, ct, out, sizeof(out));
    const char *hdr = strstr(out, "NODE ");
    ck_assert_msg(hdr != NULL, "%s", out);
    const char *cols[] = {
        "CLIENT_ADDRESS", "ROLE",    "STATUS", "VSR", "VIEW",
        "LOG_VIEW",       "OP",      "COMMIT", "LAG", "CHECKPOINT",
        "LINK",           "TRANSFER"};
    for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
        ck_assert_msg(strstr(hdr, cols[i]) != NULL, "no %s: %s", cols[i], out);
    for (unsigned k = 0; k < 3; k++) {
        const char *row = strstr(hdr, cl.client[k]);
        ck_assert_msg(row != NULL, "no row for %s: %s", cl.client[k], out);
        const char *eol = strchr(row, '\n');
        const char *nm = strstr(row, " normal ");
        ck_assert_msg(nm != NULL && (eol == NULL || nm < eol), "%s", out);
        static const char *const names[] = {"alpha", "beta", "gamma"};
        const char *bol = row;
        while (bol > out && bol[-1] != '\n')
            bol--;
        ck_assert_msg(strncmp(bol, names[k], strlen(names[k])) == 0, "%s", out);
    }

    /* --help defines every column */
    const char *ch[] = {"cluster", "--help", NULL};
    run_cli(0, ch, out, sizeof(out));
    for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
        char pat[32];
        snprintf(pat, sizeof(pat), "  %s ", cols[i]);
        ck_assert_msg(strstr(out, pat) != NULL, "help lacks %s: %s", cols[i],
                      out);
    }
    ck_assert(strstr(out, "commit_min") != NULL);
    ck_assert(strstr(out, "--json") != NULL);
}
END_TEST

START_TEST(test_stopped_node_shows_nothing)
{
    create_streams(2);
    /* node 0 learns node 2's client address when its link to it first
     * comes up (a dialer's back-off may delay that past the creates) */
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    uint64_t up_end = now_ms() + 15000;
    int up = 0;
    while (!up && now_ms() < up_end) {
        struct vs_replica_status st;
        up = vs_replica_status(c0, &st) == 0 && st.nodes[1].link == 3 &&
             st.nodes[2].link == 3;
        if (!up)
            usleep(50 * 1000);
    }
    vsc_destroy(c0);
    ck_assert_msg(up, "node 0's links never all came up");
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    static char out[16384];
    const char *cj[] = {"--json", "cluster", NULL};
    uint64_t end = now_ms() + 15000;
    int ok = 0;
    while (!ok && now_ms() < end) {
        run_cli(0, cj, out, sizeof(out));
        ok = json_node_u64(out, 2, "commit") == -1 &&
             json_node_u64(out, 2, "lag") == -1 &&
             json_node_u64(out, 0, "lag") == 0 &&
             json_node_u64(out, 0, "commit") > 0 &&
             strstr(out, "\"status\":\"unreachable\"") != NULL;
        if (!ok)
            usleep(200 * 1000);
    }
    ck_assert_msg(ok, "stopped node: %s", out);
    const char *ct[] = {"cluster", NULL};
    run_cli(1, ct, out, sizeof(out));
    const char *row = strstr(strstr(out, "NODE "), cl.client[2]);
    ck_assert_msg(row != NULL, "%s", out);
    ck_assert_msg(strstr(row, " - ") != NULL, "%s", out);
}
END_TEST

static Suite *
cli_suite(void)
{
    Suite *s = suite_create("cluster_cli");
    TCase *t = tcase_create("three_nodes");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_columns_agree);
    tcase_add_test(t, test_stopped_node_shows_nothing);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(cli_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
