/*
 * tests/sim/sim_sio.c - the simulated file system with directories: an
 * inode tree in memory (durable images, pending writes, current and
 * durable directory entries) mirrored into a real scratch tree, and the
 * power cut that rebuilds it (sim_sio.h).
 * Callers: the simulator and its unit test (one thread).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/assert.h"
#include "common/mem.h"
#include "tests/sim/sim_sio.h"

#define SECTOR  512u
#define BAD_MAX 8u

struct ent {
    char name[SIM_SIO_NAME];
    int ino; /* -1: removed */
};

struct ents {
    struct ent *e;
    size_t n, cap;
};

struct ext {
    uint64_t off, len;
};

struct inode {
    int used, dir;
    /* file */
    uint8_t *dur;
    size_t dur_len;
    struct ext *pend;
    size_t npend, pcap;
    int trunc_pending;
    uint64_t trunc_len;
    uint64_t bad[BAD_MAX];
    unsigned nbad;
    /* directory */
    struct ents vol, durab;
};

struct sim_sio {
    struct vs_sio io; /* first: the storage code gets &s->io */
    char root[512];
    struct inode *ino;
    size_t nino;
    int fd_ino[SIM_SIO_FDS]; /* -1: not ours */
    uint64_t rng;
    unsigned tear_pm;
    uint64_t calls, crash_at;
    int crashed;
    struct sim_sio_stats st;
};

static struct sim_sio *
of(struct vs_sio *io)
{
    return (struct sim_sio *)io;
}

static uint64_t
srand64(struct sim_sio *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------------ inodes */

static int
ino_new(struct sim_sio *s, int dir)
{
    size_t i = 0;
    while (i < s->nino && s->ino[i].used)
        i++;
    if (i == s->nino) {
        s->ino = vs_xrealloc(s->ino, (s->nino + 1) * sizeof(*s->ino));
        s->nino++;
    }
    memset(&s->ino[i], 0, sizeof(s->ino[i]));
    s->ino[i].used = 1;
    s->ino[i].dir = dir;
    return (int)i;
}

static void
ino_free(struct inode *n)
{
    free(n->dur);
    free(n->pend);
    free(n->vol.e);
    free(n->durab.e);
    memset(n, 0, sizeof(*n));
}

static struct ent *
ents_find(struct ents *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->e[i].ino >= 0 && strcmp(t->e[i].name, name) == 0)
            return &t->e[i];
    return NULL;
}

static void
ents_set(struct ents *t, const char *name, int ino)
{
    struct ent *e = ents_find(t, name);
    if (e == NULL && ino < 0)
        return;
    if (e == NULL) {
        if (t->n == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 8;
            t->e = vs_xrealloc(t->e, t->cap * sizeof(*t->e));
        }
        e = &t->e[t->n++];
        snprintf(e->name, sizeof(e->name), "%s", name);
    }
    e->ino = ino;
    if (ino < 0) { /* compact: keep creation order of the others */
        size_t k = (size_t)(e - t->e);
        memmove(&t->e[k], &t->e[k + 1], (t->n - k - 1) * sizeof(*t->e));
        t->n--;
    }
}

static void
ents_copy(struct ents *dst, const struct ents *src)
{
    free(dst->e);
    dst->e = NULL;
    dst->n = dst->cap = 0;
    for (size_t i = 0; i < src->n; i++)
        ents_set(dst, src->e[i].name, src->e[i].ino);
}

static void
pend_add(struct inode *n, uint64_t off, uint64_t len)
{
    if (len == 0)
        return;
    if (n->npend == n->pcap) {
        n->pcap = n->pcap ? 2 * n->pcap : 8;
        n->pend = vs_xrealloc(n->pend, n->pcap * sizeof(*n->pend));
    }
    n->pend[n->npend].off = off;
    n->pend[n->npend].len = len;
    n->npend++;
}

static void
bad_clear(struct inode *n, uint64_t off, uint64_t len)
{
    for (unsigned k = 0; k < n->nbad;) {
        uint64_t lo = n->bad[k] * SECTOR;
        if (off <= lo && off + len >= lo + SECTOR)
            n->bad[k] = n->bad[--n->nbad];
        else
            k++;
    }
}

/* ------------------------------------------------------------- paths */

/* Splits `path` (under root) into the inode of its parent directory (as
 * seen now) and its last component. 0, -ENOENT, -EACCES (not under root),
 * -ENOTDIR, -ENAMETOOLONG. path == root gives *parent -1, *name "". */
static int
resolve_parent(struct sim_sio *s, const char *path, int *parent,
               const char **name)
{
    size_t rl = strlen(s->root);
    if (strncmp(path, s->root, rl) != 0 ||
        (path[rl] != '/' && path[rl] != '\0'))
        return -EACCES;
    const char *p = path + rl;
    while (*p == '/')
        p++;
    if (*p == '\0') {
        *parent = -1;
        *name = p;
        return 0;
    }
    int cur = 0;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len >= SIM_SIO_NAME)
            return -ENAMETOOLONG;
        const char *after = slash;
        while (after != NULL && *after == '/')
            after++;
        if (slash == NULL || *after == '\0') {
            *parent = cur;
            *name = p;
            return 0;
        }
        char comp[SIM_SIO_NAME];
        memcpy(comp, p, len);
        comp[len] = '\0';
        struct ent *e = ents_find(&s->ino[cur].vol, comp);
        if (e == NULL)
            return -ENOENT;
        if (!s->ino[e->ino].dir)
            return -ENOTDIR;
        cur = e->ino;
        p = after;
    }
}

/* The last component of path without trailing slashes. */
static void
leaf(const char *name, char out[SIM_SIO_NAME])
{
    size_t len = strcspn(name, "/");
    if (len >= SIM_SIO_NAME)
        len = SIM_SIO_NAME - 1;
    memcpy(out, name, len);
    out[len] = '\0';
}

/* The inode at path as seen now, or -errno. */
static int
lookup(struct sim_sio *s, const char *path)
{
    int parent;
    const char *name;
    int rc = resolve_parent(s, path, &parent, &name);
    if (rc < 0)
        return rc;
    if (parent < 0)
        return 0;
    char nm[SIM_SIO_NAME];
    leaf(name, nm);
    struct ent *e = ents_find(&s->ino[parent].vol, nm);
    return e ? e->ino : -ENOENT;
}

/* 0: go on; 2: this call fires the armed crash; 1: crashed before. */
static int
crash_now(struct sim_sio *s)
{
    if (s->crashed)
        return 1;
    s->calls++;
    s->st.mutating++;
    if (s->crash_at != 0 && s->calls >= s->crash_at) {
        s->crashed = 1;
        return 2;
    }
    return 0;
}

static int
fd_ino(struct sim_sio *s, int fd)
{
    if (fd < 0 || fd >= SIM_SIO_FDS)
        return -1;
    return s->fd_ino[fd];
}

/* --------------------------------------------------------- the table */

static int
x_open(struct vs_sio *io, const char *path, int flags, mode_t mode)
{
    struct sim_sio *s = of(io);
    if (s->crashed)
        return -EIO;
    int parent;
    const char *name;
    int rc = resolve_parent(s, path, &parent, &name);
    if (rc < 0)
        return rc;
    if (parent < 0)
        return -EISDIR;
    char nm[SIM_SIO_NAME];
    leaf(name, nm);
    struct ent *e = ents_find(&s->ino[parent].vol, nm);
    if (e != NULL && s->ino[e->ino].dir)
        return -EISDIR;
    if (e == NULL && !(flags & O_CREAT))
        return -ENOENT;
    if ((flags & (O_CREAT | O_TRUNC)) && crash_now(s))
        return -EIO;
    /* read access too: fsync copies the file into its durable image */
    if ((flags & O_ACCMODE) == O_WRONLY)
        flags = (flags & ~O_ACCMODE) | O_RDWR;
    int real = open(path, flags | O_CLOEXEC, mode);
    if (real < 0)
        return -errno;
    if (real >= SIM_SIO_FDS) {
        close(real);
        return -EMFILE;
    }
    int ino;
    if (e == NULL) {
        ino = ino_new(s, 0);
        ents_set(&s->ino[parent].vol, nm, ino);
    } else {
        ino = e->ino;
    }
    if (flags & O_TRUNC) {
        struct inode *n = &s->ino[ino];
        n->trunc_pending = 1;
        n->trunc_len = 0;
        n->npend = 0;
    }
    s->fd_ino[real] = ino;
    return real;
}

static ssize_t
x_pread(struct vs_sio *io, int fd, void *buf, size_t len, off_t off)
{
    struct sim_sio *s = of(io);
    int ino = fd_ino(s, fd);
    if (ino < 0 || s->crashed)
        return -EIO;
    const struct inode *n = &s->ino[ino];
    for (unsigned k = 0; k < n->nbad; k++) {
        uint64_t lo = n->bad[k] * SECTOR, hi = lo + SECTOR;
        uint64_t a = (uint64_t)off;
        if (a >= lo && a < hi) {
            s->st.latent_hits++;
            return -EIO;
        }
        if (a < lo && a + len > lo)
            len = (size_t)(lo - a);
    }
    ssize_t r = pread(fd, buf, len, off);
    return r < 0 ? -errno : r;
}

static ssize_t
write_at(struct sim_sio *s, int fd, const void *buf, size_t len, off_t off)
{
    int ino = fd_ino(s, fd);
    if (ino < 0)
        return -EBADF;
    struct inode *n = &s->ino[ino];
    int c = crash_now(s);
    if (c == 1)
        return -EIO;
    if (c == 2) { /* the firing write lands a prefix, still pending */
        size_t part = (size_t)(srand64(s) % (len + 1));
        ssize_t r = part ? pwrite(fd, buf, part, off) : 0;
        if (r > 0)
            pend_add(n, (uint64_t)off, (uint64_t)r);
        return -EIO;
    }
    ssize_t r = pwrite(fd, buf, len, off);
    if (r < 0)
        return -errno;
    pend_add(n, (uint64_t)off, (uint64_t)r);
    bad_clear(n, (uint64_t)off, (uint64_t)r);
    return r;
}

static ssize_t
x_pwrite(struct vs_sio *io, int fd, const void *buf, size_t len, off_t off)
{
    return write_at(of(io), fd, buf, len, off);
}

static ssize_t
x_write(struct vs_sio *io, int fd, const void *buf, size_t len)
{
    off_t off = lseek(fd, 0, SEEK_CUR);
    if (off < 0)
        return -errno;
    ssize_t r = write_at(of(io), fd, buf, len, off);
    if (r > 0)
        (void)lseek(fd, off + r, SEEK_SET);
    return r;
}

static int
slurp(int fd, uint8_t **out, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st) == -1)
        return -errno;
    size_t n = (size_t)st.st_size;
    uint8_t *b = vs_xmalloc(n ? n : 1);
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, b + got, n - got, (off_t)got);
        if (r <= 0) {
            free(b);
            return r < 0 ? -errno : -EIO;
        }
        got += (size_t)r;
    }
    *out = b;
    *len = n;
    return 0;
}

static int
x_fsync(struct vs_sio *io, int fd)
{
    struct sim_sio *s = of(io);
    int ino = fd_ino(s, fd);
    if (ino < 0)
        return -EBADF;
    if (crash_now(s))
        return -EIO;
    struct inode *n = &s->ino[ino];
    uint8_t *b;
    size_t len;
    int rc = slurp(fd, &b, &len);
    if (rc < 0)
        return rc;
    free(n->dur);
    n->dur = b;
    n->dur_len = len;
    n->npend = 0;
    n->trunc_pending = 0;
    return 0;
}

static int
do_rename(struct sim_sio *s, const char *from, const char *to, int dirs)
{
    if (crash_now(s))
        return -EIO;
    int pf, pt;
    const char *nf, *nt;
    int rc = resolve_parent(s, from, &pf, &nf);
    if (rc == 0)
        rc = resolve_parent(s, to, &pt, &nt);
    if (rc < 0)
        return rc;
    if (pf < 0 || pt < 0)
        return -EBUSY;
    char a[SIM_SIO_NAME], b[SIM_SIO_NAME];
    leaf(nf, a);
    leaf(nt, b);
    struct ent *e = ents_find(&s->ino[pf].vol, a);
    if (e == NULL)
        return -ENOENT;
    int ino = e->ino;
    if (s->ino[ino].dir != dirs)
        return dirs ? -ENOTDIR : -EISDIR;
    struct ent *old = ents_find(&s->ino[pt].vol, b);
    if (old != NULL && s->ino[old->ino].dir &&
        (!dirs || s->ino[old->ino].vol.n > 0))
        return dirs ? -ENOTEMPTY : -EISDIR;
    if (rename(from, to) == -1)
        return -errno;
    ents_set(&s->ino[pf].vol, a, -1);
    ents_set(&s->ino[pt].vol, b, ino);
    return 0;
}

static int
x_rename(struct vs_sio *io, const char *from, const char *to)
{
    return do_rename(of(io), from, to, 0);
}

static int
x_dir_rename(struct vs_sio *io, const char *from, const char *to)
{
    return do_rename(of(io), from, to, 1);
}

static int
x_dir_fsync(struct vs_sio *io, const char *dir)
{
    struct sim_sio *s = of(io);
    if (crash_now(s))
        return -EIO;
    int ino = lookup(s, dir);
    if (ino < 0)
        return ino;
    if (!s->ino[ino].dir)
        return -ENOTDIR;
    ents_copy(&s->ino[ino].durab, &s->ino[ino].vol);
    return 0;
}

static int
x_ftruncate(struct vs_sio *io, int fd, off_t len)
{
    struct sim_sio *s = of(io);
    int ino = fd_ino(s, fd);
    if (ino < 0)
        return -EBADF;
    if (crash_now(s))
        return -EIO;
    if (ftruncate(fd, len) == -1)
        return -errno;
    struct inode *n = &s->ino[ino];
    if (!n->trunc_pending || (uint64_t)len < n->trunc_len)
        n->trunc_len = (uint64_t)len;
    n->trunc_pending = 1;
    for (size_t i = 0; i < n->npend; i++) /* writes above it are gone */
        if (n->pend[i].off >= (uint64_t)len)
            n->pend[i].len = 0;
        else if (n->pend[i].off + n->pend[i].len > (uint64_t)len)
            n->pend[i].len = (uint64_t)len - n->pend[i].off;
    return 0;
}

static int
x_unlink(struct vs_sio *io, const char *path)
{
    struct sim_sio *s = of(io);
    if (crash_now(s))
        return -EIO;
    int parent;
    const char *name;
    int rc = resolve_parent(s, path, &parent, &name);
    if (rc < 0)
        return rc;
    if (parent < 0)
        return -EISDIR;
    char nm[SIM_SIO_NAME];
    leaf(name, nm);
    struct ent *e = ents_find(&s->ino[parent].vol, nm);
    if (e == NULL)
        return -ENOENT;
    if (s->ino[e->ino].dir)
        return -EISDIR;
    if (unlink(path) == -1)
        return -errno;
    ents_set(&s->ino[parent].vol, nm, -1);
    return 0;
}

static int
x_close(struct vs_sio *io, int fd)
{
    struct sim_sio *s = of(io);
    if (fd_ino(s, fd) < 0)
        return -EBADF;
    s->fd_ino[fd] = -1;
    return close(fd) == -1 ? -errno : 0;
}

static int
x_mkdir(struct vs_sio *io, const char *path, mode_t mode)
{
    struct sim_sio *s = of(io);
    int parent;
    const char *name;
    int rc = resolve_parent(s, path, &parent, &name);
    if (rc < 0)
        return rc;
    if (parent < 0)
        return -EEXIST;
    char nm[SIM_SIO_NAME];
    leaf(name, nm);
    if (ents_find(&s->ino[parent].vol, nm) != NULL)
        return -EEXIST;
    if (crash_now(s))
        return -EIO;
    if (mkdir(path, mode) == -1)
        return -errno;
    ents_set(&s->ino[parent].vol, nm, ino_new(s, 1));
    return 0;
}

static int
x_rmdir(struct vs_sio *io, const char *path)
{
    struct sim_sio *s = of(io);
    int parent;
    const char *name;
    int rc = resolve_parent(s, path, &parent, &name);
    if (rc < 0)
        return rc;
    if (parent < 0)
        return -EBUSY;
    char nm[SIM_SIO_NAME];
    leaf(name, nm);
    struct ent *e = ents_find(&s->ino[parent].vol, nm);
    if (e == NULL)
        return -ENOENT;
    if (!s->ino[e->ino].dir)
        return -ENOTDIR;
    if (s->ino[e->ino].vol.n > 0)
        return -ENOTEMPTY;
    if (crash_now(s))
        return -EIO;
    if (rmdir(path) == -1)
        return -errno;
    ents_set(&s->ino[parent].vol, nm, -1);
    return 0;
}

static int
x_readdir(struct vs_sio *io, const char *path,
          int (*fn)(void *arg, const char *name), void *arg)
{
    struct sim_sio *s = of(io);
    if (s->crashed)
        return -EIO;
    int ino = lookup(s, path);
    if (ino < 0)
        return ino;
    if (!s->ino[ino].dir)
        return -ENOTDIR;
    /* a copy: fn may create or remove entries */
    struct ents c = {0};
    ents_copy(&c, &s->ino[ino].vol);
    int rc = 0;
    for (size_t i = 0; i < c.n && rc == 0; i++)
        rc = fn(arg, c.e[i].name);
    free(c.e);
    return rc;
}

/* ---------------------------------------------------------- lifecycle */

static int
rm_real(const char *path, int keep_top)
{
    DIR *d = opendir(path);
    if (d == NULL)
        return errno == ENOENT ? 0 : -errno;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rc = rm_real(p, 0);
        else if (unlink(p) == -1)
            rc = -errno;
        if (rc < 0)
            break;
    }
    closedir(d);
    if (rc == 0 && !keep_top && rmdir(path) == -1)
        rc = -errno;
    return rc;
}

int
sim_sio_create(const char *root, uint64_t seed, unsigned tear_permille,
               struct sim_sio **out)
{
    struct sim_sio *s = vs_xcalloc(1, sizeof(*s));
    int rc = 0;
    if (strlen(root) >= sizeof(s->root) - 1 || root[0] != '/') {
        rc = -EINVAL;
        goto fail;
    }
    snprintf(s->root, sizeof(s->root), "%s", root);
    if (mkdir(root, 0700) == -1 && errno != EEXIST) {
        rc = -errno;
        goto fail;
    }
    if ((rc = rm_real(root, 1)) < 0)
        goto fail;
    for (int i = 0; i < SIM_SIO_FDS; i++)
        s->fd_ino[i] = -1;
    s->rng = seed ^ 0x5105105105ull;
    s->tear_pm = tear_permille;
    (void)ino_new(s, 1); /* the root, inode 0, always durable */
    s->io.open = x_open;
    s->io.pread = x_pread;
    s->io.pwrite = x_pwrite;
    s->io.write = x_write;
    s->io.fsync = x_fsync;
    s->io.rename = x_rename;
    s->io.dir_fsync = x_dir_fsync;
    s->io.ftruncate = x_ftruncate;
    s->io.unlink = x_unlink;
    s->io.close = x_close;
    s->io.mkdir = x_mkdir;
    s->io.rmdir = x_rmdir;
    s->io.readdir = x_readdir;
    s->io.dir_rename = x_dir_rename;
    *out = s;
    return 0;
fail:
    free(s);
    return rc;
}

static void
close_all(struct sim_sio *s)
{
    for (int i = 0; i < SIM_SIO_FDS; i++)
        if (s->fd_ino[i] >= 0) {
            close(i);
            s->fd_ino[i] = -1;
        }
}

void
sim_sio_destroy(struct sim_sio *s)
{
    if (s == NULL)
        return;
    close_all(s);
    (void)rm_real(s->root, 0);
    for (size_t i = 0; i < s->nino; i++)
        if (s->ino[i].used)
            ino_free(&s->ino[i]);
    free(s->ino);
    free(s);
}

struct vs_sio *
sim_sio_io(struct sim_sio *s)
{
    return &s->io;
}

const char *
sim_sio_root(const struct sim_sio *s)
{
    return s->root;
}

int
sim_sio_dup(struct sim_sio *s, int fd)
{
    int ino = fd_ino(s, fd);
    if (ino < 0 || s->crashed)
        return -EBADF;
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (d < 0)
        return -errno;
    if (d >= SIM_SIO_FDS) {
        close(d);
        return -EMFILE;
    }
    s->fd_ino[d] = ino;
    return d;
}

void
sim_sio_arm_crash(struct sim_sio *s, uint64_t nth)
{
    s->crash_at = nth ? s->calls + nth : 0;
}

int
sim_sio_crashed(const struct sim_sio *s)
{
    return s->crashed;
}

void
sim_sio_get_stats(const struct sim_sio *s, struct sim_sio_stats *out)
{
    *out = s->st;
}

/* The bytes of file inode n that survive a power cut, given its current
 * image vol[0..vol_len). */
static void
survive(struct sim_sio *s, struct inode *n, const uint8_t *vol, size_t vol_len,
        uint8_t **out, size_t *out_len)
{
    size_t len = n->dur_len;
    if (n->trunc_pending && srand64(s) % 2 == 0 && n->trunc_len < len)
        len = (size_t)n->trunc_len;
    size_t cap = len;
    for (size_t i = 0; i < n->npend; i++)
        if (n->pend[i].off + n->pend[i].len > cap)
            cap = (size_t)(n->pend[i].off + n->pend[i].len);
    uint8_t *b = vs_xcalloc(1, cap ? cap : 1);
    if (len)
        memcpy(b, n->dur, len);
    for (size_t i = 0; i < n->npend; i++) {
        uint64_t off = n->pend[i].off, plen = n->pend[i].len;
        if (plen == 0 || off >= vol_len)
            continue;
        if (off + plen > vol_len)
            plen = vol_len - off;
        uint64_t lo = off, hi = off + plen;
        int hole = 0;
        uint64_t hole_lo = 0, hole_hi = 0;
        if (srand64(s) % 1000 < s->tear_pm) {
            s->st.torn++;
            if (srand64(s) % 2 == 0 || plen <= SECTOR) {
                hi = lo + srand64(s) % (plen + 1);
            } else {
                uint64_t sectors = (plen + SECTOR - 1) / SECTOR;
                hole_lo = lo + (srand64(s) % sectors) * SECTOR;
                hole_hi = hole_lo + SECTOR < hi ? hole_lo + SECTOR : hi;
                hole = 1;
            }
        } else if (srand64(s) % 2 == 0) {
            s->st.dropped++;
            continue;
        } else {
            s->st.applied++;
        }
        for (uint64_t p = lo; p < hi; p++)
            if (!hole || p < hole_lo || p >= hole_hi)
                b[p] = vol[p];
        if (hi > len)
            len = (size_t)hi;
    }
    *out = b;
    *out_len = len;
}

/* A file's current image, read through the real tree (path known from
 * the walk), for the crash. */
struct img {
    uint8_t *b;
    size_t len;
    int have;
};

static void
capture(struct sim_sio *s, int dir, const char *path, struct img *im)
{
    struct inode *d = &s->ino[dir];
    for (size_t i = 0; i < d->vol.n; i++) {
        int ino = d->vol.e[i].ino;
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s", path, d->vol.e[i].name);
        if (s->ino[ino].dir) {
            capture(s, ino, p, im);
        } else if (!im[ino].have) {
            int fd = open(p, O_RDONLY | O_CLOEXEC);
            if (fd >= 0 && slurp(fd, &im[ino].b, &im[ino].len) == 0)
                im[ino].have = 1;
            if (fd >= 0)
                close(fd);
        }
    }
}

/* Builds the surviving tree under directory inode `dir` of the old
 * table into the new table (directory `ndir`) and the real tree at
 * `path`. */
static int
rebuild(struct sim_sio *s, struct inode *old, size_t nold, int dir,
        struct sim_sio *ns, int ndir, const char *path, struct img *im,
        uint8_t *placed)
{
    struct inode *d = &old[dir];
    /* the entries: durable ones, and each changed since the directory's
     * last fsync may have reached the disk or not */
    struct ents pick = {0};
    ents_copy(&pick, &d->durab);
    for (size_t i = 0; i < d->vol.n; i++) {
        struct ent *e = ents_find(&pick, d->vol.e[i].name);
        if ((e == NULL || e->ino != d->vol.e[i].ino)) {
            if (srand64(s) % 2 == 0) {
                ents_set(&pick, d->vol.e[i].name, d->vol.e[i].ino);
                s->st.names_kept++;
            } else {
                s->st.names_lost++;
            }
        }
    }
    for (size_t i = 0; i < d->durab.n; i++)
        if (ents_find(&d->vol, d->durab.e[i].name) == NULL &&
            srand64(s) % 2 == 0) {
            ents_set(&pick, d->durab.e[i].name, -1); /* unlink landed */
            s->st.names_lost++;
        }
    int rc = 0;
    for (size_t i = 0; i < pick.n && rc == 0; i++) {
        int ino = pick.e[i].ino;
        VS_ASSERT((size_t)ino < nold);
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s", path, pick.e[i].name);
        struct inode *n = &old[ino];
        if (n->dir) {
            if (placed[ino])
                continue; /* one directory, one place */
            placed[ino] = 1;
            if (mkdir(p, 0700) == -1) {
                rc = -errno;
                break;
            }
            int nd = ino_new(ns, 1);
            struct inode *par = &ns->ino[ndir];
            ents_set(&par->vol, pick.e[i].name, nd);
            ents_set(&ns->ino[ndir].durab, pick.e[i].name, nd);
            rc = rebuild(s, old, nold, ino, ns, nd, p, im, placed);
            continue;
        }
        uint8_t *b;
        size_t len;
        survive(s, n, im[ino].have ? im[ino].b : NULL,
                im[ino].have ? im[ino].len : 0, &b, &len);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
            free(b);
            rc = -errno;
            break;
        }
        size_t put = 0;
        while (put < len) {
            ssize_t w = write(fd, b + put, len - put);
            if (w <= 0) {
                rc = -EIO;
                break;
            }
            put += (size_t)w;
        }
        close(fd);
        int nf = ino_new(ns, 0);
        struct inode *f = &ns->ino[nf];
        f->dur = b;
        f->dur_len = len;
        memcpy(f->bad, n->bad, sizeof(f->bad));
        f->nbad = n->nbad;
        ents_set(&ns->ino[ndir].vol, pick.e[i].name, nf);
        ents_set(&ns->ino[ndir].durab, pick.e[i].name, nf);
    }
    free(pick.e);
    return rc;
}

int
sim_sio_crash(struct sim_sio *s)
{
    close_all(s);
    s->st.crashes++;
    struct img *im = vs_xcalloc(s->nino ? s->nino : 1, sizeof(*im));
    capture(s, 0, s->root, im);
    int rc = rm_real(s->root, 1);
    struct inode *old = s->ino;
    size_t nold = s->nino;
    uint8_t *placed = vs_xcalloc(nold ? nold : 1, 1);
    s->ino = NULL;
    s->nino = 0;
    (void)ino_new(s, 1);
    if (rc == 0)
        rc = rebuild(s, old, nold, 0, s, 0, s->root, im, placed);
    for (size_t i = 0; i < nold; i++) {
        free(im[i].b);
        if (old[i].used)
            ino_free(&old[i]);
    }
    free(old);
    free(im);
    free(placed);
    s->crashed = 0;
    s->crash_at = 0;
    memset(&s->io.fatal, 0, sizeof(s->io.fatal));
    return rc;
}

static int
file_at(struct sim_sio *s, const char *path)
{
    int ino = lookup(s, path);
    if (ino < 0 || s->ino[ino].dir || s->ino[ino].dur_len == 0)
        return -1;
    return ino;
}

int
sim_sio_flip(struct sim_sio *s, const char *path, uint64_t off, uint8_t mask)
{
    int ino = file_at(s, path);
    if (ino < 0 || mask == 0)
        return 0;
    struct inode *n = &s->ino[ino];
    off %= n->dur_len;
    n->dur[off] ^= mask;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t w = pwrite(fd, &n->dur[off], 1, (off_t)off);
    close(fd);
    return w == 1 ? 1 : -EIO;
}

int
sim_sio_latent(struct sim_sio *s, const char *path, uint64_t off)
{
    int ino = file_at(s, path);
    if (ino < 0)
        return 0;
    struct inode *n = &s->ino[ino];
    if (n->nbad == BAD_MAX)
        return 0;
    uint64_t sec = (off % n->dur_len) / SECTOR;
    for (unsigned k = 0; k < n->nbad; k++)
        if (n->bad[k] == sec)
            return 1;
    n->bad[n->nbad++] = sec;
    return 1;
}

int
sim_sio_remap(struct sim_sio *s, const char *path, uint64_t off)
{
    int ino = file_at(s, path);
    if (ino < 0)
        return 0;
    struct inode *n = &s->ino[ino];
    if (n->dur_len == 0)
        return 0;
    uint64_t sec = (off % n->dur_len) / SECTOR;
    for (unsigned k = 0; k < n->nbad; k++)
        if (n->bad[k] == sec) {
            n->bad[k] = n->bad[--n->nbad];
            return 1;
        }
    return 0;
}

long
sim_sio_size(struct sim_sio *s, const char *path)
{
    int ino = lookup(s, path);
    if (ino < 0 || s->ino[ino].dir)
        return -1;
    return (long)s->ino[ino].dur_len;
}

int
sim_sio_list(struct sim_sio *s, const char *path,
             int (*fn)(void *arg, const char *name), void *arg)
{
    int ino = lookup(s, path);
    if (ino < 0)
        return -ENOENT;
    if (!s->ino[ino].dir)
        return -ENOTDIR;
    const struct ents *t = &s->ino[ino].vol;
    for (size_t i = 0; i < t->n; i++)
        if (fn(arg, t->e[i].name) != 0)
            break;
    return 0;
}
