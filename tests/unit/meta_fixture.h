/*
 * tests/unit/meta_fixture.h - a deterministic, feature-rich metadata state
 * (users with grants, a dangling grant, PATs, streams, topics with
 * explicit options, groups with members and a pending revocation,
 * sessions with cached replies) built by a fixed op sequence.
 * Callers: tests only.
 */
#ifndef VS_TESTS_META_FIXTURE_H
#define VS_TESTS_META_FIXTURE_H

#include "shard/meta/client_table.h"
#include "meta_helpers.h"

static inline void
fx_register(void *st, struct th_run *r, struct meta_client_table *ct,
            uint64_t client, uint32_t user)
{
    struct meta_op op;
    meta_op_init(&op, VS_OP_REGISTER);
    op.user_id = user;
    if (th_apply_full(st, r, user, th_client(client), 0, &op) != 0)
        abort();
    if (ct) {
        size_t n;
        struct vs_u128 z = {0, 0};
        uint8_t *f = th_reply_frame(r->op, 0, z, r->res.payload.data,
                                    r->res.payload.len, &n);
        meta_ct_record_reply(ct, st, th_client(client), VS_OP_REGISTER, f, n);
        free(f);
    }
}

/* Applies op as request `req` of client and records its reply. */
static inline uint32_t
fx_request(void *st, struct th_run *r, struct meta_client_table *ct,
           uint64_t client, uint32_t user, uint64_t req,
           const struct meta_op *op)
{
    uint32_t code = th_apply_full(st, r, user, th_client(client), req, op);
    if (ct) {
        struct vs_wbuf body;
        vs_wbuf_init(&body);
        meta_reply_body_write(code, r->res.payload.data, r->res.payload.len,
                              &body);
        size_t n;
        struct vs_u128 ck = {req * 7919, 0};
        uint8_t *f = th_reply_frame(r->op, req, ck, body.data, body.len, &n);
        meta_ct_record_reply(ct, st, th_client(client), op->operation, f, n);
        free(f);
        vs_wbuf_fini(&body);
    }
    return code;
}

static inline void
fx_build(void *st, struct th_run *r, struct meta_client_table *ct)
{
    struct meta_op op;
    if (th_genesis(st, r) != 0)
        abort();
    th_create_stream(st, r, 0, "alpha");
    th_create_stream(st, r, 0, "beta");
    th_create_stream(st, r, 0, "gamma \xc3\xa9");
    th_create_topic(st, r, 0, 0, "orders", 3);
    th_create_topic(st, r, 0, 0, "events", 2);
    th_create_topic(st, r, 0, 2, "x", 1);
    meta_op_init(&op, VS_OP_UPDATE_TOPIC);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 1);
    meta_op_set_name(&op, "events2", 7);
    op.opts.compression = 2;
    op.opts.message_expiry = 60000000;
    op.opts.explicit_mask = META_TOPT_COMPRESSION | META_TOPT_MESSAGE_EXPIRY;
    th_apply(st, r, 0, &op);
    /* user with global + stream + topic grants, and a dangling one */
    uint8_t b[64];
    size_t n = 0;
    for (int i = 0; i < 10; i++)
        b[n++] = (uint8_t)(i % 2);
    b[n++] = 1;
    vs_store_u32(b + n, 0);
    n += 4;
    for (int i = 0; i < 6; i++)
        b[n++] = (uint8_t)(i == 1);
    b[n++] = 1;
    vs_store_u32(b + n, 0);
    n += 4;
    for (int i = 0; i < 4; i++)
        b[n++] = (uint8_t)(i == 3);
    b[n++] = 0;
    b[n++] = 1;             /* next stream */
    vs_store_u32(b + n, 6); /* does not exist: dangling */
    n += 4;
    for (int i = 0; i < 6; i++)
        b[n++] = 1;
    b[n++] = 0;
    b[n++] = 0;
    th_create_user(st, r, 0, "alice", b, (uint32_t)n);
    th_create_user(st, r, 0, "bob", NULL, 0);
    meta_op_init(&op, VS_OP_CREATE_PAT);
    meta_op_set_name(&op, "ci", 2);
    uint8_t dg[32];
    memset(dg, 0x5a, 32);
    meta_op_set_secret(&op, dg, 32);
    op.expiry = 3600000000ull;
    th_apply(st, r, 1, &op);
    meta_op_set_name(&op, "admin", 5);
    memset(dg, 0x11, 32);
    meta_op_set_secret(&op, dg, 32);
    op.expiry = 0;
    th_apply(st, r, 0, &op);
    /* sessions and a group with a pending revocation */
    fx_register(st, r, ct, 0xC1, 0);
    fx_register(st, r, ct, 0xC2, 1);
    meta_op_init(&op, VS_OP_CREATE_CONSUMER_GROUP);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    meta_op_set_name(&op, "workers", 7);
    fx_request(st, r, ct, 0xC1, 0, 1, &op);
    meta_op_init(&op, VS_OP_JOIN_CONSUMER_GROUP);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    meta_ident_id(&op.group, 0);
    fx_request(st, r, ct, 0xC1, 0, 2, &op);
    op.inflight_count = 1;
    op.inflight[0] = 2;
    fx_request(st, r, ct, 0xC2, 0, 1, &op);
    meta_op_init(&op, VS_OP_PURGE_TOPIC);
    meta_ident_id(&op.stream, 2);
    meta_ident_id(&op.topic, 0);
    fx_request(st, r, ct, 0xC1, 0, 3, &op);
    meta_op_init(&op, VS_OP_DELETE_SEGMENTS);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    op.partition_id = 1;
    op.offset = 1234;
    fx_request(st, r, ct, 0xC1, 0, 4, &op);
    meta_op_init(&op, VS_OP_DELETE_STREAM);
    meta_ident_name(&op.stream, "beta", 4);
    fx_request(st, r, ct, 0xC1, 0, 5, &op);
}

#endif /* VS_TESTS_META_FIXTURE_H */
