/*
 * shard/serve/proto.c - command-code table, request body decoders and
 * reply/eviction encoders; see proto.h. Pure functions, any thread.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/errors.h"
#include "shard/meta/ops.h"
#include "shard/serve/options.h"
#include "shard/serve/proto.h"

#define E3 VS_E_INVALID_COMMAND

/* Replicated command code -> operation (iggy-client-protocol §2). */
static const struct {
    uint16_t code;
    uint8_t op;
} code_ops[] = {
    {40, VS_OP_REGISTER},
    {45, VS_OP_REGISTER},
    {39, VS_OP_LOGOUT},
    {202, VS_OP_CREATE_STREAM},
    {204, VS_OP_UPDATE_STREAM},
    {203, VS_OP_DELETE_STREAM},
    {205, VS_OP_PURGE_STREAM},
    {302, VS_OP_CREATE_TOPIC},
    {304, VS_OP_UPDATE_TOPIC},
    {303, VS_OP_DELETE_TOPIC},
    {305, VS_OP_PURGE_TOPIC},
    {402, VS_OP_CREATE_PARTITIONS},
    {403, VS_OP_DELETE_PARTITIONS},
    {503, VS_OP_DELETE_SEGMENTS},
    {602, VS_OP_CREATE_CONSUMER_GROUP},
    {603, VS_OP_DELETE_CONSUMER_GROUP},
    {33, VS_OP_CREATE_USER},
    {35, VS_OP_UPDATE_USER},
    {34, VS_OP_DELETE_USER},
    {37, VS_OP_CHANGE_PASSWORD},
    {36, VS_OP_UPDATE_PERMISSIONS},
    {42, VS_OP_CREATE_PAT},
    {43, VS_OP_DELETE_PAT},
    {604, VS_OP_JOIN_CONSUMER_GROUP},
    {605, VS_OP_LEAVE_CONSUMER_GROUP},
    {101, VS_OP_SEND_MESSAGES},
    {121, VS_OP_STORE_CONSUMER_OFFSET},
    {122, VS_OP_DELETE_CONSUMER_OFFSET},
};

unsigned
serve_code_operation(uint32_t code)
{
    for (size_t i = 0; i < sizeof(code_ops) / sizeof(code_ops[0]); i++)
        if (code_ops[i].code == code)
            return code_ops[i].op;
    return VS_OP_NON_REPLICATED;
}

enum serve_nr_class
serve_nr_classify(uint32_t code)
{
    switch (code) {
    case SERVE_C_PING:
        return SERVE_NR_PING;
    case SERVE_C_LOGIN_USER:
    case SERVE_C_LOGIN_PAT:
        return SERVE_NR_LEGACY_LOGIN;
    case SERVE_C_LOGOUT:
    case SERVE_C_LOGIN_REGISTER:
    case SERVE_C_LOGIN_REGISTER_PAT:
        return SERVE_NR_NO_HANDLER;
    case SERVE_C_GET_STATS:
    case SERVE_C_GET_CLUSTER:
    case SERVE_C_DESCRIBE_OPTIONS:
    case SERVE_C_GET_ME:
    case SERVE_C_GET_CLIENT:
    case SERVE_C_GET_CLIENTS:
    case SERVE_C_GET_USER:
    case SERVE_C_GET_USERS:
    case SERVE_C_GET_PATS:
    case SERVE_C_GET_STREAM:
    case SERVE_C_GET_STREAMS:
    case SERVE_C_GET_TOPIC:
    case SERVE_C_GET_TOPICS:
    case SERVE_C_GET_GROUP:
    case SERVE_C_GET_GROUPS:
    case SERVE_C_SYNC_GROUP:
    case SERVE_C_GET_TOPIC_REPLICAS:
        return SERVE_NR_READ;
    case SERVE_C_FLUSH:
        return SERVE_NR_UNAVAILABLE;
    case SERVE_C_GET_SNAPSHOT:
    case SERVE_C_POLL:
    case SERVE_C_GET_OFFSET:
        return SERVE_NR_UNSUPPORTED;
    default:
        if (serve_code_operation(code) != VS_OP_NON_REPLICATED)
            return SERVE_NR_REPLICATED;
        return SERVE_NR_UNKNOWN;
    }
}

int
serve_is_message_plane(unsigned operation, uint32_t command_code)
{
    return operation == VS_OP_SEND_MESSAGES ||
           (operation == VS_OP_NON_REPLICATED && command_code == SERVE_C_POLL);
}

enum serve_frame_verdict
serve_frame_check(const struct vs_hdr_request *h, size_t have,
                  uint32_t max_metadata_body, uint32_t max_message_body,
                  uint32_t *size, uint32_t *limit)
{
    if (h->f.size < VS_HEADER_SIZE || h->f.command != VS_CMD_REQUEST)
        return SERVE_FRAME_GARBAGE;
    *limit = serve_is_message_plane(h->operation, h->command_code)
                 ? max_message_body
                 : max_metadata_body;
    if (h->f.size - VS_HEADER_SIZE > *limit)
        return SERVE_FRAME_OVERSIZED;
    *size = h->f.size;
    return have >= h->f.size ? SERVE_FRAME_COMPLETE : SERVE_FRAME_NEED_MORE;
}

uint32_t
serve_rd_ident(struct vs_rbuf *r, struct meta_ident *id)
{
    memset(id, 0, sizeof(*id));
    uint8_t kind = vs_rd_u8(r);
    uint8_t len = vs_rd_u8(r);
    if (r->err)
        return E3;
    if (kind == META_IDENT_NUMERIC) {
        if (len != 4)
            return E3;
        id->kind = META_IDENT_NUMERIC;
        id->id = vs_rd_u32(r);
        return r->err ? E3 : 0;
    }
    if (kind != META_IDENT_NAME || len == 0)
        return E3;
    const uint8_t *p = vs_rd_bytes(r, len);
    if (p == NULL || !meta_utf8_valid(p, len))
        return E3;
    meta_ident_name(id, (const char *)p, len);
    return 0;
}

uint32_t
serve_rd_name(struct vs_rbuf *r, char *name, uint8_t *len)
{
    uint8_t n = vs_rd_u8(r);
    const uint8_t *p = n > 0 ? vs_rd_bytes(r, n) : NULL;
    if (r->err || p == NULL || meta_name_check((const char *)p, n) != 0)
        return E3;
    memcpy(name, p, n);
    name[n] = '\0';
    *len = n;
    return 0;
}

/* ------------------------------------------------------------- Register */

int
serve_version_ok(uint32_t v)
{
    return v >= META_PROTOCOL_VERSION &&
           (v >> 10) <= (META_PROTOCOL_VERSION >> 10);
}

int
serve_login_decode(const uint8_t *body, size_t len, struct serve_login *l)
{
    memset(l, 0, sizeof(*l));
    struct vs_rbuf r;
    vs_rbuf_init(&r, body, len);
    l->protocol_version = vs_rd_u32(&r);
    l->sdk_name_len = vs_rd_u8(&r);
    l->sdk_name = vs_rd_bytes(&r, l->sdk_name_len);
    l->sdk_version_len = vs_rd_u8(&r);
    l->sdk_version = vs_rd_bytes(&r, l->sdk_version_len);
    if (r.err)
        return -EPROTO;
    size_t rest = r.off;

    /* password shape */
    struct vs_rbuf p = r;
    uint8_t ulen = vs_rd_u8(&p);
    const uint8_t *user = vs_rd_bytes(&p, ulen);
    uint8_t plen = vs_rd_u8(&p);
    const uint8_t *pw = vs_rd_bytes(&p, plen);
    uint32_t ctx = vs_rd_u32(&p);
    (void)vs_rd_bytes(&p, ctx);
    if (!p.err && ulen >= 1) {
        l->pw_shape = 1;
        l->ulen = ulen;
        l->username = (const char *)user;
        l->plen = plen;
        l->password = (const char *)pw;
    }

    /* PAT shape */
    struct vs_rbuf t;
    vs_rbuf_init(&t, body + rest, len - rest);
    uint8_t tlen = vs_rd_u8(&t);
    const uint8_t *tok = vs_rd_bytes(&t, tlen);
    ctx = vs_rd_u32(&t);
    (void)vs_rd_bytes(&t, ctx);
    if (!t.err && tlen >= 1) {
        l->pat_shape = 1;
        l->tlen = tlen;
        l->token = (const char *)tok;
    }
    return 0;
}

/* -------------------------------------------------- replicated requests */

static uint32_t
rd_secret(struct vs_rbuf *r, char *out, uint8_t *len)
{
    uint8_t n = vs_rd_u8(r);
    const uint8_t *p = vs_rd_bytes(r, n);
    if (r->err)
        return E3;
    if (n > 0)
        memcpy(out, p, n);
    out[n] = '\0';
    *len = n;
    return 0;
}

static uint32_t
rd_rest_options(struct vs_rbuf *r, enum serve_opt_scope scope,
                uint32_t partitions, struct meta_topic_opts *o)
{
    size_t n = vs_rbuf_left(r);
    const uint8_t *p = vs_rd_bytes(r, n);
    return serve_options_parse(p, n, scope, partitions, o);
}

static uint32_t
rd_perms(struct vs_rbuf *r, struct meta_op *op)
{
    uint8_t has = vs_rd_u8(r);
    if (r->err)
        return E3;
    if (has != 1) {
        op->has_perms = 0;
        return 0;
    }
    uint32_t n = vs_rd_u32(r);
    const uint8_t *p = vs_rd_bytes(r, n);
    if (r->err || meta_perms_parse(p, n, NULL) != 0)
        return E3;
    op->has_perms = 1;
    op->perms_len = n;
    op->perms = p;
    return 0;
}

static uint32_t
rd_count(struct vs_rbuf *r, struct meta_op *op, int allow_zero)
{
    op->count = vs_rd_u32(r);
    if (r->err)
        return E3;
    if ((!allow_zero && op->count == 0) || op->count > 1000)
        return VS_E_TOO_MANY_PARTITIONS;
    return 0;
}

uint32_t
serve_decode_replicated(unsigned operation, const uint8_t *body, size_t len,
                        struct meta_op *op, struct serve_secrets *sec)
{
    struct vs_rbuf r;
    vs_rbuf_init(&r, body, len);
    meta_op_init(op, operation);
    memset(sec, 0, sizeof(*sec));
    uint32_t e = 0;
    switch (operation) {
    case VS_OP_LOGOUT:
        return 0;
    case VS_OP_CREATE_STREAM:
        if ((e = serve_rd_name(&r, op->name, &op->name_len)) != 0)
            return e;
        return rd_rest_options(&r, SERVE_OPT_EMPTY, 0, &op->opts);
    case VS_OP_UPDATE_STREAM:
        if ((e = serve_rd_ident(&r, &op->stream)) != 0 ||
            (e = serve_rd_name(&r, op->name, &op->name_len)) != 0)
            return e;
        return rd_rest_options(&r, SERVE_OPT_EMPTY, 0, &op->opts);
    case VS_OP_DELETE_STREAM:
    case VS_OP_PURGE_STREAM:
        return serve_rd_ident(&r, &op->stream);
    case VS_OP_CREATE_TOPIC:
        if ((e = serve_rd_ident(&r, &op->stream)) != 0 ||
            (e = rd_count(&r, op, 1)) != 0 ||
            (e = serve_rd_name(&r, op->name, &op->name_len)) != 0)
            return e;
        return rd_rest_options(&r, SERVE_OPT_TOPIC_CREATE, op->count,
                               &op->opts);
    case VS_OP_UPDATE_TOPIC:
        if ((e = serve_rd_ident(&r, &op->stream)) != 0 ||
            (e = serve_rd_ident(&r, &op->topic)) != 0 ||
            (e = serve_rd_name(&r, op->name, &op->name_len)) != 0)
            return e;
        return rd_rest_options(&r, SERVE_OPT_TOPIC_UPDATE, 0, &op->opts);
    case VS_OP_DELETE_TOPIC:
    case VS_OP_PURGE_TOPIC:
        if ((e = serve_rd_ident(&r, &op->stream)) != 0)
            return e;
        return serve_rd_ident(&r, &op->topic);
    case VS_OP_CREATE_PARTITIONS:
    case VS_OP_DELETE_PARTITIONS:
        if ((e = serve_rd_ident(&r, &op->stream)) != 0 ||
            (e = serve_rd_ident(&r, &op->topic)) != 0)
            return e;
        return rd_count(&r, op, 0);
    case VS_OP_CREATE_CONSUMER_GROUP:
        if ((e = serve_rd_ident(&r, &op->stream)) != 0 ||
            (e = serve_rd_ident(&r, &op->topic)) != 0)
            return e;
        return serve_rd_name(&r, op->name, &op->name_len);
    case VS_OP_DELETE_CONSUMER_GROUP:
    case VS_OP_JOIN_CONSUMER_GROUP:
    case VS_OP_LEAVE_CONSUMER_GROUP:
        if ((e = serve_rd_ident(&r, &op->stream)) != 0 ||
            (e = serve_rd_ident(&r, &op->topic)) != 0)
            return e;
        return serve_rd_ident(&r, &op->group);
    case VS_OP_CREATE_USER:
        if ((e = serve_rd_name(&r, op->name, &op->name_len)) != 0 ||
            (e = rd_secret(&r, sec->pw, &sec->pw_len)) != 0)
            return e;
        op->has_status = 1;
        op->status = vs_rd_u8(&r);
        if (r.err)
            return E3;
        if ((e = rd_perms(&r, op)) != 0)
            return e;
        return rd_rest_options(&r, SERVE_OPT_EMPTY, 0, &op->opts);
    case VS_OP_UPDATE_USER: {
        if ((e = serve_rd_ident(&r, &op->user)) != 0)
            return e;
        uint8_t has = vs_rd_u8(&r);
        if (r.err)
            return E3;
        if (has == 1) {
            op->has_name = 1;
            if ((e = serve_rd_name(&r, op->name, &op->name_len)) != 0)
                return e;
        }
        has = vs_rd_u8(&r);
        if (r.err)
            return E3;
        if (has == 1) {
            op->has_status = 1;
            op->status = vs_rd_u8(&r);
            if (r.err)
                return E3;
        }
        return rd_rest_options(&r, SERVE_OPT_EMPTY, 0, &op->opts);
    }
    case VS_OP_DELETE_USER:
        return serve_rd_ident(&r, &op->user);
    case VS_OP_CHANGE_PASSWORD:
        if ((e = serve_rd_ident(&r, &op->user)) != 0 ||
            (e = rd_secret(&r, sec->pw, &sec->pw_len)) != 0)
            return e;
        return rd_secret(&r, sec->pw2, &sec->pw2_len);
    case VS_OP_UPDATE_PERMISSIONS:
        if ((e = serve_rd_ident(&r, &op->user)) != 0)
            return e;
        return rd_perms(&r, op);
    case VS_OP_CREATE_PAT:
        if ((e = serve_rd_name(&r, op->name, &op->name_len)) != 0)
            return e;
        op->expiry = vs_rd_u64(&r);
        return r.err ? E3 : 0;
    case VS_OP_DELETE_PAT:
        return serve_rd_name(&r, op->name, &op->name_len);
    default:
        return E3;
    }
}

/* ----------------------------------------------------------------- reads */

uint32_t
serve_decode_read(uint32_t code, const uint8_t *body, size_t len,
                  struct serve_read_req *q)
{
    struct vs_rbuf r;
    vs_rbuf_init(&r, body, len);
    memset(q, 0, sizeof(*q));
    q->code = code;
    uint32_t e = 0;
    switch (code) {
    case SERVE_C_GET_STATS:
    case SERVE_C_GET_CLUSTER:
    case SERVE_C_GET_ME:
    case SERVE_C_GET_CLIENTS:
    case SERVE_C_GET_USERS:
    case SERVE_C_GET_PATS:
    case SERVE_C_GET_STREAMS:
        return 0;
    case SERVE_C_DESCRIBE_OPTIONS:
        q->scope = vs_rd_u8(&r);
        if (r.err || q->scope < 1 || q->scope > 3)
            return E3;
        return 0;
    case SERVE_C_GET_CLIENT:
        q->client_id = vs_rd_u32(&r);
        return r.err ? E3 : 0;
    case SERVE_C_GET_USER:
        return serve_rd_ident(&r, &q->user);
    case SERVE_C_GET_STREAM:
    case SERVE_C_GET_TOPICS:
        return serve_rd_ident(&r, &q->stream);
    case SERVE_C_GET_TOPIC:
    case SERVE_C_GET_TOPIC_REPLICAS:
    case SERVE_C_GET_GROUPS:
        if ((e = serve_rd_ident(&r, &q->stream)) != 0)
            return e;
        return serve_rd_ident(&r, &q->topic);
    case SERVE_C_GET_GROUP:
    case SERVE_C_SYNC_GROUP:
        if ((e = serve_rd_ident(&r, &q->stream)) != 0 ||
            (e = serve_rd_ident(&r, &q->topic)) != 0)
            return e;
        return serve_rd_ident(&r, &q->group);
    default:
        return E3;
    }
}

/* ------------------------------------------------------------ data plane */

int
serve_decode_offset(const uint8_t *body, size_t len, unsigned operation,
                    struct serve_offset_req *q)
{
    struct vs_rbuf r;
    vs_rbuf_init(&r, body, len);
    memset(q, 0, sizeof(*q));
    q->kind = vs_rd_u8(&r);
    if (r.err || (q->kind != 1 && q->kind != 2))
        return -1;
    if (serve_rd_ident(&r, &q->consumer) != 0 ||
        serve_rd_ident(&r, &q->stream) != 0 ||
        serve_rd_ident(&r, &q->topic) != 0)
        return -1;
    q->has_partition = vs_rd_u8(&r);
    q->partition_id = vs_rd_u32(&r);
    if (operation == VS_OP_STORE_CONSUMER_OFFSET)
        q->offset = vs_rd_u64(&r);
    if (operation != VS_OP_NON_REPLICATED)
        q->ack = vs_rd_u8(&r);
    return r.err ? -1 : 0;
}

uint32_t
serve_decode_poll(const uint8_t *body, size_t len, struct serve_poll_req *q)
{
    struct vs_rbuf r;
    vs_rbuf_init(&r, body, len);
    memset(q, 0, sizeof(*q));
    uint32_t e;
    q->consumer_kind = vs_rd_u8(&r);
    if (r.err || (q->consumer_kind != 1 && q->consumer_kind != 2))
        return E3;
    if ((e = serve_rd_ident(&r, &q->consumer)) != 0 ||
        (e = serve_rd_ident(&r, &q->stream)) != 0 ||
        (e = serve_rd_ident(&r, &q->topic)) != 0)
        return e;
    q->has_partition = vs_rd_u8(&r);
    q->partition_id = vs_rd_u32(&r);
    q->strategy_kind = vs_rd_u8(&r);
    q->strategy_value = vs_rd_u64(&r);
    q->count = vs_rd_u32(&r);
    q->autocommit = vs_rd_u8(&r);
    if (r.err || q->strategy_kind < 1 || q->strategy_kind > 5)
        return E3;
    return 0;
}

uint32_t
serve_decode_send_meta(const uint8_t *body, size_t len,
                       struct serve_send_meta *m)
{
    struct vs_rbuf r;
    vs_rbuf_init(&r, body, len);
    memset(m, 0, sizeof(*m));
    uint32_t e;
    m->metadata_len = vs_rd_u32(&r);
    if (r.err || m->metadata_len > len - 4)
        return E3;
    struct vs_rbuf md;
    vs_rbuf_init(&md, body + 4, m->metadata_len);
    if ((e = serve_rd_ident(&md, &m->stream)) != 0 ||
        (e = serve_rd_ident(&md, &m->topic)) != 0)
        return e;
    m->partitioning_kind = vs_rd_u8(&md);
    m->partitioning_len = vs_rd_u8(&md);
    m->partitioning = vs_rd_bytes(&md, m->partitioning_len);
    m->messages_count = vs_rd_u32(&md);
    if (md.err || m->partitioning_kind < 1 || m->partitioning_kind > 3)
        return E3;
    if (m->partitioning_kind == 1 && m->partitioning_len != 0)
        return E3;
    if (m->partitioning_kind == 2 && m->partitioning_len != 4)
        return E3;
    if (m->partitioning_kind == 3 && m->partitioning_len == 0)
        return E3;
    if (vs_rbuf_left(&md) != 0)
        return E3;
    m->batch_off = 4 + (size_t)m->metadata_len;
    return 0;
}

/* ---------------------------------------------------------------- frames */

void
serve_reply_frame(struct vs_wbuf *w, const struct vs_hdr_request *req,
                  uint32_t status, const void *body, size_t len)
{
    serve_reply_head(w, req, status, len);
    if (len > 0)
        vs_wr_bytes(w, body, len);
}

void
serve_reply_head(struct vs_wbuf *w, const struct vs_hdr_request *req,
                 uint32_t status, size_t len)
{
    struct vs_hdr_reply h;
    memset(&h, 0, sizeof(h));
    h.f.cluster = req->f.cluster;
    h.f.size = (uint32_t)(VS_HEADER_SIZE + len);
    h.f.command = VS_CMD_REPLY;
    h.request_checksum = req->request_checksum;
    h.client = req->client;
    h.request = req->request;
    h.operation = req->operation;
    h.status = status;
    vs_wr_bytes(w, &h, sizeof(h));
}

void
serve_eviction_frame(struct vs_wbuf *w, struct vs_u128 cluster,
                     struct vs_u128 client, uint8_t reason)
{
    struct vs_hdr_eviction h;
    memset(&h, 0, sizeof(h));
    h.f.cluster = cluster;
    h.f.size = VS_HEADER_SIZE;
    h.f.command = VS_CMD_EVICTION;
    h.client = client;
    h.server_protocol_version = META_PROTOCOL_VERSION;
    h.server_protocol_version_min = META_PROTOCOL_VERSION;
    h.reason = reason;
    vs_wr_bytes(w, &h, sizeof(h));
}
