/*
 * shard/data/pdir.c - partition directory names, crash-safe removal and
 * reconciliation with the published metadata (contract in pdir.h).
 *
 * Invariants: nothing is removed unless its name parses as a partition
 * directory (or a leftover "<that>.deleted" / "<that>.creating", or a
 * partition transfer's "<that>.pxfer-new" / "<that>.pxfer-old" /
 * ".pxfer/<that>" of a partition the metadata no longer lists); an empty
 * metadata set never removes anything. Callers: data shards, tests.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mem.h"
#include "shard/data/pdir.h"
#include "shard/data/pinstall.h"
#include "shard/storage/atomic_file.h"

#define PDIR_PATH_MAX 1024

int
pdir_name(char *out, size_t cap, const struct part_id *id)
{
    int n =
        snprintf(out, cap, "%" PRIu32 ".%" PRIu32 ".%" PRIu32 ".%" PRIu64,
                 id->stream_id, id->topic_id, id->partition_id, id->created_op);
    if (n < 0 || (size_t)n >= cap)
        return -ENAMETOOLONG;
    return 0;
}

/* Parses a decimal number of at most `max` value; advances *s. */
static int
parse_num(const char **s, uint64_t max, uint64_t *out)
{
    const char *p = *s;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return 0;
    if (*p == '0' && p[1] >= '0' && p[1] <= '9')
        return 0; /* no leading zeros: one spelling per id */
    while (*p >= '0' && *p <= '9') {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (max - d) / 10)
            return 0;
        v = v * 10 + d;
        p++;
    }
    *s = p;
    *out = v;
    return 1;
}

int
pdir_parse(const char *name, struct part_id *id)
{
    uint64_t v[4];
    const char *s = name;
    for (int i = 0; i < 4; i++) {
        if (!parse_num(&s, i < 3 ? UINT32_MAX : UINT64_MAX, &v[i]))
            return 0;
        if (i < 3 && *s++ != '.')
            return 0;
    }
    if (*s != '\0')
        return 0;
    id->stream_id = (uint32_t)v[0];
    id->topic_id = (uint32_t)v[1];
    id->partition_id = (uint32_t)v[2];
    id->created_op = v[3];
    return 1;
}

/* Names collected by sio_readdir (a directory is never changed while it
 * is being read). */
struct pdir_names {
    char **v;
    size_t n;
};

static int
collect_name(void *arg, const char *name)
{
    struct pdir_names *l = arg;
    l->v = vs_xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
    l->v[l->n++] = vs_xstrdup(name);
    return 0;
}

static void
names_free(struct pdir_names *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

int
pdir_rmtree(struct vs_sio *io, const char *path)
{
    struct stat st;
    if (lstat(path, &st) == -1)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode)) {
        int rc = sio_unlink(io, path);
        return rc == -ENOENT ? 0 : rc;
    }
    struct pdir_names l = {0};
    int rc = sio_readdir(io, path, collect_name, &l);
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        char sub[PDIR_PATH_MAX];
        rc = afile_join(sub, sizeof(sub), path, l.v[i]);
        if (rc == 0)
            rc = pdir_rmtree(io, sub);
    }
    names_free(&l);
    if (rc == 0) {
        rc = sio_rmdir(io, path);
        if (rc == -ENOENT)
            rc = 0;
    }
    return rc;
}

/* Renames dir/name to dir/name.deleted, fsyncs dir, removes the tree. */
static int
remove_named(struct vs_sio *io, const char *dir, const char *name)
{
    char from[PDIR_PATH_MAX], to[PDIR_PATH_MAX];
    int rc = afile_join(from, sizeof(from), dir, name);
    if (rc < 0)
        return rc;
    int n = snprintf(to, sizeof(to), "%s.deleted", from);
    if (n < 0 || (size_t)n >= sizeof(to))
        return -ENAMETOOLONG;
    struct stat st;
    if (lstat(from, &st) == -1) {
        if (errno != ENOENT)
            return -errno;
    } else {
        rc = pdir_rmtree(io, to); /* an older leftover of the same name */
        if (rc == 0)
            rc = sio_dir_rename(io, from, to);
        if (rc == 0)
            rc = sio_dir_fsync(io, dir);
        if (rc < 0)
            return rc;
    }
    rc = pdir_rmtree(io, to);
    if (rc == 0)
        rc = sio_dir_fsync(io, dir);
    return rc;
}

int
pdir_remove(struct vs_sio *io, const char *partitions_dir,
            const struct part_id *id)
{
    char name[128];
    int rc = pdir_name(name, sizeof(name), id);
    if (rc < 0)
        return rc;
    return remove_named(io, partitions_dir, name);
}

/* If name ends with suffix, copies the stem to stem and returns 1. */
static int
strip_suffix(const char *name, const char *suffix, char *stem, size_t cap)
{
    size_t n = strlen(name), m = strlen(suffix);
    if (n <= m || strcmp(name + n - m, suffix) != 0 || n - m >= cap)
        return 0;
    memcpy(stem, name, n - m);
    stem[n - m] = '\0';
    return 1;
}

static int
listed(const struct part_id *live, size_t n, const struct part_id *id)
{
    for (size_t i = 0; i < n; i++)
        if (live[i].stream_id == id->stream_id &&
            live[i].topic_id == id->topic_id &&
            live[i].partition_id == id->partition_id &&
            live[i].created_op == id->created_op)
            return 1;
    return 0;
}

/* Removes dir/name and everything under it. */
static int
rmtree_in(struct vs_sio *io, const char *dir, const char *name)
{
    char path[PDIR_PATH_MAX];
    int rc = afile_join(path, sizeof(path), dir, name);
    return rc < 0 ? rc : pdir_rmtree(io, path);
}

/* The staging directories under P/.pxfer of owned partitions the metadata
 * (n > 0 entries) no longer lists: removed (a staging directory is never
 * complete; one of a listed partition is pinstall_recover's); *removed
 * counts them. */
static int
stage_leftovers(struct vs_sio *io, const char *partitions_dir,
                const struct part_id *live, size_t n, pdir_owned_fn owned,
                void *ctx, uint32_t *removed)
{
    char stage[PDIR_PATH_MAX];
    struct pdir_names l = {0};
    int rc =
        afile_join(stage, sizeof(stage), partitions_dir, PINSTALL_STAGE_DIR);
    if (rc == 0)
        rc = sio_readdir(io, stage, collect_name, &l);
    if (rc == -ENOENT || rc == -ENOTDIR)
        rc = 0;
    uint32_t k = 0;
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        struct part_id id;
        if (!pdir_parse(l.v[i], &id) || (owned && !owned(&id, ctx)) ||
            listed(live, n, &id))
            continue;
        rc = rmtree_in(io, stage, l.v[i]);
        if (rc == 0)
            k++;
    }
    if (rc == 0 && k > 0)
        rc = sio_dir_fsync(io, stage);
    names_free(&l);
    *removed += k;
    return rc;
}

int
pdir_reconcile(struct vs_sio *io, const char *partitions_dir,
               const struct part_id *live, size_t n, pdir_owned_fn owned,
               void *ctx, struct pdir_reconcile_result *res)
{
    struct pdir_reconcile_result local;
    if (!res)
        res = &local;
    memset(res, 0, sizeof(*res));
    int rc = sio_mkdir(io, partitions_dir, 0700);
    if (rc < 0)
        return rc;
    /* Collect first, act after: never modify a directory while reading. */
    struct pdir_names all = {0};
    rc = sio_readdir(io, partitions_dir, collect_name, &all);
    if (rc < 0) {
        names_free(&all);
        return rc;
    }
    struct pdir_names stale = {0}, leftovers = {0}, xfer = {0};
    size_t owned_dirs = 0, xfer_dirs = 0;
    for (size_t k = 0; k < all.n; k++) {
        struct part_id id;
        char stem[256];
        const char *nm = all.v[k];
        if (pdir_parse(nm, &id)) {
            if (owned && !owned(&id, ctx))
                continue;
            owned_dirs++;
            if (!listed(live, n, &id))
                collect_name(&stale, nm);
        } else if ((strip_suffix(nm, ".deleted", stem, sizeof(stem)) ||
                    strip_suffix(nm, ".creating", stem, sizeof(stem))) &&
                   pdir_parse(stem, &id) && (!owned || owned(&id, ctx))) {
            collect_name(&leftovers, nm);
        } else if ((strip_suffix(nm, PINSTALL_NEW, stem, sizeof(stem)) ||
                    strip_suffix(nm, PINSTALL_OLD, stem, sizeof(stem))) &&
                   pdir_parse(stem, &id) && (!owned || owned(&id, ctx))) {
            /* a whole partition (the swap may roll it forward): data */
            xfer_dirs++;
            if (!listed(live, n, &id))
                collect_name(&xfer, nm);
        }
    }
    names_free(&all);
    if (n != 0) {
        rc = stage_leftovers(io, partitions_dir, live, n, owned, ctx,
                             &res->transfer_leftovers);
        if (rc < 0)
            goto out;
    }
    if (n == 0 && owned_dirs + xfer_dirs > 0) {
        res->reason = PDIR_R_EMPTY_METADATA;
        snprintf(res->msg, sizeof(res->msg),
                 "metadata lists no partition but %zu partition "
                 "directories exist under %s: refusing to delete data",
                 owned_dirs + xfer_dirs, partitions_dir);
        rc = -EBADE;
        goto out;
    }
    for (size_t i = 0; rc == 0 && i < leftovers.n; i++) {
        rc = rmtree_in(io, partitions_dir, leftovers.v[i]);
        if (rc == 0)
            res->finished_deletes++;
    }
    for (size_t i = 0; rc == 0 && i < xfer.n; i++) {
        rc = rmtree_in(io, partitions_dir, xfer.v[i]);
        if (rc == 0)
            res->transfer_leftovers++;
    }
    if (rc == 0 && leftovers.n + xfer.n > 0)
        rc = sio_dir_fsync(io, partitions_dir);
    for (size_t i = 0; rc == 0 && i < stale.n; i++) {
        rc = remove_named(io, partitions_dir, stale.v[i]);
        if (rc == 0)
            res->removed++;
    }
    res->kept = (uint32_t)(owned_dirs - res->removed);
out:
    names_free(&stale);
    names_free(&leftovers);
    names_free(&xfer);
    return rc;
}
