/*
 * shard/meta/apply.h - the metadata state machine: one deterministic
 * function applying one committed op to one state instance.
 *
 * Role: shard 0 calls meta_apply() for every committed prepare, once per
 * left-right instance (the two calls produce the same result and leave
 * the two instances equal), and for recovery replay. The op body is a
 * meta_op encoding (ops.h); the context comes from the prepare header.
 *
 * Determinism: apply reads nothing but (state, ctx, body): the only clock
 * is ctx->timestamp, ids come from deterministic allocators (smallest free
 * id; monotonic group ids), no hashing of passwords, no random numbers,
 * no I/O. Every failure is a result code (Iggy's IggyError value), never a
 * crash; a failed op changes nothing in the state except the client-table
 * session part (watermark, latest_commit: the request WAS executed, its
 * result is the refusal).
 *
 * Replica sets: CreateTopic resolves the replication factor (0 = min(3,
 * nodes); above the node count of the state's caps -> 2018
 * InvalidReplicationFactor, nothing stored) and every partition created
 * (CreateTopic, CreatePartitions) gets its replica set by the rule of
 * placement.h; deleted partitions leave the leadership counts. UpdateTopic
 * cannot change the factor (Iggy's UpdateTopic has no such key).
 *
 * Authorization runs inside apply on ctx->user_id (authz.h); user 0
 * bypasses it. Register/Logout write the sessions table (the published
 * part of the client table); every other op from a registered client
 * advances that client's watermark to ctx->request. A numbered request
 * (client != 0, request > 0) whose client has no session when it commits
 * (evicted or logged out after the client table admitted it) does not
 * execute: it answers Unauthenticated (40) and changes nothing, so a
 * retry after the client registers again runs it exactly once.
 *
 * Callers: shard 0 only (the single writer of the metadata instances).
 */
#ifndef VS_SHARD_META_APPLY_H
#define VS_SHARD_META_APPLY_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"

struct meta_op_ctx {
    uint64_t op;           /* op number of the prepare (> last applied op) */
    uint64_t timestamp;    /* prepare timestamp, µs: the only clock */
    uint32_t user_id;      /* stamped on the prepare; authorization subject */
    uint8_t operation;     /* enum vs_operation */
    struct vs_u128 client; /* 0 = internal op (no session) */
    uint64_t request;      /* client's request number */
    struct vs_u128 request_checksum; /* becomes watermark_checksum */
};

struct meta_result {
    uint32_t code;          /* 0 ok, else enum vs_iggy_error */
    struct vs_wbuf payload; /* reply payload after the result section */
    uint32_t session_slot;  /* Register: slot bound; else META_NONE */
    uint32_t evicted_slot;  /* Register into a full table: slot evicted */
    struct vs_u128 evicted_client;
};

void meta_result_init(struct meta_result *r);
void meta_result_fini(struct meta_result *r);
/* Clears code and payload for reuse. */
void meta_result_reset(struct meta_result *r);

/* Applies one op. Returns the result code (also in out->code); the reply
 * payload bytes (StreamRecord, TopicHeader + partitions, GroupDetails,
 * UserDetails, Register reply ...) are in out->payload, empty on error.
 * Requires ctx->op > the state's last_op (VS_ASSERT). A body that does not
 * decode is VS_E_INVALID_COMMAND (3). */
uint32_t meta_apply(void *state, const struct meta_op_ctx *ctx,
                    const uint8_t *body, size_t len, struct meta_result *out);

/* Writes the full reply body of a result-framed reply: success
 * `[0 u32]` + payload; failure `[1 u32][0 u32][code u32]`. */
void meta_reply_body_write(uint32_t code, const uint8_t *payload, size_t len,
                           struct vs_wbuf *w);

#endif /* VS_SHARD_META_APPLY_H */
