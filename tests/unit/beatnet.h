/*
 * tests/unit/beatnet.h - many partition groups of three replicas on three
 * in-process nodes, wired as the data shards wire them: every engine
 * (shard/vsr/engine.h, the production timeouts) of a node shares that
 * node's links, and with `coalesce` the groups' Commit heartbeats and
 * Pongs travel as entries of one beat frame per link per tick
 * (shard/serve/pbeat.h, shard/link/coalesce.h, beat.h), exactly as
 * shard/serve/pgroups.c sends them; without it every engine frame is a
 * link frame of its own (the runtime before coalescing).
 *
 * Group g's replica i lives on node (g + i) % 3, so the primaries of
 * view 0 are spread over the nodes. Storage completes at once (appends,
 * superblock writes and commits are reported done in the same drain).
 * One bn_tick is 10 ms: the frames of the previous tick are delivered,
 * every engine ticks, then each node's pending beat entries leave as
 * frames. Counters: link frames and bytes per (from, to) node pair.
 *
 * Invariants: deterministic (seeded engines, fixed order); every loop is
 * bounded by the group count and the queue.
 * Callers: tests/unit/check_pgroups_beat.c, tests/bench/bench_pgroups_beat.c.
 */
#ifndef VS_TESTS_UNIT_BEATNET_H
#define VS_TESTS_UNIT_BEATNET_H

#include <stddef.h>
#include <stdint.h>

#define BN_NODES 3u

struct bn;

struct bn_stats {
    uint64_t frames[BN_NODES][BN_NODES]; /* link frames from -> to */
    uint64_t bytes[BN_NODES][BN_NODES];
    uint64_t beat_frames, entries_out, entries_in, fallback;
    uint64_t entries_dropped; /* by bn_drop_commits */
    uint64_t view_changes;    /* summed over every engine */
    uint64_t requests, committed;
};

/* groups >= 1; coalesce 0/1. 0, or -ENOMEM / -EINVAL. */
int bn_create(uint32_t groups, int coalesce, uint64_t seed, struct bn **out);
void bn_destroy(struct bn *b);

void bn_tick(struct bn *b);

/* Proposes one request at group g's current primary (0 or the engine's
 * refusal: -EAGAIN, -EBUSY, ...). */
int bn_request(struct bn *b, uint32_t g, uint64_t wall);

/* From now on the Commit entries (coalesced) or frames of group g are
 * dropped: its backups hear no primary. */
void bn_drop_commits(struct bn *b, uint32_t g);

/* Group g's replica i: view, status (enum vsr_status), commit_max. */
void bn_group(const struct bn *b, uint32_t g, unsigned i, uint32_t *view,
              int *status, uint64_t *commit);
/* 1 if group g's view-0 primary still leads in view 0, settled. */
int bn_settled(const struct bn *b, uint32_t g);

void bn_stats(const struct bn *b, struct bn_stats *out);

#endif /* VS_TESTS_UNIT_BEATNET_H */
