/*
 * shard/meta/lookup.c - read-only lookups by id or name (see lookup.h).
 * Invariants: never writes the instance. Callers: any process holding a
 * read section on the instance.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "shard/meta/index.h"
#include "shard/meta/lookup.h"

static const void *
find(const void *st, enum meta_ix ix, const struct meta_key *k)
{
    uint32_t s = meta_ix_find(st, ix, k);
    return s == META_NONE ? NULL : meta_rec_c(st, meta_ix_tab(ix), s);
}

const struct meta_stream *
meta_stream_by_id(const void *st, uint32_t id)
{
    if (id >= meta_tab_cap(st, META_TAB_STREAM) ||
        !meta_rec_live(st, META_TAB_STREAM, id))
        return NULL;
    return meta_rec_c(st, META_TAB_STREAM, id);
}

const struct meta_stream *
meta_stream_by_name(const void *st, const char *name, size_t len)
{
    struct meta_key k = {.name = (const uint8_t *)name, .name_len = len};
    return find(st, META_IX_STREAM_NAME, &k);
}

const struct meta_stream *
meta_stream_find(const void *st, const struct meta_ident *id)
{
    if (id->kind == META_IDENT_NUMERIC)
        return meta_stream_by_id(st, id->id);
    if (id->kind == META_IDENT_NAME)
        return meta_stream_by_name(st, id->name, id->len);
    return NULL;
}

const struct meta_topic *
meta_topic_by_id(const void *st, uint32_t stream_id, uint32_t topic_id)
{
    struct meta_key k = {.a = stream_id, .b = topic_id};
    return find(st, META_IX_TOPIC_ID, &k);
}

const struct meta_topic *
meta_topic_by_name(const void *st, uint32_t stream_id, const char *name,
                   size_t len)
{
    struct meta_key k = {
        .a = stream_id, .name = (const uint8_t *)name, .name_len = len};
    return find(st, META_IX_TOPIC_NAME, &k);
}

const struct meta_topic *
meta_topic_find(const void *st, uint32_t stream_id, const struct meta_ident *id)
{
    if (id->kind == META_IDENT_NUMERIC)
        return meta_topic_by_id(st, stream_id, id->id);
    if (id->kind == META_IDENT_NAME)
        return meta_topic_by_name(st, stream_id, id->name, id->len);
    return NULL;
}

const struct meta_partition *
meta_partition_by_id(const void *st, uint32_t stream_id, uint32_t topic_id,
                     uint32_t partition_id)
{
    struct meta_key k = {.a = stream_id, .b = topic_id, .c = partition_id};
    return find(st, META_IX_PARTITION_ID, &k);
}

const struct meta_group *
meta_group_by_id(const void *st, uint32_t stream_id, uint32_t topic_id,
                 uint32_t group_id)
{
    struct meta_key k = {.a = stream_id, .b = topic_id, .c = group_id};
    return find(st, META_IX_GROUP_ID, &k);
}

const struct meta_group *
meta_group_by_name(const void *st, uint32_t stream_id, uint32_t topic_id,
                   const char *name, size_t len)
{
    struct meta_key k = {.a = stream_id,
                         .b = topic_id,
                         .name = (const uint8_t *)name,
                         .name_len = len};
    return find(st, META_IX_GROUP_NAME, &k);
}

const struct meta_group *
meta_group_find(const void *st, uint32_t stream_id, uint32_t topic_id,
                const struct meta_ident *id)
{
    if (id->kind == META_IDENT_NUMERIC)
        return meta_group_by_id(st, stream_id, topic_id, id->id);
    if (id->kind == META_IDENT_NAME)
        return meta_group_by_name(st, stream_id, topic_id, id->name, id->len);
    return NULL;
}

const struct meta_member *
meta_member_by_client(const void *st, uint32_t stream_id, uint32_t topic_id,
                      uint32_t group_id, struct vs_u128 client)
{
    struct meta_key k = {
        .a = stream_id, .b = topic_id, .c = group_id, .client = client};
    return find(st, META_IX_MEMBER_CLIENT, &k);
}

const struct meta_member *
meta_member_by_id(const void *st, uint32_t stream_id, uint32_t topic_id,
                  uint32_t group_id, uint32_t member_id)
{
    struct meta_key k = {
        .a = stream_id, .b = topic_id, .c = group_id, .d = member_id};
    return find(st, META_IX_MEMBER_ID, &k);
}

static int
member_id_cmp(const void *a, const void *b)
{
    const struct vs_u128 *x = a, *y = b;
    if (x->hi != y->hi)
        return x->hi < y->hi ? -1 : 1;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return 0;
}

struct vs_u128 *
meta_member_ids(const void *st, size_t *n)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    uint32_t cap = meta_tab_cap(st, META_TAB_MEMBER);
    uint32_t seen = 0;
    struct vs_u128 *ids = NULL;
    *n = 0;
    if (h->count[META_TAB_MEMBER] > 0)
        ids = vs_xmalloc(h->count[META_TAB_MEMBER] * sizeof(*ids));
    for (uint32_t i = 0; i < cap && seen < h->count[META_TAB_MEMBER]; i++) {
        const struct meta_member *m = meta_rec_c(st, META_TAB_MEMBER, i);
        if (!m->in_use)
            continue;
        seen++;
        ids[(*n)++] = m->client_id;
    }
    if (*n > 1)
        qsort(ids, *n, sizeof(*ids), member_id_cmp);
    return ids;
}

int
meta_member_ids_has(const struct vs_u128 *ids, size_t n, struct vs_u128 client)
{
    return n > 0 &&
           bsearch(&client, ids, n, sizeof(*ids), member_id_cmp) != NULL;
}

const struct meta_assign *
meta_assign_get(const void *st, uint32_t stream_id, uint32_t topic_id,
                uint32_t group_id, uint32_t partition_id)
{
    struct meta_key k = {
        .a = stream_id, .b = topic_id, .c = group_id, .d = partition_id};
    return find(st, META_IX_ASSIGN, &k);
}

const struct meta_user *
meta_user_by_id(const void *st, uint32_t id)
{
    if (id >= meta_tab_cap(st, META_TAB_USER) ||
        !meta_rec_live(st, META_TAB_USER, id))
        return NULL;
    return meta_rec_c(st, META_TAB_USER, id);
}

const struct meta_user *
meta_user_by_name(const void *st, const char *name, size_t len)
{
    struct meta_key k = {.name = (const uint8_t *)name, .name_len = len};
    return find(st, META_IX_USER_NAME, &k);
}

const struct meta_user *
meta_user_find(const void *st, const struct meta_ident *id)
{
    if (id->kind == META_IDENT_NUMERIC)
        return meta_user_by_id(st, id->id);
    if (id->kind == META_IDENT_NAME)
        return meta_user_by_name(st, id->name, id->len);
    return NULL;
}

const struct meta_sgrant *
meta_sgrant_get(const void *st, uint32_t user_id, uint32_t stream_id)
{
    struct meta_key k = {.a = user_id, .b = stream_id};
    return find(st, META_IX_SGRANT, &k);
}

const struct meta_tgrant *
meta_tgrant_get(const void *st, uint32_t user_id, uint32_t stream_id,
                uint32_t topic_id)
{
    struct meta_key k = {.a = user_id, .b = stream_id, .c = topic_id};
    return find(st, META_IX_TGRANT, &k);
}

const struct meta_pat *
meta_pat_by_name(const void *st, uint32_t user_id, const char *name, size_t len)
{
    struct meta_key k = {
        .a = user_id, .name = (const uint8_t *)name, .name_len = len};
    return find(st, META_IX_PAT_NAME, &k);
}

const struct meta_pat *
meta_pat_by_digest(const void *st, const uint8_t digest[32])
{
    struct meta_key k = {.name = digest, .name_len = META_DIGEST_LEN};
    return find(st, META_IX_PAT_DIGEST, &k);
}

const struct meta_session *
meta_session_by_client(const void *st, struct vs_u128 client)
{
    struct meta_key k = {.client = client};
    return find(st, META_IX_SESSION, &k);
}

uint32_t
meta_session_slot(const void *st, const struct meta_session *s)
{
    const struct meta_session *base = meta_tab_c(st, META_TAB_SESSION);
    return (uint32_t)(s - base);
}

const struct meta_session *
meta_session_at(const void *st, uint32_t slot)
{
    if (slot >= meta_tab_cap(st, META_TAB_SESSION) ||
        !meta_rec_live(st, META_TAB_SESSION, slot))
        return NULL;
    return meta_rec_c(st, META_TAB_SESSION, slot);
}

uint32_t
meta_partition_owner(const struct meta_partition *p, uint32_t k)
{
    return meta_partition_shard(meta_group_id(p->stream_id, p->topic_id, p->id),
                                k);
}

uint32_t
meta_partition_replicas(const void *st, uint32_t stream_id, uint32_t topic_id,
                        uint32_t partition_id, uint8_t out[VS_REPLICAS_MAX])
{
    const struct meta_partition *p =
        meta_partition_by_id(st, stream_id, topic_id, partition_id);
    if (p == NULL)
        return 0;
    memcpy(out, p->replicas, p->replica_count);
    return p->replica_count;
}
