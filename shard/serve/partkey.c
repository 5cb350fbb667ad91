/*
 * shard/serve/partkey.c - the deduplication key of a connection's
 * partition ops; see partkey.h for the rule.
 *
 * Invariants: pure; no allocation, no I/O.
 * Process: data shards; tests.
 */
#include "config.h"

#include "common/buf.h"
#include "common/checksum.h"
#include "common/errors.h"
#include "common/wire.h"
#include "shard/serve/partkey.h"

static int
transient(uint32_t status)
{
    return status == VS_E_TRANSIENT_NOT_COMMITTED ||
           status == VS_E_NOT_ACCEPTED;
}

struct vs_u128
part_key_next(struct part_key *k, uint64_t request, struct vs_u128 base)
{
    if (!k->seen || request != k->request) {
        k->request = request;
        k->subseq = 0;
    } else if (!(vs_u128_eq(base, k->base) && transient(k->status))) {
        k->subseq++;
    }
    k->seen = 1;
    k->base = base;
    k->status = PART_KEY_PENDING;
    if (k->subseq == 0)
        return base;
    uint8_t b[24];
    vs_store_u64(b, base.lo);
    vs_store_u64(b + 8, base.hi);
    vs_store_u64(b + 16, k->subseq);
    struct vs_u128 key = vs_checksum(b, sizeof(b));
    if (vs_u128_is_zero(key))
        key.lo = 1; /* zero means "not given" to the group */
    return key;
}

void
part_key_answered(struct part_key *k, uint32_t status)
{
    if (k->seen && k->status == PART_KEY_PENDING)
        k->status = status;
}
