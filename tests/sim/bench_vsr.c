/*
 * tests/sim/bench_vsr.c - micro-benchmark of the VSR engine alone.
 *
 * Role: measures the engine's own cost per op, with no I/O: the one-replica
 * path (request -> journal append -> durable -> commit -> applied -> reply)
 * and the three-replica normal path through the in-memory harness, and
 * the failover time in ticks (primary crash; whole-cluster restart) with
 * the engine's default timeouts. Prints ops/s and ticks; not run by make
 * check (noinst_PROGRAMS). Usage: bench_vsr [ops]
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

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int
settled_index(const struct sim *s, int not )
{
    for (unsigned i = 0; i < s->n; i++)
        if ((int)i != not &&s->r[i].eng != NULL &&
            vsr_is_settled_primary(s->r[i].eng))
            return (int)i;
    return -1;
}

/* Failover in ticks (10 ms) with the production timeouts (heartbeat
 * 500, view change 50/500): SIGKILL-like crash of the primary of a
 * 3-replica group, until a settled primary exists; and a whole-cluster
 * restart until one elects after the probes. Median and max of `runs`. */
static int
bench_failover(unsigned runs)
{
    uint64_t fail[64], whole[64];
    if (runs > 64)
        runs = 64;
    for (unsigned k = 0; k < runs; k++) {
        struct vs_vsr_options o;
        sim_default_options(&o, 3);
        memset(&o.timeouts, 0, sizeof(o.timeouts)); /* engine defaults */
        struct sim *s = vs_xcalloc(1, sizeof(*s));
        if (sim_init(s, 3, 100 + k, &o) != 0)
            return -1;
        s->delay_max = 2;
        for (uint64_t c = 1; c <= 20; c++)
            while (sim_request(s, 0, c, 1, VS_OP_CREATE_STREAM, &c, 8) != 0)
                sim_step(s);
        sim_run_until_applied(s, 20, 10000);
        sim_crash(s, 0);
        uint64_t t0 = s->now;
        while (settled_index(s, 0) < 0 && s->now - t0 < 100000)
            sim_step(s);
        fail[k] = s->now - t0;
        char why[160];
        for (unsigned i = 1; i < 3; i++)
            sim_crash(s, i);
        for (unsigned i = 0; i < 3; i++)
            if (sim_restart(s, i, why, sizeof(why)) != 0)
                return -1;
        t0 = s->now;
        while (settled_index(s, -1) < 0 && s->now - t0 < 100000)
            sim_step(s);
        whole[k] = s->now - t0;
        if (s->violations != 0) {
            fprintf(stderr, "failover run %u: %s\n", k, s->violation);
            return -1;
        }
        sim_fini(s);
        free(s);
    }
    qsort(fail, runs, sizeof(fail[0]), cmp_u64);
    qsort(whole, runs, sizeof(whole[0]), cmp_u64);
    printf("failover (primary crash, n=3, %u seeds): median %llu ticks "
           "(%.2f s), max %llu ticks\n",
           runs, (unsigned long long)fail[runs / 2],
           (double)fail[runs / 2] / 100.0, (unsigned long long)fail[runs - 1]);
    printf("whole-cluster restart to a settled primary: median %llu ticks "
           "(%.2f s), max %llu ticks\n",
           (unsigned long long)whole[runs / 2], (double)whole[runs / 2] / 100.0,
           (unsigned long long)whole[runs - 1]);
    return 0;
}

int
main(int argc, char **argv)
{
    uint64_t ops = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    if (bench_solo(ops, 0) != 0 || bench_solo(ops, 256) != 0 ||
        bench_solo(ops / 10, 65536) != 0 || bench_three(ops) != 0 ||
        bench_failover(21) != 0) {
        fprintf(stderr, "bench_vsr: engine refused an input\n");
        return 1;
    }
    return 0;
}
