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
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
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

/* A "dying node": child A takes the lock (its pid is recorded) and forks
 * B, which inherits the lock fd, reports on `ready` and lives hold_ms;
 * A exits at once. Returns once A is reaped and B holds the lock. */
static void
dying_holder(const char *data, uint32_t hold_ms)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t a = fork();
    ck_assert_int_ge(a, 0);
    if (a == 0) {
        char err[512];
        int fd = sup_datadir_lock(data, err, sizeof(err));
        if (fd < 0)
            _exit(3);
        pid_t b = fork();
        if (b == 0) {
            char x = 'b';
            if (write(p[1], &x, 1) != 1)
                _exit(4);
            struct timespec ts = {.tv_sec = hold_ms / 1000,
                                  .tv_nsec = (long)(hold_ms % 1000) * 1000000};
            nanosleep(&ts, NULL);
            _exit(0);
        }
        _exit(b > 0 ? 0 : 5);
    }
    close(p[1]);
    char x = 0;
    ck_assert_int_eq(read(p[0], &x, 1), 1);
    close(p[0]);
    int st = 0;
    ck_assert_int_eq(waitpid(a, &st, 0), a);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

START_TEST(test_lock_dying_holder)
{
    mk_tmp();
    char data[300], err[512];
    snprintf(data, sizeof(data), "%s/data", dir);
    /* the recorded pid is gone, its child still holds the lock: the
     * restart waits for it instead of refusing */
    dying_holder(data, 400);
    uint64_t t0 = vs_monotonic_ns();
    int fd = sup_datadir_lock_wait(data, 10000, err, sizeof(err));
    uint64_t ms = (vs_monotonic_ns() - t0) / 1000000u;
    ck_assert_int_ge(fd, 0);
    ck_assert_uint_ge(ms, 100);
    close(fd);
    /* bounded: a dead node's process that does not go away ends the wait
     * with -ETIMEDOUT (exit 1 upstream), never -EWOULDBLOCK (exit 2) */
    dying_holder(data, 3000);
    t0 = vs_monotonic_ns();
    ck_assert_int_eq(sup_datadir_lock_wait(data, 300, err, sizeof(err)),
                     -ETIMEDOUT);
    ms = (vs_monotonic_ns() - t0) / 1000000u;
    ck_assert_uint_ge(ms, 300);
    ck_assert_uint_lt(ms, 2500);
    ck_assert_ptr_nonnull(strstr(err, "still locked 300 ms after its node"));
    rm_tmp();
}
END_TEST

START_TEST(test_lock_live_holder)
{
    mk_tmp();
    char data[300], err[512];
    snprintf(data, sizeof(data), "%s/data", dir);
    int p[2], q[2];
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(pipe(q), 0);
    pid_t a = fork();
    ck_assert_int_ge(a, 0);
    if (a == 0) {
        close(p[0]);
        close(q[1]);
        int fd = sup_datadir_lock(data, err, sizeof(err));
        char x = fd >= 0 ? 'y' : 'n';
        if (write(p[1], &x, 1) != 1)
            _exit(4);
        if (read(q[0], &x, 1) < 0) /* until the parent is done */
            _exit(5);
        _exit(0);
    }
    close(p[1]);
    close(q[0]);
    char x = 0;
    ck_assert_int_eq(read(p[0], &x, 1), 1);
    ck_assert_int_eq(x, 'y');
    ck_assert_int_eq(sup_lock_holder_live(a), 1);
    /* a live node's lock is refused at once, not waited for */
    uint64_t t0 = vs_monotonic_ns();
    ck_assert_int_eq(sup_datadir_lock_wait(data, 10000, err, sizeof(err)),
                     -EWOULDBLOCK);
    ck_assert_uint_lt((vs_monotonic_ns() - t0) / 1000000u, 2000);
    char want[400];
    snprintf(want, sizeof(want), "data dir %s is locked by vstreamd pid %d",
             data, (int)a);
    ck_assert_str_eq(err, want);
    close(q[1]);
    close(p[0]);
    int st = 0;
    ck_assert_int_eq(waitpid(a, &st, 0), a);
    /* not live: a reaped pid, a zombie, a pid of another program */
    ck_assert_int_eq(sup_lock_holder_live(a), 0);
    ck_assert_int_eq(sup_lock_holder_live(0), 0);
    pid_t z = fork();
    ck_assert_int_ge(z, 0);
    if (z == 0)
        _exit(0);
    for (int i = 0; i < 200 && sup_lock_holder_live(z); i++) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 10000000};
        nanosleep(&ts, NULL);
    }
    ck_assert_int_eq(sup_lock_holder_live(z), 0); /* a zombie until reaped */
    ck_assert_int_eq(waitpid(z, &st, 0), z);
    ck_assert_int_eq(sup_lock_holder_live(1), 0); /* init: not this program */
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
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_lock);
    tcase_add_test(tc, test_lock_dying_holder);
    tcase_add_test(tc, test_lock_live_holder);
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
