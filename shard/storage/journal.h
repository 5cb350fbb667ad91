/*
 * shard/storage/journal.h - the write-ahead log of prepares (journal.wal).
 *
 * Role: entries are prepares stored verbatim, [256-byte header][body],
 * back to back (struct vs_hdr_prepare, common/wire.h). The primary sealed
 * checksum_body and the identity checksum; the journal never re-seals.
 * wal_append writes one entry and fsyncs before returning, so the caller
 * may acknowledge (PrepareOk / reply) only after it returns 0. Every
 * fsync of the journal (wal_append, wal_sync) is followed by the durable
 * mark's write and fsync (wal_mark.h) before it returns; a truncate or a
 * boot cut lowers the mark once the shorter file is durable.
 *
 * Scan (on open; also read-only for vstream-inspect), per entry at pos:
 *  - the header's own checksums first: identity (vs_prepare_identity)
 *    and, in format 2, checksum_view -- no field is trusted before;
 *  - structure: command == Prepare, 256 <= size <= VS_FRAME_MAX;
 *  - FORMAT GATE: header.release must be a format version the gate
 *    knows (default vs_wire_format_known: 1 and 2; injectable for tests).
 *    An entry whose header verifies but whose version is unknown is
 *    refused with WAL_UNKNOWN_FORMAT (never misparsed, never "damage");
 *  - body checksum: XXH3 of the body must equal checksum_body (entries
 *    are always sealed; 0 is not "unsealed" here);
 *  - chain: op == previous op + 1 and parent == previous checksum.
 * Classification of the first bad position pos (DESIGN §4, exactly),
 * after one rule that comes first (shard/storage/wal_mark.h, with its
 * safety argument):
 *  - ABOVE THE DURABLE MARK: when journal.mark holds a valid mark M and
 *    the bad position's op N (the previous entry's op + 1, or a verified
 *    header's op) is above it, nothing from N on was ever acknowledged:
 *    whatever the damage is (valid entries after it, a chain break, a
 *    non-zero torn header), a TORN TAIL cut at pos (mark_cut = 1). At or
 *    below M the entry completed an fsync: the rules below, without the
 *    UNSYNCED GROUP TAIL rule (it guessed what the mark now records).
 *    Without a valid mark (a WAL written by an older release, both slots
 *    damaged) the rules below apply unchanged.
 *  - TORN TAIL, exactly one of: fewer than 256 bytes remain; the header
 *    fails its checksums and its bytes are zero from the first 4 KiB
 *    file boundary at or after pos on (all of it when there is none
 *    inside); or the header verifies and declares a size past the end
 *    of the file -- in each case only when no complete valid entry
 *    starts at any later byte offset and at most VS_FRAME_MAX bytes
 *    follow. Never acknowledged: cut (ftruncate + fsync) at open.
 *  - DAMAGED TAIL: anything else failing verification in the last
 *    entry (a non-zero header whose checksums fail; a full-length entry
 *    whose body checksum fails; a verified header with impossible
 *    fields). It may have been acknowledged: a cluster replica cuts it,
 *    records the op as faulty and repairs it from peers; a one-replica
 *    node refuses unless told to cut (vstreamd --cut-damaged-tail).
 *  - UNSYNCED GROUP TAIL (only with wal_options.unsynced_max > 1: the
 *    writer left up to that many appends unsynced at once, and a power
 *    loss may keep any subset of their pages, so a later entry can
 *    survive an earlier one): the damaged entry after a valid one has a
 *    header the TORN TAIL zero rule calls never written (or fewer than
 *    256 bytes remain before the next entry), valid entries follow, every
 *    op from it to the file's last lies within unsynced_max ops (each
 *    damaged stretch ends where an entry of a later, op-skipping op
 *    verifies; the valid runs chain): a TORN TAIL cut at the damage. A
 *    lost write means no fsync completed after it, so nothing written
 *    from it on was acknowledged. Non-zero damage there may be an entry
 *    fsynced and damaged since, with acknowledged entries after it:
 *    interior corruption, as below.
 *  - INTERIOR CORRUPTION: any other damage with a complete valid entry
 *    after it: refuse, naming the op and byte offset.
 *  - CHAIN BREAK: two valid entries that do not chain: refuse.
 *  - DROPPED PREFIX (only with wal_options.drop_damaged_upto): damage
 *    whose ops all lie at or below that op, with a valid entry after it,
 *    drops the damage and every entry before it; the scan goes on from
 *    that entry (the verdict judges the retained entries only).
 *
 * drain(up_to_op) keeps up_to_op itself (so the next entry's parent can
 * still be verified) and drops older ones; drain_margin(checkpoint_op,
 * margin) is the checkpoint's drain: it also keeps up to `margin` ops
 * below the checkpoint op, so a peer lagging by less than that repairs
 * from this journal rather than by state transfer (shard/vsr/engine.h,
 * vsr_drain_keep_from); truncate_from(op) drops op and
 * later ones. Both rewrite the survivors through atomic_file
 * (journal.wal.tmp, fsync, rename, dir fsync). Lookup by op is O(1): ops
 * are consecutive, so the index is an array of (offset, header) by
 * op - first_op, built at scan.
 *
 * Errors: -ENOSPC on append = clean failure, the partial append is cut
 * back (ftruncate to the previous length, fsync) and earlier entries are
 * intact. Any other write error, any fsync/rename/dir-fsync error, or a
 * failed cut-back is -VS_EFATAL and poisons the journal.
 * Callers: shard 0 only (one journal per replica); vstream-inspect uses
 * wal_scan_file (read-only).
 */
#ifndef VS_SHARD_STORAGE_JOURNAL_H
#define VS_SHARD_STORAGE_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/storage/atomic_file.h"
#include "shard/storage/io.h"
#include "shard/storage/wal_mark.h"

/* The most appends shard 0 leaves written but not yet fsynced at any
 * moment: its group commit holds at most VSR_PIPELINE_MAX nosync appends
 * of one loop pass and makes the next append (or the pass's end) fsync
 * them all (shard/zero/commit.c asserts its bound against this one).
 * Shard 0's boot and vstream-inspect scan with it as
 * wal_options.unsynced_max. */
#define WAL_GROUP_UNSYNCED_MAX 33u

/* Entry format versions counted separately by the scan (others: [0]). */
#define WAL_VERSIONS_TRACKED 8u

/* The format gate: 1 if `release` is an entry format this decoder reads. */
typedef int wal_format_known_fn(uint32_t release);

enum wal_scan_verdict {
    WAL_CLEAN = 0,        /* every byte belongs to a valid entry */
    WAL_TORN_TAIL,        /* cut (or, read-only: would cut) */
    WAL_DAMAGED_TAIL,     /* full-length last entry failing a checksum */
    WAL_INTERIOR_CORRUPT, /* damage with a valid entry after it */
    WAL_CHAIN_BREAK,      /* valid entries that do not chain */
    WAL_UNKNOWN_FORMAT,   /* an entry of a format version unknown here */
};

struct wal_scan {
    enum wal_scan_verdict verdict;
    uint64_t file_size;
    uint64_t valid_end; /* bytes [0, valid_end) are valid entries */
    uint64_t entries;
    uint64_t first_op, last_op; /* valid when entries > 0 */
    uint64_t per_version[WAL_VERSIONS_TRACKED];
    /* TORN/DAMAGED/INTERIOR/CHAIN/UNKNOWN: where and what */
    uint64_t bad_op;     /* op of the bad entry (expected op if unknown) */
    uint64_t bad_offset; /* byte offset of the bad entry */
    /* DAMAGED_TAIL: the most whole entries the cut bytes may hold (>= 1):
     * 1 when the damaged entry's header verified and it ends the file,
     * else one per full header's worth of bytes. Ops bad_op .. bad_op +
     * bad_span - 1 may have been journaled (and acknowledged). */
    uint64_t bad_span;
    /* DAMAGED_TAIL whose header verified (only the body failed): that
     * header, the exact one journaled (bad_header_valid = 1). */
    int bad_header_valid;
    struct vs_hdr_prepare bad_header;
    uint32_t bad_release;
    /* TORN_TAIL judged by the unsynced group rule: valid entries up to
     * group_last_op followed the never-written entry (0: plain rules) */
    uint64_t group_last_op;
    int cut; /* the tail was cut at open (writable open only) */
    /* the durable mark read before the scan (wal_mark.h) and whether the
     * verdict rests on it: TORN_TAIL above the mark (mark_cut = 1) */
    enum wal_mark_status mark_status;
    uint64_t mark_op;
    int mark_cut;
    /* drop_damaged_upto: damage dropped with the prefix before it (the
     * count of damaged ranges skipped, 0 if none). The retained entries
     * start at byte retained_offset (first_op); ops dropped_first_op ..
     * dropped_last_op are no longer held (dropped_first_op 0: the file's
     * first op was unreadable). The first damage dropped: its op (0 if
     * unknown), offset and kind. A writable open rewrote the file without
     * them. */
    uint64_t dropped;
    uint64_t retained_offset;
    uint64_t dropped_first_op, dropped_last_op;
    uint64_t dropped_damage_op, dropped_damage_offset;
    const char *dropped_damage_kind;
    char reason[256];
};

struct wal_options {
    wal_format_known_fn *format_known; /* NULL: vs_wire_format_known */
    int read_only;                     /* never modify the file */
    int cut_damaged_tail;              /* also cut a DAMAGED_TAIL */
    /* 0: off. Otherwise damage followed (within two frames) by a valid
     * entry of op N with N - 1 <= drop_damaged_upto ends the retained
     * prefix instead of refusing as interior corruption: the entries
     * before N are dropped (the state covers them; they only served
     * repair). Damage above it keeps the rules above. */
    uint64_t drop_damaged_upto;
    /* 0 or 1: every append was fsynced before the next (the classic
     * rules). N > 1: the writer may have left up to N appends unsynced at
     * once (group commit): the UNSYNCED GROUP TAIL rule above applies. */
    uint32_t unsynced_max;
};

struct wal_index_entry {
    uint64_t offset;
    struct vs_hdr_prepare header;
};

struct wal {
    struct vs_sio *io;
    char dir[AFILE_PATH_MAX];
    char path[AFILE_PATH_MAX];
    int fd;
    int read_only;
    int poisoned;
    wal_format_known_fn *format_known;
    uint64_t size; /* bytes of valid entries == file length */
    uint64_t first_op;
    uint64_t count; /* entries; ops first_op .. first_op + count - 1 */
    struct wal_index_entry *index;
    uint64_t index_cap;
    struct wal_mark mark; /* open for writing unless read_only */
};

/* Scans DIR/journal.wal read-only (an absent file scans as empty CLEAN;
 * -ENOENT is not returned). 0 with `out` filled, or -errno. */
int wal_scan_file(struct vs_sio *io, const char *dir,
                  const struct wal_options *opt, struct wal_scan *out);

/* Opens (creating it unless read_only) DIR/journal.wal, scans it, cuts a
 * torn tail (and a damaged one if opt->cut_damaged_tail) unless
 * read_only. Returns 0 (scan->verdict CLEAN or TORN_TAIL, or DAMAGED_TAIL
 * when cut), -EBADMSG for a refusal verdict (w is not open; scan says
 * why), -VS_EFATAL, or -errno. */
int wal_open(struct wal *w, struct vs_sio *io, const char *dir,
             const struct wal_options *opt, struct wal_scan *scan);
void wal_close(struct wal *w);

/* Appends one sealed prepare and fsyncs. A format-2 entry is stored with
 * checksum_view stamped for its view (vs_prepare_seal_view), whatever the
 * caller's copy held. Checks: size == 256 + body_len, identity checksum,
 * format version known, and -- when the journal is not empty -- op ==
 * last + 1 and parent == last checksum (-EINVAL otherwise, nothing
 * written). -ENOSPC: nothing kept. -VS_EFATAL. */
int wal_append(struct wal *w, const struct vs_hdr_prepare *h, const void *body,
               size_t body_len);
/* Group commit: wal_append without the fsync (the entry is indexed and
 * readable, not durable); wal_sync then makes every entry written so far
 * durable. 0, or -errno with the journal poisoned (-VS_EFATAL after). */
int wal_append_nosync(struct wal *w, const struct vs_hdr_prepare *h,
                      const void *body, size_t body_len);
int wal_sync(struct wal *w);

/* 1 if the journal holds no entry. */
int wal_empty(const struct wal *w);
uint64_t wal_first_op(const struct wal *w); /* only if !wal_empty */
uint64_t wal_last_op(const struct wal *w);  /* only if !wal_empty */
/* The header of `op`, or NULL if not held. O(1). */
const struct vs_hdr_prepare *wal_header(const struct wal *w, uint64_t op);
/* Reads the body of `op` into buf (capacity cap). Returns the body length
 * (>= 0), -ENOENT (op not held), -ENOBUFS (cap too small), -EIO if the
 * bytes on disk no longer match the body checksum, or -errno. */
long wal_read_body(struct wal *w, uint64_t op, void *buf, size_t cap);

/* Keeps ops >= up_to_op (so up_to_op stays); if up_to_op > last op the
 * journal becomes empty. 0, -ENOSPC (unchanged), -errno, -VS_EFATAL. */
int wal_drain(struct wal *w, uint64_t up_to_op);
/* The checkpoint drain: keeps checkpoint_op and the `margin` ops below
 * it (those still held: a repair margin for peers that lag), drops older
 * ones; a journal whose last op is below checkpoint_op becomes empty, as
 * wal_drain. Never keeps less than wal_drain(checkpoint_op). The same
 * returns as wal_drain. */
int wal_drain_margin(struct wal *w, uint64_t checkpoint_op, uint64_t margin);
/* Drops ops >= op. 0, -ENOSPC (unchanged), -errno, -VS_EFATAL. */
int wal_truncate_from(struct wal *w, uint64_t op);

const char *wal_verdict_name(enum wal_scan_verdict v);
/* 1 for the verdicts that refuse boot whatever the options say. */
int wal_verdict_refuses(enum wal_scan_verdict v);

#endif /* VS_SHARD_STORAGE_JOURNAL_H */
