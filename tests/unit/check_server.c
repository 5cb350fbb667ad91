/*
 * tests/unit/check_server.c - the supervisor's pre-fork pieces: the
 * data-dir lock, the recorded shard count, listeners and address lists.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/datadir.h"
#include "server/listen.h"

static char dir[256];

static void
mk_tmp(void)
{
    snprintf(dir, sizeof(dir), "/tmp/vs_server_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
rm_tmp(void)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void
write_file(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(test_lock)
{
    mk_tmp();
    char data[300], err[512];
    snprintf(data, sizeof(data), "%s/data", dir);
    int fd = sup_datadir_lock(data, err, sizeof(err));
    ck_assert_int_ge(fd, 0);
    struct stat st;
    ck_assert_int_eq(stat(data, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    /* a second lock (another open file description) is refused */
    ck_assert_int_eq(sup_datadir_lock(data, err, sizeof(err)), -EWOULDBLOCK);
    char want[400];
    snprintf(want, sizeof(want), "data dir %s is locked by vstreamd pid %d",
             data, (int)getpid());
    ck_assert_str_eq(err, want);
    close(fd);
    fd = sup_datadir_lock(data, err, sizeof(err));
    ck_assert_int_ge(fd, 0);
    close(fd);
    /* unusable parent */
    ck_assert_int_lt(sup_datadir_lock("/proc/nope/x", err, sizeof(err)), 0);
    ck_assert_ptr_nonnull(strstr(err, "cannot create data dir"));
    rm_tmp();
}
END_TEST

START_TEST(test_shards)
{
    mk_tmp();
    char err[512];
    uint32_t k = 0;
    /* first boot records the requested count */
    ck_assert_int_eq(sup_shards_resolve(dir, 3, 1, &k, err, sizeof(err)), 0);
    ck_assert_uint_eq(k, 3);
    char p[512], buf[16] = {0};
    snprintf(p, sizeof(p), "%s/shards", dir);
    int fd = open(p, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(read(fd, buf, sizeof(buf)), 2);
    close(fd);
    ck_assert_str_eq(buf, "3\n");
    /* later boots use it; the same explicit value is fine */
    ck_assert_int_eq(sup_shards_resolve(dir, 0, 0, &k, err, sizeof(err)), 0);
    ck_assert_uint_eq(k, 3);
    ck_assert_int_eq(sup_shards_resolve(dir, 3, 1, &k, err, sizeof(err)), 0);
    /* an explicit different count is refused with a reason */
    ck_assert_int_eq(sup_shards_resolve(dir, 5, 1, &k, err, sizeof(err)),
                     -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "--shards 5 differs from the 3"));
    /* damaged files */
    const char *bad[] = {"", "0\n", "x\n", "3", "300\n", "3\n4\n", "-1\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_file("shards", bad[i]);
        ck_assert_int_eq(sup_shards_resolve(dir, 0, 0, &k, err, sizeof(err)),
                         -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "damaged"));
    }
    unlink(p);
    /* default: one per online core */
    ck_assert_int_eq(sup_shards_resolve(dir, 0, 0, &k, err, sizeof(err)), 0);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    ck_assert_uint_eq(k, cpus < 1 ? 1 : (uint32_t)cpus);
    rm_tmp();
}
END_TEST

START_TEST(test_listen)
{
    char bound[256], err[512];
    int fd = sup_listen("127.0.0.1:0", bound, sizeof(bound), err, sizeof(err));
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(strncmp(bound, "127.0.0.1:", 10), 0);
    ck_assert_int_gt(atoi(bound + 10), 0);
    ck_assert_int_ne(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    /* the same port again is in use */
    ck_assert_int_lt(sup_listen(bound, bound + 128, 128, err, sizeof(err)), 0);
    ck_assert_ptr_nonnull(strstr(err, "cannot listen"));
    close(fd);
    const char *bad[] = {"nocolon", ":80",     "127.0.0.1:",
                         "[::1",    "[::1]80", "no.such.host.invalid:1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_int_lt(
            sup_listen(bad[i], bound, sizeof(bound), err, sizeof(err)), 0);
}
END_TEST

START_TEST(test_addr_list)
{
    char out[64];
    ck_assert_uint_eq(sup_addr_list_count(""), 0);
    ck_assert_uint_eq(sup_addr_list_count("a:1"), 1);
    ck_assert_uint_eq(sup_addr_list_count("a:1, b:2 ,c:3"), 3);
    ck_assert_int_eq(sup_addr_list_get("a:1, b:2 ,c:3", 1, out, sizeof(out)),
                     0);
    ck_assert_str_eq(out, "b:2");
    ck_assert_int_eq(sup_addr_list_get("a:1, b:2 ,c:3", 2, out, sizeof(out)),
                     0);
    ck_assert_str_eq(out, "c:3");
    ck_assert_int_eq(sup_addr_list_get("a:1", 1, out, sizeof(out)), -ENOENT);
    ck_assert_int_eq(sup_addr_list_get("", 0, out, sizeof(out)), -ENOENT);
    ck_assert_int_eq(sup_addr_list_get("abcdefgh:1", 0, out, 4), -ENAMETOOLONG);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("server");
    TCase *tc = tcase_create("server");
    tcase_add_test(tc, test_lock);
    tcase_add_test(tc, test_shards);
    tcase_add_test(tc, test_listen);
    tcase_add_test(tc, test_addr_list);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
