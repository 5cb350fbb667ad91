/*
 * shard/serve/pgclients.c - a partition group's client table (the
 * committed proposals of each client) and its durable "VSPC" form; see
 * pgclients.h for the layout and the rules.
 *
 * Invariants: the table changes only through pgc_record (a committed op,
 * in op order) and pgc_decode (a whole saved table); pgc_decode leaves
 * the table unchanged on any refusal.
 * Process: data shards (loop thread of the owning shard); tests.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/mem.h"
#include "shard/serve/pgclients.h"
#include "shard/storage/atomic_file.h"

#define PGC_HEAD_LEN 28u /* magic, version, op, commits, count */

void
pgc_init(struct pgc_table *t, size_t capacity)
{
    memset(t, 0, sizeof(*t));
    t->capacity = capacity ? capacity : 1;
}

void
pgc_fini(struct pgc_table *t)
{
    free(t->c);
    memset(t, 0, sizeof(*t));
}

void
pgc_clear(struct pgc_table *t)
{
    t->n = 0;
    t->commits = 0;
}

const struct pgc_client *
pgc_find(const struct pgc_table *t, struct vs_u128 client)
{
    for (size_t i = 0; i < t->n; i++)
        if (vs_u128_eq(t->c[i].client, client))
            return &t->c[i];
    return NULL;
}

const struct pgc_done *
pgc_done_find(const struct pgc_table *t, struct vs_u128 client,
              uint64_t request, struct vs_u128 request_checksum)
{
    const struct pgc_client *c = pgc_find(t, client);
    for (unsigned i = 0; c && i < PGC_KEEP; i++) {
        const struct pgc_done *d = &c->done[i];
        if (d->used && d->request == request &&
            vs_u128_eq(d->request_checksum, request_checksum))
            return d;
    }
    return NULL;
}

static struct pgc_client *
slot_for(struct pgc_table *t, struct vs_u128 client)
{
    struct pgc_client *e = (struct pgc_client *)pgc_find(t, client);
    if (e)
        return e;
    if (t->n < t->capacity) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 8;
            if (cap > t->capacity)
                cap = t->capacity;
            t->c = vs_xrealloc(t->c, cap * sizeof(*t->c));
            t->cap = cap;
        }
        e = &t->c[t->n++];
    } else {
        /* the least recently committed client leaves the table (the
         * first one on ties) */
        e = &t->c[0];
        for (size_t i = 1; i < t->n; i++)
            if (t->c[i].used < e->used)
                e = &t->c[i];
    }
    memset(e, 0, sizeof(*e));
    e->client = client;
    return e;
}

void
pgc_record(struct pgc_table *t, const struct vs_hdr_prepare *h,
           uint64_t base_offset, uint32_t code)
{
    if (vs_u128_is_zero(h->client))
        return;
    const struct pgc_client *known = pgc_find(t, h->client);
    for (unsigned i = 0; known && i < PGC_KEEP; i++)
        if (known->done[i].used && known->done[i].op == h->op)
            return; /* recorded already (a replay over a saved table) */
    struct pgc_client *e = slot_for(t, h->client);
    struct pgc_done *d = &e->done[e->next];
    e->next = (e->next + 1) % PGC_KEEP;
    d->request = h->request;
    d->request_checksum = h->request_checksum;
    d->op = h->op;
    d->base_offset = base_offset;
    d->operation = h->operation;
    d->code = code;
    d->used = 1;
    if (h->request > e->max_request)
        e->max_request = h->request;
    e->used = ++t->commits;
}

void
pgc_encode(const struct pgc_table *t, uint64_t op, struct vs_wbuf *out)
{
    size_t head = out->len;
    vs_wr_bytes(out, "VSPC", 4);
    vs_wr_u32(out, PGC_VERSION);
    vs_wr_u64(out, op);
    vs_wr_u64(out, t->commits);
    vs_wr_u32(out, (uint32_t)t->n);
    for (size_t i = 0; i < t->n; i++) {
        const struct pgc_client *c = &t->c[i];
        unsigned used = 0;
        for (unsigned k = 0; k < PGC_KEEP; k++)
            used += c->done[k].used ? 1 : 0;
        vs_wr_u128(out, c->client);
        vs_wr_u64(out, c->max_request);
        vs_wr_u64(out, c->used);
        vs_wr_u8(out, (uint8_t)c->next);
        vs_wr_u8(out, (uint8_t)used);
        vs_wr_u8(out, 0);
        vs_wr_u8(out, 0);
        vs_wr_u32(out, 0);
        for (unsigned k = 0; k < PGC_KEEP; k++) {
            const struct pgc_done *d = &c->done[k];
            if (!d->used) {
                uint8_t zero[PGC_ENTRY_LEN];
                memset(zero, 0, sizeof(zero));
                vs_wr_bytes(out, zero, sizeof(zero));
                continue;
            }
            vs_wr_u64(out, d->request);
            vs_wr_u128(out, d->request_checksum);
            vs_wr_u64(out, d->op);
            vs_wr_u64(out, d->base_offset);
            vs_wr_u8(out, d->operation);
            vs_wr_u8(out, 0);
            vs_wr_u8(out, 0);
            vs_wr_u8(out, 0);
            vs_wr_u32(out, d->code);
        }
    }
    vs_wr_u64(out, vs_xxh3_64(out->data + head, out->len - head));
}

static int
zeros(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

int
pgc_decode(struct pgc_table *t, const uint8_t *b, size_t len, uint64_t *op)
{
    if (len < PGC_HEAD_LEN + 8 || memcmp(b, "VSPC", 4) != 0 ||
        vs_load_u32(b + 4) != PGC_VERSION ||
        vs_load_u64(b + len - 8) != vs_xxh3_64(b, len - 8))
        return -EBADMSG;
    uint32_t count = vs_load_u32(b + 24);
    if (count > t->capacity ||
        len != PGC_HEAD_LEN + (size_t)count * PGC_CLIENT_LEN + 8)
        return -EBADMSG;
    struct pgc_client *c =
        count ? vs_xcalloc(count, sizeof(*c)) : vs_xcalloc(1, sizeof(*c));
    const uint8_t *p = b + PGC_HEAD_LEN;
    for (uint32_t i = 0; i < count; i++, p += PGC_CLIENT_LEN) {
        struct pgc_client *e = &c[i];
        e->client.lo = vs_load_u64(p);
        e->client.hi = vs_load_u64(p + 8);
        e->max_request = vs_load_u64(p + 16);
        e->used = vs_load_u64(p + 24);
        e->next = p[32];
        unsigned used = p[33];
        if (vs_u128_is_zero(e->client) || e->next >= PGC_KEEP ||
            used > PGC_KEEP || !zeros(p + 34, 6))
            goto bad;
        for (uint32_t k = 0; k < i; k++)
            if (vs_u128_eq(c[k].client, e->client))
                goto bad;
        unsigned seen = 0;
        for (unsigned k = 0; k < PGC_KEEP; k++) {
            const uint8_t *q = p + 40 + k * PGC_ENTRY_LEN;
            struct pgc_done *d = &e->done[k];
            if (zeros(q, PGC_ENTRY_LEN))
                continue;
            d->request = vs_load_u64(q);
            d->request_checksum.lo = vs_load_u64(q + 8);
            d->request_checksum.hi = vs_load_u64(q + 16);
            d->op = vs_load_u64(q + 24);
            d->base_offset = vs_load_u64(q + 32);
            d->operation = q[40];
            d->code = vs_load_u32(q + 44);
            if (q[41] || q[42] || q[43] || d->op == 0 ||
                d->request > e->max_request)
                goto bad;
            d->used = 1;
            seen++;
        }
        if (seen != used)
            goto bad;
    }
    free(t->c);
    t->c = c;
    t->n = t->cap = count;
    if (t->cap == 0)
        t->cap = 1;
    t->commits = vs_load_u64(b + 16);
    *op = vs_load_u64(b + 8);
    return 0;
bad:
    free(c);
    return -EBADMSG;
}

int
pgc_save(const struct pgc_table *t, uint64_t op, struct vs_sio *io,
         const char *dir)
{
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    pgc_encode(t, op, &w);
    int rc = afile_replace(io, dir, PGC_FILE, w.data, w.len);
    vs_wbuf_fini(&w);
    return rc;
}

int
pgc_load(struct pgc_table *t, struct vs_sio *io, const char *dir, uint64_t *op)
{
    char path[768];
    *op = 0;
    int rc = afile_join(path, sizeof(path), dir, PGC_FILE);
    if (rc < 0)
        return rc;
    uint8_t *b = NULL;
    size_t len = 0;
    size_t max = PGC_HEAD_LEN + t->capacity * (size_t)PGC_CLIENT_LEN + 8;
    rc = afile_read_all(io, path, max, &b, &len);
    if (rc == -ENOENT)
        return 0;
    if (rc == -EFBIG)
        return -EBADMSG;
    if (rc < 0)
        return rc;
    rc = b ? pgc_decode(t, b, len, op) : -EBADMSG;
    free(b);
    return rc;
}
