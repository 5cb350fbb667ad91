/*
 * shard/data/pinstall.c - atomic install of a partition directory fetched
 * by state transfer; see pinstall.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/mem.h"
#include "shard/data/pdir.h"
#include "shard/data/pinstall.h"
#include "shard/storage/atomic_file.h"

#define PI_PATH_MAX 1400

struct pi_paths {
    struct part_id id;
    char name[128];
    char stage_root[PI_PATH_MAX]; /* P/.pxfer */
    char stage[PI_PATH_MAX];      /* P/.pxfer/<name> */
    char live[PI_PATH_MAX];       /* P/<name> */
    char fresh[PI_PATH_MAX];      /* P/<name>.pxfer-new */
    char old[PI_PATH_MAX];        /* P/<name>.pxfer-old */
};

static int
paths(struct pi_paths *p, const char *dir, const struct part_id *id)
{
    int rc = pdir_name(p->name, sizeof(p->name), id);
    if (rc < 0)
        return rc;
    p->id = *id;
    int n[5];
    n[0] = snprintf(p->stage_root, PI_PATH_MAX, "%s/" PINSTALL_STAGE_DIR, dir);
    n[1] = snprintf(p->stage, PI_PATH_MAX, "%s/" PINSTALL_STAGE_DIR "/%s", dir,
                    p->name);
    n[2] = snprintf(p->live, PI_PATH_MAX, "%s/%s", dir, p->name);
    n[3] = snprintf(p->fresh, PI_PATH_MAX, "%s/%s" PINSTALL_NEW, dir, p->name);
    n[4] = snprintf(p->old, PI_PATH_MAX, "%s/%s" PINSTALL_OLD, dir, p->name);
    for (int i = 0; i < 5; i++)
        if (n[i] < 0 || n[i] >= PI_PATH_MAX)
            return -ENAMETOOLONG;
    return 0;
}

static int
exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

void
pinstall_fds_close(struct vs_sio *io, struct pinstall_fds *f)
{
    for (size_t i = 0; i < f->n; i++)
        sio_close(io, f->fd[i]);
    free(f->fd);
    memset(f, 0, sizeof(*f));
}

static void
keep_fd(struct pinstall_fds *f, int fd)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->fd = vs_xrealloc(f->fd, f->cap * sizeof(*f->fd));
    }
    f->fd[f->n++] = fd;
}

/* Writes one new file whole; fsyncs it, or (keep) leaves it open in keep
 * for the caller's fsync. */
static int
put_file(struct vs_sio *io, const char *dir, const char *name, const uint8_t *b,
         uint64_t len, struct pinstall_fds *keep)
{
    char path[PI_PATH_MAX];
    int rc = afile_join(path, sizeof(path), dir, name);
    if (rc < 0)
        return rc;
    int fd = sio_open(io, path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return fd;
    rc = len ? sio_pwrite_all(io, fd, b, (size_t)len, 0, path) : 0;
    if (rc == 0 && keep != NULL) {
        keep_fd(keep, fd);
        return 0;
    }
    if (rc == 0)
        rc = sio_fsync(io, fd, path);
    sio_close(io, fd);
    return rc;
}

static int
mk(struct vs_sio *io, const char *dir, const char *sub)
{
    char path[PI_PATH_MAX];
    int rc = afile_join(path, sizeof(path), dir, sub);
    return rc < 0 ? rc : sio_mkdir(io, path, 0700);
}

/* fsyncs dir/sub (sub NULL: dir), or (keep) opens it into keep. */
static int
dsync(struct vs_sio *io, const char *dir, const char *sub,
      struct pinstall_fds *keep)
{
    char path[PI_PATH_MAX];
    int rc = 0;
    if (sub != NULL)
        rc = afile_join(path, sizeof(path), dir, sub);
    else
        snprintf(path, sizeof(path), "%s", dir);
    if (rc < 0)
        return rc;
    if (keep == NULL)
        return sio_dir_fsync(io, path);
    int fd = sio_open(io, path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return fd;
    keep_fd(keep, fd);
    return 0;
}

static int
write_stage(struct vs_sio *io, const char *st, const struct pinstall_src *s,
            struct pinstall_fds *keep)
{
    int rc = sio_mkdir(io, st, 0700);
    const char *subs[] = {"offsets", "offsets/consumers", "offsets/groups"};
    for (unsigned i = 0; rc == 0 && i < 3; i++)
        rc = mk(io, st, subs[i]);
    if (rc == 0)
        rc = put_file(io, st, "format", s->format, s->format_len, keep);
    if (rc == 0)
        rc = put_file(io, st, "state", s->part_state, PART_STATE_IMAGE_SIZE,
                      keep);
    if (rc == 0)
        rc = put_file(io, st, PJ_STATE_NAME, s->vsr_state, PJ_STATE_IMAGE_SIZE,
                      keep);
    for (uint32_t i = 0; rc == 0 && i < s->segs_m->count; i++) {
        const struct pimg_file *f = &s->segs_m->files[i];
        rc = put_file(io, st, f->name, s->segs + f->off, f->len, keep);
    }
    for (uint32_t i = 0; rc == 0 && i < s->offs_m->count; i++) {
        const struct pimg_file *f = &s->offs_m->files[i];
        rc = put_file(io, st, f->name, s->offs + f->off, f->len, keep);
    }
    for (unsigned i = 3; rc == 0 && i-- > 0;)
        rc = dsync(io, st, subs[i], keep);
    if (rc == 0)
        rc = dsync(io, st, NULL, keep);
    return rc;
}

/* Leftovers removed, the directory written (fsynced, or its files and
 * directories left open in keep) and verified by part_open. */
static int
stage_write(struct vs_sio *io, const struct pi_paths *p,
            const struct pinstall_src *src, const struct part_opts *opts,
            struct pinstall_fds *keep, char *err, size_t errlen)
{
    /* leftovers of an earlier attempt go first */
    int rc = pdir_rmtree(io, p->stage);
    if (rc == 0)
        rc = pdir_rmtree(io, p->fresh);
    if (rc == 0)
        rc = sio_mkdir(io, p->stage_root, 0700);
    if (rc == 0)
        rc = write_stage(io, p->stage, src, keep);
    if (rc < 0) {
        snprintf(err, errlen, "writing %s: %s", p->stage, sio_strerror(rc));
        goto fail;
    }
    /* the full boot verdict on the staged directory, modifying nothing */
    struct part_opts ro = *opts;
    ro.read_only = 1;
    struct vs_part *part = NULL;
    struct part_verdict v;
    memset(&v, 0, sizeof(v));
    rc = part_open(io, p->stage_root, &p->id, &ro, 0, 0, &part, &v);
    if (rc < 0) {
        snprintf(err, errlen, "the fetched partition would not boot: %s",
                 rc == -EBADMSG ? v.msg : sio_strerror(rc));
        goto fail;
    }
    part_abandon(part);
    rc = dsync(io, p->stage_root, NULL, keep);
    if (rc < 0) {
        snprintf(err, errlen, "syncing %s: %s", p->stage_root,
                 sio_strerror(rc));
        goto fail;
    }
    return 0;
fail:
    if (keep != NULL)
        pinstall_fds_close(io, keep);
    if (rc != -VS_EFATAL && !sio_is_fatal(io))
        (void)pdir_rmtree(io, p->stage);
    return rc;
}

/* The durable staged directory renamed to P/<name>.pxfer-new; P and
 * P/.pxfer fsynced (or left open in keep). */
static int
stage_publish(struct vs_sio *io, const char *partitions_dir,
              const struct pi_paths *p, struct pinstall_fds *keep, char *err,
              size_t errlen)
{
    int rc = sio_dir_rename(io, p->stage, p->fresh);
    if (rc == 0)
        rc = dsync(io, partitions_dir, NULL, keep);
    if (rc == 0)
        rc = dsync(io, p->stage_root, NULL, keep);
    if (rc < 0) {
        if (keep != NULL)
            pinstall_fds_close(io, keep);
        snprintf(err, errlen, "publishing %s: %s", p->fresh, sio_strerror(rc));
    }
    return rc;
}

int
pinstall_stage(struct vs_sio *io, const char *partitions_dir,
               const struct part_id *id, const struct pinstall_src *src,
               const struct part_opts *opts, char *err, size_t errlen)
{
    struct pi_paths p;
    err[0] = '\0';
    int rc = paths(&p, partitions_dir, id);
    if (rc == 0)
        rc = stage_write(io, &p, src, opts, NULL, err, errlen);
    if (rc == 0)
        rc = stage_publish(io, partitions_dir, &p, NULL, err, errlen);
    return rc;
}

int
pinstall_stage_write(struct vs_sio *io, const char *partitions_dir,
                     const struct part_id *id, const struct pinstall_src *src,
                     const struct part_opts *opts, struct pinstall_fds *fds,
                     char *err, size_t errlen)
{
    struct pi_paths p;
    err[0] = '\0';
    memset(fds, 0, sizeof(*fds));
    int rc = paths(&p, partitions_dir, id);
    return rc < 0 ? rc : stage_write(io, &p, src, opts, fds, err, errlen);
}

int
pinstall_stage_publish(struct vs_sio *io, const char *partitions_dir,
                       const struct part_id *id, struct pinstall_fds *fds,
                       char *err, size_t errlen)
{
    struct pi_paths p;
    err[0] = '\0';
    memset(fds, 0, sizeof(*fds));
    int rc = paths(&p, partitions_dir, id);
    if (rc == 0 && !exists(p.stage))
        rc = -ENOENT;
    return rc < 0 ? rc
                  : stage_publish(io, partitions_dir, &p, fds, err, errlen);
}

int
pinstall_pending(const char *partitions_dir, const struct part_id *id)
{
    struct pi_paths p;
    return paths(&p, partitions_dir, id) == 0 && exists(p.fresh);
}

int
pinstall_swap(struct vs_sio *io, const char *partitions_dir,
              const struct part_id *id)
{
    struct pi_paths p;
    int rc = paths(&p, partitions_dir, id);
    if (rc < 0)
        return rc;
    if (!exists(p.fresh))
        return -ENOENT;
    rc = pdir_rmtree(io, p.old);
    if (rc == 0 && exists(p.live))
        rc = sio_dir_rename(io, p.live, p.old);
    if (rc == 0)
        rc = sio_dir_fsync(io, partitions_dir);
    if (rc == 0)
        rc = sio_dir_rename(io, p.fresh, p.live);
    if (rc == 0)
        rc = sio_dir_fsync(io, partitions_dir);
    if (rc == 0)
        rc = pdir_rmtree(io, p.old);
    if (rc == 0)
        rc = sio_dir_fsync(io, partitions_dir);
    return rc;
}

int
pinstall_recover(struct vs_sio *io, const char *partitions_dir,
                 const struct part_id *id, enum pinstall_outcome *outcome)
{
    struct pi_paths p;
    enum pinstall_outcome out = PINSTALL_NOTHING;
    int rc = paths(&p, partitions_dir, id);
    if (rc < 0)
        return rc;
    if (exists(p.stage)) {
        rc = pdir_rmtree(io, p.stage);
        if (rc < 0)
            goto done;
        out = PINSTALL_CLEANED;
    }
    if (!exists(p.live)) {
        const char *from = exists(p.fresh) ? p.fresh
                           : exists(p.old) ? p.old
                                           : NULL;
        if (from == NULL)
            goto done;
        out = from == p.fresh ? PINSTALL_ROLLED_FORWARD : PINSTALL_ROLLED_BACK;
        rc = sio_dir_rename(io, from, p.live);
        if (rc == 0)
            rc = sio_dir_fsync(io, partitions_dir);
        if (rc < 0)
            goto done;
    }
    if (exists(p.fresh)) {
        rc = pinstall_swap(io, partitions_dir, id);
        if (rc < 0)
            goto done;
        out = PINSTALL_ROLLED_FORWARD;
    }
    if (exists(p.old)) {
        rc = pdir_rmtree(io, p.old);
        if (rc == 0)
            rc = sio_dir_fsync(io, partitions_dir);
        if (rc < 0)
            goto done;
        if (out == PINSTALL_NOTHING)
            out = PINSTALL_CLEANED;
    }
done:
    if (outcome)
        *outcome = out;
    return rc;
}
