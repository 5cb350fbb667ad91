/*
 * tests/unit/check_storage_snap.c - snapshot.bin: trailer layout (golden
 * bytes), every bit flip, missing trailer, payload prefix and format
 * versions, atomic write faults.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard/storage/snapshot_file.h"
#include "storage_testutil.h"

static size_t
payload(uint8_t *out, uint32_t version, uint64_t op, size_t body)
{
    struct vs_snapshot_prefix p = {.format_version = version, .op = op};
    vs_snapshot_prefix_write(out, &p);
    for (size_t i = 0; i < body; i++)
        out[VS_SNAPSHOT_PREFIX_SIZE + i] = (uint8_t)(0x90 + i);
    return VS_SNAPSHOT_PREFIX_SIZE + body;
}

START_TEST(test_golden_and_roundtrip)
{
    char dir[256];
    tu_mkdtemp(dir, sizeof(dir), NULL, 0);
    struct vs_sio io;
    sio_init_real(&io);
    uint8_t p[64];
    size_t n = payload(p, 1, 0x0102030405060708ull, 20);
    struct vs_u128 cs;
    ck_assert_int_eq(snapfile_write(&io, dir, p, n, &cs), 0);
    ck_assert(vs_u128_eq(cs, vs_checksum(p, n)));
    size_t len;
    uint8_t *f = tu_read_file(dir, VS_SNAPSHOT_FILE, &len);
    ck_assert_uint_eq(len, n + 20);
    /* payload verbatim, prefix LE, then "ISNP" + XXH3 lo LE + hi (0) */
    ck_assert_int_eq(memcmp(f, p, n), 0);
    static const uint8_t prefix[12] = {1, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1};
    ck_assert_int_eq(memcmp(f, prefix, 12), 0);
    ck_assert_int_eq(memcmp(f + n, "ISNP", 4), 0);
    uint64_t lo = 0;
    for (int i = 7; i >= 0; i--)
        lo = (lo << 8) | f[n + 4 + i];
    ck_assert_uint_eq(lo, vs_xxh3_64(p, n));
    for (int i = 0; i < 8; i++)
        ck_assert_uint_eq(f[n + 12 + i], 0);
    /* split_trailer returns the verified payload, never the trailer */
    const uint8_t *pl;
    size_t plen;
    struct vs_u128 c2;
    ck_assert_int_eq(snapfile_split_trailer(f, len, &pl, &plen, &c2), 0);
    ck_assert_ptr_eq(pl, f);
    ck_assert_uint_eq(plen, n);
    ck_assert(vs_u128_eq(c2, cs));
    free(f);
    struct snapfile s;
    ck_assert_int_eq(snapfile_read(&io, dir, &s), 0);
    ck_assert_int_eq(s.status, SNAPFILE_OK);
    ck_assert_uint_eq(s.prefix.op, 0x0102030405060708ull);
    ck_assert_uint_eq(s.prefix.format_version, 1);
    size_t tl;
    uint8_t *taken = snapfile_take_payload(&s, &tl);
    ck_assert_uint_eq(tl, n);
    ck_assert_int_eq(memcmp(taken, p, n), 0);
    free(taken);
    snapfile_fini(&s);
    ck_assert_int_eq(snapfile_write(&io, dir, p, 5, NULL), -EINVAL);
    tu_rm_rf(dir);
}
END_TEST

START_TEST(test_every_bit_flip)
{
    char dir[256];
    tu_mkdtemp(dir, sizeof(dir), NULL, 0);
    struct vs_sio io;
    sio_init_real(&io);
    uint8_t p[64];
    size_t n = payload(p, 1, 42, 30);
    ck_assert_int_eq(snapfile_write(&io, dir, p, n, NULL), 0);
    size_t len;
    uint8_t *f = tu_read_file(dir, VS_SNAPSHOT_FILE, &len);
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            f[i] ^= (uint8_t)(1u << bit);
            tu_write_file(dir, VS_SNAPSHOT_FILE, f, len);
            f[i] ^= (uint8_t)(1u << bit);
            struct snapfile s;
            ck_assert_int_eq(snapfile_read(&io, dir, &s), 0);
            enum snapfile_status want = i >= n && i < n + 4
                                            ? SNAPFILE_NO_TRAILER
                                            : SNAPFILE_BAD_CHECKSUM;
            if (s.status != want)
                ck_abort_msg("byte %zu bit %d: %s", i, bit,
                             snapfile_status_name(s.status));
            snapfile_fini(&s);
        }
    }
    /* every truncation: no trailer or a checksum mismatch, never OK */
    for (size_t l = 0; l < len; l++) {
        tu_write_file(dir, VS_SNAPSHOT_FILE, f, l);
        struct snapfile s;
        ck_assert_int_eq(snapfile_read(&io, dir, &s), 0);
        ck_assert(s.status == SNAPFILE_NO_TRAILER ||
                  s.status == SNAPFILE_BAD_CHECKSUM);
        snapfile_fini(&s);
    }
    free(f);
    tu_rm_rf(dir);
}
END_TEST

START_TEST(test_prefix_and_format)
{
    char dir[256];
    tu_mkdtemp(dir, sizeof(dir), NULL, 0);
    struct vs_sio io;
    sio_init_real(&io);
    struct snapfile s;
    ck_assert_int_eq(snapfile_read(&io, dir, &s), 0);
    ck_assert_int_eq(s.status, SNAPFILE_ABSENT);
    snapfile_fini(&s);
    uint8_t p[64];
    size_t n = payload(p, 9, 77, 4);
    ck_assert_int_eq(snapfile_write(&io, dir, p, n, NULL), 0);
    ck_assert_int_eq(snapfile_read(&io, dir, &s), 0);
    ck_assert_int_eq(s.status, SNAPFILE_UNKNOWN_FORMAT);
    ck_assert_uint_eq(s.prefix.format_version, 9);
    ck_assert_uint_eq(s.prefix.op, 77);
    ck_assert_ptr_nonnull(strstr(s.reason, "version 9"));
    snapfile_fini(&s);
    /* a valid trailer over a payload shorter than the prefix */
    uint8_t file[8 + 20];
    memset(file, 1, 8);
    memcpy(file + 8, "ISNP", 4);
    struct vs_u128 c = vs_checksum(file, 8);
    memcpy(file + 12, &c.lo, 8);
    memcpy(file + 20, &c.hi, 8);
    tu_write_file(dir, VS_SNAPSHOT_FILE, file, sizeof(file));
    ck_assert_int_eq(snapfile_read(&io, dir, &s), 0);
    ck_assert_int_eq(s.status, SNAPFILE_SHORT_PREFIX);
    snapfile_fini(&s);
    ck_assert(!snapfile_format_known(0));
    ck_assert(snapfile_format_known(1));
    ck_assert(snapfile_format_known(2));
    ck_assert(!snapfile_format_known(3));
    tu_rm_rf(dir);
}
END_TEST

START_TEST(test_write_faults)
{
    const enum sio_kind kinds[] = {SIO_WRITE, SIO_FSYNC, SIO_RENAME};
    for (size_t k = 0; k < 4; k++) {
        char dir[256];
        tu_mkdtemp(dir, sizeof(dir), NULL, 0);
        struct sio_fault f;
        sio_fault_init(&f, 1);
        uint8_t p[64];
        size_t n = payload(p, 1, 10, 10);
        ck_assert_int_eq(snapfile_write(&f.io, dir, p, n, NULL), 0);
        size_t n2 = payload(p, 1, 20, 30);
        if (k < 3) {
            sio_fault_arm(&f, kinds[k], 1, EIO, -1);
            ck_assert_int_eq(snapfile_write(&f.io, dir, p, n2, NULL),
                             -VS_EFATAL);
        } else {
            sio_fault_arm(&f, SIO_WRITE, 2, ENOSPC, 5); /* in the trailer */
            ck_assert_int_eq(snapfile_write(&f.io, dir, p, n2, NULL), -ENOSPC);
            ck_assert(!tu_exists(dir, "snapshot.bin.tmp"));
        }
        struct vs_sio real;
        sio_init_real(&real);
        struct snapfile s;
        ck_assert_int_eq(snapfile_read(&real, dir, &s), 0);
        ck_assert_int_eq(s.status, SNAPFILE_OK);
        ck_assert_uint_eq(s.prefix.op, 10); /* the old snapshot */
        snapfile_fini(&s);
        tu_rm_rf(dir);
    }
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("storage_snap");
    TCase *tc = tcase_create("snap");
    tcase_add_test(tc, test_golden_and_roundtrip);
    tcase_add_test(tc, test_every_bit_flip);
    tcase_add_test(tc, test_prefix_and_format);
    tcase_add_test(tc, test_write_faults);
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
