/*
 * shard/storage/xfer_store.h - the storage half of installing a state
 * transfer: a fetched snapshot payload replaces snapshot.bin and the
 * journal, in an order that leaves a bootable data dir after a crash at
 * any step.
 *
 * Order (the caller holds the verified payload of the snapshot at op S
 * and its local state is at commit_min < S):
 *  1. the journal is cut above commit_min (entries the install replaces:
 *     the engine drops every op above S from its window and re-appends
 *     what chains to S). A crash here boots the old snapshot + journal
 *     up to commit_min: the state before the install.
 *  2. snapshot.bin := the payload (tmp, fsync, rename, dir fsync). A
 *     crash here boots the snapshot at S beside a superblock whose
 *     pairing is older and a journal wholly behind S (recovery.h: a
 *     cluster replica boots it with the hash chain's anchor unknown;
 *     boot drains the journal).
 *  3. the journal is emptied (every entry is at or below commit_min < S);
 *     the next append is S + 1.
 *  4. (the caller) the superblock pairing {checkpoint_op = S, checksum,
 *     checkpoint_prepare = S's stored header}: the engine queues it in
 *     vsr_on_state_installed. After it is durable a boot restarts the
 *     chain from the recorded header.
 * The payload's checksum is computed and compared with `expected`
 * (the 64-bit XXH3 the manifest carried, widened: its low half) BEFORE
 * anything is written.
 *
 * Errors: -EBADMSG (checksum or prefix op mismatch: nothing written),
 * -ENOSPC (no space: a clean failure at the step that hit it, the data
 * dir bootable as above), -VS_EFATAL or another -errno (the node stops).
 * Callers: shard 0's install hook, the simulator's binding (one thread).
 */
#ifndef VS_SHARD_STORAGE_XFER_STORE_H
#define VS_SHARD_STORAGE_XFER_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/storage/io.h"
#include "shard/storage/journal.h"

/* Steps 1-3 above for the snapshot payload p[0..len) of op `op` into
 * META (the node's DATA/metadata) and its open journal. *checksum gets
 * the payload checksum the pairing records. */
int xstore_install_snapshot(struct vs_sio *io, const char *meta,
                            struct wal *journal, uint64_t commit_min,
                            uint64_t op, const uint8_t *p, size_t len,
                            uint64_t expected, struct vs_u128 *checksum);

#endif /* VS_SHARD_STORAGE_XFER_STORE_H */
