/*
 * shard/vsr/install.c - the engine's side of state transfer: arming,
 * abandoning, and taking an installed snapshot (engine.h "state
 * transfer").
 *
 * Role: the binding fetched the primary's snapshot and client table and
 * tells the engine; this file moves commit_min and the journal window to
 * the snapshot op and lets repair fill (op, commit_max]. While armed the
 * gates live where they act (vsr_may_ack, vsr_commit_walk,
 * vsr_repair_kick, the DVC's nacks and the candidate's merge in view.c,
 * vsr_is_settled_primary).
 *
 * Invariants: commit_min, commit_max and checkpoint_op never go
 * backwards (a snapshot not ahead of commit_min changes no state but
 * commit_max); every journal append issued before the install and not
 * yet durable completes as -ESTALE; after an install the window base is
 * the snapshot op and no slot holds an op at or below it.
 *
 * Callers: the engine's one thread; no I/O.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/assert.h"
#include "shard/vsr/engine.h"
#include "shard/vsr/internal.h"

int
vsr_transfer_begin(struct vs_vsr *v)
{
    if (v->n == 1)
        return -EINVAL;
    if (v->xfer)
        return -EALREADY;
    v->xfer = 1;
    v->repair_active = 0; /* answers of the old round are dropped */
    v->stats.transfers_begun++;
    return 0;
}

static void
resume(struct vs_vsr *v)
{
    memset(v->evicted_op, 0, sizeof(v->evicted_op));
    vsr_journal_pump(v);
    vsr_view_after_durable(v, 0);
    vsr_commit_walk(v);
    vsr_repair_kick(v);
}

int
vsr_transfer_end(struct vs_vsr *v)
{
    if (!v->xfer)
        return -EINVAL;
    v->xfer = 0;
    v->stats.transfers_ended++;
    resume(v);
    return 0;
}

/* Drops every slot at or below op; forgets durability above it (the
 * binding cut its journal there); keeps the known headers that chain up
 * from op (a StartView may have installed some above the head) and drops
 * the rest. *top gets the highest op kept (op if none). Returns the
 * lowest op whose append was in flight, or 0. */
static uint64_t
window_reset(struct vs_vsr *v, uint64_t op, struct vs_u128 op_checksum,
             uint64_t *top)
{
    uint64_t stale = 0;
    for (uint32_t i = 0; i < v->slots_n; i++) {
        struct vsr_slot *s = &v->slots[i];
        if (!s->present)
            continue;
        if (s->appending && (stale == 0 || s->h.op < stale))
            stale = s->h.op;
        if (s->h.op <= op) {
            vsr_msg_unref(s->msg);
            memset(s, 0, sizeof(*s));
            continue;
        }
        s->durable = 0;
        s->appending = 0;
        s->ok = 0;
        s->holders = 0;
        s->reply = 0;
    }
    uint64_t x = op + 1;
    struct vs_u128 parent = op_checksum;
    int known = !vs_u128_is_zero(op_checksum);
    for (; x <= op + v->slots_n; x++) {
        const struct vsr_slot *s = vsr_slot_cget(v, x);
        if (s == NULL || (known && !vs_u128_eq(s->h.parent, parent)))
            break;
        parent = s->h.f.checksum;
        known = 1;
    }
    *top = x - 1;
    for (uint32_t i = 0; i < v->slots_n; i++) {
        struct vsr_slot *s = &v->slots[i];
        if (s->present && s->h.op > *top) {
            vsr_msg_unref(s->msg);
            memset(s, 0, sizeof(*s));
        }
    }
    return stale;
}

int
vsr_on_state_installed(struct vs_vsr *v, uint64_t op,
                       struct vs_u128 op_checksum,
                       struct vs_u128 snapshot_checksum, uint64_t commit_max)
{
    if (!v->xfer || op == 0 || commit_max < op)
        return -EINVAL;
    if (v->commit_outstanding)
        return -EBUSY;
    if (op <= v->commit_min) {
        /* Not ahead: the binding kept its state machine. */
        v->xfer = 0;
        if (commit_max > v->commit_max)
            v->commit_max = commit_max;
        v->transfer = 0;
        v->stats.installs_table++;
        resume(v);
        return 1;
    }
    if (v->journal_op > v->nack_floor)
        v->nack_floor = v->journal_op;
    uint64_t top;
    uint64_t stale = window_reset(v, op, op_checksum, &top);
    if (stale != 0 && (v->stale_lo == 0 || stale < v->stale_lo))
        v->stale_lo = stale;
    v->commit_min = op;
    v->commit_min_checksum = op_checksum;
    v->anchor_unknown = vs_u128_is_zero(op_checksum);
    v->floor = op;
    v->journal_op = op;
    vsr_set_head(v, top);
    if (commit_max > v->commit_max)
        v->commit_max = commit_max;
    if (v->recovery_barrier < op)
        v->recovery_barrier = op;
    if (v->hb_commit_op <= op)
        v->hb_commit_op = 0;
    if (v->faulty_op != 0 && v->faulty_op <= op)
        vsr_faulty_clear(v); /* at or below the snapshot: nothing to do */
    v->transfer = 0;
    v->transfer_op = 0;
    v->repair_active = 0;
    v->xfer = 0;
    v->stats.installs++;
    /* The pairing: the snapshot the binding wrote is the checkpoint (it
     * supersedes a local one still pending; a write in flight for that
     * one completes first, then this one is written). */
    v->ckpt_pending = 1;
    v->ckpt_op = op;
    v->ckpt_checksum = snapshot_checksum;
    vsr_superblock_maybe_write(v);
    resume(v);
    return 0;
}

int
vsr_commit_outstanding(const struct vs_vsr *v)
{
    return v->commit_outstanding != 0;
}
