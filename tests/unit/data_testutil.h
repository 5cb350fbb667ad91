/*
 * tests/unit/data_testutil.h - fixtures for the shard/data tests: temp
 * dirs, a deterministic PRNG, random client batches, file surgery.
 * Test code only (static functions; each test program includes it once).
 */
#ifndef VS_TESTS_DATA_TESTUTIL_H
#define VS_TESTS_DATA_TESTUTIL_H

#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shard/data/batch.h"

static inline int
dt_rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline void
dt_rm_rf(const char *path)
{
    nftw(path, dt_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* /tmp/vs-data-XXXXXX; `parts` gets <dir>/partitions. */
static inline void
dt_mkdtemp(char *out, size_t cap, char *parts, size_t pcap)
{
    snprintf(out, cap, "/tmp/vs-data-XXXXXX");
    if (!mkdtemp(out))
        abort();
    snprintf(parts, pcap, "%s/partitions", out);
}

static inline uint64_t
dt_rand(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A client batch of n messages; payload i has length plen[i] and bytes
 * derived from (seed, i); user headers of hlen[i] bytes. ids = 1000+i. */
static inline uint8_t *
dt_batch(uint64_t seed, uint32_t n, const uint32_t *plen, const uint32_t *hlen,
         size_t *len)
{
    size_t cap = BATCH_HEADER_SIZE;
    const uint8_t **pl = calloc(n, sizeof(*pl));
    const uint8_t **hd = calloc(n, sizeof(*hd));
    uint64_t *ids = calloc(n, sizeof(*ids));
    uint8_t **own = calloc(n, sizeof(*own));
    for (uint32_t i = 0; i < n; i++) {
        uint32_t t = plen[i] + hlen[i];
        own[i] = malloc(t ? t : 1);
        uint64_t s = seed * 1000003u + i;
        for (uint32_t k = 0; k < t; k++)
            own[i][k] = (uint8_t)(dt_rand(&s) & 0xFF);
        pl[i] = own[i];
        hd[i] = own[i] + plen[i];
        ids[i] = 1000 + i;
        cap += BATCH_FRAME_SIZE + t;
    }
    uint8_t *b = malloc(cap);
    *len = batch_build(b, cap, 42, n, pl, plen, hd, hlen, ids);
    for (uint32_t i = 0; i < n; i++)
        free(own[i]);
    free(own);
    free(pl);
    free(hd);
    free(ids);
    return b;
}

/* A random batch: 1..maxn messages of 0..maxp payload bytes, 0..64 header
 * bytes. */
static inline uint8_t *
dt_rand_batch(uint64_t *rng, uint32_t maxn, uint32_t maxp, size_t *len,
              uint32_t *count)
{
    uint32_t n = 1 + (uint32_t)(dt_rand(rng) % maxn);
    uint32_t *pl = calloc(n, sizeof(*pl));
    uint32_t *hl = calloc(n, sizeof(*hl));
    for (uint32_t i = 0; i < n; i++) {
        pl[i] = (uint32_t)(dt_rand(rng) % (maxp + 1));
        hl[i] = (uint32_t)(dt_rand(rng) % 65);
    }
    uint8_t *b = dt_batch(dt_rand(rng), n, pl, hl, len);
    free(pl);
    free(hl);
    *count = n;
    return b;
}

static inline uint8_t *
dt_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n)
        abort();
    fclose(f);
    *len = (size_t)n;
    return b;
}

static inline void
dt_write_file(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (len && fwrite(buf, 1, len, f) != len)
        abort();
    fclose(f);
}

/* Zeroes bytes [from, to) of the file (to within it), as a write that
 * never landed leaves them. */
static inline void
dt_zero_range(const char *path, uint64_t from, uint64_t to)
{
    size_t n = 0;
    uint8_t *b = dt_read_file(path, &n);
    if (b == NULL || to > n || from > to)
        abort();
    memset(b + from, 0, (size_t)(to - from));
    dt_write_file(path, b, n);
    free(b);
}

static inline off_t
dt_file_size(const char *path)
{
    struct stat st;
    if (stat(path, &st) == -1)
        return -1;
    return st.st_size;
}

static inline int
dt_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

#endif /* VS_TESTS_DATA_TESTUTIL_H */
