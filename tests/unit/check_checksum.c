/*
 * tests/unit/check_checksum.c - checksum known answers and seal coverage.
 *
 * Known answers come from outside the code under test:
 * shared/reference/iggy-client-protocol.md §5.6 (XXH3-64 of the empty input)
 * and iggy-client-protocol-2.md §10 (XXH32 vectors).
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"

START_TEST(test_known_answers)
{
    ck_assert_uint_eq(vs_xxh3_64("", 0), 0x2d06800538d394c2ull);
    struct vs_u128 c = vs_checksum("", 0);
    ck_assert_uint_eq(c.lo, 0x2d06800538d394c2ull);
    ck_assert_uint_eq(c.hi, 0);
    ck_assert_uint_eq(vs_xxh32("abc", 3), 0x32D153FFu);
    ck_assert_uint_eq(vs_xxh32("", 0), 0x02CC5D05u);
    static const uint8_t four_zeros[4] = {0};
    ck_assert_uint_eq(vs_xxh32(four_zeros, 4), 0x08D6D969u);
}
END_TEST

static void
fill(void *p, size_t n, unsigned seed)
{
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(seed * 131u + i * 7u + 1u);
}

/* A flip of any bit of any byte of a sealed frame fails verification. */
START_TEST(test_seal_detects_every_flip)
{
    struct vs_header h;
    fill(&h, sizeof(h), 3);
    vs_frame_seal(&h);
    ck_assert(vs_frame_verify(&h));
    for (size_t i = 0; i < sizeof(h); i++) {
        for (int bit = 0; bit < 8; bit++) {
            struct vs_header t = h;
            ((uint8_t *)&t)[i] ^= (uint8_t)(1u << bit);
            ck_assert_msg(!vs_frame_verify(&t), "flip byte %zu bit %d", i, bit);
        }
    }
}
END_TEST

/* Identity ignores `view` (retransmits re-stamp it) and nothing else. */
START_TEST(test_prepare_identity)
{
    struct vs_hdr_prepare p;
    uint8_t body[100];
    fill(&p, sizeof(p), 5);
    fill(body, sizeof(body), 9);
    vs_prepare_seal(&p, body, sizeof(body));
    ck_assert(vs_prepare_verify_identity(&p));
    ck_assert(vs_body_verify((const struct vs_header *)&p, body, sizeof(body)));
    struct vs_hdr_prepare t = p;
    t.f.view += 7;
    ck_assert(vs_prepare_verify_identity(&t));
    for (size_t i = 0; i < sizeof(p); i++) {
        if (i >= 52 && i < 56)
            continue; /* view */
        for (int bit = 0; bit < 8; bit++) {
            t = p;
            ((uint8_t *)&t)[i] ^= (uint8_t)(1u << bit);
            ck_assert_msg(!vs_prepare_verify_identity(&t),
                          "flip byte %zu bit %d", i, bit);
        }
    }
    for (size_t i = 0; i < sizeof(body); i++) {
        body[i] ^= 0x10;
        ck_assert(
            !vs_body_verify((const struct vs_header *)&p, body, sizeof(body)));
        body[i] ^= 0x10;
    }
    /* an unsealed body (checksum_body 0) is accepted as is */
    memset(&t.f.checksum_body, 0, sizeof(t.f.checksum_body));
    ck_assert(vs_body_verify((const struct vs_header *)&t, body, 3));
}
END_TEST

START_TEST(test_stream_matches_one_shot)
{
    uint8_t data[5000];
    fill(data, sizeof(data), 11);
    for (size_t split = 0; split <= sizeof(data); split += 499) {
        struct vs_xxh3_stream s;
        vs_xxh3_stream_init(&s);
        vs_xxh3_stream_update(&s, data, split);
        vs_xxh3_stream_update(&s, data + split, sizeof(data) - split);
        ck_assert_uint_eq(vs_xxh3_stream_digest(&s),
                          vs_xxh3_64(data, sizeof(data)));
    }
    struct vs_xxh3_stream e;
    vs_xxh3_stream_init(&e);
    ck_assert_uint_eq(vs_xxh3_stream_digest(&e), 0x2d06800538d394c2ull);
}
END_TEST

/* Format 2: checksum_view (bytes 248..255) is XXH3-64 of header bytes
 * [0,16) ++ [52,56) with the two top bits set; the identity leaves out
 * view and checksum_view and nothing else; the pair covers every byte;
 * a re-stamped view needs a re-stamped checksum_view. Golden value
 * pinned for a fixed header. */
START_TEST(test_prepare_view_checksum_v2)
{
    struct vs_hdr_prepare p;
    memset(&p, 0, sizeof(p));
    p.f.size = VS_HEADER_SIZE + 3;
    p.f.view = 0x01020304u;
    p.f.release = VS_WIRE_FORMAT_V2;
    p.f.command = VS_CMD_PREPARE;
    p.op = 42;
    p.timestamp = 1000;
    p.group = VS_METADATA_GROUP;
    const uint8_t body[3] = {'a', 'b', 'c'};
    vs_prepare_seal(&p, body, sizeof(body));
    ck_assert(vs_prepare_verify_identity(&p));
    ck_assert(vs_prepare_verify_view(&p));
    uint8_t in[20];
    memcpy(in, &p, 16);
    memcpy(in + 16, (const uint8_t *)&p + 52, 4);
    uint64_t want = XXH3_64bits(in, sizeof(in)) | 0xC000000000000000ull;
    ck_assert_uint_eq(p.checksum_view, want);
    uint64_t at248;
    memcpy(&at248, (const uint8_t *)&p + 248, 8);
    ck_assert_uint_eq(at248, want);
    ck_assert_uint_eq(((const uint8_t *)&p)[255] & 0xC0, 0xC0);
    ck_assert_uint_eq(p.f.checksum.lo, UINT64_C(0x9fad3001a2130c93));
    ck_assert_uint_eq(p.checksum_view, UINT64_C(0xd9eacf466bbe15f7));
    /* every single-bit flip fails identity or view */
    for (size_t i = 0; i < sizeof(p); i++) {
        for (int bit = 0; bit < 8; bit++) {
            struct vs_hdr_prepare t = p;
            ((uint8_t *)&t)[i] ^= (uint8_t)(1u << bit);
            ck_assert_msg(
                !(vs_prepare_verify_identity(&t) && vs_prepare_verify_view(&t)),
                "flip byte %zu bit %d", i, bit);
        }
    }
    /* a re-stamped view keeps the identity, needs seal_view */
    struct vs_hdr_prepare t = p;
    t.f.view = 9;
    ck_assert(vs_prepare_verify_identity(&t));
    ck_assert(!vs_prepare_verify_view(&t));
    vs_prepare_seal_view(&t);
    ck_assert(vs_prepare_verify_view(&t));
    ck_assert(vs_u128_eq(t.f.checksum, p.f.checksum));
    /* format 1: bytes 248..255 are reserved and under the identity */
    struct vs_hdr_prepare v1 = p;
    v1.f.release = VS_WIRE_FORMAT_V1;
    v1.checksum_view = 0;
    vs_prepare_seal(&v1, body, sizeof(body));
    ck_assert_uint_eq(v1.checksum_view, 0);
    ck_assert(vs_prepare_verify_view(&v1));
    v1.checksum_view = 1;
    ck_assert(!vs_prepare_verify_identity(&v1));
}
END_TEST

static Suite *
checksum_suite(void)
{
    Suite *s = suite_create("checksum");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_known_answers);
    tcase_add_test(tc, test_seal_detects_every_flip);
    tcase_add_test(tc, test_prepare_identity);
    tcase_add_test(tc, test_prepare_view_checksum_v2);
    tcase_add_test(tc, test_stream_matches_one_shot);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(checksum_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
