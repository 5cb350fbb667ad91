/*
 * tests/sim/sim_xfer.h - state transfer for a simulated replica: the
 * REAL shard 0 module (shard/zero/transfer.h, zt_*) per node over the
 * simulated disk and network, bound the way shard 0 binds it.
 *
 * Routing (shard/zero/commit.c's commit_xfer_* are the model): replica
 * commands 22-25 go to zt_on_frame (sender = the frame's replica field,
 * as an authenticated link would say); zt_tick every tick.
 * VSR_ACT_STATE_TRANSFER -> vsr_transfer_begin + zt_start_nonce against
 * the primary of the view (or the peer the engine named), unless a fetch
 * failed less than a back-off ago (then armed when it ends). After each
 * input: a fetch that ended without an install -> vsr_transfer_end (and
 * the back-off); a new primary -> zt_retarget; a fetch that gave up on its
 * peer -> zt_abandon. Nonces come from the node's seed (deterministic).
 *
 * Serving (zt decides; this binding answers its questions): a caught-up
 * primary is a settled primary with commit_min == commit_max; the
 * checkpoint offered is the durable superblock pairing with its recorded
 * prepare header, nothing while a local checkpoint is between its
 * snapshot and its pairing.
 *
 * Install (shard/zero/install_state.h's order, with the same functions):
 *  1. zinst_check decodes and checks every artifact into scratch (a
 *     refusal changes nothing, -EPROTO charges the snapshot generation);
 *  2. snapshot ahead of commit_min: snapinst_store (journal cut above the
 *     commit, snapshot.bin, journal emptied), then the state restored
 *     from the payload (this binding's "both left-right instances": one
 *     private state here), the header kept for the pairing, and
 *     vsr_on_state_installed queues the superblock pairing; its
 *     durability is the checkpoint at S (drain, `checkpointed` hook);
 *     not ahead: the local state machine stays (a table-only install);
 *  3. the client table at its op T: zinst_table (the sessions must agree
 *     slot for slot, then the rings replace the private table's) now if
 *     the state is at T, else when the commit walk applies T; a table
 *     behind the state is dropped.
 * A storage failure inside the install stops the node (fatal), after zt
 * has returned.
 *
 * Faults (scenarios only, at this serving side of the binding, never in
 * shard/): n->xfer_serve_empty turns every StateChunk zt sends into the
 * same chunk carrying zero bytes, sealed (counted in m_xfer_emptied).
 *
 * Callers: tests/sim/sim_node.c only (one thread).
 */
#ifndef VS_TESTS_SIM_XFER_H
#define VS_TESTS_SIM_XFER_H

#include <stdint.h>

#include "shard/vsr/engine.h"

struct sim_node;

/* At boot of a multi-replica node: creates its zt. 0 or -errno. */
int sim_xfer_open(struct sim_node *n);
/* At stop: destroys it (never from inside a zt callback). */
void sim_xfer_close(struct sim_node *n);
/* At the node's end: also frees the table scratch. */
void sim_xfer_free(struct sim_node *n);
/* After the commit of `op`: installs a transferred client table whose op
 * it is (zinst_table: the rings, when the sessions agree). */
void sim_xfer_table_at(struct sim_node *n, uint64_t op);
/* 1 if `frame` is a transfer command (handled here), else 0. */
int sim_xfer_frame(struct sim_node *n, const void *frame, uint32_t len);
/* VSR_ACT_STATE_TRANSFER. */
void sim_xfer_start(struct sim_node *n, const struct vs_vsr_action *a);
/* One tick: zt_tick, retarget, abandon. */
void sim_xfer_tick(struct sim_node *n);
/* 1 while a fetch session runs. */
int sim_xfer_active(const struct sim_node *n);

#endif /* VS_TESTS_SIM_XFER_H */
