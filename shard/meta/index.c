/*
 * shard/meta/index.c - slot allocation and open-addressing indexes of a
 * state instance (see index.h for the invariants).
 * Callers: shard/meta only.
 */
#include "config.h"

#include <string.h>

#include "common/assert.h"
#include "common/checksum.h"
#include "shard/meta/index.h"

static uint32_t *
ix_entries(void *st, enum meta_ix ix)
{
    return (uint32_t *)((uint8_t *)st + meta_hdr(st)->ix[ix].off);
}

static const uint32_t *
ix_entries_c(const void *st, enum meta_ix ix)
{
    return (const uint32_t *)((const uint8_t *)st + meta_hdr_c(st)->ix[ix].off);
}

uint32_t
meta_slot_alloc(void *st, enum meta_tab t, uint32_t limit)
{
    struct meta_hdr *h = meta_hdr(st);
    uint32_t cap = meta_tab_cap(st, t);
    if (limit > cap)
        limit = cap;
    for (uint32_t s = h->hint[t]; s < limit; s++) {
        if (!meta_rec_live(st, t, s)) {
            meta_slot_claim(st, t, s);
            return s;
        }
    }
    return META_NONE;
}

void
meta_slot_claim(void *st, enum meta_tab t, uint32_t slot)
{
    struct meta_hdr *h = meta_hdr(st);
    uint8_t *r = meta_rec(st, t, slot);
    VS_ASSERT(slot < meta_tab_cap(st, t) && r[0] == 0);
    r[0] = 1;
    h->count[t]++;
    if (h->hint[t] == slot)
        h->hint[t] = slot + 1;
}

void
meta_slot_free(void *st, enum meta_tab t, uint32_t slot)
{
    struct meta_hdr *h = meta_hdr(st);
    uint8_t *r = meta_rec(st, t, slot);
    VS_ASSERT(r[0] != 0 && h->count[t] > 0);
    memset(r, 0, meta_rec_size(t));
    h->count[t]--;
    if (slot < h->hint[t])
        h->hint[t] = slot;
}

void
meta_key_of(const void *st, enum meta_ix ix, uint32_t slot, struct meta_key *k)
{
    memset(k, 0, sizeof(*k));
    const void *r = meta_rec_c(st, meta_ix_tab(ix), slot);
    switch (ix) {
    case META_IX_STREAM_NAME: {
        const struct meta_stream *s = r;
        k->name = (const uint8_t *)s->name;
        k->name_len = s->name_len;
        break;
    }
    case META_IX_TOPIC_ID:
    case META_IX_TOPIC_NAME: {
        const struct meta_topic *t = r;
        k->a = t->stream_id;
        if (ix == META_IX_TOPIC_ID) {
            k->b = t->id;
        } else {
            k->name = (const uint8_t *)t->name;
            k->name_len = t->name_len;
        }
        break;
    }
    case META_IX_PARTITION_ID: {
        const struct meta_partition *p = r;
        k->a = p->stream_id;
        k->b = p->topic_id;
        k->c = p->id;
        break;
    }
    case META_IX_GROUP_ID:
    case META_IX_GROUP_NAME: {
        const struct meta_group *g = r;
        k->a = g->stream_id;
        k->b = g->topic_id;
        if (ix == META_IX_GROUP_ID) {
            k->c = g->id;
        } else {
            k->name = (const uint8_t *)g->name;
            k->name_len = g->name_len;
        }
        break;
    }
    case META_IX_MEMBER_ID:
    case META_IX_MEMBER_CLIENT: {
        const struct meta_member *m = r;
        k->a = m->stream_id;
        k->b = m->topic_id;
        k->c = m->group_id;
        if (ix == META_IX_MEMBER_ID)
            k->d = m->member_id;
        else
            k->client = m->client_id;
        break;
    }
    case META_IX_ASSIGN: {
        const struct meta_assign *a = r;
        k->a = a->stream_id;
        k->b = a->topic_id;
        k->c = a->group_id;
        k->d = a->partition_id;
        break;
    }
    case META_IX_USER_NAME: {
        const struct meta_user *u = r;
        k->name = (const uint8_t *)u->username;
        k->name_len = u->name_len;
        break;
    }
    case META_IX_SGRANT: {
        const struct meta_sgrant *g = r;
        k->a = g->user_id;
        k->b = g->stream_id;
        break;
    }
    case META_IX_TGRANT: {
        const struct meta_tgrant *g = r;
        k->a = g->user_id;
        k->b = g->stream_id;
        k->c = g->topic_id;
        break;
    }
    case META_IX_PAT_NAME:
    case META_IX_PAT_DIGEST: {
        const struct meta_pat *p = r;
        if (ix == META_IX_PAT_NAME) {
            k->a = p->user_id;
            k->name = (const uint8_t *)p->name;
            k->name_len = p->name_len;
        } else {
            k->name = p->digest;
            k->name_len = META_DIGEST_LEN;
        }
        break;
    }
    case META_IX_SESSION: {
        const struct meta_session *s = r;
        k->client = s->client_id;
        break;
    }
    default:
        VS_ASSERT(0 && "bad index");
    }
}

static uint64_t
key_hash(enum meta_ix ix, const struct meta_key *k)
{
    uint8_t buf[36 + META_NAME_MAX + 1];
    uint32_t w[5] = {k->a, k->b, k->c, k->d, (uint32_t)ix};
    memcpy(buf, w, 20);
    memcpy(buf + 20, &k->client, 16);
    size_t n = k->name_len <= META_NAME_MAX ? k->name_len : META_NAME_MAX;
    if (n)
        memcpy(buf + 36, k->name, n);
    return vs_xxh3_64(buf, 36 + n);
}

static int
key_eq(const struct meta_key *x, const struct meta_key *y)
{
    return x->a == y->a && x->b == y->b && x->c == y->c && x->d == y->d &&
           vs_u128_eq(x->client, y->client) && x->name_len == y->name_len &&
           (x->name_len == 0 || memcmp(x->name, y->name, x->name_len) == 0);
}

uint32_t
meta_ix_find(const void *st, enum meta_ix ix, const struct meta_key *k)
{
    const struct meta_index *mi = &meta_hdr_c(st)->ix[ix];
    const uint32_t *e = ix_entries_c(st, ix);
    uint32_t i = (uint32_t)key_hash(ix, k) & mi->mask;
    for (uint32_t n = 0; n <= mi->mask; n++) {
        uint32_t v = e[i];
        if (v == 0)
            return META_NONE;
        struct meta_key rk;
        meta_key_of(st, ix, v - 1, &rk);
        if (key_eq(&rk, k))
            return v - 1;
        i = (i + 1) & mi->mask;
    }
    return META_NONE;
}

static uint32_t
home_of(const void *st, enum meta_ix ix, uint32_t slot)
{
    struct meta_key k;
    meta_key_of(st, ix, slot, &k);
    return (uint32_t)key_hash(ix, &k) & meta_hdr_c(st)->ix[ix].mask;
}

void
meta_ix_insert(void *st, enum meta_ix ix, uint32_t slot)
{
    uint32_t mask = meta_hdr(st)->ix[ix].mask;
    uint32_t *e = ix_entries(st, ix);
    uint32_t i = home_of(st, ix, slot);
    for (uint32_t n = 0; n <= mask; n++) {
        if (e[i] == 0) {
            e[i] = slot + 1;
            return;
        }
        i = (i + 1) & mask;
    }
    VS_ASSERT(0 && "index full");
}

void
meta_ix_remove(void *st, enum meta_ix ix, uint32_t slot)
{
    uint32_t mask = meta_hdr(st)->ix[ix].mask;
    uint32_t *e = ix_entries(st, ix);
    uint32_t i = home_of(st, ix, slot);
    uint32_t n = 0;
    while (e[i] != slot + 1) {
        VS_ASSERT(e[i] != 0 && n++ <= mask);
        i = (i + 1) & mask;
    }
    /* backward-shift deletion */
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (e[j] == 0)
            break;
        uint32_t k = home_of(st, ix, e[j] - 1);
        /* move e[j] to the hole at i unless its home lies in (i, j] */
        int in_range = (i <= j) ? (i < k && k <= j) : (i < k || k <= j);
        if (!in_range) {
            e[i] = e[j];
            i = j;
        }
    }
    e[i] = 0;
}

static const enum meta_ix *
tab_ixs(enum meta_tab t, int *n)
{
    static const enum meta_ix stream[] = {META_IX_STREAM_NAME};
    static const enum meta_ix topic[] = {META_IX_TOPIC_ID, META_IX_TOPIC_NAME};
    static const enum meta_ix part[] = {META_IX_PARTITION_ID};
    static const enum meta_ix group[] = {META_IX_GROUP_ID, META_IX_GROUP_NAME};
    static const enum meta_ix member[] = {META_IX_MEMBER_ID,
                                          META_IX_MEMBER_CLIENT};
    static const enum meta_ix assign[] = {META_IX_ASSIGN};
    static const enum meta_ix user[] = {META_IX_USER_NAME};
    static const enum meta_ix sg[] = {META_IX_SGRANT};
    static const enum meta_ix tg[] = {META_IX_TGRANT};
    static const enum meta_ix pat[] = {META_IX_PAT_NAME, META_IX_PAT_DIGEST};
    static const enum meta_ix sess[] = {META_IX_SESSION};
    switch (t) {
    case META_TAB_STREAM:
        *n = 1;
        return stream;
    case META_TAB_TOPIC:
        *n = 2;
        return topic;
    case META_TAB_PARTITION:
        *n = 1;
        return part;
    case META_TAB_GROUP:
        *n = 2;
        return group;
    case META_TAB_MEMBER:
        *n = 2;
        return member;
    case META_TAB_ASSIGN:
        *n = 1;
        return assign;
    case META_TAB_USER:
        *n = 1;
        return user;
    case META_TAB_SGRANT:
        *n = 1;
        return sg;
    case META_TAB_TGRANT:
        *n = 1;
        return tg;
    case META_TAB_PAT:
        *n = 2;
        return pat;
    case META_TAB_SESSION:
        *n = 1;
        return sess;
    default:
        *n = 0;
        return NULL;
    }
}

void
meta_ix_add_all(void *st, enum meta_tab t, uint32_t slot)
{
    int n;
    const enum meta_ix *ixs = tab_ixs(t, &n);
    for (int i = 0; i < n; i++)
        meta_ix_insert(st, ixs[i], slot);
}

void
meta_ix_del_all(void *st, enum meta_tab t, uint32_t slot)
{
    int n;
    const enum meta_ix *ixs = tab_ixs(t, &n);
    for (int i = 0; i < n; i++)
        meta_ix_remove(st, ixs[i], slot);
}
