/*
 * tests/integration/check_e2e_cli.c - the `vstream` CLI against a real
 * vstreamd: help and usage errors, full CRUD through the CLI (tables and
 * --json), global options before or after the subcommand, password from
 * --password, --password-stdin and VSTREAM_PASSWORD, and one-line errors
 * "vstream: <Name> (<code>): ..." with exit status 2.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/e2e.h"

static struct vs_node node;
static char out[65536], err[8192];

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

/* Runs the CLI with VSTREAM_PASSWORD=iggy. */
#define CLI(want, ...)                                                         \
    do {                                                                       \
        const char *a_[] = {__VA_ARGS__, NULL};                                \
        int st_ = e2e_cli(&node, "iggy", NULL, out, sizeof out, err,           \
                          sizeof err, a_);                                     \
        ck_assert_msg(st_ == (want), "vstream %s: exit %d want %d\n%s%s",      \
                      a_[0], st_, (want), out, err);                           \
    } while (0)

static int
count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

START_TEST(test_help_and_usage)
{
    const char *const nothing[] = {NULL};
    int st =
        e2e_cli(&node, NULL, NULL, out, sizeof out, err, sizeof err, nothing);
    ck_assert_int_eq(st, 1);
    ck_assert_ptr_nonnull(strstr(err, "usage: vstream"));
    CLI(0, "--help");
    ck_assert_ptr_nonnull(strstr(out, "stream  create|list"));
    CLI(0, "stream", "--help");
    ck_assert_ptr_nonnull(strstr(out, "vstream stream create NAME"));
    CLI(0, "topic", "-h");
    ck_assert_ptr_nonnull(strstr(out, "--partitions N"));
    CLI(0, "partition", "--help");
    CLI(0, "user", "--help");
    ck_assert_ptr_nonnull(strstr(out, "--stream-perm"));
    CLI(0, "pat", "--help");
    CLI(0, "ping", "--help");
    CLI(1, "frobnicate");
    ck_assert_ptr_nonnull(strstr(err, "unknown command"));
    CLI(1, "stream", "create");
    ck_assert_ptr_nonnull(strstr(err, "usage: vstream stream"));
    CLI(1, "stream", "explode", "x");
    CLI(1, "--bogus-option", "x", "ping");
    CLI(1, "topic", "create", "s", "t", "--partitions", "many");
    CLI(1, "partition", "create", "s", "t", "x");
}
END_TEST

START_TEST(test_ping_and_errors)
{
    const char *a_wrong[] = {"--user", "iggy", "--password",
                             "nope",   "me",   NULL};
    const char *a_stdin[] = {"me", "--password-stdin", "--json", NULL};
    int st;
    CLI(0, "ping");
    ck_assert_str_eq(out, "pong\n");
    CLI(0, "ping", "--json");
    ck_assert_str_eq(out, "{\"ping\":\"pong\"}\n");

    st = e2e_cli(&node, NULL, NULL, out, sizeof out, err, sizeof err, a_wrong);
    ck_assert_int_eq(st, 2);
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(count_lines(err), 1);
    ck_assert_msg(strncmp(err, "vstream: InvalidCredentials (42): ", 34) == 0,
                  "%s", err);

    st = e2e_cli(&node, NULL, "iggy\n", out, sizeof out, err, sizeof err,
                 a_stdin);
    ck_assert_msg(st == 0, "%s", err);
    ck_assert_ptr_nonnull(strstr(out, "\"user_id\":0"));
    ck_assert_int_eq(count_lines(out), 1);

    /* Server refusals: one line on stderr, exit 2. */
    CLI(0, "stream", "create", "dup");
    CLI(2, "stream", "create", "dup");
    ck_assert_int_eq(count_lines(err), 1);
    ck_assert_msg(
        strncmp(err, "vstream: StreamNameAlreadyExists (1012): ", 41) == 0,
        "%s", err);
    CLI(2, "stream", "get", "missing");
    ck_assert_ptr_nonnull(strstr(err, "(1009)"));
    CLI(2, "topic", "create", "dup", "t", "--option", "bogus=1");
    ck_assert_ptr_nonnull(strstr(err, "UnsupportedOptionKey (4041)"));
    /* Unreachable server: one line, exit 2. */
    CLI(2, "--addr", "127.0.0.1:1", "ping");
    ck_assert_int_eq(count_lines(err), 1);
    ck_assert_ptr_nonnull(strstr(err, "vstream: "));
}
END_TEST

START_TEST(test_crud)
{
    /* Streams; global options after the subcommand and before it. */
    CLI(0, "stream", "create", "orders", "--json");
    ck_assert_ptr_nonnull(strstr(out, "\"id\":0"));
    ck_assert_ptr_nonnull(strstr(out, "\"name\":\"orders\""));
    CLI(0, "--json", "stream", "create", "events");
    ck_assert_ptr_nonnull(strstr(out, "\"id\":1"));
    CLI(0, "stream", "list");
    ck_assert_int_eq(count_lines(out), 3); /* header + 2 */
    ck_assert_ptr_nonnull(strstr(out, "orders"));
    CLI(0, "stream", "list", "--json");
    ck_assert_int_eq(count_lines(out), 1);
    ck_assert_ptr_nonnull(strstr(out, "{\"streams\":[{\"id\":0"));
    CLI(0, "stream", "get", "1");
    ck_assert_ptr_nonnull(strstr(out, "events"));
    CLI(0, "stream", "update", "events", "events2");
    CLI(0, "stream", "get", "events2", "--json");
    ck_assert_ptr_nonnull(strstr(out, "\"id\":1"));

    /* Topics with partitions and options. */
    CLI(0, "topic", "create", "orders", "o1", "--partitions", "3",
        "--message-expiry", "5000000", "--compression", "gzip",
        "--max-topic-size", "unlimited", "--json");
    ck_assert_ptr_nonnull(strstr(out, "\"partitions_count\":3"));
    ck_assert_ptr_nonnull(strstr(out, "\"message_expiry\":5000000"));
    ck_assert_ptr_nonnull(strstr(out, "\"compression\":\"gzip\""));
    CLI(0, "topic", "create", "0", "o2");
    CLI(0, "topic", "list", "orders", "--json");
    ck_assert_ptr_nonnull(strstr(out, "\"name\":\"o1\""));
    ck_assert_ptr_nonnull(strstr(out, "\"name\":\"o2\""));
    CLI(0, "topic", "get", "orders", "o1");
    ck_assert_ptr_nonnull(strstr(out, "PARTITION"));
    CLI(0, "partition", "create", "orders", "o1", "2");
    CLI(0, "topic", "get", "orders", "o1", "--json");
    ck_assert_ptr_nonnull(strstr(out, "\"partitions_count\":5"));
    CLI(0, "partition", "delete", "orders", "o1", "4");
    CLI(0, "topic", "get", "orders", "o1", "--json");
    ck_assert_ptr_nonnull(strstr(out, "\"partitions_count\":1"));
    /* replica sets on one node: factor 1, the node itself leads */
    ck_assert_ptr_nonnull(strstr(out, "\"replication_factor\":1"));
    ck_assert_ptr_nonnull(strstr(out, "\"replicas\":[0],\"primary\":0"));
    CLI(0, "topic", "get", "orders", "o1");
    ck_assert_ptr_nonnull(strstr(out, "PRIMARY(VIEW 0)"));
    CLI(2, "topic", "create", "orders", "o3", "--replication-factor", "2");
    ck_assert_ptr_nonnull(strstr(err, "(2018)"));
    CLI(2, "topic", "get", "orders", "o3");
    CLI(1, "topic", "create", "orders", "o3", "--replication-factor", "x");
    CLI(0, "topic", "create", "orders", "o3", "--replication-factor", "1");
    CLI(0, "topic", "delete", "orders", "o3");
    CLI(2, "partition", "delete", "orders", "o1", "5");
    ck_assert_ptr_nonnull(strstr(err, "(2019)"));
    CLI(0, "topic", "update", "orders", "o2", "o2b");
    CLI(0, "topic", "purge", "orders", "o2b");
    CLI(0, "topic", "delete", "orders", "o2b");
    CLI(2, "topic", "get", "orders", "o2b");
    ck_assert_ptr_nonnull(strstr(err, "(2010)"));

    /* Users, permissions, passwords. */
    CLI(0, "user", "create", "bob", "bobpass1", "--json");
    ck_assert_ptr_nonnull(strstr(out, "\"id\":1"));
    CLI(0, "user", "create", "carol");
    ck_assert_ptr_nonnull(strstr(out, "password: "));
    CLI(0, "user", "list", "--json");
    ck_assert_ptr_nonnull(strstr(out, "\"name\":\"iggy\""));
    ck_assert_ptr_nonnull(strstr(out, "\"name\":\"carol\""));
    CLI(0, "user", "permissions", "bob", "--perm",
        "manage_streams,read_streams", "--stream-perm", "0:read_stream",
        "--topic-perm", "0:0:read_topic,poll_messages");
    CLI(0, "user", "get", "bob", "--json");
    ck_assert_ptr_nonnull(
        strstr(out, "\"global\":[\"manage_streams\",\"read_streams\"]"));
    ck_assert_ptr_nonnull(strstr(out, "\"topic_id\":0,\"permissions\":["
                                      "\"read_topic\",\"poll_messages\"]"));
    {
        const char *a[] = {"--user", "bob", "stream", "list", NULL};
        int st = e2e_cli(&node, "bobpass1", NULL, out, sizeof out, err,
                         sizeof err, a);
        ck_assert_msg(st == 0, "%s", err);
        ck_assert_ptr_nonnull(strstr(out, "orders"));
    }
    CLI(0, "user", "permissions", "bob", "--clear");
    {
        const char *a[] = {"--user", "bob", "stream", "list", NULL};
        int st = e2e_cli(&node, "bobpass1", NULL, out, sizeof out, err,
                         sizeof err, a);
        ck_assert_int_eq(st, 2);
        ck_assert_ptr_nonnull(strstr(err, "Unauthorized (41)"));
    }
    CLI(0, "user", "passwd", "bob", "bobpass1", "bobpass2");
    CLI(0, "user", "update", "bob", "--status", "inactive");
    CLI(0, "user", "get", "bob");
    ck_assert_ptr_nonnull(strstr(out, "inactive"));
    CLI(0, "user", "delete", "carol");
    CLI(2, "user", "get", "carol");

    /* Tokens. */
    CLI(0, "pat", "create", "ci", "--json");
    ck_assert_ptr_nonnull(strstr(out, "\"token\":\""));
    CLI(0, "pat", "list");
    ck_assert_ptr_nonnull(strstr(out, "ci"));
    CLI(0, "pat", "delete", "ci");
    CLI(0, "pat", "list", "--json");
    ck_assert_str_eq(out, "{\"tokens\":[]}\n");

    /* me, stats, cluster. */
    CLI(0, "me");
    ck_assert_ptr_nonnull(strstr(out, "user_id:    0"));
    CLI(0, "stats", "--json");
    ck_assert_ptr_nonnull(strstr(out, "\"streams_count\":2"));
    CLI(0, "cluster");
    ck_assert_ptr_nonnull(strstr(out, "leader"));

    /* Purge and delete streams. */
    CLI(0, "stream", "purge", "orders");
    CLI(0, "stream", "delete", "orders");
    CLI(0, "stream", "delete", "1");
    CLI(0, "stream", "list", "--json");
    ck_assert_str_eq(out, "{\"streams\":[]}\n");
}
END_TEST

static Suite *
e2e_cli_suite(void)
{
    Suite *s = suite_create("e2e_cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_help_and_usage);
    tcase_add_test(tc, test_ping_and_errors);
    tcase_add_test(tc, test_crud);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(e2e_cli_suite());
    int failed;
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
