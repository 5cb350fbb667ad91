/*
 * tests/bench/bench_commit.c - metadata ops/s and latency of shard 0's
 * one-replica commit path, in-process (shard/zero/commit.h): one client,
 * requests forwarded as FWD_PROPOSE frames, each answered after WAL
 * append + fsync, apply to both left-right instances and publish.
 * Alternates CreateStream / DeleteStream so capacities never fill.
 * Usage: bench_commit [ops] [--no-fsync]   (not run by make check)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "shard/storage/io.h"
#include "tests/unit/commit_fixture.h"

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000;
    int no_fsync = argc > 2 && strcmp(argv[2], "--no-fsync") == 0;
    if (n <= 0 || n > 10000000)
        n = 2000;
    struct sio_fault flt;
    sio_fault_init(&flt, 1);
    struct fx f;
    char err[512];
    fx_init(&f);
    /* production journal geometry: 1024 slots, margin 64 */
    fx_config(&f, "wal_slots", "1024");
    fx_config(&f, "checkpoint_margin", "64");
    f.io = no_fsync ? &flt.io : NULL;
    if (fx_boot(&f, err, sizeof(err)) != 0 ||
        commit_genesis(f.c, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_commit: %s\n", err);
        return 1;
    }
    struct vs_u128 client = {42, 42};
    fx_register(&f, client, 0);
    uint64_t session = fx_last(&f)->h.session;
    uint64_t *lat = vs_xmalloc((size_t)n * sizeof(*lat));
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    uint64_t t0 = vs_monotonic_ns();
    for (long i = 0; i < n; i++) {
        fx_clear_sent(&f);
        if (i % 2 == 0) {
            meta_op_init(op, VS_OP_CREATE_STREAM);
            meta_op_set_name(op, "bench", 5);
        } else {
            meta_op_init(op, VS_OP_DELETE_STREAM);
            meta_ident_name(&op->stream, "bench", 5);
        }
        uint64_t a = vs_monotonic_ns();
        if (fx_propose(&f, client, session, (uint64_t)i + 1, 0, op) != 0 ||
            f.nsent != 1 || vs_load_u32(fx_last(&f)->frame + 256) != 0) {
            fprintf(stderr, "bench_commit: op %ld failed\n", i);
            return 1;
        }
        lat[i] = vs_monotonic_ns() - a;
    }
    uint64_t total = vs_monotonic_ns() - t0;
    qsort(lat, (size_t)n, sizeof(*lat), cmp_u64);
    printf("commit path, 1 client, in-process, %s: %ld ops in %.3f s = "
           "%.0f ops/s; latency p50 %.1f us, p99 %.1f us; checkpoints %llu\n",
           no_fsync ? "fsync stubbed" : "real fsync", n, total / 1e9,
           n / (total / 1e9), lat[n / 2] / 1e3, lat[(n * 99) / 100] / 1e3,
           (unsigned long long)commit_stats(f.c)->checkpoints);
    free(op);
    free(lat);
    fx_fini(&f);
    return 0;
}
