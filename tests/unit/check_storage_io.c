/*
 * tests/unit/check_storage_io.c - the injectable I/O layer, atomic file
 * replacement under injected faults, and the data-dir lock.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shard/storage/atomic_file.h"
#include "shard/storage/datadir.h"
#include "shard/storage/io.h"
#include "shard/storage/recovery.h"
#include "storage_testutil.h"

START_TEST(test_fault_nth_and_fatal_message)
{
    char dir[256];
    tu_mkdtemp(dir, sizeof(dir), NULL, 0);
    struct sio_fault f;
    sio_fault_init(&f, 1);
    char path[512];
    snprintf(path, sizeof(path), "%s/x", dir);
    int fd = sio_open(&f.io, path, O_CREAT | O_RDWR, 0600);
    ck_assert_int_ge(fd, 0);
    sio_fault_arm(&f, SIO_WRITE, 2, EIO, -1);
    ck_assert_int_eq(sio_write_all(&f.io, fd, "abc", 3, path), 0);
    ck_assert_int_eq(sio_write_all(&f.io, fd, "def", 3, path), -VS_EFATAL);
    ck_assert(sio_is_fatal(&f.io));
    char msg[700];
    sio_fatal_msg(&f.io, msg, sizeof(msg));
    ck_assert_ptr_nonnull(strstr(msg, "write of"));
    ck_assert_ptr_nonnull(strstr(msg, path));
    ck_assert_ptr_nonnull(strstr(msg, "errno 5"));
    /* poisoned: later mutations refused without touching the disk */
    ck_assert_int_eq(sio_write_all(&f.io, fd, "ghi", 3, path), -VS_EFATAL);
    ck_assert_int_eq(sio_fsync(&f.io, fd, path), -VS_EFATAL);
    ck_assert_uint_eq(f.calls[SIO_FSYNC], 0);
    sio_close(&f.io, fd);
    size_t len;
    uint8_t *b = tu_read_file(dir, "x", &len);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(memcmp(b, "abc", 3), 0);
    free(b);
    /* fsync failure is fatal whatever the errno (even ENOSPC) */
    sio_fault_reset(&f);
    fd = sio_open(&f.io, path, O_RDWR, 0);
    sio_fault_arm(&f, SIO_FSYNC, 1, ENOSPC, -1);
    ck_assert_int_eq(sio_fsync(&f.io, fd, path), -VS_EFATAL);
    ck_assert_int_eq(f.io.fatal.err, ENOSPC);
    ck_assert_int_eq(f.io.fatal.kind, SIO_FSYNC);
    sio_close(&f.io, fd);
    tu_rm_rf(dir);
}
END_TEST

START_TEST(test_fault_tear_then_enospc)
{
    char dir[256];
    tu_mkdtemp(dir, sizeof(dir), NULL, 0);
    struct sio_fault f;
    sio_fault_init(&f, 1);
    char path[512];
    snprintf(path, sizeof(path), "%s/x", dir);
    int fd = sio_open(&f.io, path, O_CREAT | O_RDWR, 0600);
    sio_fault_arm(&f, SIO_WRITE, 1, ENOSPC, 4);
    ck_assert_int_eq(sio_pwrite_all(&f.io, fd, "0123456789", 10, 0, path),
                     -ENOSPC);
    ck_assert(!sio_is_fatal(&f.io));
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    ck_assert_int_eq(st.st_size, 4); /* the torn part landed */
    sio_close(&f.io, fd);
    tu_rm_rf(dir);
}
END_TEST

static void
afile_setup(char *dir, size_t cap)
{
    tu_mkdtemp(dir, cap, NULL, 0);
    struct vs_sio io;
    sio_init_real(&io);
    ck_assert_int_eq(afile_replace(&io, dir, "rec", "old-record", 10), 0);
}

static void
assert_content(const char *dir, const char *want, size_t want_len)
{
    size_t len;
    uint8_t *b = tu_read_file(dir, "rec", &len);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(len, want_len);
    ck_assert_int_eq(memcmp(b, want, len), 0);
    free(b);
}

/* Each injected failure of write (EIO) / fsync / rename / dir fsync is
 * fatal and leaves the old or (dir fsync only: after the rename) the new
 * content whole, never a mix. */
START_TEST(test_afile_faults_fatal)
{
    const enum sio_kind kinds[] = {SIO_WRITE, SIO_FSYNC, SIO_RENAME,
                                   SIO_DIR_FSYNC};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        char dir[256];
        afile_setup(dir, sizeof(dir));
        struct sio_fault f;
        sio_fault_init(&f, 1);
        sio_fault_arm(&f, kinds[k], 1, EIO, kinds[k] == SIO_WRITE ? 3 : -1);
        int rc = afile_replace(&f.io, dir, "rec", "new-record!", 11);
        ck_assert_int_eq(rc, -VS_EFATAL);
        ck_assert(sio_is_fatal(&f.io));
        ck_assert_int_eq(f.io.fatal.kind, kinds[k]);
        ck_assert_int_eq(f.io.fatal.err, EIO);
        if (kinds[k] == SIO_DIR_FSYNC)
            assert_content(dir, "new-record!", 11);
        else
            assert_content(dir, "old-record", 10);
        /* a later replacement is refused: never carry on */
        ck_assert_int_eq(afile_replace(&f.io, dir, "rec", "x", 1), -VS_EFATAL);
        tu_rm_rf(dir);
    }
}
END_TEST

START_TEST(test_afile_enospc_clean)
{
    char dir[256];
    afile_setup(dir, sizeof(dir));
    struct sio_fault f;
    sio_fault_init(&f, 1);
    sio_fault_arm(&f, SIO_WRITE, 1, ENOSPC, 5);
    ck_assert_int_eq(afile_replace(&f.io, dir, "rec", "new-record!", 11),
                     -ENOSPC);
    ck_assert(!sio_is_fatal(&f.io));
    assert_content(dir, "old-record", 10);
    ck_assert(!tu_exists(dir, "rec.tmp"));
    /* the io is still usable */
    ck_assert_int_eq(afile_replace(&f.io, dir, "rec", "new-record!", 11), 0);
    assert_content(dir, "new-record!", 11);
    tu_rm_rf(dir);
}
END_TEST

START_TEST(test_afile_leftover_tmp)
{
    char dir[256];
    afile_setup(dir, sizeof(dir));
    tu_write_file(dir, "rec.tmp", "half-writ", 9);
    struct vs_sio io;
    sio_init_real(&io);
    assert_content(dir, "old-record", 10);
    ck_assert_int_eq(afile_cleanup_tmp(&io, dir, "rec"), 1);
    ck_assert(!tu_exists(dir, "rec.tmp"));
    ck_assert_int_eq(afile_cleanup_tmp(&io, dir, "rec"), 0);
    uint8_t *b;
    size_t len;
    char path[512];
    snprintf(path, sizeof(path), "%s/rec", dir);
    ck_assert_int_eq(afile_read_all(&io, path, 5, &b, &len), -EFBIG);
    snprintf(path, sizeof(path), "%s/none", dir);
    ck_assert_int_eq(afile_read_all(&io, path, 5, &b, &len), -ENOENT);
    tu_rm_rf(dir);
}
END_TEST

START_TEST(test_datadir_lock)
{
    char base[256], dir[512];
    tu_mkdtemp(base, sizeof(base), NULL, 0);
    snprintf(dir, sizeof(dir), "%s/a/b/data", base);
    char err[512] = "";
    int fd = -1;
    ck_assert_int_eq(datadir_open_locked(dir, &fd, err, sizeof(err)), 0);
    ck_assert_int_ge(fd, 0);
    struct stat st;
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    char meta[600];
    snprintf(meta, sizeof(meta), "%s/metadata", dir);
    ck_assert_int_eq(stat(meta, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    size_t len;
    uint8_t *pid = tu_read_file(dir, VS_DATADIR_LOCK_FILE, &len);
    ck_assert_ptr_nonnull(pid);
    ck_assert_int_eq(atol((char *)pid), (long)getpid());
    free(pid);
    pid_t holder = 0;
    ck_assert_int_eq(datadir_probe_lock(dir, &holder), DATADIR_LOCKED);
    ck_assert_int_eq(holder, getpid());

    /* a second node (forked child) on the same dir refuses */
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        int fd2 = -1;
        char e2[512] = "";
        int rc = datadir_open_locked(dir, &fd2, e2, sizeof(e2));
        char want[64];
        snprintf(want, sizeof(want), "pid %ld", (long)getppid());
        int ok = rc == -EWOULDBLOCK &&
                 strstr(e2, "is locked by vstreamd pid") && strstr(e2, want);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);

    close(fd);
    ck_assert_int_eq(datadir_probe_lock(dir, NULL), DATADIR_UNLOCKED);
    ck_assert_int_eq(datadir_open_locked(dir, &fd, err, sizeof(err)), 0);
    close(fd);
    tu_rm_rf(base);
}
END_TEST

/* Creating the data dir and metadata/ fsyncs the parent of every
 * directory created (and only those); a failing directory fsync is a
 * fatal error, never ignored. */
START_TEST(test_mkdir_fsyncs_parents)
{
    char root[256];
    tu_mkdtemp(root, sizeof(root), NULL, 0);
    struct sio_fault f;
    sio_fault_init(&f, 1);
    char path[512];
    snprintf(path, sizeof(path), "%s/a/b/c", root);
    uint64_t before = f.calls[SIO_DIR_FSYNC];
    ck_assert_int_eq(datadir_mkdir_p_io(&f.io, path, 0700), 0);
    ck_assert_uint_eq(f.calls[SIO_DIR_FSYNC] - before, 3);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    before = f.calls[SIO_DIR_FSYNC];
    ck_assert_int_eq(datadir_mkdir_p_io(&f.io, path, 0700), 0); /* exists */
    ck_assert_uint_eq(f.calls[SIO_DIR_FSYNC] - before, 0);
    /* a fresh node's format: DATA and DATA/metadata made durable */
    snprintf(path, sizeof(path), "%s/fresh", root);
    struct vs_vsr_state s = tu_state(0, 0, (struct vs_u128){0, 0});
    before = f.calls[SIO_DIR_FSYNC];
    ck_assert_int_eq(recovery_format_fresh(&f.io, path, &s), 0);
    ck_assert_uint_ge(f.calls[SIO_DIR_FSYNC] - before, 3); /* + superblock */
    /* a failing directory fsync */
    snprintf(path, sizeof(path), "%s/x", root);
    sio_fault_arm(&f, SIO_DIR_FSYNC, 1, EIO, -1);
    ck_assert_int_eq(datadir_mkdir_p_io(&f.io, path, 0700), -VS_EFATAL);
    ck_assert(sio_is_fatal(&f.io));
    sio_fault_reset(&f);
    tu_rm_rf(root);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("storage_io");
    TCase *tc = tcase_create("io");
    tcase_add_test(tc, test_fault_nth_and_fatal_message);
    tcase_add_test(tc, test_fault_tear_then_enospc);
    tcase_add_test(tc, test_afile_faults_fatal);
    tcase_add_test(tc, test_afile_enospc_clean);
    tcase_add_test(tc, test_afile_leftover_tmp);
    tcase_add_test(tc, test_datadir_lock);
    tcase_add_test(tc, test_mkdir_fsyncs_parents);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
