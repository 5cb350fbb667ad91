/*
 * tests/sim/sim_model.c - committed metadata ops held against the
 * reference model (sim_model.h). The request body is decoded with the
 * product's op decoder (the wire format, not the state machine); the
 * model decides the result.
 * Callers: tests/sim/sim_world.c (one thread).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "common/wire.h"
#include "shard/meta/ops.h"
#include "tests/model/meta_model.h"
#include "tests/sim/sim_model.h"

struct sim_model {
    struct model m;
    uint64_t checked;
};

struct sim_model *
sim_model_create(const struct meta_caps *caps)
{
    struct mm_caps mc = {
        .streams = caps->streams,
        .topics = caps->topics,
        .partitions = caps->partitions,
        .groups = caps->groups,
        .members = caps->members,
        .users = caps->users,
        .assignments = caps->assignments,
    };
    if (mc.streams > M_STREAMS || mc.users > M_USERS || mc.topics > M_TPS)
        return NULL;
    struct sim_model *s = vs_xcalloc(1, sizeof(*s));
    mm_init(&s->m, &mc);
    return s;
}

void
sim_model_destroy(struct sim_model *m)
{
    free(m);
}

uint64_t
sim_model_checked(const struct sim_model *m)
{
    return m->checked;
}

/* Stream or user ids the model can hold; larger ids never exist. */
static int
model_id(const struct meta_ident *id, int limit)
{
    return id->id < (uint32_t)limit ? (int)id->id : limit;
}

/* Fills o from op; 0, or -1 for an op the model does not cover. */
static int
to_model(const struct meta_op *op, struct gen_op *o)
{
    memset(o, 0, sizeof(*o));
    o->actor = 0; /* the simulated clients act as root */
    if (op->name_len >= M_NAME)
        return -1;
    memcpy(o->name, op->name, op->name_len);
    switch (op->operation) {
    case VS_OP_CREATE_STREAM:
        o->kind = K_CREATE_STREAM;
        return 0;
    case VS_OP_DELETE_STREAM:
        o->kind = K_DELETE_STREAM;
        if (op->stream.kind == META_IDENT_NAME) {
            if (op->stream.len >= M_NAME)
                return -1;
            o->by_name = 1;
            memcpy(o->name, op->stream.name, op->stream.len);
            o->name[op->stream.len] = '\0';
            return 0;
        }
        o->s = model_id(&op->stream, M_STREAMS);
        return 0;
    case VS_OP_CREATE_TOPIC:
        if (op->stream.kind != META_IDENT_NUMERIC)
            return -1;
        o->kind = K_CREATE_TOPIC;
        o->s = model_id(&op->stream, M_STREAMS);
        o->count = op->count;
        return 0;
    case VS_OP_CREATE_USER:
        if (op->has_perms)
            return -1;
        o->kind = K_CREATE_USER;
        return 0;
    case VS_OP_DELETE_USER:
        if (op->user.kind != META_IDENT_NUMERIC)
            return -1;
        o->kind = K_DELETE_USER;
        o->s = model_id(&op->user, M_USERS);
        return 0;
    default:
        return -1;
    }
}

int
sim_model_check(struct sim_model *m, uint32_t operation, const uint8_t *body,
                size_t len, uint32_t got, uint32_t *want, char *why,
                size_t whylen)
{
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    int rc = 0;
    struct gen_op o;
    if (meta_op_decode(body, len, op) != 0 || op->operation != operation ||
        to_model(op, &o) != 0)
        goto out;
    m->checked++;
    *want = mm_apply(&m->m, &o);
    if (*want != got) {
        snprintf(why, whylen, "operation %u (name '%s', id %d, count %u)",
                 operation, o.name, o.s, o.count);
        rc = -1;
    }
out:
    free(op);
    return rc;
}
