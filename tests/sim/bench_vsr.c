/*
 * tests/sim/bench_vsr.c - micro-benchmark of the VSR engine alone.
 *
 * Role: measures the engine's own cost per op, with no I/O: the one-replica
 * path (request -> journal append -> durable -> commit -> applied -> reply)
 * and the three-replica normal path through the in-memory harness. Prints
 * ops/s; not run by make check (noinst_PROGRAMS). Usage: bench_vsr [ops]
 * Callers: a developer, by hand.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/mem.h"
#include "shard/vsr/engine.h"
#include "tests/sim/sim_net.h"

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
bench_solo(uint64_t ops, uint32_t body_len)
{
    struct vs_vsr_options o;
    sim_default_options(&o, 1);
    o.journal_slots = 1024;
    o.pipeline_max = 8;
    o.body_max = 1u << 20;
    struct vs_vsr *v = NULL;
    if (vsr_create(&o, &v, NULL, 0) != 0)
        return -1;
    uint8_t *body = vs_xcalloc(1, body_len ? body_len : 1);
    struct vs_hdr_request req;
    memset(&req, 0, sizeof(req));
    req.f.command = VS_CMD_REQUEST;
    req.f.size = VS_HEADER_SIZE + body_len;
    req.operation = VS_OP_CREATE_STREAM;
    uint64_t out[2] = {0, 0};
    double t0 = now_s();
    for (uint64_t k = 1; k <= ops; k++) {
        req.client.lo = k;
        req.request = 1;
        if (vsr_on_request(v, &req, body, body_len, k) != 0)
            return -1;
        struct vs_vsr_action a;
        while (vsr_pop(v, &a)) {
            if (a.kind == VSR_ACT_JOURNAL_APPEND) {
                vsr_on_journal_durable(v, a.op, a.frame->f.checksum);
            } else if (a.kind == VSR_ACT_COMMIT) {
                out[0] = a.op;
                vsr_on_commit_applied(v, a.op, out, sizeof(out));
            } else if (a.kind == VSR_ACT_SUPERBLOCK_WRITE) {
                vsr_on_superblock_durable(v, &a.persist);
            }
        }
        if (k % 900 == 0) { /* checkpoint so the journal never fills */
            struct vs_u128 c = {k, 0};
            vsr_checkpoint(v, vsr_commit_min(v), c); /* drained next op */
        }
    }
    double dt = now_s() - t0;
    printf("solo  body=%-5u ops=%llu  %.0f ops/s  %.2f us/op\n", body_len,
           (unsigned long long)ops, (double)ops / dt, dt * 1e6 / (double)ops);
    free(body);
    vsr_destroy(v);
    return 0;
}

static int
bench_three(uint64_t ops)
{
    struct vs_vsr_options o;
    sim_default_options(&o, 3);
    o.journal_slots = 1024;
    struct sim *s = vs_xcalloc(1, sizeof(*s));
    if (sim_init(s, 3, 1, &o) != 0)
        return -1;
    double t0 = now_s();
    uint64_t done = 0;
    for (uint64_t k = 1; k <= ops && k < SIM_OPS_MAX; k++) {
        while (sim_request(s, 0, k, 1, VS_OP_CREATE_STREAM, &k, 8) != 0)
            sim_step(s);
        done = k;
    }
    sim_run_until_applied(s, done, 100000);
    double dt = now_s() - t0;
    printf("three ops=%llu  %.0f ops/s (harness included)  violations=%u\n",
           (unsigned long long)done, (double)done / dt, s->violations);
    sim_fini(s);
    free(s);
    return 0;
}

int
main(int argc, char **argv)
{
    uint64_t ops = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    if (bench_solo(ops, 0) != 0 || bench_solo(ops, 256) != 0 ||
        bench_solo(ops / 10, 65536) != 0 || bench_three(ops) != 0) {
        fprintf(stderr, "bench_vsr: engine refused an input\n");
        return 1;
    }
    return 0;
}
