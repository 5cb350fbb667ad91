/*
 * shard/storage/journal.c - the prepare WAL: scan, append, drain, truncate.
 *
 * Scan protocol (numbered once, here; rules in journal.h):
 *   1. At pos, classify the entry (entry_check): OK, short header, zero
 *      header, short body (header verified), bad structure (header
 *      verified), bad identity, unknown format (header verified), bad
 *      body, unreadable header or body (a read failing with EIO: a latent
 *      sector error is damage, judged like a checksum mismatch).
 *   2. OK: check the chain against the previous entry (op + 1, parent ==
 *      previous checksum), index it, move on.
 *   3. Unknown format: refuse (WAL_UNKNOWN_FORMAT) -- the format gate.
 *   4. Anything else is a bad entry at pos. If at most VS_FRAME_MAX bytes
 *      follow, load them (unreadable sectors as zeros) and probe every
 *      later byte offset (command byte as a filter) for a complete entry
 *      whose header and body verify.
 *      One found, or more bytes than one entry could tear -> interior
 *      corruption. Otherwise short header / zero header / short body is
 *      a torn tail, everything else a damaged tail.
 * The scan never trusts a field of a header before its checksums
 * verified, and every read is bounded by the file size.
 *
 * Invariants of an open journal: the file holds exactly `count` valid,
 * chained entries and nothing else (size == file length; offsets are
 * file offsets); index[i] is op first_op + i. One exception: a prefix
 * dropped at open (drop_damaged_upto) whose rewrite found no space stays
 * before index[0].offset, never served, until the next rewrite. Callers: shard
 * 0 only; vstream-inspect via wal_scan_file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checksum.h"
#include "common/layout.h"
#include "common/mem.h"
#include "common/metrics.h"
#include "shard/storage/journal.h"

enum entry_kind {
    ENTRY_OK = 0,
    ENTRY_SHORT_HEADER,      /* torn: fewer than 256 bytes remain */
    ENTRY_ZERO_HEADER,       /* torn: header zero (from a 4 KiB boundary on) */
    ENTRY_SHORT_BODY,        /* torn: verified header, size past the end */
    ENTRY_BAD_STRUCTURE,     /* damage: verified header, impossible fields */
    ENTRY_BAD_IDENTITY,      /* damage: non-zero header failing its checksums */
    ENTRY_UNKNOWN_FORMAT,    /* refusal: verified header, unknown version */
    ENTRY_BAD_BODY,          /* damage: full-length entry, body mismatch */
    ENTRY_UNREADABLE_HEADER, /* damage: the header read failed (EIO) */
    ENTRY_UNREADABLE_BODY,   /* damage: verified header, body read EIO */
};

/* The torn-write page: a crash mid-append leaves whole 4 KiB pages of the
 * new entry on disk and zeros after them. */
#define WAL_TEAR_PAGE 4096u

struct scan_ctx {
    struct vs_sio *io;
    int fd;
    uint64_t size;
    wal_format_known_fn *known;
    struct wal_scan *out;
    uint64_t drop_upto;          /* wal_options.drop_damaged_upto */
    uint32_t unsynced_max;       /* wal_options.unsynced_max (0/1: off) */
    const struct wal_mark *mark; /* read before the scan (NULL: none) */
    /* index being built (NULL: not wanted) */
    struct wal_index_entry **index;
    uint64_t *index_cap;
    uint8_t *body;
    size_t body_cap;
};

static void scan_reason(struct wal_scan *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
scan_reason(struct wal_scan *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof(s->reason), fmt, ap);
    va_end(ap);
}

static int
structure_ok(const struct vs_hdr_prepare *h)
{
    return h->f.command == VS_CMD_PREPARE && h->f.size >= VS_HEADER_SIZE &&
           h->f.size <= VS_FRAME_MAX;
}

/* Identity: sealed (nonzero) and matching, and in format 2 the view
 * checksum too: every byte of a stored header is covered. */
static int
identity_ok(const struct vs_hdr_prepare *h)
{
    return !vs_u128_is_zero(h->f.checksum) && vs_prepare_verify_identity(h) &&
           vs_prepare_verify_view(h);
}

/* DESIGN §4's zero rule for a header at file offset pos that failed its
 * checksums: torn if its bytes are zero from the first 4 KiB boundary at
 * or after pos on (all 256 bytes when pos itself is a boundary; a header
 * with no boundary inside must be wholly zero). */
static int
header_torn_zero(const struct vs_hdr_prepare *h, uint64_t pos)
{
    const uint8_t *b = (const uint8_t *)h;
    uint64_t boundary =
        (pos + WAL_TEAR_PAGE - 1) / WAL_TEAR_PAGE * WAL_TEAR_PAGE;
    size_t from =
        boundary - pos < VS_HEADER_SIZE ? (size_t)(boundary - pos) : 0;
    for (size_t i = from; i < VS_HEADER_SIZE; i++)
        if (b[i])
            return 0;
    return 1;
}

/* Body: the exact checksum; version-1 entries are always sealed, so a
 * zero checksum_body is not an "unsealed" pass here. */
static int
body_ok(const struct vs_hdr_prepare *h, const void *body, size_t len)
{
    return vs_u128_eq(vs_body_checksum(body, len), h->f.checksum_body);
}

static int
ensure_body(struct scan_ctx *c, size_t len)
{
    if (len <= c->body_cap)
        return 0;
    c->body = vs_xrealloc(c->body, len);
    c->body_cap = len;
    return 0;
}

/* Step 1. Returns an entry_kind (>= 0) or -errno. */
static int
entry_check(struct scan_ctx *c, uint64_t pos, struct vs_hdr_prepare *h)
{
    if (c->size - pos < VS_HEADER_SIZE)
        return ENTRY_SHORT_HEADER;
    int rc = sio_pread_all(c->io, c->fd, h, VS_HEADER_SIZE, (off_t)pos, NULL);
    if (rc == -ENODATA)
        return ENTRY_SHORT_HEADER;
    if (rc == -EIO) /* a latent sector error: the entry is damaged */
        return ENTRY_UNREADABLE_HEADER;
    if (rc < 0)
        return rc;
    /* No field is trusted before the header's own checksums verify. */
    if (!identity_ok(h))
        return header_torn_zero(h, pos) ? ENTRY_ZERO_HEADER
                                        : ENTRY_BAD_IDENTITY;
    if (!structure_ok(h))
        return ENTRY_BAD_STRUCTURE;
    if (!c->known(h->f.release))
        return ENTRY_UNKNOWN_FORMAT;
    if (h->f.size > c->size - pos)
        return ENTRY_SHORT_BODY;
    size_t blen = h->f.size - VS_HEADER_SIZE;
    ensure_body(c, blen);
    rc = sio_pread_all(c->io, c->fd, c->body, blen,
                       (off_t)(pos + VS_HEADER_SIZE), NULL);
    if (rc == -ENODATA)
        return ENTRY_SHORT_BODY;
    if (rc == -EIO)
        return ENTRY_UNREADABLE_BODY;
    if (rc < 0)
        return rc;
    return body_ok(h, c->body, blen) ? ENTRY_OK : ENTRY_BAD_BODY;
}

/* Reads len bytes at off; a 512-byte sector that fails with EIO (a latent
 * sector error) reads as zeros, so a probe past an unreadable entry still
 * sees what follows it (an entry overlapping the sector fails its
 * checksums). 0 or -errno. */
static int
pread_tolerant(struct vs_sio *io, int fd, uint8_t *buf, uint64_t len, off_t off)
{
    int rc = sio_pread_all(io, fd, buf, len, off, NULL);
    if (rc != -EIO)
        return rc;
    for (uint64_t p = 0; p < len;) {
        uint64_t k = 512 - (uint64_t)(off + (off_t)p) % 512;
        if (k > len - p)
            k = len - p;
        rc = sio_pread_all(io, fd, buf + p, k, off + (off_t)p, NULL);
        if (rc == -EIO)
            memset(buf + p, 0, k);
        else if (rc < 0)
            return rc;
        p += k;
    }
    return 0;
}

/* Step 4: looks for a complete entry (identity and body verify) starting
 * at any offset in (pos, size - 256]. Returns 1 and its offset/op, 0 if
 * none, -errno. */
static int
probe_later(struct scan_ctx *c, uint64_t pos, uint64_t *at, uint64_t *op)
{
    uint64_t n = c->size - pos;
    uint8_t *buf = vs_xmalloc(n ? n : 1);
    int rc = pread_tolerant(c->io, c->fd, buf, n, (off_t)pos);
    if (rc < 0)
        goto out;
    rc = 0;
    for (uint64_t q = 1; q + VS_HEADER_SIZE <= n; q++) {
        if (buf[q + offsetof(struct vs_frame, command)] != VS_CMD_PREPARE)
            continue;
        struct vs_hdr_prepare h;
        memcpy(&h, buf + q, sizeof(h));
        if (!structure_ok(&h) || h.f.size > n - q || !identity_ok(&h))
            continue;
        if (!body_ok(&h, buf + q + VS_HEADER_SIZE, h.f.size - VS_HEADER_SIZE))
            continue;
        *at = pos + q;
        *op = h.op;
        rc = 1;
        break;
    }
out:
    free(buf);
    return rc;
}

/* The farthest a drop resynchronises past a damaged entry: the damaged
 * entry and the one after it, each at most VS_FRAME_MAX long. */
#define WAL_RESYNC_SPAN  (2ull * VS_FRAME_MAX)
#define WAL_RESYNC_CHUNK (1u << 20)

/* The drop's resync: the first complete entry (identity, known format,
 * body) starting in (pos, pos + WAL_RESYNC_SPAN], read in chunks (the
 * damaged range may be larger than one entry). Unreadable sectors read as
 * zeros. Returns 1 with its offset and header, 0 if none, -errno. */
static int
probe_next(struct scan_ctx *c, uint64_t pos, uint64_t *at,
           struct vs_hdr_prepare *out)
{
    uint64_t last =
        c->size - pos < WAL_RESYNC_SPAN ? c->size : pos + WAL_RESYNC_SPAN;
    uint8_t *buf = vs_xmalloc(WAL_RESYNC_CHUNK + VS_HEADER_SIZE);
    int rc = 0;
    for (uint64_t base = pos + 1;
         base + VS_HEADER_SIZE <= c->size && base <= last && rc == 0;
         base += WAL_RESYNC_CHUNK) {
        uint64_t want = WAL_RESYNC_CHUNK + VS_HEADER_SIZE - 1;
        if (want > c->size - base)
            want = c->size - base;
        rc = pread_tolerant(c->io, c->fd, buf, want, (off_t)base);
        if (rc < 0)
            break;
        for (uint64_t q = 0; q + VS_HEADER_SIZE <= want &&
                             q < WAL_RESYNC_CHUNK && base + q <= last;
             q++) {
            if (buf[q + offsetof(struct vs_frame, command)] != VS_CMD_PREPARE)
                continue;
            struct vs_hdr_prepare h;
            memcpy(&h, buf + q, sizeof(h));
            uint64_t off = base + q;
            if (!structure_ok(&h) || h.f.size > c->size - off ||
                !identity_ok(&h) || !c->known(h.f.release))
                continue;
            size_t blen = h.f.size - VS_HEADER_SIZE;
            ensure_body(c, blen);
            int r2 = pread_tolerant(c->io, c->fd, c->body, blen,
                                    (off_t)(off + VS_HEADER_SIZE));
            if (r2 < 0) {
                rc = r2;
                break;
            }
            if (!body_ok(&h, c->body, blen))
                continue;
            *at = off;
            *out = h;
            rc = 1;
            break;
        }
    }
    free(buf);
    return rc;
}

/* The unsynced group tail (journal.h): the entry at pos (op bad_op, after
 * a valid entry) was never written, and valid entries follow it. Walks
 * the rest of the file: each damaged stretch resynchronises on the next
 * verifying entry, which must skip at least one op (a lost write is a
 * whole missing entry); valid runs must chain; every op seen stays below
 * bad_op + W (W = c->unsynced_max); a last damaged stretch is at most one
 * frame. Returns 1 with *last_op (the file's last valid op) if the shape
 * fits, 0 if not (the other rules apply), -errno. */
static int
unsynced_group_tail(struct scan_ctx *c, uint64_t pos, uint64_t bad_op,
                    uint64_t *last_op)
{
    uint64_t at = pos, last = bad_op - 1;
    struct vs_hdr_prepare h, prev;
    for (uint32_t runs = 0; runs <= c->unsynced_max; runs++) {
        uint64_t nx = 0;
        struct vs_hdr_prepare nh;
        memset(&nh, 0, sizeof(nh));
        int found = probe_next(c, at, &nx, &nh);
        if (found < 0)
            return found;
        if (!found) {
            if (runs == 0 || c->size - at > VS_FRAME_MAX)
                return 0; /* nothing valid follows: the plain tail rules */
            *last_op = last;
            return 1;
        }
        if (nh.op <= last + 1 || nh.op - bad_op >= c->unsynced_max)
            return 0;
        prev = nh;
        last = nh.op;
        uint64_t p = nx + nh.f.size;
        while (p < c->size) {
            int k = entry_check(c, p, &h);
            if (k < 0)
                return k;
            if (k == ENTRY_UNKNOWN_FORMAT)
                return 0;
            if (k != ENTRY_OK)
                break;
            if (h.op != prev.op + 1 || !vs_u128_eq(h.parent, prev.f.checksum) ||
                h.op - bad_op >= c->unsynced_max)
                return 0;
            prev = h;
            last = h.op;
            p += h.f.size;
        }
        if (p >= c->size) {
            *last_op = last;
            return 1;
        }
        at = p;
    }
    return 0;
}

static void
index_push(struct scan_ctx *c, uint64_t i, uint64_t pos,
           const struct vs_hdr_prepare *h)
{
    if (!c->index)
        return;
    if (i >= *c->index_cap) {
        uint64_t cap = *c->index_cap ? *c->index_cap * 2 : 64;
        *c->index = vs_xrealloc(*c->index, cap * sizeof(**c->index));
        *c->index_cap = cap;
    }
    (*c->index)[i].offset = pos;
    (*c->index)[i].header = *h;
}

static const char *
kind_text(int k)
{
    switch (k) {
    case ENTRY_SHORT_HEADER:
        return "the file ends inside the header";
    case ENTRY_ZERO_HEADER:
        return "zero header bytes";
    case ENTRY_BAD_STRUCTURE:
        return "structurally invalid header under a valid checksum";
    case ENTRY_SHORT_BODY:
        return "the file ends inside the body";
    case ENTRY_BAD_IDENTITY:
        return "header checksum mismatch";
    case ENTRY_BAD_BODY:
        return "body checksum mismatch";
    case ENTRY_UNREADABLE_HEADER:
        return "the header cannot be read: I/O error";
    case ENTRY_UNREADABLE_BODY:
        return "the body cannot be read: I/O error";
    default:
        return "damage";
    }
}

/* The rule above the durable mark (journal.h): the bad position at pos
 * holds op `op` (known); if the mark says it never completed an fsync,
 * the scan ends there with a TORN TAIL. 1 if so. */
static int
mark_cut(struct scan_ctx *c, uint64_t pos, uint64_t op, const char *what)
{
    if (!c->mark || !wal_mark_above(c->mark, op))
        return 0;
    struct wal_scan *s = c->out;
    s->verdict = WAL_TORN_TAIL;
    s->mark_cut = 1;
    s->bad_op = op;
    s->bad_offset = pos;
    s->bad_span = 0;
    s->bad_header_valid = 0;
    scan_reason(s,
                "WAL torn tail at op %llu, offset %llu (%s; above the "
                "durable mark, op %llu): %llu bytes never acknowledged",
                (unsigned long long)op, (unsigned long long)pos, what,
                (unsigned long long)c->mark->op,
                (unsigned long long)(c->size - pos));
    return 1;
}

/* Runs the whole scan. 0 (verdict in c->out) or -errno. */
static int
scan_run(struct scan_ctx *c)
{
    struct wal_scan *s = c->out;
    uint64_t pos = 0;
    struct vs_hdr_prepare prev, h;
    memset(&prev, 0, sizeof(prev));
    int have_prev = 0;
    while (pos < c->size) {
        int k = entry_check(c, pos, &h);
        if (k < 0)
            return k;
        if (k == ENTRY_OK) {
            /* h.op == 0 after a previous entry: the op wrapped past
             * UINT64_MAX, and the index (op - first_op) would not hold */
            if (have_prev && (h.op != prev.op + 1 || h.op == 0 ||
                              !vs_u128_eq(h.parent, prev.f.checksum))) {
                if (mark_cut(c, pos, prev.op + 1, "a chain break"))
                    return 0;
                s->verdict = WAL_CHAIN_BREAK;
                s->bad_op = h.op;
                s->bad_offset = pos;
                scan_reason(s,
                            "WAL chain break: op %llu at offset %llu does "
                            "not follow op %llu",
                            (unsigned long long)h.op, (unsigned long long)pos,
                            (unsigned long long)prev.op);
                return 0;
            }
            index_push(c, s->entries, pos, &h);
            if (s->entries == 0)
                s->first_op = h.op;
            s->last_op = h.op;
            s->entries++;
            s->per_version[h.f.release < WAL_VERSIONS_TRACKED ? h.f.release
                                                              : 0]++;
            prev = h;
            have_prev = 1;
            pos += h.f.size;
            s->valid_end = pos;
            continue;
        }
        if (k == ENTRY_UNKNOWN_FORMAT) {
            s->verdict = WAL_UNKNOWN_FORMAT;
            s->bad_op = h.op;
            s->bad_offset = pos;
            s->bad_release = h.f.release;
            scan_reason(s,
                        "WAL entry op %llu at offset %llu has format "
                        "version %u, unknown to this release",
                        (unsigned long long)h.op, (unsigned long long)pos,
                        h.f.release);
            return 0;
        }
        /* damage at pos */
        int op_known =
            have_prev || k == ENTRY_SHORT_BODY || k == ENTRY_UNREADABLE_BODY;
        s->bad_op = have_prev ? prev.op + 1 : (op_known ? h.op : 0);
        s->bad_offset = pos;
        char opbuf[32];
        if (op_known)
            snprintf(opbuf, sizeof(opbuf), "op %llu",
                     (unsigned long long)s->bad_op);
        else
            snprintf(opbuf, sizeof(opbuf), "the first entry");
        if (c->drop_upto > 0) {
            /* Damage whose ops all lie at or below drop_upto (the
             * snapshot covers them): the retained journal starts at the
             * next valid entry. */
            uint64_t at = 0;
            struct vs_hdr_prepare nh;
            memset(&nh, 0, sizeof(nh));
            int found = probe_next(c, pos, &at, &nh);
            if (found < 0)
                return found;
            if (found && nh.op >= 2 && nh.op - 1 <= c->drop_upto &&
                (!have_prev || nh.op > prev.op + 1)) {
                if (s->dropped == 0) {
                    s->dropped_first_op = s->entries > 0
                                              ? s->first_op
                                              : (op_known ? s->bad_op : 0);
                    s->dropped_damage_op = op_known ? s->bad_op : 0;
                    s->dropped_damage_offset = pos;
                    s->dropped_damage_kind = kind_text(k);
                }
                s->dropped++;
                s->dropped_last_op = nh.op - 1;
                s->retained_offset = at;
                s->entries = 0;
                memset(s->per_version, 0, sizeof(s->per_version));
                s->bad_op = 0;
                s->bad_offset = 0;
                have_prev = 0;
                pos = at;
                continue;
            }
        }
        if (op_known && mark_cut(c, pos, s->bad_op, kind_text(k)))
            return 0;
        uint64_t trailing = c->size - pos;
        if (have_prev && c->unsynced_max > 1 &&
            !(c->mark && c->mark->status == WAL_MARK_OK) &&
            (k == ENTRY_ZERO_HEADER || k == ENTRY_SHORT_HEADER)) {
            uint64_t last_op = 0;
            int g = unsynced_group_tail(c, pos, s->bad_op, &last_op);
            if (g < 0)
                return g;
            if (g) {
                s->verdict = WAL_TORN_TAIL;
                s->group_last_op = last_op;
                scan_reason(s,
                            "WAL torn tail at %s, offset %llu (%s; entries up "
                            "to op %llu follow, within the %u appends group "
                            "commit leaves unsynced): never acknowledged",
                            opbuf, (unsigned long long)pos, kind_text(k),
                            (unsigned long long)last_op, c->unsynced_max);
                return 0;
            }
        }
        if (trailing > VS_FRAME_MAX) {
            s->verdict = WAL_INTERIOR_CORRUPT;
            scan_reason(s,
                        "WAL interior corruption at %s, offset %llu (%s; "
                        "%llu bytes follow, more than one entry)",
                        opbuf, (unsigned long long)pos, kind_text(k),
                        (unsigned long long)trailing);
            return 0;
        }
        uint64_t at = 0, later_op = 0;
        int found = probe_later(c, pos, &at, &later_op);
        if (found < 0)
            return found;
        if (found) {
            s->verdict = WAL_INTERIOR_CORRUPT;
            scan_reason(s,
                        "WAL interior corruption at %s, offset %llu (%s; "
                        "a valid entry, op %llu, follows at offset %llu)",
                        opbuf, (unsigned long long)pos, kind_text(k),
                        (unsigned long long)later_op, (unsigned long long)at);
            return 0;
        }
        if (k == ENTRY_SHORT_HEADER || k == ENTRY_ZERO_HEADER ||
            k == ENTRY_SHORT_BODY) {
            s->verdict = WAL_TORN_TAIL;
            scan_reason(s,
                        "WAL torn tail at %s, offset %llu (%s): %llu bytes "
                        "never acknowledged",
                        opbuf, (unsigned long long)pos, kind_text(k),
                        (unsigned long long)trailing);
        } else {
            s->verdict = WAL_DAMAGED_TAIL;
            /* An entry that may have been acknowledged was written whole,
             * and every entry is at least a header long, so the cut bytes
             * hold at most one such entry per header's worth (a partial
             * one after them was never durable). A verified header (only
             * the body fails) gives the damaged entry's true size. */
            uint64_t rest = trailing;
            s->bad_span = 0;
            if (k == ENTRY_BAD_BODY && h.f.size <= trailing) {
                rest = trailing - h.f.size;
                s->bad_span = 1;
                s->bad_header_valid = 1;
                s->bad_header = h;
            }
            s->bad_span += rest / VS_HEADER_SIZE;
            if (s->bad_span == 0)
                s->bad_span = 1; /* the damaged entry itself */
            scan_reason(s,
                        "WAL damaged tail at %s, offset %llu (%s): the "
                        "entry may have been acknowledged",
                        opbuf, (unsigned long long)pos, kind_text(k));
        }
        return 0;
    }
    s->verdict = WAL_CLEAN;
    return 0;
}

static int
scan_fd(struct vs_sio *io, int fd, const struct wal_options *opt,
        const struct wal_mark *mark, struct wal_scan *out,
        struct wal_index_entry **index, uint64_t *index_cap)
{
    memset(out, 0, sizeof(*out));
    out->mark_status = mark->status;
    out->mark_op = mark->op;
    struct scan_ctx c = {
        .io = io,
        .fd = fd,
        .known =
            opt && opt->format_known ? opt->format_known : vs_wire_format_known,
        .out = out,
        .drop_upto = opt ? opt->drop_damaged_upto : 0,
        .unsynced_max = opt ? opt->unsynced_max : 0,
        .mark = mark,
        .index = index,
        .index_cap = index_cap,
    };
    if (fd >= 0) {
        struct stat st;
        if (fstat(fd, &st) == -1)
            return -errno;
        c.size = (uint64_t)st.st_size;
    }
    out->file_size = c.size;
    int rc = scan_run(&c);
    free(c.body);
    return rc;
}

static int rewrite_keep(struct wal *w, uint64_t from, uint64_t n);

static int
journal_path(char *out, size_t cap, const char *dir)
{
    return afile_join(out, cap, dir, VS_JOURNAL_FILE);
}

int
wal_scan_file(struct vs_sio *io, const char *dir, const struct wal_options *opt,
              struct wal_scan *out)
{
    char path[AFILE_PATH_MAX];
    int rc = journal_path(path, sizeof(path), dir);
    if (rc < 0)
        return rc;
    struct wal_mark mark;
    rc = wal_mark_read(&mark, io, dir);
    if (rc < 0)
        return rc;
    int fd = sio_open(io, path, O_RDONLY, 0);
    if (fd < 0 && fd != -ENOENT)
        return fd;
    rc = scan_fd(io, fd, opt, &mark, out, NULL, NULL);
    sio_close(io, fd);
    return rc;
}

int
wal_verdict_refuses(enum wal_scan_verdict v)
{
    return v == WAL_INTERIOR_CORRUPT || v == WAL_CHAIN_BREAK ||
           v == WAL_UNKNOWN_FORMAT;
}

int
wal_open(struct wal *w, struct vs_sio *io, const char *dir,
         const struct wal_options *opt, struct wal_scan *scan)
{
    memset(w, 0, sizeof(*w));
    w->io = io;
    w->fd = -1;
    w->mark.fd = -1;
    w->read_only = opt && opt->read_only;
    w->format_known =
        opt && opt->format_known ? opt->format_known : vs_wire_format_known;
    int rc = journal_path(w->path, sizeof(w->path), dir);
    if (rc < 0)
        return rc;
    snprintf(w->dir, sizeof(w->dir), "%s", dir);
    struct wal_scan local;
    struct wal_scan *s = scan ? scan : &local;
    memset(s, 0, sizeof(*s));

    if (w->read_only) {
        w->fd = sio_open(io, w->path, O_RDONLY, 0);
        if (w->fd < 0 && w->fd != -ENOENT) {
            rc = w->fd;
            goto fail;
        }
    } else {
        /* a crashed drain/truncate rewrite: the old file wins */
        rc = afile_cleanup_tmp(io, dir, VS_JOURNAL_FILE);
        if (rc < 0)
            goto fail;
        int fd = sio_open(io, w->path, O_RDWR, 0);
        if (fd == -ENOENT) {
            fd = sio_open(io, w->path, O_RDWR | O_CREAT | O_EXCL, 0600);
            if (fd >= 0) {
                w->fd = fd;
                rc = sio_dir_fsync(io, dir); /* the new name is durable */
                if (rc < 0)
                    goto fail;
            }
        }
        if (fd < 0) {
            rc = fd;
            goto fail;
        }
        w->fd = fd;
    }
    rc = wal_mark_read(&w->mark, io, dir);
    if (rc < 0)
        goto fail;
    rc = scan_fd(io, w->fd, opt, &w->mark, s, &w->index, &w->index_cap);
    if (rc < 0)
        goto fail;
    if (wal_verdict_refuses(s->verdict) ||
        (s->verdict == WAL_DAMAGED_TAIL && !(opt && opt->cut_damaged_tail))) {
        rc = -EBADMSG;
        goto fail;
    }
    if (s->verdict == WAL_TORN_TAIL || s->verdict == WAL_DAMAGED_TAIL) {
        if (!w->read_only) {
            rc = sio_ftruncate(io, w->fd, (off_t)s->valid_end, w->path);
            if (rc == 0)
                rc = sio_fsync(io, w->fd, w->path);
            if (rc < 0)
                goto fail;
            s->cut = 1;
        }
    }
    w->size = s->valid_end;
    w->count = s->entries;
    w->first_op = s->first_op;
    if (s->dropped && !w->read_only) {
        /* make the drop durable: the file holds the retained entries only.
         * Without the space for the rewrite (-ENOSPC: nothing changed)
         * the index alone drops them: the prefix stays on disk, never
         * served, and goes with the next drain or truncate rewrite. */
        rc = rewrite_keep(w, 0, w->count);
        if (rc < 0 && rc != -ENOSPC)
            goto fail;
    }
    if (!w->read_only) {
        /* An absent or unknown mark starts at the last op held (every
         * entry kept may have been acknowledged); a cut's first op and
         * those after it are no longer held: the mark comes down to them
         * now that the shorter file is durable. */
        rc = wal_mark_open(&w->mark, dir, w->count ? wal_last_op(w) : 0);
        if (rc == 0 && s->cut && s->bad_op > 0 && w->mark.op >= s->bad_op)
            rc = wal_mark_write(&w->mark, s->bad_op - 1);
        if (rc < 0)
            goto fail;
    }
    return 0;
fail:
    wal_close(w);
    return rc;
}

void
wal_close(struct wal *w)
{
    if (w->fd >= 0)
        sio_close(w->io, w->fd);
    w->fd = -1;
    wal_mark_close(&w->mark);
    free(w->index);
    w->index = NULL;
    w->index_cap = 0;
    w->count = 0;
}

int
wal_empty(const struct wal *w)
{
    return w->count == 0;
}

uint64_t
wal_first_op(const struct wal *w)
{
    return w->first_op;
}

uint64_t
wal_last_op(const struct wal *w)
{
    return w->first_op + w->count - 1;
}

static const struct wal_index_entry *
index_find(const struct wal *w, uint64_t op)
{
    if (w->count == 0 || op < w->first_op || op - w->first_op >= w->count)
        return NULL;
    return &w->index[op - w->first_op];
}

const struct vs_hdr_prepare *
wal_header(const struct wal *w, uint64_t op)
{
    const struct wal_index_entry *e = index_find(w, op);
    return e ? &e->header : NULL;
}

long
wal_read_body(struct wal *w, uint64_t op, void *buf, size_t cap)
{
    const struct wal_index_entry *e = index_find(w, op);
    if (!e)
        return -ENOENT;
    size_t len = e->header.f.size - VS_HEADER_SIZE;
    if (len > cap)
        return -ENOBUFS;
    int rc = sio_pread_all(w->io, w->fd, buf, len,
                           (off_t)(e->offset + VS_HEADER_SIZE), NULL);
    if (rc == -ENODATA)
        return -EIO;
    if (rc < 0)
        return rc;
    if (!body_ok(&e->header, buf, len))
        return -EIO;
    return (long)len;
}

/* wal_append (sync) and wal_append_nosync. */
static int
append_entry(struct wal *w, const struct vs_hdr_prepare *h, const void *body,
             size_t body_len, int sync)
{
    if (w->poisoned || sio_is_fatal(w->io))
        return -VS_EFATAL;
    if (w->read_only || w->fd < 0)
        return -EROFS;
    /* the journal seals the view of every format-2 entry it stores (the
     * caller may have re-stamped the view without it) */
    struct vs_hdr_prepare stored = *h;
    vs_prepare_seal_view(&stored);
    h = &stored;
    if (!structure_ok(h) || h->f.size != VS_HEADER_SIZE + body_len ||
        !w->format_known(h->f.release) || !identity_ok(h) ||
        !body_ok(h, body, body_len))
        return -EINVAL;
    if (w->count > 0) {
        const struct vs_hdr_prepare *last = &w->index[w->count - 1].header;
        if (h->op != last->op + 1 || !vs_u128_eq(h->parent, last->f.checksum))
            return -EINVAL;
    }
    uint64_t at = w->size;
    int rc =
        sio_pwrite_all(w->io, w->fd, h, VS_HEADER_SIZE, (off_t)at, w->path);
    if (rc == 0 && body_len)
        rc = sio_pwrite_all(w->io, w->fd, body, body_len,
                            (off_t)(at + VS_HEADER_SIZE), w->path);
    if (rc == -ENOSPC) {
        /* clean failure: cut the partial append back */
        int rc2 = sio_ftruncate(w->io, w->fd, (off_t)at, w->path);
        if (rc2 == 0)
            rc2 = sio_fsync(w->io, w->fd, w->path);
        if (rc2 < 0) {
            w->poisoned = 1;
            return rc2;
        }
        return -ENOSPC;
    }
    if (rc == 0 && sync)
        rc = sio_fsync(w->io, w->fd, w->path);
    if (rc == 0 && sync)
        rc = wal_mark_write(&w->mark, h->op);
    if (rc == 0) {
        vs_metrics_add(VS_M_WAL_APPENDS, 1);
        vs_metrics_add(VS_M_WAL_BYTES, VS_HEADER_SIZE + body_len);
    }
    if (rc < 0) {
        w->poisoned = 1;
        return rc;
    }
    if (w->count == w->index_cap) {
        uint64_t cap = w->index_cap ? w->index_cap * 2 : 64;
        w->index = vs_xrealloc(w->index, cap * sizeof(*w->index));
        w->index_cap = cap;
    }
    if (w->count == 0)
        w->first_op = h->op;
    w->index[w->count].offset = at;
    w->index[w->count].header = *h;
    w->count++;
    w->size = at + h->f.size;
    return 0;
}

int
wal_append(struct wal *w, const struct vs_hdr_prepare *h, const void *body,
           size_t body_len)
{
    return append_entry(w, h, body, body_len, 1);
}

int
wal_append_nosync(struct wal *w, const struct vs_hdr_prepare *h,
                  const void *body, size_t body_len)
{
    return append_entry(w, h, body, body_len, 0);
}

int
wal_sync(struct wal *w)
{
    if (w->poisoned || sio_is_fatal(w->io))
        return -VS_EFATAL;
    if (w->read_only || w->fd < 0)
        return -EROFS;
    int rc = sio_fsync(w->io, w->fd, w->path);
    /* every entry held is durable: the mark says so before any of them
     * may be acknowledged */
    if (rc == 0 && w->count > 0 &&
        (w->mark.status != WAL_MARK_OK || wal_last_op(w) > w->mark.op))
        rc = wal_mark_write(&w->mark, wal_last_op(w));
    if (rc < 0)
        w->poisoned = 1;
    return rc;
}

/* Rewrites the journal to hold exactly entries [from, from + n) (by
 * index position) through the atomic path, then swaps the fd and shifts
 * the index. */
static int
rewrite_keep(struct wal *w, uint64_t from, uint64_t n)
{
    if (w->poisoned || sio_is_fatal(w->io))
        return -VS_EFATAL;
    if (w->read_only || w->fd < 0)
        return -EROFS;
    uint64_t start = n ? w->index[from].offset : 0;
    uint64_t end =
        n ? w->index[from + n - 1].offset + w->index[from + n - 1].header.f.size
          : 0;
    struct afile_tx tx;
    int rc = afile_begin(&tx, w->io, w->dir, VS_JOURNAL_FILE);
    if (rc < 0)
        return rc;
    size_t chunk = 1u << 20;
    uint8_t *buf = vs_xmalloc(chunk);
    for (uint64_t p = start; p < end;) {
        size_t k = end - p < chunk ? (size_t)(end - p) : chunk;
        rc = sio_pread_all(w->io, w->fd, buf, k, (off_t)p, NULL);
        if (rc == 0)
            rc = afile_write(&tx, buf, k);
        if (rc < 0) {
            free(buf);
            afile_abort(&tx);
            if (rc == -VS_EFATAL)
                w->poisoned = 1;
            return rc == -ENODATA ? -EIO : rc;
        }
        p += k;
    }
    free(buf);
    rc = afile_commit(&tx);
    if (rc < 0) {
        w->poisoned = 1;
        return rc;
    }
    /* the new file is in place: switch to it */
    sio_close(w->io, w->fd);
    w->fd = sio_open(w->io, w->path, O_RDWR, 0);
    if (w->fd < 0) {
        rc = w->fd;
        w->poisoned = 1;
        return rc;
    }
    if (n && from)
        memmove(w->index, w->index + from, n * sizeof(*w->index));
    for (uint64_t i = 0; i < n; i++)
        w->index[i].offset -= start;
    w->count = n;
    w->first_op = n ? w->index[0].header.op : 0;
    w->size = end - start;
    return 0;
}

int
wal_drain(struct wal *w, uint64_t up_to_op)
{
    if (w->count == 0 || up_to_op <= w->first_op)
        return 0;
    if (up_to_op > wal_last_op(w))
        return rewrite_keep(w, 0, 0);
    uint64_t from = up_to_op - w->first_op;
    return rewrite_keep(w, from, w->count - from);
}

int
wal_drain_margin(struct wal *w, uint64_t checkpoint_op, uint64_t margin)
{
    if (w->count == 0 || checkpoint_op > wal_last_op(w))
        return wal_drain(w, checkpoint_op);
    uint64_t from = checkpoint_op > margin ? checkpoint_op - margin : 1;
    return wal_drain(w, from);
}

int
wal_truncate_from(struct wal *w, uint64_t op)
{
    if (w->count == 0 || op > wal_last_op(w))
        return 0;
    int rc = rewrite_keep(w, 0, op <= w->first_op ? 0 : op - w->first_op);
    /* ops from `op` on are gone from the durable file: new entries there
     * are above the mark until their own fsync */
    if (rc == 0 && w->mark.status == WAL_MARK_OK && w->mark.op >= op) {
        rc = wal_mark_write(&w->mark, op - 1);
        if (rc < 0)
            w->poisoned = 1;
    }
    return rc;
}

const char *
wal_verdict_name(enum wal_scan_verdict v)
{
    switch (v) {
    case WAL_CLEAN:
        return "clean";
    case WAL_TORN_TAIL:
        return "torn-tail";
    case WAL_DAMAGED_TAIL:
        return "damaged-tail";
    case WAL_INTERIOR_CORRUPT:
        return "interior-corruption";
    case WAL_CHAIN_BREAK:
        return "chain-break";
    case WAL_UNKNOWN_FORMAT:
        return "unknown-format";
    }
    return "unknown";
}
