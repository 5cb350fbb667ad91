/*
 * shard/meta/snapshot_codec.c - deterministic msgpack snapshot of a state
 * instance (layout in snapshot_codec.h).
 *
 * Encode walks every collection in ascending id order, so equal states
 * encode to equal bytes whatever their slot layout or index history.
 * Decode resets the target, then validates and inserts record by record:
 * types, lengths, ranges, strict ascending order (which also rules out
 * duplicates), uniqueness of names and client ids, capacities, and the
 * cross-table invariants of state.h. The effective client-table capacity
 * is max(configured, highest slot + 1), applied before entries install.
 * Callers: shard 0, tools.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/layout.h"
#include "common/mem.h"
#include "shard/meta/grants.h"
#include "shard/meta/index.h"
#include "shard/meta/lookup.h"
#include "shard/meta/mpack.h"
#include "shard/meta/placement.h"
#include "shard/meta/ops.h"
#include "shard/meta/snapshot_codec.h"

#define SNAP_TAG "vsmeta"

const char *
meta_snap_status_str(enum meta_snap_status s)
{
    switch (s) {
    case META_SNAP_OK:
        return "ok";
    case META_SNAP_TRUNCATED:
        return "snapshot truncated";
    case META_SNAP_BAD_VERSION:
        return "unknown snapshot format version";
    case META_SNAP_BAD_TYPE:
        return "snapshot value of the wrong type";
    case META_SNAP_BAD_LENGTH:
        return "snapshot length out of range";
    case META_SNAP_BAD_VALUE:
        return "snapshot value out of range";
    case META_SNAP_OVER_CAPACITY:
        return "snapshot exceeds the configured capacities";
    case META_SNAP_DUPLICATE:
        return "snapshot holds a duplicate id, name or client";
    case META_SNAP_OP_MISMATCH:
        return "snapshot prefix op differs from its body";
    case META_SNAP_TRAILING:
        return "bytes after the snapshot body";
    case META_SNAP_BAD_STATE:
        return "target state instance is invalid";
    }
    return "unknown snapshot status";
}

/* ---------------------------------------------------------------- encode */

static int
cmp_pat(const void *x, const void *y, void *ctx)
{
    const void *pat_cmp_state = ctx;
    const struct meta_pat *a =
        meta_rec_c(pat_cmp_state, META_TAB_PAT, *(const uint32_t *)x);
    const struct meta_pat *b =
        meta_rec_c(pat_cmp_state, META_TAB_PAT, *(const uint32_t *)y);
    if (a->user_id != b->user_id)
        return a->user_id < b->user_id ? -1 : 1;
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);
    if (c)
        return c;
    return (int)a->name_len - (int)b->name_len;
}

static void
enc_users(msgpack_packer *pk, const void *st)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    struct meta_grant_view v;
    meta_grants_collect(st, META_NONE, &v);
    msgpack_pack_array(pk, h->count[META_TAB_USER]);
    uint32_t si = 0, ti = 0;
    uint32_t cap = meta_tab_cap(st, META_TAB_USER);
    for (uint32_t id = 0; id < cap; id++) {
        const struct meta_user *u = meta_user_by_id(st, id);
        if (!u)
            continue;
        msgpack_pack_array(pk, 9);
        msgpack_pack_uint32(pk, u->id);
        meta_mp_pack_str(pk, u->username, u->name_len);
        meta_mp_pack_str(pk, u->pw_hash, strnlen(u->pw_hash, META_PWHASH_MAX));
        msgpack_pack_uint8(pk, u->status);
        msgpack_pack_uint64(pk, u->created_at);
        msgpack_pack_uint64(pk, u->created_op);
        msgpack_pack_uint8(pk, u->has_perms);
        msgpack_pack_uint16(pk, u->global);
        uint32_t s0 = si;
        while (si < v.ns && ((const struct meta_sgrant *)meta_rec_c(
                                 st, META_TAB_SGRANT, v.s[si]))
                                    ->user_id == id)
            si++;
        msgpack_pack_array(pk, si - s0);
        for (uint32_t k = s0; k < si; k++) {
            const struct meta_sgrant *g =
                meta_rec_c(st, META_TAB_SGRANT, v.s[k]);
            while (ti < v.nt) {
                const struct meta_tgrant *t =
                    meta_rec_c(st, META_TAB_TGRANT, v.t[ti]);
                if (t->user_id > id ||
                    (t->user_id == id && t->stream_id >= g->stream_id))
                    break;
                ti++; /* orphan topic grant: cannot happen */
            }
            uint32_t t0 = ti;
            while (ti < v.nt) {
                const struct meta_tgrant *t =
                    meta_rec_c(st, META_TAB_TGRANT, v.t[ti]);
                if (t->user_id != id || t->stream_id != g->stream_id)
                    break;
                ti++;
            }
            msgpack_pack_array(pk, 4);
            msgpack_pack_uint32(pk, g->stream_id);
            msgpack_pack_uint8(pk, g->bits);
            msgpack_pack_uint8(pk, g->dangling);
            msgpack_pack_array(pk, ti - t0);
            for (uint32_t q = t0; q < ti; q++) {
                const struct meta_tgrant *t =
                    meta_rec_c(st, META_TAB_TGRANT, v.t[q]);
                msgpack_pack_array(pk, 3);
                msgpack_pack_uint32(pk, t->topic_id);
                msgpack_pack_uint8(pk, t->bits);
                msgpack_pack_uint8(pk, t->dangling);
            }
        }
    }
    meta_grants_view_fini(&v);
}

static void
enc_pats(msgpack_packer *pk, const void *st)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    uint32_t n = 0, cap = meta_tab_cap(st, META_TAB_PAT);
    uint32_t *idx = vs_xmalloc(sizeof(uint32_t) * (h->count[META_TAB_PAT] + 1));
    for (uint32_t i = 0; i < cap && n < h->count[META_TAB_PAT]; i++)
        if (meta_rec_live(st, META_TAB_PAT, i))
            idx[n++] = i;
    qsort_r(idx, n, sizeof(uint32_t), cmp_pat, (void *)st);
    msgpack_pack_array(pk, n);
    for (uint32_t i = 0; i < n; i++) {
        const struct meta_pat *p = meta_rec_c(st, META_TAB_PAT, idx[i]);
        msgpack_pack_array(pk, 5);
        msgpack_pack_uint32(pk, p->user_id);
        meta_mp_pack_str(pk, p->name, p->name_len);
        meta_mp_pack_bin(pk, p->digest, META_DIGEST_LEN);
        msgpack_pack_uint64(pk, p->expiry_at);
        msgpack_pack_uint64(pk, p->created_op);
    }
    free(idx);
}

static void
enc_group(msgpack_packer *pk, const void *st, const struct meta_group *g,
          uint32_t pc)
{
    msgpack_pack_array(pk, 6);
    msgpack_pack_uint32(pk, g->id);
    meta_mp_pack_str(pk, g->name, g->name_len);
    msgpack_pack_uint64(pk, g->generation);
    msgpack_pack_uint64(pk, g->created_op);
    msgpack_pack_array(pk, g->members_count);
    for (uint32_t m = 0; m < g->member_id_bound; m++) {
        const struct meta_member *mb =
            meta_member_by_id(st, g->stream_id, g->topic_id, g->id, m);
        if (!mb)
            continue;
        msgpack_pack_array(pk, 3);
        msgpack_pack_uint32(pk, mb->member_id);
        meta_mp_pack_u128(pk, mb->client_id);
        msgpack_pack_uint64(pk, mb->joined_op);
    }
    uint32_t na = 0;
    for (uint32_t p = 0; g->members_count && p < pc; p++)
        if (meta_assign_get(st, g->stream_id, g->topic_id, g->id, p))
            na++;
    msgpack_pack_array(pk, na);
    for (uint32_t p = 0; na && p < pc; p++) {
        const struct meta_assign *a =
            meta_assign_get(st, g->stream_id, g->topic_id, g->id, p);
        if (!a)
            continue;
        msgpack_pack_array(pk, 3);
        msgpack_pack_uint32(pk, p);
        msgpack_pack_uint32(pk, a->owner);
        msgpack_pack_uint32(pk, a->revoke_to);
    }
}

static void
enc_topic(msgpack_packer *pk, const void *st, const struct meta_topic *t)
{
    msgpack_pack_array(pk, 9);
    msgpack_pack_uint32(pk, t->id);
    meta_mp_pack_str(pk, t->name, t->name_len);
    msgpack_pack_uint64(pk, t->created_at);
    msgpack_pack_uint64(pk, t->created_op);
    msgpack_pack_uint32(pk, t->next_group_id);
    const struct meta_topic_opts *o = &t->opts;
    msgpack_pack_array(pk, 9);
    msgpack_pack_uint64(pk, o->message_expiry);
    msgpack_pack_uint64(pk, o->max_topic_size);
    msgpack_pack_uint64(pk, o->segment_size);
    msgpack_pack_uint64(pk, o->size_of_messages_required_to_save);
    msgpack_pack_uint32(pk, o->messages_required_to_save);
    msgpack_pack_uint8(pk, o->compression);
    msgpack_pack_uint8(pk, o->enforce_fsync);
    msgpack_pack_uint8(pk, o->preallocate_segments);
    msgpack_pack_uint8(pk, o->explicit_mask);
    msgpack_pack_uint8(pk, o->replication_factor);
    msgpack_pack_array(pk, t->partitions_count);
    for (uint32_t p = 0; p < t->partitions_count; p++) {
        const struct meta_partition *pp =
            meta_partition_by_id(st, t->stream_id, t->id, p);
        msgpack_pack_array(pk, 6);
        msgpack_pack_uint32(pk, pp->id);
        msgpack_pack_uint64(pk, pp->created_at);
        msgpack_pack_uint64(pk, pp->created_op);
        msgpack_pack_uint64(pk, pp->deleted_up_to_offset);
        msgpack_pack_uint64(pk, pp->purge_generation);
        meta_mp_pack_bin(pk, pp->replicas, pp->replica_count);
    }
    msgpack_pack_array(pk, t->groups_count);
    uint32_t left = t->groups_count;
    for (uint32_t gid = 0; gid < t->next_group_id && left; gid++) {
        const struct meta_group *g =
            meta_group_by_id(st, t->stream_id, t->id, gid);
        if (!g)
            continue;
        left--;
        enc_group(pk, st, g, t->partitions_count);
    }
}

static void
enc_streams(msgpack_packer *pk, const void *st)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    msgpack_pack_array(pk, h->count[META_TAB_STREAM]);
    uint32_t cap = meta_tab_cap(st, META_TAB_STREAM);
    for (uint32_t id = 0; id < cap; id++) {
        const struct meta_stream *s = meta_stream_by_id(st, id);
        if (!s)
            continue;
        msgpack_pack_array(pk, 5);
        msgpack_pack_uint32(pk, s->id);
        meta_mp_pack_str(pk, s->name, s->name_len);
        msgpack_pack_uint64(pk, s->created_at);
        msgpack_pack_uint64(pk, s->created_op);
        msgpack_pack_array(pk, s->topics_count);
        uint32_t left = s->topics_count;
        for (uint32_t tid = 0; tid < META_MAX_TOPIC_ID && left; tid++) {
            const struct meta_topic *t = meta_topic_by_id(st, id, tid);
            if (!t)
                continue;
            left--;
            enc_topic(pk, st, t);
        }
    }
}

static void
enc_clients(msgpack_packer *pk, const void *st,
            const struct meta_client_table *ct)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    msgpack_pack_array(pk, h->count[META_TAB_SESSION]);
    uint32_t cap = meta_tab_cap(st, META_TAB_SESSION);
    uint32_t left = h->count[META_TAB_SESSION];
    for (uint32_t i = 0; i < cap && left; i++) {
        const struct meta_session *s = meta_session_at(st, i);
        if (!s)
            continue;
        left--;
        msgpack_pack_array(pk, 9);
        msgpack_pack_uint32(pk, i);
        meta_mp_pack_u128(pk, s->client_id);
        msgpack_pack_uint64(pk, s->epoch);
        msgpack_pack_uint32(pk, s->user_id);
        msgpack_pack_uint64(pk, s->watermark);
        meta_mp_pack_u128(pk, s->watermark_checksum);
        msgpack_pack_uint64(pk, s->latest_commit);
        msgpack_pack_uint64(pk, s->created_op);
        const struct meta_ct_reply *r = ct ? meta_ct_latest(ct, st, i) : NULL;
        if (r)
            meta_mp_pack_bin(pk, r->bytes, r->len);
        else
            meta_mp_pack_bin(pk, "", 0);
    }
}

int
meta_snapshot_encode(const void *st, const struct meta_client_table *ct,
                     struct vs_wbuf *out)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    struct vs_snapshot_prefix pre = {META_SNAPSHOT_FORMAT, h->last_op};
    uint8_t *p = vs_wbuf_reserve(out, VS_SNAPSHOT_PREFIX_SIZE);
    vs_snapshot_prefix_write(p, &pre);
    out->len += VS_SNAPSHOT_PREFIX_SIZE;
    msgpack_packer pk;
    meta_mp_packer_init(&pk, out);
    msgpack_pack_array(&pk, 8);
    meta_mp_pack_str(&pk, SNAP_TAG, strlen(SNAP_TAG));
    msgpack_pack_uint64(&pk, h->last_op);
    msgpack_pack_uint64(&pk, h->last_timestamp);
    msgpack_pack_uint8(&pk, h->genesis_done ? 1 : 0);
    enc_users(&pk, st);
    enc_pats(&pk, st);
    enc_streams(&pk, st);
    enc_clients(&pk, st, ct);
    return 0;
}

/* ---------------------------------------------------------------- decode */

struct dec {
    struct meta_mp r;
    uint32_t format; /* the payload's format_version */
    void *st;
    struct meta_hdr *h;
    struct meta_client_table *ct;
};

#define FAIL(d, s)                                                             \
    do {                                                                       \
        meta_mp_fail(&(d)->r, (s));                                            \
        return;                                                                \
    } while (0)

static int
room(struct dec *d, enum meta_tab t)
{
    if (d->h->count[t] >= meta_tab_cap(d->st, t)) {
        meta_mp_fail(&d->r, META_SNAP_OVER_CAPACITY);
        return 0;
    }
    return 1;
}

static const uint8_t *
dec_name(struct dec *d, uint32_t *n, uint32_t min, uint32_t max)
{
    const uint8_t *p = meta_mp_str(&d->r, n);
    if (d->r.err)
        return NULL;
    if (*n < min || *n > max || !meta_utf8_valid(p, *n)) {
        meta_mp_fail(&d->r, META_SNAP_BAD_VALUE);
        return NULL;
    }
    return p;
}

static void
dec_users(struct dec *d)
{
    uint32_t n = meta_mp_array(&d->r);
    int64_t prev = -1;
    for (uint32_t i = 0; i < n && !d->r.err; i++) {
        meta_mp_array_n(&d->r, 9);
        uint32_t id = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
        uint32_t nl, hl;
        const uint8_t *name =
            dec_name(d, &nl, META_USERNAME_MIN, META_USERNAME_MAX);
        const uint8_t *hash = meta_mp_str(&d->r, &hl);
        uint8_t status = (uint8_t)meta_mp_uint_max(&d->r, 255);
        uint64_t created_at = meta_mp_uint(&d->r);
        uint64_t created_op = meta_mp_uint(&d->r);
        uint8_t has_perms = (uint8_t)meta_mp_uint_max(&d->r, 1);
        uint16_t global = (uint16_t)meta_mp_uint_max(&d->r, META_G_ALL);
        if (d->r.err)
            return;
        if ((int64_t)id <= prev)
            FAIL(d, META_SNAP_BAD_VALUE);
        prev = id;
        if (id >= meta_tab_cap(d->st, META_TAB_USER))
            FAIL(d, META_SNAP_OVER_CAPACITY);
        if (hl == 0 || hl >= META_PWHASH_MAX || (status != 1 && status != 2) ||
            (!has_perms && global != 0) || memchr(hash, 0, hl))
            FAIL(d, META_SNAP_BAD_VALUE);
        if (meta_user_by_name(d->st, (const char *)name, nl))
            FAIL(d, META_SNAP_DUPLICATE);
        meta_slot_claim(d->st, META_TAB_USER, id);
        struct meta_user *u = meta_rec(d->st, META_TAB_USER, id);
        u->id = id;
        u->name_len = (uint8_t)nl;
        memcpy(u->username, name, nl);
        memcpy(u->pw_hash, hash, hl);
        u->status = status;
        u->created_at = created_at;
        u->created_op = created_op;
        u->has_perms = has_perms;
        u->global = global;
        meta_ix_add_all(d->st, META_TAB_USER, id);
        uint32_t ns = meta_mp_array(&d->r);
        if (ns && !has_perms)
            FAIL(d, META_SNAP_BAD_VALUE);
        int64_t sprev = -1;
        for (uint32_t k = 0; k < ns && !d->r.err; k++) {
            meta_mp_array_n(&d->r, 4);
            uint32_t sid = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
            uint8_t bits = (uint8_t)meta_mp_uint_max(&d->r, 0x3f);
            uint8_t dang = (uint8_t)meta_mp_uint_max(&d->r, 1);
            uint32_t nt = meta_mp_array(&d->r);
            if (d->r.err)
                return;
            if ((int64_t)sid <= sprev)
                FAIL(d, META_SNAP_BAD_VALUE);
            sprev = sid;
            if (!room(d, META_TAB_SGRANT))
                return;
            uint32_t s = meta_slot_alloc(d->st, META_TAB_SGRANT, UINT32_MAX);
            struct meta_sgrant *g = meta_rec(d->st, META_TAB_SGRANT, s);
            g->user_id = id;
            g->stream_id = sid;
            g->bits = bits;
            g->dangling = dang;
            d->h->dangling_grants += dang;
            meta_ix_add_all(d->st, META_TAB_SGRANT, s);
            int64_t tprev = -1;
            for (uint32_t q = 0; q < nt && !d->r.err; q++) {
                meta_mp_array_n(&d->r, 3);
                uint32_t tid = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
                uint8_t tb = (uint8_t)meta_mp_uint_max(&d->r, 0x0f);
                uint8_t td = (uint8_t)meta_mp_uint_max(&d->r, 1);
                if (d->r.err)
                    return;
                if ((int64_t)tid <= tprev)
                    FAIL(d, META_SNAP_BAD_VALUE);
                tprev = tid;
                if (!room(d, META_TAB_TGRANT))
                    return;
                uint32_t ts =
                    meta_slot_alloc(d->st, META_TAB_TGRANT, UINT32_MAX);
                struct meta_tgrant *tg = meta_rec(d->st, META_TAB_TGRANT, ts);
                tg->user_id = id;
                tg->stream_id = sid;
                tg->topic_id = tid;
                tg->bits = tb;
                tg->dangling = td;
                d->h->dangling_grants += td;
                meta_ix_add_all(d->st, META_TAB_TGRANT, ts);
            }
        }
    }
}

static void
dec_pats(struct dec *d)
{
    uint32_t n = meta_mp_array(&d->r);
    struct meta_pat *prev = NULL;
    for (uint32_t i = 0; i < n && !d->r.err; i++) {
        meta_mp_array_n(&d->r, 5);
        uint32_t uid = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
        uint32_t nl, dl;
        const uint8_t *name = dec_name(d, &nl, 1, META_NAME_MAX);
        const uint8_t *dg = meta_mp_bin(&d->r, &dl);
        uint64_t exp = meta_mp_uint(&d->r);
        uint64_t cop = meta_mp_uint(&d->r);
        if (d->r.err)
            return;
        if (dl != META_DIGEST_LEN)
            FAIL(d, META_SNAP_BAD_LENGTH);
        struct meta_user *u = (struct meta_user *)meta_user_by_id(d->st, uid);
        if (!u)
            FAIL(d, META_SNAP_BAD_VALUE);
        if (prev) { /* strictly ascending (user, name) */
            int c = prev->user_id < uid ? -1 : prev->user_id > uid ? 1 : 0;
            if (!c) {
                size_t m = prev->name_len < nl ? prev->name_len : nl;
                c = memcmp(prev->name, name, m);
                if (!c)
                    c = (int)prev->name_len - (int)nl;
            }
            if (c >= 0)
                FAIL(d, c == 0 ? META_SNAP_DUPLICATE : META_SNAP_BAD_VALUE);
        }
        if (u->pat_count >= META_PATS_PER_USER || !room(d, META_TAB_PAT))
            FAIL(d, META_SNAP_OVER_CAPACITY);
        if (meta_pat_by_digest(d->st, dg))
            FAIL(d, META_SNAP_DUPLICATE);
        uint32_t s = meta_slot_alloc(d->st, META_TAB_PAT, UINT32_MAX);
        struct meta_pat *p = meta_rec(d->st, META_TAB_PAT, s);
        p->user_id = uid;
        p->name_len = (uint8_t)nl;
        memcpy(p->name, name, nl);
        memcpy(p->digest, dg, META_DIGEST_LEN);
        p->expiry_at = exp;
        p->created_op = cop;
        meta_ix_add_all(d->st, META_TAB_PAT, s);
        u->pat_count++;
        prev = p;
    }
}

static void
dec_group(struct dec *d, struct meta_topic *t, int64_t *prev)
{
    meta_mp_array_n(&d->r, 6);
    uint32_t gid = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
    uint32_t nl;
    const uint8_t *name = dec_name(d, &nl, 1, META_NAME_MAX);
    uint64_t gen = meta_mp_uint(&d->r);
    uint64_t cop = meta_mp_uint(&d->r);
    if (d->r.err)
        return;
    if ((int64_t)gid <= *prev || gid >= t->next_group_id)
        FAIL(d, META_SNAP_BAD_VALUE);
    *prev = gid;
    if (meta_group_by_name(d->st, t->stream_id, t->id, (const char *)name, nl))
        FAIL(d, META_SNAP_DUPLICATE);
    if (!room(d, META_TAB_GROUP))
        return;
    uint32_t s = meta_slot_alloc(d->st, META_TAB_GROUP, UINT32_MAX);
    struct meta_group *g = meta_rec(d->st, META_TAB_GROUP, s);
    g->stream_id = t->stream_id;
    g->topic_id = t->id;
    g->id = gid;
    g->name_len = (uint8_t)nl;
    memcpy(g->name, name, nl);
    g->generation = gen;
    g->created_op = cop;
    meta_ix_add_all(d->st, META_TAB_GROUP, s);
    t->groups_count++;
    uint32_t nm = meta_mp_array(&d->r);
    int64_t mprev = -1;
    for (uint32_t i = 0; i < nm && !d->r.err; i++) {
        meta_mp_array_n(&d->r, 3);
        uint32_t mid = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX - 1);
        struct vs_u128 c = meta_mp_u128(&d->r);
        uint64_t jop = meta_mp_uint(&d->r);
        if (d->r.err)
            return;
        if ((int64_t)mid <= mprev || vs_u128_is_zero(c))
            FAIL(d, META_SNAP_BAD_VALUE);
        mprev = mid;
        if (meta_member_by_client(d->st, t->stream_id, t->id, gid, c))
            FAIL(d, META_SNAP_DUPLICATE);
        if (!room(d, META_TAB_MEMBER))
            return;
        uint32_t ms = meta_slot_alloc(d->st, META_TAB_MEMBER, UINT32_MAX);
        struct meta_member *m = meta_rec(d->st, META_TAB_MEMBER, ms);
        m->stream_id = t->stream_id;
        m->topic_id = t->id;
        m->group_id = gid;
        m->member_id = mid;
        m->client_id = c;
        m->joined_op = jop;
        meta_ix_add_all(d->st, META_TAB_MEMBER, ms);
        g->members_count++;
        g->member_id_bound = mid + 1;
    }
    uint32_t na = meta_mp_array(&d->r);
    if (na && g->members_count == 0)
        FAIL(d, META_SNAP_BAD_VALUE);
    int64_t aprev = -1;
    for (uint32_t i = 0; i < na && !d->r.err; i++) {
        meta_mp_array_n(&d->r, 3);
        uint32_t p = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
        uint32_t owner = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
        uint32_t rv = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
        if (d->r.err)
            return;
        if ((int64_t)p <= aprev || p >= t->partitions_count ||
            !meta_member_by_id(d->st, t->stream_id, t->id, gid, owner) ||
            rv == owner ||
            (rv != META_NONE &&
             !meta_member_by_id(d->st, t->stream_id, t->id, gid, rv)))
            FAIL(d, META_SNAP_BAD_VALUE);
        aprev = p;
        if (!room(d, META_TAB_ASSIGN))
            return;
        uint32_t as = meta_slot_alloc(d->st, META_TAB_ASSIGN, UINT32_MAX);
        struct meta_assign *a = meta_rec(d->st, META_TAB_ASSIGN, as);
        a->stream_id = t->stream_id;
        a->topic_id = t->id;
        a->group_id = gid;
        a->partition_id = p;
        a->owner = owner;
        a->revoke_to = rv;
        meta_ix_add_all(d->st, META_TAB_ASSIGN, as);
    }
}

static void
dec_topic(struct dec *d, struct meta_stream *s, int64_t *prev)
{
    int v2 = d->format >= 2;
    meta_mp_array_n(&d->r, v2 ? 9 : 8);
    uint32_t tid = (uint32_t)meta_mp_uint_max(&d->r, META_MAX_TOPIC_ID - 1);
    uint32_t nl;
    const uint8_t *name = dec_name(d, &nl, 1, META_NAME_MAX);
    uint64_t cat = meta_mp_uint(&d->r);
    uint64_t cop = meta_mp_uint(&d->r);
    uint32_t ngid = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
    struct meta_topic_opts o;
    memset(&o, 0, sizeof(o));
    meta_mp_array_n(&d->r, 9);
    o.message_expiry = meta_mp_uint(&d->r);
    o.max_topic_size = meta_mp_uint(&d->r);
    o.segment_size = meta_mp_uint(&d->r);
    o.size_of_messages_required_to_save = meta_mp_uint(&d->r);
    o.messages_required_to_save = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
    o.compression = (uint8_t)meta_mp_uint_max(&d->r, 2);
    o.enforce_fsync = (uint8_t)meta_mp_uint_max(&d->r, 1);
    o.preallocate_segments = (uint8_t)meta_mp_uint_max(&d->r, 1);
    o.explicit_mask = (uint8_t)meta_mp_uint_max(&d->r, 255);
    /* format 1 recorded no replica sets: replication factor 0 here, and
     * meta_place_all() decides the default after the decode */
    if (v2)
        o.replication_factor =
            (uint8_t)meta_mp_uint_max(&d->r, VS_REPLICAS_MAX);
    if (d->r.err)
        return;
    if ((int64_t)tid <= *prev || o.compression == 0 ||
        (v2 && o.replication_factor == 0))
        FAIL(d, META_SNAP_BAD_VALUE);
    *prev = tid;
    if (meta_topic_by_name(d->st, s->id, (const char *)name, nl))
        FAIL(d, META_SNAP_DUPLICATE);
    if (!room(d, META_TAB_TOPIC))
        return;
    uint32_t slot = meta_slot_alloc(d->st, META_TAB_TOPIC, UINT32_MAX);
    struct meta_topic *t = meta_rec(d->st, META_TAB_TOPIC, slot);
    t->stream_id = s->id;
    t->id = tid;
    t->name_len = (uint8_t)nl;
    memcpy(t->name, name, nl);
    t->created_at = cat;
    t->created_op = cop;
    t->next_group_id = ngid;
    t->opts = o;
    meta_ix_add_all(d->st, META_TAB_TOPIC, slot);
    s->topics_count++;
    uint32_t np = meta_mp_array(&d->r);
    if (np > META_MAX_PARTITION_ID)
        FAIL(d, META_SNAP_BAD_LENGTH);
    for (uint32_t i = 0; i < np && !d->r.err; i++) {
        meta_mp_array_n(&d->r, v2 ? 6 : 5);
        uint32_t pid = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
        uint64_t pat = meta_mp_uint(&d->r);
        uint64_t pop = meta_mp_uint(&d->r);
        uint64_t del = meta_mp_uint(&d->r);
        uint64_t gen = meta_mp_uint(&d->r);
        uint32_t nrep = 0;
        const uint8_t *rep = v2 ? meta_mp_bin(&d->r, &nrep) : NULL;
        if (d->r.err)
            return;
        if (pid != i)
            FAIL(d, META_SNAP_BAD_VALUE);
        /* a replica set: exactly rf distinct node ids */
        if (v2 && nrep != o.replication_factor)
            FAIL(d, META_SNAP_BAD_LENGTH);
        uint32_t seen = 0;
        for (uint32_t k = 0; k < nrep; k++) {
            if (rep[k] >= VS_REPLICAS_MAX || (seen & (1u << rep[k])))
                FAIL(d, META_SNAP_BAD_VALUE);
            seen |= 1u << rep[k];
        }
        if (!room(d, META_TAB_PARTITION))
            return;
        uint32_t ps = meta_slot_alloc(d->st, META_TAB_PARTITION, UINT32_MAX);
        struct meta_partition *p = meta_rec(d->st, META_TAB_PARTITION, ps);
        p->stream_id = s->id;
        p->topic_id = tid;
        p->id = pid;
        p->created_at = pat;
        p->created_op = pop;
        p->deleted_up_to_offset = del;
        p->purge_generation = gen;
        p->replica_count = (uint8_t)nrep;
        if (nrep > 0)
            memcpy(p->replicas, rep, nrep);
        meta_ix_add_all(d->st, META_TAB_PARTITION, ps);
        t->partitions_count++;
    }
    uint32_t ng = meta_mp_array(&d->r);
    int64_t gprev = -1;
    for (uint32_t i = 0; i < ng && !d->r.err; i++)
        dec_group(d, t, &gprev);
}

static void
dec_streams(struct dec *d)
{
    uint32_t n = meta_mp_array(&d->r);
    int64_t prev = -1;
    for (uint32_t i = 0; i < n && !d->r.err; i++) {
        meta_mp_array_n(&d->r, 5);
        uint32_t id = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
        uint32_t nl;
        const uint8_t *name = dec_name(d, &nl, 1, META_NAME_MAX);
        uint64_t cat = meta_mp_uint(&d->r);
        uint64_t cop = meta_mp_uint(&d->r);
        if (d->r.err)
            return;
        if ((int64_t)id <= prev)
            FAIL(d, META_SNAP_BAD_VALUE);
        prev = id;
        if (id >= meta_tab_cap(d->st, META_TAB_STREAM))
            FAIL(d, META_SNAP_OVER_CAPACITY);
        if (meta_stream_by_name(d->st, (const char *)name, nl))
            FAIL(d, META_SNAP_DUPLICATE);
        meta_slot_claim(d->st, META_TAB_STREAM, id);
        struct meta_stream *s = meta_rec(d->st, META_TAB_STREAM, id);
        s->id = id;
        s->name_len = (uint8_t)nl;
        memcpy(s->name, name, nl);
        s->created_at = cat;
        s->created_op = cop;
        meta_ix_add_all(d->st, META_TAB_STREAM, id);
        uint32_t nt = meta_mp_array(&d->r);
        int64_t tprev = -1;
        for (uint32_t k = 0; k < nt && !d->r.err; k++)
            dec_topic(d, s, &tprev);
    }
}

static void
dec_clients(struct dec *d)
{
    uint32_t n = meta_mp_array(&d->r);
    int64_t prev = -1;
    uint32_t slots = meta_tab_cap(d->st, META_TAB_SESSION);
    /* peek pass is not possible in one walk: capacity is raised before
     * each install to cover its slot, which equals max(config, highest
     * slot + 1) at the end because slots ascend */
    for (uint32_t i = 0; i < n && !d->r.err; i++) {
        meta_mp_array_n(&d->r, 9);
        uint32_t slot = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
        struct vs_u128 c = meta_mp_u128(&d->r);
        uint64_t epoch = meta_mp_uint(&d->r);
        uint32_t uid = (uint32_t)meta_mp_uint_max(&d->r, UINT32_MAX);
        uint64_t wm = meta_mp_uint(&d->r);
        struct vs_u128 wmc = meta_mp_u128(&d->r);
        uint64_t lc = meta_mp_uint(&d->r);
        uint64_t cop = meta_mp_uint(&d->r);
        uint32_t rl;
        const uint8_t *reply = meta_mp_bin(&d->r, &rl);
        if (d->r.err)
            return;
        if ((int64_t)slot <= prev)
            FAIL(d, META_SNAP_BAD_VALUE);
        prev = slot;
        if (slot >= slots)
            FAIL(d, META_SNAP_OVER_CAPACITY);
        if (vs_u128_is_zero(c) || epoch == 0 || epoch > d->h->last_op ||
            lc < epoch || lc > d->h->last_op || cop > epoch || cop == 0 ||
            (rl != 0 && !meta_ct_reply_valid(reply, rl)))
            FAIL(d, META_SNAP_BAD_VALUE);
        if (meta_session_by_client(d->st, c))
            FAIL(d, META_SNAP_DUPLICATE);
        if (slot >= d->h->client_capacity)
            d->h->client_capacity = slot + 1;
        meta_slot_claim(d->st, META_TAB_SESSION, slot);
        struct meta_session *s = meta_rec(d->st, META_TAB_SESSION, slot);
        s->client_id = c;
        s->epoch = epoch;
        s->user_id = uid;
        s->watermark = wm;
        s->watermark_checksum = wmc;
        s->latest_commit = lc;
        s->created_op = cop;
        meta_ix_add_all(d->st, META_TAB_SESSION, slot);
        if (d->ct && rl)
            meta_ct_install_latest(d->ct, d->st, slot, reply, rl);
    }
}

/* Cross-table invariants that need the whole state. */
static void
dec_check_grants(struct dec *d)
{
    uint32_t cap = meta_tab_cap(d->st, META_TAB_SGRANT);
    for (uint32_t i = 0; i < cap && !d->r.err; i++) {
        const struct meta_sgrant *g = meta_rec_c(d->st, META_TAB_SGRANT, i);
        if (g->in_use &&
            (meta_stream_by_id(d->st, g->stream_id) != NULL) == g->dangling)
            meta_mp_fail(&d->r, META_SNAP_BAD_VALUE);
    }
    cap = meta_tab_cap(d->st, META_TAB_TGRANT);
    for (uint32_t i = 0; i < cap && !d->r.err; i++) {
        const struct meta_tgrant *g = meta_rec_c(d->st, META_TAB_TGRANT, i);
        if (g->in_use && (meta_topic_by_id(d->st, g->stream_id, g->topic_id) !=
                          NULL) == g->dangling)
            meta_mp_fail(&d->r, META_SNAP_BAD_VALUE);
    }
}

enum meta_snap_status
meta_snapshot_decode(const uint8_t *p, size_t len, void *st,
                     struct meta_client_table *ct)
{
    struct meta_hdr *h = meta_hdr(st);
    struct meta_caps caps = h->caps;
    if (h->magic != META_STATE_MAGIC || meta_state_reset(st, &caps) != 0)
        return META_SNAP_BAD_STATE;
    if (ct)
        meta_ct_clear(ct);
    struct vs_snapshot_prefix pre;
    if (vs_snapshot_prefix_read(p, len, &pre) != 0)
        return META_SNAP_TRUNCATED;
    if (pre.format_version < META_SNAPSHOT_FORMAT_MIN ||
        pre.format_version > META_SNAPSHOT_FORMAT)
        return META_SNAP_BAD_VERSION;
    struct dec d = {.format = pre.format_version, .st = st, .h = h, .ct = ct};
    meta_mp_init(&d.r, p + VS_SNAPSHOT_PREFIX_SIZE,
                 len - VS_SNAPSHOT_PREFIX_SIZE);
    meta_mp_array_n(&d.r, 8);
    uint32_t tl;
    const uint8_t *tag = meta_mp_str(&d.r, &tl);
    if (!d.r.err && (tl != strlen(SNAP_TAG) || memcmp(tag, SNAP_TAG, tl) != 0))
        meta_mp_fail(&d.r, META_SNAP_BAD_VALUE);
    h->last_op = meta_mp_uint(&d.r);
    h->last_timestamp = meta_mp_uint(&d.r);
    h->genesis_done = (uint32_t)meta_mp_uint_max(&d.r, 1);
    if (!d.r.err && h->last_op != pre.op)
        meta_mp_fail(&d.r, META_SNAP_OP_MISMATCH);
    dec_users(&d);
    dec_pats(&d);
    dec_streams(&d);
    dec_clients(&d);
    dec_check_grants(&d);
    if (!d.r.err && d.r.off != d.r.len)
        meta_mp_fail(&d.r, META_SNAP_TRAILING);
    if (!d.r.err) {
        if (d.format >= 2)
            meta_place_recount(st);
        else
            meta_place_all(st);
    }
    if (d.r.err) {
        meta_state_reset(st, &caps);
        if (ct)
            meta_ct_clear(ct);
    }
    return (enum meta_snap_status)d.r.err;
}
