/*
 * shard/storage/checkpoint_header.h - the stored header a checkpoint
 * pairing records (VsrState.checkpoint_prepare, vsr_state.h).
 *
 * Rule: a superblock names checkpoint op C only together with C's
 * header. Recovery restarts the hash chain from the WAL's entries at or
 * above the snapshot op, or, with none (the journal drained, or emptied
 * by a state transfer), from that header; a pairing without it beside
 * an empty journal is refused for good (refuse-wal-chain-start). So a
 * checkpoint starts only at an op whose header is known here: the
 * journal's entry of C, or the header a transfer delivered or the
 * superblock recorded for C. A replica that booted on a transferred
 * snapshot whose pairing a crash lost (snapshot_install.h) knows only
 * the checksum of that op, learnt from its view: it never pairs that
 * op and checkpoints at the next op its journal holds instead.
 *
 * Callers: the data dir's one writer (shard 0's commit path, the
 * simulator's node), before a checkpoint and at every superblock write.
 */
#ifndef VS_SHARD_STORAGE_CHECKPOINT_HEADER_H
#define VS_SHARD_STORAGE_CHECKPOINT_HEADER_H

#include <stdint.h>

#include "common/wire.h"
#include "shard/storage/journal.h"

/* The header of op `op` (> 0) for a pairing: the journal's entry, else
 * *known when it is op's (a zero header is nobody's). 1 with *out set,
 * or 0: the header is nowhere here and no pairing at op may be written. */
int ckpt_header_find(const struct wal *journal,
                     const struct vs_hdr_prepare *known, uint64_t op,
                     struct vs_hdr_prepare *out);

#endif /* VS_SHARD_STORAGE_CHECKPOINT_HEADER_H */
