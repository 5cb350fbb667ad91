/*
 * shard/meta/apply.c - the metadata state machine (see apply.h).
 *
 * Every handler follows the same order: resolve the addressed objects,
 * authorize (a scope that does not resolve passes, so the request then
 * fails with its not-found code), validate every precondition including
 * capacities, and only then mutate. So a failed op leaves the state
 * unchanged (except the client's watermark, written by meta_apply).
 *
 * Invariants: deterministic (no clock but ctx->timestamp, no randomness,
 * no I/O, no hashing of secrets); ids smallest-free (streams, topics,
 * partitions, users, member slots) or monotonic (groups).
 * Callers: shard 0 only.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/assert.h"
#include "common/errors.h"
#include "common/mem.h"
#include "shard/meta/apply.h"
#include "shard/meta/authz.h"
#include "shard/meta/grants.h"
#include "shard/meta/index.h"
#include "shard/meta/lookup.h"
#include "shard/meta/ops.h"
#include "shard/meta/placement.h"
#include "shard/meta/records.h"

#define META_PARTITIONS_PER_OP 1000u

struct actx {
    void *st;
    struct meta_hdr *h;
    const struct meta_op_ctx *c;
    const struct meta_op *op;
    struct meta_result *out;
};

void
meta_result_init(struct meta_result *r)
{
    memset(r, 0, sizeof(*r));
    vs_wbuf_init(&r->payload);
    r->session_slot = META_NONE;
    r->evicted_slot = META_NONE;
}

void
meta_result_fini(struct meta_result *r)
{
    vs_wbuf_fini(&r->payload);
}

void
meta_result_reset(struct meta_result *r)
{
    r->code = 0;
    vs_wbuf_reset(&r->payload);
    r->session_slot = META_NONE;
    r->evicted_slot = META_NONE;
    memset(&r->evicted_client, 0, sizeof(r->evicted_client));
}

void
meta_reply_body_write(uint32_t code, const uint8_t *payload, size_t len,
                      struct vs_wbuf *w)
{
    if (code != 0) {
        vs_wr_u32(w, 1);
        vs_wr_u32(w, 0);
        vs_wr_u32(w, code);
        return;
    }
    vs_wr_u32(w, 0);
    if (len)
        vs_wr_bytes(w, payload, len);
}

static int
allowed(struct actx *a, enum meta_perm_action act, uint32_t s, uint32_t t)
{
    return meta_authz_check(a->st, a->c->user_id, act, s, t);
}

static uint32_t
free_of(struct actx *a, enum meta_tab t)
{
    return meta_tab_cap(a->st, t) - a->h->count[t];
}

/* ---------------------------------------------------------------- groups */

static uint32_t
slot_of(const void *st, enum meta_tab t, const void *rec)
{
    return (
        uint32_t)(((const uint8_t *)rec - (const uint8_t *)meta_tab_c(st, t)) /
                  meta_rec_size(t));
}

static void
assign_del(struct actx *a, const struct meta_assign *as)
{
    uint32_t s = slot_of(a->st, META_TAB_ASSIGN, as);
    meta_ix_del_all(a->st, META_TAB_ASSIGN, s);
    meta_slot_free(a->st, META_TAB_ASSIGN, s);
}

static void
assign_set(struct actx *a, const struct meta_group *g, uint32_t p,
           uint32_t owner, uint32_t revoke_to)
{
    struct meta_assign *as = (struct meta_assign *)meta_assign_get(
        a->st, g->stream_id, g->topic_id, g->id, p);
    if (!as) {
        uint32_t s = meta_slot_alloc(a->st, META_TAB_ASSIGN, UINT32_MAX);
        VS_ASSERT(s != META_NONE); /* capacity checked by the caller */
        as = meta_rec(a->st, META_TAB_ASSIGN, s);
        as->stream_id = g->stream_id;
        as->topic_id = g->topic_id;
        as->group_id = g->id;
        as->partition_id = p;
        meta_ix_add_all(a->st, META_TAB_ASSIGN, s);
    }
    as->owner = owner;
    as->revoke_to = revoke_to;
}

/* Member ids of a group in slot order; heap array of members_count. */
static uint32_t *
group_members(struct actx *a, const struct meta_group *g, uint32_t *n)
{
    uint32_t *m = vs_xmalloc(sizeof(uint32_t) * (g->members_count + 1));
    *n = 0;
    for (uint32_t i = 0; i < g->member_id_bound && *n < g->members_count; i++)
        if (meta_member_by_id(a->st, g->stream_id, g->topic_id, g->id, i))
            m[(*n)++] = i;
    return m;
}

static uint32_t
group_assigned(struct actx *a, const struct meta_group *g, uint32_t bound)
{
    uint32_t n = 0;
    for (uint32_t p = 0; p < bound; p++)
        if (meta_assign_get(a->st, g->stream_id, g->topic_id, g->id, p))
            n++;
    return n;
}

/* Eager: clear, then partition i (ascending) -> member i mod M in slot
 * order. `probe` bounds the old partition ids to clear. */
static void
rebalance_eager(struct actx *a, struct meta_group *g, uint32_t probe)
{
    const struct meta_topic *t =
        meta_topic_by_id(a->st, g->stream_id, g->topic_id);
    uint32_t pc = t ? t->partitions_count : 0;
    if (probe < pc)
        probe = pc;
    for (uint32_t p = 0; p < probe; p++) {
        const struct meta_assign *as =
            meta_assign_get(a->st, g->stream_id, g->topic_id, g->id, p);
        if (as)
            assign_del(a, as);
    }
    uint32_t n;
    uint32_t *m = group_members(a, g, &n);
    for (uint32_t p = 0; n > 0 && p < pc; p++)
        assign_set(a, g, p, m[p % n], META_NONE);
    free(m);
    g->generation++;
}

/* Assignment records needed if every group of the topic gets `pc`
 * partitions assigned (groups with members only). */
static int
topic_assign_fits(struct actx *a, const struct meta_topic *t, uint32_t pc,
                  uint32_t extra_group_member_gid)
{
    uint64_t need = 0, have = 0;
    for (uint32_t gid = 0; gid < t->next_group_id; gid++) {
        const struct meta_group *g =
            meta_group_by_id(a->st, t->stream_id, t->id, gid);
        if (!g)
            continue;
        have += group_assigned(a, g, t->partitions_count);
        if (g->members_count > 0 || gid == extra_group_member_gid)
            need += pc;
    }
    return a->h->count[META_TAB_ASSIGN] - have + need <=
           meta_tab_cap(a->st, META_TAB_ASSIGN);
}

static void
rebalance_topic(struct actx *a, const struct meta_topic *t, uint32_t probe)
{
    for (uint32_t gid = 0; gid < t->next_group_id; gid++) {
        struct meta_group *g = (struct meta_group *)meta_group_by_id(
            a->st, t->stream_id, t->id, gid);
        if (g)
            rebalance_eager(a, g, probe);
    }
}

static void
member_del(struct actx *a, const struct meta_member *m)
{
    uint32_t s = slot_of(a->st, META_TAB_MEMBER, m);
    meta_ix_del_all(a->st, META_TAB_MEMBER, s);
    meta_slot_free(a->st, META_TAB_MEMBER, s);
}

static void
group_del(struct actx *a, struct meta_group *g, uint32_t probe)
{
    for (uint32_t p = 0; p < probe; p++) {
        const struct meta_assign *as =
            meta_assign_get(a->st, g->stream_id, g->topic_id, g->id, p);
        if (as)
            assign_del(a, as);
    }
    for (uint32_t i = 0; i < g->member_id_bound; i++) {
        const struct meta_member *m =
            meta_member_by_id(a->st, g->stream_id, g->topic_id, g->id, i);
        if (m)
            member_del(a, m);
    }
    struct meta_topic *t =
        (struct meta_topic *)meta_topic_by_id(a->st, g->stream_id, g->topic_id);
    if (t)
        t->groups_count--;
    uint32_t s = slot_of(a->st, META_TAB_GROUP, g);
    meta_ix_del_all(a->st, META_TAB_GROUP, s);
    meta_slot_free(a->st, META_TAB_GROUP, s);
}

/* Removes one member and rebalances its group eagerly. */
static void
member_leave(struct actx *a, struct meta_group *g, const struct meta_member *m)
{
    member_del(a, m);
    g->members_count--;
    const struct meta_topic *t =
        meta_topic_by_id(a->st, g->stream_id, g->topic_id);
    rebalance_eager(a, g, t ? t->partitions_count : 0);
}

/* Removes a client from every group (Logout, RemoveMember). */
static void
client_leave_all(struct actx *a, struct vs_u128 client)
{
    uint32_t cap = meta_tab_cap(a->st, META_TAB_MEMBER);
    for (uint32_t i = 0; i < cap && a->h->count[META_TAB_MEMBER]; i++) {
        const struct meta_member *m = meta_rec_c(a->st, META_TAB_MEMBER, i);
        if (!m->in_use || !vs_u128_eq(m->client_id, client))
            continue;
        struct meta_group *g = (struct meta_group *)meta_group_by_id(
            a->st, m->stream_id, m->topic_id, m->group_id);
        VS_ASSERT(g != NULL);
        member_leave(a, g, m);
    }
}

static int
in_list(const uint32_t *l, uint32_t n, uint32_t v)
{
    for (uint32_t i = 0; i < n; i++)
        if (l[i] == v)
            return 1;
    return 0;
}

/* Cooperative join (protocol-2 §6.3), after the new member was added. */
static void
rebalance_join(struct actx *a, struct meta_group *g)
{
    const struct meta_topic *t =
        meta_topic_by_id(a->st, g->stream_id, g->topic_id);
    uint32_t pc = t ? t->partitions_count : 0;
    uint32_t n;
    uint32_t *m = group_members(a, g, &n);
    uint32_t *owned = vs_xcalloc(n + 1, sizeof(uint32_t));
    uint32_t *idle = vs_xmalloc(sizeof(uint32_t) * (n + 1));
    uint32_t *unassigned = vs_xmalloc(sizeof(uint32_t) * (pc + 1));
    uint32_t nu = 0, ni = 0;
    for (uint32_t p = 0; p < pc; p++) {
        const struct meta_assign *as =
            meta_assign_get(a->st, g->stream_id, g->topic_id, g->id, p);
        if (!as) {
            unassigned[nu++] = p;
            continue;
        }
        for (uint32_t k = 0; k < n; k++)
            if (m[k] == as->owner)
                owned[k]++;
    }
    for (uint32_t k = 0; k < n; k++)
        if (owned[k] == 0)
            idle[ni++] = k;
    /* (1) unassigned partitions round-robin to idle members */
    for (uint32_t i = 0; i < nu && ni > 0; i++) {
        uint32_t k = idle[i % ni];
        assign_set(a, g, unassigned[i], m[k], META_NONE);
        owned[k]++;
    }
    /* (2) excess beyond fair share to idle members not already targets */
    ni = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (owned[k] != 0)
            continue;
        int target = 0;
        for (uint32_t p = 0; p < pc && !target; p++) {
            const struct meta_assign *as =
                meta_assign_get(a->st, g->stream_id, g->topic_id, g->id, p);
            target = as && as->revoke_to == m[k];
        }
        if (!target)
            idle[ni++] = k;
    }
    if (n > 0 && ni > 0) {
        uint32_t fair = pc / n, rem = pc % n, ti = 0;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t allow = fair;
            if (owned[k] > fair && rem > 0) {
                allow = fair + 1;
                rem--;
            }
            if (owned[k] <= allow)
                continue;
            uint32_t excess = owned[k] - allow;
            for (uint32_t p = pc; p-- > 0 && excess > 0;) {
                const struct meta_assign *as =
                    meta_assign_get(a->st, g->stream_id, g->topic_id, g->id, p);
                if (!as || as->owner != m[k])
                    continue;
                excess--;
                if (as->revoke_to != META_NONE)
                    continue; /* already on its way */
                uint32_t to = m[idle[ti++ % ni]];
                if (in_list(a->op->inflight, a->op->inflight_count, p))
                    assign_set(a, g, p, m[k], to);
                else
                    assign_set(a, g, p, to, META_NONE);
            }
        }
    }
    free(unassigned);
    free(idle);
    free(owned);
    free(m);
    g->generation++;
}

/* ------------------------------------------------------ streams, topics */

static void
partition_del(struct actx *a, const struct meta_partition *p)
{
    meta_place_forget(a->st, p);
    uint32_t s = slot_of(a->st, META_TAB_PARTITION, p);
    meta_ix_del_all(a->st, META_TAB_PARTITION, s);
    meta_slot_free(a->st, META_TAB_PARTITION, s);
}

/* Appends n partitions to t and decides their replica sets. */
static void
partitions_add(struct actx *a, struct meta_topic *t, uint32_t n)
{
    uint32_t first = t->partitions_count;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t s = meta_slot_alloc(a->st, META_TAB_PARTITION, UINT32_MAX);
        VS_ASSERT(s != META_NONE);
        struct meta_partition *p = meta_rec(a->st, META_TAB_PARTITION, s);
        p->stream_id = t->stream_id;
        p->topic_id = t->id;
        p->id = t->partitions_count++;
        p->created_op = a->c->op;
        p->created_at = a->c->timestamp;
        meta_ix_add_all(a->st, META_TAB_PARTITION, s);
    }
    meta_place_partitions(a->st, t, first, n);
}

static void
topic_del(struct actx *a, struct meta_topic *t)
{
    for (uint32_t gid = 0; gid < t->next_group_id; gid++) {
        struct meta_group *g = (struct meta_group *)meta_group_by_id(
            a->st, t->stream_id, t->id, gid);
        if (g)
            group_del(a, g, t->partitions_count);
    }
    for (uint32_t p = 0; p < t->partitions_count; p++) {
        const struct meta_partition *pp =
            meta_partition_by_id(a->st, t->stream_id, t->id, p);
        VS_ASSERT(pp != NULL);
        partition_del(a, pp);
    }
    meta_grants_remove(a->st, META_NONE, t->stream_id, t->id, 0);
    struct meta_stream *s = meta_rec(a->st, META_TAB_STREAM, t->stream_id);
    s->topics_count--;
    uint32_t slot = slot_of(a->st, META_TAB_TOPIC, t);
    meta_ix_del_all(a->st, META_TAB_TOPIC, slot);
    meta_slot_free(a->st, META_TAB_TOPIC, slot);
}

/* Topics of a stream, by id. Calls fn for each (may delete it). */
static void
for_topics(struct actx *a, uint32_t sid,
           void (*fn)(struct actx *, struct meta_topic *))
{
    const struct meta_stream *s = meta_stream_by_id(a->st, sid);
    uint32_t left = s->topics_count;
    for (uint32_t id = 0; id < META_MAX_TOPIC_ID && left > 0; id++) {
        struct meta_topic *t =
            (struct meta_topic *)meta_topic_by_id(a->st, sid, id);
        if (!t)
            continue;
        left--;
        fn(a, t);
    }
}

static void
topic_purge(struct actx *a, struct meta_topic *t)
{
    for (uint32_t p = 0; p < t->partitions_count; p++) {
        struct meta_partition *pp =
            (struct meta_partition *)meta_partition_by_id(a->st, t->stream_id,
                                                          t->id, p);
        pp->purge_generation++;
        pp->deleted_up_to_offset = 0;
    }
}

static uint32_t
op_create_stream(struct actx *a)
{
    const struct meta_op *op = a->op;
    if (!allowed(a, META_ACT_CREATE_STREAM, META_NONE, META_NONE))
        return VS_E_UNAUTHORIZED;
    if (meta_name_check(op->name, op->name_len))
        return VS_E_INVALID_COMMAND;
    if (meta_stream_by_name(a->st, op->name, op->name_len))
        return VS_E_STREAM_NAME_ALREADY_EXISTS;
    uint32_t id = meta_slot_alloc(a->st, META_TAB_STREAM, META_MAX_STREAM_ID);
    if (id == META_NONE)
        return VS_E_TOO_MANY_STREAMS;
    struct meta_stream *s = meta_rec(a->st, META_TAB_STREAM, id);
    s->id = id;
    s->created_op = a->c->op;
    s->created_at = a->c->timestamp;
    s->name_len = op->name_len;
    memcpy(s->name, op->name, op->name_len);
    meta_ix_add_all(a->st, META_TAB_STREAM, id);
    meta_grants_remove(a->st, META_NONE, id, META_NONE, 1);
    meta_wr_stream_record(&a->out->payload, s, 0, 0);
    return 0;
}

static uint32_t
op_stream(struct actx *a)
{
    const struct meta_op *op = a->op;
    struct meta_stream *s =
        (struct meta_stream *)meta_stream_find(a->st, &op->stream);
    if (!allowed(a, META_ACT_MANAGE_STREAM, s ? s->id : META_NONE, META_NONE))
        return VS_E_UNAUTHORIZED;
    if (!s)
        return VS_E_STREAM_ID_NOT_FOUND;
    switch (op->operation) {
    case VS_OP_UPDATE_STREAM: {
        if (meta_name_check(op->name, op->name_len))
            return VS_E_INVALID_COMMAND;
        const struct meta_stream *o =
            meta_stream_by_name(a->st, op->name, op->name_len);
        if (o && o != s)
            return VS_E_STREAM_NAME_ALREADY_EXISTS;
        meta_ix_remove(a->st, META_IX_STREAM_NAME, s->id);
        s->name_len = op->name_len;
        memset(s->name, 0, sizeof(s->name));
        memcpy(s->name, op->name, op->name_len);
        meta_ix_insert(a->st, META_IX_STREAM_NAME, s->id);
        return 0;
    }
    case VS_OP_DELETE_STREAM: {
        uint32_t id = s->id;
        for_topics(a, id, topic_del);
        meta_grants_remove(a->st, META_NONE, id, META_NONE, 0);
        meta_ix_del_all(a->st, META_TAB_STREAM, id);
        meta_slot_free(a->st, META_TAB_STREAM, id);
        return 0;
    }
    case VS_OP_PURGE_STREAM:
        for_topics(a, s->id, topic_purge);
        return 0;
    default:
        return VS_E_INVALID_COMMAND;
    }
}

static int
opts_valid(const struct meta_topic_opts *o)
{
    return o->compression == 1 || o->compression == 2;
}

static uint32_t
op_create_topic(struct actx *a)
{
    const struct meta_op *op = a->op;
    const struct meta_stream *s = meta_stream_find(a->st, &op->stream);
    if (!allowed(a, META_ACT_CREATE_TOPIC, s ? s->id : META_NONE, META_NONE))
        return VS_E_UNAUTHORIZED;
    if (!s)
        return VS_E_STREAM_ID_NOT_FOUND;
    if (meta_name_check(op->name, op->name_len))
        return VS_E_INVALID_COMMAND;
    if (op->count > META_PARTITIONS_PER_OP)
        return VS_E_TOO_MANY_PARTITIONS;
    if (!opts_valid(&op->opts))
        return VS_E_INVALID_OPTION_VALUE;
    /* replication factor: 0 = min(3, nodes), at most the node count */
    uint32_t nodes = meta_nodes(a->st);
    uint32_t rf = op->opts.replication_factor;
    if (rf == 0)
        rf = meta_rf_default(nodes);
    if (rf > nodes)
        return VS_E_INVALID_REPLICATION_FACTOR;
    if (meta_topic_by_name(a->st, s->id, op->name, op->name_len))
        return VS_E_TOPIC_NAME_ALREADY_EXISTS;
    uint32_t tid = 0;
    while (tid < META_MAX_TOPIC_ID && meta_topic_by_id(a->st, s->id, tid))
        tid++;
    if (tid >= META_MAX_TOPIC_ID || free_of(a, META_TAB_TOPIC) == 0)
        return VS_E_TOO_MANY_TOPICS;
    if (free_of(a, META_TAB_PARTITION) < op->count)
        return VS_E_TOO_MANY_PARTITIONS;
    uint32_t slot = meta_slot_alloc(a->st, META_TAB_TOPIC, UINT32_MAX);
    struct meta_topic *t = meta_rec(a->st, META_TAB_TOPIC, slot);
    t->stream_id = s->id;
    t->id = tid;
    t->created_op = a->c->op;
    t->created_at = a->c->timestamp;
    t->opts = op->opts;
    t->opts.replication_factor = (uint8_t)rf;
    t->name_len = op->name_len;
    memcpy(t->name, op->name, op->name_len);
    meta_ix_add_all(a->st, META_TAB_TOPIC, slot);
    ((struct meta_stream *)s)->topics_count++;
    partitions_add(a, t, op->count);
    meta_grants_remove(a->st, META_NONE, s->id, tid, 1);
    meta_wr_topic_header(&a->out->payload, t, 0, 0);
    for (uint32_t p = 0; p < t->partitions_count; p++)
        meta_wr_partition_record(&a->out->payload,
                                 meta_partition_by_id(a->st, s->id, tid, p), 0,
                                 0, 0, 0);
    return 0;
}

/* Resolves (stream, topic) for topic-scoped ops and authorizes. */
static uint32_t
resolve_topic(struct actx *a, enum meta_perm_action act,
              struct meta_topic **out)
{
    const struct meta_stream *s = meta_stream_find(a->st, &a->op->stream);
    const struct meta_topic *t =
        s ? meta_topic_find(a->st, s->id, &a->op->topic) : NULL;
    if (!allowed(a, act, s ? s->id : META_NONE, t ? t->id : META_NONE))
        return VS_E_UNAUTHORIZED;
    if (!s)
        return VS_E_STREAM_ID_NOT_FOUND;
    if (!t)
        return VS_E_TOPIC_ID_NOT_FOUND;
    *out = (struct meta_topic *)t;
    return 0;
}

static uint32_t
op_topic(struct actx *a)
{
    const struct meta_op *op = a->op;
    struct meta_topic *t;
    uint32_t e = resolve_topic(a, META_ACT_MANAGE_TOPIC, &t);
    if (e)
        return e;
    switch (op->operation) {
    case VS_OP_UPDATE_TOPIC: {
        if (meta_name_check(op->name, op->name_len))
            return VS_E_INVALID_COMMAND;
        const struct meta_topic *o =
            meta_topic_by_name(a->st, t->stream_id, op->name, op->name_len);
        if (o && o != t)
            return VS_E_TOPIC_NAME_ALREADY_EXISTS;
        uint8_t m = op->opts.explicit_mask;
        if ((m & META_TOPT_COMPRESSION) && !opts_valid(&op->opts))
            return VS_E_INVALID_OPTION_VALUE;
        uint32_t slot = slot_of(a->st, META_TAB_TOPIC, t);
        meta_ix_remove(a->st, META_IX_TOPIC_NAME, slot);
        t->name_len = op->name_len;
        memset(t->name, 0, sizeof(t->name));
        memcpy(t->name, op->name, op->name_len);
        meta_ix_insert(a->st, META_IX_TOPIC_NAME, slot);
        if (m & META_TOPT_COMPRESSION)
            t->opts.compression = op->opts.compression;
        if (m & META_TOPT_MESSAGE_EXPIRY)
            t->opts.message_expiry = op->opts.message_expiry;
        if (m & META_TOPT_MAX_TOPIC_SIZE)
            t->opts.max_topic_size = op->opts.max_topic_size;
        t->opts.explicit_mask |=
            (uint8_t)(m & (META_TOPT_COMPRESSION | META_TOPT_MESSAGE_EXPIRY |
                           META_TOPT_MAX_TOPIC_SIZE));
        return 0;
    }
    case VS_OP_DELETE_TOPIC:
        topic_del(a, t);
        return 0;
    case VS_OP_PURGE_TOPIC:
        topic_purge(a, t);
        return 0;
    case VS_OP_CREATE_PARTITIONS:
    case VS_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS: {
        if (op->count == 0 || op->count > META_PARTITIONS_PER_OP)
            return VS_E_TOO_MANY_PARTITIONS;
        if ((uint64_t)t->partitions_count + op->count > META_MAX_PARTITION_ID)
            return VS_E_PARTITION_ID_SPACE_EXHAUSTED;
        if (free_of(a, META_TAB_PARTITION) < op->count ||
            !topic_assign_fits(a, t, t->partitions_count + op->count,
                               META_NONE))
            return VS_E_TOO_MANY_PARTITIONS;
        partitions_add(a, t, op->count);
        rebalance_topic(a, t, t->partitions_count);
        return 0;
    }
    case VS_OP_DELETE_PARTITIONS: {
        if (op->count == 0 || op->count > META_PARTITIONS_PER_OP)
            return VS_E_TOO_MANY_PARTITIONS;
        if (op->count > t->partitions_count)
            return VS_E_INVALID_PARTITIONS_COUNT;
        uint32_t old = t->partitions_count;
        for (uint32_t i = 0; i < op->count; i++) {
            uint32_t p = old - 1 - i;
            partition_del(a,
                          meta_partition_by_id(a->st, t->stream_id, t->id, p));
        }
        t->partitions_count = old - op->count;
        rebalance_topic(a, t, old);
        return 0;
    }
    case VS_OP_DELETE_SEGMENTS:
    case VS_OP_TRUNCATE_PARTITION: {
        struct meta_partition *p =
            (struct meta_partition *)meta_partition_by_id(
                a->st, t->stream_id, t->id, op->partition_id);
        /* the watermark belongs to the partition it was computed for:
         * one that reuses the ids (topic deleted and recreated) is not
         * it (format 1 ops carry created_op 0: unchecked) */
        if (!p || (op->created_op != 0 && p->created_op != op->created_op))
            return VS_E_PARTITION_NOT_FOUND;
        if (op->offset > p->deleted_up_to_offset)
            p->deleted_up_to_offset = op->offset;
        return 0;
    }
    default:
        return VS_E_INVALID_COMMAND;
    }
}

static uint32_t
op_group(struct actx *a)
{
    const struct meta_op *op = a->op;
    struct meta_topic *t;
    uint32_t e = resolve_topic(a, META_ACT_READ_TOPIC, &t);
    if (e)
        return e;
    if (op->operation == VS_OP_CREATE_CONSUMER_GROUP) {
        if (meta_name_check(op->name, op->name_len))
            return VS_E_INVALID_COMMAND;
        if (meta_group_by_name(a->st, t->stream_id, t->id, op->name,
                               op->name_len))
            return VS_E_CONSUMER_GROUP_NAME_ALREADY_EXISTS;
        if (free_of(a, META_TAB_GROUP) == 0 || t->next_group_id == UINT32_MAX)
            return VS_E_ERROR;
        uint32_t slot = meta_slot_alloc(a->st, META_TAB_GROUP, UINT32_MAX);
        struct meta_group *g = meta_rec(a->st, META_TAB_GROUP, slot);
        g->stream_id = t->stream_id;
        g->topic_id = t->id;
        g->id = t->next_group_id++;
        g->created_op = a->c->op;
        g->name_len = op->name_len;
        memcpy(g->name, op->name, op->name_len);
        meta_ix_add_all(a->st, META_TAB_GROUP, slot);
        t->groups_count++;
        meta_wr_group_details(&a->out->payload, a->st, g);
        return 0;
    }
    struct meta_group *g = (struct meta_group *)meta_group_find(
        a->st, t->stream_id, t->id, &op->group);
    if (!g)
        return VS_E_CONSUMER_GROUP_ID_NOT_FOUND;
    switch (op->operation) {
    case VS_OP_DELETE_CONSUMER_GROUP:
        group_del(a, g, t->partitions_count);
        return 0;
    case VS_OP_JOIN_CONSUMER_GROUP: {
        struct vs_u128 c = a->c->client;
        if (vs_u128_is_zero(c))
            return VS_E_INVALID_COMMAND;
        if (meta_member_by_client(a->st, t->stream_id, t->id, g->id, c))
            return 0; /* idempotent, no generation bump */
        if (free_of(a, META_TAB_MEMBER) == 0 ||
            !topic_assign_fits(a, t, t->partitions_count, g->id))
            return VS_E_ERROR;
        uint32_t mid = 0;
        while (meta_member_by_id(a->st, t->stream_id, t->id, g->id, mid))
            mid++;
        uint32_t slot = meta_slot_alloc(a->st, META_TAB_MEMBER, UINT32_MAX);
        struct meta_member *m = meta_rec(a->st, META_TAB_MEMBER, slot);
        m->stream_id = t->stream_id;
        m->topic_id = t->id;
        m->group_id = g->id;
        m->member_id = mid;
        m->client_id = c;
        m->joined_op = a->c->op;
        meta_ix_add_all(a->st, META_TAB_MEMBER, slot);
        g->members_count++;
        if (mid >= g->member_id_bound)
            g->member_id_bound = mid + 1;
        rebalance_join(a, g);
        return 0;
    }
    case VS_OP_LEAVE_CONSUMER_GROUP: {
        const struct meta_member *m = meta_member_by_client(
            a->st, t->stream_id, t->id, g->id, a->c->client);
        if (!m)
            return VS_E_CONSUMER_GROUP_MEMBER_NOT_FOUND;
        member_leave(a, g, m);
        return 0;
    }
    case VS_OP_COMPLETE_CONSUMER_GROUP_REVOCATION: {
        struct meta_assign *as = (struct meta_assign *)meta_assign_get(
            a->st, t->stream_id, t->id, g->id, op->partition_id);
        if (as && as->revoke_to != META_NONE) {
            as->owner = as->revoke_to;
            as->revoke_to = META_NONE;
            g->generation++;
        }
        return 0;
    }
    default:
        return VS_E_INVALID_COMMAND;
    }
}

/* ----------------------------------------------------------------- users */

struct perm_plan {
    struct actx *a;
    uint32_t user;
    int apply;
    uint32_t entries; /* upper bound of records needed */
    uint16_t global;
};

static void
pv_global(void *arg, uint16_t bits)
{
    ((struct perm_plan *)arg)->global = bits;
}

static void
pv_stream(void *arg, uint32_t sid, uint8_t bits, uint8_t has_topics)
{
    struct perm_plan *pp = arg;
    (void)has_topics;
    pp->entries++;
    if (!pp->apply)
        return;
    void *st = pp->a->st;
    struct meta_sgrant *g =
        (struct meta_sgrant *)meta_sgrant_get(st, pp->user, sid);
    if (!g) {
        uint32_t s = meta_slot_alloc(st, META_TAB_SGRANT, UINT32_MAX);
        VS_ASSERT(s != META_NONE);
        g = meta_rec(st, META_TAB_SGRANT, s);
        g->user_id = pp->user;
        g->stream_id = sid;
        g->dangling = meta_stream_by_id(st, sid) ? 0 : 1;
        if (g->dangling)
            pp->a->h->dangling_grants++;
        meta_ix_add_all(st, META_TAB_SGRANT, s);
    }
    g->bits = bits;
}

static void
pv_topic(void *arg, uint32_t sid, uint32_t tid, uint8_t bits)
{
    struct perm_plan *pp = arg;
    pp->entries++;
    if (!pp->apply)
        return;
    void *st = pp->a->st;
    struct meta_tgrant *g =
        (struct meta_tgrant *)meta_tgrant_get(st, pp->user, sid, tid);
    if (!g) {
        uint32_t s = meta_slot_alloc(st, META_TAB_TGRANT, UINT32_MAX);
        VS_ASSERT(s != META_NONE);
        g = meta_rec(st, META_TAB_TGRANT, s);
        g->user_id = pp->user;
        g->stream_id = sid;
        g->topic_id = tid;
        g->dangling = meta_topic_by_id(st, sid, tid) ? 0 : 1;
        if (g->dangling)
            pp->a->h->dangling_grants++;
        meta_ix_add_all(st, META_TAB_TGRANT, s);
    }
    g->bits = bits;
}

/* Validates the op's permissions and that they fit (the user's current
 * grants are freed first). 0 or an error code. */
static uint32_t
perms_check(struct actx *a, uint32_t user)
{
    const struct meta_op *op = a->op;
    if (!op->has_perms)
        return 0;
    struct perm_plan pp = {.a = a, .user = user};
    struct meta_perms_visit v = {pv_global, pv_stream, pv_topic, &pp};
    if (meta_perms_parse(op->perms, op->perms_len, &v) != 0)
        return VS_E_INVALID_COMMAND;
    struct meta_grant_view gv = {0};
    if (user != META_NONE)
        meta_grants_collect(a->st, user, &gv);
    uint64_t freeable = (uint64_t)gv.ns + gv.nt;
    meta_grants_view_fini(&gv);
    if (pp.entries > free_of(a, META_TAB_SGRANT) + free_of(a, META_TAB_TGRANT) +
                         freeable ||
        pp.entries > free_of(a, META_TAB_SGRANT) + freeable ||
        pp.entries > free_of(a, META_TAB_TGRANT) + freeable)
        return VS_E_ERROR;
    return 0;
}

static void
perms_set(struct actx *a, struct meta_user *u)
{
    meta_grants_remove(a->st, u->id, META_NONE, META_NONE, 0);
    u->global = 0;
    u->has_perms = a->op->has_perms;
    if (!u->has_perms)
        return;
    struct perm_plan pp = {.a = a, .user = u->id, .apply = 1};
    struct meta_perms_visit v = {pv_global, pv_stream, pv_topic, &pp};
    int rc = meta_perms_parse(a->op->perms, a->op->perms_len, &v);
    VS_ASSERT(rc == 0);
    u->global = pp.global;
}

static int
secret_ok(const struct meta_op *op)
{
    return op->secret_len > 0 && op->secret_len < META_PWHASH_MAX;
}

static struct meta_user *
user_new(struct actx *a, uint32_t id)
{
    meta_slot_claim(a->st, META_TAB_USER, id);
    struct meta_user *u = meta_rec(a->st, META_TAB_USER, id);
    const struct meta_op *op = a->op;
    u->id = id;
    u->created_at = a->c->timestamp;
    u->created_op = a->c->op;
    u->name_len = op->name_len;
    memcpy(u->username, op->name, op->name_len);
    memcpy(u->pw_hash, op->secret, op->secret_len);
    meta_ix_add_all(a->st, META_TAB_USER, id);
    return u;
}

static uint32_t
op_genesis(struct actx *a)
{
    const struct meta_op *op = a->op;
    if (a->h->genesis_done || meta_user_by_id(a->st, 0))
        return VS_E_USER_ALREADY_EXISTS;
    if (a->c->user_id != 0)
        return VS_E_UNAUTHORIZED;
    uint32_t e = meta_username_check(op->name, op->name_len);
    if (e)
        return e;
    if (!secret_ok(op))
        return VS_E_INVALID_COMMAND;
    struct meta_user *u = user_new(a, 0);
    u->status = 1;
    u->has_perms = 1;
    u->global = META_G_ALL;
    a->h->genesis_done = 1;
    return 0;
}

static uint32_t
op_create_user(struct actx *a)
{
    const struct meta_op *op = a->op;
    if (!allowed(a, META_ACT_MANAGE_USERS, META_NONE, META_NONE))
        return VS_E_UNAUTHORIZED;
    uint32_t e = meta_username_check(op->name, op->name_len);
    if (e)
        return e;
    if (!secret_ok(op))
        return VS_E_INVALID_COMMAND;
    if (meta_user_by_name(a->st, op->name, op->name_len))
        return VS_E_USER_ALREADY_EXISTS;
    if ((e = perms_check(a, META_NONE)) != 0)
        return e;
    uint32_t id = 0;
    uint32_t cap = meta_tab_cap(a->st, META_TAB_USER);
    while (id < cap && meta_rec_live(a->st, META_TAB_USER, id))
        id++;
    if (id >= cap)
        return VS_E_USERS_LIMIT_REACHED;
    struct meta_user *u = user_new(a, id);
    u->status = (op->status == 1 || op->status == 2) ? op->status : 1;
    perms_set(a, u);
    /* reply echoes the raw status byte and the permissions as sent */
    meta_wr_user_record(&a->out->payload, u, op->status);
    if (op->has_perms) {
        vs_wr_u8(&a->out->payload, 1);
        vs_wr_u32(&a->out->payload, op->perms_len);
        vs_wr_bytes(&a->out->payload, op->perms, op->perms_len);
    } else {
        vs_wr_u32(&a->out->payload, 0);
    }
    return 0;
}

static uint32_t
op_user(struct actx *a)
{
    const struct meta_op *op = a->op;
    struct meta_user *u = (struct meta_user *)meta_user_find(a->st, &op->user);
    int self = u && u->id == a->c->user_id;
    if (!(op->operation == VS_OP_CHANGE_PASSWORD && self) &&
        !allowed(a, META_ACT_MANAGE_USERS, META_NONE, META_NONE))
        return VS_E_UNAUTHORIZED;
    if (!u)
        return VS_E_RESOURCE_NOT_FOUND;
    switch (op->operation) {
    case VS_OP_UPDATE_USER:
        if (op->has_name) {
            uint32_t e = meta_username_check(op->name, op->name_len);
            if (e)
                return e;
            const struct meta_user *o =
                meta_user_by_name(a->st, op->name, op->name_len);
            if (o && o != u)
                return VS_E_USER_ALREADY_EXISTS;
            meta_ix_remove(a->st, META_IX_USER_NAME, u->id);
            memset(u->username, 0, sizeof(u->username));
            memcpy(u->username, op->name, op->name_len);
            u->name_len = op->name_len;
            meta_ix_insert(a->st, META_IX_USER_NAME, u->id);
        }
        if (op->has_status && (op->status == 1 || op->status == 2))
            u->status = op->status;
        return 0;
    case VS_OP_DELETE_USER: {
        if (u->id == 0)
            return VS_E_CANNOT_DELETE_USER;
        uint32_t id = u->id;
        meta_grants_remove(a->st, id, META_NONE, META_NONE, 0);
        uint32_t cap = meta_tab_cap(a->st, META_TAB_PAT);
        for (uint32_t i = 0; i < cap && u->pat_count > 0; i++) {
            const struct meta_pat *p = meta_rec_c(a->st, META_TAB_PAT, i);
            if (p->in_use && p->user_id == id) {
                meta_ix_del_all(a->st, META_TAB_PAT, i);
                meta_slot_free(a->st, META_TAB_PAT, i);
                u->pat_count--;
            }
        }
        meta_ix_del_all(a->st, META_TAB_USER, id);
        meta_slot_free(a->st, META_TAB_USER, id);
        return 0;
    }
    case VS_OP_CHANGE_PASSWORD:
        if (!secret_ok(op))
            return VS_E_INVALID_COMMAND;
        if (op->secret2_len != strnlen(u->pw_hash, META_PWHASH_MAX) ||
            memcmp(op->secret2, u->pw_hash, op->secret2_len) != 0)
            return VS_E_INVALID_CREDENTIALS;
        memset(u->pw_hash, 0, sizeof(u->pw_hash));
        memcpy(u->pw_hash, op->secret, op->secret_len);
        return 0;
    case VS_OP_UPDATE_PERMISSIONS: {
        if (u->id == 0)
            return VS_E_CANNOT_CHANGE_PERMISSIONS;
        uint32_t e = perms_check(a, u->id);
        if (e)
            return e;
        perms_set(a, u);
        return 0;
    }
    default:
        return VS_E_INVALID_COMMAND;
    }
}

static uint32_t
op_pat(struct actx *a)
{
    const struct meta_op *op = a->op;
    struct meta_user *u =
        (struct meta_user *)meta_user_by_id(a->st, a->c->user_id);
    if (!u)
        return VS_E_RESOURCE_NOT_FOUND;
    if (meta_name_check(op->name, op->name_len))
        return VS_E_INVALID_COMMAND;
    const struct meta_pat *p =
        meta_pat_by_name(a->st, u->id, op->name, op->name_len);
    if (op->operation == VS_OP_DELETE_PAT) {
        if (!p)
            return VS_E_RESOURCE_NOT_FOUND;
        uint32_t s = slot_of(a->st, META_TAB_PAT, p);
        meta_ix_del_all(a->st, META_TAB_PAT, s);
        meta_slot_free(a->st, META_TAB_PAT, s);
        u->pat_count--;
        return 0;
    }
    if (u->pat_count >= META_PATS_PER_USER || free_of(a, META_TAB_PAT) == 0)
        return VS_E_PAT_LIMIT_REACHED;
    if (p)
        return VS_E_PAT_ALREADY_EXISTS;
    if (op->secret_len != META_DIGEST_LEN)
        return VS_E_INVALID_COMMAND;
    if (meta_pat_by_digest(a->st, op->secret))
        return VS_E_PAT_ALREADY_EXISTS;
    uint64_t at = 0;
    if (op->expiry != 0 && op->expiry != UINT64_MAX) {
        if (op->expiry > UINT64_MAX - a->c->timestamp)
            return VS_E_INVALID_PAT_EXPIRY;
        at = a->c->timestamp + op->expiry;
        if (at <= a->c->timestamp)
            return VS_E_INVALID_PAT_EXPIRY;
    }
    uint32_t s = meta_slot_alloc(a->st, META_TAB_PAT, UINT32_MAX);
    struct meta_pat *n = meta_rec(a->st, META_TAB_PAT, s);
    n->user_id = u->id;
    n->expiry_at = at;
    n->created_op = a->c->op;
    n->name_len = op->name_len;
    memcpy(n->name, op->name, op->name_len);
    memcpy(n->digest, op->secret, META_DIGEST_LEN);
    meta_ix_add_all(a->st, META_TAB_PAT, s);
    u->pat_count++;
    return 0;
}

/* -------------------------------------------------------------- sessions */

static uint32_t
op_register(struct actx *a)
{
    struct vs_u128 c = a->c->client;
    if (vs_u128_is_zero(c))
        return VS_E_INVALID_COMMAND;
    const struct meta_user *u = meta_user_by_id(a->st, a->op->user_id);
    if (!u)
        return VS_E_INVALID_CREDENTIALS;
    if (u->status != 1)
        return VS_E_USER_INACTIVE;
    struct meta_session *s =
        (struct meta_session *)meta_session_by_client(a->st, c);
    if (!s) {
        uint32_t slot =
            meta_slot_alloc(a->st, META_TAB_SESSION, a->h->client_capacity);
        if (slot == META_NONE) {
            /* evict the smallest latest_commit, first slot on ties */
            uint32_t best = META_NONE;
            uint64_t low = UINT64_MAX;
            for (uint32_t i = 0; i < a->h->client_capacity; i++) {
                const struct meta_session *e =
                    meta_rec_c(a->st, META_TAB_SESSION, i);
                if (e->in_use && e->latest_commit < low) {
                    low = e->latest_commit;
                    best = i;
                }
            }
            VS_ASSERT(best != META_NONE);
            const struct meta_session *e =
                meta_rec_c(a->st, META_TAB_SESSION, best);
            a->out->evicted_slot = best;
            a->out->evicted_client = e->client_id;
            meta_ix_del_all(a->st, META_TAB_SESSION, best);
            meta_slot_free(a->st, META_TAB_SESSION, best);
            slot =
                meta_slot_alloc(a->st, META_TAB_SESSION, a->h->client_capacity);
            VS_ASSERT(slot == best);
        }
        s = meta_rec(a->st, META_TAB_SESSION, slot);
        s->client_id = c;
        s->created_op = a->c->op;
        meta_ix_add_all(a->st, META_TAB_SESSION, slot);
    }
    s->user_id = u->id;
    s->epoch = a->c->op;
    s->latest_commit = a->c->op;
    a->out->session_slot = meta_session_slot(a->st, s);
    struct vs_wbuf *w = &a->out->payload;
    vs_wr_u32(w, u->id);
    vs_wr_u64(w, a->c->op);
    vs_wr_u32(w, META_PROTOCOL_VERSION);
    vs_wr_u8(w, (uint8_t)strlen(META_SERVER_VERSION));
    vs_wr_bytes(w, META_SERVER_VERSION, strlen(META_SERVER_VERSION));
    return 0;
}

static uint32_t
op_logout(struct actx *a)
{
    const struct meta_session *s = meta_session_by_client(a->st, a->c->client);
    if (s) {
        uint32_t slot = meta_session_slot(a->st, s);
        meta_ix_del_all(a->st, META_TAB_SESSION, slot);
        meta_slot_free(a->st, META_TAB_SESSION, slot);
    }
    client_leave_all(a, a->c->client);
    return 0;
}

static uint32_t
dispatch(struct actx *a)
{
    switch (a->op->operation) {
    case VS_OP_REGISTER:
        return op_register(a);
    case VS_OP_LOGOUT:
        return op_logout(a);
    case VS_OP_GENESIS:
        return op_genesis(a);
    case VS_OP_CREATE_STREAM:
        return op_create_stream(a);
    case VS_OP_UPDATE_STREAM:
    case VS_OP_DELETE_STREAM:
    case VS_OP_PURGE_STREAM:
        return op_stream(a);
    case VS_OP_CREATE_TOPIC:
    case VS_OP_CREATE_TOPIC_WITH_ASSIGNMENTS:
        return op_create_topic(a);
    case VS_OP_UPDATE_TOPIC:
    case VS_OP_DELETE_TOPIC:
    case VS_OP_PURGE_TOPIC:
    case VS_OP_CREATE_PARTITIONS:
    case VS_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS:
    case VS_OP_DELETE_PARTITIONS:
    case VS_OP_DELETE_SEGMENTS:
    case VS_OP_TRUNCATE_PARTITION:
        return op_topic(a);
    case VS_OP_CREATE_CONSUMER_GROUP:
    case VS_OP_DELETE_CONSUMER_GROUP:
    case VS_OP_JOIN_CONSUMER_GROUP:
    case VS_OP_LEAVE_CONSUMER_GROUP:
    case VS_OP_COMPLETE_CONSUMER_GROUP_REVOCATION:
        return op_group(a);
    case VS_OP_REMOVE_CONSUMER_GROUP_MEMBER:
        client_leave_all(a, a->op->client);
        return 0;
    case VS_OP_CREATE_USER:
        return op_create_user(a);
    case VS_OP_UPDATE_USER:
    case VS_OP_DELETE_USER:
    case VS_OP_CHANGE_PASSWORD:
    case VS_OP_UPDATE_PERMISSIONS:
        return op_user(a);
    case VS_OP_CREATE_PAT:
    case VS_OP_DELETE_PAT:
        return op_pat(a);
    default:
        return VS_E_INVALID_COMMAND;
    }
}

/* 1 if ctx is a numbered request of a client whose session no longer
 * exists at commit (evicted or logged out after the client table admitted
 * the request): it must not execute, since no watermark would record it
 * and a retry after the client registers again would run it twice. */
static int
session_gone(const void *state, const struct meta_op_ctx *ctx)
{
    if (ctx->operation == VS_OP_REGISTER || ctx->operation == VS_OP_LOGOUT ||
        vs_u128_is_zero(ctx->client) || ctx->request == 0)
        return 0;
    return meta_session_by_client(state, ctx->client) == NULL;
}

uint32_t
meta_apply(void *state, const struct meta_op_ctx *ctx, const uint8_t *body,
           size_t len, struct meta_result *out)
{
    struct meta_hdr *h = meta_hdr(state);
    VS_ASSERT(ctx->op > h->last_op);
    meta_result_reset(out);
    struct meta_op *op = vs_xmalloc(sizeof(*op));
    uint32_t code;
    if (meta_op_decode(body, len, op) != 0 || op->operation != ctx->operation)
        code = VS_E_INVALID_COMMAND;
    else if (session_gone(state, ctx))
        code = VS_E_UNAUTHENTICATED;
    else {
        struct actx a = {state, h, ctx, op, out};
        code = dispatch(&a);
    }
    h->last_op = ctx->op;
    h->last_timestamp = ctx->timestamp;
    /* the session part of the client table: the request was executed */
    if (ctx->operation != VS_OP_REGISTER && ctx->operation != VS_OP_LOGOUT &&
        !vs_u128_is_zero(ctx->client) && ctx->request > 0) {
        struct meta_session *s =
            (struct meta_session *)meta_session_by_client(state, ctx->client);
        if (s && ctx->request > s->watermark) {
            s->watermark = ctx->request;
            s->watermark_checksum = ctx->request_checksum;
            s->latest_commit = ctx->op;
        }
    }
    free(op);
    out->code = code;
    if (code != 0)
        vs_wbuf_reset(&out->payload);
    return code;
}
