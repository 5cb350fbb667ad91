/*
 * tests/bench/bench_part_create.c - what creating a topic's partitions
 * costs the partition engine on this disk (not run by make check): N
 * partitions (replicated members: their group superblock too) created one
 * by one (part_open with create = 1, each with its own fsyncs) against
 * the same N made together (part_create_many, then part_open of each),
 * interleaved rounds, ms per partition of each and their ratio.
 *
 * Usage: bench_part_create [DIR [PARTITIONS [ROUNDS]]]
 *        (default: a /tmp dir, 1000 partitions, 3 rounds)
 * Bench code only: it reads the clock, the engine never does.
 */
#include "config.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shard/data/partition.h"
#include "shard/storage/io.h"

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(path);
}

/* Creates and opens n partitions under dir; seconds taken. */
static double
round_of(struct vs_sio *io, const char *dir, uint32_t n, int many, uint64_t op)
{
    struct part_create *v = calloc(n, sizeof(*v));
    if (v == NULL)
        exit(1);
    for (uint32_t i = 0; i < n; i++) {
        v[i].id = (struct part_id){1, 1, i, op};
        v[i].replicated = 1;
    }
    double t0 = now_s();
    if (many && part_create_many(io, dir, v, n) != 0) {
        fprintf(stderr, "bench_part_create: part_create_many failed\n");
        exit(1);
    }
    for (uint32_t i = 0; i < n; i++) {
        struct part_opts o;
        part_opts_default(&o);
        o.replicated = 1;
        o.created_now = v[i].made;
        struct vs_part *p = NULL;
        struct part_verdict vd;
        if (part_open(io, dir, &v[i].id, &o, 1, 0, &p, &vd) != 0 ||
            part_close(p) != 0) {
            fprintf(stderr, "bench_part_create: open %u failed\n", i);
            exit(1);
        }
    }
    double dt = now_s() - t0;
    free(v);
    return dt;
}

int
main(int argc, char **argv)
{
    char tmpl[] = "/tmp/bench_part_create_XXXXXX";
    const char *base = argc > 1 ? argv[1] : mkdtemp(tmpl);
    uint32_t n = argc > 2 ? (uint32_t)atol(argv[2]) : 1000;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    if (base == NULL || n == 0 || rounds <= 0) {
        fprintf(stderr, "usage: bench_part_create [DIR [PARTITIONS "
                        "[ROUNDS]]]\n");
        return 2;
    }
    struct vs_sio io;
    sio_init_real(&io);
    double one[16], many[16];
    if (rounds > 16)
        rounds = 16;
    for (int r = 0; r < rounds; r++) {
        char dir[512];
        for (int m = 0; m < 2; m++) {
            snprintf(dir, sizeof(dir), "%s/r%d_%d", base, r, m);
            double dt = round_of(&io, dir, n, m, (uint64_t)(r * 2 + m + 1));
            (m ? many : one)[r] = dt;
            printf("round %d %-9s %u partitions: %.2f ms per partition\n", r,
                   m ? "together" : "one by one", n, dt * 1000.0 / n);
            fflush(stdout);
            nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        }
    }
    double so = 0, sm = 0;
    for (int r = 0; r < rounds; r++) {
        so += one[r];
        sm += many[r];
    }
    printf("mean: one by one %.2f ms, together %.2f ms per partition "
           "(%.2fx)\n",
           so * 1000.0 / n / rounds, sm * 1000.0 / n / rounds,
           sm > 0 ? so / sm : 0.0);
    if (argc <= 1)
        rmdir(base);
    return 0;
}
