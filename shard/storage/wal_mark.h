/*
 * shard/storage/wal_mark.h - the journal's durable mark (journal.mark):
 * the proof that a WAL entry was never acknowledged.
 *
 * Role: shard 0's journal writes several entries per write and fsyncs
 * them once (group commit). A power loss during such a write may keep any
 * subset of its sectors, in any order, so at boot a damaged entry
 * followed by valid ones of the same write is indistinguishable, from the
 * WAL alone, from an entry fsynced (perhaps acknowledged) and damaged
 * since. The mark is the missing record: after every journal fsync
 * completes, and BEFORE the caller may acknowledge (PrepareOk, a reply, a
 * journal-durable report), the journal writes here "every entry up to op
 * M is durable" and fsyncs it (wal_sync, wal_append). It is the
 * redundant-header idea (a header written after its prepare is durable,
 * before the PrepareOk) collapsed for a linear log: entries are written
 * in op order and synced as a prefix, so one monotonic op per journal
 * says which headers the "redundant ring" would hold.
 *
 * Safety argument (what the scan in journal.c builds on):
 *  - An entry of op N > M was never acknowledged by this replica: its
 *    acknowledgement waits for a mark >= N to be durable, and the mark
 *    read at boot is the newest whole one (below). So damage at N > M,
 *    whatever it looks like (torn header, torn body, reordered sectors,
 *    valid entries after it, a chain break), is cut as a torn tail and
 *    may be nacked in a view change; nothing from N on is kept.
 *  - An entry of op N <= M completed an fsync and may have been
 *    acknowledged: damage there is never cut as torn by the group rule;
 *    only the classic rules for the file's last entry apply (a cluster
 *    replica cuts a damaged last entry as faulty, never nacks it, and
 *    repairs it; damage with valid entries after it refuses).
 *  - The mark only ever errs high, which is the safe side (it lets
 *    fewer entries be cut): it is raised only after the WAL fsync, and
 *    lowered (a view change's truncate, a boot cut) only after the WAL's
 *    shorter file is durable.
 *  - Two slots, 512 bytes apart (one sector each, so a real disk writes
 *    a slot whole or not at all): write k goes to slot k mod 2. The
 *    newest slot whose checksum verifies wins. A slot failing its
 *    checksum beside a valid one is taken as the newer write torn before
 *    its fsync completed (nothing was acknowledged on it); were it
 *    instead a completed write rotten since, the older value would let a
 *    cut happen only where the WAL is damaged too: two independent
 *    faults. No valid slot (both damaged, or the file absent: a WAL
 *    written by an older release) -> the mark is unknown and the scan
 *    keeps the previous release's rules unchanged (old WALs stay
 *    readable; DESIGN §4).
 *  - A release without the mark appends without raising it, so running
 *    one on this data dir and then this release again would leave a
 *    mark below entries that release acknowledged: downgrading removes
 *    journal.mark (the older rules then apply, as for any old journal).
 *
 * Slot layout (40 bytes at offset 0 and 512, little endian):
 *   [0..4)   magic "IWMK"
 *   [4..8)   format version (1)
 *   [8..16)  sequence (k >= 1; the slot is k mod 2)
 *   [16..24) op: every journal entry up to it completed an fsync (0: none)
 *   [24..40) checksum (u128) of bytes [0..24)
 * A slot of any other version or magic whose checksum verifies is
 * ignored like a damaged one (its rules are not this release's).
 *
 * Callers: shard/storage/journal.c only (any process that opens the
 * journal: shard 0, vstream-inspect read-only, tests).
 */
#ifndef VS_SHARD_STORAGE_WAL_MARK_H
#define VS_SHARD_STORAGE_WAL_MARK_H

#include <stdint.h>

#include "shard/storage/atomic_file.h"
#include "shard/storage/io.h"

#define WAL_MARK_FILE      "journal.mark"
#define WAL_MARK_VERSION   1u
#define WAL_MARK_SLOT_SIZE 40u
#define WAL_MARK_SLOT_GAP  512u

enum wal_mark_status {
    WAL_MARK_ABSENT = 0, /* no file, or no slot ever written */
    WAL_MARK_OK,         /* op below is the mark */
    WAL_MARK_DAMAGED,    /* no slot verifies: unknown */
};

struct wal_mark {
    struct vs_sio *io;
    char path[AFILE_PATH_MAX];
    int fd; /* -1: not open for writing */
    enum wal_mark_status status;
    uint64_t seq;      /* newest valid slot's sequence (0: none) */
    uint64_t op;       /* valid when status == WAL_MARK_OK */
    int damaged_slots; /* slots that failed to verify (for reports) */
};

/* Encodes/decodes one slot (the golden-byte tests pin it). decode: 1 if
 * the slot verifies and is this version, 0 if it is all zero, -1 if
 * damaged (or another version). */
void wal_mark_encode(uint64_t seq, uint64_t op,
                     uint8_t out[WAL_MARK_SLOT_SIZE]);
int wal_mark_decode(const uint8_t in[WAL_MARK_SLOT_SIZE], uint64_t *seq,
                    uint64_t *op);

/* Reads DIR/journal.mark (never creates it): m->status and m->op. 0 or
 * -errno (an I/O error other than a missing file or a short read). */
int wal_mark_read(struct wal_mark *m, struct vs_sio *io, const char *dir);
/* Opens the mark read by wal_mark_read for writing, creating the file
 * (0600, durable name) when absent; an absent or unknown mark is then
 * written as `op` (the caller's conservative bound: the WAL's last op).
 * 0, -errno, -VS_EFATAL. */
int wal_mark_open(struct wal_mark *m, const char *dir, uint64_t op);
/* Writes `op` as the new mark and fsyncs it. 0 or -VS_EFATAL. */
int wal_mark_write(struct wal_mark *m, uint64_t op);
void wal_mark_close(struct wal_mark *m);
/* "ok", "absent", "damaged". */
const char *wal_mark_status_name(enum wal_mark_status st);
/* 1 if the mark is known and op is above it: op was never acknowledged. */
int wal_mark_above(const struct wal_mark *m, uint64_t op);

#endif /* VS_SHARD_STORAGE_WAL_MARK_H */
