/*
 * tests/bench/bench_beat.c - cost of the coalesced group beats of one
 * data-shard link per tick (shard/link/coalesce.h, beat.h), in-process:
 * G groups each post one entry (three times, coalesced), the table is
 * flushed into frames, and the receiver decodes every frame and reads
 * every entry. Prints per-tick sender and receiver time, frames and
 * bytes per tick.
 * Usage: bench_beat [groups] [ticks]   (not run by make check)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "shard/link/beat.h"
#include "shard/link/coalesce.h"

static const struct vs_u128 cluster = {0xbe, 0xa7};

struct sink {
    uint64_t frames, bytes, entries, recv_ns, check;
};

static int
sink_emit(void *ctx, uint8_t peer, const void *frame, size_t len)
{
    struct sink *k = ctx;
    (void)peer;
    uint64_t t0 = vs_monotonic_ns();
    const struct beat_hdr *h;
    const uint8_t *body;
    if (beat_decode(frame, len, &cluster, &h, &body) != 0)
        abort();
    for (uint32_t i = 0; i < h->count; i++) {
        struct beat_entry e;
        beat_entry_at(body, i, &e);
        k->check += e.commit;
    }
    k->recv_ns += vs_monotonic_ns() - t0;
    k->frames++;
    k->bytes += len;
    k->entries += h->count;
    return 0;
}

int
main(int argc, char **argv)
{
    uint32_t groups = argc > 1 ? (uint32_t)atol(argv[1]) : 10000;
    uint32_t ticks = argc > 2 ? (uint32_t)atol(argv[2]) : 1000;
    struct coal *c;
    if (groups == 0 || ticks == 0 || coal_create(2, 2 * groups, &c) != 0) {
        fprintf(stderr, "usage: bench_beat [groups >= 1] [ticks >= 1]\n");
        return 1;
    }
    struct beat_sender s = {.cluster = cluster, .release = 2, .shard = 1};
    struct sink k = {0};
    uint64_t seq = 0, total_ns = 0;
    for (uint32_t t = 0; t < ticks; t++) {
        uint64_t t0 = vs_monotonic_ns();
        for (uint32_t r = 0; r < 3; r++)
            for (uint32_t g = 0; g < groups; g++) {
                struct beat_entry e = {.group = (uint64_t)g * 2654435761u,
                                       .view = 1,
                                       .kind = BEAT_KIND_COMMIT,
                                       .commit = t * 3u + r,
                                       .op = t * 3u + r};
                if (coal_post(c, 1, &e) != 0)
                    abort();
            }
        if (coal_flush(c, 1, &s, &seq, 0, sink_emit, &k) < 1)
            abort();
        total_ns += vs_monotonic_ns() - t0;
    }
    uint64_t send_ns = total_ns - k.recv_ns;
    printf("groups %u, ticks %u: %.2f frames/tick, %.0f bytes/tick, "
           "%llu entries\n",
           groups, ticks, (double)k.frames / ticks, (double)k.bytes / ticks,
           (unsigned long long)k.entries);
    printf("sender (3 posts per group + sort + encode): %.1f us/tick; "
           "receiver (decode + read): %.1f us/tick (check %llu)\n",
           (double)send_ns / ticks / 1000.0, (double)k.recv_ns / ticks / 1000.0,
           (unsigned long long)(k.check & 0xff));
    coal_destroy(c);
    return 0;
}
