/*
 * tests/unit/check_storage_snapreader.c - bounded, verifying reads of the
 * snapshot payload for state transfer (shard/storage/snapshot_reader.h):
 * in-order pieces verify and never serve the trailer, retries are not
 * hashed twice, a checkpoint checksum that disagrees with the trailer is
 * refused at open, rot at rest is caught at the last piece and the reader
 * stays failed, missing/short files and read faults are typed errors.
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

#include "common/layout.h"
#include "shard/storage/io.h"
#include "shard/storage/snapshot_file.h"
#include "shard/storage/snapshot_reader.h"

#define PAYLOAD 10007u

static char dir[64];
static uint8_t payload[PAYLOAD];
static struct vs_u128 sum;
static struct vs_sio io;

static void
setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/vs-snapreader-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    struct vs_snapshot_prefix p = {1, 4242};
    for (size_t i = 0; i < PAYLOAD; i++)
        payload[i] = (uint8_t)(i * 31 + 7);
    vs_snapshot_prefix_write(payload, &p);
    sio_init_real(&io);
    ck_assert_int_eq(snapfile_write(&io, dir, payload, PAYLOAD, &sum), 0);
}

static void
teardown(void)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, VS_SNAPSHOT_FILE);
    unlink(path);
    rmdir(dir);
}

static void
flip_at(off_t off)
{
    char path[128];
    uint8_t b;
    snprintf(path, sizeof(path), "%s/%s", dir, VS_SNAPSHOT_FILE);
    int fd = open(path, O_RDWR);
    ck_assert_int_eq(pread(fd, &b, 1, off), 1);
    b ^= 0x04;
    ck_assert_int_eq(pwrite(fd, &b, 1, off), 1);
    close(fd);
}

START_TEST(test_pieces_in_order_verify)
{
    struct snapfile_reader r;
    uint8_t got[PAYLOAD + 100], buf[999];
    ck_assert_int_eq(snapfile_reader_open(&r, &io, dir, sum), 0);
    ck_assert_uint_eq(r.payload_len, PAYLOAD);
    ck_assert_uint_eq(r.prefix.op, 4242);
    uint64_t off = 0;
    while (off < PAYLOAD) {
        long n = snapfile_reader_read(&r, off, buf, sizeof(buf));
        ck_assert_int_gt(n, 0);
        ck_assert_int_le(n, (long)sizeof(buf));
        memcpy(got + off, buf, (size_t)n);
        /* a retry of the same piece is served, not hashed twice */
        if (off == 2 * sizeof(buf))
            ck_assert_int_eq(snapfile_reader_read(&r, off, buf, sizeof(buf)),
                             n);
        off += (uint64_t)n;
    }
    ck_assert(r.verified);
    ck_assert_int_eq(memcmp(got, payload, PAYLOAD), 0);
    /* the trailer is never served */
    ck_assert_int_eq(snapfile_reader_read(&r, PAYLOAD, buf, sizeof(buf)), 0);
    ck_assert_int_eq(snapfile_reader_read(&r, PAYLOAD + 5, buf, sizeof(buf)),
                     0);
    snapfile_reader_close(&r);
}
END_TEST

START_TEST(test_checkpoint_checksum_disagrees)
{
    struct snapfile_reader r;
    struct vs_u128 other = sum;
    other.lo ^= 1;
    ck_assert_int_eq(snapfile_reader_open(&r, &io, dir, other), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(r.reason, "not the checkpoint's"));
    uint8_t buf[16];
    ck_assert_int_eq(snapfile_reader_read(&r, 0, buf, sizeof(buf)), -EIO);
}
END_TEST

START_TEST(test_rot_at_rest_caught_at_last_piece)
{
    flip_at(5000); /* inside the payload: the trailer still matches */
    struct snapfile_reader r;
    uint8_t buf[4096];
    ck_assert_int_eq(snapfile_reader_open(&r, &io, dir, sum), 0);
    long n = 0;
    uint64_t off = 0;
    while (off < PAYLOAD) {
        n = snapfile_reader_read(&r, off, buf, sizeof(buf));
        if (n < 0)
            break;
        off += (uint64_t)n;
    }
    ck_assert_int_eq(n, -EBADMSG);
    ck_assert_ptr_nonnull(strstr(r.reason, "at rest"));
    ck_assert(!r.verified);
    ck_assert_int_eq(snapfile_reader_read(&r, 0, buf, sizeof(buf)), -EIO);
    snapfile_reader_close(&r);
}
END_TEST

START_TEST(test_missing_short_and_no_trailer)
{
    struct snapfile_reader r;
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, VS_SNAPSHOT_FILE);
    flip_at(PAYLOAD); /* the trailer's magic */
    ck_assert_int_eq(snapfile_reader_open(&r, &io, dir, sum), -ENODATA);
    ck_assert_ptr_nonnull(strstr(r.reason, "no ISNP trailer"));
    ck_assert_int_eq(truncate(path, 10), 0);
    ck_assert_int_eq(snapfile_reader_open(&r, &io, dir, sum), -ENODATA);
    ck_assert_int_eq(truncate(path, 25), 0);
    ck_assert_int_eq(snapfile_reader_open(&r, &io, dir, sum), -EPROTO);
    unlink(path);
    ck_assert_int_eq(snapfile_reader_open(&r, &io, dir, sum), -ENOENT);
}
END_TEST

START_TEST(test_read_fault)
{
    struct sio_fault f;
    struct snapfile_reader r;
    uint8_t buf[512];
    sio_fault_init(&f, 1);
    ck_assert_int_eq(snapfile_reader_open(&r, &f.io, dir, sum), 0);
    sio_fault_arm(&f, SIO_READ, 1, EIO, -1);
    long n = snapfile_reader_read(&r, 0, buf, sizeof(buf));
    ck_assert_int_lt(n, 0);
    ck_assert_ptr_nonnull(strstr(r.reason, "read of 512 bytes at 0"));
    ck_assert_int_eq(snapfile_reader_read(&r, 0, buf, sizeof(buf)), -EIO);
    snapfile_reader_close(&r);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("storage_snapreader");
    TCase *tc = tcase_create("reader");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_pieces_in_order_verify);
    tcase_add_test(tc, test_checkpoint_checksum_disagrees);
    tcase_add_test(tc, test_rot_at_rest_caught_at_last_piece);
    tcase_add_test(tc, test_missing_short_and_no_trailer);
    tcase_add_test(tc, test_read_fault);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
