/*
 * shard/serve/polled.c - last polled offsets per (group, member,
 * partition) and the revocation / in-flight rules; see polled.h.
 *
 * Invariants: at most one record per key; no clock, no I/O.
 * Process: data shards (loop thread), tests.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "shard/serve/polled.h"

void
polled_init(struct polled *t)
{
    memset(t, 0, sizeof(*t));
}

void
polled_fini(struct polled *t)
{
    free(t->v);
    memset(t, 0, sizeof(*t));
}

static int
polled_key_eq(const struct polled_key *a, const struct polled_key *b)
{
    return a->stream_id == b->stream_id && a->topic_id == b->topic_id &&
           a->partition_id == b->partition_id && a->group_id == b->group_id &&
           a->part_created_op == b->part_created_op &&
           a->group_created_op == b->group_created_op &&
           vs_u128_eq(a->client, b->client);
}

static struct polled_rec *
polled_find(const struct polled *t, const struct polled_key *k)
{
    for (size_t i = 0; i < t->n; i++)
        if (polled_key_eq(&t->v[i].k, k))
            return &t->v[i];
    return NULL;
}

int
polled_set(struct polled *t, const struct polled_key *k, uint64_t last)
{
    struct polled_rec *r = polled_find(t, k);
    if (r == NULL) {
        if (t->n >= POLLED_MAX)
            return -ENOSPC;
        if (t->n == t->cap) {
            t->cap = t->cap ? t->cap * 2 : 16;
            t->v = vs_xrealloc(t->v, t->cap * sizeof(*t->v));
        }
        r = &t->v[t->n++];
        r->k = *k;
    }
    r->last = last;
    return 0;
}

int
polled_get(const struct polled *t, const struct polled_key *k, uint64_t *last)
{
    const struct polled_rec *r = polled_find(t, k);
    if (r == NULL)
        return 0;
    *last = r->last;
    return 1;
}

void
polled_del_at(struct polled *t, size_t i)
{
    if (i < t->n)
        t->v[i] = t->v[--t->n];
}

void
polled_del(struct polled *t, const struct polled_key *k)
{
    struct polled_rec *r = polled_find(t, k);
    if (r != NULL)
        polled_del_at(t, (size_t)(r - t->v));
}

int
polled_revoke_done(int polled, uint64_t last, int committed, uint64_t off)
{
    return !polled || (committed && off >= last);
}

int
polled_in_flight(uint64_t last, int committed, uint64_t off)
{
    return !committed || off < last;
}

static int
polled_part_cmp(const void *pa, const void *pb)
{
    const struct fwd_group_part *a = pa, *b = pb;
    const uint64_t x[] = {a->stream_id,        a->topic_id,     a->group_id,
                          a->group_created_op, a->partition_id, a->owner,
                          a->revoke_to};
    const uint64_t y[] = {b->stream_id,        b->topic_id,     b->group_id,
                          b->group_created_op, b->partition_id, b->owner,
                          b->revoke_to};
    for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

size_t
polled_parts_normalize(struct fwd_group_part *e, size_t n)
{
    if (n < 2)
        return n;
    qsort(e, n, sizeof(*e), polled_part_cmp);
    size_t w = 1;
    for (size_t i = 1; i < n; i++)
        if (polled_part_cmp(&e[i], &e[w - 1]) != 0)
            e[w++] = e[i];
    return w;
}
