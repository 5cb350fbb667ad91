/*
 * shard/serve/segments.c - DeleteSegments on the data shards: decode,
 * resolve and authorize on the client's shard, the watermark on the
 * owner, the metadata proposal; see segments.h for the flow and replies.
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/errors.h"
#include "common/mem.h"
#include "shard/data/partition.h"
#include "shard/meta/authz.h"
#include "shard/meta/lookup.h"
#include "shard/serve/data.h"
#include "shard/serve/parts.h"
#include "shard/serve/segments.h"
#include "shard/serve/server.h"

/* What the proposal needs across the owner's hop, kept in c->op (the op
 * first, so the connection's free(c->op) frees the whole of it). */
struct seg_pending {
    struct meta_op op;
    uint64_t created_op; /* of the partition the watermark is for */
};

static void
propose(struct serve_conn *c, uint64_t watermark)
{
    struct seg_pending *pd = (struct seg_pending *)c->op;
    struct meta_op *op = &pd->op;
    uint64_t created_op = pd->created_op;
    op->offset = watermark;
    if (watermark != 0) {
        /* the partition must still be the one the watermark was computed
         * for (a reused id would inherit it) */
        const void *st = lr_read_begin(c->srv->lr, NULL);
        const struct meta_stream *s = meta_stream_find(st, &op->stream);
        const struct meta_topic *t =
            s ? meta_topic_find(st, s->id, &op->topic) : NULL;
        const struct meta_partition *p =
            t ? meta_partition_by_id(st, s->id, t->id, op->partition_id) : NULL;
        if (p == NULL || p->created_op != created_op)
            op->offset = 0;
        lr_read_end(c->srv->lr);
    }
    /* apply checks it again at commit: a topic deleted and recreated with
     * the same ids before then is refused (partition not found) */
    op->created_op = op->offset != 0 ? created_op : 0;
    c->req.operation = VS_OP_TRUNCATE_PARTITION;
    serve_propose_send(c, op);
}

void
serve_segments_start(struct serve_conn *c, const struct vs_hdr_request *req,
                     const uint8_t *body, size_t len)
{
    struct serve *s = c->srv;
    struct vs_rbuf r;
    vs_rbuf_init(&r, body, len);
    struct seg_pending *pd = vs_xcalloc(1, sizeof(*pd));
    struct meta_op *op = &pd->op;
    meta_op_init(op, VS_OP_TRUNCATE_PARTITION);
    uint32_t segments = 0;
    int bad = serve_rd_ident(&r, &op->stream) != 0 ||
              serve_rd_ident(&r, &op->topic) != 0;
    if (!bad) {
        op->partition_id = vs_rd_u32(&r);
        segments = vs_rd_u32(&r);
        bad = r.err != 0;
    }
    if (bad) {
        /* the reference: status 0, empty body, op 138 */
        free(pd);
        serve_conn_reply(c, req, 0, NULL, 0);
        return;
    }
    c->req = *req;
    if (vs_u128_is_zero(c->req.request_checksum))
        c->req.request_checksum = vs_checksum(body, len);
    c->req.user_id = c->user_id;
    c->in_flight = 1;
    free(c->op);
    c->op = op; /* == &pd->op, the start of pd */

    struct data_cmd cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.kind = DATA_DELETE_SEGMENTS;
    cmd.value = segments;
    int resolved = 0;
    const void *st = lr_read_begin(s->lr, NULL);
    const struct meta_stream *so = meta_stream_find(st, &op->stream);
    const struct meta_topic *to =
        so ? meta_topic_find(st, so->id, &op->topic) : NULL;
    const struct meta_partition *p =
        to ? meta_partition_by_id(st, so->id, to->id, op->partition_id) : NULL;
    if (p != NULL && meta_authz_check(st, c->user_id, META_ACT_MANAGE_TOPIC,
                                      so->id, to->id)) {
        resolved = 1;
        cmd.stream_id = so->id;
        cmd.topic_id = to->id;
        cmd.partition_id = p->id;
        cmd.created_op = p->created_op;
        pd->created_op = p->created_op;
    }
    lr_read_end(s->lr);
    if (!resolved) {
        propose(c, 0); /* apply answers R 1009 / 2010 / 3007 / 41 */
        return;
    }
    struct vs_hdr_request fwd = c->req;
    serve_data_route(c, &fwd, &cmd);
}

uint32_t
serve_segments_exec(struct dpart *dp, const struct data_cmd *cmd,
                    struct vs_wbuf *out)
{
    uint32_t n = cmd->value > UINT32_MAX ? UINT32_MAX : (uint32_t)cmd->value;
    vs_wr_u64(out, part_watermark_for_segments(dp->p, n));
    return 0;
}

void
serve_segments_on_watermark(struct serve_conn *c, uint32_t status,
                            const void *body, size_t len)
{
    if (c->op == NULL) { /* cannot happen: set by serve_segments_start */
        serve_conn_reply(c, &c->req, VS_E_ERROR, NULL, 0);
        serve_conn_request_done(c);
        return;
    }
    if (status == 0 && len == 8) {
        propose(c, vs_load_u64(body));
        return;
    }
    if (status == VS_E_RESOURCE_NOT_FOUND ||
        status == VS_E_PARTITION_NOT_FOUND) {
        propose(c, 0); /* deleted meanwhile: apply decides */
        return;
    }
    serve_conn_reply(c, &c->req, status != 0 ? status : VS_E_ERROR, NULL, 0);
    serve_conn_request_done(c);
}
