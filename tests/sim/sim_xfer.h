/*
 * tests/sim/sim_xfer.h - state transfer for a simulated replica: the
 * REAL shard 0 module (shard/zero/transfer.h, zt_*) per node over the
 * simulated disk and network, bound the way shard 0 binds it.
 *
 * Routing: replica commands 22-25 go to zt_on_frame (sender = the
 * frame's replica field, as an authenticated link would say); zt_tick
 * every tick. VSR_ACT_STATE_TRANSFER -> vsr_transfer_begin + zt_start
 * against the primary of the view (or the peer the engine named); a new
 * primary, or a fetch that gave up on its peer, retargets; a session that
 * ends without an install -> vsr_transfer_end (the engine reports the
 * gap again later). Nonces come from the node's seed (deterministic).
 *
 * Serving (zt decides; this binding answers its questions): a caught-up
 * primary is a settled primary with commit_min == commit_max; the
 * checkpoint served is what snapshot.bin holds now (op and payload
 * checksum, set by every snapshot write and at boot), with the stored
 * header of that op's prepare (the superblock's record, else the WAL).
 *
 * Install (what shard 0 must do; the order is shard/storage/xfer_store.h):
 *  1. decode into scratch first: the client table's transfer form and,
 *     if the snapshot is ahead of commit_min, the snapshot into a fresh
 *     state + table; any failure is -EPROTO (charged to that snapshot
 *     generation) and changes nothing;
 *  2. snapshot ahead: xstore_install_snapshot (journal cut above the
 *     commit, snapshot.bin, journal emptied), the scratch state becomes
 *     the live one (the binding's "both left-right instances"), the
 *     offer's verified checkpoint header is kept for the pairing, then
 *     vsr_on_state_installed queues the superblock pairing {op, checksum,
 *     header}; the pairing's durability is the checkpoint (drain,
 *     `checkpointed` hook);
 *  3. client table: the snapshot embeds the table at its op (sessions in
 *     the state, cached replies in the private table). The transferred
 *     table (the primary's at its commit_min, the table frontier) is
 *     installed only where it describes the same op as the state it goes
 *     with (frontier == snapshot op, or == the local commit_min for a
 *     table-only install); otherwise the commit walk over
 *     (state op, frontier] re-executes those table mutations, and
 *     installing the later table first would apply them twice and leave
 *     this replica's checkpoints different from its peers';
 *  4. snapshot not ahead of commit_min: keep the local state machine
 *     (table-only install, step 3), vsr_on_state_installed raises
 *     commit_max.
 * A storage failure inside the install stops the node (fatal), after zt
 * has returned.
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
/* 1 if `frame` is a transfer command (handled here), else 0. */
int sim_xfer_frame(struct sim_node *n, const void *frame, uint32_t len);
/* VSR_ACT_STATE_TRANSFER. */
void sim_xfer_start(struct sim_node *n, const struct vs_vsr_action *a);
/* One tick: zt_tick, retarget, abandon. */
void sim_xfer_tick(struct sim_node *n);
/* 1 while a fetch session runs. */
int sim_xfer_active(const struct sim_node *n);

#endif /* VS_TESTS_SIM_XFER_H */
