/*
 * shard/meta/state.c - layout of a metadata state instance: sizes and
 * offsets computed from the capacities, header init, copy, accessors.
 *
 * Invariants: the layout is a pure function of struct meta_caps; the
 * header is the only part meta_state_init writes (tables all-zero =
 * empty). Callers: shard 0 (init, copy); any process (accessors).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/assert.h"
#include "common/checksum.h"
#include "shard/meta/index.h"
#include "shard/meta/state.h"

#define META_TAB_MAX_RECORDS (1u << 26)

_Static_assert(sizeof(struct meta_stream) == 288, "meta_stream layout");
_Static_assert(sizeof(struct meta_partition) == 88, "meta_partition layout");
_Static_assert(sizeof(struct meta_session) == 72, "meta_session layout");
_Static_assert(sizeof(struct meta_hdr) % 8 == 0, "meta_hdr layout");

static const size_t meta_rec_sizes[META_TAB_COUNT] = {
    [META_TAB_STREAM] = sizeof(struct meta_stream),
    [META_TAB_TOPIC] = sizeof(struct meta_topic),
    [META_TAB_PARTITION] = sizeof(struct meta_partition),
    [META_TAB_GROUP] = sizeof(struct meta_group),
    [META_TAB_MEMBER] = sizeof(struct meta_member),
    [META_TAB_ASSIGN] = sizeof(struct meta_assign),
    [META_TAB_USER] = sizeof(struct meta_user),
    [META_TAB_SGRANT] = sizeof(struct meta_sgrant),
    [META_TAB_TGRANT] = sizeof(struct meta_tgrant),
    [META_TAB_PAT] = sizeof(struct meta_pat),
    [META_TAB_SESSION] = sizeof(struct meta_session),
};

static const enum meta_tab meta_ix_tabs[META_IX_COUNT] = {
    [META_IX_STREAM_NAME] = META_TAB_STREAM,
    [META_IX_TOPIC_ID] = META_TAB_TOPIC,
    [META_IX_TOPIC_NAME] = META_TAB_TOPIC,
    [META_IX_PARTITION_ID] = META_TAB_PARTITION,
    [META_IX_GROUP_ID] = META_TAB_GROUP,
    [META_IX_GROUP_NAME] = META_TAB_GROUP,
    [META_IX_MEMBER_ID] = META_TAB_MEMBER,
    [META_IX_MEMBER_CLIENT] = META_TAB_MEMBER,
    [META_IX_ASSIGN] = META_TAB_ASSIGN,
    [META_IX_USER_NAME] = META_TAB_USER,
    [META_IX_SGRANT] = META_TAB_SGRANT,
    [META_IX_TGRANT] = META_TAB_TGRANT,
    [META_IX_PAT_NAME] = META_TAB_PAT,
    [META_IX_PAT_DIGEST] = META_TAB_PAT,
    [META_IX_SESSION] = META_TAB_SESSION,
};

size_t
meta_rec_size(enum meta_tab t)
{
    return meta_rec_sizes[t];
}

enum meta_tab
meta_ix_tab(enum meta_ix ix)
{
    return meta_ix_tabs[ix];
}

static uint32_t
caps_of(const struct meta_caps *c, enum meta_tab t)
{
    switch (t) {
    case META_TAB_STREAM:
        return c->streams;
    case META_TAB_TOPIC:
        return c->topics;
    case META_TAB_PARTITION:
        return c->partitions;
    case META_TAB_GROUP:
        return c->groups;
    case META_TAB_MEMBER:
        return c->members;
    case META_TAB_ASSIGN:
        return c->assignments;
    case META_TAB_USER:
        return c->users;
    case META_TAB_SGRANT:
        return c->stream_grants;
    case META_TAB_TGRANT:
        return c->topic_grants;
    case META_TAB_PAT:
        return c->pats;
    case META_TAB_SESSION:
        return c->session_slots;
    default:
        return 0;
    }
}

uint32_t
meta_tab_cap(const void *st, enum meta_tab t)
{
    return caps_of(&meta_hdr_c(st)->caps, t);
}

void
meta_caps_from_config(struct meta_caps *caps, const struct vs_config *c)
{
    memset(caps, 0, sizeof(*caps));
    caps->streams = c->max_streams;
    caps->topics = c->max_topics;
    caps->partitions = c->max_partitions;
    caps->groups = c->max_consumer_groups;
    caps->members = c->max_group_members;
    caps->users = c->max_users;
    caps->pats = c->max_pats;
    caps->stream_grants = 64u * c->max_users;
    caps->topic_grants = 64u * c->max_users;
    caps->assignments = c->max_partitions;
    caps->session_slots = META_CT_CEILING;
    caps->clients = c->clients_table_max;
    /* the node count of replica_addrs (comma-separated; "" = one node) */
    caps->nodes = 1;
    for (const char *a = c->replica_addrs; *a; a++)
        caps->nodes += *a == ',';
}

uint32_t
meta_nodes(const void *st)
{
    uint32_t n = meta_hdr_c(st)->caps.nodes;
    return n == 0 ? 1 : n;
}

int
meta_caps_check(const struct meta_caps *caps)
{
    for (int t = 0; t < META_TAB_COUNT; t++) {
        uint32_t n = caps_of(caps, (enum meta_tab)t);
        if (n < 1 || n > META_TAB_MAX_RECORDS)
            return -EINVAL;
    }
    if (caps->streams > META_MAX_STREAM_ID)
        return -EINVAL;
    if (caps->users > META_MAX_STREAM_ID)
        return -EINVAL;
    if (caps->session_slots > META_CT_CEILING || caps->clients < 2 ||
        caps->clients > caps->session_slots)
        return -EINVAL;
    if (caps->nodes > VS_REPLICAS_MAX)
        return -EINVAL;
    return 0;
}

static uint32_t
ix_entries(uint32_t records)
{
    uint32_t n = 8;
    while (n < 2u * records)
        n <<= 1;
    return n;
}

static size_t
align64(size_t n)
{
    return (n + 63u) & ~(size_t)63u;
}

/* Computes the layout into hdr (if non-NULL); returns the total size. */
static size_t
layout(const struct meta_caps *caps, struct meta_hdr *hdr)
{
    size_t off = align64(sizeof(struct meta_hdr));
    for (int t = 0; t < META_TAB_COUNT; t++) {
        if (hdr)
            hdr->tab_off[t] = off;
        off = align64(off + (size_t)caps_of(caps, (enum meta_tab)t) *
                                meta_rec_sizes[t]);
    }
    for (int i = 0; i < META_IX_COUNT; i++) {
        uint32_t n = ix_entries(caps_of(caps, meta_ix_tabs[i]));
        if (hdr) {
            hdr->ix[i].off = off;
            hdr->ix[i].mask = n - 1;
        }
        off = align64(off + (size_t)n * sizeof(uint32_t));
    }
    return off;
}

size_t
meta_state_size(const struct meta_caps *caps)
{
    if (meta_caps_check(caps) != 0)
        return 0;
    return layout(caps, NULL);
}

int
meta_state_init(void *mem, const struct meta_caps *caps)
{
    if (meta_caps_check(caps) != 0)
        return -EINVAL;
    struct meta_hdr *h = mem;
    memset(h, 0, sizeof(*h));
    h->magic = META_STATE_MAGIC;
    h->layout_version = META_LAYOUT_VERSION;
    h->caps = *caps;
    h->size = layout(caps, h);
    h->client_capacity = caps->clients;
    return 0;
}

int
meta_state_reset(void *mem, const struct meta_caps *caps)
{
    size_t n = meta_state_size(caps);
    if (n == 0)
        return -EINVAL;
    memset(mem, 0, n);
    return meta_state_init(mem, caps);
}

int
meta_state_check_header(const void *mem, size_t len)
{
    const struct meta_hdr *h = mem;
    if (len < sizeof(*h) || h->magic != META_STATE_MAGIC ||
        h->layout_version != META_LAYOUT_VERSION)
        return -EINVAL;
    if (meta_caps_check(&h->caps) != 0 || h->size != layout(&h->caps, NULL) ||
        h->size > len)
        return -EINVAL;
    return 0;
}

int
meta_state_copy(void *dst, const void *src)
{
    const struct meta_hdr *h = src;
    if (h->magic != META_STATE_MAGIC || meta_caps_check(&h->caps) != 0)
        return -EINVAL;
    memcpy(dst, src, h->size);
    return 0;
}

const struct meta_hdr *
meta_hdr_c(const void *st)
{
    return st;
}

struct meta_hdr *
meta_hdr(void *st)
{
    return st;
}

void *
meta_tab(void *st, enum meta_tab t)
{
    return (uint8_t *)st + meta_hdr(st)->tab_off[t];
}

const void *
meta_tab_c(const void *st, enum meta_tab t)
{
    return (const uint8_t *)st + meta_hdr_c(st)->tab_off[t];
}

uint64_t
meta_group_id(uint32_t stream_id, uint32_t topic_id, uint32_t partition_id)
{
    return ((uint64_t)stream_id << 32) | ((uint64_t)topic_id << 20) |
           partition_id;
}

uint32_t
meta_partition_shard(uint64_t group_id, uint32_t shards)
{
    VS_ASSERT(shards >= 1);
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(group_id >> (8 * i));
    return 1u + (uint32_t)(vs_xxh3_64(b, 8) % shards);
}
