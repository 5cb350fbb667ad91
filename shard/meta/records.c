/*
 * shard/meta/records.c - reply payload records (see records.h).
 * Invariants: byte layouts follow iggy-client-protocol*.md exactly.
 * Callers: any process holding a read section.
 */
#include "config.h"

#include <string.h>

#include "shard/meta/grants.h"
#include "shard/meta/index.h"
#include "shard/meta/lookup.h"
#include "shard/meta/records.h"

void
meta_wr_stream_record(struct vs_wbuf *w, const struct meta_stream *s,
                      uint64_t size_bytes, uint64_t messages_count)
{
    vs_wr_u32(w, s->id);
    vs_wr_u64(w, s->created_at);
    vs_wr_u32(w, s->topics_count);
    vs_wr_u64(w, size_bytes);
    vs_wr_u64(w, messages_count);
    vs_wr_u8(w, s->name_len);
    vs_wr_bytes(w, s->name, s->name_len);
    vs_wr_u32(w, 0); /* options: streams have none */
}

static void
tlv_str(struct vs_wbuf *w, uint8_t kind, const void *p, uint32_t n)
{
    vs_wr_u8(w, kind);
    vs_wr_u32(w, n);
    vs_wr_bytes(w, p, n);
}

static void
tlv_key(struct vs_wbuf *w, const char *key)
{
    tlv_str(w, 2, key, (uint32_t)strlen(key));
}

static void
tlv_u64(struct vs_wbuf *w, uint64_t v)
{
    vs_wr_u8(w, 12);
    vs_wr_u32(w, 8);
    vs_wr_u64(w, v);
}

/* One option pair; `which` is the META_TOPT_* bit; defaults if !value. */
static void
opt_pair(struct vs_wbuf *w, unsigned which, const struct meta_topic_opts *o)
{
    switch (which) {
    case META_TOPT_COMPRESSION: {
        const char *c = (o && o->compression == 2) ? "gzip" : "none";
        tlv_key(w, "compression_algorithm");
        tlv_str(w, 2, c, 4);
        break;
    }
    case META_TOPT_ENFORCE_FSYNC:
        tlv_key(w, "enforce_fsync");
        vs_wr_u8(w, 3);
        vs_wr_u32(w, 1);
        vs_wr_u8(w, o ? (o->enforce_fsync ? 1 : 0) : 0);
        break;
    case META_TOPT_MAX_TOPIC_SIZE:
        tlv_key(w, "max_topic_size");
        tlv_u64(w, o ? o->max_topic_size : UINT64_MAX);
        break;
    case META_TOPT_MESSAGE_EXPIRY:
        tlv_key(w, "message_expiry");
        tlv_u64(w, o ? o->message_expiry : UINT64_MAX);
        break;
    case META_TOPT_MSGS_TO_SAVE:
        tlv_key(w, "messages_required_to_save");
        vs_wr_u8(w, 11);
        vs_wr_u32(w, 4);
        vs_wr_u32(w, o ? o->messages_required_to_save : 1024);
        break;
    case META_TOPT_PREALLOCATE:
        tlv_key(w, "preallocate_segments");
        vs_wr_u8(w, 3);
        vs_wr_u32(w, 1);
        vs_wr_u8(w, o ? (o->preallocate_segments ? 1 : 0) : 0);
        break;
    case META_TOPT_SEGMENT_SIZE:
        tlv_key(w, "segment_size");
        tlv_u64(w, o ? o->segment_size : UINT64_C(1073741824));
        break;
    case META_TOPT_SIZE_TO_SAVE:
        tlv_key(w, "size_of_messages_required_to_save");
        tlv_u64(w,
                o ? o->size_of_messages_required_to_save : UINT64_C(1048576));
        break;
    default:
        break;
    }
}

/* Catalog keys sorted by key bytes. */
static const unsigned opt_order[8] = {
    META_TOPT_COMPRESSION,    META_TOPT_ENFORCE_FSYNC, META_TOPT_MAX_TOPIC_SIZE,
    META_TOPT_MESSAGE_EXPIRY, META_TOPT_MSGS_TO_SAVE,  META_TOPT_PREALLOCATE,
    META_TOPT_SEGMENT_SIZE,   META_TOPT_SIZE_TO_SAVE,
};

static void
opt_block(struct vs_wbuf *w, const struct meta_topic_opts *o, int expl)
{
    size_t at = w->len;
    vs_wr_u32(w, 0);
    for (int i = 0; i < 8; i++) {
        int is_expl = (o->explicit_mask & opt_order[i]) != 0;
        if (is_expl == expl)
            opt_pair(w, opt_order[i], expl ? o : NULL);
    }
    vs_store_u32(w->data + at, (uint32_t)(w->len - at - 4));
}

void
meta_wr_topic_header(struct vs_wbuf *w, const struct meta_topic *t,
                     uint64_t size_bytes, uint64_t messages_count)
{
    vs_wr_u32(w, t->id);
    vs_wr_u64(w, t->created_at);
    vs_wr_u32(w, t->partitions_count);
    vs_wr_u64(w, t->opts.message_expiry);
    vs_wr_u8(w, t->opts.compression);
    vs_wr_u64(w, t->opts.max_topic_size);
    vs_wr_u64(w, size_bytes);
    vs_wr_u64(w, messages_count);
    vs_wr_u8(w, t->name_len);
    vs_wr_bytes(w, t->name, t->name_len);
    opt_block(w, &t->opts, 1);
    opt_block(w, &t->opts, 0);
}

void
meta_wr_partition_record(struct vs_wbuf *w, const struct meta_partition *p,
                         uint32_t segments_count, uint64_t current_offset,
                         uint64_t size_bytes, uint64_t messages_count)
{
    vs_wr_u32(w, p->id);
    vs_wr_u64(w, p->created_at);
    vs_wr_u32(w, segments_count);
    vs_wr_u64(w, current_offset);
    vs_wr_u64(w, size_bytes);
    vs_wr_u64(w, messages_count);
}

void
meta_wr_group_details(struct vs_wbuf *w, const void *st,
                      const struct meta_group *g)
{
    const struct meta_topic *t =
        meta_topic_by_id(st, g->stream_id, g->topic_id);
    uint32_t pc = t ? t->partitions_count : 0;
    vs_wr_u32(w, g->id);
    vs_wr_u32(w, pc);
    vs_wr_u32(w, g->members_count);
    vs_wr_u8(w, g->name_len);
    vs_wr_bytes(w, g->name, g->name_len);
    for (uint32_t m = 0; m < g->member_id_bound; m++) {
        const struct meta_member *mb =
            meta_member_by_id(st, g->stream_id, g->topic_id, g->id, m);
        if (!mb)
            continue;
        vs_wr_u32(w, m);
        size_t at = w->len;
        vs_wr_u32(w, 0);
        uint32_t n = 0;
        for (uint32_t p = 0; p < pc; p++) {
            const struct meta_assign *a =
                meta_assign_get(st, g->stream_id, g->topic_id, g->id, p);
            if (a && a->owner == m) {
                vs_wr_u32(w, p);
                n++;
            }
        }
        vs_store_u32(w->data + at, n);
    }
}

void
meta_wr_user_record(struct vs_wbuf *w, const struct meta_user *u,
                    uint8_t status)
{
    vs_wr_u32(w, u->id);
    vs_wr_u64(w, u->created_at);
    vs_wr_u8(w, status);
    vs_wr_u8(w, u->name_len);
    vs_wr_bytes(w, u->username, u->name_len);
    vs_wr_u32(w, 0);
}

void
meta_wr_permissions(struct vs_wbuf *w, const void *st,
                    const struct meta_user *u)
{
    struct meta_grant_view v;
    meta_grants_collect(st, u->id, &v);
    for (int i = 0; i < 10; i++)
        vs_wr_u8(w, (u->global >> i) & 1u);
    vs_wr_u8(w, v.ns ? 1 : 0);
    uint32_t ti = 0;
    for (uint32_t i = 0; i < v.ns; i++) {
        const struct meta_sgrant *g = meta_rec_c(st, META_TAB_SGRANT, v.s[i]);
        vs_wr_u32(w, g->stream_id);
        for (int b = 0; b < 6; b++)
            vs_wr_u8(w, (g->bits >> b) & 1u);
        /* topic grants of this stream (both views sorted) */
        while (ti < v.nt && ((const struct meta_tgrant *)meta_rec_c(
                                 st, META_TAB_TGRANT, v.t[ti]))
                                    ->stream_id < g->stream_id)
            ti++;
        uint32_t t0 = ti;
        while (ti < v.nt && ((const struct meta_tgrant *)meta_rec_c(
                                 st, META_TAB_TGRANT, v.t[ti]))
                                    ->stream_id == g->stream_id)
            ti++;
        vs_wr_u8(w, ti > t0 ? 1 : 0);
        for (uint32_t k = t0; k < ti; k++) {
            const struct meta_tgrant *tg =
                meta_rec_c(st, META_TAB_TGRANT, v.t[k]);
            vs_wr_u32(w, tg->topic_id);
            for (int b = 0; b < 4; b++)
                vs_wr_u8(w, (tg->bits >> b) & 1u);
            vs_wr_u8(w, k + 1 < ti ? 1 : 0);
        }
        vs_wr_u8(w, i + 1 < v.ns ? 1 : 0);
    }
    meta_grants_view_fini(&v);
}

void
meta_wr_user_details(struct vs_wbuf *w, const void *st,
                     const struct meta_user *u)
{
    meta_wr_user_record(w, u, u->status);
    if (!u->has_perms) {
        vs_wr_u32(w, 0);
        return;
    }
    vs_wr_u8(w, 1);
    size_t at = w->len;
    vs_wr_u32(w, 0);
    meta_wr_permissions(w, st, u);
    vs_store_u32(w->data + at, (uint32_t)(w->len - at - 4));
}
