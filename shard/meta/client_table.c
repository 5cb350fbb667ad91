/*
 * shard/meta/client_table.c - the shard-0-private part of the client
 * table (cached reply rings), check_request, the outcome -> answer map,
 * and the ICT3 transfer form, decoding ICT2 too (see client_table.h).
 *
 * Invariants: check_request never writes; rings change only when a
 * committed reply is recorded or a snapshot/transfer is installed; a ring
 * is trusted only while its owner (client id, created_op) equals the
 * session in its slot of the instance passed.
 * Callers: shard 0 only.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/mem.h"
#include "shard/meta/client_table.h"
#include "shard/meta/index.h"
#include "shard/meta/lookup.h"
#include "shard/meta/state.h"

#define REPLY_OFF_REQ_CHECKSUM 128u
#define REPLY_OFF_OP           176u
#define REPLY_OFF_REQUEST      200u
#define REPLY_OFF_STATUS       216u

void
meta_ct_init(struct meta_client_table *ct)
{
    ct->slots = META_CT_CEILING;
    ct->s = vs_xcalloc(ct->slots, sizeof(*ct->s));
}

static void
slot_clear(struct meta_ct_slot *s)
{
    for (unsigned i = 0; i < META_CT_RING; i++) {
        free(s->ring[i].bytes);
        s->ring[i].bytes = NULL;
        s->ring[i].len = 0;
    }
    memset(s, 0, sizeof(*s));
}

void
meta_ct_clear(struct meta_client_table *ct)
{
    for (uint32_t i = 0; ct->s && i < ct->slots; i++)
        if (ct->s[i].n)
            slot_clear(&ct->s[i]);
    if (ct->s)
        memset(ct->s, 0, sizeof(*ct->s) * ct->slots);
}

void
meta_ct_fini(struct meta_client_table *ct)
{
    if (!ct->s)
        return;
    meta_ct_clear(ct);
    free(ct->s);
    ct->s = NULL;
    ct->slots = 0;
}

int
meta_ct_reply_valid(const uint8_t *reply, size_t len)
{
    if (len < VS_HEADER_SIZE || len > VS_FRAME_MAX)
        return 0;
    uint32_t size;
    memcpy(&size, reply + offsetof(struct vs_frame, size), 4);
    return size == len &&
           reply[offsetof(struct vs_frame, command)] == VS_CMD_REPLY;
}

/* The ring of a slot if it belongs to the session there, else NULL. */
static const struct meta_ct_slot *
owned(const struct meta_client_table *ct, const void *st, uint32_t slot,
      const struct meta_session **sess)
{
    const struct meta_session *s = meta_session_at(st, slot);
    if (sess)
        *sess = s;
    if (!s || slot >= ct->slots)
        return NULL;
    const struct meta_ct_slot *r = &ct->s[slot];
    if (r->n == 0 || !vs_u128_eq(r->client, s->client_id) ||
        r->created_op != s->created_op)
        return NULL;
    return r;
}

static struct vs_u128
reply_u128(const uint8_t *b, size_t off)
{
    struct vs_u128 v;
    memcpy(&v.lo, b + off, 8);
    memcpy(&v.hi, b + off + 8, 8);
    return v;
}

enum meta_ct_outcome
meta_ct_check_request(const struct meta_client_table *ct, const void *st,
                      struct vs_u128 client, uint64_t session, uint64_t request,
                      struct vs_u128 checksum, const uint8_t **reply,
                      size_t *reply_len)
{
    *reply = NULL;
    *reply_len = 0;
    const struct meta_session *s = meta_session_by_client(st, client);
    if (!s)
        return META_CT_NO_SESSION;
    if (session != 0 && s->epoch != 0) {
        if (session < s->epoch)
            return META_CT_SESSION_TOO_LOW;
        if (session > s->epoch)
            return META_CT_EPOCH_AHEAD;
    }
    if (request > s->watermark)
        return META_CT_NEW;
    const struct meta_ct_slot *r =
        owned(ct, st, meta_session_slot(st, s), NULL);
    for (unsigned i = 0; r && i < r->n; i++) {
        const struct meta_ct_reply *e = &r->ring[(r->head + i) % META_CT_RING];
        if (vs_load_u64(e->bytes + REPLY_OFF_REQUEST) != request)
            continue;
        struct vs_u128 c = reply_u128(e->bytes, REPLY_OFF_REQ_CHECKSUM);
        if (!vs_u128_is_zero(c) && !vs_u128_is_zero(checksum) &&
            !vs_u128_eq(c, checksum))
            return META_CT_CHECKSUM_MISMATCH;
        *reply = e->bytes;
        *reply_len = e->len;
        return META_CT_DUPLICATE;
    }
    if (request == s->watermark && !vs_u128_is_zero(checksum) &&
        !vs_u128_is_zero(s->watermark_checksum) &&
        !vs_u128_eq(checksum, s->watermark_checksum))
        return META_CT_CHECKSUM_MISMATCH;
    return META_CT_ALREADY_APPLIED;
}

const char *
meta_ct_outcome_name(enum meta_ct_outcome o)
{
    switch (o) {
    case META_CT_NEW:
        return "New";
    case META_CT_DUPLICATE:
        return "Duplicate";
    case META_CT_NO_SESSION:
        return "NoSession";
    case META_CT_SESSION_TOO_LOW:
        return "SessionTooLow";
    case META_CT_EPOCH_AHEAD:
        return "EpochAhead";
    case META_CT_ALREADY_APPLIED:
        return "AlreadyApplied";
    case META_CT_CHECKSUM_MISMATCH:
        return "ChecksumMismatch";
    }
    return "unknown";
}

enum meta_ct_action
meta_ct_answer(enum meta_ct_outcome o, struct vs_u128 client, uint8_t *reason)
{
    *reason = 0;
    switch (o) {
    case META_CT_NEW:
        return META_CT_EXECUTE;
    case META_CT_DUPLICATE:
        return META_CT_REPLY;
    case META_CT_NO_SESSION:
        *reason = VS_EVICT_NO_SESSION;
        return META_CT_EVICT;
    case META_CT_SESSION_TOO_LOW:
        *reason = VS_EVICT_SESSION_TOO_LOW;
        return META_CT_EVICT;
    case META_CT_EPOCH_AHEAD:
        *reason = VS_EVICT_SESSION_ERROR;
        return META_CT_EVICT;
    case META_CT_CHECKSUM_MISMATCH:
        *reason = VS_EVICT_INVALID_REQUEST_BODY;
        return META_CT_EVICT;
    case META_CT_ALREADY_APPLIED:
        vs_log_warn("client %016llx%016llx: request already applied and its "
                    "reply aged out; refusing (never re-executed), the "
                    "client must register again",
                    (unsigned long long)client.hi,
                    (unsigned long long)client.lo);
        *reason = VS_EVICT_SESSION_ERROR;
        return META_CT_EVICT;
    }
    *reason = VS_EVICT_SESSION_ERROR;
    return META_CT_EVICT;
}

static void
ring_push(struct meta_ct_slot *r, const uint8_t *b, size_t len)
{
    if (r->n == META_CT_RING) {
        free(r->ring[r->head].bytes);
        r->ring[r->head].bytes = NULL;
        r->head = (uint8_t)((r->head + 1) % META_CT_RING);
        r->n--;
    }
    struct meta_ct_reply *e = &r->ring[(r->head + r->n) % META_CT_RING];
    e->bytes = vs_xmalloc(len);
    memcpy(e->bytes, b, len);
    e->len = (uint32_t)len;
    r->n++;
}

static void
take_slot(struct meta_client_table *ct, uint32_t slot,
          const struct meta_session *s)
{
    struct meta_ct_slot *r = &ct->s[slot];
    if (r->n && vs_u128_eq(r->client, s->client_id) &&
        r->created_op == s->created_op)
        return;
    slot_clear(r);
    r->client = s->client_id;
    r->created_op = s->created_op;
}

void
meta_ct_record_reply(struct meta_client_table *ct, const void *st,
                     struct vs_u128 client, unsigned operation,
                     const uint8_t *reply, size_t len)
{
    const struct meta_session *s = meta_session_by_client(st, client);
    /* Register's reply is never cached: a ring holds replies of numbered
     * requests only, so the checkpoint's newest reply per slot is the one
     * of the watermark request even after a re-register. */
    if (!s || operation == VS_OP_REGISTER || !meta_ct_reply_valid(reply, len))
        return;
    uint32_t slot = meta_session_slot(st, s);
    take_slot(ct, slot, s);
    if (operation == VS_OP_CREATE_PAT &&
        vs_load_u32(reply + REPLY_OFF_STATUS) == 0 &&
        len >= VS_HEADER_SIZE + 4 && vs_load_u32(reply + VS_HEADER_SIZE) == 0) {
        /* never cache the token: store the refusal a duplicate gets */
        uint8_t f[VS_HEADER_SIZE + 12];
        memcpy(f, reply, VS_HEADER_SIZE);
        vs_store_u32(f + VS_HEADER_SIZE, 1);
        vs_store_u32(f + VS_HEADER_SIZE + 4, 0);
        vs_store_u32(f + VS_HEADER_SIZE + 8, VS_E_PAT_ALREADY_EXISTS);
        struct vs_header *h = (struct vs_header *)f;
        h->f.size = sizeof(f);
        h->f.checksum_body = vs_body_checksum(f + VS_HEADER_SIZE, 12);
        vs_frame_seal(h);
        ring_push(&ct->s[slot], f, sizeof(f));
        return;
    }
    ring_push(&ct->s[slot], reply, len);
}

const struct meta_ct_reply *
meta_ct_latest(const struct meta_client_table *ct, const void *st,
               uint32_t slot)
{
    const struct meta_ct_slot *r = owned(ct, st, slot, NULL);
    if (!r)
        return NULL;
    return &r->ring[(r->head + r->n - 1) % META_CT_RING];
}

void
meta_ct_install_latest(struct meta_client_table *ct, const void *st,
                       uint32_t slot, const uint8_t *reply, size_t len)
{
    const struct meta_session *s = meta_session_at(st, slot);
    if (!s || slot >= ct->slots)
        return;
    slot_clear(&ct->s[slot]);
    ct->s[slot].client = s->client_id;
    ct->s[slot].created_op = s->created_op;
    ring_push(&ct->s[slot], reply, len);
}

/* ------------------------------------------------------------ transfer */

int
meta_ct_transfer_encode_version(const struct meta_client_table *ct,
                                const void *st, struct vs_wbuf *w,
                                unsigned version)
{
    if (version != 2 && version != 3)
        return -EINVAL;
    const struct meta_hdr *h = meta_hdr_c(st);
    size_t start = w->len;
    vs_wr_bytes(w, version == 3 ? META_CT_MAGIC : META_CT_MAGIC_V2, 4);
    vs_wr_u32(w, h->count[META_TAB_SESSION]);
    uint32_t cap = meta_tab_cap(st, META_TAB_SESSION);
    uint32_t left = h->count[META_TAB_SESSION];
    for (uint32_t i = 0; i < cap && left; i++) {
        const struct meta_session *s;
        const struct meta_ct_slot *r = owned(ct, st, i, &s);
        if (!s)
            continue;
        left--;
        if (version == 3)
            vs_wr_u32(w, i);
        vs_wr_u128(w, s->client_id);
        vs_wr_u64(w, s->epoch);
        vs_wr_u32(w, s->user_id);
        vs_wr_u64(w, s->watermark);
        vs_wr_u128(w, s->watermark_checksum);
        if (version == 3) {
            vs_wr_u64(w, s->created_op);
            vs_wr_u64(w, s->latest_commit);
        }
        vs_wr_u8(w, r ? r->n : 0);
        for (unsigned k = 0; r && k < r->n; k++) {
            const struct meta_ct_reply *e =
                &r->ring[(r->head + k) % META_CT_RING];
            vs_wr_u32(w, e->len);
            vs_wr_bytes(w, e->bytes, e->len);
        }
    }
    vs_wr_u64(w, vs_xxh3_64(w->data + start, w->len - start));
    return 0;
}

int
meta_ct_transfer_encode(const struct meta_client_table *ct, const void *st,
                        struct vs_wbuf *w)
{
    return meta_ct_transfer_encode_version(ct, st, w, 3);
}

void
meta_ct_image_fini(struct meta_ct_image *img)
{
    for (uint32_t i = 0; img->e && i < img->count; i++)
        for (unsigned k = 0; k < img->e[i].ring_len; k++)
            free(img->e[i].ring[k].bytes);
    free(img->e);
    img->e = NULL;
    img->count = 0;
}

static int
cmp_u128(const void *x, const void *y)
{
    const struct vs_u128 *a = x, *b = y;
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return 0;
}

int
meta_ct_transfer_decode(const uint8_t *p, size_t len, struct meta_ct_image *img)
{
    int rc = -EPROTO;
    struct vs_u128 *ids = NULL;
    img->count = 0;
    img->e = NULL;
    img->version = 0;
    if (len < 16)
        return -EPROTO;
    unsigned version;
    if (memcmp(p, META_CT_MAGIC, 4) == 0)
        version = 3;
    else if (memcmp(p, META_CT_MAGIC_V2, 4) == 0)
        version = 2;
    else
        return -EPROTO;
    if (vs_xxh3_64(p, len - 8) != vs_load_u64(p + len - 8))
        return -EBADMSG;
    struct vs_rbuf r;
    vs_rbuf_init(&r, p + 4, len - 12);
    uint32_t count = vs_rd_u32(&r);
    /* each entry takes at least 53 (ICT3: 73) bytes (an empty ring) */
    uint64_t least = version == 3 ? 73 : 53;
    if (count > META_CT_CEILING || (uint64_t)count * least > vs_rbuf_left(&r))
        return -EINVAL;
    int64_t prev_slot = -1;
    img->e = vs_xcalloc((size_t)count + 1, sizeof(*img->e));
    ids = vs_xmalloc(sizeof(*ids) * ((size_t)count + 1));
    for (uint32_t i = 0; i < count; i++) {
        struct meta_ct_image_entry *e = &img->e[i];
        img->count = i + 1;
        e->slot = version == 3 ? vs_rd_u32(&r) : i;
        e->client = vs_rd_u128(&r);
        e->epoch = vs_rd_u64(&r);
        e->user_id = vs_rd_u32(&r);
        e->watermark = vs_rd_u64(&r);
        e->watermark_checksum = vs_rd_u128(&r);
        if (version == 3) {
            e->created_op = vs_rd_u64(&r);
            e->latest_commit = vs_rd_u64(&r);
        }
        uint8_t n = vs_rd_u8(&r);
        if (r.err)
            goto fail;
        if (vs_u128_is_zero(e->client) || n > META_CT_RING || e->epoch == 0) {
            rc = -EINVAL;
            goto fail;
        }
        /* ICT3: slots strictly ascending inside the ceiling; a session
         * is created by a Register at or before its epoch, and its
         * latest commit is at or after it. */
        if (version == 3 &&
            ((int64_t)e->slot <= prev_slot || e->slot >= META_CT_CEILING ||
             e->created_op == 0 || e->created_op > e->epoch ||
             e->latest_commit < e->epoch)) {
            rc = -EINVAL;
            goto fail;
        }
        prev_slot = (int64_t)e->slot;
        ids[i] = e->client;
        for (unsigned k = 0; k < n; k++) {
            uint32_t rl = vs_rd_u32(&r);
            const uint8_t *b = vs_rd_bytes(&r, rl);
            if (r.err)
                goto fail;
            if (!meta_ct_reply_valid(b, rl)) {
                rc = -EINVAL;
                goto fail;
            }
            e->ring[k].bytes = vs_xmalloc(rl);
            memcpy(e->ring[k].bytes, b, rl);
            e->ring[k].len = rl;
            e->ring_len = (uint8_t)(k + 1);
        }
    }
    if (vs_rbuf_left(&r) != 0)
        goto fail;
    qsort(ids, count, sizeof(*ids), cmp_u128);
    for (uint32_t i = 1; i < count; i++) {
        if (vs_u128_eq(ids[i - 1], ids[i])) {
            rc = -EINVAL;
            goto fail;
        }
    }
    free(ids);
    img->version = version;
    return 0;
fail:
    free(ids);
    meta_ct_image_fini(img);
    return rc;
}

int
meta_ct_install_sessions(void *st, const struct meta_ct_image *img)
{
    struct meta_hdr *h = meta_hdr(st);
    uint32_t cap = meta_tab_cap(st, META_TAB_SESSION);
    if (img->count > cap)
        return -ENOSPC;
    /* Slots are ascending (the decoder checks it): the last is the
     * highest. */
    uint32_t need = img->count;
    if (img->version == 3 && img->count > 0)
        need = img->e[img->count - 1].slot + 1;
    if (need > cap)
        return -ENOSPC;
    for (uint32_t i = 0; i < cap && h->count[META_TAB_SESSION]; i++) {
        if (meta_rec_live(st, META_TAB_SESSION, i)) {
            meta_ix_del_all(st, META_TAB_SESSION, i);
            meta_slot_free(st, META_TAB_SESSION, i);
        }
    }
    /* capacity first, then the entries */
    h->client_capacity = h->caps.clients > need ? h->caps.clients : need;
    for (uint32_t i = 0; i < img->count; i++) {
        const struct meta_ct_image_entry *e = &img->e[i];
        uint32_t slot = img->version == 3 ? e->slot : i;
        meta_slot_claim(st, META_TAB_SESSION, slot);
        struct meta_session *s = meta_rec(st, META_TAB_SESSION, slot);
        s->client_id = e->client;
        s->epoch = e->epoch;
        s->user_id = e->user_id;
        s->watermark = e->watermark;
        s->watermark_checksum = e->watermark_checksum;
        if (img->version == 3) {
            /* exactly as the primary had them: same checkpoint bytes */
            s->created_op = e->created_op;
            s->latest_commit = e->latest_commit;
        } else {
            s->created_op = e->epoch;
            uint64_t lc = e->epoch;
            if (e->ring_len > 0) {
                const struct meta_ct_reply *last = &e->ring[e->ring_len - 1];
                uint64_t rop = vs_load_u64(last->bytes + REPLY_OFF_OP);
                if (rop > lc)
                    lc = rop;
            }
            s->latest_commit = lc;
        }
        meta_ix_add_all(st, META_TAB_SESSION, slot);
    }
    return 0;
}

void
meta_ct_install_replies(struct meta_client_table *ct, const void *st,
                        const struct meta_ct_image *img)
{
    meta_ct_clear(ct);
    for (uint32_t i = 0; i < img->count; i++) {
        uint32_t slot = img->version == 3 ? img->e[i].slot : i;
        if (slot >= ct->slots)
            continue;
        const struct meta_session *s = meta_session_at(st, slot);
        if (!s)
            continue;
        take_slot(ct, slot, s);
        for (unsigned k = 0; k < img->e[i].ring_len; k++)
            ring_push(&ct->s[slot], img->e[i].ring[k].bytes,
                      img->e[i].ring[k].len);
    }
}
