/*
 * shard/zero/commit_frames.c - see commit_frames.h. Pure functions; shard 0
 * and tests.
 */
#include "config.h"

#include <string.h>

#include "shard/zero/commit_frames.h"
#include "shard/meta/apply.h"
#include "shard/meta/ops.h"

int
commit_op_replies(const struct vs_hdr_prepare *p)
{
    return !vs_u128_is_zero(p->client) && p->operation != VS_OP_GENESIS;
}

void
commit_reply_body(uint8_t operation, uint32_t code, const uint8_t *payload,
                  size_t payload_len, struct vs_wbuf *w)
{
    /* Logout is not result-framed (reference §3.1): an empty body. */
    if (operation == VS_OP_LOGOUT)
        return;
    meta_reply_body_write(code, payload, payload_len, w);
}

void
commit_reply_frame(const struct vs_hdr_prepare *p, const uint8_t *body,
                   size_t body_len, struct vs_wbuf *w)
{
    struct vs_hdr_reply r;
    memset(&r, 0, sizeof(r));
    r.f.cluster = p->f.cluster;
    r.f.size = (uint32_t)(VS_HEADER_SIZE + body_len);
    /* view and replica stay 0: the frame is cached in the client table,
     * which every replica snapshots byte for byte alike. */
    r.f.release = 0; /* Iggy client framing */
    r.f.command = VS_CMD_REPLY;
    r.request_checksum = p->request_checksum;
    r.client = p->client;
    r.op = p->op;
    r.commit = p->op;
    r.timestamp = p->timestamp;
    r.request = p->request;
    r.operation = p->operation;
    vs_wr_bytes(w, &r, sizeof(r));
    if (body_len > 0)
        vs_wr_bytes(w, body, body_len);
}

void
commit_status_reply(struct vs_hdr_reply *r, struct vs_u128 cluster,
                    uint32_t view, uint8_t replica,
                    const struct vs_hdr_request *req, uint32_t status)
{
    memset(r, 0, sizeof(*r));
    r->f.cluster = cluster;
    r->f.size = VS_HEADER_SIZE;
    r->f.view = view;
    r->f.command = VS_CMD_REPLY;
    r->f.replica = replica;
    r->request_checksum = req->request_checksum;
    r->client = req->client;
    r->request = req->request;
    r->operation = req->operation;
    r->status = status;
}

void
commit_eviction(struct vs_hdr_eviction *e, struct vs_u128 cluster,
                uint32_t view, uint8_t replica, struct vs_u128 client,
                uint8_t reason)
{
    memset(e, 0, sizeof(*e));
    e->f.cluster = cluster;
    e->f.size = VS_HEADER_SIZE;
    e->f.view = view;
    e->f.command = VS_CMD_EVICTION;
    e->f.replica = replica;
    e->client = client;
    e->server_protocol_version = META_PROTOCOL_VERSION;
    e->server_protocol_version_min = META_PROTOCOL_VERSION;
    e->reason = reason;
}
