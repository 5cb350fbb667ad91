/*
 * shard/serve/pxfer.c - partition state transfer; see pxfer.h.
 *
 * Each requester has at most one offer here (struct px_offer): while its
 * artifacts are hashed it is only here ("preparing", answered "not
 * available, transient"); once hashed it is cached in the I/O-free
 * xfer_serve (first wins) and keeps what that core does not hold: the
 * segment image's header, the opened segment files and their cut
 * lengths, the offsets image bytes and the checkpoint prepare header.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mem.h"
#include "shard/data/pimage.h"
#include "shard/data/pinstall.h"
#include "shard/serve/pxfer.h"
#include "shard/storage/atomic_file.h"
#include "shard/vsr/xfer_frames.h"

#define PX_PATH_MAX 1400
/* offsets files are 16-20 bytes; a client table of 4096 clients x 4
 * proposals stays well below this */
#define PXFER_SMALL_FILE_MAX (16u << 20)

struct px_file {
    int fd;
    uint64_t len;
};

struct px_offer {
    int used;
    int ready; /* hashed and cached in x->serve (id) */
    uint8_t requester;
    struct vs_u128 nonce;
    uint64_t id;
    uint64_t ckpt, offs_frontier;
    uint64_t commit_min, commit_max;
    struct vs_wbuf hdr; /* segment image header */
    struct px_file *files;
    uint32_t nfiles;
    uint64_t seg_len; /* header + files */
    struct vs_wbuf offs;
    uint8_t prepare[VS_HEADER_SIZE];
    struct vs_xxh3_stream hash; /* over the segment image */
    uint64_t hashed;
};

struct pxfer_sync {
    struct pxfer *x; /* NULL: destroyed meanwhile */
};

/* An install waiting for hooks.fsync */
enum px_install_phase {
    PX_INSTALL_NONE = 0,
    PX_INSTALL_STAGED,    /* the staged files' fsyncs */
    PX_INSTALL_PUBLISHED, /* the publication's directory fsyncs */
};

struct pxfer {
    struct pxfer_opts o;
    struct pxfer_hooks h;
    struct vs_part *p;
    struct vs_pjournal *j;
    struct vs_sio *io;
    struct xfer_fetch fetch;
    struct xfer_serve serve;
    struct px_offer offers[XFER_OFFERS_MAX];
    uint8_t *chunk; /* VS_HEADER_SIZE + chunk_max */
    enum xfer_stage last_stage;
    int installing;
    enum px_install_phase phase;
    struct pxfer_sync *sync; /* the fsync request in flight */
    int holds_budget;        /* counted in o.budget->running */
    uint64_t inst_ckpt, inst_bytes;
    uint64_t session_start_ns;
    uint64_t served_chunks, refused_chunks;
    uint64_t last_bytes;
    double last_secs;
};

/* ---- offers ---- */

static void
offer_free(struct pxfer *x, struct px_offer *e)
{
    for (uint32_t i = 0; i < e->nfiles; i++)
        if (e->files[i].fd >= 0)
            sio_close(x->io, e->files[i].fd);
    free(e->files);
    vs_wbuf_fini(&e->hdr);
    vs_wbuf_fini(&e->offs);
    memset(e, 0, sizeof(*e));
}

static struct px_offer *
offer_by_id(struct pxfer *x, uint64_t id)
{
    for (unsigned i = 0; i < XFER_OFFERS_MAX; i++)
        if (x->offers[i].used && x->offers[i].ready && x->offers[i].id == id)
            return &x->offers[i];
    return NULL;
}

static struct px_offer *
offer_of(struct pxfer *x, uint8_t requester)
{
    for (unsigned i = 0; i < XFER_OFFERS_MAX; i++)
        if (x->offers[i].used && x->offers[i].requester == requester)
            return &x->offers[i];
    return NULL;
}

static void
drop_all_offers(struct pxfer *x)
{
    uint64_t ids[XFER_OFFERS_MAX];
    (void)xfer_serve_clear(&x->serve, ids, XFER_OFFERS_MAX);
    for (unsigned i = 0; i < XFER_OFFERS_MAX; i++)
        if (x->offers[i].used)
            offer_free(x, &x->offers[i]);
}

/* Reads n bytes at off of the segment image (header, then the files). */
static int
seg_read(struct pxfer *x, const struct px_offer *e, uint64_t off, uint8_t *b,
         size_t n)
{
    while (n > 0 && off < e->hdr.len) {
        size_t k = e->hdr.len - off < n ? (size_t)(e->hdr.len - off) : n;
        memcpy(b, e->hdr.data + off, k);
        b += k;
        off += k;
        n -= k;
    }
    uint64_t at = e->hdr.len;
    for (uint32_t i = 0; n > 0 && i < e->nfiles; i++) {
        const struct px_file *f = &e->files[i];
        if (off >= at + f->len) {
            at += f->len;
            continue;
        }
        uint64_t in = off - at;
        size_t k = f->len - in < n ? (size_t)(f->len - in) : n;
        int rc = sio_pread_all(x->io, f->fd, b, k, (off_t)in, NULL);
        if (rc < 0)
            return rc;
        b += k;
        off += k;
        n -= k;
        at += f->len;
    }
    return n == 0 ? 0 : -ENODATA;
}

static int
add_file(struct pxfer *x, struct px_offer *e, struct pimg_file **names,
         const char *name, uint64_t len, int must)
{
    char path[PX_PATH_MAX];
    int rc = afile_join(path, sizeof(path), part_dir(x->p), name);
    if (rc < 0)
        return rc;
    int fd = sio_open(x->io, path, O_RDONLY, 0);
    if (fd < 0)
        return fd == -ENOENT && !must ? 0 : fd;
    struct stat st;
    if (len == UINT64_MAX) {
        if (fstat(fd, &st) != 0) {
            rc = -errno;
            sio_close(x->io, fd);
            return rc;
        }
        len = (uint64_t)st.st_size;
    }
    e->files = vs_xrealloc(e->files, (e->nfiles + 1) * sizeof(*e->files));
    *names = vs_xrealloc(*names, (e->nfiles + 1) * sizeof(**names));
    e->files[e->nfiles] = (struct px_file){fd, len};
    memset(&(*names)[e->nfiles], 0, sizeof(**names));
    snprintf((*names)[e->nfiles].name, PIMG_NAME_MAX, "%s", name);
    (*names)[e->nfiles].len = len;
    e->nfiles++;
    return 0;
}

/* The segment files cut at the checkpoint (pxfer.h). */
static int
collect_segments(struct pxfer *x, struct px_offer *e, const struct pj_cut *c,
                 uint64_t purge_gen, char *why, size_t whylen)
{
    struct pimg_file *names = NULL;
    int rc = 0;
    for (size_t i = 0; rc == 0; i++) {
        uint64_t start, size;
        if (part_segment_at(x->p, i, &start, &size) != 0 ||
            start > c->vsr_start)
            break;
        char nm[3][PIMG_NAME_MAX];
        snprintf(nm[0], sizeof(nm[0]), "%020llu.log",
                 (unsigned long long)start);
        snprintf(nm[1], sizeof(nm[1]), "%020llu.vsr",
                 (unsigned long long)start);
        snprintf(nm[2], sizeof(nm[2]), "%020llu.index",
                 (unsigned long long)start);
        if (start < c->vsr_start) {
            rc = add_file(x, e, &names, nm[0], size, 1);
            if (rc == 0)
                rc = add_file(x, e, &names, nm[1], UINT64_MAX, 0);
            if (rc == 0)
                rc = add_file(x, e, &names, nm[2], UINT64_MAX, 0);
        } else {
            /* the cut segment: its index is rebuilt by the receiver */
            rc = add_file(x, e, &names, nm[0], c->log_end, 1);
            if (rc == 0)
                rc = add_file(x, e, &names, nm[1], c->vsr_end, 1);
        }
    }
    if (rc < 0) {
        snprintf(why, whylen, "opening the segment files: %s",
                 sio_strerror(rc));
        goto out;
    }
    uint64_t meta[3] = {purge_gen, c->offset_after, e->ckpt};
    rc = pimg_header(&e->hdr, PIMG_SEGMENTS, meta, names, e->nfiles);
    if (rc < 0) {
        snprintf(why, whylen, "the segment files do not form an image");
        goto out;
    }
    e->seg_len = e->hdr.len;
    for (uint32_t i = 0; i < e->nfiles; i++)
        e->seg_len += e->files[i].len;
    if (e->seg_len > XFER_ARTIFACT_CAP) {
        snprintf(why, whylen,
                 "the partition's segments hold %llu bytes, above the "
                 "transfer cap of %llu",
                 (unsigned long long)e->seg_len,
                 (unsigned long long)XFER_ARTIFACT_CAP);
        rc = -EFBIG;
    }
out:
    free(names);
    return rc;
}

struct px_names {
    char (*v)[PIMG_NAME_MAX];
    size_t n;
};

static int
name_add(void *arg, const char *name)
{
    struct px_names *l = arg;
    if (strlen(name) >= 24 || name[0] == '.')
        return 0;
    l->v = vs_xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
    snprintf(l->v[l->n++], PIMG_NAME_MAX, "%s", name);
    return 0;
}

/* The offsets image, read whole (small files). */
static int
collect_offsets(struct pxfer *x, struct px_offer *e)
{
    struct pimg_file *files = NULL;
    struct vs_wbuf body;
    uint32_t n = 0;
    int rc = 0;
    vs_wbuf_init(&body);
    const char *subs[] = {"offsets/consumers", "offsets/groups", NULL};
    for (unsigned s = 0; rc == 0 && s < 3; s++) {
        struct px_names l = {0};
        if (subs[s] != NULL) {
            char dir[PX_PATH_MAX];
            rc = afile_join(dir, sizeof(dir), part_dir(x->p), subs[s]);
            if (rc == 0)
                rc = sio_readdir(x->io, dir, name_add, &l);
            if (rc == -ENOENT)
                rc = 0;
        } else {
            /* the applied mark, and the client table where the group
             * saves one (absent files are skipped) */
            l.v = vs_xcalloc(2, sizeof(*l.v));
            snprintf(l.v[0], PIMG_NAME_MAX, "offsets_applied");
            snprintf(l.v[1], PIMG_NAME_MAX, "clients");
            l.n = 2;
        }
        for (size_t i = 0; rc == 0 && i < l.n; i++) {
            char rel[PIMG_NAME_MAX], path[PX_PATH_MAX];
            if (subs[s] != NULL)
                snprintf(rel, sizeof(rel), "%s/%s", subs[s], l.v[i]);
            else
                snprintf(rel, sizeof(rel), "%s", l.v[i]);
            if (!pimg_name_ok(PIMG_OFFSETS, rel))
                continue; /* a temp file of an atomic replace */
            uint8_t *b = NULL;
            size_t len = 0;
            rc = afile_join(path, sizeof(path), part_dir(x->p), rel);
            if (rc == 0)
                rc =
                    afile_read_all(x->io, path, PXFER_SMALL_FILE_MAX, &b, &len);
            if (rc == -ENOENT) {
                rc = 0;
                continue;
            }
            if (rc < 0)
                break;
            if (strcmp(rel, "offsets_applied") == 0 && len == 20)
                e->offs_frontier = vs_load_u64(b + 4);
            files = vs_xrealloc(files, (n + 1) * sizeof(*files));
            memset(&files[n], 0, sizeof(*files));
            snprintf(files[n].name, PIMG_NAME_MAX, "%s", rel);
            files[n].len = len;
            n++;
            vs_wr_bytes(&body, b, len);
            free(b);
        }
        free(l.v);
    }
    if (rc == 0) {
        uint64_t meta[3] = {e->offs_frontier, 0, e->ckpt};
        rc = pimg_header(&e->offs, PIMG_OFFSETS, meta, files, n);
    }
    if (rc == 0)
        vs_wr_bytes(&e->offs, body.data, body.len);
    free(files);
    vs_wbuf_fini(&body);
    return rc;
}

static void
answer_unavailable(struct pxfer *x, uint8_t to, struct vs_u128 nonce,
                   uint8_t reason, int transient,
                   const struct pxfer_serve_state *s)
{
    uint8_t out[VS_HEADER_SIZE];
    size_t n = xfer_serve_unavailable(&x->serve, out, nonce, reason, transient,
                                      s->commit_min, s->commit_max);
    x->h.send(x->h.ctx, to, out, n);
}

static void
serve_request(struct pxfer *x, uint8_t from,
              const struct vs_hdr_request_state_transfer *r)
{
    struct pxfer_serve_state s;
    char why[256] = "";
    memset(&s, 0, sizeof(s));
    x->h.serve_state(x->h.ctx, &s);
    xfer_serve_set_view(&x->serve, s.view);
    if (!s.settled_primary) {
        drop_all_offers(x); /* offers of an earlier primaryship are void */
        answer_unavailable(x, from, r->nonce, XFER_NOT_CAUGHT_UP_PRIMARY, 0,
                           &s);
        return;
    }
    const struct xfer_offer *o = xfer_serve_find(&x->serve, from, r->nonce);
    if (o != NULL) { /* a retry: the same Target, byte for byte */
        x->h.send(x->h.ctx, from, o->target, o->target_len);
        return;
    }
    struct px_offer *e = offer_of(x, from);
    if (e != NULL && !e->ready && vs_u128_eq(e->nonce, r->nonce)) {
        answer_unavailable(x, from, r->nonce, XFER_NO_SNAPSHOT, 1, &s);
        return; /* still hashing */
    }
    if (s.checkpoint_op == 0) {
        answer_unavailable(x, from, r->nonce, XFER_NO_SNAPSHOT, 1, &s);
        return;
    }
    struct pj_cut cut;
    int rc = pj_cut_at(x->j, s.checkpoint_op, &cut);
    if (rc < 0 || !cut.has_log || cut.log_start != cut.vsr_start) {
        vs_log_warn("partition group %016llx: checkpoint op %llu cannot be "
                    "offered to replica %u (%s)",
                    (unsigned long long)x->o.group,
                    (unsigned long long)s.checkpoint_op, from,
                    rc < 0 ? sio_strerror(rc) : "no batch at or below it");
        answer_unavailable(x, from, r->nonce, XFER_NO_SNAPSHOT, 1, &s);
        return;
    }
    if (e != NULL) /* a new nonce from that requester: its old one ends */
        offer_free(x, e);
    for (unsigned i = 0; i < XFER_OFFERS_MAX && e == NULL; i++)
        if (!x->offers[i].used)
            e = &x->offers[i];
    if (e == NULL)
        e = offer_of(x, from);
    if (e == NULL)
        return; /* one slot per requester: cannot happen */
    memset(e, 0, sizeof(*e));
    e->used = 1;
    e->requester = from;
    e->nonce = r->nonce;
    e->ckpt = s.checkpoint_op;
    e->commit_min = s.commit_min;
    e->commit_max = s.commit_max;
    vs_wbuf_init(&e->hdr);
    vs_wbuf_init(&e->offs);
    memcpy(e->prepare, &cut.header, VS_HEADER_SIZE);
    rc = collect_segments(x, e, &cut, part_purge_generation(x->p), why,
                          sizeof(why));
    if (rc == 0) {
        rc = collect_offsets(x, e);
        if (rc < 0)
            snprintf(why, sizeof(why), "reading the consumer offsets: %s",
                     sio_strerror(rc));
    }
    if (rc < 0) {
        vs_log_error("partition group %016llx: cannot serve replica %u: %s",
                     (unsigned long long)x->o.group, from, why);
        offer_free(x, e);
        answer_unavailable(x, from, r->nonce, XFER_SNAPSHOT_UNREADABLE, 0, &s);
        return;
    }
    vs_xxh3_stream_init(&e->hash);
    answer_unavailable(x, from, r->nonce, XFER_NO_SNAPSHOT, 1, &s);
}

/* One hashing step of a preparing offer; caches it once hashed. */
static void
offer_step(struct pxfer *x, struct px_offer *e)
{
    size_t step = PXFER_HASH_STEP;
    uint8_t *b = x->chunk + VS_HEADER_SIZE;
    size_t cap = x->o.chunk_max;
    while (step > 0 && e->hashed < e->seg_len) {
        size_t n = e->seg_len - e->hashed < cap ? e->seg_len - e->hashed : cap;
        if (n > step)
            n = step;
        int rc = seg_read(x, e, e->hashed, b, n);
        if (rc < 0) {
            vs_log_error("partition group %016llx: reading the segments for "
                         "replica %u failed: %s",
                         (unsigned long long)x->o.group, e->requester,
                         sio_strerror(rc));
            offer_free(x, e);
            return;
        }
        vs_xxh3_stream_update(&e->hash, b, n);
        e->hashed += n;
        step -= n;
    }
    if (e->hashed < e->seg_len)
        return;
    struct xfer_manifest m;
    memset(&m, 0, sizeof(m));
    m.count = 3;
    m.a[0] = (struct xfer_artifact){XFER_KIND_SEGMENT_LOG, e->ckpt, e->seg_len,
                                    vs_xxh3_stream_digest(&e->hash)};
    m.a[1] = (struct xfer_artifact){XFER_KIND_CONSUMER_OFFSETS,
                                    e->offs_frontier, e->offs.len,
                                    vs_xxh3_64(e->offs.data, e->offs.len)};
    m.a[2] = (struct xfer_artifact){XFER_KIND_CHECKPOINT_PREPARE, e->ckpt,
                                    VS_HEADER_SIZE,
                                    vs_xxh3_64(e->prepare, VS_HEADER_SIZE)};
    uint64_t replaced = 0;
    const struct xfer_offer *o =
        xfer_serve_offer(&x->serve, e->requester, e->nonce, &m, e->commit_min,
                         e->commit_max, &replaced);
    if (o == NULL) {
        offer_free(x, e);
        return;
    }
    e->id = o->id;
    e->ready = 1;
    vs_log_info("partition group %016llx: offering replica %u the checkpoint "
                "at op %llu (%llu + %zu bytes, %u files)",
                (unsigned long long)x->o.group, e->requester,
                (unsigned long long)e->ckpt, (unsigned long long)e->seg_len,
                e->offs.len, e->nfiles);
    x->h.send(x->h.ctx, e->requester, o->target, o->target_len);
}

static void
serve_chunk(struct pxfer *x, uint8_t from, const void *frame)
{
    const struct xfer_offer *o;
    uint8_t kind;
    uint64_t off;
    uint32_t n;
    const struct vs_hdr_request_state_chunk *r = frame;
    enum xfer_serve_result res =
        xfer_serve_chunk(&x->serve, from, frame, &o, &kind, &off, &n);
    if (res == XFER_SERVE_UNKNOWN) {
        struct pxfer_serve_state s;
        memset(&s, 0, sizeof(s));
        x->h.serve_state(x->h.ctx, &s);
        answer_unavailable(x, from, r->nonce, XFER_UNKNOWN_SESSION, 0, &s);
        return;
    }
    if (res != XFER_SERVE_CHUNK) {
        x->refused_chunks++;
        return;
    }
    struct px_offer *e = offer_by_id(x, o->id);
    if (e == NULL)
        return;
    uint8_t *body = x->chunk + VS_HEADER_SIZE;
    if (kind == XFER_KIND_SEGMENT_LOG) {
        int rc = seg_read(x, e, off, body, n);
        if (rc < 0) {
            vs_log_error("partition group %016llx: stopped serving replica "
                         "%u: %s",
                         (unsigned long long)x->o.group, from,
                         sio_strerror(rc));
            drop_all_offers(x);
            return;
        }
    } else if (kind == XFER_KIND_CONSUMER_OFFSETS) {
        memcpy(body, e->offs.data + off, n);
    } else if (kind == XFER_KIND_CHECKPOINT_PREPARE) {
        memcpy(body, e->prepare + off, n);
    } else {
        return;
    }
    xfer_frame_chunk((struct vs_hdr_state_chunk *)x->chunk, &x->serve.o.me,
                     r->nonce, r->artifact, off, body, n);
    x->served_chunks++;
    x->h.send(x->h.ctx, from, x->chunk, VS_HEADER_SIZE + n);
}

/* ---- fetching ---- */

/* The last record of the newest .vsr file of the image must be op's, with
 * exactly the prepare header the server sent. */
static int
check_chain_end(const uint8_t *img, const struct pimg *m, uint64_t op,
                const uint8_t *prepare, char *err, size_t errlen)
{
    const struct pimg_file *last = NULL;
    for (uint32_t i = 0; i < m->count; i++) {
        size_t k = strlen(m->files[i].name);
        if (k > 4 && strcmp(m->files[i].name + k - 4, ".vsr") == 0 &&
            (last == NULL || strcmp(m->files[i].name, last->name) > 0))
            last = &m->files[i];
    }
    if (last == NULL) {
        snprintf(err, errlen, "no journal records in the segment image");
        return -EBADMSG;
    }
    const uint8_t *b = img + last->off;
    uint64_t at = 0, rec = UINT64_MAX;
    while (last->len - at >= PJ_RECORD_PREFIX) {
        uint32_t rl = vs_load_u32(b + at + 8);
        if (rl < PJ_RECORD_PREFIX + VS_HEADER_SIZE || rl > last->len - at ||
            (uint32_t)vs_xxh3_64(b + at, 12) != vs_load_u32(b + at + 12)) {
            snprintf(err, errlen, "%s: a damaged record at byte %llu",
                     last->name, (unsigned long long)at);
            return -EBADMSG;
        }
        rec = at;
        at += rl;
    }
    if (at != last->len || rec == UINT64_MAX || vs_load_u64(b + rec) != op ||
        memcmp(b + rec + PJ_RECORD_PREFIX, prepare, VS_HEADER_SIZE) != 0) {
        snprintf(err, errlen,
                 "%s does not end with the checkpoint op %llu's record",
                 last->name, (unsigned long long)op);
        return -EBADMSG;
    }
    const struct vs_hdr_prepare *h = (const struct vs_hdr_prepare *)prepare;
    if (!vs_prepare_verify_identity(h) || h->op != op) {
        snprintf(err, errlen, "the checkpoint prepare header fails");
        return -EBADMSG;
    }
    return 0;
}

/* Hands fds to hooks.fsync (which dups them) and closes them here. */
static void
ask_fsync(struct pxfer *x, struct pinstall_fds *fds,
          enum px_install_phase phase)
{
    x->phase = phase;
    x->sync = vs_xcalloc(1, sizeof(*x->sync));
    x->sync->x = x;
    x->h.fsync(x->h.ctx, fds->fd, fds->n, x->sync);
    pinstall_fds_close(x->io, fds);
}

/* Decodes, checks and stages the verified artifacts. 0, -EBADMSG (they
 * do not form a partition: charged to the generation), -errno. */
static int
install(struct pxfer *x, char *err, size_t errlen)
{
    uint64_t slen, sfr, olen, ofr, plen, pfr;
    const uint8_t *seg =
        xfer_fetch_artifact(&x->fetch, XFER_KIND_SEGMENT_LOG, &slen, &sfr);
    const uint8_t *offs =
        xfer_fetch_artifact(&x->fetch, XFER_KIND_CONSUMER_OFFSETS, &olen, &ofr);
    const uint8_t *prep = xfer_fetch_artifact(
        &x->fetch, XFER_KIND_CHECKPOINT_PREPARE, &plen, &pfr);
    struct pimg sm, om;
    memset(&sm, 0, sizeof(sm));
    memset(&om, 0, sizeof(om));
    uint8_t *format = NULL;
    size_t format_len = 0;
    int rc;
    if (seg == NULL || offs == NULL || prep == NULL || plen != VS_HEADER_SIZE) {
        snprintf(err, errlen, "an artifact is missing");
        return -EBADMSG;
    }
    rc = pimg_decode(seg, slen, PIMG_SEGMENTS, &sm, err, errlen);
    if (rc == 0)
        rc = pimg_decode(offs, olen, PIMG_OFFSETS, &om, err, errlen);
    if (rc == 0 &&
        (sm.meta[2] != sfr || om.meta[2] != sfr || om.meta[0] != ofr)) {
        snprintf(err, errlen,
                 "the images' frontiers disagree with the "
                 "manifest");
        rc = -EBADMSG;
    }
    if (rc == 0)
        rc = check_chain_end(seg, &sm, sfr, prep, err, errlen);
    if (rc < 0)
        goto out;
    char path[PX_PATH_MAX];
    rc = afile_join(path, sizeof(path), part_dir(x->p), "format");
    if (rc == 0)
        rc = afile_read_all(x->io, path, 4096, &format, &format_len);
    if (rc < 0) {
        snprintf(err, errlen, "reading this partition's format file: %s",
                 sio_strerror(rc));
        goto out;
    }
    struct pj_state own, st;
    if (pj_state_read(x->j, &own) < 0)
        memset(&own, 0, sizeof(own));
    const struct vs_hdr_prepare *h = (const struct vs_hdr_prepare *)prep;
    st = own;
    st.checkpoint_op = sfr;
    st.checkpoint_checksum = h->f.checksum;
    if (x->fetch.commit_op > st.commit_max)
        st.commit_max = x->fetch.commit_op;
    if (sfr > st.commit_max)
        st.commit_max = sfr;
    st.offset_frontier = sm.meta[1];
    /* ops this replica journaled above the checkpoint may have been
     * acknowledged: they stay never-nacked until repaired */
    uint64_t head = pj_head(x->j);
    st.faulty_op = head > sfr ? head : 0;
    st.nonack_op = st.faulty_op;
    struct pinstall_src src;
    memset(&src, 0, sizeof(src));
    src.segs = seg;
    src.segs_m = &sm;
    src.offs = offs;
    src.offs_m = &om;
    src.format = format;
    src.format_len = format_len;
    part_state_image(sm.meta[0], sm.meta[1], src.part_state);
    pj_state_image(&st, src.vsr_state);
    char pdir[PX_PATH_MAX];
    snprintf(pdir, sizeof(pdir), "%s", part_dir(x->p));
    if (x->h.fsync == NULL) {
        rc = pinstall_stage(x->io, dirname(pdir), part_ident(x->p), &src,
                            part_options(x->p), err, errlen);
        goto out;
    }
    struct pinstall_fds fds;
    rc = pinstall_stage_write(x->io, dirname(pdir), part_ident(x->p), &src,
                              part_options(x->p), &fds, err, errlen);
    if (rc == 0)
        ask_fsync(x, &fds, PX_INSTALL_STAGED);
out:
    free(format);
    pimg_free(&sm);
    pimg_free(&om);
    return rc;
}

static uint64_t
fetch_total(const struct xfer_fetch *f)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < f->m.count; i++)
        total += f->m.a[i].len;
    return total;
}

/* A session that ended (its bytes freed) leaves the budget. */
static void
budget_release(struct pxfer *x, int force)
{
    if (x->holds_budget &&
        (force || (x->fetch.stage == XFER_IDLE && !x->installing))) {
        x->holds_budget = 0;
        x->o.budget->running--;
    }
}

static void install_end(struct pxfer *x, int rc, const char *err);
static void report_stage(struct pxfer *x);

/* Sends what the receiver wants, runs the install when due, and reports
 * a session that ended without one. */
static void
pump(struct pxfer *x)
{
    uint8_t req[VS_HEADER_SIZE];
    uint8_t peer;
    while (xfer_fetch_pop(&x->fetch, req, &peer))
        x->h.send(x->h.ctx, peer, req, VS_HEADER_SIZE);
    if (x->fetch.stage == XFER_INSTALLING && !x->installing) {
        char err[512] = "";
        const struct xfer_artifact *la =
            xfer_manifest_find(&x->fetch.m, XFER_KIND_SEGMENT_LOG);
        x->inst_ckpt = la != NULL ? la->frontier : 0;
        x->inst_bytes = fetch_total(&x->fetch);
        x->installing = 1;
        int rc = install(x, err, sizeof(err));
        if (!x->installing)
            return; /* the fsyncs completed at once: it ended */
        if (rc == 0 && x->phase != PX_INSTALL_NONE)
            return; /* its fsyncs run: pxfer_fsynced goes on */
        install_end(x, rc, err);
        return;
    }
    report_stage(x);
}

/* The install ended (rc 0: staged and published, else refused). */
static void
install_end(struct pxfer *x, int rc, const char *err)
{
    x->installing = 0;
    x->phase = PX_INSTALL_NONE;
    double secs = (double)(vs_monotonic_ns() - x->session_start_ns) / 1e9;
    if (rc == 0) {
        xfer_fetch_installed(&x->fetch);
        budget_release(x, 0);
        x->last_bytes = x->inst_bytes;
        x->last_secs = secs;
        x->last_stage = XFER_IDLE;
        vs_log_info("partition group %016llx: fetched the checkpoint at "
                    "op %llu from replica %u (%llu bytes in %.3f s, "
                    "%.1f MB/s); installing",
                    (unsigned long long)x->o.group,
                    (unsigned long long)x->inst_ckpt, x->fetch.peer,
                    (unsigned long long)x->inst_bytes, secs,
                    secs > 0 ? (double)x->inst_bytes / secs / 1e6 : 0.0);
        x->h.installed(x->h.ctx, x->inst_ckpt);
        return;
    }
    xfer_fetch_install_failed(&x->fetch, rc == -EBADMSG, err);
    vs_log_error("partition group %016llx: the fetched partition was "
                 "refused: %s",
                 (unsigned long long)x->o.group, err);
    report_stage(x);
}

void
pxfer_fsynced(struct pxfer_sync *tok)
{
    struct pxfer *x = tok->x;
    free(tok);
    if (x == NULL)
        return;
    x->sync = NULL;
    if (x->phase == PX_INSTALL_STAGED) {
        char err[512] = "", pdir[PX_PATH_MAX];
        struct pinstall_fds fds;
        snprintf(pdir, sizeof(pdir), "%s", part_dir(x->p));
        int rc = pinstall_stage_publish(x->io, dirname(pdir), part_ident(x->p),
                                        &fds, err, sizeof(err));
        if (rc == 0) {
            ask_fsync(x, &fds, PX_INSTALL_PUBLISHED);
            return;
        }
        install_end(x, rc, err);
        return;
    }
    install_end(x, 0, "");
}

/* Reports a session that ended without an install. */
static void
report_stage(struct pxfer *x)
{
    if (x->fetch.stage != x->last_stage) {
        enum xfer_stage was = x->last_stage;
        x->last_stage = x->fetch.stage;
        if (x->fetch.stage == XFER_IDLE && was != XFER_IDLE) {
            vs_log_warn("partition group %016llx: state transfer ended: %s",
                        (unsigned long long)x->o.group, x->fetch.reason);
            x->h.failed(x->h.ctx, x->fetch.reason);
        }
    }
    budget_release(x, 0);
}

/* ---- API ---- */

int
pxfer_create(const struct pxfer_opts *o, const struct pxfer_hooks *h,
             struct vs_part *p, struct vs_pjournal *j, struct pxfer **out)
{
    struct pxfer *x = calloc(1, sizeof(*x));
    *out = NULL;
    if (x == NULL)
        return -ENOMEM;
    x->o = *o;
    x->h = *h;
    x->p = p;
    x->j = j;
    x->io = part_io(p);
    if (x->o.chunk_max == 0 || x->o.chunk_max > XFER_CHUNK_MAX)
        x->o.chunk_max = XFER_CHUNK_MAX;
    x->chunk = malloc(VS_HEADER_SIZE + x->o.chunk_max);
    if (x->chunk == NULL) {
        free(x);
        return -ENOMEM;
    }
    struct xfer_sender me = {o->cluster, o->group, o->self, 0};
    struct xfer_fetch_opts fo = {.me = me,
                                 .profile = XFER_PROFILE_PARTITION,
                                 .chunk_max = x->o.chunk_max,
                                 .stall_ticks = o->stall_ticks};
    struct xfer_serve_opts so = {.me = me, .chunk_max = x->o.chunk_max};
    xfer_fetch_init(&x->fetch, &fo);
    xfer_serve_init(&x->serve, &so);
    *out = x;
    return 0;
}

void
pxfer_destroy(struct pxfer *x)
{
    if (x == NULL)
        return;
    if (x->sync != NULL)
        x->sync->x = NULL; /* its completion only frees it; the staging
                              directory is removed at the next recover */
    budget_release(x, 1);
    drop_all_offers(x);
    xfer_fetch_destroy(&x->fetch);
    free(x->chunk);
    free(x);
}

void
pxfer_on_frame(struct pxfer *x, uint8_t from, const void *frame, size_t len)
{
    enum xfer_frame_verdict v =
        xfer_frame_check(frame, len, x->o.cluster, x->o.group, x->o.chunk_max);
    if (v != XFER_FRAME_OK) {
        vs_log_debug("partition group %016llx: dropped a transfer frame from "
                     "replica %u: %s",
                     (unsigned long long)x->o.group, from,
                     xfer_frame_verdict_name(v));
        return;
    }
    const struct vs_header *h = frame;
    switch (h->f.command) {
    case VS_CMD_REQUEST_STATE_TRANSFER:
        serve_request(x, from, frame);
        return;
    case VS_CMD_REQUEST_STATE_CHUNK:
        serve_chunk(x, from, frame);
        return;
    default:
        if (x->installing)
            return; /* the session's bytes are in: nothing more to take */
        if (h->f.command == VS_CMD_STATE_TRANSFER_TARGET)
            (void)xfer_fetch_on_target(&x->fetch, from, frame, len);
        else
            (void)xfer_fetch_on_chunk(&x->fetch, from, frame, len);
        break;
    }
    pump(x);
}

int
pxfer_start_nonce(struct pxfer *x, uint8_t peer, uint32_t durable_view,
                  struct vs_u128 nonce)
{
    if (vs_u128_is_zero(nonce))
        return -EINVAL;
    if (pxfer_fetching(x))
        return -EALREADY;
    if (x->o.budget != NULL && x->o.budget->running >= x->o.budget->max) {
        x->o.budget->refused++;
        vs_log_debug("partition group %016llx: state transfer deferred: "
                     "%u fetches run on this shard",
                     (unsigned long long)x->o.group, x->o.budget->running);
        return -EBUSY;
    }
    xfer_fetch_set_view(&x->fetch, durable_view);
    int rc = xfer_fetch_arm(&x->fetch, nonce, peer);
    if (rc != 0)
        return rc;
    if (x->o.budget != NULL) {
        x->o.budget->running++;
        x->holds_budget = 1;
    }
    x->session_start_ns = vs_monotonic_ns();
    x->last_stage = x->fetch.stage;
    vs_log_info("partition group %016llx: asking replica %u for its "
                "partition (state transfer)",
                (unsigned long long)x->o.group, peer);
    pump(x);
    return 0;
}

void
pxfer_retarget(struct pxfer *x, uint8_t peer)
{
    if (xfer_fetch_retarget(&x->fetch, peer) == 0)
        pump(x);
}

int
pxfer_fetching(const struct pxfer *x)
{
    return x->fetch.stage != XFER_IDLE;
}

int
pxfer_wants_peer(const struct pxfer *x)
{
    return x->fetch.want_peer;
}

int
pxfer_peer(const struct pxfer *x)
{
    return x->fetch.stage == XFER_IDLE ? -1 : x->fetch.peer;
}

void
pxfer_tick(struct pxfer *x)
{
    uint64_t ids[XFER_OFFERS_MAX];
    size_t n = xfer_serve_tick(&x->serve, ids, XFER_OFFERS_MAX);
    for (size_t i = 0; i < n && i < XFER_OFFERS_MAX; i++) {
        struct px_offer *e = offer_by_id(x, ids[i]);
        if (e != NULL)
            offer_free(x, e);
    }
    for (unsigned i = 0; i < XFER_OFFERS_MAX; i++)
        if (x->offers[i].used && !x->offers[i].ready)
            offer_step(x, &x->offers[i]);
    xfer_fetch_tick(&x->fetch);
    pump(x);
}

void
pxfer_info(const struct pxfer *x, struct pxfer_info *out)
{
    memset(out, 0, sizeof(*out));
    out->stage = x->fetch.stage;
    out->sessions = x->fetch.stats.sessions;
    out->completed = x->fetch.stats.completed;
    out->abandoned = x->fetch.stats.abandoned;
    out->served_offers = x->serve.stats.offers;
    out->served_chunks = x->served_chunks;
    out->served_bytes = x->serve.stats.bytes;
    out->fetched_bytes = x->fetch.stats.bytes;
    out->refused_chunks = x->refused_chunks + x->serve.stats.refused;
    out->last_bytes = x->last_bytes;
    out->last_secs = x->last_secs;
    snprintf(out->last, sizeof(out->last), "%s", x->fetch.reason);
}
