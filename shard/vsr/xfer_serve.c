/*
 * shard/vsr/xfer_serve.c - the state-transfer offers of a serving
 * primary; see xfer_serve.h.
 */
#include "config.h"

#include <string.h>

#include "shard/vsr/xfer_serve.h"

#define XFER_DEFAULT_IDLE_TICKS   1000u
#define XFER_DEFAULT_SERVED_TICKS 300u

void
xfer_serve_init(struct xfer_serve *s, const struct xfer_serve_opts *o)
{
    memset(s, 0, sizeof(*s));
    s->o = *o;
    if (s->o.chunk_max == 0 || s->o.chunk_max > XFER_CHUNK_MAX)
        s->o.chunk_max = XFER_CHUNK_MAX;
    if (s->o.idle_ticks == 0)
        s->o.idle_ticks = XFER_DEFAULT_IDLE_TICKS;
    if (s->o.served_ticks == 0)
        s->o.served_ticks = XFER_DEFAULT_SERVED_TICKS;
    s->next_id = 1;
}

void
xfer_serve_set_view(struct xfer_serve *s, uint32_t view)
{
    s->o.me.view = view;
}

static struct xfer_offer *
slot_of(struct xfer_serve *s, uint8_t requester)
{
    for (unsigned i = 0; i < XFER_OFFERS_MAX; i++)
        if (s->offers[i].used && s->offers[i].requester == requester)
            return &s->offers[i];
    return NULL;
}

const struct xfer_offer *
xfer_serve_find(struct xfer_serve *s, uint8_t requester, struct vs_u128 nonce)
{
    struct xfer_offer *o = slot_of(s, requester);
    if (o != NULL && vs_u128_eq(o->nonce, nonce)) {
        s->stats.repeats++;
        o->idle = 0;
        return o;
    }
    return NULL;
}

const struct xfer_offer *
xfer_serve_offer(struct xfer_serve *s, uint8_t requester, struct vs_u128 nonce,
                 const struct xfer_manifest *m, uint64_t commit_op,
                 uint64_t commit_max, uint64_t *replaced_id)
{
    uint8_t mbytes[XFER_MANIFEST_MAX_SIZE];
    *replaced_id = 0;
    struct xfer_offer *o = slot_of(s, requester);
    if (o != NULL && vs_u128_eq(o->nonce, nonce))
        return o; /* first wins */
    int mlen = xfer_manifest_encode(m, mbytes, sizeof(mbytes));
    if (mlen <= 0)
        return NULL;
    if (o != NULL) {
        *replaced_id = o->id;
    } else {
        for (unsigned i = 0; i < XFER_OFFERS_MAX && o == NULL; i++)
            if (!s->offers[i].used)
                o = &s->offers[i];
        if (o == NULL)
            return NULL; /* cannot happen: one slot per requester */
    }
    memset(o, 0, sizeof(*o));
    o->used = 1;
    o->requester = requester;
    o->nonce = nonce;
    o->id = s->next_id++;
    o->m = *m;
    o->target_len =
        xfer_frame_target(o->target, &s->o.me, nonce, commit_op, commit_max,
                          mbytes, (size_t)mlen, XFER_AVAILABLE, 0);
    s->stats.offers++;
    return o;
}

size_t
xfer_serve_unavailable(const struct xfer_serve *s, void *out,
                       struct vs_u128 nonce, uint8_t reason, int transient,
                       uint64_t commit_op, uint64_t commit_max)
{
    return xfer_frame_target(out, &s->o.me, nonce, commit_op, commit_max, NULL,
                             0, reason, transient);
}

enum xfer_serve_result
xfer_serve_chunk(struct xfer_serve *s, uint8_t requester, const void *frame,
                 const struct xfer_offer **offer, uint8_t *kind,
                 uint64_t *offset, uint32_t *n)
{
    const struct vs_hdr_request_state_chunk *r = frame;
    struct xfer_offer *o = slot_of(s, requester);
    if (o == NULL || !vs_u128_eq(o->nonce, r->nonce)) {
        s->stats.unknown++;
        return XFER_SERVE_UNKNOWN;
    }
    if (r->artifact >= o->m.count) {
        s->stats.refused++;
        return XFER_SERVE_REFUSED_ARTIFACT;
    }
    const struct xfer_artifact *a = &o->m.a[r->artifact];
    if (r->offset >= a->len) {
        /* never an empty chunk, and the idle counter keeps running */
        s->stats.refused++;
        return XFER_SERVE_REFUSED_END;
    }
    uint64_t left = a->len - r->offset;
    uint32_t want = r->len < s->o.chunk_max ? r->len : s->o.chunk_max;
    *n = left < want ? (uint32_t)left : want;
    *kind = a->kind;
    *offset = r->offset;
    *offer = o;
    o->idle = 0;
    if (r->artifact + 1 == o->m.count && r->offset + *n == a->len)
        o->fully_served = 1;
    s->stats.chunks++;
    s->stats.bytes += *n;
    return XFER_SERVE_CHUNK;
}

size_t
xfer_serve_tick(struct xfer_serve *s, uint64_t *expired, size_t cap)
{
    size_t count = 0;
    for (unsigned i = 0; i < XFER_OFFERS_MAX; i++) {
        struct xfer_offer *o = &s->offers[i];
        if (!o->used)
            continue;
        uint32_t limit = o->fully_served ? s->o.served_ticks : s->o.idle_ticks;
        if (++o->idle < limit)
            continue;
        if (count < cap)
            expired[count] = o->id;
        count++;
        s->stats.expired++;
        memset(o, 0, sizeof(*o));
    }
    return count;
}

size_t
xfer_serve_clear(struct xfer_serve *s, uint64_t *ids, size_t cap)
{
    size_t count = 0;
    for (unsigned i = 0; i < XFER_OFFERS_MAX; i++) {
        struct xfer_offer *o = &s->offers[i];
        if (!o->used)
            continue;
        if (count < cap)
            ids[count] = o->id;
        count++;
        memset(o, 0, sizeof(*o));
    }
    return count;
}
