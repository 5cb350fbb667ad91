/*
 * common/buf.c - see buf.h. Any process.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/mem.h"

void
vs_rbuf_init(struct vs_rbuf *r, const void *data, size_t len)
{
    r->data = data;
    r->len = len;
    r->off = 0;
    r->err = 0;
}

size_t
vs_rbuf_left(const struct vs_rbuf *r)
{
    return r->len - r->off;
}

const uint8_t *
vs_rd_bytes(struct vs_rbuf *r, size_t n)
{
    if (r->err != 0 || n > r->len - r->off) {
        r->err = -EPROTO;
        return NULL;
    }
    const uint8_t *p = r->data + r->off;
    r->off += n;
    return p;
}

#define VS_RD(type, name)                                                      \
    type name(struct vs_rbuf *r)                                               \
    {                                                                          \
        type v = 0;                                                            \
        const uint8_t *p = vs_rd_bytes(r, sizeof(type));                       \
        if (p != NULL)                                                         \
            memcpy(&v, p, sizeof(type));                                       \
        return v;                                                              \
    }

VS_RD(uint8_t, vs_rd_u8)
VS_RD(uint16_t, vs_rd_u16)
VS_RD(uint32_t, vs_rd_u32)
VS_RD(uint64_t, vs_rd_u64)

struct vs_u128
vs_rd_u128(struct vs_rbuf *r)
{
    struct vs_u128 v;
    v.lo = vs_rd_u64(r);
    v.hi = vs_rd_u64(r);
    return v;
}

void
vs_wbuf_init(struct vs_wbuf *w)
{
    w->data = NULL;
    w->len = 0;
    w->cap = 0;
}

void
vs_wbuf_fini(struct vs_wbuf *w)
{
    free(w->data);
    vs_wbuf_init(w);
}

void
vs_wbuf_reset(struct vs_wbuf *w)
{
    w->len = 0;
}

uint8_t *
vs_wbuf_reserve(struct vs_wbuf *w, size_t n)
{
    if (n > w->cap - w->len) {
        size_t cap = w->cap ? w->cap : 64;
        while (cap - w->len < n)
            cap *= 2;
        w->data = vs_xrealloc(w->data, cap);
        w->cap = cap;
    }
    return w->data + w->len;
}

void
vs_wr_bytes(struct vs_wbuf *w, const void *p, size_t n)
{
    if (n == 0)
        return;
    memcpy(vs_wbuf_reserve(w, n), p, n);
    w->len += n;
}

void
vs_wr_zeros(struct vs_wbuf *w, size_t n)
{
    if (n == 0)
        return;
    memset(vs_wbuf_reserve(w, n), 0, n);
    w->len += n;
}

void
vs_wr_u8(struct vs_wbuf *w, uint8_t v)
{
    vs_wr_bytes(w, &v, 1);
}

void
vs_wr_u16(struct vs_wbuf *w, uint16_t v)
{
    vs_wr_bytes(w, &v, 2);
}

void
vs_wr_u32(struct vs_wbuf *w, uint32_t v)
{
    vs_wr_bytes(w, &v, 4);
}

void
vs_wr_u64(struct vs_wbuf *w, uint64_t v)
{
    vs_wr_bytes(w, &v, 8);
}

void
vs_wr_u128(struct vs_wbuf *w, struct vs_u128 v)
{
    vs_wr_u64(w, v.lo);
    vs_wr_u64(w, v.hi);
}
