/*
 * tests/integration/check_bench_smoke.c - a smoke run of every
 * vstream-bench mode against a real two-shard node: each run completes
 * (exit 0), its --json report has non-zero requests, messages and MB/s
 * (metadata: requests/s), a merged latency histogram with samples and
 * the node's processes sampled; what it created is gone afterwards.
 * Usage errors exit 1; an unreachable node and a failed run exit 2.
 * Never a timed threshold: the figures only have to be non-zero.
 * The binary is found beside $VSTREAM_CLI (same build dir).
 */
#include "config.h"

#include <check.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/e2e.h"

static struct vs_node node;
static char out[262144], err[16384];
static char bench[4096];

static void
setup(void)
{
    const char *cli = getenv("VSTREAM_CLI");
    char dir[4096];
    ck_assert_msg(cli != NULL, "VSTREAM_CLI not set");
    snprintf(dir, sizeof dir, "%s", cli);
    snprintf(bench, sizeof bench, "%s/vstream-bench", dirname(dir));
    /* e2e_cli runs $VSTREAM_CLI: point it at the bench */
    ck_assert_int_eq(setenv("VSTREAM_CLI", bench, 1), 0);
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
    e2e_start(&node, 2, NULL);
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
}

static int
bench_run(const char *const *args)
{
    return e2e_cli(&node, "iggy", NULL, out, sizeof out, err, sizeof err, args);
}

/* The number after "key": in the report (-1 when absent). */
static double
json_num(const char *json, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(json, k);
    return p ? strtod(p + strlen(k), NULL) : -1;
}

static void
check_mode(const char *mode, int data)
{
    const char *a[] = {"--mode",
                       mode,
                       "--actors",
                       "2",
                       "--batches",
                       "6",
                       "--batch",
                       "50",
                       "--msg-size",
                       "100..300",
                       "--ready-file",
                       node.ready_file,
                       "--json",
                       "--no-progress",
                       "--prefix",
                       "smoke",
                       NULL};
    int st = bench_run(a);
    ck_assert_msg(st == 0, "%s: exit %d\n%s%s", mode, st, out, err);
    ck_assert_msg(strstr(out, "\"mode\":\"") != NULL, "%s: %s", mode, out);
    ck_assert_msg(json_num(out, "requests") > 0, "%s: %s", mode, out);
    ck_assert_msg(json_num(out, "requests_per_s") > 0, "%s: %s", mode, out);
    ck_assert_msg(json_num(out, "samples") > 0, "%s: %s", mode, out);
    ck_assert_msg(json_num(out, "p50") > 0, "%s: %s", mode, out);
    ck_assert_msg(json_num(out, "max") >= json_num(out, "p99"), "%s: %s", mode,
                  out);
    ck_assert_msg(json_num(out, "processes") >= 3, "%s: %s", mode, out);
    ck_assert_msg(json_num(out, "peak_rss_mb") > 0, "%s: %s", mode, out);
    if (data) {
        ck_assert_msg(json_num(out, "msgs") > 0, "%s: %s", mode, out);
        ck_assert_msg(json_num(out, "mb_per_s") > 0, "%s: %s", mode, out);
        ck_assert_msg(json_num(out, "msgs_per_s") > 0, "%s: %s", mode, out);
    }
}

START_TEST(test_every_mode)
{
    static const char *const data_modes[] = {"pinned-producer",
                                             "pinned-consumer",
                                             "pinned-producer-and-consumer",
                                             "balanced-producer",
                                             "balanced-consumer-group",
                                             "end-to-end"};
    for (size_t i = 0; i < sizeof data_modes / sizeof data_modes[0]; i++)
        check_mode(data_modes[i], 1);
    check_mode("metadata", 0);
    /* everything the runs created was deleted */
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    char names[8192];
    e2e_stream_names(c, names, sizeof names);
    ck_assert_msg(strstr(names, "smoke") == NULL, "left over: %s", names);
    vsc_destroy(c);
}
END_TEST

START_TEST(test_raw_and_options)
{
    /* raw baseline (no server), fsync per batch, open loop, warm-up, a
     * total volume instead of batches, the human table */
    const char *raw[] = {
        "--mode", "raw",    "--actors",      "2", "--batches", "3", "--dir",
        node.dir, "--json", "--no-progress", NULL};
    int st = bench_run(raw);
    ck_assert_msg(st == 0, "raw: exit %d\n%s%s", st, out, err);
    ck_assert(json_num(out, "mb_per_s") > 0);
    ck_assert(json_num(out, "msgs") == 6000);

    const char *pp[] = {
        "--mode",       "pp",      "--producers", "2",       "--total-bytes",
        "400000",       "--batch", "100",         "--fsync", "batch",
        "--rate",       "200",     "--warmup",    "0.2",     "--no-progress",
        "--server-pid", NULL,      NULL};
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)node.pid);
    pp[16] = pid;
    st = bench_run(pp);
    ck_assert_msg(st == 0, "pp: exit %d\n%s%s", st, out, err);
    /* 400 kB over 2 producers of 100 kB batches: 2 batches each */
    ck_assert_msg(strstr(out, "fsync per batch") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "open loop at 200") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "p99.99") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "s/GB") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "total                    4 ") != NULL, "%s",
                  out);

    /* the older --op forms still work */
    const char *send[] = {"--op", "send",    "--clients", "2",      "--ops",
                          "2",    "--batch", "10",        "--json", NULL};
    st = bench_run(send);
    ck_assert_msg(st == 0, "send: exit %d\n%s%s", st, out, err);
    ck_assert(json_num(out, "msgs") == 40);
    const char *poll[] = {"--op", "poll",    "--clients", "2",      "--ops",
                          "9",    "--batch", "10",        "--json", NULL};
    st = bench_run(poll);
    ck_assert_msg(st == 0, "poll: exit %d\n%s%s", st, out, err);
    ck_assert(json_num(out, "msgs") == 40);
    ck_assert_msg(strstr(out, "\"verify\":true") != NULL, "%s", out);
    /* the consumers skipping the checksums read the same messages */
    const char *pollnv[] = {"--op",   "poll",        "--clients", "2",
                            "--ops",  "9",           "--batch",   "10",
                            "--json", "--no-verify", NULL};
    st = bench_run(pollnv);
    ck_assert_msg(st == 0, "poll --no-verify: exit %d\n%s%s", st, out, err);
    ck_assert(json_num(out, "msgs") == 40);
    ck_assert_msg(strstr(out, "\"verify\":false") != NULL, "%s", out);
}
END_TEST

START_TEST(test_errors)
{
    const char *bad_mode[] = {"--mode", "sideways", NULL};
    ck_assert_int_eq(bench_run(bad_mode), 1);
    ck_assert_ptr_nonnull(strstr(err, "bad value for --mode"));
    const char *bad_num[] = {"--batch", "12x", NULL};
    ck_assert_int_eq(bench_run(bad_num), 1);
    const char *bad_range[] = {"--msg-size", "500..100", NULL};
    ck_assert_int_eq(bench_run(bad_range), 1);
    const char *too_big[] = {"--batch", "1000000", "--msg-size", "1000", NULL};
    ck_assert_int_eq(bench_run(too_big), 1);
    ck_assert_ptr_nonnull(strstr(err, "60 MiB"));
    const char *no_value[] = {"--addr", NULL};
    ck_assert_int_eq(bench_run(no_value), 1);
    /* nothing listens on port 1 */
    const char *unreachable[] = {"--addr", "127.0.0.1:1",   "--batches",
                                 "1",      "--no-progress", NULL};
    ck_assert_int_eq(bench_run(unreachable), 2);
    /* wrong password: the login fails, the run reports it */
    const char *denied[] = {"--password", "wrong", "--mode", "metadata",
                            "--batches",  "1",     NULL};
    ck_assert_int_eq(bench_run(denied), 2);
    /* a missing ready file is refused */
    const char *no_ready[] = {"--ready-file", "/nonexistent/ready", NULL};
    ck_assert_int_eq(bench_run(no_ready), 2);
}
END_TEST

static Suite *
bench_suite(void)
{
    Suite *s = suite_create("bench_smoke");
    TCase *tc = tcase_create("modes");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_every_mode);
    tcase_add_test(tc, test_raw_and_options);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(bench_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
