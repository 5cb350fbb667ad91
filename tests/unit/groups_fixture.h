/*
 * tests/unit/groups_fixture.h - shared by the consumer-group tests of
 * shard 0 (check_groups0.c, check_groups_liveness.c): registered sessions,
 * proposing metadata ops through the in-process commit path
 * (commit_fixture.h) and reading their result codes, and the common
 * setup (genesis, two clients, a stream, a topic, a group one client
 * joined). Test code only.
 */
#ifndef VS_TESTS_GROUPS_FIXTURE_H
#define VS_TESTS_GROUPS_FIXTURE_H

#include <check.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/mem.h"
#include "shard/zero/commit.h"
#include "shard/meta/ops.h"
#include "tests/unit/commit_fixture.h"

/* Starts the commit path of `f` (boot of shard 0 from its data dir) with
 * a fake incarnation source and the given revocation timeout. */
static inline void
groups_boot(struct fx *f, uint64_t (*incarnation)(void *, uint32_t),
            uint64_t rebalancing_timeout_us)
{
    char err[512];
    if (f->region == NULL)
        fx_region(f);
    struct vs_lr_writer_opts wo = {.deadline_ns = 1000000000ull};
    lr_writer_start(&f->lr, &wo);
    ck_assert_msg(shard0_boot(&f->cfg, &f->rec, err, sizeof(err)) == 0, "%s",
                  err);
    struct commit_options o = {
        .cfg = &f->cfg,
        .lr = &f->lr,
        .send = fx_send,
        .send_ctx = f,
        .clock = fx_clock,
        .clock_ctx = f,
        .incarnation = incarnation,
        .rebalancing_timeout_us = rebalancing_timeout_us,
    };
    ck_assert_msg(commit_create(&o, &f->rec, &f->c, err, sizeof(err)) == 0,
                  "%s", err);
    shard0_recovered_fini(&f->rec);
}

struct sess {
    struct vs_u128 client;
    uint64_t session;
    uint64_t request;
    uint64_t conn; /* the Register's connection */
};

static inline void
reg(struct fx *f, struct sess *s, struct vs_u128 client)
{
    fx_clear_sent(f);
    ck_assert_int_eq(fx_register(f, client, 0), 0);
    ck_assert_uint_eq(f->nsent, 1);
    ck_assert_uint_eq(fx_last(f)->h.flags, FWD_F_BIND);
    s->client = client;
    s->session = fx_last(f)->h.session;
    s->request = 1;
    s->conn = f->conn;
}

static inline uint32_t
op_code(struct fx *f, struct sess *s, struct meta_op *op)
{
    fx_clear_sent(f);
    ck_assert_int_eq(fx_propose(f, s->client, s->session, s->request++, 0, op),
                     0);
    ck_assert_uint_eq(f->nsent, 1);
    const uint8_t *body = fx_last(f)->frame + VS_HEADER_SIZE;
    ck_assert_uint_ge(fx_last(f)->len, VS_HEADER_SIZE + 4);
    return vs_load_u32(body) == 0 ? 0 : vs_load_u32(body + 8);
}

static inline void
target(struct meta_op *op, unsigned operation)
{
    meta_op_init(op, operation);
    meta_ident_id(&op->stream, 0);
    meta_ident_id(&op->topic, 0);
    meta_ident_id(&op->group, 0);
}

/* Genesis, clients A and B registered, stream 0 / topic 0 with `parts`
 * partitions, group 0 that A joined (A owns every partition). `boot`
 * creates the commit path the way the calling test wants it. */
static inline void
groups_setup(struct fx *f, struct sess *a, struct sess *b, uint32_t parts,
             void (*boot)(struct fx *), struct vs_u128 client_a,
             struct vs_u128 client_b)
{
    char err[512];
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    fx_init(f);
    boot(f);
    ck_assert_msg(commit_genesis(f->c, err, sizeof(err)) == 0, "%s", err);
    reg(f, a, client_a);
    reg(f, b, client_b);
    meta_op_init(op, VS_OP_CREATE_STREAM);
    meta_op_set_name(op, "s", 1);
    ck_assert_uint_eq(op_code(f, a, op), 0);
    meta_op_init(op, VS_OP_CREATE_TOPIC);
    meta_ident_id(&op->stream, 0);
    meta_op_set_name(op, "t", 1);
    op->count = parts;
    op->opts.compression = 1;
    op->opts.message_expiry = UINT64_MAX;
    op->opts.max_topic_size = UINT64_MAX;
    op->opts.segment_size = 1073741824ull;
    op->opts.size_of_messages_required_to_save = 1048576;
    op->opts.messages_required_to_save = 1024;
    ck_assert_uint_eq(op_code(f, a, op), 0);
    target(op, VS_OP_CREATE_CONSUMER_GROUP);
    meta_op_set_name(op, "g", 1);
    ck_assert_uint_eq(op_code(f, a, op), 0);
    target(op, VS_OP_JOIN_CONSUMER_GROUP);
    ck_assert_uint_eq(op_code(f, a, op), 0);
    free(op);
}

static inline const void *
state(struct fx *f)
{
    return commit_state(f->c);
}

#endif /* VS_TESTS_GROUPS_FIXTURE_H */
