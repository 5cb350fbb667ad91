/*
 * tests/fuzz/fuzz_handoff.c - libFuzzer target: the connection handoff
 * message decoder (ipc/handoff.c), the bytes a data shard receives with
 * a client socket from another data shard.
 *
 * Input: one whole message. Invariants checked:
 *  - a message that decodes re-encodes to a message that decodes to the
 *    same fields and pending bytes, with the length of the input;
 *  - a refusal is -EBADMSG or -EPROTO, never anything else;
 *  - the pending bytes of an accepted message lie inside the input.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/handoff.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
same(const struct handoff_msg *a, const struct handoff_msg *b)
{
    return a->flags == b->flags && a->from_slot == b->from_slot &&
           a->from_incarnation == b->from_incarnation &&
           a->conn_id == b->conn_id && a->ct_idx == b->ct_idx &&
           a->user_id == b->user_id && a->session == b->session &&
           vs_u128_eq(a->client, b->client) &&
           a->cred_user_created_op == b->cred_user_created_op &&
           a->cred_checked_op == b->cred_checked_op &&
           a->cred_expiry_us == b->cred_expiry_us &&
           a->last_active_ms == b->last_active_ms &&
           memcmp(a->cred_digest, b->cred_digest, HANDOFF_DIGEST_LEN) == 0 &&
           strcmp(a->peer, b->peer) == 0 && a->frames == b->frames &&
           a->pending_len == b->pending_len &&
           (a->pending_len == 0 ||
            memcmp(a->pending, b->pending, a->pending_len) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t enc[HANDOFF_MSG_MAX];
    struct handoff_msg m, d;
    int rc = handoff_decode(data, size, &m);
    if (rc != 0) {
        fuzz_check(rc == -EBADMSG || rc == -EPROTO, "refusal code");
        return 0;
    }
    fuzz_check(m.pending_len == size - HANDOFF_HEAD_SIZE, "pending length");
    fuzz_check(m.pending_len == 0 || m.pending == data + HANDOFF_HEAD_SIZE,
               "pending bytes inside the input");
    int n = handoff_encode(&m, enc, sizeof(enc));
    fuzz_check(n == (int)size, "re-encoded length");
    fuzz_check(handoff_decode(enc, (size_t)n, &d) == 0, "re-encoded decodes");
    fuzz_check(same(&m, &d), "re-encoded fields");
    return 0;
}
