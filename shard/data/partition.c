/*
 * shard/data/partition.c - the partition engine: open/create/recover,
 * append with the durability policy and the offset floor, reads, stats,
 * retention, DeleteSegments watermarks, purge.
 *
 * Invariants (see partition.h for the on-disk contract):
 *  - segs[0..nsegs) sorted by start, nsegs >= 1, segs[nsegs-1] active (fds
 *    open), every other one sealed (fsynced at seal, fds closed);
 *  - next_offset > every offset in the log; under the interval policy every
 *    offset handed out is < floor, and floor is durable before that;
 *  - last_ts >= every base_timestamp in the log.
 * Callers: the owning data shard's event loop; tests; benches.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/log.h"
#include "common/mem.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/data/pdir.h"
#include "shard/data/pjournal.h"
#include "shard/data/segment.h"
#include "shard/storage/atomic_file.h"

#define PART_FORMAT_FILE "format"
#define PART_STATE_FILE  "state"
#define PART_FORMAT_LEN  40u
#define PART_STATE_LEN   32u
#define PART_STATE_VER   1u

struct vs_part {
    struct vs_sio *io;
    struct part_id id;
    struct part_opts opts;
    char dir[DSEG_PATH_MAX];
    char parent[DSEG_PATH_MAX];
    struct dseg *segs;
    size_t nsegs, capsegs;
    uint64_t next_offset;
    uint64_t floor;
    uint64_t purge_gen;
    uint64_t last_ts;
    uint64_t unsynced_bytes;
    uint64_t last_sync_ms;
    uint64_t read_errors; /* batches that failed verification on read */
    /* Every-batch appends made with part_append_nosync whose fsync has not
     * completed: reads stop at hidden_from (part_visible_next). */
    int hidden;
    uint64_t hidden_from;
    /* Replicated partitions: reads end before visible_cap (the offset
     * after the group's committed batches); UINT64_MAX = no cap. */
    uint64_t visible_cap;
    int created; /* this open made the directory (part_take_created) */
    /* An append begun by part_append_begin whose write runs on another
     * thread: reserved at the active segment's end, not yet accounted
     * (next_offset, the segment and the index move in part_append_end).
     * At most one; wtoken names it (a purge or a tail cut cancels it). */
    int wpending;
    uint64_t wtoken;
};

/* Tokens of begun writes: unique in the process (loop threads only ever
 * take them for their own partitions; atomic for the shards' threads). */
static _Atomic uint64_t part_wtokens;

void
part_opts_default(struct part_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->segment_size = 1ull << 30;
    o->index_interval = 4096;
    o->durability = PART_FSYNC_EVERY_BATCH;
    o->fsync_interval_ms = 100;
    o->fsync_bytes = 4ull << 20;
    o->frontier_step = 1000000;
    o->cut_damaged_tail = 0;
    o->purge_keep_offsets = 0;
    o->verify_reads = 1;
    batch_limits_default(&o->limits);
}

const char *
part_reason_str(enum part_reason r)
{
    switch (r) {
    case PART_R_NONE:
        return "no refusal";
    case PART_R_NO_FORMAT:
        return "partition format file missing";
    case PART_R_BAD_FORMAT:
        return "partition format file corrupt";
    case PART_R_UNKNOWN_VERSION:
        return "unknown partition format version";
    case PART_R_ID_MISMATCH:
        return "partition format file names another partition";
    case PART_R_BAD_STATE:
        return "partition state file corrupt";
    case PART_R_NO_SEGMENT:
        return "partition has no segment";
    case PART_R_SEGMENT_ORDER:
        return "segments overlap or are out of order";
    case PART_R_INTERIOR_DAMAGE:
        return "interior damage in a segment";
    case PART_R_TAIL_CHECKSUM:
        return "last batch fails its checksum and may have been acknowledged";
    case PART_R_TRUNCATED:
        return "acknowledged messages missing: the log is shorter than "
               "recorded";
    case PART_R_SEGMENT_GAP:
        return "acknowledged messages missing: a gap between segments";
    }
    return "unknown reason";
}

static void
refuse(struct part_verdict *v, const struct part_id *id, enum part_reason r,
       const char *file, uint64_t pos, const char *what)
{
    if (!v)
        return;
    v->reason = r;
    snprintf(v->file, sizeof(v->file), "%s", file);
    v->position = pos;
    snprintf(v->msg, sizeof(v->msg),
             "partition %" PRIu32 ".%" PRIu32 ".%" PRIu32 "@%" PRIu64
             ": %s: %s (%s)",
             id->stream_id, id->topic_id, id->partition_id, id->created_op,
             part_reason_str(r), what, file);
}

/* ---- format and state files ---- */

static void
format_encode(const struct part_id *id, uint8_t out[PART_FORMAT_LEN])
{
    memcpy(out, "VSPD", 4);
    vs_store_u32(out + 4, PART_FORMAT_VERSION);
    vs_store_u32(out + 8, id->stream_id);
    vs_store_u32(out + 12, id->topic_id);
    vs_store_u32(out + 16, id->partition_id);
    vs_store_u32(out + 20, 0);
    vs_store_u64(out + 24, id->created_op);
    vs_store_u64(out + 32, vs_xxh3_64(out, 32));
}

static int
format_check(struct vs_part *p, struct part_verdict *v)
{
    char path[DSEG_PATH_MAX];
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = afile_join(path, sizeof(path), p->dir, PART_FORMAT_FILE);
    if (rc < 0)
        return rc;
    rc = afile_read_all(p->io, path, 4096, &buf, &len);
    if (rc == -ENOENT) {
        refuse(v, &p->id, PART_R_NO_FORMAT, PART_FORMAT_FILE, 0, "absent");
        return -EBADMSG;
    }
    if (rc == -EFBIG) { /* far longer than a format file: damage */
        refuse(v, &p->id, PART_R_BAD_FORMAT, PART_FORMAT_FILE, 0,
               "bad length (larger than 4096 bytes)");
        return -EBADMSG;
    }
    if (rc < 0)
        return rc;
    rc = -EBADMSG;
    if (len != PART_FORMAT_LEN || memcmp(buf, "VSPD", 4) != 0 ||
        vs_load_u64(buf + 32) != vs_xxh3_64(buf, 32)) {
        refuse(v, &p->id, PART_R_BAD_FORMAT, PART_FORMAT_FILE, 0,
               "bad magic, length or checksum");
        goto out;
    }
    if (vs_load_u32(buf + 4) != PART_FORMAT_VERSION) {
        char what[64];
        snprintf(what, sizeof(what), "version %" PRIu32, vs_load_u32(buf + 4));
        refuse(v, &p->id, PART_R_UNKNOWN_VERSION, PART_FORMAT_FILE, 4, what);
        goto out;
    }
    if (vs_load_u32(buf + 8) != p->id.stream_id ||
        vs_load_u32(buf + 12) != p->id.topic_id ||
        vs_load_u32(buf + 16) != p->id.partition_id ||
        vs_load_u64(buf + 24) != p->id.created_op) {
        refuse(v, &p->id, PART_R_ID_MISMATCH, PART_FORMAT_FILE, 8,
               "ids or created_op differ");
        goto out;
    }
    rc = 0;
out:
    free(buf);
    return rc;
}

static void
state_encode(uint64_t gen, uint64_t floor, uint8_t b[PART_STATE_LEN])
{
    memcpy(b, "VSPS", 4);
    vs_store_u32(b + 4, PART_STATE_VER);
    vs_store_u64(b + 8, gen);
    vs_store_u64(b + 16, floor);
    vs_store_u64(b + 24, vs_xxh3_64(b, 24));
}

static int
state_write_dir(struct vs_sio *io, const char *dir, uint64_t gen,
                uint64_t floor)
{
    uint8_t b[PART_STATE_LEN];
    state_encode(gen, floor, b);
    return afile_replace(io, dir, PART_STATE_FILE, b, sizeof(b));
}

void
part_state_image(uint64_t purge_generation, uint64_t floor,
                 uint8_t out[PART_STATE_IMAGE_SIZE])
{
    memcpy(out, "VSPS", 4);
    vs_store_u32(out + 4, PART_STATE_VER);
    vs_store_u64(out + 8, purge_generation);
    vs_store_u64(out + 16, floor);
    vs_store_u64(out + 24, vs_xxh3_64(out, 24));
}

const struct part_opts *
part_options(const struct vs_part *p)
{
    return &p->opts;
}

uint64_t
part_purge_generation(const struct vs_part *p)
{
    return p->purge_gen;
}

static int
state_write(struct vs_part *p, uint64_t gen, uint64_t floor)
{
    int rc = state_write_dir(p->io, p->dir, gen, floor);
    if (rc == 0) {
        p->purge_gen = gen;
        p->floor = floor;
    }
    return rc;
}

static int
state_read(struct vs_part *p, struct part_verdict *v)
{
    char path[DSEG_PATH_MAX];
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = afile_join(path, sizeof(path), p->dir, PART_STATE_FILE);
    if (rc < 0)
        return rc;
    rc = afile_read_all(p->io, path, 4096, &buf, &len);
    if (rc < 0) {
        if (rc == -ENOENT) {
            refuse(v, &p->id, PART_R_BAD_STATE, PART_STATE_FILE, 0, "absent");
            rc = -EBADMSG;
        } else if (rc == -EFBIG) {
            refuse(v, &p->id, PART_R_BAD_STATE, PART_STATE_FILE, 0,
                   "bad length (larger than 4096 bytes)");
            rc = -EBADMSG;
        }
        return rc;
    }
    if (len != PART_STATE_LEN || memcmp(buf, "VSPS", 4) != 0 ||
        vs_load_u32(buf + 4) != PART_STATE_VER ||
        vs_load_u64(buf + 24) != vs_xxh3_64(buf, 24)) {
        refuse(v, &p->id, PART_R_BAD_STATE, PART_STATE_FILE, 0,
               "bad magic, version, length or checksum");
        free(buf);
        return -EBADMSG;
    }
    p->purge_gen = vs_load_u64(buf + 8);
    p->floor = vs_load_u64(buf + 16);
    free(buf);
    return 0;
}

/* ---- helpers ---- */

static int
mkdir_0700(struct vs_sio *io, const char *path)
{
    return sio_mkdir(io, path, 0700); /* an existing directory is fine */
}

static struct dseg *
active(struct vs_part *p)
{
    return &p->segs[p->nsegs - 1];
}

static struct dseg *
seg_push(struct vs_part *p)
{
    if (p->nsegs == p->capsegs) {
        p->capsegs = p->capsegs ? p->capsegs * 2 : 8;
        p->segs = vs_xrealloc(p->segs, p->capsegs * sizeof(*p->segs));
    }
    return &p->segs[p->nsegs++];
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Lists segment starts (sorted); removes leftover .tmp files and .index
 * files without a .log. */
struct seg_list {
    struct vs_part *p;
    uint64_t *v;
    size_t cnt, cap;
    char **junk; /* leftovers to unlink once the listing is done */
    size_t njunk;
};

static int
seg_list_add(void *arg, const char *nm)
{
    struct seg_list *l = arg;
    uint64_t start;
    size_t len = strlen(nm);
    char path[DSEG_PATH_MAX];
    int drop = 0;
    if (dseg_parse_name(nm, &start)) {
        if (l->cnt == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 16;
            l->v = vs_xrealloc(l->v, l->cap * sizeof(*l->v));
        }
        l->v[l->cnt++] = start;
    } else if (len > 4 && strcmp(nm + len - 4, ".tmp") == 0) {
        drop = 1;
    } else if (len == 26 && strcmp(nm + 20, ".index") == 0) {
        char logn[32];
        struct stat st;
        snprintf(logn, sizeof(logn), "%.20s.log", nm);
        drop = afile_join(path, sizeof(path), l->p->dir, logn) == 0 &&
               stat(path, &st) == -1 && errno == ENOENT;
    }
    if (drop) {
        l->junk = vs_xrealloc(l->junk, (l->njunk + 1) * sizeof(*l->junk));
        l->junk[l->njunk++] = vs_xstrdup(nm);
    }
    return 0;
}

/* Lists segment starts (sorted); removes leftover .tmp files and .index
 * files without a .log (after the listing: a directory is never changed
 * while it is read). */
static int
list_segments(struct vs_part *p, uint64_t **out, size_t *n)
{
    struct seg_list l = {.p = p};
    int rc = sio_readdir(p->io, p->dir, seg_list_add, &l);
    for (size_t i = 0; i < l.njunk; i++) {
        char path[DSEG_PATH_MAX];
        /* inspection (read_only): leftovers stay */
        if (rc == 0 && !p->opts.read_only &&
            afile_join(path, sizeof(path), p->dir, l.junk[i]) == 0)
            (void)sio_unlink(p->io, path);
        free(l.junk[i]);
    }
    free(l.junk);
    if (rc != 0) {
        free(l.v);
        return rc;
    }
    if (l.cnt > 1) /* v is NULL when there is no segment: never qsort(NULL) */
        qsort(l.v, l.cnt, sizeof(*l.v), cmp_u64);
    *out = l.v;
    *n = l.cnt;
    return 0;
}

static void
free_segs(struct vs_part *p)
{
    for (size_t i = 0; i < p->nsegs; i++)
        dseg_fini(p->io, &p->segs[i]);
    p->nsegs = 0;
}

/* Deletes every segment file in the directory (purge), keeps nothing. */
static int
unlink_all_segments(struct vs_part *p)
{
    uint64_t *starts = NULL;
    size_t n = 0;
    free_segs(p);
    int rc = list_segments(p, &starts, &n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct dseg s;
        rc = dseg_init(&s, p->dir, starts[i]);
        if (rc == 0)
            rc = dseg_unlink(p->io, &s);
    }
    free(starts);
    return rc;
}

/* Creates a fresh active segment at `start` and fsyncs the directory. */
static int
new_active(struct vs_part *p, uint64_t start)
{
    struct dseg s;
    int rc = dseg_init(&s, p->dir, start);
    if (rc < 0)
        return rc;
    rc = dseg_create(p->io, &s);
    if (rc < 0)
        return rc;
    rc = sio_dir_fsync(p->io, p->dir);
    if (rc < 0) {
        dseg_fini(p->io, &s);
        return rc;
    }
    *seg_push(p) = s;
    return 0;
}

/* Completes a purge: all segments and offsets gone, one empty segment at
 * `start`, then the state (generation last). */
static int
do_purge(struct vs_part *p, uint64_t gen, uint64_t start)
{
    int rc = unlink_all_segments(p);
    if (rc == 0)
        rc = part_offsets_clear(p);
    if (rc == 0)
        rc = new_active(p, start);
    if (rc == 0)
        rc = state_write(p, gen, start);
    if (rc == 0) {
        p->next_offset = start;
        p->unsynced_bytes = 0;
    }
    return rc;
}

/* ---- create ---- */

/* A new file of the directory being made: created, written, not fsynced
 * (create_durable fsyncs it). */
static int
write_new(struct vs_sio *io, const char *dir, const char *name, const void *buf,
          size_t len)
{
    char path[DSEG_PATH_MAX];
    int rc = afile_join(path, sizeof(path), dir, name);
    if (rc < 0)
        return rc;
    int fd = sio_open(io, path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return fd;
    rc = sio_pwrite_all(io, fd, buf, len, 0, path);
    sio_close(io, fd);
    return rc;
}

/* fsyncs dir/name. */
static int
fsync_file(struct vs_sio *io, const char *dir, const char *name)
{
    char path[DSEG_PATH_MAX];
    int rc = afile_join(path, sizeof(path), dir, name);
    if (rc < 0)
        return rc;
    int fd = sio_open(io, path, O_RDONLY, 0);
    if (fd < 0)
        return fd;
    rc = sio_fsync(io, fd, path);
    sio_close(io, fd);
    return rc;
}

/* `parent`/<name>.creating and `parent`/<name>. */
static int
create_paths(const char *parent, const char *name, char tmp[DSEG_PATH_MAX],
             char final[DSEG_PATH_MAX])
{
    int n = snprintf(tmp, DSEG_PATH_MAX, "%s/%s.creating", parent, name);
    if (n < 0 || (size_t)n >= DSEG_PATH_MAX)
        return -ENAMETOOLONG;
    return afile_join(final, DSEG_PATH_MAX, parent, name);
}

/* Builds the new partition's directory under its .creating name (a
 * leftover of an interrupted creation is removed first): its files
 * written, nothing fsynced yet. */
static int
create_stage(struct vs_sio *io, const char *parent, const char *name,
             const struct part_id *id, uint64_t purge_generation)
{
    char tmp[DSEG_PATH_MAX], final[DSEG_PATH_MAX], sub[DSEG_PATH_MAX];
    int rc = create_paths(parent, name, tmp, final);
    if (rc < 0)
        return rc;
    rc = pdir_rmtree(io, tmp);
    if (rc < 0)
        return rc;
    rc = mkdir_0700(io, tmp);
    if (rc < 0)
        return rc;
    uint8_t fmt[PART_FORMAT_LEN];
    format_encode(id, fmt);
    rc = write_new(io, tmp, PART_FORMAT_FILE, fmt, sizeof(fmt));
    if (rc < 0)
        return rc;
    uint8_t st[PART_STATE_LEN];
    state_encode(purge_generation, 0, st);
    rc = write_new(io, tmp, PART_STATE_FILE, st, sizeof(st));
    if (rc < 0)
        return rc;
    struct dseg s;
    rc = dseg_init(&s, tmp, 0);
    if (rc == 0)
        rc = dseg_create(io, &s);
    dseg_fini(io, &s);
    if (rc < 0)
        return rc;
    const char *subs[] = {"offsets", "offsets/consumers", "offsets/groups"};
    for (size_t i = 0; i < 3; i++) {
        rc = afile_join(sub, sizeof(sub), tmp, subs[i]);
        if (rc == 0)
            rc = mkdir_0700(io, sub);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Makes a staged directory durable: a replicated member's group
 * superblock written (pj_state_format fsyncs it), the files and the
 * directories fsynced (offsets/ holds the two directories made in it:
 * durable before the partition is). Staging every partition of a batch
 * first lets the first of these fsyncs commit the writes of all. */
static int
create_durable(struct vs_sio *io, const char *parent, const char *name,
               int replicated)
{
    char tmp[DSEG_PATH_MAX], final[DSEG_PATH_MAX], sub[DSEG_PATH_MAX];
    int rc = create_paths(parent, name, tmp, final);
    if (rc == 0 && replicated)
        rc = pj_state_format(io, tmp);
    if (rc == 0)
        rc = fsync_file(io, tmp, PART_FORMAT_FILE);
    if (rc == 0)
        rc = fsync_file(io, tmp, PART_STATE_FILE);
    if (rc == 0)
        rc = afile_join(sub, sizeof(sub), tmp, "offsets");
    if (rc == 0)
        rc = sio_dir_fsync(io, sub);
    if (rc == 0)
        rc = sio_dir_fsync(io, tmp);
    return rc;
}

/* Renames a durable staged directory into place (its parent's fsync
 * makes that durable). */
static int
create_publish(struct vs_sio *io, const char *parent, const char *name)
{
    char tmp[DSEG_PATH_MAX], final[DSEG_PATH_MAX];
    int rc = create_paths(parent, name, tmp, final);
    if (rc == 0)
        rc = sio_dir_rename(io, tmp, final);
    return rc;
}

static int
create_dir(struct vs_sio *io, const char *parent, const char *name,
           const struct part_id *id, uint64_t purge_generation, int replicated)
{
    int rc = create_stage(io, parent, name, id, purge_generation);
    if (rc == 0)
        rc = create_durable(io, parent, name, replicated);
    if (rc == 0)
        rc = create_publish(io, parent, name);
    if (rc == 0)
        rc = sio_dir_fsync(io, parent);
    return rc;
}

int
part_create_many(struct vs_sio *io, const char *partitions_dir,
                 struct part_create *v, size_t n)
{
    char(*names)[128] = vs_xcalloc(n ? n : 1, sizeof(*names));
    size_t made = 0;
    for (size_t i = 0; i < n; i++)
        v[i].made = 0;
    int rc = mkdir_0700(io, partitions_dir);
    if (rc < 0)
        goto out;
    /* 1. every missing directory staged; 2. each made durable; 3. each
     * renamed into place; 4. one fsync of the parent for them all */
    for (size_t i = 0; i < n; i++) {
        char final[DSEG_PATH_MAX];
        struct stat st;
        rc = pdir_name(names[i], sizeof(names[i]), &v[i].id);
        if (rc == 0)
            rc = afile_join(final, sizeof(final), partitions_dir, names[i]);
        if (rc < 0)
            goto out;
        if (stat(final, &st) == 0)
            continue; /* there already: part_open checks it */
        if (errno != ENOENT) {
            rc = -errno;
            goto out;
        }
        rc = create_stage(io, partitions_dir, names[i], &v[i].id,
                          v[i].purge_generation);
        if (rc < 0)
            goto out;
        v[i].made = 1;
    }
    for (size_t i = 0; i < n; i++)
        if (v[i].made && (rc = create_durable(io, partitions_dir, names[i],
                                              v[i].replicated)) < 0)
            goto out;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].made)
            continue;
        rc = create_publish(io, partitions_dir, names[i]);
        if (rc < 0)
            goto out;
        made++;
    }
    rc = made ? sio_dir_fsync(io, partitions_dir) : 0;
out:
    if (rc < 0)
        for (size_t i = 0; i < n; i++)
            v[i].made = 0;
    free(names);
    return rc;
}

/* ---- open ---- */

/* part_opts.unsynced_max, or the one the policy implies (partition.h). */
static uint64_t
unsynced_window(const struct part_opts *o)
{
    uint64_t w = 0;
    if (o->durability == PART_FSYNC_INTERVAL)
        w = 2 * o->fsync_bytes + 2 * o->limits.max_batch_bytes;
    return o->unsynced_max > w ? o->unsynced_max : w;
}

static int
load_segments(struct vs_part *p, struct part_verdict *v)
{
    uint64_t *starts = NULL;
    size_t n = 0;
    int rc = list_segments(p, &starts, &n);
    if (rc < 0)
        return rc;
    if (n == 0) {
        refuse(v, &p->id, PART_R_NO_SEGMENT, ".", 0, "no .log file");
        free(starts);
        return -EBADMSG;
    }
    uint64_t expect = 0;
    for (size_t i = 0; i < n; i++) {
        struct dseg *s = seg_push(p);
        rc = dseg_init(s, p->dir, starts[i]);
        if (rc < 0)
            break;
        s->read_only = p->opts.read_only;
        s->unsynced_max = unsynced_window(&p->opts);
        if (i > 0 && starts[i] < expect) {
            refuse(v, &p->id, PART_R_SEGMENT_ORDER, s->log_name, 0,
                   "segment starts below the previous segment's end");
            rc = -EBADMSG;
            break;
        }
        if (i + 1 < n)
            rc = dseg_load_sealed(p->io, s, p->opts.index_interval, expect, v);
        else
            rc = dseg_load_active(p->io, s, p->opts.index_interval, expect,
                                  p->opts.durability, p->opts.cut_damaged_tail,
                                  p->floor, v);
        if (rc == -EBADMSG && v) {
            /* prefix the partition identity */
            struct part_verdict tmp = *v;
            refuse(v, &p->id, tmp.reason, tmp.file, tmp.position, tmp.msg);
        }
        if (rc < 0)
            break;
        int strict = p->opts.durability == PART_FSYNC_EVERY_BATCH &&
                     !p->opts.cut_damaged_tail;
        if (strict && i + 1 < n &&
            (s->empty || s->last_offset + 1 != starts[i + 1])) {
            char what[200];
            if (s->empty)
                snprintf(what, sizeof(what),
                         "sealed segment starting at offset %" PRIu64
                         " is empty; the next starts at %" PRIu64,
                         starts[i], starts[i + 1]);
            else
                snprintf(what, sizeof(what),
                         "offsets %" PRIu64 "..%" PRIu64
                         " are missing between this segment and the next",
                         s->last_offset + 1, starts[i + 1] - 1);
            refuse(v, &p->id, PART_R_SEGMENT_GAP, s->log_name,
                   s->empty ? 0 : s->last_batch_pos, what);
            rc = -EBADMSG;
            break;
        }
        if (!s->empty) {
            if (i + 1 < n && s->last_offset >= starts[i + 1]) {
                refuse(v, &p->id, PART_R_SEGMENT_ORDER, s->log_name,
                       s->last_batch_pos,
                       "segment runs past the next segment's start");
                rc = -EBADMSG;
                break;
            }
            expect = s->last_offset + 1;
            if (s->last_ts > p->last_ts)
                p->last_ts = s->last_ts;
        } else if (starts[i] > expect) {
            expect = starts[i];
        }
    }
    free(starts);
    /* every segment checked out: now rewrite the sealed segments' stale
     * indexes (deferred so that a refusal modifies nothing) */
    for (size_t i = 0; rc == 0 && i + 1 < p->nsegs; i++)
        if (p->segs[i].idx_stale)
            rc = dseg_seal(p->io, &p->segs[i]);
    if (rc == 0) {
        struct dseg *a = active(p);
        uint64_t end = a->empty ? a->start : a->last_offset + 1;
        p->next_offset = end > p->floor ? end : p->floor;
    }
    return rc;
}

int
part_take_created(struct vs_part *p)
{
    int c = p->created;
    p->created = 0;
    return c;
}

int
part_open(struct vs_sio *io, const char *partitions_dir,
          const struct part_id *id, const struct part_opts *opts, int create,
          uint64_t purge_generation, struct vs_part **out,
          struct part_verdict *verdict)
{
    *out = NULL;
    if (verdict)
        memset(verdict, 0, sizeof(*verdict));
    char name[128];
    int rc = pdir_name(name, sizeof(name), id);
    if (rc < 0)
        return rc;
    struct vs_part *p = vs_xcalloc(1, sizeof(*p));
    p->io = io;
    p->visible_cap = UINT64_MAX;
    p->id = *id;
    if (opts)
        p->opts = *opts;
    else
        part_opts_default(&p->opts);
    p->created = p->opts.created_now;
    if (snprintf(p->parent, sizeof(p->parent), "%s", partitions_dir) >=
            (int)sizeof(p->parent) ||
        afile_join(p->dir, sizeof(p->dir), partitions_dir, name) < 0) {
        rc = -ENAMETOOLONG;
        goto fail;
    }
    if (p->opts.read_only && (create || purge_generation)) {
        rc = -EINVAL;
        goto fail;
    }
    struct stat st;
    if (stat(p->dir, &st) == -1) {
        rc = -errno;
        if (rc != -ENOENT || !create)
            goto fail;
        rc = mkdir_0700(io, partitions_dir);
        if (rc == 0)
            rc = create_dir(io, partitions_dir, name, id, purge_generation,
                            p->opts.replicated);
        if (rc < 0)
            goto fail;
        p->created = 1;
    } else if (!S_ISDIR(st.st_mode)) {
        rc = -ENOTDIR;
        goto fail;
    }
    rc = format_check(p, verdict);
    if (rc == 0)
        rc = state_read(p, verdict);
    if (rc < 0)
        goto fail;
    if (purge_generation > p->purge_gen) {
        /* An interrupted (or unseen) purge: complete it first. */
        uint64_t start = 0;
        if (p->opts.purge_keep_offsets) {
            rc = load_segments(p, verdict);
            if (rc < 0)
                goto fail;
            start = p->next_offset;
            rc = state_write(p, p->purge_gen, start);
            if (rc < 0)
                goto fail;
        }
        rc = do_purge(p, purge_generation, start);
        if (rc < 0)
            goto fail;
    } else {
        rc = load_segments(p, verdict);
        if (rc < 0)
            goto fail;
    }
    *out = p;
    return 0;
fail:
    free_segs(p);
    free(p->segs);
    free(p);
    return rc;
}

static void
part_free(struct vs_part *p)
{
    free_segs(p);
    free(p->segs);
    free(p);
}

int
part_close(struct vs_part *p)
{
    if (!p)
        return 0;
    int rc = 0;
    if (p->nsegs > 0 && !sio_is_fatal(p->io) && !p->opts.read_only) {
        struct dseg *a = active(p);
        rc = dseg_sync(p->io, a, 1);
        if (rc == 0)
            rc = dseg_seal(p->io, a);
        if (rc == 0 && p->floor != p->next_offset)
            rc = state_write(p, p->purge_gen, p->next_offset);
    }
    part_free(p);
    return rc;
}

void
part_abandon(struct vs_part *p)
{
    if (p)
        part_free(p);
}

/* ---- append ---- */

static int
sync_active(struct vs_part *p)
{
    int rc = dseg_sync(p->io, active(p), 0);
    if (rc == 0) {
        p->unsynced_bytes = 0;
        p->hidden = 0; /* everything appended is durable */
    }
    return rc;
}

/* Seals the active segment and opens a new one at next_offset. The new
 * segment is created first, so a failure leaves the old one active. */
static int
roll(struct vs_part *p)
{
    struct dseg s;
    int rc = dseg_init(&s, p->dir, p->next_offset);
    if (rc < 0)
        return rc;
    rc = dseg_create(p->io, &s);
    if (rc < 0)
        return rc;
    rc = sio_dir_fsync(p->io, p->dir);
    if (rc == 0)
        rc = dseg_sync(p->io, active(p), 1);
    if (rc == 0)
        rc = dseg_seal(p->io, active(p));
    if (rc == -ENOSPC)
        rc = 0; /* the old index stays stale: rebuilt at next open */
    if (rc < 0) {
        dseg_fini(p->io, &s);
        return rc;
    }
    p->unsynced_bytes = 0;
    *seg_push(p) = s;
    return 0;
}

/* part_append and part_append_nosync; `sync` 0 leaves every fsync to the
 * caller. */
/* What every append does before its write: validates the batch (its
 * message count in *n), refuses when the partition takes none (read-only,
 * fatal, a failed purge, a begun write owning the segment's end), moves
 * the interval floor ahead of the offsets it will hand out and rolls a
 * full active segment. 0 with *seg the segment to write to, or -errno. */
static int
append_prepare(struct vs_part *p, uint8_t *batch, size_t len,
               enum batch_err *berr, uint32_t *n, struct dseg **seg)
{
    struct batch_info info;
    enum batch_err be = batch_validate(batch, len, &p->opts.limits, 1, &info);
    if (berr)
        *berr = be;
    if (be != BATCH_OK)
        return -EINVAL;
    if (p->opts.read_only)
        return -EROFS;
    if (sio_is_fatal(p->io))
        return -VS_EFATAL;
    if (p->nsegs == 0)
        return -EIO; /* a failed purge: abandon and reopen */
    if (p->wpending)
        return -EBUSY; /* a begun write owns the segment's end */
    uint64_t base = p->next_offset;
    *n = info.message_count;
    int rc;
    /* The floor goes ahead of every offset handed out under interval. */
    if (p->opts.durability == PART_FSYNC_INTERVAL && base + *n > p->floor) {
        rc = state_write(p, p->purge_gen, base + *n + p->opts.frontier_step);
        if (rc < 0)
            return rc;
    }
    struct dseg *a = active(p);
    if (a->size > 0 && a->size + len > p->opts.segment_size) {
        rc = roll(p);
        if (rc < 0)
            return rc;
        a = active(p);
    }
    *seg = a;
    return 0;
}

static int
append_batch(struct vs_part *p, uint8_t *batch, size_t len, uint64_t wall_us,
             struct part_append_result *res, enum batch_err *berr, int sync)
{
    uint32_t n = 0;
    struct dseg *a = NULL;
    int rc = append_prepare(p, batch, len, berr, &n, &a);
    if (rc < 0)
        return rc;
    uint64_t base = p->next_offset;
    uint64_t ts = batch_next_timestamp(p->last_ts, wall_us);
    batch_stamp(batch, p->id.partition_id, base, ts);
    rc = dseg_append(p->io, a, batch, len, p->opts.index_interval);
    if (rc < 0)
        return rc;
    p->next_offset = base + n;
    p->last_ts = ts;
    p->unsynced_bytes += len;
    if (!sync) {
        if (p->opts.durability == PART_FSYNC_EVERY_BATCH && !p->hidden) {
            p->hidden = 1;
            p->hidden_from = base;
        }
    } else if (p->opts.durability == PART_FSYNC_EVERY_BATCH ||
               p->unsynced_bytes >= p->opts.fsync_bytes) {
        rc = sync_active(p);
        if (rc < 0)
            return rc;
    }
    if (res) {
        res->base_offset = base;
        res->base_timestamp = ts;
        res->message_count = n;
    }
    return 0;
}

int
part_append(struct vs_part *p, uint8_t *batch, size_t len, uint64_t wall_us,
            struct part_append_result *res, enum batch_err *berr)
{
    return append_batch(p, batch, len, wall_us, res, berr, 1);
}

int
part_append_nosync(struct vs_part *p, uint8_t *batch, size_t len,
                   uint64_t wall_us, struct part_append_result *res,
                   enum batch_err *berr)
{
    return append_batch(p, batch, len, wall_us, res, berr, 0);
}

/* ---- appends whose write runs on another thread ----
 * part_append_begin does on the loop what append_batch does before its
 * write (validation, the floor, the roll, the stamp) and reserves the
 * active segment's end; part_write_run is the write alone (any thread);
 * part_append_end does on the loop what append_batch does after it. */

int
part_append_begin(struct vs_part *p, uint8_t *batch, size_t len,
                  uint64_t wall_us, struct part_append_result *res,
                  enum batch_err *berr, struct part_write *w)
{
    memset(w, 0, sizeof(*w));
    w->fd = -1;
    if (p->wpending)
        return -EBUSY;
    uint32_t n = 0;
    struct dseg *a = NULL;
    int rc = append_prepare(p, batch, len, berr, &n, &a);
    if (rc < 0)
        return rc;
    uint64_t base = p->next_offset;
    /* the writer's own fd: the handle may close its fd (purge) while the
     * write runs, and the number could then name another file */
    w->fd = fcntl(a->fd, F_DUPFD_CLOEXEC, 0);
    if (w->fd < 0)
        return -errno;
    uint64_t ts = batch_next_timestamp(p->last_ts, wall_us);
    batch_stamp(batch, p->id.partition_id, base, ts);
    w->io = p->io;
    w->buf = batch;
    w->len = len;
    w->pos = a->size;
    w->base = base;
    w->next = base + n;
    w->ts = ts;
    w->token = atomic_fetch_add(&part_wtokens, 1) + 1;
    p->wpending = 1;
    p->wtoken = w->token;
    if (res) {
        res->base_offset = base;
        res->base_timestamp = ts;
        res->message_count = n;
    }
    return 0;
}

void
part_write_run(struct part_write *w)
{
    size_t done = 0;
    w->err = 0;
    while (done < w->len) {
        ssize_t n = w->io->pwrite(w->io, w->fd, w->buf + done, w->len - done,
                                  (off_t)(w->pos + done));
        if (n < 0) {
            w->err = (int)n;
            break;
        }
        if (n == 0) { /* no progress and no error: out of space */
            w->err = -ENOSPC;
            break;
        }
        done += (size_t)n;
    }
    w->written = done;
}

void
part_write_release(struct part_write *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
}

int
part_append_end(struct vs_part *p, struct part_write *w)
{
    part_write_release(w);
    if (!p->wpending || p->wtoken != w->token)
        return -ECANCELED; /* purged or cut meanwhile: nothing accounted */
    p->wpending = 0;
    struct dseg *a = active(p);
    if (sio_is_fatal(p->io))
        return -VS_EFATAL;
    if (w->err == -ENOSPC) {
        /* cut the partial write back; a failing cut is fatal */
        int rc = sio_ftruncate(p->io, a->fd, (off_t)w->pos, a->log_path);
        return rc < 0 ? rc : -ENOSPC;
    }
    if (w->err < 0)
        return sio_set_fatal(p->io, SIO_WRITE, -w->err, a->log_path);
    int rc =
        dseg_append_written(p->io, a, w->buf, w->len, p->opts.index_interval);
    if (rc < 0)
        return rc;
    p->next_offset = w->next;
    p->last_ts = w->ts;
    p->unsynced_bytes += w->len;
    if (p->opts.durability == PART_FSYNC_EVERY_BATCH && !p->hidden) {
        p->hidden = 1;
        p->hidden_from = w->base;
    }
    return 0;
}

int
part_write_pending(const struct vs_part *p)
{
    return p->wpending;
}

int
part_sync_target(const struct vs_part *p, struct part_sync_target *t)
{
    if (p->nsegs == 0 || sio_is_fatal(p->io))
        return -EIO;
    const struct dseg *a = &p->segs[p->nsegs - 1];
    if (a->fd < 0)
        return -EIO;
    t->fd = a->fd;
    t->path = a->log_path;
    t->unsynced_bytes = p->unsynced_bytes;
    t->next_offset = p->next_offset;
    return 0;
}

void
part_sync_done(struct vs_part *p, const struct part_sync_target *t,
               uint64_t now_ms)
{
    p->unsynced_bytes = p->unsynced_bytes > t->unsynced_bytes
                            ? p->unsynced_bytes - t->unsynced_bytes
                            : 0;
    p->last_sync_ms = now_ms;
    if (p->hidden && t->next_offset >= p->next_offset)
        p->hidden = 0;
    else if (p->hidden && t->next_offset > p->hidden_from)
        p->hidden_from = t->next_offset;
}

int
part_sync_due(const struct vs_part *p, uint64_t now_ms)
{
    if (p->unsynced_bytes == 0 || p->nsegs == 0)
        return 0;
    if (p->opts.durability == PART_FSYNC_EVERY_BATCH)
        return 1;
    return now_ms - p->last_sync_ms >= p->opts.fsync_interval_ms ||
           p->unsynced_bytes >= p->opts.fsync_bytes;
}

int
part_every_batch(const struct vs_part *p)
{
    return p->opts.durability == PART_FSYNC_EVERY_BATCH;
}

uint64_t
part_visible_next(const struct vs_part *p)
{
    uint64_t v = p->hidden && p->hidden_from < p->next_offset ? p->hidden_from
                                                              : p->next_offset;
    return v < p->visible_cap ? v : p->visible_cap;
}

int
part_tick(struct vs_part *p, uint64_t now_ms)
{
    if (p->opts.durability != PART_FSYNC_INTERVAL || p->nsegs == 0)
        return 0;
    if (p->unsynced_bytes == 0) {
        p->last_sync_ms = now_ms;
        return 0;
    }
    if (now_ms - p->last_sync_ms < p->opts.fsync_interval_ms &&
        p->unsynced_bytes < p->opts.fsync_bytes)
        return 0;
    p->last_sync_ms = now_ms;
    return sync_active(p);
}

int
part_flush(struct vs_part *p)
{
    if (p->nsegs == 0)
        return -EIO;
    return sync_active(p);
}

/* ---- reads ---- */

static int
has_messages(const struct vs_part *p, uint64_t *first, uint64_t *last)
{
    int any = 0;
    for (size_t i = 0; i < p->nsegs; i++) {
        const struct dseg *s = &p->segs[i];
        if (s->empty)
            continue;
        if (!any)
            *first = s->first_offset;
        *last = s->last_offset;
        any = 1;
    }
    return any;
}

/* Emits the frames of batch b with offsets in [lo, lo + want) as one
 * record; returns the number of messages emitted. b is a structurally
 * valid stamped batch. */
static uint32_t
emit_trimmed(struct vs_wbuf *out, const uint8_t *b, uint64_t lo, uint32_t want,
             struct part_poll_result *res)
{
    uint64_t base = batch_base_offset(b);
    uint64_t blen = batch_length(b);
    uint32_t n = batch_count(b);
    uint64_t first = lo > base ? lo : base;
    /* exclusive; saturated: a damaged file may hold offsets near
     * UINT64_MAX, and a wrapped end would select nothing */
    uint64_t endx = UINT64_MAX - first < want ? UINT64_MAX : first + want;
    if (base >= lo && base + n <= endx) {
        vs_wr_bytes(out, b, (size_t)blen); /* whole batch */
        if (res->count == 0)
            res->first_offset = base;
        res->last_offset = base + n - 1;
        res->count += n;
        res->batches++;
        return n;
    }
    size_t hdr_at = out->len;
    vs_wr_bytes(out, b, BATCH_HEADER_SIZE);
    uint64_t pos = BATCH_HEADER_SIZE;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n && pos + BATCH_FRAME_SIZE <= blen; i++) {
        const uint8_t *f = b + pos;
        size_t flen = BATCH_FRAME_SIZE +
                      (size_t)vs_load_u32(f + BATCH_FOFF_PAYLOAD_LEN) +
                      vs_load_u32(f + BATCH_FOFF_HEADERS_LEN);
        uint64_t off = base + vs_load_u32(f + BATCH_FOFF_OFFSET_D);
        if (off >= first && off < endx) {
            /* a sealed segment's frames are not verified at open: a frame
             * that fails its stored checksum must keep failing after the
             * re-stamp, never be sealed afresh over damaged bytes */
            int intact = batch_frame_checksum(f, flen) ==
                         vs_load_u64(f + BATCH_FOFF_CHECKSUM);
            uint8_t *nf = vs_wbuf_reserve(out, flen);
            memcpy(nf, f, flen);
            out->len += flen;
            vs_store_u32(nf + BATCH_FOFF_OFFSET_D, kept);
            uint64_t ck = batch_frame_checksum(nf, flen);
            vs_store_u64(nf + BATCH_FOFF_CHECKSUM, intact ? ck : ~ck);
            kept++;
        }
        pos += flen;
    }
    if (kept == 0) {
        out->len = hdr_at;
        return 0;
    }
    uint8_t *h = out->data + hdr_at;
    vs_store_u64(h + BATCH_OFF_LENGTH, out->len - hdr_at);
    vs_store_u32(h + BATCH_OFF_COUNT, kept);
    /* rebased: the first kept message becomes offset_delta 0 */
    vs_store_u64(h + BATCH_OFF_BASE_OFFSET, first);
    vs_store_u64(h + BATCH_OFF_CHECKSUM, batch_compute_checksum(h));
    if (res->count == 0)
        res->first_offset = first;
    res->last_offset = first + kept - 1;
    res->count += kept;
    res->batches++;
    return kept;
}

/* Walks segment s from pos for the first batch whose header satisfies
 * the predicate (by offset: last_offset >= key; by timestamp: base_ts >=
 * key). *found_pos and hdr filled; 0 found, 1 not in this segment. */
static int
seek_batch(struct vs_part *p, const struct dseg *s, uint64_t pos, int by_ts,
           uint64_t key, uint64_t *found_pos, uint8_t *hdr, int *fdc)
{
    while (pos + BATCH_HEADER_SIZE <= s->size) {
        int rc = dseg_read(p->io, s, pos, hdr, BATCH_HEADER_SIZE, fdc);
        if (rc < 0)
            return rc;
        uint64_t blen = batch_length(hdr);
        if (batch_header_check(hdr) != BATCH_OK || blen > s->size - pos)
            return -EIO;
        if (by_ts ? batch_base_timestamp(hdr) >= key
                  : batch_last_offset(hdr) >= key) {
            *found_pos = pos;
            return 0;
        }
        pos += blen;
    }
    return 1;
}

/* 1 if the batch whose header is hdr is emitted whole by a read of
 * `want` messages from offset lo (emit_trimmed's whole-batch case). */
static int
poll_whole(const uint8_t *hdr, uint64_t lo, uint32_t want)
{
    uint64_t base = batch_base_offset(hdr);
    uint32_t n = batch_count(hdr);
    return n > 0 && base >= lo && n <= want;
}

/* part_poll's whole-batch case: the batch at pos of s is read straight
 * into the reply's end and verified there (as part_poll verifies every
 * batch it reads); kept only if it passes. 0, -EBADMSG, -errno. */
static int
poll_read_whole(struct vs_part *p, const struct dseg *s, uint64_t pos,
                size_t blen, int *fdc, struct vs_wbuf *out,
                struct part_poll_result *res)
{
    uint8_t *dst = vs_wbuf_reserve(out, blen);
    int rc = dseg_read(p->io, s, pos, dst, blen, fdc);
    if (rc < 0)
        return rc;
    if (p->opts.verify_reads) {
        enum batch_err be = batch_validate(dst, blen, NULL, 0, NULL);
        if (be != BATCH_OK) {
            vs_log_error(
                "partition %" PRIu32 ".%" PRIu32 ".%" PRIu32
                " (%s): the batch at offset %" PRIu64 " (%s, position %" PRIu64
                ") fails verification on read: %s; not served",
                p->id.stream_id, p->id.topic_id, p->id.partition_id, p->dir,
                batch_base_offset(dst), s->log_name, pos, batch_err_str(be));
            p->read_errors++;
            return -EBADMSG;
        }
    }
    uint64_t base = batch_base_offset(dst);
    uint32_t n = batch_count(dst);
    out->len += blen;
    if (res->count == 0)
        res->first_offset = base;
    res->last_offset = base + n - 1;
    res->count += n;
    res->batches++;
    return 0;
}

int
part_poll(struct vs_part *p, enum part_strategy strategy, uint64_t value,
          uint32_t count, size_t max_bytes, struct vs_wbuf *out,
          struct part_poll_result *res)
{
    memset(res, 0, sizeof(*res));
    uint64_t first = 0, last = 0, start;
    uint8_t hdr[BATCH_HEADER_SIZE];
    int fdc = -1;
    int rc = 0;
    switch (strategy) {
    case PART_POLL_OFFSET:
    case PART_POLL_NEXT:
    case PART_POLL_FIRST:
    case PART_POLL_LAST:
    case PART_POLL_TIMESTAMP:
        break;
    default:
        return -EINVAL;
    }
    if (count == 0 || !has_messages(p, &first, &last))
        return 0;
    /* batches still waiting for their fsync are not visible yet */
    uint64_t visible = part_visible_next(p);
    if (visible <= first)
        return 0;
    if (last >= visible)
        last = visible - 1;
    switch (strategy) {
    case PART_POLL_FIRST:
        start = first;
        break;
    case PART_POLL_LAST:
        start = last + 1 >= count ? last + 1 - count : 0;
        if (start < first)
            start = first;
        break;
    case PART_POLL_TIMESTAMP: {
        start = UINT64_MAX;
        for (size_t i = 0; i < p->nsegs && start == UINT64_MAX; i++) {
            const struct dseg *s = &p->segs[i];
            if (s->empty || s->last_ts < value)
                continue;
            uint64_t fp;
            rc = seek_batch(p, s, dseg_pos_for_timestamp(s, value), 1, value,
                            &fp, hdr, &fdc);
            dseg_fd_release(p->io, s, &fdc);
            if (rc < 0)
                return rc;
            if (rc == 0)
                start = batch_base_offset(hdr);
        }
        if (start == UINT64_MAX)
            return 0;
        break;
    }
    default:
        start = value;
        break;
    }
    /* a start below the first retained message reads from that message:
     * `left` below counts offsets from start up to the visible end, and
     * counting the trimmed offsets before `first` would let the reads run
     * past that end (into batches not yet committed or not yet synced)
     * whenever fewer than `count` messages are visible */
    if (start < first)
        start = first;
    if (start > last)
        return 0;
    uint32_t left = count;
    if (last - start + 1 < left)
        left = (uint32_t)(last - start + 1);
    uint8_t *buf = NULL;
    size_t cap = 0;
    size_t out0 = out->len;
    for (size_t i = 0; i < p->nsegs && left > 0; i++) {
        const struct dseg *s = &p->segs[i];
        if (s->empty || s->last_offset < start)
            continue;
        uint64_t pos;
        rc = seek_batch(p, s, dseg_pos_for_offset(s, start), 0, start, &pos,
                        hdr, &fdc);
        if (rc == 1) {
            rc = 0;
            dseg_fd_release(p->io, s, &fdc);
            continue;
        }
        while (rc == 0 && left > 0 && pos < s->size) {
            rc = dseg_read(p->io, s, pos, hdr, BATCH_HEADER_SIZE, &fdc);
            if (rc < 0)
                break;
            uint64_t blen = batch_length(hdr);
            if (batch_header_check(hdr) != BATCH_OK || blen > s->size - pos) {
                rc = -EIO;
                break;
            }
            if (batch_base_offset(hdr) > last) {
                left = 0; /* past the visible end: never served */
                break;
            }
            if (poll_whole(hdr, start, left)) {
                /* read and verified in place in the reply: no copy */
                rc = poll_read_whole(p, s, pos, (size_t)blen, &fdc, out, res);
                if (rc < 0)
                    break;
                left -= batch_count(hdr);
                start = res->last_offset + 1;
                pos += blen;
                if (out->len - out0 >= max_bytes)
                    left = 0;
                continue;
            }
            if (blen > cap) {
                cap = (size_t)blen;
                free(buf);
                buf = vs_xmalloc(cap);
            }
            rc = dseg_read(p->io, s, pos, buf, (size_t)blen, &fdc);
            if (rc < 0)
                break;
            if (p->opts.verify_reads) {
                /* every message checksum and the batch checksum, on every
                 * read from disk: damage is never served */
                enum batch_err be =
                    batch_validate(buf, (size_t)blen, NULL, 0, NULL);
                if (be != BATCH_OK) {
                    vs_log_error("partition %" PRIu32 ".%" PRIu32 ".%" PRIu32
                                 " (%s): the batch at offset %" PRIu64
                                 " (%s, position %" PRIu64
                                 ") fails verification on read: %s; "
                                 "not served",
                                 p->id.stream_id, p->id.topic_id,
                                 p->id.partition_id, p->dir,
                                 batch_base_offset(buf), s->log_name, pos,
                                 batch_err_str(be));
                    p->read_errors++;
                    rc = -EBADMSG;
                    break;
                }
            }
            uint32_t got = emit_trimmed(out, buf, start, left, res);
            left -= got;
            if (got)
                start = res->last_offset + 1;
            pos += blen;
            if (out->len - out0 >= max_bytes)
                left = 0;
        }
        dseg_fd_release(p->io, s, &fdc);
        if (rc < 0)
            break;
    }
    free(buf);
    if (rc < 0) {
        out->len = out0;
        memset(res, 0, sizeof(*res));
    }
    return rc;
}

/* ---- stats ---- */

void
part_stats(const struct vs_part *p, struct part_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->next_offset = p->next_offset;
    out->segments = (uint32_t)p->nsegs;
    out->unsynced_bytes = p->unsynced_bytes;
    out->read_errors = p->read_errors;
    uint64_t first = 0, last = 0;
    out->empty = !has_messages(p, &first, &last);
    out->first_offset = out->empty ? p->next_offset : first;
    out->current_offset = out->empty ? 0 : last;
    for (size_t i = 0; i < p->nsegs; i++) {
        const struct dseg *s = &p->segs[i];
        out->size_bytes += s->size;
        if (!s->empty) {
            out->messages += s->last_offset - s->first_offset + 1;
            out->last_timestamp = s->last_ts;
        }
    }
}

const struct part_id *
part_ident(const struct vs_part *p)
{
    return &p->id;
}

const char *
part_dir(const struct vs_part *p)
{
    return p->dir;
}

struct vs_sio *
part_io(struct vs_part *p)
{
    return p->io;
}

/* ---- retention ---- */

/* Deletes segs[0] (sealed). */
static int
drop_oldest(struct vs_part *p, struct part_retention_result *res)
{
    struct dseg *s = &p->segs[0];
    int rc = dseg_unlink(p->io, s);
    if (rc < 0)
        return rc == -VS_EFATAL
                   ? rc
                   : sio_set_fatal(p->io, SIO_UNLINK, -rc, s->log_path);
    if (res) {
        res->segments_deleted++;
        res->bytes_deleted += s->size;
    }
    dseg_fini(p->io, s);
    memmove(&p->segs[0], &p->segs[1], (p->nsegs - 1) * sizeof(*p->segs));
    p->nsegs--;
    return 0;
}

static uint64_t
total_size(const struct vs_part *p)
{
    uint64_t t = 0;
    for (size_t i = 0; i < p->nsegs; i++)
        t += p->segs[i].size;
    return t;
}

int
part_retention(struct vs_part *p, uint64_t now_us, uint64_t message_expiry_us,
               uint64_t max_bytes, struct part_retention_result *res)
{
    if (res)
        memset(res, 0, sizeof(*res));
    int rc = 0, any = 0;
    int expiry = message_expiry_us != 0 && message_expiry_us != UINT64_MAX;
    int cap = max_bytes != 0 && max_bytes != UINT64_MAX;
    while (rc == 0 && p->nsegs > 1) {
        const struct dseg *s = &p->segs[0];
        int expired = s->empty || (expiry && s->last_ts <= now_us &&
                                   now_us - s->last_ts >= message_expiry_us);
        int over = cap && total_size(p) > max_bytes;
        if (!expired && !over)
            break;
        rc = drop_oldest(p, res);
        any = 1;
    }
    if (rc == 0 && any)
        rc = sio_dir_fsync(p->io, p->dir);
    return rc;
}

uint64_t
part_retention_watermark(const struct vs_part *p, uint64_t now_us,
                         uint64_t message_expiry_us, uint64_t max_bytes,
                         uint64_t watermark)
{
    int expiry = message_expiry_us != 0 && message_expiry_us != UINT64_MAX;
    int cap = max_bytes != 0 && max_bytes != UINT64_MAX;
    uint64_t size = total_size(p);
    size_t k = 0; /* segments part_retention / the watermark would drop */
    while (k + 1 < p->nsegs) {
        const struct dseg *s = &p->segs[k];
        int expired = s->empty || (expiry && s->last_ts <= now_us &&
                                   now_us - s->last_ts >= message_expiry_us);
        int over = cap && size > max_bytes;
        int below = s->empty ? p->segs[k + 1].start <= watermark
                             : s->last_offset < watermark;
        if (!expired && !over && !below)
            break;
        size -= s->size;
        k++;
    }
    return k == 0 ? 0 : p->segs[k].start;
}

uint64_t
part_watermark_for_segments(const struct vs_part *p, uint32_t n)
{
    size_t sealed = p->nsegs - 1;
    size_t k = n < sealed ? n : sealed;
    if (k == 0) {
        uint64_t first = 0, last = 0;
        return has_messages(p, &first, &last) ? first : p->next_offset;
    }
    return p->segs[k].start;
}

int
part_apply_watermark(struct vs_part *p, uint64_t watermark,
                     struct part_retention_result *res)
{
    if (res)
        memset(res, 0, sizeof(*res));
    int rc = 0, any = 0;
    while (rc == 0 && p->nsegs > 1) {
        const struct dseg *s = &p->segs[0];
        int below = s->empty ? p->segs[1].start <= watermark
                             : s->last_offset < watermark;
        if (!below)
            break;
        rc = drop_oldest(p, res);
        any = 1;
    }
    if (rc == 0 && any)
        rc = sio_dir_fsync(p->io, p->dir);
    return rc;
}

int
part_seal_active(struct vs_part *p)
{
    if (p->opts.read_only)
        return -EROFS;
    if (sio_is_fatal(p->io))
        return -VS_EFATAL;
    if (p->nsegs == 0)
        return -EIO;
    return active(p)->size > 0 ? roll(p) : 0;
}

int
part_set_purge_generation(struct vs_part *p, uint64_t purge_generation)
{
    if (purge_generation <= p->purge_gen)
        return 0;
    return state_write(p, purge_generation, p->floor);
}

int
part_purge(struct vs_part *p, uint64_t purge_generation)
{
    if (purge_generation <= p->purge_gen)
        return 0;
    p->wpending = 0; /* a begun write is cancelled (part_append_end) */
    uint64_t start = 0;
    int rc;
    if (p->opts.purge_keep_offsets) {
        start = p->next_offset;
        rc = state_write(p, p->purge_gen, start); /* floor first */
        if (rc < 0)
            return rc;
    }
    /* On failure the handle has no active segment: the caller abandons it
     * and reopens, and part_open completes the purge. */
    return do_purge(p, purge_generation, start);
}

/* ---- replicated partitions (shard/data/pjournal.c) ---- */

static struct dseg *
seg_by_start(struct vs_part *p, uint64_t start)
{
    for (size_t i = 0; i < p->nsegs; i++)
        if (p->segs[i].start == start)
            return &p->segs[i];
    return NULL;
}

int
part_append_stamped(struct vs_part *p, const uint8_t *batch, size_t len,
                    struct part_log_pos *pos, enum batch_err *berr)
{
    struct batch_info info;
    enum batch_err be = batch_validate(batch, len, &p->opts.limits, 0, &info);
    if (be == BATCH_OK &&
        vs_load_u64(batch + BATCH_OFF_PARTITION_ID) != p->id.partition_id)
        be = BATCH_E_NOT_ZEROED;
    if (berr)
        *berr = be;
    if (be != BATCH_OK)
        return -EINVAL;
    if (batch_base_offset(batch) != p->next_offset ||
        batch_base_timestamp(batch) < p->last_ts)
        return -EINVAL;
    if (p->opts.read_only)
        return -EROFS;
    if (sio_is_fatal(p->io))
        return -VS_EFATAL;
    if (p->nsegs == 0)
        return -EIO;
    struct dseg *a = active(p);
    int rc;
    if (a->size > 0 && a->size + len > p->opts.segment_size) {
        rc = roll(p);
        if (rc < 0)
            return rc;
        a = active(p);
    }
    uint64_t at = a->size;
    rc = dseg_append(p->io, a, batch, len, p->opts.index_interval);
    if (rc < 0)
        return rc;
    p->next_offset += info.message_count;
    p->last_ts = batch_base_timestamp(batch);
    p->unsynced_bytes += len;
    if (pos) {
        pos->seg_start = a->start;
        pos->position = at;
    }
    return 0;
}

void
part_set_visible_cap(struct vs_part *p, uint64_t next)
{
    p->visible_cap = next;
}

uint64_t
part_active_start(const struct vs_part *p)
{
    return p->nsegs ? p->segs[p->nsegs - 1].start : 0;
}

int
part_segment_at(const struct vs_part *p, size_t i, uint64_t *start,
                uint64_t *size)
{
    if (i >= p->nsegs)
        return -ENOENT;
    *start = p->segs[i].start;
    *size = p->segs[i].size;
    return 0;
}

int
part_read_log(struct vs_part *p, uint64_t seg_start, uint64_t pos, void *buf,
              size_t len)
{
    struct dseg *s = seg_by_start(p, seg_start);
    if (!s)
        return -ENOENT;
    int fdc = -1;
    int rc = dseg_read(p->io, s, pos, buf, len, &fdc);
    if (fdc >= 0)
        dseg_fd_release(p->io, s, &fdc);
    return rc;
}

/* Finds the position of the batch with base_offset `offset` in s: 0 and
 * *pos, or -EINVAL when no batch starts there. */
static int
find_batch(struct vs_part *p, struct dseg *s, uint64_t offset, uint64_t *pos)
{
    uint64_t at = dseg_pos_for_offset(s, offset);
    uint8_t hdr[BATCH_HEADER_SIZE];
    int fdc = -1, rc = -EINVAL;
    while (at < s->size) {
        int r = dseg_read(p->io, s, at, hdr, sizeof(hdr), &fdc);
        if (r < 0) {
            rc = r;
            break;
        }
        uint64_t base = batch_base_offset(hdr), blen = batch_length(hdr);
        if (base == offset) {
            *pos = at;
            rc = 0;
            break;
        }
        if (base > offset || blen < BATCH_HEADER_SIZE)
            break;
        at += blen;
    }
    if (fdc >= 0)
        dseg_fd_release(p->io, s, &fdc);
    return rc;
}

/* Cuts the index file of s to the entries below `cut` (a sealed
 * segment's index is opened by path). */
static int
cut_index(struct vs_part *p, struct dseg *s, uint64_t cut)
{
    size_t keep = 0;
    while (keep < s->nidx && s->idx[keep].position < cut)
        keep++;
    uint64_t len = (uint64_t)keep * 24u;
    int fd = s->idx_fd, own = 0;
    if (fd < 0) {
        fd = sio_open(p->io, s->idx_path, O_WRONLY, 0);
        if (fd == -ENOENT)
            return 0;
        if (fd < 0)
            return sio_set_fatal(p->io, SIO_OPEN, -fd, s->idx_path);
        own = 1;
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > len) {
        rc = sio_ftruncate(p->io, fd, (off_t)len, s->idx_path);
        if (rc == 0)
            rc = sio_fsync(p->io, fd, s->idx_path);
    }
    if (own)
        sio_close(p->io, fd);
    return rc;
}

int
part_truncate_tail(struct vs_part *p, uint64_t offset)
{
    if (p->opts.read_only)
        return -EROFS;
    if (sio_is_fatal(p->io))
        return -VS_EFATAL;
    if (offset == p->next_offset)
        return 0;
    if (offset > p->next_offset || p->nsegs == 0)
        return -EINVAL;
    if (p->wpending)
        return -EBUSY; /* the write would land past the cut: a hole */
    /* the segment the cut falls in: the last one starting at or below */
    size_t k = p->nsegs;
    while (k > 0 && p->segs[k - 1].start > offset)
        k--;
    if (k == 0)
        return -EINVAL; /* below the retained log */
    k--;
    struct dseg *s = &p->segs[k];
    uint64_t cut = 0;
    int rc = 0;
    if (!s->empty && offset <= s->last_offset)
        rc = find_batch(p, s, offset, &cut);
    else if (offset == (s->empty ? s->start : s->last_offset + 1))
        cut = s->size;
    else
        rc = -EINVAL;
    if (rc < 0)
        return rc;
    /* 1. the floor first (when above the cut): a crash from here on
     * reopens at the log's end */
    if (p->floor > offset) {
        rc = state_write(p, p->purge_gen, offset);
        if (rc < 0)
            return rc;
    }
    /* 2. whole segments above the cut, newest first */
    while (p->nsegs > k + 1) {
        struct dseg *t = &p->segs[p->nsegs - 1];
        rc = dseg_unlink(p->io, t);
        if (rc < 0 && rc != -ENOENT)
            return rc == -VS_EFATAL
                       ? rc
                       : sio_set_fatal(p->io, SIO_UNLINK, -rc, t->log_path);
        dseg_fini(p->io, t);
        p->nsegs--;
    }
    rc = sio_dir_fsync(p->io, p->dir);
    if (rc < 0)
        return rc;
    /* 3. the index below the cut, then the log, each fsynced */
    rc = cut_index(p, s, cut);
    if (rc < 0)
        return rc;
    if (cut < s->size) {
        int fd = s->fd, own = 0;
        if (fd < 0) {
            fd = sio_open(p->io, s->log_path, O_WRONLY, 0);
            if (fd < 0)
                return sio_set_fatal(p->io, SIO_OPEN, -fd, s->log_path);
            own = 1;
        }
        rc = sio_ftruncate(p->io, fd, (off_t)cut, s->log_path);
        if (rc == 0)
            rc = sio_fsync(p->io, fd, s->log_path);
        if (own)
            sio_close(p->io, fd);
        if (rc < 0)
            return rc;
    }
    /* 4. reload the segment as the active one (state, index, fds) */
    uint64_t expect = 0;
    if (k > 0) {
        const struct dseg *b = &p->segs[k - 1];
        expect = b->empty ? b->start : b->last_offset + 1;
    }
    uint64_t start = s->start;
    dseg_fini(p->io, s);
    rc = dseg_init(s, p->dir, start);
    if (rc == 0)
        rc = dseg_load_active(p->io, s, p->opts.index_interval, expect,
                              p->opts.durability, 1, 0, NULL);
    if (rc < 0) {
        p->nsegs = k; /* the handle is unusable: the caller abandons it */
        return rc == -VS_EFATAL
                   ? rc
                   : sio_set_fatal(p->io, SIO_READ, EIO, s->log_path);
    }
    p->next_offset = offset;
    p->last_ts = 0;
    for (size_t i = 0; i < p->nsegs; i++)
        if (!p->segs[i].empty && p->segs[i].last_ts > p->last_ts)
            p->last_ts = p->segs[i].last_ts;
    p->unsynced_bytes = 0;
    p->hidden = 0;
    return 0;
}
