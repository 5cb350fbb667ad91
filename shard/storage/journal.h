/*
 * shard/storage/journal.h - the write-ahead log of prepares (journal.wal).
 *
 * Role: entries are prepares stored verbatim, [256-byte header][body],
 * back to back (struct vs_hdr_prepare, common/wire.h). The primary sealed
 * checksum_body and the identity checksum; the journal never re-seals.
 * wal_append writes one entry and fsyncs before returning, so the caller
 * may acknowledge (PrepareOk / reply) only after it returns 0.
 *
 * Scan (on open; also read-only for vstream-inspect), per entry at pos:
 *  - structure: command == Prepare, 256 <= size <= VS_FRAME_MAX;
 *  - identity checksum (vs_prepare_identity) matches;
 *  - FORMAT GATE: header.release must be a format version the gate
 *    knows (default vs_wire_format_known; injectable for tests and for
 *    a future release that keeps reading old versions). An entry whose
 *    identity verifies but whose version is unknown is refused with
 *    WAL_UNKNOWN_FORMAT (never misparsed, never "damage");
 *  - body checksum: XXH3 of the body must equal checksum_body (version 1
 *    entries are always sealed; 0 is not "unsealed" here);
 *  - chain: op == previous op + 1 and parent == previous checksum.
 * Classification of the first bad position pos (see wal_scan_verdict):
 *  - TORN TAIL: the file ends inside the header; or the header verifies
 *    but the file ends inside the body; or the header is all zero, or
 *    zero from a 4 KiB boundary inside it on (whatever the bytes before
 *    the boundary; a torn sector write) -- in each case only when no
 *    complete valid entry starts at any later byte offset and at most
 *    VS_FRAME_MAX bytes follow. Never acknowledged: cut (ftruncate +
 *    fsync) at open.
 *  - DAMAGED TAIL: any other header that fails its identity checksum or
 *    structure (a flipped command or size byte), or a body that fails its
 *    checksum, with no complete valid entry after it.
 *    It may have been acknowledged: a cluster replica cuts it and
 *    repairs from peers; a one-replica node refuses unless told to cut
 *    (vstreamd --cut-damaged-tail).
 *  - INTERIOR CORRUPTION: any damage with a complete valid entry after
 *    it: refuse, naming the op and byte offset.
 *  - CHAIN BREAK: two valid entries that do not chain: refuse.
 *
 * drain(up_to_op) keeps up_to_op itself (so the next entry's parent can
 * still be verified) and drops older ones; truncate_from(op) drops op and
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
    uint32_t bad_release;
    int cut; /* the tail was cut at open (writable open only) */
    char reason[256];
};

struct wal_options {
    wal_format_known_fn *format_known; /* NULL: vs_wire_format_known */
    int read_only;                     /* never modify the file */
    int cut_damaged_tail;              /* also cut a DAMAGED_TAIL */
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

/* Appends one sealed prepare and fsyncs. Checks: size == 256 + body_len,
 * identity checksum, format version known, and -- when the journal is
 * not empty -- op == last + 1 and parent == last checksum (-EINVAL
 * otherwise, nothing written). -ENOSPC: nothing kept. -VS_EFATAL. */
int wal_append(struct wal *w, const struct vs_hdr_prepare *h, const void *body,
               size_t body_len);

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
/* Drops ops >= op. 0, -ENOSPC (unchanged), -errno, -VS_EFATAL. */
int wal_truncate_from(struct wal *w, uint64_t op);

const char *wal_verdict_name(enum wal_scan_verdict v);
/* 1 for the verdicts that refuse boot whatever the options say. */
int wal_verdict_refuses(enum wal_scan_verdict v);

#endif /* VS_SHARD_STORAGE_JOURNAL_H */
