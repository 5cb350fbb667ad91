/*
 * shard/vsr/xfer_frames.c - state-transfer frame builders and checker;
 * see xfer_frames.h.
 */
#include "config.h"

#include <string.h>

#include "common/checksum.h"
#include "shard/vsr/xfer_frames.h"

const char *
xfer_unavailable_name(uint8_t reason)
{
    switch (reason) {
    case XFER_AVAILABLE:
        return "available";
    case XFER_NOT_CAUGHT_UP_PRIMARY:
        return "not a caught-up primary";
    case XFER_NO_SNAPSHOT:
        return "no snapshot";
    case XFER_SNAPSHOT_UNREADABLE:
        return "snapshot unreadable";
    case XFER_UNKNOWN_SESSION:
        return "unknown transfer session";
    }
    return "unknown reason";
}

const char *
xfer_frame_verdict_name(enum xfer_frame_verdict v)
{
    static const char *const names[] = {
        [XFER_FRAME_OK] = "ok",       [XFER_FRAME_COMMAND] = "command",
        [XFER_FRAME_SIZE] = "size",   [XFER_FRAME_SEAL] = "seal",
        [XFER_FRAME_BODY] = "body",   [XFER_FRAME_CLUSTER] = "cluster",
        [XFER_FRAME_GROUP] = "group", [XFER_FRAME_FIELD] = "field",
    };
    if ((unsigned)v < XFER_FRAME_VERDICT_COUNT)
        return names[v];
    return "unknown";
}

static int
all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

enum xfer_frame_verdict
xfer_frame_check(const void *frame, size_t len, struct vs_u128 cluster,
                 uint64_t group, uint32_t chunk_max)
{
    const struct vs_header *h = frame;
    const uint8_t *body = (const uint8_t *)frame + VS_HEADER_SIZE;
    uint64_t fgroup;

    if (len < VS_HEADER_SIZE || h->f.size != len)
        return XFER_FRAME_SIZE;
    size_t blen = len - VS_HEADER_SIZE;
    switch (h->f.command) {
    case VS_CMD_REQUEST_STATE_TRANSFER:
    case VS_CMD_REQUEST_STATE_CHUNK:
        if (blen != 0)
            return XFER_FRAME_SIZE;
        break;
    case VS_CMD_STATE_TRANSFER_TARGET:
        if (blen != 0 &&
            (blen < XFER_MANIFEST_SIZE(1) || blen > XFER_MANIFEST_MAX_SIZE))
            return XFER_FRAME_SIZE;
        break;
    case VS_CMD_STATE_CHUNK:
        if (blen == 0 || blen > chunk_max)
            return XFER_FRAME_SIZE;
        break;
    default:
        return XFER_FRAME_COMMAND;
    }
    if (!vs_frame_verify(h))
        return XFER_FRAME_SEAL;
    if (blen == 0
            ? (h->f.checksum_body.lo != 0 || h->f.checksum_body.hi != 0)
            : !vs_u128_eq(h->f.checksum_body, vs_body_checksum(body, blen)))
        return XFER_FRAME_BODY;
    if (!vs_u128_eq(h->f.cluster, cluster))
        return XFER_FRAME_CLUSTER;
    switch (h->f.command) {
    case VS_CMD_REQUEST_STATE_TRANSFER:
        fgroup = ((const struct vs_hdr_request_state_transfer *)h)->group;
        break;
    case VS_CMD_REQUEST_STATE_CHUNK: {
        const struct vs_hdr_request_state_chunk *c = frame;
        fgroup = c->group;
        if (c->len == 0 || c->len > chunk_max ||
            c->artifact >= XFER_ARTIFACTS_MAX)
            return XFER_FRAME_FIELD;
        break;
    }
    case VS_CMD_STATE_TRANSFER_TARGET: {
        const struct vs_hdr_state_transfer_target *t = frame;
        fgroup = t->group;
        if (t->available > 1 || t->unavailable_transient > 1 ||
            !all_zero(t->padding, sizeof(t->padding)))
            return XFER_FRAME_FIELD;
        if (t->available != (blen != 0))
            return XFER_FRAME_FIELD;
        if (t->available ? t->reason != XFER_AVAILABLE
                         : (t->reason == XFER_AVAILABLE ||
                            t->reason >= XFER_UNAVAILABLE_COUNT))
            return XFER_FRAME_FIELD;
        if (t->commit_max < t->commit_op)
            return XFER_FRAME_FIELD;
        if (t->available) {
            struct xfer_manifest m;
            if (xfer_manifest_decode(body, blen, &m) != XFER_MANIFEST_OK)
                return XFER_FRAME_FIELD;
        }
        break;
    }
    default: { /* VS_CMD_STATE_CHUNK */
        const struct vs_hdr_state_chunk *c = frame;
        fgroup = c->group;
        if (c->artifact >= XFER_ARTIFACTS_MAX)
            return XFER_FRAME_FIELD;
        break;
    }
    }
    if (fgroup != group)
        return XFER_FRAME_GROUP;
    return XFER_FRAME_OK;
}

static void
stamp(struct vs_header *h, const struct xfer_sender *s, uint8_t command,
      size_t size)
{
    h->f.cluster = s->cluster;
    h->f.size = (uint32_t)size;
    h->f.view = s->view;
    h->f.release = VS_WIRE_FORMAT_VERSION;
    h->f.command = command;
    h->f.replica = s->replica;
}

void
xfer_frame_request_transfer(struct vs_hdr_request_state_transfer *h,
                            const struct xfer_sender *s, struct vs_u128 nonce)
{
    memset(h, 0, sizeof(*h));
    stamp((struct vs_header *)h, s, VS_CMD_REQUEST_STATE_TRANSFER,
          VS_HEADER_SIZE);
    h->nonce = nonce;
    h->group = s->group;
    vs_frame_seal((struct vs_header *)h);
}

void
xfer_frame_request_chunk(struct vs_hdr_request_state_chunk *h,
                         const struct xfer_sender *s, struct vs_u128 nonce,
                         uint32_t artifact, uint64_t offset, uint32_t len)
{
    memset(h, 0, sizeof(*h));
    stamp((struct vs_header *)h, s, VS_CMD_REQUEST_STATE_CHUNK, VS_HEADER_SIZE);
    h->nonce = nonce;
    h->group = s->group;
    h->artifact = artifact;
    h->offset = offset;
    h->len = len;
    vs_frame_seal((struct vs_header *)h);
}

size_t
xfer_frame_target(uint8_t *out, const struct xfer_sender *s,
                  struct vs_u128 nonce, uint64_t commit_op, uint64_t commit_max,
                  const uint8_t *manifest, size_t mlen, uint8_t reason,
                  int transient)
{
    struct vs_hdr_state_transfer_target *t =
        (struct vs_hdr_state_transfer_target *)out;
    size_t size = VS_HEADER_SIZE + mlen;
    memset(t, 0, sizeof(*t));
    stamp((struct vs_header *)t, s, VS_CMD_STATE_TRANSFER_TARGET, size);
    t->nonce = nonce;
    t->group = s->group;
    t->commit_op = commit_op;
    t->commit_max = commit_max;
    if (mlen > 0) {
        memcpy(out + VS_HEADER_SIZE, manifest, mlen);
        t->available = 1;
        t->f.checksum_body = vs_body_checksum(manifest, mlen);
    } else {
        t->reason = reason;
        t->unavailable_transient = transient ? 1 : 0;
    }
    vs_frame_seal((struct vs_header *)t);
    return size;
}

void
xfer_frame_chunk(struct vs_hdr_state_chunk *h, const struct xfer_sender *s,
                 struct vs_u128 nonce, uint32_t artifact, uint64_t offset,
                 const void *body, size_t n)
{
    memset(h, 0, sizeof(*h));
    stamp((struct vs_header *)h, s, VS_CMD_STATE_CHUNK, VS_HEADER_SIZE + n);
    h->nonce = nonce;
    h->group = s->group;
    h->artifact = artifact;
    h->offset = offset;
    h->f.checksum_body = vs_body_checksum(body, n);
    vs_frame_seal((struct vs_header *)h);
}
