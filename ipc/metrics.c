/*
 * ipc/metrics.c - binding and reading the metrics blocks; see metrics.h.
 * Any process of the node.
 */
#include "config.h"

#include "ipc/metrics.h"

void
metrics_bind(const struct vs_seg *seg, uint32_t slot)
{
    struct vs_metrics_block_shm *b = seg_metrics_block(seg, slot);
    /* the previous incarnation is dead (reaped): this process is the
     * block's only writer from here on */
    vs_metrics_clear_gauges(b);
    vs_metrics_me = b;
}

uint64_t
metrics_read(const struct vs_seg *seg, uint32_t proc, uint32_t id)
{
    /* relaxed: pairs with the writer's relaxed store; a single value is
     * all a scrape needs (no ordering between slots is promised) */
    return atomic_load_explicit(&seg_metrics_block(seg, proc)->v[id],
                                memory_order_relaxed);
}

uint64_t
metrics_sum(const struct vs_seg *seg, uint32_t id)
{
    uint64_t sum = 0;
    for (uint32_t p = 0; p < seg->hdr->n_procs; p++)
        sum += metrics_read(seg, p, id);
    return sum;
}
