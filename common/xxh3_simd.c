/*
 * common/xxh3_simd.c - XXH3-64 (seed 0) compiled for AVX2.
 *
 * Role: Debian's libxxhash is built for the baseline x86-64 (SSE2). This
 * file inlines the same xxHash implementation (XXH_INLINE_ALL, the
 * installed header, so the results are bit-identical) under the AVX2
 * target, common/xxh3_simd512.c under AVX-512, so that common/checksum.c
 * can pick the fastest one the CPU and the OS support at run time
 * (__builtin_cpu_supports). Only
 * GCC on x86-64 builds the vector variants (clang has no per-region
 * target pragma that defines __AVX2__); elsewhere the variants are
 * absent and VS_XXH3_SIMD is 0.
 * Invariants: never called on a CPU without the target's features (the
 * dispatcher checks them). Pure; any process.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "common/xxh3_simd.h"

#if VS_XXH3_SIMD

#pragma GCC push_options
#pragma GCC target("avx2")
#define XXH_INLINE_ALL
#include <xxhash.h>
uint64_t
vs_xxh3_64_avx2(const void *data, size_t len)
{
    return (uint64_t)XXH3_64bits(data, len);
}
#pragma GCC pop_options

#endif /* VS_XXH3_SIMD */
