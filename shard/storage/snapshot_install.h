/*
 * shard/storage/snapshot_install.h - the storage half of installing a
 * state-transfer snapshot on a cluster replica (DESIGN §4; the shard-0
 * binding is shard/zero/install_state.h, the simulator calls this too).
 *
 * snapinst_store, for a verified payload of op S above the replica's
 * commit_min, in this order, each step durable before the next:
 *   1. the journal is cut above commit_min: those entries are not known
 *      committed here (an old view's suffix) and the snapshot supersedes
 *      whatever of them is canonical;
 *   2. snapshot.bin := payload + trailer (tmp, fsync, rename, directory
 *      fsync);
 *   3. the journal is emptied (every entry left is at or below
 *      commit_min < S, covered by the snapshot).
 * The caller then publishes the state and writes the superblock pairing
 * {checkpoint op S, *sum, op S's prepare header} (4).
 * What a crash leaves, and what boots (recovery.h):
 *   before 2's rename: the old snapshot and superblock with a journal
 *     ending at or below commit_min: the old state (a .tmp is removed);
 *   after 2's rename, before 4: the new snapshot beside the old pairing
 *     and a journal with nothing at or above S (never an entry above S,
 *     thanks to 1): recovery drains the journal behind the snapshot and
 *     boots the new state, the chain anchor learnt from the view;
 *   after 4: the new state, the superblock continues the hash chain.
 * Errors: 0; -ENOSPC when step 1 found no space (nothing changed);
 * anything else is -VS_EFATAL with one line in err (the node must stop:
 * the engine's view of the journal is no longer the disk's, and a
 * restart boots one of the states above).
 * Callers: one writer of the data dir (shard 0, the simulator's node).
 */
#ifndef VS_SHARD_STORAGE_SNAPSHOT_INSTALL_H
#define VS_SHARD_STORAGE_SNAPSHOT_INSTALL_H

#include <stddef.h>
#include <stdint.h>

#include "common/checksum.h"
#include "shard/storage/io.h"
#include "shard/storage/journal.h"

int snapinst_store(struct vs_sio *io, const char *meta_dir, struct wal *journal,
                   uint64_t commit_min, const uint8_t *payload, size_t len,
                   uint64_t op, struct vs_u128 *sum, char *err, size_t errlen);

#endif /* VS_SHARD_STORAGE_SNAPSHOT_INSTALL_H */
