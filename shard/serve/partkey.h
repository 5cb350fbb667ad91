/*
 * shard/serve/partkey.h - the deduplication key of a connection's
 * partition ops (sends, consumer-offset stores and deletes) when
 * partitions are replicated.
 *
 * A partition group answers a proposal it already knows by (client,
 * request number, request checksum) from its client table instead of
 * committing it again (shard/serve/pgroup.c). Iggy's SDKs do not advance
 * the request number for partition ops (protocol §4: request = the
 * counter, unchanged), and send request_checksum 0, so two sends between
 * two metadata ops carry the same number, and two sends of the same bytes
 * the same body checksum: keyed on those alone, the second would be
 * answered as a resend of the first and never stored.
 *
 * The key therefore also counts, on the connection, the partition ops
 * that carried the same request number before it (subseq): the first
 * keeps its content's checksum as its key (the client's request checksum,
 * else for a send the hash of its batch header, whose batch_checksum
 * covers every frame; so a client that resends the same
 * frame on a new connection after a reconnect, as vstream's library does,
 * is still recognised), the n-th is keyed on XXH3(checksum, n). A frame
 * repeated right after a transient answer (57/58: not committed yet, or
 * not accepted now; the client resends the identical frame) keeps the
 * previous op's subseq: it is a retry of that op, which may still commit.
 *
 * Invariants: a key depends only on the connection's sequence of
 * partition ops and their answers; it is carried with the connection
 * when it moves to another data shard (ipc/handoff.h), so the sequence
 * goes on there. The reply echoes the client's own request checksum,
 * never the key.
 * Callers: data shards (data.c on the connection's shard; handoff.c).
 */
#ifndef VS_SHARD_SERVE_PARTKEY_H
#define VS_SHARD_SERVE_PARTKEY_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

#define PART_KEY_PENDING UINT32_MAX /* the last op is not answered yet */

struct part_key {
    uint64_t request;    /* the last partition op's request number */
    uint64_t subseq;     /* how many ops with that number came before it */
    struct vs_u128 base; /* its body checksum */
    uint32_t status;     /* its answer, or PART_KEY_PENDING */
    uint32_t seen;       /* 1 once a partition op passed */
};

/* The key checksum of the next partition op (request number, body
 * checksum `base`, never zero) and the state advanced to it. */
struct vs_u128 part_key_next(struct part_key *k, uint64_t request,
                             struct vs_u128 base);
/* Records the answer to the op part_key_next keyed last (later answers,
 * to requests that are not partition ops, leave it). */
void part_key_answered(struct part_key *k, uint32_t status);

#endif /* VS_SHARD_SERVE_PARTKEY_H */
