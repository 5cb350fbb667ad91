/*
 * tests/unit/check_config.c - configuration precedence and error paths.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"

static char tmpdir[] = "/tmp/vs_config_XXXXXX";

static void
setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
teardown(void)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    strcpy(tmpdir, "/tmp/vs_config_XXXXXX");
}

static const char *
write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

START_TEST(test_defaults)
{
    struct vs_config c;
    char err[512];
    vs_config_init(&c);
    ck_assert_int_eq(vs_config_finalize(&c, err, sizeof(err)), 0);
    ck_assert_str_eq(c.client_addr, "127.0.0.1:8090");
    ck_assert_str_eq(c.cluster_name, "vstream");
    ck_assert_uint_eq(c.clients_table_max, 8192);
    ck_assert_uint_eq(c.wal_slots, 1024);
    ck_assert_uint_eq(c.checkpoint_margin, 64);
    ck_assert_uint_eq(c.max_streams, 10000);
    ck_assert_uint_eq(c.max_partitions, 1000000);
    ck_assert_uint_eq(c.max_metadata_body, 1u << 20);
    ck_assert_uint_eq(c.max_message_body, (64u << 20) - 256);
    ck_assert_uint_eq(c.argon2_memlimit, 64u << 20);
    ck_assert_int_eq(c.log_level, VS_LOG_INFO);
    ck_assert_int_eq(c.profile, VS_PROFILE_PRODUCTION);
    ck_assert(!vs_config_is_explicit(&c, "data_dir"));
}
END_TEST

/* file < environment < flags, each level overriding the one before. */
START_TEST(test_precedence)
{
    const char *path = write_file("a.conf", "[node]\n"
                                            "node_name = from-file\n"
                                            "cluster_name = file-cluster\n"
                                            "replica_id = 1\n"
                                            "[log]\n"
                                            "log_level = debug\n");
    char cfgflag[600];
    snprintf(cfgflag, sizeof(cfgflag), "--config=%s", path);
    char *argv[] = {"vstreamd",          cfgflag, "--replica-id", "3",
                    "--data-dir=/tmp/x", NULL};
    char *envp[] = {"VSTREAMD_REPLICA_ID=2", "VSTREAMD_CLUSTER_NAME=env-c",
                    "PATH=/bin", "VSTREAMDX=ignored", NULL};
    struct vs_config c;
    char err[512] = "";
    int pos = -1;
    ck_assert_msg(vs_config_load(&c, 5, argv, envp, &pos, err, sizeof(err)) ==
                      0,
                  "%s", err);
    ck_assert_int_eq(pos, 5);
    ck_assert_str_eq(c.node_name, "from-file"); /* file only */
    ck_assert_str_eq(c.cluster_name, "env-c");  /* env over file */
    ck_assert_uint_eq(c.replica_id, 3);         /* flag over env */
    ck_assert_str_eq(c.data_dir, "/tmp/x");
    ck_assert_int_eq(c.log_level, VS_LOG_DEBUG);
    ck_assert_str_eq(c.config_file, path);
    ck_assert(vs_config_is_explicit(&c, "node_name"));
}
END_TEST

START_TEST(test_config_from_env_path)
{
    const char *path = write_file("b.conf", "node_name = via-env-path\n");
    char envc[600];
    snprintf(envc, sizeof(envc), "VSTREAMD_CONFIG=%s", path);
    char *envp[] = {envc, NULL};
    char *argv[] = {"vstreamd", "format", NULL};
    struct vs_config c;
    char err[512] = "";
    int pos = 0;
    ck_assert_msg(vs_config_load(&c, 2, argv, envp, &pos, err, sizeof(err)) ==
                      0,
                  "%s", err);
    ck_assert_str_eq(c.node_name, "via-env-path");
    ck_assert_int_eq(pos, 1); /* "format" is the first positional */
}
END_TEST

START_TEST(test_unknown_key_in_file_names_line)
{
    const char *path = write_file("c.conf", "node_name = ok\n"
                                            "# comment\n"
                                            "bogus_key = 1\n");
    struct vs_config c;
    char err[512] = "";
    vs_config_init(&c);
    ck_assert_int_eq(vs_config_load_file(&c, path, err, sizeof(err)), -EINVAL);
    char want[600];
    snprintf(want, sizeof(want), "%s:3:", path);
    ck_assert_msg(strstr(err, want) != NULL, "%s", err);
    ck_assert_msg(strstr(err, "unknown key 'bogus_key'") != NULL, "%s", err);
}
END_TEST

START_TEST(test_bad_value_in_file_names_line)
{
    const char *path = write_file("d.conf", "\n\nwal_slots = many\n");
    struct vs_config c;
    char err[512] = "";
    vs_config_init(&c);
    ck_assert_int_eq(vs_config_load_file(&c, path, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, ":3:") && strstr(err, "wal_slots"), "%s", err);
}
END_TEST

START_TEST(test_syntax_error_in_file)
{
    const char *path = write_file("e.conf", "node_name = a\nthis is junk\n");
    struct vs_config c;
    char err[512] = "";
    vs_config_init(&c);
    ck_assert_int_eq(vs_config_load_file(&c, path, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, ":2:") != NULL, "%s", err);
}
END_TEST

/* A line longer than the parser's line buffer is refused naming its line;
 * it is never cut short with its tail read as another line (a fuzzed file
 * set data_dir from the first part of a long line and a second key from
 * its tail). A line that just fits, with or without a newline, loads. */
START_TEST(test_long_line_refused)
{
    char text[1024];
    char value[400];
    memset(value, 'a', 300);
    value[300] = '\0';
    snprintf(text, sizeof(text),
             "node_name = n\ndata_dir = /%s log_level = debug\n", value);
    const char *path = write_file("long.conf", text);
    struct vs_config c;
    char err[512] = "";
    vs_config_init(&c);
    ck_assert_int_eq(vs_config_load_file(&c, path, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, ":2:") && strstr(err, "line too long"), "%s",
                  err);

    /* "data_dir = /" + 187 bytes = 199 bytes: the longest line that fits */
    memset(value, 'b', 187);
    value[187] = '\0';
    snprintf(text, sizeof(text), "data_dir = /%s\nnode_name = n2\n", value);
    path = write_file("fits.conf", text);
    vs_config_init(&c);
    ck_assert_int_eq(vs_config_load_file(&c, path, err, sizeof(err)), 0);
    ck_assert_uint_eq(strlen(c.data_dir), 188);
    ck_assert_str_eq(c.node_name, "n2");
    snprintf(text, sizeof(text), "node_name = n3\ndata_dir = /%s", value);
    path = write_file("fits_eof.conf", text);
    vs_config_init(&c);
    ck_assert_int_eq(vs_config_load_file(&c, path, err, sizeof(err)), 0);
    ck_assert_uint_eq(strlen(c.data_dir), 188);
    ck_assert_str_eq(c.node_name, "n3");
}
END_TEST

START_TEST(test_missing_file)
{
    struct vs_config c;
    char err[512] = "";
    vs_config_init(&c);
    ck_assert_int_eq(
        vs_config_load_file(&c, "/nonexistent/vs.conf", err, sizeof(err)),
        -ENOENT);
    ck_assert_msg(strstr(err, "/nonexistent/vs.conf") != NULL, "%s", err);
}
END_TEST

START_TEST(test_unknown_env_refused)
{
    char *envp[] = {"VSTREAMD_NOT_A_KEY=1", NULL};
    struct vs_config c;
    char err[512] = "";
    vs_config_init(&c);
    ck_assert_int_eq(vs_config_load_env(&c, envp, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "VSTREAMD_NOT_A_KEY") != NULL, "%s", err);
    char *envp2[] = {"VSTREAMD_=1", NULL};
    ck_assert_int_eq(vs_config_load_env(&c, envp2, err, sizeof(err)), -EINVAL);
    char *envp3[] = {"VSTREAMD_SHARDS=lots", NULL};
    ck_assert_int_eq(vs_config_load_env(&c, envp3, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "VSTREAMD_SHARDS") != NULL, "%s", err);
}
END_TEST

START_TEST(test_flags)
{
    struct vs_config c;
    char err[512] = "";
    int pos = 0;
    vs_config_init(&c);
    char *a1[] = {"--nope", "1"};
    ck_assert_int_eq(vs_config_load_args(&c, 2, a1, &pos, err, sizeof(err)),
                     -EINVAL);
    ck_assert_msg(strstr(err, "--nope") != NULL, "%s", err);
    char *a2[] = {"--shards"};
    ck_assert_int_eq(vs_config_load_args(&c, 1, a2, &pos, err, sizeof(err)),
                     -EINVAL);
    ck_assert_msg(strstr(err, "needs a value") != NULL, "%s", err);
    /* a bare boolean flag turns it on; = and separate values both work */
    char *a3[] = {"--cut-damaged-tail", "--shards=4", "--client-addr",
                  "127.0.0.1:0",        "--",         "--not-a-flag"};
    ck_assert_int_eq(vs_config_load_args(&c, 6, a3, &pos, err, sizeof(err)), 0);
    ck_assert_uint_eq(c.cut_damaged_tail, 1);
    ck_assert_uint_eq(c.shards, 4);
    ck_assert_str_eq(c.client_addr, "127.0.0.1:0");
    ck_assert_int_eq(pos, 5);
    /* a boolean word after a bare boolean flag is its value */
    char *a5[] = {"--cut-damaged-tail", "false", "--shards", "2", "format"};
    ck_assert_int_eq(vs_config_load_args(&c, 5, a5, &pos, err, sizeof(err)), 0);
    ck_assert_uint_eq(c.cut_damaged_tail, 0);
    ck_assert_uint_eq(c.shards, 2);
    ck_assert_int_eq(pos, 4);
    char *a6[] = {"--cut-damaged-tail", "On", "recover"};
    ck_assert_int_eq(vs_config_load_args(&c, 3, a6, &pos, err, sizeof(err)), 0);
    ck_assert_uint_eq(c.cut_damaged_tail, 1);
    ck_assert_int_eq(pos, 2);
    char *a4[] = {"--cut-damaged-tail=maybe"};
    ck_assert_int_eq(vs_config_load_args(&c, 1, a4, &pos, err, sizeof(err)),
                     -EINVAL);
}
END_TEST

START_TEST(test_value_ranges_and_sizes)
{
    struct vs_config c;
    char err[512] = "";
    vs_config_init(&c);
    ck_assert_int_eq(
        vs_config_set(&c, "clients_table_max", "1", "t", err, sizeof(err)),
        -EINVAL);
    ck_assert_msg(strstr(err, "out of range") != NULL, "%s", err);
    ck_assert_int_eq(
        vs_config_set(&c, "clients_table_max", "65537", "t", err, sizeof(err)),
        -EINVAL);
    ck_assert_int_eq(
        vs_config_set(&c, "clients_table_max", "65536", "t", err, sizeof(err)),
        0);
    ck_assert_int_eq(
        vs_config_set(&c, "wal_slots", "-5", "t", err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(
        vs_config_set(&c, "wal_slots", "12abc", "t", err, sizeof(err)),
        -EINVAL);
    ck_assert_int_eq(vs_config_set(&c, "wal_slots", "99999999999999999999", "t",
                                   err, sizeof(err)),
                     -EINVAL);
    ck_assert_int_eq(
        vs_config_set(&c, "segment_size", "16M", "t", err, sizeof(err)), 0);
    ck_assert_uint_eq(c.segment_size, 16u << 20);
    ck_assert_int_eq(
        vs_config_set(&c, "segment_size", "2MiB", "t", err, sizeof(err)), 0);
    ck_assert_uint_eq(c.segment_size, 2u << 20);
    ck_assert_int_eq(
        vs_config_set(&c, "segment_size", "5Q", "t", err, sizeof(err)),
        -EINVAL);
    ck_assert_int_eq(
        vs_config_set(&c, "log_level", "loud", "t", err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(
        vs_config_set(&c, "profile", "fast", "t", err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(
        vs_config_set(&c, "fsync_policy", "never", "t", err, sizeof(err)),
        -EINVAL);
    ck_assert_int_eq(
        vs_config_set(&c, "client_addr", "", "t", err, sizeof(err)), -EINVAL);
    char longv[VS_CONFIG_STR_MAX + 10];
    memset(longv, 'a', sizeof(longv) - 1);
    longv[sizeof(longv) - 1] = '\0';
    ck_assert_int_eq(
        vs_config_set(&c, "node_name", longv, "t", err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "too long") != NULL, "%s", err);
}
END_TEST

/* The test profile changes defaults only; explicit keys keep their value,
 * whatever the order in which the profile and the key were set. */
START_TEST(test_test_profile)
{
    struct vs_config c;
    char err[512] = "";
    vs_config_init(&c);
    ck_assert_int_eq(
        vs_config_set(&c, "max_streams", "500", "t", err, sizeof(err)), 0);
    ck_assert_int_eq(
        vs_config_set(&c, "profile", "test", "t", err, sizeof(err)), 0);
    ck_assert_int_eq(vs_config_finalize(&c, err, sizeof(err)), 0);
    ck_assert_uint_eq(c.max_streams, 500);
    ck_assert_uint_eq(c.max_topics, 256);
    ck_assert_uint_eq(c.wal_slots, 64);
    ck_assert_uint_eq(c.checkpoint_margin, 8);
    ck_assert_uint_eq(c.argon2_opslimit, 1);
    ck_assert_uint_eq(c.argon2_memlimit, 8192);
    ck_assert_uint_eq(c.clients_table_max, 64);
}
END_TEST

START_TEST(test_cross_key_rules)
{
    struct vs_config c;
    char err[512] = "";
    vs_config_init(&c);
    ck_assert_int_eq(
        vs_config_set(&c, "wal_slots", "32", "t", err, sizeof(err)), 0);
    ck_assert_int_eq(
        vs_config_set(&c, "checkpoint_margin", "32", "t", err, sizeof(err)), 0);
    ck_assert_int_eq(vs_config_finalize(&c, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "checkpoint_margin") != NULL, "%s", err);

    vs_config_init(&c);
    ck_assert_int_eq(
        vs_config_set(&c, "client_addr", "8090", "t", err, sizeof(err)), 0);
    ck_assert_int_eq(vs_config_finalize(&c, err, sizeof(err)), -EINVAL);

    vs_config_init(&c);
    ck_assert_int_eq(
        vs_config_set(&c, "root_username", "ab", "t", err, sizeof(err)), 0);
    ck_assert_int_eq(vs_config_finalize(&c, err, sizeof(err)), -EINVAL);
}
END_TEST

START_TEST(test_cluster_id_is_xxh3_128_of_name)
{
    struct vs_config a, b;
    vs_config_init(&a);
    vs_config_init(&b);
    uint64_t alo, ahi, blo, bhi;
    vs_config_cluster_id(&a, &alo, &ahi);
    vs_config_cluster_id(&b, &blo, &bhi);
    ck_assert(alo == blo && ahi == bhi);
    char err[64];
    ck_assert_int_eq(
        vs_config_set(&b, "cluster_name", "other", "t", err, sizeof(err)), 0);
    vs_config_cluster_id(&b, &blo, &bhi);
    ck_assert(!(alo == blo && ahi == bhi));
    ck_assert(alo != 0 || ahi != 0);
}
END_TEST

START_TEST(test_dump_and_help_list_every_key)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/dump", tmpdir);
    FILE *f = fopen(path, "w+");
    ck_assert_ptr_nonnull(f);
    struct vs_config c;
    vs_config_init(&c);
    char err[64];
    ck_assert_int_eq(vs_config_set(&c, "root_password", "pw-q7Zx-unique", "t",
                                   err, sizeof(err)),
                     0);
    vs_config_dump(&c, fileno(f));
    vs_config_print_help(fileno(f));
    fflush(f);
    rewind(f);
    char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    size_t count;
    const struct vs_config_key *keys = vs_config_keys(&count);
    for (size_t i = 0; i < count; i++) {
        char flag[80];
        snprintf(flag, sizeof(flag), "%s = ", keys[i].name);
        ck_assert_msg(strstr(buf, flag) != NULL, "dump lacks %s", keys[i].name);
    }
    ck_assert_msg(strstr(buf, "pw-q7Zx-unique") == NULL, "password printed");
    ck_assert(strstr(buf, "--data-dir") != NULL);
}
END_TEST

static Suite *
config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("load");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_precedence);
    tcase_add_test(tc, test_config_from_env_path);
    tcase_add_test(tc, test_unknown_key_in_file_names_line);
    tcase_add_test(tc, test_bad_value_in_file_names_line);
    tcase_add_test(tc, test_syntax_error_in_file);
    tcase_add_test(tc, test_long_line_refused);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_unknown_env_refused);
    tcase_add_test(tc, test_flags);
    tcase_add_test(tc, test_value_ranges_and_sizes);
    tcase_add_test(tc, test_test_profile);
    tcase_add_test(tc, test_cross_key_rules);
    tcase_add_test(tc, test_cluster_id_is_xxh3_128_of_name);
    tcase_add_test(tc, test_dump_and_help_list_every_key);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(config_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
