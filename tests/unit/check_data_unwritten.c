/*
 * tests/unit/check_data_unwritten.c - the never-written shape of a
 * damaged batch stretch (shard/data/unwritten.h):
 *   - shapes a torn, never-synced write leaves are accepted: a write cut
 *     short (zeros to the end, or to the end of its batch with the next
 *     write after it), a lost write (zeros, the next write's header after
 *     them), a sector that did not land, and sequences of them;
 *   - damage to written bytes is refused, even when the batch ends in a
 *     zero byte (the old weak rule accepted that): a flip in a frame away
 *     from the zeros, a flip of the header, a flip beside a zero sector of
 *     the payload;
 *   - the record test: zeros from a byte on.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "shard/data/batch.h"
#include "shard/data/unwritten.h"

#define MSGS 4

/* A batch of MSGS messages of plen bytes each; every payload ends in
 * `tail0` zero bytes and, with `zero_mid`, the first one holds 1100 zero
 * bytes in its middle (plen must be larger). */
static uint8_t *
batch_of(uint32_t plen, uint32_t tail0, int zero_mid, size_t *len)
{
    uint8_t *pay[MSGS];
    const uint8_t *pp[MSGS];
    uint32_t pl[MSGS];
    size_t cap = BATCH_HEADER_SIZE;
    uint32_t seed = 12345;
    for (int i = 0; i < MSGS; i++) {
        pay[i] = malloc(plen);
        for (uint32_t k = 0; k < plen; k++) {
            seed = seed * 1103515245u + 12345u;
            pay[i][k] = (uint8_t)((seed >> 16) | 1); /* never zero */
        }
        memset(pay[i] + plen - tail0, 0, tail0);
        if (zero_mid && i == 0)
            memset(pay[i] + 100, 0, 1100);
        pp[i] = pay[i];
        pl[i] = plen;
        cap += BATCH_FRAME_SIZE + plen;
    }
    uint8_t *b = malloc(cap);
    *len = batch_build(b, cap, 42, MSGS, pp, pl, NULL, NULL, NULL);
    ck_assert_uint_eq(*len, cap);
    for (int i = 0; i < MSGS; i++)
        free(pay[i]);
    return b;
}

/* The start of frame i of a batch of equal frames. */
static size_t
frame_at(uint32_t plen, int i)
{
    return BATCH_HEADER_SIZE + (size_t)i * (BATCH_FRAME_SIZE + plen);
}

START_TEST(test_torn_shapes_accepted)
{
    size_t n;
    uint8_t *a = batch_of(400, 0, 0, &n);
    uint8_t *b = malloc(3 * n);
    /* nothing damaged there: len 0 */
    ck_assert_int_eq(unwritten_shape(a, 0, 0), 1);
    /* cut short inside frame 2, nothing after it */
    memcpy(b, a, n);
    memset(b + frame_at(400, 2) + 100, 0, n - frame_at(400, 2) - 100);
    ck_assert_int_eq(unwritten_shape(b, n, 0), 1);
    /* cut inside the header, inside a frame header */
    memcpy(b, a, n);
    memset(b + 30, 0, n - 30);
    ck_assert_int_eq(unwritten_shape(b, n, 0), 1);
    memcpy(b, a, n);
    memset(b + frame_at(400, 1) + 20, 0, n - frame_at(400, 1) - 20);
    ck_assert_int_eq(unwritten_shape(b, n, 0), 1);
    /* cut short, the next write (a whole batch stretch: the next one
     * lost too) after it: zeros to the end of the first batch */
    memcpy(b, a, n);
    memset(b + frame_at(400, 3) + 7, 0, n - frame_at(400, 3) - 7);
    memset(b + n, 0, n);
    ck_assert_int_eq(unwritten_shape(b, 2 * n, 0), 1);
    /* a sector that did not land in frame 1 (unaligned in the write) */
    memcpy(b, a, n);
    memset(b + frame_at(400, 1) + 10, 0, UNWRITTEN_SECTOR);
    ck_assert_int_eq(unwritten_shape(b, n, 0), 1);
    /* a lost write, then a batch cut short */
    memset(b, 0, n);
    memcpy(b + n, a, n);
    memset(b + n + frame_at(400, 2), 0, n - frame_at(400, 2));
    ck_assert_int_eq(unwritten_shape(b, 2 * n, 0), 1);
    /* one cut short, then one with a sector missing, then one lost */
    memcpy(b, a, n);
    memset(b + frame_at(400, 3), 0, n - frame_at(400, 3));
    memcpy(b + n, a, n);
    memset(b + n + frame_at(400, 0) + 5, 0, UNWRITTEN_SECTOR);
    memset(b + 2 * n, 0, n);
    ck_assert_int_eq(unwritten_shape(b, 3 * n, 0), 1);
    /* a sector that did not land over a batch's start: zeros from it to
     * the sector's end (the batch at byte 3888 of its file, the sector
     * ending at 4096), the rest of its write unlocatable */
    memcpy(b, a, n);
    memset(b, 0, 4096 - 3888);
    ck_assert_int_eq(unwritten_shape(b, n, 3888), 1);
    /* the same zeros not reaching a sector boundary hide nothing a
     * torn write can leave: refused */
    ck_assert_int_eq(unwritten_shape(b, n, 3888 - 300), 0);
    /* a sector that did not land over the end of one batch and the start
     * of the next: the first intact before it, the second's header gone */
    memcpy(b, a, n);
    memcpy(b + n, a, n);
    memset(b + n - 100, 0, 100 + 60);
    ck_assert_int_eq(unwritten_shape(b, 2 * n, 4096 - (n + 40)), 1);
    /* the second's header gone with no sector boundary in its zeros */
    ck_assert_int_eq(unwritten_shape(b, 2 * n, 4096 - (n + 60) - 300), 0);
    /* all lost */
    memset(b, 0, 3 * n);
    ck_assert_int_eq(unwritten_shape(b, 3 * n, 0), 1);
    free(a);
    free(b);
}
END_TEST

/* A batch whose last byte is zero (its payloads end in zeros) with a flip
 * in a written byte: the old rule took it as a write cut short. */
START_TEST(test_flip_ending_in_zero_refused)
{
    size_t n;
    uint8_t *a = batch_of(400, 3, 0, &n);
    uint8_t *b = malloc(2 * n);
    ck_assert_uint_eq(a[n - 1], 0);
    /* a flip in frame 1's payload */
    memcpy(b, a, n);
    b[frame_at(400, 1) + BATCH_FRAME_SIZE + 50] ^= 0x10;
    ck_assert_int_eq(unwritten_shape(b, n, 0), 0);
    /* a flip of frame 0's checksum */
    memcpy(b, a, n);
    b[frame_at(400, 0)] ^= 0x01;
    ck_assert_int_eq(unwritten_shape(b, n, 0), 0);
    /* a flip of the header's batch checksum: every frame verifies */
    memcpy(b, a, n);
    b[BATCH_OFF_CHECKSUM + 2] ^= 0x80;
    ck_assert_int_eq(unwritten_shape(b, n, 0), 0);
    /* a flip of its length: the header declares more than is there */
    memcpy(b, a, n);
    b[BATCH_OFF_LENGTH + 1] ^= 0x04;
    ck_assert_int_eq(unwritten_shape(b, n, 0), 0);
    /* the same flip in frame 1, the batch followed by a lost write */
    memcpy(b, a, n);
    b[frame_at(400, 1) + BATCH_FRAME_SIZE + 50] ^= 0x10;
    memset(b + n, 0, n);
    ck_assert_int_eq(unwritten_shape(b, 2 * n, 0), 0);
    /* what stays indistinguishable: a flip in the last frame, the one
     * its trailing zeros cut (its checksum covers the whole frame) */
    memcpy(b, a, n);
    b[frame_at(400, 3) + BATCH_FRAME_SIZE + 50] ^= 0x10;
    ck_assert_int_eq(unwritten_shape(b, n, 0), 1);
    free(a);
    free(b);
}
END_TEST

/* A payload holding a zero run longer than a sector: a flip in another
 * frame is written damage, not a sector that did not land. */
START_TEST(test_flip_beside_zero_sector_refused)
{
    size_t n;
    uint8_t *a = batch_of(1400, 0, 1, &n);
    uint8_t *b = malloc(n);
    memcpy(b, a, n);
    ck_assert_int_eq(unwritten_shape(b, n, 0), 0); /* intact: not damaged */
    b[frame_at(1400, 2) + BATCH_FRAME_SIZE + 1300] ^= 0x02;
    ck_assert_int_eq(unwritten_shape(b, n, 0), 0);
    /* a flip inside the frame holding the zero run stays
     * indistinguishable from a sector of it that did not land */
    memcpy(b, a, n);
    b[frame_at(1400, 0) + BATCH_FRAME_SIZE + 1300] ^= 0x02;
    ck_assert_int_eq(unwritten_shape(b, n, 0), 1);
    /* a real missing sector in frame 2 is still one */
    memcpy(b, a, n);
    memset(b + frame_at(1400, 2) + BATCH_FRAME_SIZE + 1250, 0,
           UNWRITTEN_SECTOR);
    ck_assert_int_eq(unwritten_shape(b, n, 0), 1);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_zero_from)
{
    uint8_t r[16] = {1, 2, 3};
    ck_assert_int_eq(unwritten_zero_from(r, sizeof(r), 3), 1);
    ck_assert_int_eq(unwritten_zero_from(r, sizeof(r), 2), 0);
    ck_assert_int_eq(unwritten_zero_from(r, sizeof(r), 99), 1);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("data_unwritten");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_torn_shapes_accepted);
    tcase_add_test(tc, test_flip_ending_in_zero_refused);
    tcase_add_test(tc, test_flip_beside_zero_sector_refused);
    tcase_add_test(tc, test_zero_from);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
