/*
 * shard/vsr/xfer_manifest.c - the ISM1 manifest codec; see xfer_manifest.h.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/checksum.h"
#include "shard/vsr/xfer_manifest.h"

static void
put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void
put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t
get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t
get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

const char *
xfer_manifest_error_name(enum xfer_manifest_error e)
{
    static const char *const names[] = {
        [XFER_MANIFEST_OK] = "ok",
        [XFER_MANIFEST_SHORT] = "truncated",
        [XFER_MANIFEST_LONG] = "trailing bytes",
        [XFER_MANIFEST_MAGIC_BAD] = "bad magic",
        [XFER_MANIFEST_ENTRY_LEN] = "bad entry length",
        [XFER_MANIFEST_COUNT] = "bad artifact count",
        [XFER_MANIFEST_KIND] = "unknown or repeated artifact kind",
        [XFER_MANIFEST_CAP_BAD] = "artifact larger than the caps",
        [XFER_MANIFEST_CHECKSUM] = "checksum mismatch",
    };
    if ((unsigned)e < sizeof(names) / sizeof(names[0]) && names[e] != NULL)
        return names[e];
    return "unknown";
}

/* The invariants shared by encode and decode. */
static enum xfer_manifest_error
check_entries(const struct xfer_manifest *m)
{
    unsigned seen = 0;
    uint64_t sum = 0;
    if (m->count == 0 || m->count > XFER_ARTIFACTS_MAX)
        return XFER_MANIFEST_COUNT;
    for (uint32_t i = 0; i < m->count; i++) {
        const struct xfer_artifact *a = &m->a[i];
        if (a->kind >= XFER_KIND_COUNT || (seen & (1u << a->kind)) != 0)
            return XFER_MANIFEST_KIND;
        seen |= 1u << a->kind;
        if (a->len > XFER_ARTIFACT_CAP)
            return XFER_MANIFEST_CAP_BAD;
        sum += a->len;
        if (sum > XFER_MANIFEST_CAP)
            return XFER_MANIFEST_CAP_BAD;
    }
    return XFER_MANIFEST_OK;
}

int
xfer_manifest_encode(const struct xfer_manifest *m, uint8_t *out, size_t cap)
{
    if (check_entries(m) != XFER_MANIFEST_OK)
        return -EINVAL;
    size_t size = XFER_MANIFEST_SIZE(m->count);
    if (cap < size)
        return -ENOSPC;
    uint8_t *p = out;
    memcpy(p, XFER_MANIFEST_MAGIC, 4);
    p += 4;
    put_u32(p, m->count);
    p += 4;
    *p++ = XFER_ENTRY_LEN;
    for (uint32_t i = 0; i < m->count; i++) {
        *p++ = m->a[i].kind;
        put_u64(p, m->a[i].frontier);
        put_u64(p + 8, m->a[i].len);
        put_u64(p + 16, m->a[i].checksum);
        p += 24;
    }
    put_u64(p, vs_xxh3_64(out, (size_t)(p - out)));
    return (int)size;
}

enum xfer_manifest_error
xfer_manifest_decode(const uint8_t *p, size_t len, struct xfer_manifest *m)
{
    if (len < XFER_MANIFEST_SIZE(0))
        return XFER_MANIFEST_SHORT;
    if (memcmp(p, XFER_MANIFEST_MAGIC, 4) != 0)
        return XFER_MANIFEST_MAGIC_BAD;
    uint32_t count = get_u32(p + 4);
    if (p[8] != XFER_ENTRY_LEN)
        return XFER_MANIFEST_ENTRY_LEN;
    if (count == 0 || count > XFER_ARTIFACTS_MAX)
        return XFER_MANIFEST_COUNT;
    size_t size = XFER_MANIFEST_SIZE(count);
    if (len < size)
        return XFER_MANIFEST_SHORT;
    if (len > size)
        return XFER_MANIFEST_LONG;
    if (get_u64(p + size - 8) != vs_xxh3_64(p, size - 8))
        return XFER_MANIFEST_CHECKSUM;
    memset(m, 0, sizeof(*m));
    m->count = count;
    const uint8_t *e = p + 9;
    for (uint32_t i = 0; i < count; i++, e += XFER_ENTRY_LEN) {
        m->a[i].kind = e[0];
        m->a[i].frontier = get_u64(e + 1);
        m->a[i].len = get_u64(e + 9);
        m->a[i].checksum = get_u64(e + 17);
    }
    return check_entries(m);
}

const struct xfer_artifact *
xfer_manifest_find(const struct xfer_manifest *m, enum xfer_kind kind)
{
    for (uint32_t i = 0; i < m->count && i < XFER_ARTIFACTS_MAX; i++)
        if (m->a[i].kind == kind)
            return &m->a[i];
    return NULL;
}
