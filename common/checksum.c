/*
 * common/checksum.c - XXH3/XXH32 checksums, frame seals, prepare identity.
 * See checksum.h for the rules. Pure functions; any process.
 */
#include "config.h"

#include <string.h>

#include "common/checksum.h"

uint64_t
vs_xxh3_64(const void *data, size_t len)
{
    return (uint64_t)XXH3_64bits(data, len);
}

struct vs_u128
vs_checksum(const void *data, size_t len)
{
    struct vs_u128 c = {.lo = vs_xxh3_64(data, len), .hi = 0};
    return c;
}

uint32_t
vs_xxh32(const void *data, size_t len)
{
    return (uint32_t)XXH32(data, len, 0);
}

void
vs_frame_seal(struct vs_header *h)
{
    h->f.checksum = vs_checksum((const uint8_t *)h + 16, VS_HEADER_SIZE - 16);
}

int
vs_frame_verify(const struct vs_header *h)
{
    struct vs_u128 c =
        vs_checksum((const uint8_t *)h + 16, VS_HEADER_SIZE - 16);
    return vs_u128_eq(c, h->f.checksum);
}

struct vs_u128
vs_body_checksum(const void *body, size_t len)
{
    return vs_checksum(body, len);
}

struct vs_u128
vs_prepare_identity(const struct vs_hdr_prepare *p)
{
    struct vs_hdr_prepare copy;
    memcpy(&copy, p, sizeof(copy));
    memset(&copy.f.checksum, 0, sizeof(copy.f.checksum));
    copy.f.view = 0;
    if (copy.f.release == VS_WIRE_FORMAT_V2)
        copy.checksum_view = 0;
    return vs_checksum(&copy, sizeof(copy));
}

uint64_t
vs_prepare_view_checksum(const struct vs_hdr_prepare *p)
{
    uint8_t in[20];
    memcpy(in, &p->f.checksum, 16);
    memcpy(in + 16, &p->f.view, 4);
    return vs_xxh3_64(in, sizeof(in)) | VS_PREPARE_VIEW_MARK;
}

void
vs_prepare_seal_view(struct vs_hdr_prepare *p)
{
    if (p->f.release == VS_WIRE_FORMAT_V2)
        p->checksum_view = vs_prepare_view_checksum(p);
}

int
vs_prepare_verify_view(const struct vs_hdr_prepare *p)
{
    if (p->f.release != VS_WIRE_FORMAT_V2)
        return 1;
    return p->checksum_view == vs_prepare_view_checksum(p);
}

void
vs_prepare_seal(struct vs_hdr_prepare *p, const void *body, size_t len)
{
    p->f.checksum_body = vs_body_checksum(body, len);
    p->f.checksum = vs_prepare_identity(p);
    vs_prepare_seal_view(p);
}

int
vs_prepare_verify_identity(const struct vs_hdr_prepare *p)
{
    return vs_u128_eq(vs_prepare_identity(p), p->f.checksum);
}

int
vs_body_verify(const struct vs_header *h, const void *body, size_t len)
{
    if (vs_u128_is_zero(h->f.checksum_body))
        return 1;
    return vs_u128_eq(vs_body_checksum(body, len), h->f.checksum_body);
}

void
vs_xxh3_stream_init(struct vs_xxh3_stream *s)
{
    XXH3_64bits_reset(&s->state);
}

void
vs_xxh3_stream_update(struct vs_xxh3_stream *s, const void *data, size_t len)
{
    XXH3_64bits_update(&s->state, data, len);
}

uint64_t
vs_xxh3_stream_digest(const struct vs_xxh3_stream *s)
{
    return (uint64_t)XXH3_64bits_digest(&s->state);
}
