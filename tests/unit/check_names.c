/*
 * tests/unit/check_names.c - node names (common/names.h): the charset and
 * length rules at their edges, the default replica-<id> names, node_name
 * on one node and on a cluster, replica_names parsed in replica-id order,
 * duplicates, a name count that differs from replica_addrs, node_name
 * contradicting replica_names, the refusal surfacing from
 * vs_config_finalize, and a digest that tells two lists apart.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/names.h"

static char err[512];

static void
cfg(struct vs_config *c, const char *addrs, unsigned id, const char *names,
    const char *node_name)
{
    vs_config_init(c);
    char v[16];
    snprintf(v, sizeof(v), "%u", id);
    ck_assert_int_eq(
        vs_config_set(c, "replica_addrs", addrs, "t", err, sizeof(err)), 0);
    ck_assert_int_eq(vs_config_set(c, "replica_id", v, "t", err, sizeof(err)),
                     0);
    if (names != NULL)
        ck_assert_int_eq(
            vs_config_set(c, "replica_names", names, "t", err, sizeof(err)), 0);
    if (node_name != NULL)
        ck_assert_int_eq(
            vs_config_set(c, "node_name", node_name, "t", err, sizeof(err)), 0);
}

#define ADDRS3 "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"

START_TEST(test_name_rules)
{
    char n64[VS_NAME_MAX + 2];
    memset(n64, 'a', VS_NAME_MAX);
    n64[VS_NAME_MAX] = '\0';
    ck_assert_int_eq(vs_name_check(n64, err, sizeof(err)), 0);
    n64[VS_NAME_MAX] = 'a';
    n64[VS_NAME_MAX + 1] = '\0';
    ck_assert_int_eq(vs_name_check(n64, err, sizeof(err)), -EINVAL);
    ck_assert(strstr(err, "at most 64") != NULL);
    ck_assert_int_eq(vs_name_check("", err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(vs_name_check("a", err, sizeof(err)), 0);
    ck_assert_int_eq(vs_name_check("9.node_x-Y", err, sizeof(err)), 0);
    const char *bad[] = {"-a",  ".a",  "_a", "a b",  "a\"b",
                         "a,b", "a/b", "é",  "a{b}", "a=b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(vs_name_check(bad[i], err, sizeof(err)) == -EINVAL,
                      "'%s' accepted", bad[i]);
        ck_assert(strstr(err, "not allowed") != NULL);
    }
}
END_TEST

START_TEST(test_defaults)
{
    struct vs_config c;
    struct vs_names n;
    cfg(&c, "", 0, NULL, NULL);
    ck_assert_int_eq(vs_names_resolve(&c, &n, err, sizeof(err)), 0);
    ck_assert_uint_eq(n.count, 1);
    ck_assert_str_eq(n.name[0], "vstream-node");
    ck_assert_str_eq(vs_names_self(&c, &n), "vstream-node");

    cfg(&c, ADDRS3, 1, NULL, NULL);
    ck_assert_int_eq(vs_names_resolve(&c, &n, err, sizeof(err)), 0);
    ck_assert_uint_eq(n.count, 3);
    ck_assert_str_eq(n.name[0], "replica-0");
    ck_assert_str_eq(n.name[1], "replica-1");
    ck_assert_str_eq(n.name[2], "replica-2");
    ck_assert_str_eq(vs_names_self(&c, &n), "replica-1");

    /* an explicit node_name names this replica only */
    cfg(&c, ADDRS3, 2, NULL, "edge");
    ck_assert_int_eq(vs_names_resolve(&c, &n, err, sizeof(err)), 0);
    ck_assert_str_eq(n.name[2], "edge");
    ck_assert_str_eq(n.name[0], "replica-0");
    ck_assert_str_eq(vs_names_self(&c, &n), "edge");
    /* ... and may not take a peer's default name */
    cfg(&c, ADDRS3, 2, NULL, "replica-0");
    ck_assert_int_eq(vs_names_resolve(&c, &n, err, sizeof(err)), -EINVAL);
    ck_assert(strstr(err, "unique") != NULL);
}
END_TEST

START_TEST(test_replica_names)
{
    struct vs_config c;
    struct vs_names n;
    cfg(&c, ADDRS3, 0, "alpha,beta,gamma", NULL);
    ck_assert_int_eq(vs_names_resolve(&c, &n, err, sizeof(err)), 0);
    ck_assert_str_eq(n.name[0], "alpha");
    ck_assert_str_eq(n.name[1], "beta");
    ck_assert_str_eq(n.name[2], "gamma");
    ck_assert_str_eq(vs_names_self(&c, &n), "alpha");
    uint64_t d = vs_names_digest(&n);

    cfg(&c, ADDRS3, 1, "alpha,beta,gamma", "beta"); /* agrees */
    ck_assert_int_eq(vs_names_resolve(&c, &n, err, sizeof(err)), 0);
    ck_assert_uint_eq(vs_names_digest(&n), d); /* same list, any node */

    cfg(&c, ADDRS3, 1, "alpha,beta,delta", NULL);
    ck_assert_int_eq(vs_names_resolve(&c, &n, err, sizeof(err)), 0);
    ck_assert_uint_ne(vs_names_digest(&n), d);
    cfg(&c, ADDRS3, 1, "alpha,gamma,beta", NULL); /* order matters */
    ck_assert_int_eq(vs_names_resolve(&c, &n, err, sizeof(err)), 0);
    ck_assert_uint_ne(vs_names_digest(&n), d);

    struct {
        const char *names, *node_name, *why;
    } bad[] = {
        {"alpha,beta,alpha", NULL, "both named 'alpha'"},
        {"alpha,beta", NULL, "2 names for the 3 replicas"},
        {"alpha,beta,gamma,delta", NULL, "more names"},
        {"alpha,,gamma", NULL, "name of replica 1"},
        {"alpha,be ta,gamma", NULL, "not allowed"},
        {"alpha,beta,gamma", "zeta", "differs"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cfg(&c, ADDRS3, 0, bad[i].names, bad[i].node_name);
        ck_assert_msg(vs_names_resolve(&c, &n, err, sizeof(err)) == -EINVAL,
                      "%s accepted", bad[i].names);
        ck_assert_msg(strstr(err, bad[i].why) != NULL, "%s: %s", bad[i].names,
                      err);
        /* config load refuses it the same way */
        char e2[512];
        ck_assert_int_eq(vs_config_finalize(&c, e2, sizeof(e2)), -EINVAL);
        ck_assert_msg(strstr(e2, bad[i].why) != NULL, "%s", e2);
    }
}
END_TEST

START_TEST(test_one_node_name_checked)
{
    struct vs_config c;
    struct vs_names n;
    cfg(&c, "", 0, NULL, "my node");
    ck_assert_int_eq(vs_names_resolve(&c, &n, err, sizeof(err)), -EINVAL);
    char e2[512];
    ck_assert_int_eq(vs_config_finalize(&c, e2, sizeof(e2)), -EINVAL);
    ck_assert(strstr(e2, "my node") != NULL);
    cfg(&c, "", 0, NULL, "solo");
    ck_assert_int_eq(vs_config_finalize(&c, e2, sizeof(e2)), 0);
    ck_assert_int_eq(vs_names_resolve(&c, &n, err, sizeof(err)), 0);
    ck_assert_str_eq(vs_names_self(&c, &n), "solo");
}
END_TEST

static Suite *
names_suite(void)
{
    Suite *s = suite_create("names");
    TCase *t = tcase_create("names");
    tcase_add_test(t, test_name_rules);
    tcase_add_test(t, test_defaults);
    tcase_add_test(t, test_replica_names);
    tcase_add_test(t, test_one_node_name_checked);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(names_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
