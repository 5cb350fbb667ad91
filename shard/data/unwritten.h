/*
 * shard/data/unwritten.h - the shape a power loss leaves where a write that
 * was never fsynced did not land, for the recovery scans of the active
 * segment (segment.c) and of a replicated partition's .vsr records
 * (pjournal.c).
 *
 * Role: a write past the durable end of a file that a crash lost, cut
 * short, or of which a sector did not land, reads back as zeros there
 * (the file was extended: there is no older content under it). Damage of
 * that shape is "never written"; anything else -- a flipped byte with no
 * zero run of the shape -- is damage to bytes that were written, possibly
 * fsynced and acknowledged, and the scans refuse it. Two tests:
 *  - unwritten_shape (batches): the damaged stretch, which starts where a
 *    batch should start, is a sequence of writes each cut short (zeros
 *    from the cut to the end of the write, or to the end of the stretch),
 *    lost (all zeros: the next write's header found just after them, or
 *    UNWRITTEN_SECTOR of them at least), or with a sector that did not
 *    land (a run of UNWRITTEN_SECTOR zeros at least, or zeros from where
 *    a batch should start to a sector boundary of the file: its header
 *    in the sector, the rest of its write unlocatable) -- and each batch
 *    whose header is there is intact outside its zero run: header
 *    structurally valid, declared length within the stretch, and every
 *    frame wholly outside the run verifying its checksum. A flip in a
 *    frame away from the zeros, or in the header, is refused even when
 *    the batch ends in a zero byte; what stays indistinguishable is a
 *    flip inside the very frame that a zero run cuts (the frame checksum
 *    covers the whole frame);
 *  - unwritten_zero_from (records, whose every whole write ends in a
 *    byte that is never zero): every byte from `from` on is zero.
 * The record test misreads only a flip that zeroes exactly that last
 * byte.
 * The shape alone proves nothing about age: the scans also bound where it
 * may lie (above the durable checkpoint, within the writes the writer can
 * have left unsynced) before they cut.
 *
 * Invariants: pure functions of their arguments. Any process.
 */
#ifndef VS_SHARD_DATA_UNWRITTEN_H
#define VS_SHARD_DATA_UNWRITTEN_H

#include <stddef.h>
#include <stdint.h>

#define UNWRITTEN_SECTOR 512u

/* 1 if b[0, len), damaged bytes from where a batch should start (at
 * byte `at` of its file), have the never-written shape above (len 0:
 * nothing there, 1). */
int unwritten_shape(const uint8_t *b, size_t len, uint64_t at);

/* 1 if every byte of b[from, len) is zero (from >= len: 1). */
int unwritten_zero_from(const uint8_t *b, size_t len, size_t from);

#endif /* VS_SHARD_DATA_UNWRITTEN_H */
