/*
 * shard/link/coalesce.c - pending beat entries per peer; see coalesce.h.
 *
 * Structure: per peer an array of entries (insertion order) and an
 * open-addressing index (linear probing, capacity a power of two at
 * least twice entries_max) from (group, kind) to the entry's position.
 * A flush sorts the array into frame order (an LSD radix sort of
 * (group, kind) keys: linear in the entries, digits that are the same
 * for every key skipped), emits, keeps the unsent tail and rebuilds the
 * index from it (O(entries), no per-entry deletion from the probe
 * chains). The sort's scratch is allocated once and shared by the
 * peers.
 * Process: one thread.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shard/link/coalesce.h"

#define COAL_ENTRIES_LIMIT (1u << 20)

struct coal_peer {
    struct beat_entry *e; /* [entries_max] */
    uint32_t n;
    uint32_t *index; /* [mask + 1]: position + 1, 0 = empty */
};

struct coal_key {
    uint64_t group;
    uint32_t kind, pos;
};

struct coal {
    uint8_t peers;
    uint32_t max, mask;
    struct coal_peer *p;
    uint8_t *frame; /* one frame of up to BEAT_ENTRIES_MAX entries */
    /* sort scratch: [max] each */
    struct coal_key *keys, *keys_tmp;
    struct beat_entry *sorted;
};

static uint32_t
slot_of(const struct coal *c, uint64_t group, uint8_t kind)
{
    uint64_t h = (group ^ ((uint64_t)kind << 56)) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    return (uint32_t)h & c->mask;
}

/* One stable counting pass on byte `shift` (bits) of the group, or on
 * the kind when shift is 64. Returns 0 (nothing moved: every key has the
 * same digit) or 1 (the sorted keys are now in dst). */
static int
radix_pass(const struct coal_key *src, struct coal_key *dst, uint32_t n,
           unsigned shift)
{
    uint32_t count[256] = {0};
    for (uint32_t i = 0; i < n; i++) {
        unsigned d = shift == 64 ? src[i].kind & 0xffu
                                 : (unsigned)(src[i].group >> shift) & 0xffu;
        count[d]++;
    }
    for (unsigned d = 0; d < 256; d++)
        if (count[d] == n)
            return 0;
    uint32_t at = 0;
    for (unsigned d = 0; d < 256; d++) {
        uint32_t k = count[d];
        count[d] = at;
        at += k;
    }
    for (uint32_t i = 0; i < n; i++) {
        unsigned d = shift == 64 ? src[i].kind & 0xffu
                                 : (unsigned)(src[i].group >> shift) & 0xffu;
        dst[count[d]++] = src[i];
    }
    return 1;
}

/* Puts p's entries in frame order ((group, kind) increasing). */
static void
sort_entries(struct coal *c, struct coal_peer *p)
{
    struct coal_key *a = c->keys, *b = c->keys_tmp;
    for (uint32_t i = 0; i < p->n; i++)
        a[i] = (struct coal_key){p->e[i].group, p->e[i].kind, i};
    /* least significant first: the kind, then the group's 8 bytes */
    if (radix_pass(a, b, p->n, 64)) {
        struct coal_key *t = a;
        a = b;
        b = t;
    }
    for (unsigned shift = 0; shift < 64; shift += 8) {
        if (radix_pass(a, b, p->n, shift)) {
            struct coal_key *t = a;
            a = b;
            b = t;
        }
    }
    for (uint32_t i = 0; i < p->n; i++)
        c->sorted[i] = p->e[a[i].pos];
    /* the sorted copy becomes the peer's array; its old one the scratch */
    struct beat_entry *t = p->e;
    p->e = c->sorted;
    c->sorted = t;
}

/* The position + 1 of (group, kind) in p, or 0; *slot gets the slot where
 * it is or would go. */
static uint32_t
lookup(const struct coal *c, const struct coal_peer *p, uint64_t group,
       uint8_t kind, uint32_t *slot)
{
    uint32_t s = slot_of(c, group, kind);
    for (;;) {
        uint32_t at = p->index[s];
        if (at == 0)
            break;
        const struct beat_entry *e = &p->e[at - 1];
        if (e->group == group && e->kind == kind) {
            *slot = s;
            return at;
        }
        s = (s + 1) & c->mask;
    }
    *slot = s;
    return 0;
}

static void
reindex(struct coal *c, struct coal_peer *p)
{
    memset(p->index, 0, ((size_t)c->mask + 1) * sizeof(*p->index));
    for (uint32_t i = 0; i < p->n; i++) {
        uint32_t slot;
        (void)lookup(c, p, p->e[i].group, p->e[i].kind, &slot);
        p->index[slot] = i + 1;
    }
}

void
coal_destroy(struct coal *c)
{
    if (c == NULL)
        return;
    for (unsigned i = 0; c->p != NULL && i < c->peers; i++) {
        free(c->p[i].e);
        free(c->p[i].index);
    }
    free(c->p);
    free(c->frame);
    free(c->keys);
    free(c->keys_tmp);
    free(c->sorted);
    free(c);
}

int
coal_create(uint8_t peers, uint32_t entries_max, struct coal **out)
{
    *out = NULL;
    if (peers == 0 || entries_max == 0 || entries_max > COAL_ENTRIES_LIMIT)
        return -EINVAL;
    struct coal *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return -ENOMEM;
    c->peers = peers;
    c->max = entries_max;
    uint32_t cap = 2;
    while (cap < 2 * entries_max)
        cap <<= 1;
    c->mask = cap - 1;
    uint32_t fmax =
        entries_max < BEAT_ENTRIES_MAX ? entries_max : BEAT_ENTRIES_MAX;
    c->p = calloc(peers, sizeof(*c->p));
    c->frame = malloc(beat_frame_size(fmax));
    c->keys = malloc((size_t)entries_max * sizeof(*c->keys));
    c->keys_tmp = malloc((size_t)entries_max * sizeof(*c->keys_tmp));
    c->sorted = malloc((size_t)entries_max * sizeof(*c->sorted));
    if (c->p == NULL || c->frame == NULL || c->keys == NULL ||
        c->keys_tmp == NULL || c->sorted == NULL)
        goto fail;
    for (unsigned i = 0; i < peers; i++) {
        c->p[i].e = malloc((size_t)entries_max * sizeof(*c->p[i].e));
        c->p[i].index = calloc(cap, sizeof(*c->p[i].index));
        if (c->p[i].e == NULL || c->p[i].index == NULL)
            goto fail;
    }
    *out = c;
    return 0;
fail:
    coal_destroy(c);
    return -ENOMEM;
}

int
coal_post(struct coal *c, uint8_t peer, const struct beat_entry *e)
{
    if (peer >= c->peers ||
        (e->kind != BEAT_KIND_COMMIT && e->kind != BEAT_KIND_ACK))
        return -EINVAL;
    struct coal_peer *p = &c->p[peer];
    uint32_t slot;
    uint32_t at = lookup(c, p, e->group, e->kind, &slot);
    if (at != 0) {
        p->e[at - 1] = *e; /* the newest state replaces the pending one */
        return 0;
    }
    if (p->n >= c->max)
        return -EAGAIN;
    p->e[p->n] = *e;
    p->index[slot] = ++p->n;
    return 0;
}

uint32_t
coal_pending(const struct coal *c, uint8_t peer)
{
    return peer < c->peers ? c->p[peer].n : 0;
}

uint32_t
coal_room(const struct coal *c, uint8_t peer)
{
    return peer < c->peers ? c->max - c->p[peer].n : 0;
}

void
coal_clear(struct coal *c, uint8_t peer)
{
    if (peer >= c->peers)
        return;
    c->p[peer].n = 0;
    memset(c->p[peer].index, 0, ((size_t)c->mask + 1) * sizeof(uint32_t));
}

int
coal_flush(struct coal *c, uint8_t peer, const struct beat_sender *s,
           uint64_t *seq, int keepalive, coal_emit_fn emit, void *ctx)
{
    if (peer >= c->peers)
        return -EINVAL;
    struct coal_peer *p = &c->p[peer];
    uint32_t fmax = c->max < BEAT_ENTRIES_MAX ? c->max : BEAT_ENTRIES_MAX;
    if (p->n == 0) {
        if (!keepalive)
            return 0;
        long len =
            beat_encode(s, *seq + 1, NULL, 0, c->frame, beat_frame_size(0));
        if (len < 0)
            return (int)len;
        int rc = emit(ctx, peer, c->frame, (size_t)len);
        if (rc != 0)
            return rc;
        (*seq)++;
        return 1;
    }
    sort_entries(c, p);
    uint32_t sent = 0;
    int frames = 0, rc = 0;
    while (sent < p->n) {
        uint32_t n = p->n - sent < fmax ? p->n - sent : fmax;
        long len = beat_encode(s, *seq + 1, p->e + sent, n, c->frame,
                               beat_frame_size(fmax));
        if (len < 0) {
            rc = (int)len;
            break;
        }
        rc = emit(ctx, peer, c->frame, (size_t)len);
        if (rc != 0)
            break;
        (*seq)++;
        sent += n;
        frames++;
    }
    if (sent > 0) {
        memmove(p->e, p->e + sent, (size_t)(p->n - sent) * sizeof(*p->e));
        p->n -= sent;
    }
    reindex(c, p); /* positions changed (sorted, and the sent ones left) */
    return rc != 0 ? rc : frames;
}
