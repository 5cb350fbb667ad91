/*
 * shard/serve/pheld.c - forwarded results held until the local replica
 * applied their op (pheld.h).
 *
 * Invariants: each entry leaves the list exactly once, answered
 * (pheld_release) or dropped (pheld_clear). Reads no clock.
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/mem.h"
#include "shard/serve/pheld.h"

/* late answers are warned about at most this often */
#define PHELD_LOG_EVERY_MS 1000u

struct pheld {
    struct part_id id;
    uint64_t op;
    struct gc_waiter w;
    uint8_t *body;
    size_t len;
    uint64_t deadline_ms;
    struct pheld *next;
};

void
pheld_init(struct pheld_list *l, pheld_commit_fn *commit,
           pheld_answer_fn *answer, void *ctx)
{
    memset(l, 0, sizeof(*l));
    l->commit = commit;
    l->answer = answer;
    l->ctx = ctx;
    l->tail = &l->head;
}

int
pheld_offer(struct pheld_list *l, const struct part_id *id, uint32_t status,
            uint64_t op, const struct gc_waiter *w, const uint8_t *body,
            size_t len, uint64_t now_ms)
{
    uint64_t commit = 0;
    if (status != 0 || op == 0 || !l->commit(l->ctx, id, &commit) ||
        commit >= op)
        return 0;
    struct pheld *x = vs_xcalloc(1, sizeof(*x));
    x->id = *id;
    x->op = op;
    x->w = *w;
    if (len > 0) {
        x->body = vs_xmalloc(len);
        memcpy(x->body, body, len);
        x->len = len;
    }
    x->deadline_ms = now_ms + PHELD_WAIT_MS;
    *l->tail = x;
    l->tail = &x->next;
    l->held++;
    return 1;
}

/* A result answered before the local replica applied its op. */
static void
note_late(struct pheld_list *l, const struct pheld *x, uint64_t commit,
          uint64_t now_ms)
{
    l->late++;
    l->unlogged++;
    if (l->log_ms != 0 && now_ms - l->log_ms < PHELD_LOG_EVERY_MS)
        return;
    vs_log_warn("partition %" PRIu32 ".%" PRIu32 ".%" PRIu32
                ": a forwarded result (op %" PRIu64
                ") answered after %u ms before this node's replica applied "
                "it (its commit is %" PRIu64 "); %" PRIu64
                " such answer(s) since the last warning",
                x->id.stream_id, x->id.topic_id, x->id.partition_id, x->op,
                PHELD_WAIT_MS, commit, l->unlogged);
    l->log_ms = now_ms ? now_ms : 1;
    l->unlogged = 0;
}

size_t
pheld_release(struct pheld_list *l, uint64_t now_ms)
{
    size_t n = 0;
    for (struct pheld **pp = &l->head, *x; (x = *pp) != NULL;) {
        uint64_t commit = 0;
        int local = l->commit(l->ctx, &x->id, &commit);
        int applied = !local || commit >= x->op;
        if (!applied && x->deadline_ms > now_ms) {
            pp = &x->next;
            continue;
        }
        if (!applied)
            note_late(l, x, commit, now_ms);
        *pp = x->next;
        if (*pp == NULL)
            l->tail = pp;
        l->answer(l->ctx, &x->w, x->body, x->len);
        free(x->body);
        free(x);
        n++;
    }
    return n;
}

int
pheld_any(const struct pheld_list *l)
{
    return l->head != NULL;
}

void
pheld_clear(struct pheld_list *l)
{
    while (l->head != NULL) {
        struct pheld *x = l->head;
        l->head = x->next;
        free(x->body);
        free(x);
    }
    l->tail = &l->head;
}
