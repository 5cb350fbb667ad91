/*
 * tests/unit/meta_helpers.h - helpers shared by the shard/meta suites:
 * small-capacity instances, an op runner that stamps ctx like a prepare,
 * and a reply-frame builder.
 * Callers: tests only.
 */
#ifndef VS_TESTS_META_HELPERS_H
#define VS_TESTS_META_HELPERS_H

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/mem.h"
#include "shard/meta/apply.h"
#include "shard/meta/ops.h"
#include "shard/meta/state.h"

static inline void
th_caps(struct meta_caps *c)
{
    memset(c, 0, sizeof(*c));
    c->streams = 8;
    c->topics = 24;
    c->partitions = 96;
    c->groups = 12;
    c->members = 24;
    c->users = 8;
    c->pats = 16;
    c->stream_grants = 32;
    c->topic_grants = 32;
    c->assignments = 128;
    c->session_slots = 32;
    c->clients = 4;
}

static inline void *
th_state(const struct meta_caps *c)
{
    size_t n = meta_state_size(c);
    void *st = vs_xcalloc(1, n);
    if (meta_state_init(st, c) != 0)
        abort();
    return st;
}

struct th_run {
    uint64_t op;
    uint64_t ts;
    struct meta_result res;
};

static inline void
th_run_init(struct th_run *r)
{
    r->op = 0;
    r->ts = 1000;
    meta_result_init(&r->res);
}

static inline struct vs_u128
th_client(uint64_t lo)
{
    struct vs_u128 c = {lo, 0};
    return c;
}

/* Applies op to st with the next op number. Returns the result code. */
static inline uint32_t
th_apply_full(void *st, struct th_run *r, uint32_t user, struct vs_u128 client,
              uint64_t request, const struct meta_op *op)
{
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    if (meta_op_encode(op, &w) != 0)
        abort();
    struct meta_op_ctx c = {0};
    c.op = ++r->op;
    r->ts += 10;
    c.timestamp = r->ts;
    c.user_id = user;
    c.operation = op->operation;
    c.client = client;
    c.request = request;
    c.request_checksum = vs_checksum(w.data, w.len);
    uint32_t code = meta_apply(st, &c, w.data, w.len, &r->res);
    vs_wbuf_fini(&w);
    return code;
}

static inline uint32_t
th_apply(void *st, struct th_run *r, uint32_t user, const struct meta_op *op)
{
    return th_apply_full(st, r, user, th_client(0), 0, op);
}

static inline uint32_t
th_genesis(void *st, struct th_run *r)
{
    struct meta_op op;
    meta_op_init(&op, VS_OP_GENESIS);
    meta_op_set_name(&op, "iggy", 4);
    meta_op_set_secret(&op, "$argon2id$v=19$m=8,t=1,p=1$fake$fake", 36);
    return th_apply(st, r, 0, &op);
}

static inline uint32_t
th_create_stream(void *st, struct th_run *r, uint32_t user, const char *name)
{
    struct meta_op op;
    meta_op_init(&op, VS_OP_CREATE_STREAM);
    meta_op_set_name(&op, name, strlen(name));
    return th_apply(st, r, user, &op);
}

static inline void
th_default_opts(struct meta_topic_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->message_expiry = UINT64_MAX;
    o->max_topic_size = UINT64_MAX;
    o->segment_size = UINT64_C(1073741824);
    o->size_of_messages_required_to_save = 1048576;
    o->messages_required_to_save = 1024;
    o->compression = 1;
}

static inline uint32_t
th_create_topic(void *st, struct th_run *r, uint32_t user, uint32_t stream,
                const char *name, uint32_t parts)
{
    struct meta_op op;
    meta_op_init(&op, VS_OP_CREATE_TOPIC);
    meta_ident_id(&op.stream, stream);
    meta_op_set_name(&op, name, strlen(name));
    op.count = parts;
    th_default_opts(&op.opts);
    return th_apply(st, r, user, &op);
}

static inline uint32_t
th_create_user(void *st, struct th_run *r, uint32_t user, const char *name,
               const uint8_t *perms, uint32_t perms_len)
{
    struct meta_op op;
    meta_op_init(&op, VS_OP_CREATE_USER);
    meta_op_set_name(&op, name, strlen(name));
    meta_op_set_secret(&op, "$argon2id$v=19$m=8,t=1,p=1$x$y", 30);
    op.has_status = 1;
    op.status = 1;
    op.has_perms = perms != NULL;
    op.perms = perms;
    op.perms_len = perms_len;
    return th_apply(st, r, user, &op);
}

/* A reply frame: header (command Reply, size, request, op, checksum of
 * the request) + body. Heap; caller frees. */
static inline uint8_t *
th_reply_frame(uint64_t op, uint64_t request, struct vs_u128 req_checksum,
               const uint8_t *body, size_t blen, size_t *len)
{
    *len = VS_HEADER_SIZE + blen;
    uint8_t *f = vs_xcalloc(1, *len);
    struct vs_hdr_reply *h = (struct vs_hdr_reply *)f;
    h->f.command = VS_CMD_REPLY;
    h->f.size = (uint32_t)*len;
    h->op = op;
    h->commit = op;
    h->request = request;
    h->request_checksum = req_checksum;
    if (blen)
        memcpy(f + VS_HEADER_SIZE, body, blen);
    h->f.checksum_body = vs_body_checksum(f + VS_HEADER_SIZE, blen);
    vs_frame_seal((struct vs_header *)f);
    return f;
}

#endif /* VS_TESTS_META_HELPERS_H */
