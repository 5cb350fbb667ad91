/*
 * ipc/metrics.h - the per-process metrics blocks in the node's shared
 * segment (layout and writer rules: common/metrics.h).
 *
 * Role: every process binds its own block once at start (metrics_bind:
 * vs_metrics_me then points into the segment and the new incarnation's
 * gauges start from zero); the HTTP endpoint reads every block
 * (metrics_sum, metrics_read) without locks: each slot is one relaxed
 * atomic load, never torn, never blocking the writer.
 * Callers: shard processes (bind, read); tests.
 */
#ifndef VS_IPC_METRICS_H
#define VS_IPC_METRICS_H

#include <stdint.h>

#include "common/metrics.h"
#include "ipc/segment.h"

/* Points this process's writers at its segment block. */
void metrics_bind(const struct vs_seg *seg, uint32_t slot);

/* Slot `id` of process `proc`. */
uint64_t metrics_read(const struct vs_seg *seg, uint32_t proc, uint32_t id);
/* Slot `id` summed over every process of the node. */
uint64_t metrics_sum(const struct vs_seg *seg, uint32_t id);

#endif /* VS_IPC_METRICS_H */
