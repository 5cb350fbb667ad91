/*
 * tests/bench/bench_pgroups_beat.c - what a data shard's partition groups
 * cost per link and per tick, with and without coalesced heartbeats:
 * G three-replica groups on three in-process nodes (tests/unit/beatnet.h:
 * real engines, production timeouts, primaries spread), idle except for
 * `busy` requests per tick on a rotating group. Each mode runs `ticks`
 * 10 ms ticks after a 60-tick warm-up and prints link frames/s and
 * bytes/s per directed link (simulated time), CPU per tick of the whole
 * three-node process (engines' ticks, message handling, beat encode and
 * decode) and the view changes seen (0 expected).
 * Usage: bench_pgroups_beat [groups] [ticks] [busy]   (not run by make check)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tests/unit/beatnet.h"

static double
cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
run(uint32_t groups, uint32_t ticks, uint32_t busy, int coalesce)
{
    struct bn *b;
    double t0 = cpu_s();
    if (bn_create(groups, coalesce, 7, &b) != 0) {
        fprintf(stderr, "bench_pgroups_beat: cannot create %u groups\n",
                groups);
        return 1;
    }
    double setup = cpu_s() - t0;
    uint32_t next = 0;
    for (uint32_t t = 0; t < 60; t++)
        bn_tick(b);
    struct bn_stats a, z;
    bn_stats(b, &a);
    t0 = cpu_s();
    for (uint32_t t = 0; t < ticks; t++) {
        for (uint32_t k = 0; k < busy; k++) {
            (void)bn_request(b, next, 1000 + t);
            next = (next + 1) % groups;
        }
        bn_tick(b);
    }
    double cpu = cpu_s() - t0;
    bn_stats(b, &z);
    double secs = ticks * 0.010;
    uint64_t fmax = 0, fsum = 0, bsum = 0;
    for (unsigned f = 0; f < BN_NODES; f++)
        for (unsigned to = 0; to < BN_NODES; to++) {
            if (f == to)
                continue;
            uint64_t d = z.frames[f][to] - a.frames[f][to];
            fsum += d;
            bsum += z.bytes[f][to] - a.bytes[f][to];
            if (d > fmax)
                fmax = d;
        }
    unsigned links = BN_NODES * (BN_NODES - 1);
    printf("%-11s groups %u ticks %u busy/tick %u: frames/s per link "
           "%.0f (max link %.0f), KiB/s per link %.1f, entries/s %.0f, "
           "CPU per tick %.3f ms (3 nodes; %.3f ms per node), "
           "view changes %llu, committed %llu, setup %.1f s\n",
           coalesce ? "coalesced" : "per-group", groups, ticks, busy,
           fsum / secs / links, fmax / secs, bsum / secs / links / 1024.0,
           (z.entries_out - a.entries_out) / secs, cpu * 1000.0 / ticks,
           cpu * 1000.0 / ticks / BN_NODES, (unsigned long long)z.view_changes,
           (unsigned long long)(z.committed - a.committed), setup);
    bn_destroy(b);
    return 0;
}

int
main(int argc, char **argv)
{
    uint32_t groups = argc > 1 ? (uint32_t)atol(argv[1]) : 10000;
    uint32_t ticks = argc > 2 ? (uint32_t)atol(argv[2]) : 500;
    uint32_t busy = argc > 3 ? (uint32_t)atol(argv[3]) : 0;
    if (groups == 0 || ticks == 0) {
        fprintf(stderr, "usage: bench_pgroups_beat [groups >= 1] "
                        "[ticks >= 1] [busy requests per tick]\n");
        return 1;
    }
    if (run(groups, ticks, busy, 0) != 0 || run(groups, ticks, busy, 1) != 0)
        return 1;
    return 0;
}
