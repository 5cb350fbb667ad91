/*
 * shard/meta/grants.c - sorted views and removal of permission grants
 * (see grants.h). Invariants: removal keeps the dangling counter equal to
 * the number of grants with dangling = 1. Callers: shard/meta only.
 */
#include "config.h"

#include <stdlib.h>

#include "common/mem.h"
#include "shard/meta/grants.h"
#include "shard/meta/index.h"

static int
cmp_sgrant(const void *x, const void *y, void *ctx)
{
    const void *cmp_state = ctx;
    const struct meta_sgrant *a =
        meta_rec_c(cmp_state, META_TAB_SGRANT, *(const uint32_t *)x);
    const struct meta_sgrant *b =
        meta_rec_c(cmp_state, META_TAB_SGRANT, *(const uint32_t *)y);
    if (a->user_id != b->user_id)
        return a->user_id < b->user_id ? -1 : 1;
    if (a->stream_id != b->stream_id)
        return a->stream_id < b->stream_id ? -1 : 1;
    return 0;
}

static int
cmp_tgrant(const void *x, const void *y, void *ctx)
{
    const void *cmp_state = ctx;
    const struct meta_tgrant *a =
        meta_rec_c(cmp_state, META_TAB_TGRANT, *(const uint32_t *)x);
    const struct meta_tgrant *b =
        meta_rec_c(cmp_state, META_TAB_TGRANT, *(const uint32_t *)y);
    if (a->user_id != b->user_id)
        return a->user_id < b->user_id ? -1 : 1;
    if (a->stream_id != b->stream_id)
        return a->stream_id < b->stream_id ? -1 : 1;
    if (a->topic_id != b->topic_id)
        return a->topic_id < b->topic_id ? -1 : 1;
    return 0;
}

void
meta_grants_collect(const void *st, uint32_t user, struct meta_grant_view *v)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    v->ns = v->nt = 0;
    v->s = vs_xmalloc(sizeof(uint32_t) * (h->count[META_TAB_SGRANT] + 1));
    v->t = vs_xmalloc(sizeof(uint32_t) * (h->count[META_TAB_TGRANT] + 1));
    uint32_t cap = meta_tab_cap(st, META_TAB_SGRANT);
    for (uint32_t i = 0; i < cap && v->ns < h->count[META_TAB_SGRANT]; i++) {
        const struct meta_sgrant *g = meta_rec_c(st, META_TAB_SGRANT, i);
        if (g->in_use && (user == META_NONE || g->user_id == user))
            v->s[v->ns++] = i;
    }
    cap = meta_tab_cap(st, META_TAB_TGRANT);
    for (uint32_t i = 0; i < cap && v->nt < h->count[META_TAB_TGRANT]; i++) {
        const struct meta_tgrant *g = meta_rec_c(st, META_TAB_TGRANT, i);
        if (g->in_use && (user == META_NONE || g->user_id == user))
            v->t[v->nt++] = i;
    }
    qsort_r(v->s, v->ns, sizeof(uint32_t), cmp_sgrant, (void *)st);
    qsort_r(v->t, v->nt, sizeof(uint32_t), cmp_tgrant, (void *)st);
}

void
meta_grants_view_fini(struct meta_grant_view *v)
{
    free(v->s);
    free(v->t);
    v->s = v->t = NULL;
    v->ns = v->nt = 0;
}

static int
match(uint32_t gu, uint32_t gs, uint32_t gt, int dangling, uint32_t user,
      uint32_t stream, uint32_t topic, int only_dangling)
{
    if (only_dangling && !dangling)
        return 0;
    if (user != META_NONE && gu != user)
        return 0;
    if (stream != META_NONE && gs != stream)
        return 0;
    if (topic != META_NONE && gt != topic)
        return 0;
    return 1;
}

void
meta_grants_remove(void *st, uint32_t user, uint32_t stream, uint32_t topic,
                   int only_dangling)
{
    struct meta_hdr *h = meta_hdr(st);
    if (only_dangling && h->dangling_grants == 0)
        return;
    if (topic == META_NONE) {
        uint32_t cap = meta_tab_cap(st, META_TAB_SGRANT);
        for (uint32_t i = 0; i < cap && h->count[META_TAB_SGRANT]; i++) {
            struct meta_sgrant *g = meta_rec(st, META_TAB_SGRANT, i);
            if (!g->in_use || !match(g->user_id, g->stream_id, 0, g->dangling,
                                     user, stream, META_NONE, only_dangling))
                continue;
            if (g->dangling)
                h->dangling_grants--;
            meta_ix_del_all(st, META_TAB_SGRANT, i);
            meta_slot_free(st, META_TAB_SGRANT, i);
        }
    }
    uint32_t cap = meta_tab_cap(st, META_TAB_TGRANT);
    for (uint32_t i = 0; i < cap && h->count[META_TAB_TGRANT]; i++) {
        struct meta_tgrant *g = meta_rec(st, META_TAB_TGRANT, i);
        if (!g->in_use ||
            !match(g->user_id, g->stream_id, g->topic_id, g->dangling, user,
                   stream, topic, only_dangling))
            continue;
        if (g->dangling)
            h->dangling_grants--;
        meta_ix_del_all(st, META_TAB_TGRANT, i);
        meta_slot_free(st, META_TAB_TGRANT, i);
    }
}
