/*
 * tests/unit/check_hist.c - the log-linear histogram (common/hist.c):
 * bucket edges over the whole u64 range, relative error, quantiles
 * against sorted samples, merging equals pooling, empty and extreme
 * inputs.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"

START_TEST(test_bucket_edges)
{
    /* exact region */
    for (uint64_t v = 0; v < VS_HIST_SUB; v++) {
        ck_assert_uint_eq(vs_hist_bucket(v), v);
        ck_assert_uint_eq(vs_hist_bucket_low((uint32_t)v), v);
        ck_assert_uint_eq(vs_hist_bucket_high((uint32_t)v), v);
    }
    /* every bucket: its low and high map back to it, buckets are
     * contiguous and increasing, the last one ends at UINT64_MAX */
    uint64_t prev_high = VS_HIST_SUB - 1;
    for (uint32_t b = VS_HIST_SUB; b < VS_HIST_BUCKETS; b++) {
        uint64_t lo = vs_hist_bucket_low(b), hi = vs_hist_bucket_high(b);
        ck_assert_uint_eq(lo, prev_high + 1);
        ck_assert_uint_le(lo, hi);
        ck_assert_uint_eq(vs_hist_bucket(lo), b);
        ck_assert_uint_eq(vs_hist_bucket(hi), b);
        /* width / low <= 1 / SUB */
        ck_assert((double)(hi - lo) / (double)lo <= 1.0 / VS_HIST_SUB);
        prev_high = hi;
    }
    ck_assert_uint_eq(prev_high, UINT64_MAX);
    ck_assert_uint_eq(vs_hist_bucket(UINT64_MAX), VS_HIST_BUCKETS - 1);
}
END_TEST

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t
rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

START_TEST(test_quantiles_match_sorted)
{
    enum { N = 20000 };
    static uint64_t v[N];
    struct vs_hist *h = malloc(sizeof(*h));
    uint64_t s = 88172645463325252ull;
    static const double qs[] = {0.5, 0.9, 0.99, 0.999, 0.9999};
    ck_assert_ptr_nonnull(h);
    vs_hist_init(h);
    for (int i = 0; i < N; i++) {
        /* log-spread values from 1 ns to ~1 s */
        v[i] = (rng(&s) % 1000) * (UINT64_C(1) << (rng(&s) % 20)) + 1;
        vs_hist_record(h, v[i]);
    }
    qsort(v, N, sizeof v[0], cmp_u64);
    ck_assert_uint_eq(h->count, N);
    ck_assert_uint_eq(h->min, v[0]);
    ck_assert_uint_eq(h->max, v[N - 1]);
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        size_t rank = (size_t)(qs[i] * N + 0.999999);
        uint64_t exact = v[rank - 1], got = vs_hist_quantile(h, qs[i]);
        ck_assert_uint_ge(got, exact);
        ck_assert((double)(got - exact) <= (double)exact / VS_HIST_SUB);
    }
    ck_assert_uint_eq(vs_hist_quantile(h, 0), v[0]);
    ck_assert_uint_eq(vs_hist_quantile(h, 1), v[N - 1]);
    free(h);
}
END_TEST

START_TEST(test_merge_is_pooling)
{
    struct vs_hist *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
    struct vs_hist *all = malloc(sizeof(*all));
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(all);
    vs_hist_init(a);
    vs_hist_init(b);
    vs_hist_init(all);
    /* a: 99 fast samples, b: 1 slow one. The mean of per-recorder p99s
     * would be ~500 us; the pooled p99 is the fast value. */
    for (int i = 0; i < 99; i++) {
        vs_hist_record(a, 1000);
        vs_hist_record(all, 1000);
    }
    vs_hist_record(b, 1000000);
    vs_hist_record(all, 1000000);
    vs_hist_merge(a, b);
    ck_assert_uint_eq(a->count, 100);
    ck_assert_mem_eq(a->counts, all->counts, sizeof(a->counts));
    ck_assert_uint_eq(a->min, 1000);
    ck_assert_uint_eq(a->max, 1000000);
    ck_assert_uint_le(vs_hist_quantile(a, 0.99), 1000 + 1000 / 128);
    ck_assert_uint_eq(vs_hist_quantile(a, 0.999), 1000000);
    /* merging an empty histogram changes nothing, into an empty copies */
    vs_hist_init(b);
    vs_hist_merge(a, b);
    ck_assert_uint_eq(a->count, 100);
    vs_hist_merge(b, a);
    ck_assert_uint_eq(b->min, 1000);
    ck_assert_uint_eq(b->max, 1000000);
    ck_assert_uint_eq(b->count, 100);
    free(a);
    free(b);
    free(all);
}
END_TEST

START_TEST(test_empty_and_extremes)
{
    struct vs_hist *h = malloc(sizeof(*h));
    ck_assert_ptr_nonnull(h);
    vs_hist_init(h);
    ck_assert_uint_eq(vs_hist_quantile(h, 0.5), 0);
    ck_assert(vs_hist_mean(h) == 0.0);
    vs_hist_record(h, UINT64_MAX);
    vs_hist_record(h, 0);
    ck_assert_uint_eq(h->min, 0);
    ck_assert_uint_eq(h->max, UINT64_MAX);
    ck_assert_uint_eq(vs_hist_quantile(h, 0.5), 0);
    ck_assert_uint_eq(vs_hist_quantile(h, 0.51), UINT64_MAX);
    ck_assert_uint_eq(vs_hist_quantile(h, -1), 0);
    ck_assert_uint_eq(vs_hist_quantile(h, 2), UINT64_MAX);
    /* one sample: every quantile is that sample (clamped to min/max) */
    vs_hist_init(h);
    vs_hist_record(h, 123457);
    ck_assert_uint_eq(vs_hist_quantile(h, 0.5), 123457);
    ck_assert_uint_eq(vs_hist_quantile(h, 0.9999), 123457);
    ck_assert(vs_hist_mean(h) == 123457.0);
    free(h);
}
END_TEST

static Suite *
hist_suite(void)
{
    Suite *s = suite_create("hist");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_bucket_edges);
    tcase_add_test(tc, test_quantiles_match_sorted);
    tcase_add_test(tc, test_merge_is_pooling);
    tcase_add_test(tc, test_empty_and_extremes);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(hist_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
