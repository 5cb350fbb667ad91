/*
 * common/xxh3_simd512.c - XXH3-64 (seed 0) compiled for AVX-512; the
 * AVX-512 half of common/xxh3_simd.h (one xxHash inline expansion per
 * file: the header guards allow one per translation unit).
 * Invariants: called only when the CPU and OS support AVX-512F. Pure;
 * any process.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "common/xxh3_simd.h"

#if VS_XXH3_SIMD

#pragma GCC push_options
#pragma GCC target("avx512f")
#define XXH_INLINE_ALL
#include <xxhash.h>
uint64_t
vs_xxh3_64_avx512(const void *data, size_t len)
{
    return (uint64_t)XXH3_64bits(data, len);
}
#pragma GCC pop_options

#endif /* VS_XXH3_SIMD */
