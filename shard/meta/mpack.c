/*
 * shard/meta/mpack.c - strict msgpack reader and vs_wbuf packer (see
 * mpack.h). Invariants: no read outside the input; sticky typed errors.
 * Callers: shard/meta only.
 */
#include "config.h"

#include <string.h>

#include "shard/meta/mpack.h"
#include "shard/meta/snapshot_codec.h"

void
meta_mp_init(struct meta_mp *r, const void *p, size_t len)
{
    r->p = p;
    r->len = len;
    r->off = 0;
    r->err = 0;
}

void
meta_mp_fail(struct meta_mp *r, int status)
{
    if (!r->err)
        r->err = status;
}

static int
need(struct meta_mp *r, size_t n)
{
    if (r->err)
        return 0;
    if (r->len - r->off < n) {
        meta_mp_fail(r, META_SNAP_TRUNCATED);
        return 0;
    }
    return 1;
}

static uint64_t
be(struct meta_mp *r, size_t n)
{
    if (!need(r, n))
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | r->p[r->off + i];
    r->off += n;
    return v;
}

static int
tag(struct meta_mp *r)
{
    if (!need(r, 1))
        return -1;
    return r->p[r->off++];
}

uint32_t
meta_mp_array(struct meta_mp *r)
{
    int t = tag(r);
    uint64_t n;
    if (t < 0)
        return 0;
    if (t >= 0x90 && t <= 0x9f)
        n = (uint64_t)(t & 0x0f);
    else if (t == 0xdc)
        n = be(r, 2);
    else if (t == 0xdd)
        n = be(r, 4);
    else {
        meta_mp_fail(r, META_SNAP_BAD_TYPE);
        return 0;
    }
    if (r->err)
        return 0;
    if (n > r->len - r->off) { /* every element takes >= 1 byte */
        meta_mp_fail(r, META_SNAP_BAD_LENGTH);
        return 0;
    }
    return (uint32_t)n;
}

void
meta_mp_array_n(struct meta_mp *r, uint32_t n)
{
    uint32_t got = meta_mp_array(r);
    if (!r->err && got != n)
        meta_mp_fail(r, META_SNAP_BAD_LENGTH);
}

uint64_t
meta_mp_uint(struct meta_mp *r)
{
    int t = tag(r);
    if (t < 0)
        return 0;
    if (t <= 0x7f)
        return (uint64_t)t;
    switch (t) {
    case 0xcc:
        return be(r, 1);
    case 0xcd:
        return be(r, 2);
    case 0xce:
        return be(r, 4);
    case 0xcf:
        return be(r, 8);
    default:
        meta_mp_fail(r, META_SNAP_BAD_TYPE);
        return 0;
    }
}

uint64_t
meta_mp_uint_max(struct meta_mp *r, uint64_t max)
{
    uint64_t v = meta_mp_uint(r);
    if (!r->err && v > max) {
        meta_mp_fail(r, META_SNAP_BAD_VALUE);
        return 0;
    }
    return v;
}

static const uint8_t *
raw(struct meta_mp *r, uint32_t *n, int want_str)
{
    int t = tag(r);
    uint64_t len;
    *n = 0;
    if (t < 0)
        return NULL;
    if (want_str && t >= 0xa0 && t <= 0xbf)
        len = (uint64_t)(t & 0x1f);
    else if (want_str && t == 0xd9)
        len = be(r, 1);
    else if (want_str && t == 0xda)
        len = be(r, 2);
    else if (want_str && t == 0xdb)
        len = be(r, 4);
    else if (!want_str && t == 0xc4)
        len = be(r, 1);
    else if (!want_str && t == 0xc5)
        len = be(r, 2);
    else if (!want_str && t == 0xc6)
        len = be(r, 4);
    else {
        meta_mp_fail(r, META_SNAP_BAD_TYPE);
        return NULL;
    }
    if (!need(r, (size_t)len))
        return NULL;
    const uint8_t *p = r->p + r->off;
    r->off += (size_t)len;
    *n = (uint32_t)len;
    return p;
}

const uint8_t *
meta_mp_str(struct meta_mp *r, uint32_t *n)
{
    return raw(r, n, 1);
}

const uint8_t *
meta_mp_bin(struct meta_mp *r, uint32_t *n)
{
    return raw(r, n, 0);
}

struct vs_u128
meta_mp_u128(struct meta_mp *r)
{
    struct vs_u128 v = {0, 0};
    uint32_t n;
    const uint8_t *p = meta_mp_bin(r, &n);
    if (r->err)
        return v;
    if (n != 16) {
        meta_mp_fail(r, META_SNAP_BAD_LENGTH);
        return v;
    }
    memcpy(&v.lo, p, 8);
    memcpy(&v.hi, p + 8, 8);
    return v;
}

static int
wbuf_write(void *data, const char *buf, size_t len)
{
    vs_wr_bytes(data, buf, len);
    return 0;
}

void
meta_mp_packer_init(msgpack_packer *pk, struct vs_wbuf *w)
{
    msgpack_packer_init(pk, w, wbuf_write);
}

void
meta_mp_pack_u128(msgpack_packer *pk, struct vs_u128 v)
{
    uint8_t b[16];
    memcpy(b, &v.lo, 8);
    memcpy(b + 8, &v.hi, 8);
    meta_mp_pack_bin(pk, b, 16);
}

void
meta_mp_pack_str(msgpack_packer *pk, const void *p, size_t n)
{
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, p, n);
}

void
meta_mp_pack_bin(msgpack_packer *pk, const void *p, size_t n)
{
    msgpack_pack_bin(pk, n);
    msgpack_pack_bin_body(pk, p, n);
}
