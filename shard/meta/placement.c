/*
 * shard/meta/placement.c - replica sets of partitions; see placement.h.
 * Deterministic: reads only the instance (no clock, no hashing, no
 * randomness), so equal states place equally on every replica.
 * Callers: shard 0 (apply, snapshot decode); tests.
 */
#include "config.h"

#include <string.h>

#include "common/assert.h"
#include "shard/meta/index.h"
#include "shard/meta/lookup.h"
#include "shard/meta/placement.h"

uint32_t
meta_rf_default(uint32_t nodes)
{
    return nodes < 3 ? (nodes == 0 ? 1 : nodes) : 3;
}

/* The replica count a topic's partitions get on n nodes. */
static uint32_t
topic_rf(const struct meta_topic *t, uint32_t n)
{
    uint32_t rf = t->opts.replication_factor;
    if (rf == 0)
        rf = meta_rf_default(n);
    return rf > n ? n : rf;
}

/* The leader for the next partition: fewest leaderships in the cluster,
 * then in the topic, then first in rotation after prev. */
static uint32_t
pick_leader(const uint32_t *tcount, const uint32_t *gcount, uint32_t n,
            uint32_t prev)
{
    uint32_t best = 0, best_rot = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t rot = (i + n - prev - 1) % n;
        if (i == 0 || gcount[i] < gcount[best] ||
            (gcount[i] == gcount[best] &&
             (tcount[i] < tcount[best] ||
              (tcount[i] == tcount[best] && rot < best_rot)))) {
            best = i;
            best_rot = rot;
        }
    }
    return best;
}

void
meta_place_partitions(void *st, const struct meta_topic *t, uint32_t first,
                      uint32_t n)
{
    struct meta_hdr *h = meta_hdr(st);
    uint32_t nodes = meta_nodes(st);
    uint32_t rf = topic_rf(t, nodes);
    uint32_t tcount[VS_REPLICAS_MAX];
    memset(tcount, 0, sizeof(tcount));
    uint32_t prev = nodes - 1; /* partition 0 starts the rotation at 0 */
    for (uint32_t p = 0; p < first; p++) {
        const struct meta_partition *pp =
            meta_partition_by_id(st, t->stream_id, t->id, p);
        VS_ASSERT(pp != NULL);
        if (pp->replica_count == 0 || pp->replicas[0] >= nodes)
            continue; /* placed on a larger cluster: not one of ours */
        tcount[pp->replicas[0]]++;
        prev = pp->replicas[0];
    }
    for (uint32_t i = 0; i < n; i++) {
        struct meta_partition *pp =
            (struct meta_partition *)meta_partition_by_id(st, t->stream_id,
                                                          t->id, first + i);
        VS_ASSERT(pp != NULL);
        uint32_t lead = pick_leader(tcount, h->leaders, nodes, prev);
        memset(pp->replicas, 0, sizeof(pp->replicas));
        pp->replica_count = (uint8_t)rf;
        for (uint32_t k = 0; k < rf; k++)
            pp->replicas[k] = (uint8_t)((lead + k) % nodes);
        tcount[lead]++;
        h->leaders[lead]++;
        prev = lead;
    }
}

void
meta_place_forget(void *st, const struct meta_partition *p)
{
    struct meta_hdr *h = meta_hdr(st);
    if (p->replica_count == 0)
        return;
    VS_ASSERT(h->leaders[p->replicas[0]] > 0);
    h->leaders[p->replicas[0]]--;
}

void
meta_place_recount(void *st)
{
    struct meta_hdr *h = meta_hdr(st);
    memset(h->leaders, 0, sizeof(h->leaders));
    uint32_t cap = meta_tab_cap(st, META_TAB_PARTITION);
    uint32_t left = h->count[META_TAB_PARTITION];
    for (uint32_t s = 0; s < cap && left > 0; s++) {
        if (!meta_rec_live(st, META_TAB_PARTITION, s))
            continue;
        left--;
        const struct meta_partition *p = meta_rec_c(st, META_TAB_PARTITION, s);
        if (p->replica_count > 0)
            h->leaders[p->replicas[0]]++;
    }
}

void
meta_place_all(void *st)
{
    struct meta_hdr *h = meta_hdr(st);
    uint32_t nodes = meta_nodes(st);
    memset(h->leaders, 0, sizeof(h->leaders));
    for (uint32_t sid = 0; sid < h->caps.streams; sid++) {
        const struct meta_stream *s = meta_stream_by_id(st, sid);
        if (s == NULL)
            continue;
        uint32_t left = s->topics_count;
        for (uint32_t tid = 0; tid < META_MAX_TOPIC_ID && left > 0; tid++) {
            struct meta_topic *t =
                (struct meta_topic *)meta_topic_by_id(st, sid, tid);
            if (t == NULL)
                continue;
            left--;
            if (t->opts.replication_factor == 0)
                t->opts.replication_factor = (uint8_t)meta_rf_default(nodes);
            meta_place_partitions(st, t, 0, t->partitions_count);
        }
    }
}

uint8_t
meta_partition_primary(const struct meta_partition *p, uint32_t view)
{
    if (p->replica_count == 0)
        return 255;
    return p->replicas[view % p->replica_count];
}
