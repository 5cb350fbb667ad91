/*
 * shard/serve/pheld.h - read your writes on every node: the results of
 * commands this node forwarded to a partition group's primary, held until
 * this node's own replica of the group applied the op that answered them.
 *
 * Role (pgroups.c): a forwarded send or consumer-offset op comes back
 * naming the group op that answered it (PART_FORWARD_RESULT, op at byte
 * 144). pheld_offer holds the result when it succeeded, names an op, and
 * the local replica's commit is below it; otherwise (a refusal, op 0
 * from a peer of an older release, no local replica, or the replica
 * applied it already) the caller answers at once. pheld_release answers
 * every held result whose op the local replica applied, whose group is
 * gone here, or whose wait (PHELD_WAIT_MS after it was held) ran out:
 * the op is committed by the primary in every case, so the client always
 * gets the acknowledged result (status 0, the primary's body) exactly
 * once, never a refusal; only its read-your-writes promise on this node
 * is lost when the replica lags. Answers given when the wait ran out are
 * counted and logged (a warning at most once a second, with the number
 * answered since the last one).
 *
 * Time is the caller's (now_ms): the module reads no clock.
 * Invariants: every offered-and-held result is answered exactly once by
 * pheld_release, or dropped by pheld_clear (the process is stopping).
 * Process: data shards, loop thread.
 */
#ifndef VS_SHARD_SERVE_PHELD_H
#define VS_SHARD_SERVE_PHELD_H

#include <stddef.h>
#include <stdint.h>

#include "shard/data/partition.h"
#include "shard/serve/gcommit.h"

#define PHELD_WAIT_MS 5000u

/* 1 with *commit the local replica's commit while this node runs a group
 * of id; 0 when it runs none (closed, stopped, deleted, not a member). */
typedef int pheld_commit_fn(void *ctx, const struct part_id *id,
                            uint64_t *commit);
/* Answers w with the acknowledged result (status 0, body). */
typedef void pheld_answer_fn(void *ctx, const struct gc_waiter *w,
                             const uint8_t *body, size_t len);

struct pheld;

struct pheld_list {
    struct pheld *head, **tail; /* in the order held */
    pheld_commit_fn *commit;
    pheld_answer_fn *answer;
    void *ctx;
    uint64_t held, late; /* results held; answered when the wait ran out */
    uint64_t log_ms;     /* when the last late warning was logged */
    uint64_t unlogged;   /* late answers since then */
};

void pheld_init(struct pheld_list *l, pheld_commit_fn *commit,
                pheld_answer_fn *answer, void *ctx);

/* A forwarded command's result (status, the answering op, the reply
 * body) for w: 1 when it is held (body copied), 0 when the caller
 * answers it now. */
int pheld_offer(struct pheld_list *l, const struct part_id *id, uint32_t status,
                uint64_t op, const struct gc_waiter *w, const uint8_t *body,
                size_t len, uint64_t now_ms);

/* Answers what may leave at now_ms (see above), in the order held;
 * returns how many. */
size_t pheld_release(struct pheld_list *l, uint64_t now_ms);

/* 1 while results are held. */
int pheld_any(const struct pheld_list *l);

/* Frees every held result without answering (the process stops). */
void pheld_clear(struct pheld_list *l);

#endif /* VS_SHARD_SERVE_PHELD_H */
