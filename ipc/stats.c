/*
 * ipc/stats.c - the per-partition stats table in shared memory: claim,
 * sequence-locked publication, release, reclaim after a restart, bounded
 * lookups; see stats.h for the layout and who writes what.
 * Process: the supervisor formats; data shards write their own entries
 * and read any; tests.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include "common/assert.h"
#include "ipc/stats.h"

/* Reader attempts before reporting a miss, and a yield every so many
 * (a writer holds an entry odd for a handful of stores). */
#define STATS_READ_TRIES 100000u
#define STATS_READ_YIELD 64u

static const struct vs_stats *stats_proc_handle;

size_t
stats_region_size(uint32_t capacity)
{
    if (capacity == 0)
        return 0;
    return sizeof(struct vs_stats_hdr_shm) +
           (size_t)capacity * sizeof(struct vs_stats_entry_shm);
}

int
stats_region_init(void *mem, size_t len, uint32_t capacity)
{
    if (mem == NULL || capacity == 0 || len < stats_region_size(capacity))
        return -EINVAL;
    struct vs_stats_hdr_shm *h = mem;
    h->magic = VS_STATS_MAGIC;
    h->capacity = capacity;
    h->entry_size = sizeof(struct vs_stats_entry_shm);
    h->hdr_size = sizeof(struct vs_stats_hdr_shm);
    for (uint32_t i = 0; i < VS_STATS_MAX_OWNERS; i++)
        atomic_init(&h->claimed[i], 0);
    return 0;
}

int
stats_attach(struct vs_stats *t, void *mem, size_t len)
{
    memset(t, 0, sizeof(*t));
    if (mem == NULL || len == 0)
        return 0;
    const struct vs_stats_hdr_shm *h = mem;
    if (len < sizeof(*h) || h->magic != VS_STATS_MAGIC ||
        h->entry_size != sizeof(struct vs_stats_entry_shm) ||
        h->hdr_size != sizeof(struct vs_stats_hdr_shm) || h->capacity == 0 ||
        len < stats_region_size(h->capacity))
        return -EPROTO;
    t->hdr = mem;
    t->e = (struct vs_stats_entry_shm *)((uint8_t *)mem + sizeof(*h));
    t->capacity = h->capacity;
    return 0;
}

static uint32_t
stats_home(const struct vs_stats *t, uint64_t group_id)
{
    uint64_t x = group_id + UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return (uint32_t)(x % t->capacity);
}

/* The owner's write of key and counters under the sequence lock. An odd
 * sequence left by a dead incarnation stays odd during the write. */
static void
stats_write(struct vs_stats_entry_shm *e, uint64_t group_id,
            uint64_t created_op, const struct vs_stats_values *v)
{
    uint32_t s = atomic_load_explicit(&e->seq, memory_order_relaxed);
    if ((s & 1u) == 0) {
        s++;
        atomic_store_explicit(&e->seq, s, memory_order_relaxed);
    }
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&e->group_id, group_id, memory_order_relaxed);
    atomic_store_explicit(&e->created_op, created_op, memory_order_relaxed);
    atomic_store_explicit(&e->messages_count, v->messages_count,
                          memory_order_relaxed);
    atomic_store_explicit(&e->size_bytes, v->size_bytes, memory_order_relaxed);
    atomic_store_explicit(&e->current_offset, v->current_offset,
                          memory_order_relaxed);
    atomic_store_explicit(&e->segments_count, v->segments_count,
                          memory_order_relaxed);
    atomic_store_explicit(&e->seq, s + 1, memory_order_release);
}

static void
stats_clear(struct vs_stats_entry_shm *e)
{
    static const struct vs_stats_values zero;
    stats_write(e, 0, 0, &zero);
}

uint32_t
stats_reclaim(struct vs_stats *t, uint32_t owner)
{
    if (t->capacity == 0 || owner >= VS_STATS_MAX_OWNERS)
        return 0;
    _Atomic uint32_t *cl = &t->hdr->claimed[owner];
    if (atomic_load_explicit(cl, memory_order_acquire) == 0)
        return 0;
    uint32_t mine = VS_STATS_OWNED + owner, cleared = 0;
    for (uint32_t i = 0; i < t->capacity; i++) {
        struct vs_stats_entry_shm *e = &t->e[i];
        if (atomic_load_explicit(&e->state, memory_order_acquire) != mine)
            continue;
        stats_clear(e);
        atomic_store_explicit(&e->state, VS_STATS_FREE, memory_order_release);
        cleared++;
    }
    atomic_store_explicit(cl, 0, memory_order_release);
    return cleared;
}

int
stats_claim(struct vs_stats *t, uint32_t owner, uint64_t group_id,
            uint64_t created_op, const struct vs_stats_values *v, uint32_t *ix)
{
    if (t->capacity == 0 || owner == 0 || owner >= VS_STATS_MAX_OWNERS ||
        created_op == 0)
        return -EINVAL;
    _Atomic uint32_t *cl = &t->hdr->claimed[owner];
    atomic_fetch_add_explicit(cl, 1, memory_order_acq_rel);
    uint32_t h = stats_home(t, group_id);
    for (uint32_t i = 0; i < t->capacity; i++) {
        uint32_t j = h + i < t->capacity ? h + i : h + i - t->capacity;
        struct vs_stats_entry_shm *e = &t->e[j];
        uint32_t st = atomic_load_explicit(&e->state, memory_order_acquire);
        if (st != VS_STATS_EMPTY && st != VS_STATS_FREE)
            continue;
        if (!atomic_compare_exchange_strong_explicit(
                &e->state, &st, VS_STATS_OWNED + owner, memory_order_acq_rel,
                memory_order_acquire))
            continue;
        stats_write(e, group_id, created_op, v);
        *ix = j;
        return 0;
    }
    atomic_fetch_sub_explicit(cl, 1, memory_order_acq_rel);
    return -ENOSPC;
}

void
stats_publish(struct vs_stats *t, uint32_t ix, const struct vs_stats_values *v)
{
    VS_ASSERT(ix < t->capacity);
    struct vs_stats_entry_shm *e = &t->e[ix];
    stats_write(e, atomic_load_explicit(&e->group_id, memory_order_relaxed),
                atomic_load_explicit(&e->created_op, memory_order_relaxed), v);
}

void
stats_release(struct vs_stats *t, uint32_t owner, uint32_t ix)
{
    VS_ASSERT(ix < t->capacity && owner < VS_STATS_MAX_OWNERS);
    struct vs_stats_entry_shm *e = &t->e[ix];
    VS_ASSERT(atomic_load_explicit(&e->state, memory_order_relaxed) ==
              VS_STATS_OWNED + owner);
    stats_clear(e);
    atomic_store_explicit(&e->state, VS_STATS_FREE, memory_order_release);
    _Atomic uint32_t *cl = &t->hdr->claimed[owner];
    if (atomic_load_explicit(cl, memory_order_relaxed) > 0)
        atomic_fetch_sub_explicit(cl, 1, memory_order_acq_rel);
}

/* One consistent read of an entry: 1, or 0 if the writer kept it busy
 * for every attempt. */
static int
stats_read(const struct vs_stats_entry_shm *ce, uint64_t *gid, uint64_t *cop,
           struct vs_stats_values *v)
{
    struct vs_stats_entry_shm *e = (struct vs_stats_entry_shm *)ce;
    for (uint32_t i = 0; i < STATS_READ_TRIES; i++) {
        if (i > 0 && i % STATS_READ_YIELD == 0)
            sched_yield();
        uint32_t s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
        if (s1 & 1u)
            continue;
        *gid = atomic_load_explicit(&e->group_id, memory_order_relaxed);
        *cop = atomic_load_explicit(&e->created_op, memory_order_relaxed);
        v->messages_count =
            atomic_load_explicit(&e->messages_count, memory_order_relaxed);
        v->size_bytes =
            atomic_load_explicit(&e->size_bytes, memory_order_relaxed);
        v->current_offset =
            atomic_load_explicit(&e->current_offset, memory_order_relaxed);
        v->segments_count =
            atomic_load_explicit(&e->segments_count, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        uint32_t s2 = atomic_load_explicit(&e->seq, memory_order_relaxed);
        if (s1 == s2)
            return 1;
    }
    return 0;
}

int
stats_lookup(const struct vs_stats *t, uint64_t group_id, uint64_t created_op,
             struct vs_stats_values *out)
{
    memset(out, 0, sizeof(*out));
    if (t == NULL || t->capacity == 0 || created_op == 0)
        return 0;
    uint32_t h = stats_home(t, group_id);
    for (uint32_t i = 0; i < t->capacity; i++) {
        uint32_t j = h + i < t->capacity ? h + i : h + i - t->capacity;
        const struct vs_stats_entry_shm *e = &t->e[j];
        uint32_t st = atomic_load_explicit(
            &((struct vs_stats_entry_shm *)e)->state, memory_order_acquire);
        if (st == VS_STATS_EMPTY)
            return 0;
        if (st == VS_STATS_FREE)
            continue;
        uint64_t gid, cop;
        struct vs_stats_values v;
        if (!stats_read(e, &gid, &cop, &v))
            continue;
        if (gid == group_id && cop == created_op) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

void
stats_set_process(const struct vs_stats *t)
{
    stats_proc_handle = t;
}

const struct vs_stats *
stats_process(void)
{
    return stats_proc_handle;
}
