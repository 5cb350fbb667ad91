/*
 * tests/bench/bench_metrics.c - what the metrics cost on the request
 * path, in nanoseconds per request: exactly the updates a data shard
 * makes for one SendMessages request (conn.c at dispatch and reply,
 * data.c after the append) against a block in a real shared segment,
 * and, for scale, one Prometheus render's worth of reads. Not run by
 * make check; results go in the report.
 * Usage: bench_metrics [iterations]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/wire.h"
#include "ipc/metrics.h"
#include "ipc/segment.h"

static uint64_t sink;

int
main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 5000000;
    struct vs_seg seg;
    struct vs_seg_params p = {
        .n_procs = 3, .lr_instance_size = 4096, .ring_bytes = 4096};
    if (seg_create(&seg, &p) != 0) {
        fprintf(stderr, "seg_create failed\n");
        return 1;
    }
    metrics_bind(&seg, 1);
    struct vs_hdr_reply reply;
    memset(&reply, 0, sizeof reply);
    reply.f.command = VS_CMD_REPLY;

    /* baseline: the loop with the header copy a reply check makes */
    uint64_t t0 = vs_monotonic_ns();
    for (uint64_t i = 0; i < n; i++) {
        struct vs_hdr_reply h;
        memcpy(&h, &reply, sizeof h);
        sink += h.f.command + i;
    }
    uint64_t base = vs_monotonic_ns() - t0;

    t0 = vs_monotonic_ns();
    for (uint64_t i = 0; i < n; i++) {
        /* dispatch (conn.c) */
        vs_metrics_add(VS_M_CLIENT_BYTES_RECEIVED, 256 + 1048);
        uint32_t op = vs_metrics_op_index(VS_OP_SEND_MESSAGES, 0);
        uint64_t started = vs_monotonic_ns();
        /* append done (data.c) */
        vs_metrics_add(VS_M_MESSAGES_SENT, 1000);
        vs_metrics_add(VS_M_MESSAGES_SENT_BYTES, 1048000);
        /* reply (conn.c) */
        vs_metrics_add(VS_M_CLIENT_BYTES_SENT, 256 + 24);
        struct vs_hdr_reply h;
        memcpy(&h, &reply, sizeof h);
        if (h.f.command == VS_CMD_REPLY)
            vs_metrics_request(op, h.status,
                               (vs_monotonic_ns() - started) / 1000u);
    }
    uint64_t with = vs_monotonic_ns() - t0;

    t0 = vs_monotonic_ns();
    for (uint64_t i = 0; i < n; i++)
        sink += vs_monotonic_ns();
    uint64_t clock = vs_monotonic_ns() - t0;

    t0 = vs_monotonic_ns();
    uint32_t renders = 1000;
    for (uint32_t r = 0; r < renders; r++)
        for (uint32_t id = 0; id < VS_M_END; id++)
            sink += metrics_sum(&seg, id);
    uint64_t reads = vs_monotonic_ns() - t0;

    printf("metrics per SendMessages request: %.1f ns (loop baseline "
           "%.1f ns, %llu iterations)\n",
           (double)(with - base) / (double)n, (double)base / (double)n,
           (unsigned long long)n);
    printf("of which 2 monotonic clock reads: %.1f ns\n",
           2.0 * (double)clock / (double)n);
    printf("reading every slot of 3 processes (one scrape's loads): %.1f "
           "us\n",
           (double)reads / renders / 1000.0);
    printf("check: %llu requests counted\n",
           (unsigned long long)metrics_read(
               &seg, 1,
               VS_M_HIST_REQ + VS_MC_SEND * VS_MH_SLOTS + VS_MH_BOUNDS + 2));
    seg_destroy(&seg);
    return sink == 42 ? 2 : 0;
}
