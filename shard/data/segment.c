/*
 * shard/data/segment.c - segment files: open and recovery scans, appends,
 * index maintenance, reads.
 *
 * Recovery rules (the verdicts of partition.h, applied to the LAST segment;
 * sealed segments were fsynced when they were sealed, so any damage there
 * is interior):
 *   short header / short body at the end        -> torn: cut
 *   structurally bad header, nothing valid after -> torn: cut
 *   structurally bad header, a valid batch after
 *     it (found through the index, or under
 *     every-batch by probing every later byte
 *     offset), or under every-batch more bytes
 *     after it than one append can leave       -> interior: refuse
 *   checksum failure, the last batch            -> every-batch: refuse
 *                                                  (maybe acknowledged)
 *                                                  interval: cut
 *   checksum failure, bytes after it            -> every-batch: interior
 *                                                  (its fsync completed);
 *                                                  interval: interior if a
 *                                                  valid batch follows, else
 *                                                  cut
 *   never-written damage (unwritten.h) with whole
 *     batches after it, within the last
 *     s->unsynced_max bytes                    -> unsynced group tail: cut
 *     (only with s->unsynced_max > 0: the writer leaves several writes
 *     unsynced at once, and a power loss keeps any subset of them)
 * Invariants: see segment.h. Callers: partition.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/mem.h"
#include "shard/data/batch.h"
#include "shard/data/segment.h"
#include "shard/data/unwritten.h"
#include "shard/storage/atomic_file.h"

#define PIDX_ENTRY_SIZE 24u

int
dseg_init(struct dseg *s, const char *dir, uint64_t start)
{
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    s->idx_fd = -1;
    s->empty = 1;
    s->start = start;
    snprintf(s->log_name, sizeof(s->log_name), "%020" PRIu64 ".log", start);
    snprintf(s->idx_name, sizeof(s->idx_name), "%020" PRIu64 ".index", start);
    if (afile_join(s->log_path, sizeof(s->log_path), dir, s->log_name) < 0 ||
        afile_join(s->idx_path, sizeof(s->idx_path), dir, s->idx_name) < 0 ||
        snprintf(s->dir, sizeof(s->dir), "%s", dir) >= (int)sizeof(s->dir))
        return -ENAMETOOLONG;
    return 0;
}

int
dseg_parse_name(const char *name, uint64_t *start)
{
    size_t len = strlen(name);
    if (len != 24 || strcmp(name + 20, ".log") != 0)
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9')
            return 0;
        uint64_t d = (uint64_t)(name[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *start = v;
    return 1;
}

static void
verdict_set(struct part_verdict *v, enum part_reason r, const char *file,
            uint64_t pos, const char *what)
{
    if (!v)
        return;
    v->reason = r;
    snprintf(v->file, sizeof(v->file), "%s", file);
    v->position = pos;
    snprintf(v->msg, sizeof(v->msg), "%s at byte %" PRIu64 " of %s: %s",
             part_reason_str(r), pos, file, what);
}

static void
idx_push(struct dseg *s, uint64_t offset, uint64_t ts, uint64_t pos)
{
    if (s->nidx == s->capidx) {
        s->capidx = s->capidx ? s->capidx * 2 : 16;
        s->idx = vs_xrealloc(s->idx, s->capidx * sizeof(*s->idx));
    }
    s->idx[s->nidx].offset = offset;
    s->idx[s->nidx].timestamp = ts;
    s->idx[s->nidx].position = pos;
    s->nidx++;
}

static int
idx_due(const struct dseg *s, uint64_t pos, uint32_t interval)
{
    if (s->nidx == 0)
        return 1;
    return pos - s->idx[s->nidx - 1].position >= interval;
}

/* Accounts a verified batch at pos (header hdr). */
static void
seg_account(struct dseg *s, const uint8_t *hdr, uint64_t pos, uint32_t interval,
            int build)
{
    uint64_t base = batch_base_offset(hdr);
    uint64_t ts = batch_base_timestamp(hdr);
    if (build && idx_due(s, pos, interval))
        idx_push(s, base, ts, pos);
    if (s->empty) {
        s->first_offset = base;
        s->first_ts = ts;
        s->empty = 0;
    }
    s->last_offset = batch_last_offset(hdr);
    s->last_ts = ts;
    s->last_batch_pos = pos;
    s->size = pos + batch_length(hdr);
}

static void
idx_encode(const struct dseg *s, uint8_t *out)
{
    for (size_t i = 0; i < s->nidx; i++) {
        vs_store_u64(out + i * PIDX_ENTRY_SIZE, s->idx[i].offset);
        vs_store_u64(out + i * PIDX_ENTRY_SIZE + 8, s->idx[i].timestamp);
        vs_store_u64(out + i * PIDX_ENTRY_SIZE + 16, s->idx[i].position);
    }
}

/* Rewrites the whole .index from memory (atomic replace). */
static int
idx_rewrite(struct vs_sio *io, struct dseg *s)
{
    size_t len = s->nidx * PIDX_ENTRY_SIZE;
    uint8_t *buf = vs_xmalloc(len ? len : 1);
    idx_encode(s, buf);
    int rc = afile_replace(io, s->dir, s->idx_name, buf, len);
    free(buf);
    if (rc == 0) {
        s->idx_file_len = len;
        s->idx_stale = 0;
    }
    return rc;
}

/* Reads the .index file; *out entries (malloc'd) or NULL. Missing or
 * unreadable -> 0 entries. */
static size_t
idx_read_file(struct vs_sio *io, const struct dseg *s, struct pidx_entry **out)
{
    uint8_t *raw = NULL;
    size_t len = 0;
    *out = NULL;
    if (afile_read_all(io, s->idx_path, (size_t)1 << 34, &raw, &len) < 0)
        return 0;
    size_t n = len / PIDX_ENTRY_SIZE;
    struct pidx_entry *e = n ? vs_xmalloc(n * sizeof(*e)) : NULL;
    for (size_t i = 0; i < n; i++) {
        e[i].offset = vs_load_u64(raw + i * PIDX_ENTRY_SIZE);
        e[i].timestamp = vs_load_u64(raw + i * PIDX_ENTRY_SIZE + 8);
        e[i].position = vs_load_u64(raw + i * PIDX_ENTRY_SIZE + 16);
    }
    free(raw);
    *out = e;
    return n;
}

static int
file_size(int fd, uint64_t *size)
{
    struct stat st;
    if (fstat(fd, &st) == -1)
        return -errno;
    *size = (uint64_t)st.st_size;
    return 0;
}

int
dseg_create(struct vs_sio *io, struct dseg *s)
{
    int rc;
    s->fd = sio_open(io, s->log_path, O_CREAT | O_RDWR, 0600);
    if (s->fd < 0) {
        rc = s->fd;
        s->fd = -1;
        goto fail;
    }
    uint64_t sz = 0;
    rc = file_size(s->fd, &sz);
    if (rc < 0)
        goto fail;
    if (sz != 0) {
        rc = -EEXIST;
        goto fail;
    }
    s->idx_fd = sio_open(io, s->idx_path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (s->idx_fd < 0) {
        rc = s->idx_fd;
        s->idx_fd = -1;
        goto fail;
    }
    s->size = 0;
    s->empty = 1;
    s->nidx = 0;
    s->idx_file_len = 0;
    return 0;
fail:
    sio_close(io, s->fd);
    s->fd = -1;
    return rc;
}

/* Validates the header at pos against the walk's expectations. */
static int
hdr_ok(const uint8_t *hdr, uint64_t expect_min, uint64_t rem)
{
    if (batch_header_check(hdr) != BATCH_OK)
        return 0;
    if (batch_base_offset(hdr) < expect_min)
        return 0;
    if (batch_length(hdr) > rem)
        return 0;
    if (batch_base_offset(hdr) > UINT64_MAX - batch_count(hdr))
        return 0;
    return 1;
}

/* Walks headers of a sealed log from `pos` (entries pushed if `build`). */
static int
walk_headers(struct vs_sio *io, int fd, struct dseg *s, uint64_t pos,
             uint64_t fsize, uint64_t expect, uint32_t interval, int build,
             struct part_verdict *v)
{
    uint8_t hdr[BATCH_HEADER_SIZE];
    while (pos < fsize) {
        if (fsize - pos < BATCH_HEADER_SIZE) {
            verdict_set(v, PART_R_INTERIOR_DAMAGE, s->log_name, pos,
                        "sealed segment ends inside a batch header");
            return -EBADMSG;
        }
        int rc = sio_pread_all(io, fd, hdr, sizeof(hdr), (off_t)pos, NULL);
        if (rc < 0)
            return rc;
        if (!hdr_ok(hdr, expect, fsize - pos)) {
            verdict_set(v, PART_R_INTERIOR_DAMAGE, s->log_name, pos,
                        "invalid batch header in a sealed segment");
            return -EBADMSG;
        }
        seg_account(s, hdr, pos, interval, build);
        expect = batch_last_offset(hdr) + 1;
        pos += batch_length(hdr);
    }
    return 0;
}

/* Strictly increasing positions and offsets, non-decreasing times. */
static int
idx_monotonic(const struct pidx_entry *e, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (e[i].position <= e[i - 1].position ||
            e[i].offset <= e[i - 1].offset ||
            e[i].timestamp < e[i - 1].timestamp)
            return 0;
    return 1;
}

static int
idx_consistent(const struct pidx_entry *e, size_t n, uint64_t fsize,
               uint64_t start)
{
    if (n == 0 || e[0].position != 0 || e[0].offset < start)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if (e[i].position <= e[i - 1].position ||
            e[i].offset <= e[i - 1].offset ||
            e[i].timestamp < e[i - 1].timestamp)
            return 0;
    }
    return e[n - 1].position < fsize;
}

int
dseg_load_sealed(struct vs_sio *io, struct dseg *s, uint32_t interval,
                 uint64_t expect_min, struct part_verdict *v)
{
    int fd = sio_open(io, s->log_path, O_RDONLY, 0);
    if (fd < 0)
        return fd;
    uint64_t fsize = 0;
    struct pidx_entry *fe = NULL;
    int rc = file_size(fd, &fsize);
    if (rc < 0)
        goto out;
    if (expect_min < s->start)
        expect_min = s->start;
    if (fsize == 0)
        goto out; /* an empty sealed segment: nothing to account */
    size_t fn = idx_read_file(io, s, &fe);
    int trusted = 0;
    if (idx_consistent(fe, fn, fsize, s->start)) {
        /* Check the first and last entries against the log, then walk
         * after the last one. */
        uint8_t h0[BATCH_HEADER_SIZE], hl[BATCH_HEADER_SIZE];
        if (sio_pread_all(io, fd, h0, sizeof(h0), 0, NULL) == 0 &&
            sio_pread_all(io, fd, hl, sizeof(hl), (off_t)fe[fn - 1].position,
                          NULL) == 0 &&
            hdr_ok(h0, expect_min, fsize) &&
            batch_base_offset(h0) == fe[0].offset &&
            batch_base_timestamp(h0) == fe[0].timestamp &&
            hdr_ok(hl, fe[0].offset, fsize - fe[fn - 1].position) &&
            batch_base_offset(hl) == fe[fn - 1].offset &&
            batch_base_timestamp(hl) == fe[fn - 1].timestamp)
            trusted = 1;
        if (trusted) {
            s->idx = fe;
            s->nidx = s->capidx = fn;
            fe = NULL;
            s->empty = 0;
            s->first_offset = batch_base_offset(h0);
            s->first_ts = batch_base_timestamp(h0);
            s->idx_file_len = fn * PIDX_ENTRY_SIZE;
            rc = walk_headers(io, fd, s, s->idx[fn - 1].position, fsize,
                              s->idx[fn - 1].offset, interval, 0, v);
            goto out;
        }
    }
    /* No usable index: walk the whole log; the index is rebuilt in memory
     * and rewritten by dseg_seal once the whole partition has checked
     * out, so a refusal of a later segment leaves every file as it was. */
    s->nidx = 0;
    rc = walk_headers(io, fd, s, 0, fsize, expect_min, interval, 1, v);
    if (rc == 0 && !s->read_only)
        s->idx_stale = 1; /* rewritten once every segment checked out */
out:
    free(fe);
    sio_close(io, fd);
    return rc;
}

/* 1 if a complete valid stamped batch lies at pos. */
static int
valid_batch_at(struct vs_sio *io, int fd, uint64_t pos, uint64_t fsize,
               uint64_t expect_min)
{
    uint8_t hdr[BATCH_HEADER_SIZE];
    if (pos >= fsize || fsize - pos < BATCH_HEADER_SIZE)
        return 0;
    if (sio_pread_all(io, fd, hdr, sizeof(hdr), (off_t)pos, NULL) < 0)
        return 0;
    if (!hdr_ok(hdr, expect_min, fsize - pos))
        return 0;
    size_t blen = (size_t)batch_length(hdr);
    uint8_t *b = malloc(blen);
    if (!b)
        return 0;
    int ok = sio_pread_all(io, fd, b, blen, (off_t)pos, NULL) == 0;
    struct batch_limits lim = {UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
    if (ok)
        ok = batch_validate(b, blen, &lim, 0, NULL) == BATCH_OK;
    free(b);
    return ok;
}

/* 1 if hdr is a valid batch header at or above expect_min declaring more
 * bytes than the rem left in the file (a last batch cut short). */
static int
cut_by_end(const uint8_t *hdr, uint64_t expect_min, uint64_t rem)
{
    return batch_header_check(hdr) == BATCH_OK &&
           batch_base_offset(hdr) >= expect_min && batch_length(hdr) > rem;
}

/* The unsynced group tail (segment.h, dseg_load_active): the damage at
 * pos (the batch expected there starts at offset `expect`) and every byte
 * after it, up to fsize, are never-written stretches and whole batches:
 * each damaged stretch has the never-written shape and ends where a
 * complete valid batch of a higher offset starts (at any byte: a lost
 * batch has no header to measure it by), valid batches follow each other
 * at increasing offsets, and a last damaged stretch runs to the end.
 * Returns 1 if the tail has that shape within s->unsynced_max bytes, 0
 * with `why` saying what does not fit, -errno on a read error. */
static int
unsynced_tail(struct vs_sio *io, struct dseg *s, uint64_t pos, uint64_t fsize,
              uint64_t expect, char *why, size_t why_len)
{
    uint64_t tail = fsize - pos;
    if (tail > s->unsynced_max || tail > DSEG_UNSYNCED_SCAN_MAX) {
        snprintf(why, why_len,
                 "%" PRIu64 " bytes follow it, more than the %" PRIu64
                 " the writer can leave unsynced",
                 tail, s->unsynced_max);
        return 0;
    }
    uint8_t *b = vs_xmalloc(tail ? (size_t)tail : 1);
    int rc = sio_pread_all(io, s->fd, b, (size_t)tail, (off_t)pos, NULL);
    if (rc < 0) {
        free(b);
        return rc;
    }
    struct batch_limits lim = {UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
    uint64_t d = 0; /* start of the damaged stretch, relative to pos */
    int fits = 1;
    while (fits && d < tail) {
        /* the next complete valid batch above `expect` after d */
        uint64_t q = d + 1;
        for (; q + BATCH_HEADER_SIZE <= tail; q++) {
            const uint8_t *h = b + q;
            if (hdr_ok(h, expect + 1, tail - q) &&
                batch_validate(h, (size_t)batch_length(h), &lim, 0, NULL) ==
                    BATCH_OK)
                break;
            /* a header has no checksum of its own: a last batch cut by
             * the end counts only after never-written bytes */
            if (cut_by_end(h, expect + 1, tail - q) &&
                unwritten_shape(b + d, (size_t)(q - d), pos + d))
                break;
        }
        if (q + BATCH_HEADER_SIZE > tail)
            q = tail;
        /* a stretch to the end shorter than a header: the file ends
         * inside the header of the last write */
        int short_end = q == tail && tail - d < BATCH_HEADER_SIZE;
        if (!short_end && !unwritten_shape(b + d, (size_t)(q - d), pos + d)) {
            snprintf(why, why_len,
                     "the damaged bytes at %" PRIu64
                     " are not of the never-written shape (non-zero damage)",
                     pos + d);
            fits = 0;
            break;
        }
        /* whole batches from q on */
        d = q;
        while (d < tail) {
            const uint8_t *h = b + d;
            if (tail - d >= BATCH_HEADER_SIZE &&
                cut_by_end(h, expect, tail - d)) {
                d = tail; /* the file ends inside it: torn */
                break;
            }
            if (tail - d < BATCH_HEADER_SIZE || !hdr_ok(h, expect, tail - d) ||
                batch_validate(h, (size_t)batch_length(h), &lim, 0, NULL) !=
                    BATCH_OK)
                break;
            expect = batch_last_offset(h) + 1;
            d += batch_length(h);
        }
    }
    free(b);
    return fits;
}

/* Under fsync-every-batch a torn append leaves at most one batch after
 * the last durable one: more trailing bytes than the largest frame, or a
 * complete valid batch at ANY later byte offset, means the bad header at
 * `pos` hides acknowledged batches behind it (bit rot, not a torn write).
 * Returns 1 if so, 0 if the tail may be cut, -errno on a read error. */
static int
acked_data_after(struct vs_sio *io, int fd, uint64_t pos, uint64_t fsize,
                 uint64_t expect)
{
    uint64_t tail = fsize - pos;
    if (tail > VS_FRAME_MAX)
        return 1;
    uint8_t *buf = malloc((size_t)tail);
    if (buf == NULL)
        return -ENOMEM;
    int rc = sio_pread_all(io, fd, buf, (size_t)tail, (off_t)pos, NULL);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    struct batch_limits lim = {UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
    int found = 0;
    for (uint64_t off = 1; !found && off + BATCH_HEADER_SIZE <= tail; off++) {
        const uint8_t *h = buf + off;
        if (!hdr_ok(h, expect, tail - off))
            continue;
        found = batch_validate(h, (size_t)batch_length(h), &lim, 0, NULL) ==
                BATCH_OK;
    }
    free(buf);
    return found;
}

/* 0 if the tail from `pos` may be cut as torn; -EBADMSG (verdict set)
 * if under fsync-every-batch acknowledged batches lie behind it. */
static int
tail_cut_allowed(struct vs_sio *io, struct dseg *s, uint64_t pos,
                 uint64_t fsize, uint64_t expect, enum part_durability policy,
                 int cut_damaged_tail, struct part_verdict *v)
{
    if (policy != PART_FSYNC_EVERY_BATCH || cut_damaged_tail)
        return 0;
    int rc = acked_data_after(io, s->fd, pos, fsize, expect);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return 0;
    verdict_set(v, PART_R_INTERIOR_DAMAGE, s->log_name, pos,
                "invalid batch header with acknowledged data after it");
    return -EBADMSG;
}

/* 1 (s->unsynced_cut set) if the damage at pos starts an unsynced group
 * tail to cut; 0 if not (why[] says why when the rule applied, else
 * empty), -errno. */
static int
group_tail_cut(struct vs_sio *io, struct dseg *s, uint64_t pos, uint64_t fsize,
               uint64_t expect, char why[200])
{
    why[0] = 0;
    if (s->unsynced_max == 0)
        return 0;
    int rc = unsynced_tail(io, s, pos, fsize, expect, why, 200);
    if (rc == 1) {
        s->unsynced_cut = 1;
        s->unsynced_cut_pos = pos;
    }
    return rc;
}

/* An interior-damage refusal: `what`, then the group-tail rule's reason
 * for not cutting, if it applied. */
static void
interior(struct part_verdict *v, const struct dseg *s, uint64_t pos,
         const char *what, const char *why)
{
    char m[400];
    snprintf(m, sizeof(m), "%s%s%s", what,
             why[0] ? "; not an unsynced tail: " : "", why);
    verdict_set(v, PART_R_INTERIOR_DAMAGE, s->log_name, pos, m);
}

int
dseg_load_active(struct vs_sio *io, struct dseg *s, uint32_t interval,
                 uint64_t expect_min, enum part_durability policy,
                 int cut_damaged_tail, uint64_t written_floor,
                 struct part_verdict *v)
{
    struct batch_limits lim = {UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
    uint8_t *buf = NULL;
    size_t cap = 0;
    struct pidx_entry *fe = NULL;
    int rc;
    s->fd = sio_open(io, s->log_path, s->read_only ? O_RDONLY : O_RDWR, 0);
    if (s->fd < 0) {
        rc = s->fd;
        s->fd = -1;
        return rc;
    }
    uint64_t fsize = 0;
    rc = file_size(s->fd, &fsize);
    if (rc < 0)
        goto fail;
    if (expect_min < s->start)
        expect_min = s->start;
    size_t fn = idx_read_file(io, s, &fe);
    uint64_t pos = 0, expect = expect_min;
    uint64_t cut = UINT64_MAX;
    char why[200] = "";
    s->nidx = 0;
    s->unsynced_cut = 0;
    while (pos < fsize) {
        uint64_t rem = fsize - pos;
        uint8_t hdr[BATCH_HEADER_SIZE];
        if (rem < BATCH_HEADER_SIZE) {
            cut = pos; /* short header */
            break;
        }
        rc = sio_pread_all(io, s->fd, hdr, sizeof(hdr), (off_t)pos, NULL);
        if (rc < 0)
            goto fail;
        if (batch_header_check(hdr) != BATCH_OK ||
            batch_base_offset(hdr) < expect ||
            batch_base_offset(hdr) > UINT64_MAX - batch_count(hdr)) {
            /* Structurally bad: an unsynced group tail, or torn unless
             * the old index knows a valid batch after it. */
            if ((rc = group_tail_cut(io, s, pos, fsize, expect, why)) != 0) {
                if (rc < 0)
                    goto fail;
                cut = pos; /* an unsynced group tail */
                break;
            }
            for (size_t i = 0; i < fn; i++) {
                if (fe[i].position > pos &&
                    valid_batch_at(io, s->fd, fe[i].position, fsize, expect)) {
                    interior(v, s, pos,
                             "invalid batch header before valid batches", why);
                    rc = -EBADMSG;
                    goto fail;
                }
            }
            rc = tail_cut_allowed(io, s, pos, fsize, expect, policy,
                                  cut_damaged_tail, v);
            if (rc < 0)
                goto fail;
            cut = pos;
            break;
        }
        uint64_t blen = batch_length(hdr);
        if (blen > rem) {
            /* short body: the file ends inside the batch (or its length
             * field rotted: the same probe tells the two apart) */
            rc = tail_cut_allowed(io, s, pos, fsize, expect, policy,
                                  cut_damaged_tail, v);
            if (rc < 0)
                goto fail;
            cut = pos;
            break;
        }
        if (blen > cap) {
            cap = (size_t)blen;
            free(buf);
            buf = malloc(cap);
            if (!buf) {
                rc = -ENOMEM;
                goto fail;
            }
        }
        rc = sio_pread_all(io, s->fd, buf, (size_t)blen, (off_t)pos, NULL);
        if (rc < 0)
            goto fail;
        enum batch_err be = batch_validate(buf, (size_t)blen, &lim, 0, NULL);
        if (be != BATCH_OK) {
            char what[160];
            snprintf(what, sizeof(what), "%s (batch at offset %" PRIu64 ")",
                     batch_err_str(be), batch_base_offset(hdr));
            if (pos + blen == fsize) {
                if (policy == PART_FSYNC_EVERY_BATCH && !cut_damaged_tail) {
                    verdict_set(v, PART_R_TAIL_CHECKSUM, s->log_name, pos,
                                what);
                    rc = -EBADMSG;
                    goto fail;
                }
                cut = pos;
                break;
            }
            if ((rc = group_tail_cut(io, s, pos, fsize, expect, why)) != 0) {
                if (rc < 0)
                    goto fail;
                cut = pos; /* an unsynced group tail */
                break;
            }
            if (policy == PART_FSYNC_EVERY_BATCH ||
                valid_batch_at(io, s->fd, pos + blen, fsize,
                               batch_last_offset(hdr) + 1)) {
                interior(v, s, pos, what, why);
                rc = -EBADMSG;
                goto fail;
            }
            cut = pos;
            break;
        }
        seg_account(s, buf, pos, interval, 1);
        expect = batch_last_offset(buf) + 1;
        pos += blen;
    }
    /* Under every-batch an index entry was written after its batch and
     * the batch fsynced before the next append began: an old entry past
     * the valid end -- other than a last one at exactly the end, the torn
     * batch's own -- proves acknowledged batches are missing. An index
     * that is not monotonic is no evidence (it is rebuilt). */
    uint64_t vend = cut != UINT64_MAX ? cut : fsize;
    if (policy == PART_FSYNC_EVERY_BATCH && !cut_damaged_tail && fn > 0 &&
        idx_monotonic(fe, fn)) {
        for (size_t i = 0; i < fn; i++) {
            if (fe[i].position > vend ||
                (fe[i].position == vend && i + 1 < fn)) {
                char what[200];
                snprintf(what, sizeof(what),
                         "the index records a batch at position %" PRIu64
                         " (offset %" PRIu64 ") but the log's valid data "
                         "ends at %" PRIu64,
                         fe[i].position, fe[i].offset, vend);
                verdict_set(v, PART_R_TRUNCATED, s->log_name, vend, what);
                rc = -EBADMSG;
                goto fail;
            }
        }
    }
    /* the floor is written only by a clean close (= the next offset) or a
     * purge under every-batch: never ahead of acknowledged data */
    uint64_t vend_off = s->empty ? s->start : expect;
    if (policy == PART_FSYNC_EVERY_BATCH && !cut_damaged_tail &&
        vend_off < written_floor) {
        char what[200];
        snprintf(what, sizeof(what),
                 "the log ends at offset %" PRIu64 " but offsets up to %" PRIu64
                 " were written (the state at the last clean close)",
                 vend_off, written_floor - 1);
        verdict_set(v, PART_R_TRUNCATED, s->log_name, vend, what);
        rc = -EBADMSG;
        goto fail;
    }
    if (cut != UINT64_MAX && !s->read_only) {
        rc = sio_ftruncate(io, s->fd, (off_t)cut, s->log_path);
        if (rc == 0)
            rc = sio_fsync(io, s->fd, s->log_path);
        if (rc < 0)
            goto fail;
    }
    s->size = cut != UINT64_MAX ? cut : fsize;
    if (s->read_only) { /* the verdict is all inspection needs */
        free(buf);
        free(fe);
        return 0;
    }
    /* Keep the index file when it matches the rebuilt one exactly. */
    int same = fn == s->nidx;
    for (size_t i = 0; same && i < fn; i++)
        same = fe[i].offset == s->idx[i].offset &&
               fe[i].timestamp == s->idx[i].timestamp &&
               fe[i].position == s->idx[i].position;
    if (!same) {
        rc = idx_rewrite(io, s);
        if (rc < 0)
            goto fail;
    } else {
        s->idx_file_len = fn * PIDX_ENTRY_SIZE;
        /* a trailing partial entry, if any, is cut by the O_WRONLY pwrite
         * position: entries are always written at idx_file_len */
    }
    s->idx_fd = sio_open(io, s->idx_path, O_CREAT | O_WRONLY, 0600);
    if (s->idx_fd < 0) {
        rc = s->idx_fd;
        s->idx_fd = -1;
        goto fail;
    }
    rc = sio_ftruncate(io, s->idx_fd, (off_t)s->idx_file_len, s->idx_path);
    if (rc < 0)
        goto fail;
    free(buf);
    free(fe);
    return 0;
fail:
    free(buf);
    free(fe);
    sio_close(io, s->fd);
    s->fd = -1;
    sio_close(io, s->idx_fd);
    s->idx_fd = -1;
    return rc;
}

int
dseg_append(struct vs_sio *io, struct dseg *s, const uint8_t *batch, size_t len,
            uint32_t interval)
{
    uint64_t pos = s->size;
    int rc = sio_pwrite_all(io, s->fd, batch, len, (off_t)pos, s->log_path);
    if (rc == -ENOSPC) {
        /* Cut the partial write back; a failing cut is fatal. */
        int rc2 = sio_ftruncate(io, s->fd, (off_t)pos, s->log_path);
        return rc2 < 0 ? rc2 : -ENOSPC;
    }
    if (rc < 0)
        return rc;
    return dseg_append_written(io, s, batch, len, interval);
}

/* The accounting half of dseg_append, also called on its own once a
 * batch written by another thread landed at s->size (partition.c's
 * part_append_end). */
int
dseg_append_written(struct vs_sio *io, struct dseg *s, const uint8_t *batch,
                    size_t len, uint32_t interval)
{
    (void)len;
    uint64_t pos = s->size;
    int rc;
    size_t before = s->nidx;
    seg_account(s, batch, pos, interval, 1);
    if (s->nidx > before && !s->idx_stale) {
        uint8_t e[PIDX_ENTRY_SIZE];
        vs_store_u64(e, s->idx[s->nidx - 1].offset);
        vs_store_u64(e + 8, s->idx[s->nidx - 1].timestamp);
        vs_store_u64(e + 16, s->idx[s->nidx - 1].position);
        rc = sio_pwrite_all(io, s->idx_fd, e, sizeof(e), (off_t)s->idx_file_len,
                            s->idx_path);
        if (rc == -ENOSPC) {
            /* The log is written; the index is an accelerator: cut the
             * partial entry, mark it stale, rebuild it later. */
            rc = sio_ftruncate(io, s->idx_fd, (off_t)s->idx_file_len,
                               s->idx_path);
            if (rc < 0)
                return rc;
            s->idx_stale = 1;
            return 0;
        }
        if (rc < 0)
            return rc;
        s->idx_file_len += PIDX_ENTRY_SIZE;
    }
    return 0;
}

int
dseg_sync(struct vs_sio *io, struct dseg *s, int with_index)
{
    int rc = sio_fsync(io, s->fd, s->log_path);
    if (rc == 0 && with_index && s->idx_fd >= 0)
        rc = sio_fsync(io, s->idx_fd, s->idx_path);
    return rc;
}

int
dseg_seal(struct vs_sio *io, struct dseg *s)
{
    int rc = 0;
    if (s->idx_stale)
        rc = idx_rewrite(io, s);
    sio_close(io, s->fd);
    s->fd = -1;
    sio_close(io, s->idx_fd);
    s->idx_fd = -1;
    return rc;
}

void
dseg_fini(struct vs_sio *io, struct dseg *s)
{
    sio_close(io, s->fd);
    s->fd = -1;
    sio_close(io, s->idx_fd);
    s->idx_fd = -1;
    free(s->idx);
    s->idx = NULL;
    s->nidx = s->capidx = 0;
}

int
dseg_unlink(struct vs_sio *io, struct dseg *s)
{
    int rc = sio_unlink(io, s->log_path);
    if (rc < 0 && rc != -ENOENT)
        return rc;
    rc = sio_unlink(io, s->idx_path);
    if (rc < 0 && rc != -ENOENT)
        return rc;
    return 0;
}

uint64_t
dseg_pos_for_offset(const struct dseg *s, uint64_t offset)
{
    size_t lo = 0, hi = s->nidx; /* first entry with offset > target */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->idx[mid].offset <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? 0 : s->idx[lo - 1].position;
}

uint64_t
dseg_pos_for_timestamp(const struct dseg *s, uint64_t ts)
{
    size_t lo = 0, hi = s->nidx; /* first entry with timestamp >= ts */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->idx[mid].timestamp < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? 0 : s->idx[lo - 1].position;
}

int
dseg_read(struct vs_sio *io, const struct dseg *s, uint64_t pos, void *buf,
          size_t len, int *fdc)
{
    int fd = s->fd;
    if (fd < 0) {
        if (*fdc < 0) {
            *fdc = sio_open(io, s->log_path, O_RDONLY, 0);
            if (*fdc < 0) {
                int rc = *fdc;
                *fdc = -1;
                return rc;
            }
        }
        fd = *fdc;
    }
    if (pos > s->size || len > s->size - pos)
        return -ERANGE;
    return sio_pread_all(io, fd, buf, len, (off_t)pos, NULL);
}

void
dseg_fd_release(struct vs_sio *io, const struct dseg *s, int *fdc)
{
    (void)s;
    sio_close(io, *fdc);
    *fdc = -1;
}
