/*
 * common/xxh3_simd.h - XXH3-64 variants built for vector targets, and
 * the run-time choice between them (see common/xxh3_simd.c).
 *
 * vs_xxh3_64 (common/checksum.h) calls the variant vs_xxh3_impl() names:
 * AVX-512 when the CPU and OS support AVX-512F, else AVX2, else the
 * library's baseline build. All variants return the same value for the
 * same bytes (tests/unit/check_checksum.c compares them over every
 * length up to 4 KiB and at unaligned offsets).
 * Callers: common/checksum.c, tests; any process.
 */
#ifndef VS_COMMON_XXH3_SIMD_H
#define VS_COMMON_XXH3_SIMD_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VS_XXH3_SIMD 1
uint64_t vs_xxh3_64_avx2(const void *data, size_t len);
uint64_t vs_xxh3_64_avx512(const void *data, size_t len);
#else
#define VS_XXH3_SIMD 0
#endif

enum vs_xxh3_variant {
    VS_XXH3_BASELINE = 0, /* the library (SSE2 on x86-64) */
    VS_XXH3_AVX2 = 1,
    VS_XXH3_AVX512 = 2,
};

/* The variant vs_xxh3_64 uses on this CPU (chosen once, before main). */
enum vs_xxh3_variant vs_xxh3_impl(void);
/* Its name: "baseline", "avx2" or "avx512". */
const char *vs_xxh3_impl_name(void);
/* 1 if this build has the variant and the CPU can run it. */
int vs_xxh3_variant_usable(enum vs_xxh3_variant v);
/* XXH3-64 with a given usable variant (tests and benchmarks). */
uint64_t vs_xxh3_64_with(enum vs_xxh3_variant v, const void *data, size_t len);

#endif /* VS_COMMON_XXH3_SIMD_H */
