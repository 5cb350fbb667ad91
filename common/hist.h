/*
 * common/hist.h - a log-linear latency histogram (HDR-style).
 *
 * Role: records u64 values (nanoseconds, by convention) into fixed
 * buckets: values below 2^VS_HIST_SUB_BITS exactly, above that 2^SUB
 * linear sub-buckets per power of two, so every reported value is within
 * 1/2^SUB (0.8%) above the recorded one and the full u64 range is
 * covered with no allocation. Histograms of several recorders merge by
 * adding counts, so a percentile of a merged histogram is the percentile
 * of all samples pooled (never an average of per-recorder percentiles).
 * Debian ships no C HDR histogram library, hence this module.
 * Invariants: sum of counts == count; min <= max when count > 0.
 * Not thread-safe: one recorder per histogram, merge after joining.
 * Callers: any process (vstream-bench records per actor and merges).
 */
#ifndef VS_COMMON_HIST_H
#define VS_COMMON_HIST_H

#include <stdint.h>

#define VS_HIST_SUB_BITS 7u
#define VS_HIST_SUB      (1u << VS_HIST_SUB_BITS)
/* Exact values 0..SUB-1, then one row of SUB per msb position SUB..63. */
#define VS_HIST_BUCKETS ((64u - VS_HIST_SUB_BITS + 1u) * VS_HIST_SUB)

struct vs_hist {
    uint64_t count;
    uint64_t min, max;
    double sum; /* for the mean; doubles do not overflow on long runs */
    uint64_t counts[VS_HIST_BUCKETS];
};

void vs_hist_init(struct vs_hist *h);
void vs_hist_record(struct vs_hist *h, uint64_t v);
/* Adds every sample of src into dst. */
void vs_hist_merge(struct vs_hist *dst, const struct vs_hist *src);
/* The value at quantile q in [0, 1] (q = 0.99 is p99): the highest value
 * equivalent to the bucket holding the sample of rank ceil(q * count),
 * clamped to [min, max]. 0 when the histogram is empty. */
uint64_t vs_hist_quantile(const struct vs_hist *h, double q);
double vs_hist_mean(const struct vs_hist *h);

/* Bucket arithmetic, exposed for tests: the bucket of v, and the lowest
 * and highest value a bucket holds. */
uint32_t vs_hist_bucket(uint64_t v);
uint64_t vs_hist_bucket_low(uint32_t b);
uint64_t vs_hist_bucket_high(uint32_t b);

#endif /* VS_COMMON_HIST_H */
