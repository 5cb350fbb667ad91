/*
 * shard/data/pjournal.c - a replicated partition's journal: .vsr records
 * beside the segments' .log batches, and the partition superblock
 * vsr_state (layouts and recovery rules in pjournal.h).
 *
 * Invariants:
 *  - ents[0..nents) are consecutive ops ending at head, each with where
 *    its record and body lie; only the newest ones are kept in memory
 *    (at least window + 1, every op above the commit among them);
 *  - the current .vsr file (cur) is the active segment's; records are
 *    written at its end, the batch of a batch op before its record;
 *  - a .vsr file that stops being current is fsynced first (as the
 *    partition fsyncs a segment it seals).
 * Process: the owning data shard's loop thread; tests.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/mem.h"
#include "shard/data/batch.h"
#include "shard/data/pjournal.h"
#include "shard/data/unwritten.h"
#include "shard/storage/atomic_file.h"

#define PJ_STATE_FILE "vsr_state"
#define PJ_SLOT_SIZE  128u
#define PJ_PATH_MAX   700

struct pj_ent {
    uint64_t op;
    struct vs_u128 checksum; /* identity */
    uint64_t vsr_start;      /* .vsr file (segment start) of the record */
    uint64_t rec_pos;        /* record position in it */
    uint32_t rec_len;
    uint32_t body_len;
    int batch;                 /* body in the .log */
    struct part_log_pos where; /* batch ops */
    uint64_t offset_before;    /* partition next offset before the op */
    uint64_t offset_after;     /* and after it */
};

struct vs_pjournal {
    struct vs_part *p;
    struct vs_sio *io;
    uint32_t window;
    struct pj_ent *ents;
    size_t nents, capents;
    uint64_t head;
    struct vs_u128 head_checksum;
    uint64_t commit;
    uint64_t durable; /* highest op covered by a completed sync */
    uint64_t appends; /* pj_append calls that returned 0 */
    /* the current .vsr file */
    int cur_fd;
    uint64_t cur_start, cur_size;
    char cur_path[PJ_PATH_MAX];
    /* superblock */
    int state_fd;
    uint64_t state_seq;
    char state_path[PJ_PATH_MAX];
};

void
pj_recovered_free(struct pj_recovered *r)
{
    if (!r)
        return;
    free(r->headers);
    r->headers = NULL;
    r->count = 0;
}

int
pj_is_batch_op(uint8_t operation)
{
    return operation == VS_OP_SEND_MESSAGES;
}

static uint32_t
pad8(uint32_t n)
{
    return (n + 7u) & ~7u;
}

static int
vsr_path(char *out, size_t cap, const char *dir, uint64_t start)
{
    int n = snprintf(out, cap, "%s/%020" PRIu64 ".vsr", dir, start);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static void
prefix_encode(uint8_t out[PJ_RECORD_PREFIX], uint64_t op, uint32_t rec_len)
{
    vs_store_u64(out, op);
    vs_store_u32(out + 8, rec_len);
    vs_store_u32(out + 12, (uint32_t)vs_xxh3_64(out, 12));
}

static int
prefix_ok(const uint8_t in[PJ_RECORD_PREFIX])
{
    uint32_t len = vs_load_u32(in + 8);
    return vs_load_u32(in + 12) == (uint32_t)vs_xxh3_64(in, 12) &&
           len >= PJ_RECORD_PREFIX + sizeof(struct vs_hdr_prepare) &&
           len <= PJ_RECORD_PREFIX + sizeof(struct vs_hdr_prepare) +
                      PJ_INLINE_MAX &&
           len % 8 == 0;
}

static struct pj_ent *
ent_of(struct vs_pjournal *j, uint64_t op)
{
    if (j->nents == 0 || op < j->ents[0].op || op > j->head)
        return NULL;
    return &j->ents[op - j->ents[0].op];
}

static struct pj_ent *
ent_push(struct vs_pjournal *j)
{
    if (j->nents == j->capents) {
        j->capents = j->capents ? j->capents * 2 : 64;
        j->ents = vs_xrealloc(j->ents, j->capents * sizeof(*j->ents));
    }
    struct pj_ent *e = &j->ents[j->nents++];
    memset(e, 0, sizeof(*e));
    return e;
}

/* Keeps the newest window + 1 entries and every one above the commit. */
static void
ents_trim(struct vs_pjournal *j)
{
    size_t keep = (size_t)j->window + 1;
    if (j->nents <= 2 * keep)
        return;
    size_t drop = j->nents - keep;
    /* every op above the commit stays (truncation and repair need it) */
    uint64_t above =
        j->commit + 1 > j->ents[0].op ? j->commit + 1 - j->ents[0].op : 0;
    if (drop > above)
        drop = (size_t)above;
    if (drop == 0)
        return;
    memmove(j->ents, j->ents + drop, (j->nents - drop) * sizeof(*j->ents));
    j->nents -= drop;
}

/* ---- superblock ---- */

static void
slot_encode(uint8_t b[PJ_SLOT_SIZE], uint64_t seq, const struct pj_state *s)
{
    memset(b, 0, PJ_SLOT_SIZE);
    memcpy(b, "VSPJ", 4);
    vs_store_u32(b + 4, PJ_STATE_VERSION);
    vs_store_u64(b + 8, seq);
    vs_store_u32(b + 16, s->view);
    vs_store_u32(b + 20, s->log_view);
    vs_store_u64(b + 24, s->commit_max);
    vs_store_u64(b + 32, s->offset_frontier);
    vs_store_u64(b + 40, s->faulty_op);
    vs_store_u64(b + 48, s->checkpoint_op);
    vs_store_u64(b + 56, s->checkpoint_checksum.lo);
    vs_store_u64(b + 64, s->checkpoint_checksum.hi);
    vs_store_u64(b + 72, s->nonack_op);
    vs_store_u64(b + PJ_SLOT_SIZE - 8, vs_xxh3_64(b, PJ_SLOT_SIZE - 8));
}

static int
slot_decode(const uint8_t b[PJ_SLOT_SIZE], uint64_t *seq, struct pj_state *s)
{
    if (memcmp(b, "VSPJ", 4) != 0 ||
        vs_load_u64(b + PJ_SLOT_SIZE - 8) != vs_xxh3_64(b, PJ_SLOT_SIZE - 8) ||
        vs_load_u32(b + 4) != PJ_STATE_VERSION)
        return 0;
    *seq = vs_load_u64(b + 8);
    s->view = vs_load_u32(b + 16);
    s->log_view = vs_load_u32(b + 20);
    s->commit_max = vs_load_u64(b + 24);
    s->offset_frontier = vs_load_u64(b + 32);
    s->faulty_op = vs_load_u64(b + 40);
    s->checkpoint_op = vs_load_u64(b + 48);
    s->checkpoint_checksum.lo = vs_load_u64(b + 56);
    s->checkpoint_checksum.hi = vs_load_u64(b + 64);
    s->nonack_op = vs_load_u64(b + 72);
    if (s->nonack_op > s->faulty_op)
        return 0; /* the engine's rule: never-nacked within the range */
    return 1;
}

static void verdict(struct part_verdict *v, const struct vs_part *p,
                    enum part_reason reason, const char *file, uint64_t pos,
                    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void
verdict(struct part_verdict *v, const struct vs_part *p,
        enum part_reason reason, const char *file, uint64_t pos,
        const char *fmt, ...)
{
    if (!v)
        return;
    const struct part_id *id = part_ident(p);
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    v->reason = reason;
    snprintf(v->file, sizeof(v->file), "%s", file);
    v->position = pos;
    snprintf(v->msg, sizeof(v->msg),
             "partition %" PRIu32 ".%" PRIu32 ".%" PRIu32 "@%" PRIu64
             ": %s at byte %" PRIu64 " of %s: %s",
             id->stream_id, id->topic_id, id->partition_id, id->created_op,
             part_reason_str(reason), pos, file, what);
}

/* Reads vsr_state: 0 (*present says whether the file exists), or
 * -EBADMSG when both slots fail. */
static int
state_load(struct vs_pjournal *j, struct pj_state *s, int *present,
           struct part_verdict *v)
{
    memset(s, 0, sizeof(*s));
    *present = 0;
    int fd = sio_open(j->io, j->state_path, O_RDWR, 0);
    if (fd == -ENOENT)
        return 0;
    if (fd < 0)
        return fd;
    *present = 1;
    j->state_fd = fd;
    uint8_t b[2 * PJ_SLOT_SIZE];
    size_t got = 0;
    int rc = sio_pread_all(j->io, fd, b, sizeof(b), 0, &got);
    if (rc < 0 && rc != -ENODATA)
        return rc;
    if (got < sizeof(b))
        memset(b + got, 0, sizeof(b) - got);
    struct pj_state st[2];
    uint64_t seq[2] = {0, 0};
    int ok[2];
    for (int i = 0; i < 2; i++)
        ok[i] = slot_decode(b + i * PJ_SLOT_SIZE, &seq[i], &st[i]);
    if (!ok[0] && !ok[1]) {
        verdict(v, j->p, PART_R_BAD_STATE, PJ_STATE_FILE, 0,
                "both superblock slots fail their checksum");
        return -EBADMSG;
    }
    int w = !ok[0] ? 1 : !ok[1] ? 0 : seq[1] > seq[0] ? 1 : 0;
    *s = st[w];
    j->state_seq = seq[w];
    return 0;
}

int
pj_state_format(struct vs_sio *io, const char *dir)
{
    char path[PJ_PATH_MAX];
    int rc = afile_join(path, sizeof(path), dir, PJ_STATE_FILE);
    if (rc < 0)
        return rc;
    struct pj_state zero;
    memset(&zero, 0, sizeof(zero));
    uint8_t img[2 * PJ_SLOT_SIZE];
    memset(img, 0, sizeof(img));
    slot_encode(img + PJ_SLOT_SIZE, 1, &zero); /* seq 1 lives in slot 1 */
    int fd = sio_open(io, path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return fd;
    rc = sio_pwrite_all(io, fd, img, sizeof(img), 0, path);
    if (rc == 0)
        rc = sio_fsync(io, fd, path);
    sio_close(io, fd);
    return rc;
}

int
pj_state_write(struct vs_pjournal *j, const struct pj_state *s)
{
    int fd = -1;
    int rc = pj_state_write_nosync(j, s, &fd);
    if (rc == 1)
        rc = sio_fsync(j->io, fd, j->state_path);
    return rc < 0 ? rc : 0;
}

int
pj_state_write_nosync(struct vs_pjournal *j, const struct pj_state *s,
                      int *fd_out)
{
    *fd_out = -1;
    if (sio_is_fatal(j->io))
        return -VS_EFATAL;
    int rc;
    uint8_t b[PJ_SLOT_SIZE];
    uint64_t seq = j->state_seq + 1;
    slot_encode(b, seq, s);
    if (j->state_fd < 0) {
        /* the first write creates the file whole (temp, fsync, rename,
         * directory fsync): a crash leaves it absent or with one valid
         * slot, never a file without one */
        uint8_t img[2 * PJ_SLOT_SIZE];
        memset(img, 0, sizeof(img));
        memcpy(img + (seq & 1) * PJ_SLOT_SIZE, b, PJ_SLOT_SIZE);
        rc = afile_replace(j->io, part_dir(j->p), PJ_STATE_FILE, img,
                           sizeof(img));
        if (rc == -ENOSPC)
            rc = sio_set_fatal(j->io, SIO_WRITE, ENOSPC, j->state_path);
        if (rc < 0)
            return rc;
        int fd = sio_open(j->io, j->state_path, O_RDWR, 0);
        if (fd < 0)
            return sio_set_fatal(j->io, SIO_OPEN, -fd, j->state_path);
        j->state_fd = fd;
        j->state_seq = seq;
        return 0;
    }
    rc = sio_pwrite_all(j->io, j->state_fd, b, sizeof(b),
                        (off_t)((seq & 1) * PJ_SLOT_SIZE), j->state_path);
    if (rc == -ENOSPC) /* the slot lies inside the file after the first
                          two writes; a first write out of space is fatal */
        rc = sio_set_fatal(j->io, SIO_WRITE, ENOSPC, j->state_path);
    if (rc < 0)
        return rc;
    /* the next write takes the other slot: this one stays the newest
     * valid slot whether or not its fsync completes */
    j->state_seq = seq;
    *fd_out = j->state_fd;
    return 1;
}

/* ---- .vsr files ---- */

struct vlist {
    uint64_t *v;
    size_t n, cap;
};

static int
vlist_add(void *arg, const char *nm)
{
    struct vlist *l = arg;
    size_t len = strlen(nm);
    if (len != 24 || strcmp(nm + 20, ".vsr") != 0)
        return 0;
    uint64_t s = 0;
    for (int i = 0; i < 20; i++) {
        if (nm[i] < '0' || nm[i] > '9')
            return 0;
        s = s * 10 + (uint64_t)(nm[i] - '0');
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = vs_xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n++] = s;
    return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void
cur_close(struct vs_pjournal *j)
{
    sio_close(j->io, j->cur_fd);
    j->cur_fd = -1;
}

/* Makes the .vsr file of segment `start` the current one (created if
 * absent; a previous current file is fsynced first). */
static int
cur_switch(struct vs_pjournal *j, uint64_t start)
{
    if (j->cur_fd >= 0 && j->cur_start == start)
        return 0;
    int rc;
    if (j->cur_fd >= 0) {
        rc = sio_fsync(j->io, j->cur_fd, j->cur_path);
        if (rc < 0)
            return rc;
        cur_close(j);
    }
    rc = vsr_path(j->cur_path, sizeof(j->cur_path), part_dir(j->p), start);
    if (rc < 0)
        return rc;
    int fd = sio_open(j->io, j->cur_path, O_RDWR, 0);
    int created = 0;
    if (fd == -ENOENT) {
        fd = sio_open(j->io, j->cur_path, O_RDWR | O_CREAT, 0600);
        created = 1;
    }
    if (fd < 0)
        return fd == -ENOSPC ? fd
                             : sio_set_fatal(j->io, SIO_OPEN, -fd, j->cur_path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        sio_close(j->io, fd);
        return sio_set_fatal(j->io, SIO_OPEN, errno, j->cur_path);
    }
    j->cur_fd = fd;
    j->cur_start = start;
    j->cur_size = (uint64_t)st.st_size;
    if (created)
        return sio_dir_fsync(j->io, part_dir(j->p));
    return 0;
}

/* Cuts a .vsr file to `len` bytes durably (unlinks it when len is 0). */
static int
vsr_cut(struct vs_pjournal *j, uint64_t start, uint64_t len)
{
    char path[PJ_PATH_MAX];
    int rc = vsr_path(path, sizeof(path), part_dir(j->p), start);
    if (rc < 0)
        return rc;
    if (j->cur_fd >= 0 && j->cur_start == start)
        cur_close(j);
    if (len == 0) {
        rc = sio_unlink(j->io, path);
        if (rc < 0 && rc != -ENOENT)
            return sio_set_fatal(j->io, SIO_UNLINK, -rc, path);
        return 0;
    }
    int fd = sio_open(j->io, path, O_RDWR, 0);
    if (fd < 0)
        return sio_set_fatal(j->io, SIO_OPEN, -fd, path);
    rc = sio_ftruncate(j->io, fd, (off_t)len, path);
    if (rc == 0)
        rc = sio_fsync(j->io, fd, path);
    sio_close(j->io, fd);
    return rc;
}

/* ---- open ---- */

/* One record as the walk read it. */
struct walk_rec {
    struct pj_ent e;
    struct vs_hdr_prepare h;
    int bad;        /* record or body fails */
    int header_ok;  /* its header verified */
    int body_gone;  /* a batch op whose batch is absent or fails */
    int verified;   /* its batch's body checksum was verified */
    uint64_t vfile; /* index of its .vsr file */
};

struct walk {
    struct walk_rec *r;
    size_t n, cap;
};

static struct walk_rec *
walk_push(struct walk *w)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 64;
        w->r = vs_xrealloc(w->r, w->cap * sizeof(*w->r));
    }
    struct walk_rec *r = &w->r[w->n++];
    memset(r, 0, sizeof(*r));
    return r;
}

/* Bounds the walk's memory: once 2 * keep records are held, only the
 * newest `keep` stay (the engine gets at most window + 1 headers). Never
 * after a record without its batch was seen: the tail rule needs every
 * record from it on. */
static void
walk_trim(struct walk *w, size_t keep, int gone_seen)
{
    if (gone_seen || w->n < 2 * keep)
        return;
    memmove(w->r, w->r + (w->n - keep), keep * sizeof(*w->r));
    w->n = keep;
}

/* Checks the batch a record names: 0 present and matching, 1 absent or
 * failing. `verify_body` also checks the body checksum. */
static int
batch_check(struct vs_pjournal *j, const struct vs_hdr_prepare *h,
            const struct part_log_pos *at, uint64_t seg_size,
            uint64_t expect_offset, uint32_t body_len, int verify_body)
{
    if (at->position + body_len > seg_size)
        return 1;
    uint8_t hdr[BATCH_HEADER_SIZE];
    if (body_len < BATCH_HEADER_SIZE ||
        part_read_log(j->p, at->seg_start, at->position, hdr, sizeof(hdr)) < 0)
        return 1;
    if (batch_header_check(hdr) != BATCH_OK ||
        batch_base_offset(hdr) != expect_offset ||
        batch_length(hdr) != body_len)
        return 1;
    if (!verify_body)
        return 0;
    uint8_t *b = vs_xmalloc(body_len);
    int bad =
        part_read_log(j->p, at->seg_start, at->position, b, body_len) < 0 ||
        !vs_body_verify((const struct vs_header *)h, b, body_len);
    free(b);
    return bad;
}

/* The size of the partition's segment starting at `start` (0 when it
 * holds none there). */
static uint64_t
seg_size_of(const struct vs_part *p, uint64_t start)
{
    uint64_t ss, sz;
    for (size_t si = 0; part_segment_at(p, si, &ss, &sz) == 0; si++)
        if (ss == start)
            return sz;
    return 0;
}

/* The newest batch record of w below index `below` whose batch is
 * present, or w->n when there is none. */
static size_t
last_batch_before(const struct walk *w, size_t below)
{
    for (size_t i = below; i-- > 0;)
        if (w->r[i].e.batch)
            return w->r[i].body_gone || w->r[i].bad ? w->n : i;
    return w->n;
}

/* A batch's message count is covered only by its body checksum, which
 * the walk verifies for the ops above the commit and the last one: an
 * older batch whose count rotted gives every later op a wrong offset
 * (the next batch then fails to start at it, or the records end past or
 * short of the log's end) while its own header still reads. So when the
 * offsets stop agreeing, the newest present batch below `below` is
 * verified: 1 if it fails (its record is the one to cut), 0 if it holds
 * or there is none to check. */
static int
earlier_batch_fails(struct vs_pjournal *j, struct walk *w, size_t below)
{
    size_t i = last_batch_before(w, below);
    if (i == w->n || w->r[i].verified)
        return 0;
    struct walk_rec *r = &w->r[i];
    if (batch_check(j, &r->h, &r->e.where,
                    seg_size_of(j->p, r->e.where.seg_start), r->e.offset_before,
                    r->e.body_len, 1) == 0) {
        r->verified = 1;
        return 0;
    }
    r->body_gone = 1;
    return 1;
}

/* 1 if a record with a valid prefix for an op above `op` starts in
 * (pos, end) at an 8-aligned distance: the damaged record at pos is not
 * the last one. */
static int
valid_record_follows(struct vs_pjournal *j, int fd, uint64_t pos, uint64_t end,
                     uint64_t op)
{
    uint8_t b[PJ_RECORD_PREFIX];
    for (uint64_t at = pos + 8; at + PJ_RECORD_PREFIX <= end; at += 8) {
        if (sio_pread_all(j->io, fd, b, sizeof(b), (off_t)at, NULL) < 0)
            return 1; /* unreadable: not provably the last */
        if (prefix_ok(b) && vs_load_u64(b) > op)
            return 1;
    }
    return 0;
}

/* 1 if a whole valid record starts at `at` (< end) of fd: prefix,
 * header identity and op, an inline body's checksum; *h and *rlen then
 * hold it. 2 if a valid prefix there declares a record the end of the
 * file cuts short (h->op its op). buf holds the largest record. 0 if
 * not, -errno. */
static int
record_at(struct vs_pjournal *j, int fd, uint64_t at, uint64_t end,
          uint8_t *buf, struct vs_hdr_prepare *h, uint32_t *rlen)
{
    if (end - at < PJ_RECORD_PREFIX)
        return 0;
    int rc = sio_pread_all(j->io, fd, buf, PJ_RECORD_PREFIX, (off_t)at, NULL);
    if (rc < 0)
        return rc;
    if (!prefix_ok(buf))
        return 0;
    uint64_t op = vs_load_u64(buf);
    if (vs_load_u32(buf + 8) > end - at) {
        h->op = op;
        return 2;
    }
    *rlen = vs_load_u32(buf + 8);
    rc = sio_pread_all(j->io, fd, buf, *rlen, (off_t)at, NULL);
    if (rc < 0)
        return rc;
    memcpy(h, buf + PJ_RECORD_PREFIX, sizeof(*h));
    if (!vs_prepare_verify_identity(h) || h->op != op || h->f.size < sizeof(*h))
        return 0;
    uint32_t blen = h->f.size - (uint32_t)sizeof(*h);
    if (pj_is_batch_op(h->operation))
        return *rlen == PJ_RECORD_PREFIX + sizeof(*h);
    return *rlen == PJ_RECORD_PREFIX + sizeof(*h) + pad8(blen) &&
           vs_body_verify((const struct vs_header *)h,
                          buf + PJ_RECORD_PREFIX + sizeof(*h), blen);
}

/* 1 if the damaged stretch z[0, len) of a .vsr file (starting at a
 * record boundary) is records that did not land whole (unwritten.h): a
 * piece starting with a valid prefix is zero from its record's header's
 * last byte on (that byte is never zero in a whole record: the format-2
 * mark of checksum_view); a piece without one is a prefix cut short (at
 * most its bytes) or a lost record: zero for the rest of the smallest
 * record, then up to the next non-zero byte, where the next piece starts
 * (8-aligned, as records are); a last piece shorter than a prefix may end
 * the file. */
static int
stretch_unwritten(const uint8_t *z, size_t len, int at_eof)
{
    const size_t rec_min = PJ_RECORD_PREFIX + sizeof(struct vs_hdr_prepare);
    size_t a = 0;
    while (a < len) {
        size_t rest = len - a;
        if (rest < PJ_RECORD_PREFIX)
            return at_eof || unwritten_zero_from(z + a, rest, 0);
        if (prefix_ok(z + a)) {
            uint32_t rl = vs_load_u32(z + a + 8);
            size_t e = rl < rest ? a + rl : len;
            if (!unwritten_zero_from(z + a, e - a, rec_min - 1))
                return 0;
            a = e;
            continue;
        }
        size_t e = rest < rec_min ? len : a + rec_min;
        if (!unwritten_zero_from(z + a, e - a, PJ_RECORD_PREFIX))
            return 0;
        while (e < len && z[e] == 0)
            e++;
        a = e & ~(size_t)7; /* >= the old a + rec_min - 7: forward */
    }
    return 1;
}

/* The unsynced group tail of the last .vsr file (pjournal.h): the
 * damaged record at pos (op bad_op) and every byte after it up to end are
 * never-written stretches (unwritten.h) and whole records: each damaged
 * stretch ends where a whole record of a higher op starts (8-aligned: a
 * lost record has no prefix to measure it by), records in a run chain,
 * a last stretch runs to the end; the damaged op lies above the durable
 * checkpoint and every op within `window` ops of it (the engine never
 * holds more above its durable checkpoint). Returns 1 with *last_op the
 * file's last whole record's op (bad_op - 1 when none), 0 with why[]
 * saying what does not fit, -errno. */
static int
vsr_group_tail(struct vs_pjournal *j, int fd, uint64_t pos, uint64_t end,
               uint64_t bad_op, uint64_t checkpoint_op, uint32_t window,
               uint8_t *buf, uint64_t *last_op, char *why, size_t why_len)
{
    if (bad_op <= checkpoint_op) {
        snprintf(why, why_len,
                 "op %" PRIu64 " is at or below the durable checkpoint "
                 "(op %" PRIu64 ")",
                 bad_op, checkpoint_op);
        return 0;
    }
    uint64_t last = bad_op - 1, d = pos;
    uint8_t *z = NULL;
    int fits = 1, rc = 0;
    while (fits && d < end) {
        /* the next whole record above `last` after d */
        uint64_t q = d + 8;
        struct vs_hdr_prepare h, prev;
        memset(&prev, 0, sizeof(prev));
        uint32_t rlen = 0;
        for (; q < end; q += 8) {
            rc = record_at(j, fd, q, end, buf, &h, &rlen);
            if (rc < 0)
                goto out;
            /* a lost record skips an op; a last record the end of the
             * file cuts short ends the stretch too */
            if (rc >= 1 && h.op > last + 1)
                break;
        }
        if (q > end)
            q = end;
        z = vs_xrealloc(z, (size_t)(q - d) ? (size_t)(q - d) : 1);
        rc = sio_pread_all(j->io, fd, z, (size_t)(q - d), (off_t)d, NULL);
        if (rc < 0)
            goto out;
        if (!stretch_unwritten(z, (size_t)(q - d), q == end)) {
            snprintf(why, why_len,
                     "the damaged bytes at %" PRIu64
                     " are not of the never-written shape (non-zero damage)",
                     d);
            fits = 0;
            break;
        }
        /* whole records from q on, chained */
        d = q;
        int have = 0;
        while (d < end) {
            rc = record_at(j, fd, d, end, buf, &h, &rlen);
            if (rc < 0)
                goto out;
            if (rc == 2) {
                d = end; /* the file ends inside it: torn */
                break;
            }
            if (rc == 0 || (have && (h.op != prev.op + 1 ||
                                     !vs_u128_eq(h.parent, prev.f.checksum))))
                break;
            if (h.op - checkpoint_op > window) {
                snprintf(why, why_len,
                         "op %" PRIu64 " follows it, more than the %" PRIu32
                         " ops the journal holds above the durable "
                         "checkpoint (op %" PRIu64 ")",
                         h.op, window, checkpoint_op);
                fits = 0;
                break;
            }
            prev = h;
            have = 1;
            last = h.op;
            d += rlen;
        }
    }
    rc = fits;
    if (fits)
        *last_op = last;
out:
    free(z);
    return rc;
}

enum { TAIL_NONE = 0, TAIL_TORN = 1, TAIL_FAULTY = 2 };

/* The unsynced group tail rule at the damaged record of op `bad` at pos
 * of the last .vsr file: TAIL_NONE (why[] says why, when it applied),
 * TAIL_TORN (every-batch: cut as a torn tail, never acknowledged),
 * TAIL_FAULTY (interval: cut, faulty up to *last_op), or -errno. */
static int
tail_rule(struct vs_pjournal *j, int fd, uint64_t pos, uint64_t end,
          uint64_t bad, const struct pj_state *st, uint32_t window,
          uint8_t *buf, uint64_t *last_op, char *why, size_t why_len)
{
    int g = vsr_group_tail(j, fd, pos, end, bad, st->checkpoint_op, window, buf,
                           last_op, why, why_len);
    if (g <= 0)
        return g;
    return part_every_batch(j->p) ? TAIL_TORN : TAIL_FAULTY;
}

int
pj_open(struct vs_part *p, uint32_t window, struct vs_pjournal **out,
        struct pj_recovered *rec, struct part_verdict *v)
{
    *out = NULL;
    memset(rec, 0, sizeof(*rec));
    if (v)
        memset(v, 0, sizeof(*v));
    if (window == 0)
        return -EINVAL;
    struct vs_pjournal *j = vs_xcalloc(1, sizeof(*j));
    j->p = p;
    j->io = part_io(p);
    j->window = window;
    j->cur_fd = -1;
    j->state_fd = -1;
    struct vlist files = {0};
    struct walk w = {0};
    uint8_t *buf = vs_xmalloc(PJ_RECORD_PREFIX + sizeof(struct vs_hdr_prepare) +
                              PJ_INLINE_MAX);
    int rc = afile_join(j->state_path, sizeof(j->state_path), part_dir(p),
                        PJ_STATE_FILE);
    if (rc < 0)
        goto fail;
    int present = 0;
    rc = state_load(j, &rec->state, &present, v);
    if (rc < 0)
        goto fail;
    rc = sio_readdir(j->io, part_dir(p), vlist_add, &files);
    if (rc < 0)
        goto fail;
    if (files.n > 1)
        qsort(files.v, files.n, sizeof(*files.v), cmp_u64);

    /* segments, to find each record's batch */
    uint64_t seg_first = 0, seg_size = 0;
    if (part_segment_at(p, 0, &seg_first, &seg_size) < 0) {
        rc = -EIO;
        goto fail;
    }
    /* pass 1: read every record, classify; nothing is modified */
    uint64_t expect_op = 0, offset = 0;
    struct vs_u128 parent = {0, 0};
    int have_prev = 0;
    size_t vf_cut = files.n; /* first file index touched by a cut */
    uint64_t vf_cut_len = 0;
    int tail_damage = 0; /* the walk stopped on a damaged tail record */
    int gone_seen = 0;   /* a record without its batch was read */
    uint64_t faulty_top = 0;
    /* the unsynced group tail rule (pjournal.h): under every-batch a cut
     * record was never acknowledged; under interval it may have been
     * (acknowledged once written) and is repaired, never nacked */
    uint64_t group_last = 0;
    char why[200] = "";
    for (size_t fi = 0; fi < files.n && !tail_damage; fi++) {
        uint64_t vstart = files.v[fi];
        if (vstart < seg_first)
            continue; /* records of segments retention removed */
        char path[PJ_PATH_MAX];
        rc = vsr_path(path, sizeof(path), part_dir(p), vstart);
        if (rc < 0)
            goto fail;
        int fd = sio_open(j->io, path, O_RDONLY, 0);
        if (fd < 0) {
            rc = fd;
            goto fail;
        }
        struct stat st;
        if (fstat(fd, &st) != 0) {
            rc = -errno;
            sio_close(j->io, fd);
            goto fail;
        }
        uint64_t fsize = (uint64_t)st.st_size, pos = 0, logpos = 0;
        /* the size of the segment this file belongs to */
        uint64_t this_seg = seg_size_of(p, vstart);
        int last_file = fi + 1 == files.n;
        int torn = 0;
        /* a segment's first batch starts at its start offset: the first
         * retained record (older segments removed) takes it from there */
        if (!have_prev)
            offset = vstart;
        while (pos < fsize) {
            uint64_t left = fsize - pos;
            size_t got = 0;
            if (left < PJ_RECORD_PREFIX) {
                torn = 1; /* torn prefix */
                break;
            }
            rc = sio_pread_all(j->io, fd, buf, PJ_RECORD_PREFIX, (off_t)pos,
                               &got);
            if (rc < 0) {
                sio_close(j->io, fd);
                goto fail;
            }
            uint64_t op = vs_load_u64(buf);
            uint32_t rlen = vs_load_u32(buf + 8);
            if (!prefix_ok(buf)) {
                uint64_t bad = expect_op ? expect_op : 1;
                int g = last_file ? tail_rule(j, fd, pos, fsize, bad,
                                              &rec->state, window, buf,
                                              &group_last, why, sizeof(why))
                                  : TAIL_NONE;
                if (g < 0) {
                    rc = g;
                    sio_close(j->io, fd);
                    goto fail;
                }
                if (g == TAIL_TORN) {
                    torn = 1;
                    break;
                }
                if (g == TAIL_FAULTY) {
                    struct walk_rec *r = walk_push(&w);
                    r->e.op = bad;
                    r->bad = 1;
                    r->vfile = fi;
                    r->e.vsr_start = vstart;
                    r->e.rec_pos = pos;
                    faulty_top = group_last > bad ? group_last : bad;
                    tail_damage = 1;
                    break;
                }
                if (!last_file ||
                    left > PJ_RECORD_PREFIX + sizeof(struct vs_hdr_prepare) +
                               PJ_INLINE_MAX ||
                    valid_record_follows(j, fd, pos, fsize, expect_op)) {
                    verdict(v, p, PART_R_INTERIOR_DAMAGE,
                            path + strlen(part_dir(p)) + 1, pos,
                            "the record of op %" PRIu64
                            " fails its checksum and records follow it%s%s",
                            bad, why[0] ? "; not an unsynced tail: " : "", why);
                    rc = -EBADMSG;
                    sio_close(j->io, fd);
                    goto fail;
                }
                /* a damaged last record: every op that could fit in
                 * what is left may have been written */
                struct walk_rec *r = walk_push(&w);
                r->e.op = expect_op ? expect_op : 1;
                r->bad = 1;
                r->vfile = fi;
                r->e.vsr_start = vstart;
                r->e.rec_pos = pos;
                uint64_t fit =
                    left / (PJ_RECORD_PREFIX + sizeof(struct vs_hdr_prepare));
                faulty_top = r->e.op + (fit ? fit - 1 : 0);
                tail_damage = 1;
                break;
            }
            if (rlen > left) {
                torn = 1; /* torn record */
                break;
            }
            rc = sio_pread_all(j->io, fd, buf, rlen, (off_t)pos, &got);
            if (rc < 0) {
                sio_close(j->io, fd);
                goto fail;
            }
            struct walk_rec *r = walk_push(&w);
            memcpy(&r->h, buf + PJ_RECORD_PREFIX, sizeof(r->h));
            r->vfile = fi;
            r->e.op = op;
            r->e.vsr_start = vstart;
            r->e.rec_pos = pos;
            r->e.rec_len = rlen;
            r->e.offset_before = offset;
            int is_last = last_file && pos + rlen == fsize;
            if (have_prev && op != expect_op) {
                verdict(v, p, PART_R_INTERIOR_DAMAGE,
                        path + strlen(part_dir(p)) + 1, pos,
                        "hole in the journal: the record after op %" PRIu64
                        " is not the next op",
                        expect_op - 1);
                rc = -EBADMSG;
                sio_close(j->io, fd);
                goto fail;
            }
            r->header_ok = vs_prepare_verify_identity(&r->h) && r->h.op == op &&
                           r->h.f.size >= sizeof(r->h);
            if (!r->header_ok) {
                r->bad = 1;
            } else {
                r->e.checksum = r->h.f.checksum;
                r->e.body_len = r->h.f.size - (uint32_t)sizeof(r->h);
                r->e.batch = pj_is_batch_op(r->h.operation);
                if (have_prev && !vs_u128_eq(r->h.parent, parent)) {
                    verdict(v, p, PART_R_INTERIOR_DAMAGE,
                            path + strlen(part_dir(p)) + 1, pos,
                            "hash chain broken: op %" PRIu64
                            "'s parent is not the checksum of the op "
                            "before it",
                            op);
                    rc = -EBADMSG;
                    sio_close(j->io, fd);
                    goto fail;
                }
                if (r->e.batch) {
                    if (rlen != PJ_RECORD_PREFIX + sizeof(r->h)) {
                        r->bad = 1;
                    } else {
                        r->e.where.seg_start = vstart;
                        r->e.where.position = logpos;
                        int verify = op > rec->state.commit_max || is_last;
                        r->body_gone =
                            batch_check(j, &r->h, &r->e.where, this_seg, offset,
                                        r->e.body_len, verify);
                        r->verified = verify && !r->body_gone;
                        logpos += r->e.body_len;
                        /* not where the batches before it end: one of
                         * them may be the damaged one */
                        if (r->body_gone && !gone_seen)
                            (void)earlier_batch_fails(j, &w, w.n - 1);
                    }
                } else if (rlen != PJ_RECORD_PREFIX + sizeof(r->h) +
                                       pad8(r->e.body_len) ||
                           !vs_body_verify((const struct vs_header *)&r->h,
                                           buf + PJ_RECORD_PREFIX +
                                               sizeof(r->h),
                                           r->e.body_len)) {
                    r->bad = 1;
                }
            }
            int g = r->bad && !is_last && last_file
                        ? tail_rule(j, fd, pos, fsize, op, &rec->state, window,
                                    buf, &group_last, why, sizeof(why))
                        : TAIL_NONE;
            if (g < 0) {
                rc = g;
                sio_close(j->io, fd);
                goto fail;
            }
            if (g == TAIL_TORN) {
                w.n--; /* the damaged record is cut with the rest */
                torn = 1;
                break;
            }
            if (g == TAIL_FAULTY) {
                faulty_top = group_last > op ? group_last : op;
                tail_damage = 1;
                break;
            }
            if (r->bad && !is_last) {
                verdict(v, p, PART_R_INTERIOR_DAMAGE,
                        path + strlen(part_dir(p)) + 1, pos,
                        "the record of op %" PRIu64
                        " fails its checksums and records follow it%s%s",
                        op, why[0] ? "; not an unsynced tail: " : "", why);
                rc = -EBADMSG;
                sio_close(j->io, fd);
                goto fail;
            }
            if (r->e.batch && !r->bad && !r->body_gone) {
                uint8_t bh[BATCH_HEADER_SIZE];
                rc = part_read_log(p, vstart, r->e.where.position, bh,
                                   sizeof(bh));
                if (rc < 0) {
                    sio_close(j->io, fd);
                    goto fail;
                }
                offset += batch_count(bh);
            }
            r->e.offset_after = offset;
            parent = r->e.checksum;
            have_prev = 1;
            expect_op = op + 1;
            pos += rlen;
            if (r->body_gone)
                gone_seen = 1;
            int stop = r->bad;
            walk_trim(&w, (size_t)window + 2, gone_seen);
            if (stop) {
                faulty_top = op;
                tail_damage = 1;
                break;
            }
        }
        sio_close(j->io, fd);
        if (torn) {
            if (!last_file) {
                verdict(v, p, PART_R_INTERIOR_DAMAGE,
                        path + strlen(part_dir(p)) + 1, pos,
                        "the record of op %" PRIu64
                        " is cut short and later journal files follow",
                        expect_op ? expect_op : 1);
                rc = -EBADMSG;
                goto fail;
            }
            vf_cut = fi;
            vf_cut_len = pos;
            break;
        }
    }
    /* a record whose batch is gone: cut it and everything after it; only
     * allowed when every later record is such a batch op or inline */
    size_t first_gone = w.n;
    for (size_t i = 0; i < w.n; i++)
        if (w.r[i].body_gone && !w.r[i].bad) {
            first_gone = i;
            break;
        }
    for (size_t i = first_gone; i < w.n; i++) {
        const struct walk_rec *r = &w.r[i];
        if (r->e.batch && !r->body_gone && !r->bad) {
            verdict(v, p, PART_R_INTERIOR_DAMAGE, "journal", 0,
                    "the batch of op %" PRIu64
                    " is missing or damaged and later batches are present",
                    w.r[first_gone].e.op);
            rc = -EBADMSG;
            goto fail;
        }
    }
    /* the first record to cut */
    size_t cut = w.n;
    if (first_gone < w.n) {
        cut = first_gone;
        faulty_top =
            w.r[w.n - 1].e.op > faulty_top ? w.r[w.n - 1].e.op : faulty_top;
    } else if (tail_damage) {
        cut = w.n - 1;
    }
    /* the kept records' batches must end where the log does (or below
     * it: batches of torn records are cut next), never past it */
    if (cut > 0) {
        struct part_stats ps;
        part_stats(p, &ps);
        uint64_t top = w.r[cut - 1].e.offset_after;
        size_t b = last_batch_before(&w, cut);
        if (top != ps.next_offset && earlier_batch_fails(j, &w, cut)) {
            cut = b; /* that batch and every later op */
            if (w.r[w.n - 1].e.op > faulty_top)
                faulty_top = w.r[w.n - 1].e.op;
        } else if (top > ps.next_offset) {
            verdict(v, p, PART_R_INTERIOR_DAMAGE, "journal", 0,
                    "the batches of the journal's ops up to %" PRIu64
                    " end at offset %" PRIu64
                    " but the log ends at offset %" PRIu64,
                    w.r[cut - 1].e.op, top, ps.next_offset);
            rc = -EBADMSG;
            goto fail;
        }
    }
    if (cut < w.n) {
        rec->faulty_op = faulty_top;
        if (w.r[cut].header_ok) {
            rec->has_bad_header = 1;
            rec->bad_header = w.r[cut].h;
        }
        vf_cut = w.r[cut].vfile;
        vf_cut_len = w.r[cut].e.rec_pos;
        w.n = cut;
    }
    /* pass 2: apply the cut (records first, then batches) */
    for (size_t fi = files.n; fi-- > 0;) {
        if (files.v[fi] < seg_first)
            continue;
        if (fi > vf_cut) {
            rc = vsr_cut(j, files.v[fi], 0);
        } else if (fi == vf_cut) {
            rc = vsr_cut(j, files.v[fi], vf_cut_len);
        } else {
            break;
        }
        if (rc < 0)
            goto fail;
    }
    if (vf_cut < files.n) {
        rc = sio_dir_fsync(j->io, part_dir(p));
        if (rc < 0)
            goto fail;
    }
    /* no record kept: every batch goes (a batch whose record was lost:
     * the two files have no write order); the log restarts at its first
     * segment's start */
    uint64_t keep_offset = w.n ? w.r[w.n - 1].e.offset_after : seg_first;
    {
        struct part_stats ps;
        part_stats(p, &ps);
        if (ps.next_offset > keep_offset) {
            rc = part_truncate_tail(p, keep_offset);
            if (rc < 0)
                goto fail;
        }
    }
    /* the journal's in-memory window */
    for (size_t i = 0; i < w.n; i++)
        *ent_push(j) = w.r[i].e;
    if (w.n) {
        j->head = w.r[w.n - 1].e.op;
        j->head_checksum = w.r[w.n - 1].e.checksum;
    }
    if (w.n && seg_first > 0 && w.r[0].e.op > rec->state.checkpoint_op + 1) {
        /* the segments holding the ops below the first retained record
         * were deleted by a trim op of the group, which commits after
         * every op it deletes: those ops were applied, so the journal
         * starts as if checkpointed right below its first record */
        rec->state.checkpoint_op = w.r[0].e.op - 1;
        rec->state.checkpoint_checksum = w.r[0].h.parent;
        if (rec->state.commit_max < rec->state.checkpoint_op)
            rec->state.commit_max = rec->state.checkpoint_op;
    }
    j->commit =
        rec->state.commit_max < j->head ? rec->state.commit_max : j->head;
    /* the headers the engine gets: from the checkpoint op up */
    size_t from = 0;
    while (from < w.n && w.r[from].e.op < rec->state.checkpoint_op)
        from++;
    if (w.n - from > (size_t)window + 1)
        from = w.n - ((size_t)window + 1);
    rec->count = w.n - from;
    if (rec->count) {
        rec->headers = vs_xmalloc(rec->count * sizeof(*rec->headers));
        for (size_t i = 0; i < rec->count; i++)
            rec->headers[i] = w.r[from + i].h;
    }
    rec->fresh = !present && w.n == 0 && vf_cut == files.n;
    struct pj_state zero;
    memset(&zero, 0, sizeof(zero));
    rec->formatted = present && w.n == 0 && vf_cut == files.n &&
                     j->state_seq == 1 &&
                     memcmp(&rec->state, &zero, sizeof(zero)) == 0;
    ents_trim(j);
    pj_set_commit(j, rec->state.checkpoint_op);
    rc = cur_switch(j, part_active_start(p));
    if (rc < 0)
        goto fail;
    free(buf);
    free(w.r);
    free(files.v);
    *out = j;
    return 0;
fail:
    free(buf);
    free(w.r);
    free(files.v);
    pj_recovered_free(rec);
    pj_close(j);
    return rc;
}

void
pj_close(struct vs_pjournal *j)
{
    if (!j)
        return;
    cur_close(j);
    sio_close(j->io, j->state_fd);
    free(j->ents);
    free(j);
}

/* ---- append, sync, read, truncate ---- */

int
pj_append(struct vs_pjournal *j, const struct vs_hdr_prepare *h,
          const uint8_t *body, uint32_t body_len)
{
    if (sio_is_fatal(j->io))
        return -VS_EFATAL;
    if (h->op != j->head + 1 || h->f.size != sizeof(*h) + body_len ||
        (j->head > 0 && !vs_u128_eq(h->parent, j->head_checksum)))
        return -EINVAL;
    int batch = pj_is_batch_op(h->operation);
    if (!batch && body_len > PJ_INLINE_MAX)
        return -EINVAL;
    struct part_stats ps;
    part_stats(j->p, &ps);
    uint64_t before = ps.next_offset;
    struct part_log_pos at = {part_active_start(j->p), 0};
    int rc;
    if (batch) {
        rc = part_append_stamped(j->p, body, body_len, &at, NULL);
        if (rc < 0)
            return rc;
    }
    rc = cur_switch(j, at.seg_start);
    uint32_t rlen =
        PJ_RECORD_PREFIX + (uint32_t)sizeof(*h) + (batch ? 0 : pad8(body_len));
    uint64_t rpos = j->cur_size;
    if (rc == 0) {
        uint8_t *rb = vs_xcalloc(1, rlen);
        prefix_encode(rb, h->op, rlen);
        memcpy(rb + PJ_RECORD_PREFIX, h, sizeof(*h));
        if (!batch && body_len)
            memcpy(rb + PJ_RECORD_PREFIX + sizeof(*h), body, body_len);
        rc = sio_pwrite_all(j->io, j->cur_fd, rb, rlen, (off_t)rpos,
                            j->cur_path);
        free(rb);
        if (rc == -ENOSPC) {
            int r2 = sio_ftruncate(j->io, j->cur_fd, (off_t)rpos, j->cur_path);
            if (r2 < 0)
                rc = r2;
        }
    }
    if (rc < 0) {
        /* undo the batch so the partition is as before */
        if (batch && rc == -ENOSPC) {
            int r2 = part_truncate_tail(j->p, before);
            if (r2 < 0)
                rc = r2;
        }
        return rc;
    }
    j->cur_size = rpos + rlen;
    struct pj_ent *e = ent_push(j);
    e->op = h->op;
    e->checksum = h->f.checksum;
    e->vsr_start = j->cur_start;
    e->rec_pos = rpos;
    e->rec_len = rlen;
    e->body_len = body_len;
    e->batch = batch;
    e->where = at;
    e->offset_before = before;
    e->offset_after = batch ? before + batch_count(body) : before;
    j->head = h->op;
    j->head_checksum = h->f.checksum;
    j->appends++;
    ents_trim(j);
    return 0;
}

int
pj_sync_target(const struct vs_pjournal *j, struct pj_sync_target *t)
{
    struct part_sync_target pt;
    int rc = part_sync_target(j->p, &pt);
    if (rc < 0)
        return rc;
    if (j->cur_fd < 0)
        return -EIO;
    t->log_fd = pt.fd;
    t->vsr_fd = j->cur_fd;
    t->op = j->head;
    t->seq = j->appends;
    t->log_unsynced = pt.unsynced_bytes;
    t->log_next = pt.next_offset;
    return 0;
}

void
pj_sync_done(struct vs_pjournal *j, const struct pj_sync_target *t)
{
    if (t->op > j->durable)
        j->durable = t->op;
    struct part_sync_target pt = {.fd = t->log_fd,
                                  .path = NULL,
                                  .unsynced_bytes = t->log_unsynced,
                                  .next_offset = t->log_next};
    part_sync_done(j->p, &pt, 0);
}

int
pj_sync(struct vs_pjournal *j)
{
    struct pj_sync_target t;
    int rc = pj_sync_target(j, &t);
    if (rc < 0)
        return rc;
    rc = part_flush(j->p);
    if (rc == 0)
        rc = sio_fsync(j->io, j->cur_fd, j->cur_path);
    if (rc == 0)
        pj_sync_done(j, &t);
    return rc;
}

int
pj_read(struct vs_pjournal *j, uint64_t op, struct vs_wbuf *out)
{
    const struct pj_ent *e = ent_of(j, op);
    if (!e)
        return -ENOENT;
    char path[PJ_PATH_MAX];
    int rc = vsr_path(path, sizeof(path), part_dir(j->p), e->vsr_start);
    if (rc < 0)
        return rc;
    int fd = sio_open(j->io, path, O_RDONLY, 0);
    if (fd < 0)
        return fd;
    size_t base = out->len;
    uint8_t *dst =
        vs_wbuf_reserve(out, sizeof(struct vs_hdr_prepare) + e->body_len);
    rc = sio_pread_all(j->io, fd, dst, sizeof(struct vs_hdr_prepare),
                       (off_t)(e->rec_pos + PJ_RECORD_PREFIX), NULL);
    if (rc == 0 && !e->batch && e->body_len)
        rc = sio_pread_all(j->io, fd, dst + sizeof(struct vs_hdr_prepare),
                           e->body_len,
                           (off_t)(e->rec_pos + PJ_RECORD_PREFIX +
                                   sizeof(struct vs_hdr_prepare)),
                           NULL);
    sio_close(j->io, fd);
    if (rc == 0 && e->batch)
        rc = part_read_log(j->p, e->where.seg_start, e->where.position,
                           dst + sizeof(struct vs_hdr_prepare), e->body_len);
    if (rc < 0)
        return rc;
    const struct vs_hdr_prepare *h = (const struct vs_hdr_prepare *)dst;
    if (!vs_prepare_verify_identity(h) || h->op != op ||
        !vs_u128_eq(h->f.checksum, e->checksum) ||
        !vs_body_verify((const struct vs_header *)h,
                        dst + sizeof(struct vs_hdr_prepare), e->body_len))
        return -EBADMSG;
    out->len = base + sizeof(struct vs_hdr_prepare) + e->body_len;
    return 0;
}

int
pj_drop_segment(struct vs_pjournal *j, uint64_t start)
{
    if (sio_is_fatal(j->io))
        return -VS_EFATAL;
    if (start >= part_active_start(j->p))
        return -EINVAL; /* the active segment's records stay */
    return vsr_cut(j, start, 0);
}

int
pj_truncate_from(struct vs_pjournal *j, uint64_t op)
{
    if (sio_is_fatal(j->io))
        return -VS_EFATAL;
    if (op > j->head)
        return 0;
    if (op <= j->commit || op == 0)
        return -EINVAL;
    struct pj_ent *e0 = ent_of(j, op);
    if (!e0)
        return -EINVAL;
    uint64_t vstart = e0->vsr_start, rpos = e0->rec_pos;
    uint64_t offset = e0->offset_before;
    /* records first (top down): a crash leaves batches past the last
     * record, which the next open cuts */
    uint64_t seen = UINT64_MAX;
    int rc = 0;
    for (size_t i = j->nents; i-- > 0 && j->ents[i].op >= op;) {
        uint64_t s = j->ents[i].vsr_start;
        if (s == seen || s == vstart)
            continue;
        seen = s;
        rc = vsr_cut(j, s, 0);
        if (rc < 0)
            return rc;
    }
    rc = vsr_cut(j, vstart, rpos);
    if (rc == 0)
        rc = sio_dir_fsync(j->io, part_dir(j->p));
    if (rc < 0)
        return rc;
    rc = part_truncate_tail(j->p, offset);
    if (rc < 0)
        return rc;
    j->nents -= (size_t)(j->head - op + 1);
    j->head = op - 1;
    j->head_checksum =
        j->nents ? j->ents[j->nents - 1].checksum : (struct vs_u128){0, 0};
    if (j->durable > j->head)
        j->durable = j->head;
    return cur_switch(j, part_active_start(j->p));
}

void
pj_set_commit(struct vs_pjournal *j, uint64_t op)
{
    j->commit = op;
    uint64_t cap;
    if (j->nents == 0) {
        struct part_stats ps;
        part_stats(j->p, &ps);
        cap = ps.next_offset;
    } else if (op < j->ents[0].op) {
        cap = j->ents[0].offset_before;
    } else if (op >= j->head) {
        cap = j->ents[j->nents - 1].offset_after;
    } else {
        cap = ent_of(j, op)->offset_after;
    }
    part_set_visible_cap(j->p, cap);
}

uint64_t
pj_head(const struct vs_pjournal *j)
{
    return j->head;
}

uint64_t
pj_commit(const struct vs_pjournal *j)
{
    return j->commit;
}

uint64_t
pj_appends(const struct vs_pjournal *j)
{
    return j->appends;
}

uint64_t
pj_durable(const struct vs_pjournal *j)
{
    return j->durable;
}

struct vs_u128
pj_head_checksum(const struct vs_pjournal *j)
{
    return j->head_checksum;
}

/* ---- partition state transfer ---- */

int
pj_cut_at(struct vs_pjournal *j, uint64_t op, struct pj_cut *c)
{
    memset(c, 0, sizeof(*c));
    const struct pj_ent *e = ent_of(j, op);
    if (e == NULL || op > j->commit)
        return -ENOENT;
    c->vsr_start = e->vsr_start;
    c->vsr_end = e->rec_pos + e->rec_len;
    c->offset_after = e->offset_after;
    for (const struct pj_ent *b = e;; b--) {
        if (b->batch) {
            c->has_log = 1;
            c->log_start = b->where.seg_start;
            c->log_end = b->where.position + b->body_len;
            break;
        }
        if (b == j->ents)
            break;
    }
    struct vs_wbuf rb;
    vs_wbuf_init(&rb);
    int rc = pj_read(j, op, &rb);
    if (rc == 0)
        memcpy(&c->header, rb.data, sizeof(c->header));
    vs_wbuf_fini(&rb);
    return rc;
}

void
pj_state_image(const struct pj_state *s, uint8_t out[PJ_STATE_IMAGE_SIZE])
{
    memset(out, 0, PJ_STATE_IMAGE_SIZE);
    slot_encode(out + PJ_SLOT_SIZE, 1, s); /* slot = sequence & 1 */
}

int
pj_state_read(struct vs_pjournal *j, struct pj_state *s)
{
    uint8_t b[2 * PJ_SLOT_SIZE];
    size_t got = 0;
    memset(s, 0, sizeof(*s));
    if (j->state_fd < 0)
        return -ENOENT;
    int rc = sio_pread_all(j->io, j->state_fd, b, sizeof(b), 0, &got);
    if (rc < 0 && rc != -ENODATA)
        return rc;
    uint64_t seq;
    if (got >= (size_t)((j->state_seq & 1) + 1) * PJ_SLOT_SIZE &&
        slot_decode(b + (j->state_seq & 1) * PJ_SLOT_SIZE, &seq, s))
        return 0;
    return -EBADMSG;
}
