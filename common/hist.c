/*
 * common/hist.c - log-linear histogram; see hist.h. Pure code, any
 * process.
 */
#include "config.h"

#include <string.h>

#include "common/hist.h"

void
vs_hist_init(struct vs_hist *h)
{
    memset(h, 0, sizeof(*h));
}

uint32_t
vs_hist_bucket(uint64_t v)
{
    if (v < VS_HIST_SUB)
        return (uint32_t)v;
    uint32_t msb = 63u - (uint32_t)__builtin_clzll(v);
    uint32_t shift = msb - VS_HIST_SUB_BITS;
    return (shift + 1u) * VS_HIST_SUB + (uint32_t)((v >> shift) - VS_HIST_SUB);
}

uint64_t
vs_hist_bucket_low(uint32_t b)
{
    if (b < VS_HIST_SUB)
        return b;
    uint32_t shift = b / VS_HIST_SUB - 1u;
    return ((uint64_t)(b % VS_HIST_SUB) + VS_HIST_SUB) << shift;
}

uint64_t
vs_hist_bucket_high(uint32_t b)
{
    if (b < VS_HIST_SUB)
        return b;
    uint32_t shift = b / VS_HIST_SUB - 1u;
    return vs_hist_bucket_low(b) + ((UINT64_C(1) << shift) - 1u);
}

void
vs_hist_record(struct vs_hist *h, uint64_t v)
{
    if (h->count == 0 || v < h->min)
        h->min = v;
    if (h->count == 0 || v > h->max)
        h->max = v;
    h->count++;
    h->sum += (double)v;
    h->counts[vs_hist_bucket(v)]++;
}

void
vs_hist_merge(struct vs_hist *dst, const struct vs_hist *src)
{
    if (src->count == 0)
        return;
    if (dst->count == 0 || src->min < dst->min)
        dst->min = src->min;
    if (dst->count == 0 || src->max > dst->max)
        dst->max = src->max;
    dst->count += src->count;
    dst->sum += src->sum;
    for (uint32_t i = 0; i < VS_HIST_BUCKETS; i++)
        dst->counts[i] += src->counts[i];
}

uint64_t
vs_hist_quantile(const struct vs_hist *h, double q)
{
    if (h->count == 0)
        return 0;
    if (q <= 0)
        return h->min;
    if (q >= 1)
        return h->max;
    double r = q * (double)h->count;
    uint64_t rank = (uint64_t)r;
    if ((double)rank < r)
        rank++;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (uint32_t b = 0; b < VS_HIST_BUCKETS; b++) {
        seen += h->counts[b];
        if (seen >= rank) {
            uint64_t v = vs_hist_bucket_high(b);
            if (v > h->max)
                v = h->max;
            if (v < h->min)
                v = h->min;
            return v;
        }
    }
    return h->max;
}

double
vs_hist_mean(const struct vs_hist *h)
{
    return h->count ? h->sum / (double)h->count : 0.0;
}
