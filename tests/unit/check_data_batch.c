/*
 * tests/unit/check_data_batch.c - batch validation, stamping and the
 * send-side partitioners (shard/data/batch.h).
 * Test code only.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/errors.h"
#include "shard/data/batch.h"

/* A batch of n messages with payload lengths plens[i] (bytes 'a'+i) and
 * 5-byte user headers on odd messages. Returns malloc'd buffer. */
static uint8_t *
mk(uint32_t n, const uint32_t *plens, size_t *len)
{
    const uint8_t **pl = calloc(n, sizeof(*pl));
    const uint8_t **hd = calloc(n, sizeof(*hd));
    uint32_t *hl = calloc(n, sizeof(*hl));
    uint8_t **own = calloc(n, sizeof(*own));
    static const uint8_t hdrbytes[5] = {2, 1, 0, 0, 0};
    size_t cap = BATCH_HEADER_SIZE;
    for (uint32_t i = 0; i < n; i++) {
        own[i] = malloc(plens[i] + 1);
        memset(own[i], 'a' + (int)(i % 26), plens[i]);
        pl[i] = own[i];
        hl[i] = (i & 1) ? 5 : 0;
        hd[i] = (i & 1) ? hdrbytes : NULL;
        cap += BATCH_FRAME_SIZE + plens[i] + hl[i];
    }
    uint8_t *b = malloc(cap);
    *len = batch_build(b, cap, 1000, n, pl, plens, hd, hl, NULL);
    ck_assert_uint_eq(*len, cap);
    for (uint32_t i = 0; i < n; i++)
        free(own[i]);
    free(own);
    free(pl);
    free(hd);
    free(hl);
    return b;
}

START_TEST(test_empty_hash_vector)
{
    /* iggy-client-protocol §5.6: XXH3-64 of the empty input. */
    ck_assert_uint_eq(vs_xxh3_64("", 0), 0x2d06800538d394c2ull);
}
END_TEST

/* The batch checksum by its definition (batch.h): one stream over the
 * header fields, then each frame checksum in turn, fed 8 bytes at a
 * time; batch_compute_checksum gathers them 64 at a time, so counts
 * around and past a gather are compared (batch_build stores it, and
 * batch_validate accepts each batch). */
START_TEST(test_batch_checksum_gathered)
{
    static const uint32_t counts[] = {1, 2, 63, 64, 65, 127, 128, 129, 300};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        uint32_t n = counts[c], pl[300];
        size_t len, pos = BATCH_HEADER_SIZE;
        for (uint32_t i = 0; i < n; i++)
            pl[i] = (i * 7) % 50;
        uint8_t *b = mk(n, pl, &len);
        struct vs_xxh3_stream s;
        vs_xxh3_stream_init(&s);
        vs_xxh3_stream_update(&s, b, 40);
        vs_xxh3_stream_update(&s, b + 48, 4);
        for (uint32_t i = 0; i < n; i++) {
            vs_xxh3_stream_update(&s, b + pos, 8);
            pos += BATCH_FRAME_SIZE + vs_load_u32(b + pos + 36) +
                   vs_load_u32(b + pos + 32);
        }
        ck_assert_uint_eq(pos, len);
        ck_assert_uint_eq(batch_compute_checksum(b), vs_xxh3_stream_digest(&s));
        ck_assert_uint_eq(batch_checksum_field(b), batch_compute_checksum(b));
        ck_assert_int_eq(batch_validate(b, len, NULL, 1, NULL), BATCH_OK);
        free(b);
    }
}
END_TEST

START_TEST(test_valid_round_trip)
{
    uint32_t pl[10];
    for (int i = 0; i < 10; i++)
        pl[i] = 42;
    size_t len;
    uint8_t *b = mk(10, pl, &len);
    /* the reference's example: 10 x 42 bytes, no headers -> 1156; ours
     * has 5 headers of 5 bytes */
    ck_assert_uint_eq(len, 256 + 10 * (48 + 42) + 5 * 5);
    struct batch_info info;
    ck_assert_int_eq(batch_validate(b, len, NULL, 1, &info), BATCH_OK);
    ck_assert_uint_eq(info.message_count, 10);
    ck_assert_uint_eq(info.batch_length, len);
    ck_assert_uint_eq(info.origin_timestamp, 1000);
    free(b);
}
END_TEST

START_TEST(test_reference_length_example)
{
    /* 10 messages of 42 bytes without user headers: batch_length 1156. */
    uint8_t *p[10];
    uint32_t pl[10];
    for (int i = 0; i < 10; i++) {
        p[i] = calloc(1, 42);
        pl[i] = 42;
    }
    uint8_t buf[2048];
    size_t len = batch_build(buf, sizeof(buf), 5, 10, (const uint8_t *const *)p,
                             pl, NULL, NULL, NULL);
    ck_assert_uint_eq(len, 1156);
    ck_assert_uint_eq(vs_load_u64(buf + 32), 0x484);
    ck_assert_uint_eq(vs_load_u32(buf + 48), 10);
    /* each frame checksum covers frame[8..end) exactly */
    ck_assert_uint_eq(vs_load_u64(buf + 256),
                      vs_xxh3_64(buf + 256 + 8, 48 - 8 + 42));
    /* batch checksum recipe: 44 header bytes then frame checksums */
    uint8_t rec[44 + 80];
    memcpy(rec, buf, 40);
    memcpy(rec + 40, buf + 48, 4);
    for (int i = 0; i < 10; i++)
        memcpy(rec + 44 + 8 * i, buf + 256 + (size_t)i * 90, 8);
    ck_assert_uint_eq(vs_load_u64(buf + 40), vs_xxh3_64(rec, sizeof(rec)));
    ck_assert_int_eq(batch_validate(buf, len, NULL, 1, NULL), BATCH_OK);
    for (int i = 0; i < 10; i++)
        free(p[i]);
}
END_TEST

START_TEST(test_every_bit_flip_refused)
{
    uint32_t pl[3] = {7, 0, 13};
    size_t len;
    uint8_t *b = mk(3, pl, &len);
    /* flipping any bit of the batch must be refused (reserved, length,
     * checksums...) except in the client-zero fields, also refused */
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            b[i] ^= (uint8_t)(1u << bit);
            enum batch_err e = batch_validate(b, len, NULL, 1, NULL);
            ck_assert_msg(e != BATCH_OK, "flip at byte %zu bit %d accepted", i,
                          bit);
            ck_assert_uint_ne(batch_err_code(e), 0);
            b[i] ^= (uint8_t)(1u << bit);
        }
    }
    ck_assert_int_eq(batch_validate(b, len, NULL, 1, NULL), BATCH_OK);
    free(b);
}
END_TEST

START_TEST(test_specific_errors)
{
    uint32_t pl[2] = {10, 20};
    size_t len;
    uint8_t *b = mk(2, pl, &len);
    ck_assert_int_eq(batch_validate(b, 100, NULL, 1, NULL), BATCH_E_SHORT);
    ck_assert_int_eq(batch_validate(b, len - 1, NULL, 1, NULL), BATCH_E_LENGTH);
    /* message checksum */
    b[256 + 48] ^= 1;
    ck_assert_int_eq(batch_validate(b, len, NULL, 1, NULL),
                     BATCH_E_MSG_CHECKSUM);
    ck_assert_uint_eq(batch_err_code(BATCH_E_MSG_CHECKSUM), 4027);
    b[256 + 48] ^= 1;
    /* batch checksum */
    b[40] ^= 1;
    ck_assert_int_eq(batch_validate(b, len, NULL, 1, NULL),
                     BATCH_E_BATCH_CHECKSUM);
    b[40] ^= 1;
    /* message_count */
    vs_store_u32(b + 48, 3);
    ck_assert_int_eq(batch_validate(b, len, NULL, 1, NULL), BATCH_E_COUNT);
    vs_store_u32(b + 48, 0);
    ck_assert_int_eq(batch_validate(b, len, NULL, 1, NULL), BATCH_E_EMPTY);
    vs_store_u32(b + 48, 2);
    /* reserved */
    b[200] = 1;
    ck_assert_int_eq(batch_validate(b, len, NULL, 1, NULL), BATCH_E_RESERVED);
    b[200] = 0;
    /* oversized by limit */
    struct batch_limits lim;
    batch_limits_default(&lim);
    lim.max_batch_bytes = len - 1;
    ck_assert_int_eq(batch_validate(b, len, &lim, 1, NULL), BATCH_E_TOO_LARGE);
    batch_limits_default(&lim);
    lim.max_payload = 15;
    ck_assert_int_eq(batch_validate(b, len, &lim, 1, NULL),
                     BATCH_E_PAYLOAD_TOO_LARGE);
    batch_limits_default(&lim);
    lim.max_messages = 1;
    ck_assert_int_eq(batch_validate(b, len, &lim, 1, NULL), BATCH_E_TOO_MANY);
    /* a frame's payload_len pointing past the end: bounds, no overread */
    vs_store_u32(b + 256 + 36, 0xFFFFFFF0u);
    ck_assert_int_eq(batch_validate(b, len, NULL, 1, NULL),
                     BATCH_E_FRAME_BOUNDS);
    free(b);
}
END_TEST

START_TEST(test_truncations_never_crash)
{
    uint32_t pl[4] = {0, 100, 3, 50};
    size_t len;
    uint8_t *b = mk(4, pl, &len);
    for (size_t cut = 0; cut < len; cut++) {
        /* an exact-size heap copy so ASan catches any overread */
        uint8_t *c = malloc(cut ? cut : 1);
        memcpy(c, b, cut);
        if (cut >= BATCH_HEADER_SIZE)
            vs_store_u64(c + 32, cut); /* lie about the length */
        ck_assert_int_ne(batch_validate(c, cut, NULL, 1, NULL), BATCH_OK);
        free(c);
    }
    free(b);
}
END_TEST

START_TEST(test_stamp)
{
    uint32_t pl[3] = {1, 2, 3};
    size_t len;
    uint8_t *b = mk(3, pl, &len);
    batch_stamp(b, 7, 1000, 123456);
    ck_assert_uint_eq(batch_base_offset(b), 1000);
    ck_assert_uint_eq(batch_base_timestamp(b), 123456);
    ck_assert_uint_eq(vs_load_u64(b), 7);
    ck_assert_uint_eq(batch_last_offset(b), 1002);
    /* stamped batch validates as a stored batch, not as a client one */
    ck_assert_int_eq(batch_validate(b, len, NULL, 0, NULL), BATCH_OK);
    ck_assert_int_eq(batch_validate(b, len, NULL, 1, NULL), BATCH_E_NOT_ZEROED);
    free(b);
}
END_TEST

START_TEST(test_timestamps_monotonic)
{
    uint64_t prev = 0;
    uint64_t walls[] = {100, 200, 150, 50, 300, 300, 10};
    for (size_t i = 0; i < sizeof(walls) / sizeof(walls[0]); i++) {
        uint64_t t = batch_next_timestamp(prev, walls[i]);
        ck_assert_uint_ge(t, prev);
        ck_assert_uint_ge(t, walls[i] < prev ? prev : walls[i]);
        prev = t;
    }
    ck_assert_uint_eq(prev, 300);
}
END_TEST

START_TEST(test_key_partitioner_vectors)
{
    /* iggy-client-protocol-2 §10 */
    ck_assert_uint_eq(vs_xxh32("", 0), 0x02CC5D05u);
    ck_assert_uint_eq(vs_xxh32("abc", 3), 0x32D153FFu);
    uint8_t z[4] = {0, 0, 0, 0};
    ck_assert_uint_eq(vs_xxh32(z, 4), 0x08D6D969u);
    ck_assert_uint_eq(batch_partition_by_key("abc", 3, 7), 0x32D153FFu % 7);
    ck_assert_uint_eq(batch_partition_by_key(z, 4, 3), 0x08D6D969u % 3);
    ck_assert_uint_eq(batch_partition_by_key("abc", 3, 0), UINT32_MAX);
    /* same key, same partition */
    for (int i = 0; i < 100; i++)
        ck_assert_uint_eq(batch_partition_by_key("k", 1, 5),
                          batch_partition_by_key("k", 1, 5));
}
END_TEST

START_TEST(test_round_robin)
{
    struct batch_rr rr = {0};
    uint32_t seen[4] = {0};
    for (int i = 0; i < 40; i++) {
        uint32_t p = batch_rr_next(&rr, 4);
        ck_assert_uint_eq(p, (uint32_t)(i % 4));
        seen[p]++;
    }
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(seen[i], 10);
    ck_assert_uint_eq(batch_rr_next(&rr, 0), UINT32_MAX);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("data_batch");
    TCase *tc = tcase_create("batch");
    tcase_add_test(tc, test_empty_hash_vector);
    tcase_add_test(tc, test_valid_round_trip);
    tcase_add_test(tc, test_batch_checksum_gathered);
    tcase_add_test(tc, test_reference_length_example);
    tcase_add_test(tc, test_every_bit_flip_refused);
    tcase_add_test(tc, test_specific_errors);
    tcase_add_test(tc, test_truncations_never_crash);
    tcase_add_test(tc, test_stamp);
    tcase_add_test(tc, test_timestamps_monotonic);
    tcase_add_test(tc, test_key_partitioner_vectors);
    tcase_add_test(tc, test_round_robin);
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
