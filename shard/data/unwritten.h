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
 *  - unwritten_shape (batches, whose last bytes are payload): the damaged
 *    bytes end in a zero byte (a write cut short) or hold a run of at
 *    least UNWRITTEN_SECTOR zero bytes (a sector that did not land);
 *  - unwritten_zero_from (records, whose every whole write ends in a
 *    byte that is never zero): every byte from `from` on is zero.
 * The batch test is the weaker one (a batch may end in a zero byte): a
 * flipped batch that does, within the window, is cut as never written --
 * a replicated partition then repairs its op (its record without its
 * batch is faulty, never nacked), and under interval the policy already
 * allows losing acknowledged batches that were not yet fsynced. The
 * record test misreads only a flip that zeroes exactly that last byte.
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

/* 1 if b[0, len) ends in a zero byte or holds UNWRITTEN_SECTOR zero bytes
 * in a row (len 0: nothing there, 1). */
int unwritten_shape(const uint8_t *b, size_t len);

/* 1 if every byte of b[from, len) is zero (from >= len: 1). */
int unwritten_zero_from(const uint8_t *b, size_t len, size_t from);

#endif /* VS_SHARD_DATA_UNWRITTEN_H */
