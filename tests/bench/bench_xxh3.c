/*
 * tests/bench/bench_xxh3.c - XXH3-64 throughput of each variant this CPU
 * can run (common/xxh3_simd.h) at 64 B, 1 KB, 16 KB and 1 MiB.
 * Usage: bench_xxh3 [MiB per size, default 2000]. Not run by make check;
 * the numbers are reported, never asserted.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/xxh3_simd.h"

int
main(int argc, char **argv)
{
    static const size_t sizes[] = {64, 1000, 16384, 1u << 20};
    static const char *const names[] = {"baseline", "avx2", "avx512"};
    uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000;
    uint8_t *buf = malloc((1u << 20) + 4096);
    uint64_t sink = 0;
    if (buf == NULL || mib == 0)
        return 1;
    for (size_t i = 0; i < (1u << 20) + 4096; i++)
        buf[i] = (uint8_t)(i * 131u);
    printf("chosen: %s\n", vs_xxh3_impl_name());
    for (int v = VS_XXH3_BASELINE; v <= VS_XXH3_AVX512; v++) {
        if (!vs_xxh3_variant_usable((enum vs_xxh3_variant)v))
            continue;
        printf("%-8s", names[v]);
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            uint64_t n = (mib << 20) / sizes[s], t0 = vs_monotonic_ns();
            for (uint64_t i = 0; i < n; i++)
                sink += vs_xxh3_64_with((enum vs_xxh3_variant)v,
                                        buf + (i & 4095), sizes[s]);
            double secs = (double)(vs_monotonic_ns() - t0) / 1e9;
            printf("  %7zu B: %6.1f GB/s", sizes[s],
                   (double)n * (double)sizes[s] / 1e9 / secs);
        }
        printf("\n");
    }
    free(buf);
    return sink == 42 ? 2 : 0; /* keeps the loop from being elided */
}
