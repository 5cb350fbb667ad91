/*
 * shard/link/beat.c - encoder and decoder of the coalesced group beat
 * frame; the layout and the checks are in beat.h.
 * Process: any (pure code).
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "common/checksum.h"
#include "shard/link/beat.h"

size_t
beat_frame_size(uint32_t n)
{
    return VS_HEADER_SIZE + (size_t)n * BEAT_ENTRY_SIZE;
}

static int
key_cmp(uint64_t ga, uint8_t ka, uint64_t gb, uint8_t kb)
{
    if (ga != gb)
        return ga < gb ? -1 : 1;
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return 0;
}

static int
kind_known(uint8_t k)
{
    return k == BEAT_KIND_COMMIT || k == BEAT_KIND_ACK;
}

long
beat_encode(const struct beat_sender *s, uint64_t seq,
            const struct beat_entry *e, uint32_t n, void *buf, size_t cap)
{
    if (n > BEAT_ENTRIES_MAX || cap < beat_frame_size(n))
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++) {
        if (!kind_known(e[i].kind))
            return -EINVAL;
        if (i > 0 &&
            key_cmp(e[i - 1].group, e[i - 1].kind, e[i].group, e[i].kind) >= 0)
            return -EINVAL;
    }
    struct beat_hdr h;
    memset(&h, 0, sizeof(h));
    uint8_t *body = (uint8_t *)buf + VS_HEADER_SIZE;
    for (uint32_t i = 0; i < n; i++) {
        struct beat_wire_entry w;
        memset(&w, 0, sizeof(w));
        w.group = e[i].group;
        w.view = e[i].view;
        w.kind = e[i].kind;
        w.member = e[i].member;
        w.commit = e[i].commit;
        w.op = e[i].op;
        w.timestamp = e[i].timestamp;
        w.checksum = e[i].checksum;
        memcpy(body + (size_t)i * BEAT_ENTRY_SIZE, &w, sizeof(w));
    }
    size_t blen = (size_t)n * BEAT_ENTRY_SIZE;
    h.f.cluster = s->cluster;
    h.f.size = (uint32_t)beat_frame_size(n);
    h.f.release = s->release;
    h.f.command = (uint8_t)VS_CMD_GROUP_BEAT;
    h.f.replica = s->replica;
    h.f.checksum_body =
        blen ? vs_body_checksum(body, blen) : (struct vs_u128){0, 0};
    h.seq = seq;
    h.count = n;
    h.entry_size = n ? BEAT_ENTRY_SIZE : BEAT_ENTRY_SIZE_V1;
    h.shard = s->shard;
    vs_frame_seal((struct vs_header *)&h);
    memcpy(buf, &h, sizeof(h));
    return (long)h.f.size;
}

static int
all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

void
beat_entry_at(const uint8_t *body, uint32_t i, struct beat_entry *out)
{
    struct beat_wire_entry w;
    memcpy(&w, body + (size_t)i * BEAT_ENTRY_SIZE, sizeof(w));
    out->group = w.group;
    out->view = w.view;
    out->kind = w.kind;
    out->member = w.member;
    out->commit = w.commit;
    out->op = w.op;
    out->timestamp = w.timestamp;
    out->checksum = w.checksum;
}

int
beat_decode(const void *frame, size_t len, const struct vs_u128 *cluster,
            const struct beat_hdr **hdr, const uint8_t **body)
{
    const struct beat_hdr *h = frame;
    if (len < VS_HEADER_SIZE)
        return -BEAT_ERR_SHORT;
    if (h->f.size != len)
        return -BEAT_ERR_SIZE;
    if (h->f.command != VS_CMD_GROUP_BEAT)
        return -BEAT_ERR_COMMAND;
    if (!vs_frame_verify((const struct vs_header *)h))
        return -BEAT_ERR_SEAL;
    if (cluster != NULL &&
        memcmp(&h->f.cluster, cluster, sizeof(*cluster)) != 0)
        return -BEAT_ERR_CLUSTER;
    if (h->count > BEAT_ENTRIES_MAX)
        return -BEAT_ERR_COUNT;
    /* one encoding per frame: a keepalive carries the previous release's
     * size, a frame with entries this release's */
    if (h->entry_size != (h->count ? BEAT_ENTRY_SIZE : BEAT_ENTRY_SIZE_V1))
        return -BEAT_ERR_ENTRY_SIZE;
    if (len != beat_frame_size(h->count))
        return -BEAT_ERR_SIZE;
    if (!all_zero(h->reserved, sizeof(h->reserved)) ||
        !all_zero(h->f.reserved_frame, sizeof(h->f.reserved_frame)) ||
        h->f.view != 0)
        return -BEAT_ERR_RESERVED;
    const uint8_t *b = (const uint8_t *)frame + VS_HEADER_SIZE;
    size_t blen = len - VS_HEADER_SIZE;
    if (blen == 0) {
        if (!vs_u128_is_zero(h->f.checksum_body))
            return -BEAT_ERR_BODY;
    } else {
        struct vs_u128 c = vs_body_checksum(b, blen);
        if (memcmp(&c, &h->f.checksum_body, sizeof(c)) != 0)
            return -BEAT_ERR_BODY;
    }
    struct beat_entry prev = {0};
    for (uint32_t i = 0; i < h->count; i++) {
        struct beat_wire_entry w;
        memcpy(&w, b + (size_t)i * BEAT_ENTRY_SIZE, sizeof(w));
        if (!all_zero(w.reserved, sizeof(w.reserved)) ||
            !all_zero(w.reserved2, sizeof(w.reserved2)))
            return -BEAT_ERR_RESERVED;
        if (!kind_known(w.kind))
            return -BEAT_ERR_KIND;
        if (i > 0 && key_cmp(prev.group, prev.kind, w.group, w.kind) >= 0)
            return -BEAT_ERR_ORDER;
        prev.group = w.group;
        prev.kind = w.kind;
    }
    *hdr = h;
    *body = b;
    return 0;
}

const char *
beat_error_name(int err)
{
    switch (err < 0 ? -err : err) {
    case BEAT_OK:
        return "ok";
    case BEAT_ERR_SHORT:
        return "truncated header";
    case BEAT_ERR_SIZE:
        return "size does not match the entry count";
    case BEAT_ERR_COMMAND:
        return "not a group beat frame";
    case BEAT_ERR_SEAL:
        return "bad header checksum";
    case BEAT_ERR_BODY:
        return "bad body checksum";
    case BEAT_ERR_COUNT:
        return "too many entries";
    case BEAT_ERR_ENTRY_SIZE:
        return "unknown entry size";
    case BEAT_ERR_RESERVED:
        return "reserved bytes not zero";
    case BEAT_ERR_KIND:
        return "unknown entry kind";
    case BEAT_ERR_ORDER:
        return "repeated or unordered group entry";
    case BEAT_ERR_CLUSTER:
        return "another cluster";
    }
    return "unknown";
}
