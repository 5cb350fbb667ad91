/*
 * tests/unit/check_storage_dirops.c - directory operations through the
 * injectable I/O layer (shard/storage/io.h: mkdir, rmdir, readdir,
 * directory rename), each failed with the fault injector like file
 * writes are: the helpers' results and classification (clean -errno, or
 * fatal for a rename, and a poisoned io), and the partition directory
 * code that uses them (shard/data/pdir.h) failing cleanly without losing
 * or half-removing a directory.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shard/data/pdir.h"
#include "shard/storage/io.h"

static char root[256];
static struct sio_fault f;

static void
setup(void)
{
    snprintf(root, sizeof(root), "/tmp/vs_dirops_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    sio_fault_init(&f, 1);
}

static void
teardown(void)
{
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

static int
is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void
path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", root, name);
}

struct seen {
    int n;
    char names[8][64];
    int stop_at;
};

static int
see(void *arg, const char *name)
{
    struct seen *s = arg;
    if (s->n < 8)
        snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
    s->n++;
    return s->stop_at != 0 && s->n == s->stop_at ? 7 : 0;
}

START_TEST(test_mkdir)
{
    char d[300], file[300];
    path_of(d, sizeof(d), "a");
    ck_assert_int_eq(sio_mkdir(&f.io, d, 0700), 0);
    ck_assert(is_dir(d));
    ck_assert_int_eq(sio_mkdir(&f.io, d, 0700), 0); /* exists: fine */
    path_of(file, sizeof(file), "file");
    FILE *fp = fopen(file, "w");
    ck_assert_ptr_nonnull(fp);
    fclose(fp);
    ck_assert_int_eq(sio_mkdir(&f.io, file, 0700), -ENOTDIR);
    /* injected: a clean error, nothing created, the io not poisoned */
    path_of(d, sizeof(d), "b");
    sio_fault_arm(&f, SIO_MKDIR, 1, EIO, -1);
    ck_assert_int_eq(sio_mkdir(&f.io, d, 0700), -EIO);
    ck_assert(!is_dir(d));
    ck_assert(!sio_is_fatal(&f.io));
    sio_fault_arm(&f, SIO_MKDIR, 1, ENOSPC, -1);
    ck_assert_int_eq(sio_mkdir(&f.io, d, 0700), -ENOSPC);
    ck_assert_int_eq(sio_mkdir(&f.io, d, 0700), 0);
    ck_assert_uint_eq(f.calls[SIO_MKDIR], 6);
    ck_assert_str_eq(sio_kind_name(SIO_MKDIR), "mkdir");
}
END_TEST

START_TEST(test_readdir)
{
    char d[300], p[400];
    path_of(d, sizeof(d), "r");
    ck_assert_int_eq(mkdir(d, 0700), 0);
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/e%d", d, i);
        ck_assert_int_eq(mkdir(p, 0700), 0);
    }
    struct seen s = {0};
    ck_assert_int_eq(sio_readdir(&f.io, d, see, &s), 0);
    ck_assert_int_eq(s.n, 3); /* "." and ".." are not reported */
    for (int i = 0; i < 3; i++)
        ck_assert(s.names[i][0] == 'e');
    /* the callback stops it */
    struct seen s2 = {.stop_at = 2};
    ck_assert_int_eq(sio_readdir(&f.io, d, see, &s2), 7);
    ck_assert_int_eq(s2.n, 2);
    /* missing, and injected */
    path_of(p, sizeof(p), "none");
    struct seen s3 = {0};
    ck_assert_int_eq(sio_readdir(&f.io, p, see, &s3), -ENOENT);
    sio_fault_arm(&f, SIO_READDIR, 1, EIO, -1);
    ck_assert_int_eq(sio_readdir(&f.io, d, see, &s3), -EIO);
    ck_assert_int_eq(s3.n, 0);
    ck_assert(!sio_is_fatal(&f.io));
    ck_assert_str_eq(sio_kind_name(SIO_READDIR), "readdir");
}
END_TEST

START_TEST(test_rmdir_and_dir_rename)
{
    char d[300], e[300];
    path_of(d, sizeof(d), "x");
    ck_assert_int_eq(mkdir(d, 0700), 0);
    sio_fault_arm(&f, SIO_RMDIR, 1, EIO, -1);
    ck_assert_int_eq(sio_rmdir(&f.io, d), -EIO);
    ck_assert(is_dir(d));
    ck_assert(!sio_is_fatal(&f.io));
    ck_assert_int_eq(sio_rmdir(&f.io, d), 0);
    ck_assert(!is_dir(d));
    ck_assert_int_eq(sio_rmdir(&f.io, d), -ENOENT);
    ck_assert_str_eq(sio_kind_name(SIO_RMDIR), "rmdir");
    /* a directory rename works, and its failure is fatal */
    ck_assert_int_eq(mkdir(d, 0700), 0);
    path_of(e, sizeof(e), "y");
    ck_assert_int_eq(sio_dir_rename(&f.io, d, e), 0);
    ck_assert(is_dir(e) && !is_dir(d));
    sio_fault_arm(&f, SIO_DIR_RENAME, 1, EIO, -1);
    ck_assert_int_eq(sio_dir_rename(&f.io, e, d), -VS_EFATAL);
    ck_assert(is_dir(e) && !is_dir(d));
    ck_assert(sio_is_fatal(&f.io));
    char msg[600];
    sio_fatal_msg(&f.io, msg, sizeof(msg));
    ck_assert_ptr_nonnull(strstr(msg, "directory rename"));
    ck_assert_ptr_nonnull(strstr(msg, d));
    /* poisoned: no directory is changed any more; reading still works */
    ck_assert_int_eq(sio_mkdir(&f.io, d, 0700), -VS_EFATAL);
    ck_assert(!is_dir(d));
    ck_assert_int_eq(sio_rmdir(&f.io, e), -VS_EFATAL);
    ck_assert_int_eq(sio_dir_rename(&f.io, e, d), -VS_EFATAL);
    ck_assert(is_dir(e));
    struct seen s = {0};
    ck_assert_int_eq(sio_readdir(&f.io, root, see, &s), 0);
    ck_assert_int_eq(s.n, 1);
    /* a crash after the fault fails every later call */
    sio_fault_reset(&f);
    f.crash_after_fault = 1;
    sio_fault_arm(&f, SIO_MKDIR, 1, EIO, -1);
    ck_assert_int_eq(sio_mkdir(&f.io, d, 0700), -EIO);
    ck_assert_int_eq(sio_readdir(&f.io, root, see, &s), -EIO);
}
END_TEST

/* A partition directory named for id under root/parts. */
static void
mk_part(const char *parts, const struct part_id *id, char *out, size_t cap)
{
    char nm[128];
    ck_assert_int_eq(pdir_name(nm, sizeof(nm), id), 0);
    snprintf(out, cap, "%s/%s", parts, nm);
    ck_assert_int_eq(mkdir(out, 0700), 0);
    char seg[600];
    snprintf(seg, sizeof(seg), "%s/segment", out);
    FILE *fp = fopen(seg, "w");
    ck_assert_ptr_nonnull(fp);
    fputs("data", fp);
    fclose(fp);
}

START_TEST(test_pdir_faults)
{
    char parts[300], a[700], b[700], del[800];
    path_of(parts, sizeof(parts), "partitions");
    struct pdir_reconcile_result r;
    struct part_id live = {1, 0, 0, 5}, stale = {2, 0, 0, 9};
    /* the partitions dir cannot be created: a clean error */
    sio_fault_arm(&f, SIO_MKDIR, 1, EIO, -1);
    ck_assert_int_eq(pdir_reconcile(&f.io, parts, &live, 1, NULL, NULL, &r),
                     -EIO);
    ck_assert(!is_dir(parts));
    ck_assert_int_eq(mkdir(parts, 0700), 0);
    mk_part(parts, &live, a, sizeof(a));
    mk_part(parts, &stale, b, sizeof(b));
    /* the directory cannot be read: nothing is removed */
    sio_fault_arm(&f, SIO_READDIR, 1, EIO, -1);
    ck_assert_int_eq(pdir_reconcile(&f.io, parts, &live, 1, NULL, NULL, &r),
                     -EIO);
    ck_assert(is_dir(a) && is_dir(b));
    /* the stale one's rename fails: fatal, nothing half-removed */
    sio_fault_arm(&f, SIO_DIR_RENAME, 1, EIO, -1);
    ck_assert_int_eq(pdir_reconcile(&f.io, parts, &live, 1, NULL, NULL, &r),
                     -VS_EFATAL);
    ck_assert(is_dir(a) && is_dir(b));
    sio_fault_reset(&f);
    /* its rmdir fails after the rename: an error, and the .deleted
     * leftover is finished by the next reconcile */
    sio_fault_arm(&f, SIO_RMDIR, 1, EIO, -1);
    ck_assert_int_eq(pdir_reconcile(&f.io, parts, &live, 1, NULL, NULL, &r),
                     -EIO);
    snprintf(del, sizeof(del), "%s.deleted", b);
    ck_assert(!is_dir(b) && is_dir(del));
    ck_assert_int_eq(pdir_reconcile(&f.io, parts, &live, 1, NULL, NULL, &r), 0);
    ck_assert_uint_eq(r.finished_deletes, 1);
    ck_assert(!is_dir(del) && is_dir(a));
    /* removing a tree whose subdirectory cannot be read fails cleanly */
    char sub[800];
    snprintf(sub, sizeof(sub), "%s/inner", a);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    sio_fault_arm(&f, SIO_READDIR, 2, EIO, -1);
    ck_assert_int_eq(pdir_rmtree(&f.io, a), -EIO);
    ck_assert(is_dir(a));
    ck_assert_int_eq(pdir_rmtree(&f.io, a), 0);
    ck_assert(!is_dir(a));
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("storage_dirops");
    TCase *tc = tcase_create("dirops");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mkdir);
    tcase_add_test(tc, test_readdir);
    tcase_add_test(tc, test_rmdir_and_dir_rename);
    tcase_add_test(tc, test_pdir_faults);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
