/*
 * tests/sim/sim_disk.c - the simulated disk: page cache over real scratch
 * files, durable images, crash with torn pending writes (sim_disk.h).
 * Callers: the simulator only (one thread).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/assert.h"
#include "common/mem.h"
#include "tests/sim/sim_disk.h"

#define SECTOR 512u

static struct sim_disk *
disk_of(struct vs_sio *io)
{
    return (struct sim_disk *)io;
}

static uint64_t
drand(struct sim_disk *d)
{
    /* splitmix64: the disk's own stream, seeded per run */
    uint64_t z = (d->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The name inside d->dir of path, or NULL if path is elsewhere. */
static const char *
base_in_dir(const struct sim_disk *d, const char *path)
{
    size_t n = strlen(d->dir);
    if (strncmp(path, d->dir, n) != 0 || path[n] != '/')
        return NULL;
    const char *b = path + n + 1;
    if (*b == '\0' || strchr(b, '/') != NULL || strlen(b) >= SIM_DISK_NAME)
        return NULL;
    return b;
}

static struct sim_dname *
name_find(struct sim_dname *tab, const char *name)
{
    for (int i = 0; i < SIM_DISK_FILES; i++)
        if (tab[i].ino >= 0 && strcmp(tab[i].name, name) == 0)
            return &tab[i];
    return NULL;
}

static struct sim_dname *
name_set(struct sim_dname *tab, const char *name, int ino)
{
    struct sim_dname *e = name_find(tab, name);
    if (e == NULL) {
        for (int i = 0; i < SIM_DISK_FILES && e == NULL; i++)
            if (tab[i].ino < 0)
                e = &tab[i];
        VS_ASSERT(e != NULL);
        snprintf(e->name, sizeof(e->name), "%s", name);
    }
    e->ino = ino;
    return e;
}

static int
ino_referenced(const struct sim_disk *d, int ino)
{
    for (int i = 0; i < SIM_DISK_FILES; i++)
        if (d->vol[i].ino == ino || d->dur[i].ino == ino)
            return 1;
    for (int i = 0; i < SIM_DISK_FDS; i++)
        if (d->fd_ino[i] == ino)
            return 1;
    return 0;
}

static void
ino_free(struct sim_inode *n)
{
    free(n->dur);
    free(n->pend);
    memset(n, 0, sizeof(*n));
}

/* Frees inodes no name and no descriptor refers to. */
static void
ino_gc(struct sim_disk *d)
{
    for (int i = 0; i < SIM_DISK_FILES; i++)
        if (d->ino[i].used && !ino_referenced(d, i))
            ino_free(&d->ino[i]);
}

static int
ino_new(struct sim_disk *d)
{
    ino_gc(d);
    for (int i = 0; i < SIM_DISK_FILES; i++)
        if (!d->ino[i].used) {
            memset(&d->ino[i], 0, sizeof(d->ino[i]));
            d->ino[i].used = 1;
            return i;
        }
    VS_ASSERT(!"sim_disk: too many files");
    return -1;
}

static void
pend_add(struct sim_inode *n, uint64_t off, uint64_t len)
{
    if (len == 0)
        return;
    if (n->npend == n->cap) {
        n->cap = n->cap ? n->cap * 2 : 8;
        n->pend = vs_xrealloc(n->pend, n->cap * sizeof(*n->pend));
    }
    n->pend[n->npend].off = off;
    n->pend[n->npend].len = len;
    n->npend++;
}

/* Reads a whole real file by descriptor into a malloc'd buffer. */
static int
slurp_fd(int fd, uint8_t **out, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st) == -1)
        return -errno;
    size_t n = (size_t)st.st_size;
    uint8_t *b = n ? vs_xmalloc(n) : NULL;
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
write_file(const char *path, const uint8_t *b, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    size_t put = 0;
    while (put < n) {
        ssize_t w = write(fd, b + put, n - put);
        if (w <= 0) {
            close(fd);
            return -EIO;
        }
        put += (size_t)w;
    }
    close(fd);
    return 0;
}

/* 1 if this mutating call is the armed crash (or after it). */
static int
crash_now(struct sim_disk *d)
{
    if (d->crashed)
        return 1;
    d->mutating_calls++;
    if (d->crash_at != 0 && d->mutating_calls >= d->crash_at) {
        d->crashed = 1;
        return 1;
    }
    return 0;
}

/* Descriptors are the real ones (the storage code fstat()s them); the
 * table maps each to its inode. */
static int
fd_slot(struct sim_disk *d, int fd)
{
    if (fd < 0 || fd >= SIM_DISK_FDS || d->fd_real[fd] < 0)
        return -1;
    return fd;
}

/* ---------------------------------------------------------- the table */

static int
d_open(struct vs_sio *io, const char *path, int flags, mode_t mode)
{
    struct sim_disk *d = disk_of(io);
    if (d->crashed)
        return -EIO;
    const char *b = base_in_dir(d, path);
    if (b == NULL)
        return -EACCES; /* the node only touches its metadata dir */
    struct sim_dname *e = name_find(d->vol, b);
    if ((flags & (O_CREAT | O_TRUNC)) && crash_now(d))
        return -EIO;
    /* read access too: fsync copies the file into its durable image */
    int acc = flags & O_ACCMODE;
    if (acc == O_WRONLY)
        flags = (flags & ~O_ACCMODE) | O_RDWR;
    int real = open(path, flags | O_CLOEXEC, mode);
    if (real < 0)
        return -errno;
    if (real >= SIM_DISK_FDS) {
        close(real);
        return -EMFILE;
    }
    int slot = real;
    int ino;
    if (e == NULL) {
        ino = ino_new(d); /* O_CREAT of a new name (or a stray file) */
        name_set(d->vol, b, ino);
    } else {
        ino = e->ino;
    }
    if (flags & O_TRUNC) {
        struct sim_inode *n = &d->ino[ino];
        n->trunc_pending = 1;
        n->trunc_len = 0;
        n->npend = 0;
    }
    d->fd_real[slot] = real;
    d->fd_ino[slot] = ino;
    return slot;
}

static ssize_t
d_pread(struct vs_sio *io, int fd, void *buf, size_t len, off_t off)
{
    struct sim_disk *d = disk_of(io);
    int s = fd_slot(d, fd);
    if (s < 0 || d->crashed)
        return -EIO;
    const struct sim_inode *n = &d->ino[d->fd_ino[s]];
    for (unsigned k = 0; k < n->nbad; k++) {
        uint64_t lo = n->bad[k] * 512, hi = lo + 512;
        uint64_t a = (uint64_t)off;
        if (a >= lo && a < hi)
            return -EIO; /* the read starts in a bad sector */
        if (a < lo && a + len > lo)
            len = (size_t)(lo - a); /* a short read up to it */
    }
    ssize_t r = pread(d->fd_real[s], buf, len, off);
    return r < 0 ? -errno : r;
}

/* A write covering a bad sector remaps it: it reads again. */
static void
bad_clear(struct sim_inode *n, uint64_t off, uint64_t len)
{
    for (unsigned k = 0; k < n->nbad;) {
        uint64_t lo = n->bad[k] * 512;
        if (off < lo + 512 && off + len > lo)
            n->bad[k] = n->bad[--n->nbad];
        else
            k++;
    }
}

static ssize_t
d_pwrite_at(struct sim_disk *d, int s, const void *buf, size_t len,
            uint64_t off)
{
    struct sim_inode *n = &d->ino[d->fd_ino[s]];
    int crash = crash_now(d);
    size_t put = len;
    if (crash) {
        if (d->mutating_calls != d->crash_at)
            return -EIO;
        put = len ? (size_t)(drand(d) % len) : 0; /* a prefix lands */
    }
    ssize_t w = put ? pwrite(d->fd_real[s], buf, put, (off_t)off) : 0;
    if (w < 0)
        return -errno;
    bad_clear(n, off, (uint64_t)w);
    pend_add(n, off, (uint64_t)w);
    return crash ? -EIO : w;
}

static ssize_t
d_pwrite(struct vs_sio *io, int fd, const void *buf, size_t len, off_t off)
{
    struct sim_disk *d = disk_of(io);
    int s = fd_slot(d, fd);
    if (s < 0)
        return -EBADF;
    return d_pwrite_at(d, s, buf, len, (uint64_t)off);
}

static ssize_t
d_write(struct vs_sio *io, int fd, const void *buf, size_t len)
{
    struct sim_disk *d = disk_of(io);
    int s = fd_slot(d, fd);
    if (s < 0)
        return -EBADF;
    off_t pos = lseek(d->fd_real[s], 0, SEEK_CUR);
    if (pos < 0)
        return -errno;
    ssize_t w = d_pwrite_at(d, s, buf, len, (uint64_t)pos);
    if (w > 0 && lseek(d->fd_real[s], pos + w, SEEK_SET) < 0)
        return -errno;
    return w;
}

static int
d_fsync(struct vs_sio *io, int fd)
{
    struct sim_disk *d = disk_of(io);
    int s = fd_slot(d, fd);
    if (s < 0)
        return -EBADF;
    if (crash_now(d))
        return -EIO;
    struct sim_inode *n = &d->ino[d->fd_ino[s]];
    uint8_t *b;
    size_t len;
    int rc = slurp_fd(d->fd_real[s], &b, &len);
    if (rc != 0)
        return rc;
    free(n->dur);
    n->dur = b;
    n->dur_len = len;
    n->npend = 0;
    n->trunc_pending = 0;
    /* the writes completed: nothing of this file is left to lose */
    for (unsigned k = 0; k < d->nlose;) {
        const struct sim_dname *e = name_find(d->vol, d->lose[k].name);
        if (e != NULL && e->ino == d->fd_ino[s])
            d->lose[k] = d->lose[--d->nlose];
        else
            k++;
    }
    return 0;
}

static int
d_rename(struct vs_sio *io, const char *from, const char *to)
{
    struct sim_disk *d = disk_of(io);
    const char *bf = base_in_dir(d, from), *bt = base_in_dir(d, to);
    if (bf == NULL || bt == NULL)
        return -EXDEV;
    if (crash_now(d))
        return -EIO;
    struct sim_dname *e = name_find(d->vol, bf);
    if (e == NULL)
        return -ENOENT;
    if (rename(from, to) == -1)
        return -errno;
    int ino = e->ino;
    e->ino = -1;
    name_set(d->vol, bt, ino);
    return 0;
}

static int
d_dir_fsync(struct vs_sio *io, const char *dir)
{
    struct sim_disk *d = disk_of(io);
    if (crash_now(d))
        return -EIO;
    if (strcmp(dir, d->dir) != 0)
        return 0; /* directories above hold no file of the node */
    memcpy(d->dur, d->vol, sizeof(d->dur));
    return 0;
}

static int
d_ftruncate(struct vs_sio *io, int fd, off_t len)
{
    struct sim_disk *d = disk_of(io);
    int s = fd_slot(d, fd);
    if (s < 0)
        return -EBADF;
    if (crash_now(d))
        return -EIO;
    if (ftruncate(d->fd_real[s], len) == -1)
        return -errno;
    struct sim_inode *n = &d->ino[d->fd_ino[s]];
    n->trunc_pending = 1;
    n->trunc_len = (uint64_t)len;
    return 0;
}

static int
d_unlink(struct vs_sio *io, const char *path)
{
    struct sim_disk *d = disk_of(io);
    const char *b = base_in_dir(d, path);
    if (b == NULL)
        return -EACCES;
    struct sim_dname *e = name_find(d->vol, b);
    if (e == NULL)
        return -ENOENT;
    if (crash_now(d))
        return -EIO;
    if (unlink(path) == -1)
        return -errno;
    e->ino = -1;
    return 0;
}

static int
d_close(struct vs_sio *io, int fd)
{
    struct sim_disk *d = disk_of(io);
    int s = fd_slot(d, fd);
    if (s < 0)
        return -EBADF;
    close(d->fd_real[s]);
    d->fd_real[s] = -1;
    d->fd_ino[s] = -1;
    return 0;
}

/* ------------------------------------------------------------ public */

int
sim_disk_init(struct sim_disk *d, const char *dir, uint64_t seed,
              unsigned tear_permille)
{
    memset(d, 0, sizeof(*d));
    d->io.open = d_open;
    d->io.pread = d_pread;
    d->io.pwrite = d_pwrite;
    d->io.write = d_write;
    d->io.fsync = d_fsync;
    d->io.rename = d_rename;
    d->io.dir_fsync = d_dir_fsync;
    d->io.ftruncate = d_ftruncate;
    d->io.unlink = d_unlink;
    d->io.close = d_close;
    if (strlen(dir) >= sizeof(d->dir))
        return -ENAMETOOLONG;
    snprintf(d->dir, sizeof(d->dir), "%s", dir);
    for (int i = 0; i < SIM_DISK_FILES; i++)
        d->vol[i].ino = d->dur[i].ino = -1;
    for (int i = 0; i < SIM_DISK_FDS; i++)
        d->fd_real[i] = d->fd_ino[i] = -1;
    d->rng = seed;
    d->tear_permille = tear_permille;
    return 0;
}

void
sim_disk_fini(struct sim_disk *d)
{
    for (int i = 0; i < SIM_DISK_FDS; i++)
        if (d->fd_real[i] >= 0)
            close(d->fd_real[i]);
    for (int i = 0; i < SIM_DISK_FILES; i++)
        if (d->ino[i].used)
            ino_free(&d->ino[i]);
}

/* 1 if [off, off + len) of `name` touches a range to lose whole. */
static int
lose_hit(const struct sim_disk *d, const char *name, uint64_t off, uint64_t len)
{
    for (unsigned k = 0; k < d->nlose; k++)
        if (strcmp(d->lose[k].name, name) == 0 && off < d->lose[k].end &&
            off + len > d->lose[k].off)
            return 1;
    return 0;
}

static void
torn_record(struct sim_disk *d, const char *name, uint64_t off, uint64_t end,
            uint64_t durable_len)
{
    if (d->ntorn == SIM_DISK_TORN) {
        d->tornlog_full = 1;
        return;
    }
    struct sim_torn *t = &d->tornlog[d->ntorn++];
    snprintf(t->name, sizeof(t->name), "%.63s", name);
    t->off = off;
    t->end = end;
    t->durable_len = d->torn_as_synced ? end : durable_len;
    t->touched = 0;
}

/* One pending write's fate at the crash: what lands of it. */
struct pend_fate {
    uint64_t lo, hi;           /* bytes that land (hi == lo: none) */
    uint64_t hole_lo, hole_hi; /* a sector keeping its old bytes */
    int torn, dropped;
};

/* What survives of one inode's pending state (see the header). The
 * fates are drawn first, in order, then applied: a range to lose whole
 * (sim_disk_lose_whole) changes what lands, never the draws. */
static void
survive(struct sim_disk *d, const char *name, struct sim_inode *n,
        const uint8_t *vol, size_t vol_len, uint8_t **out, size_t *out_len)
{
    size_t len = n->dur_len;
    if (n->trunc_pending && drand(d) % 2 == 0 && n->trunc_len < len)
        len = (size_t)n->trunc_len;
    size_t cap = len;
    for (size_t i = 0; i < n->npend; i++)
        if (n->pend[i].off + n->pend[i].len > cap)
            cap = (size_t)(n->pend[i].off + n->pend[i].len);
    uint8_t *b = vs_xcalloc(1, cap ? cap : 1);
    if (len)
        memcpy(b, n->dur, len < n->dur_len ? len : n->dur_len);
    struct pend_fate *fate = vs_xcalloc(n->npend ? n->npend : 1, sizeof(*fate));
    int lose = 0; /* a write touching a range to lose tore */
    for (size_t i = 0; i < n->npend; i++) {
        struct pend_fate *f = &fate[i];
        uint64_t off = n->pend[i].off, plen = n->pend[i].len;
        f->dropped = 1;
        if (off >= vol_len)
            continue;
        if (off + plen > vol_len)
            plen = vol_len - off;
        f->dropped = 0;
        f->lo = off;
        f->hi = off + plen;
        if (drand(d) % 1000 < d->tear_permille) {
            d->torn++;
            f->torn = 1;
            if (drand(d) % 2 == 0 || plen <= SECTOR) {
                f->hi = f->lo + drand(d) % (plen + 1); /* cut */
            } else {
                uint64_t sectors = (plen + SECTOR - 1) / SECTOR;
                f->hole_lo = f->lo + (drand(d) % sectors) * SECTOR;
                f->hole_hi =
                    f->hole_lo + SECTOR < f->hi ? f->hole_lo + SECTOR : f->hi;
            }
            lose |= lose_hit(d, name, off, plen);
        } else if (drand(d) % 2 == 0) {
            d->dropped++;
            f->dropped = 1;
        } else {
            d->applied++;
        }
    }
    for (size_t i = 0; i < n->npend; i++) {
        struct pend_fate *f = &fate[i];
        if (f->dropped)
            continue;
        if (lose && lose_hit(d, name, f->lo, n->pend[i].len)) {
            d->lost_whole++;
            continue;
        }
        if (f->torn)
            torn_record(d, name, f->lo, f->lo + n->pend[i].len, n->dur_len);
        for (uint64_t p = f->lo; p < f->hi; p++)
            if (p < f->hole_lo || p >= f->hole_hi)
                b[p] = vol[p];
        if (f->hi > len)
            len = (size_t)f->hi;
    }
    free(fate);
    *out = b;
    *out_len = len;
}

int
sim_disk_crash(struct sim_disk *d)
{
    for (int i = 0; i < SIM_DISK_FDS; i++)
        if (d->fd_real[i] >= 0) {
            close(d->fd_real[i]);
            d->fd_real[i] = d->fd_ino[i] = -1;
        }
    /* 1. the names: durable, or (renamed since the last directory
     *    fsync) either the old or the new mapping */
    struct sim_dname pick[SIM_DISK_FILES];
    memcpy(pick, d->dur, sizeof(pick));
    for (int i = 0; i < SIM_DISK_FILES; i++) {
        if (d->vol[i].ino < 0)
            continue;
        struct sim_dname *e = name_find(pick, d->vol[i].name);
        int durable = e ? e->ino : -1;
        if (durable != d->vol[i].ino && drand(d) % 2 == 0) {
            name_set(pick, d->vol[i].name, d->vol[i].ino);
            d->renames_lost++;
        }
    }
    for (int i = 0; i < SIM_DISK_FILES; i++) {
        if (d->dur[i].ino < 0)
            continue;
        if (name_find(d->vol, d->dur[i].name) == NULL && drand(d) % 2 == 0) {
            struct sim_dname *e = name_find(pick, d->dur[i].name);
            if (e != NULL)
                e->ino = -1; /* the unlink reached the disk */
        }
    }
    /* 2. the contents of every surviving inode */
    uint8_t *img[SIM_DISK_FILES] = {0};
    size_t img_len[SIM_DISK_FILES] = {0};
    int done[SIM_DISK_FILES] = {0};
    char path[2400];
    for (int i = 0; i < SIM_DISK_FILES; i++) {
        int ino = pick[i].ino;
        if (ino < 0 || done[ino])
            continue;
        done[ino] = 1;
        /* the page cache copy: any live name of the inode */
        uint8_t *vol = NULL;
        size_t vol_len = 0;
        for (int k = 0; k < SIM_DISK_FILES; k++)
            if (d->vol[k].ino == ino) {
                snprintf(path, sizeof(path), "%s/%s", d->dir, d->vol[k].name);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd >= 0) {
                    (void)slurp_fd(fd, &vol, &vol_len);
                    close(fd);
                }
                break;
            }
        survive(d, pick[i].name, &d->ino[ino], vol, vol_len, &img[ino],
                &img_len[ino]);
        free(vol);
    }
    /* 3. rewrite the directory */
    for (int i = 0; i < SIM_DISK_FILES; i++)
        if (d->vol[i].ino >= 0) {
            snprintf(path, sizeof(path), "%s/%s", d->dir, d->vol[i].name);
            unlink(path);
            d->vol[i].ino = -1;
        }
    int rc = 0;
    for (int i = 0; i < SIM_DISK_FILES; i++) {
        int ino = pick[i].ino;
        if (ino < 0)
            continue;
        snprintf(path, sizeof(path), "%s/%.63s", d->dir, pick[i].name);
        if (rc == 0)
            rc = write_file(path, img[ino], img_len[ino]);
    }
    for (int i = 0; i < SIM_DISK_FILES; i++)
        if (d->ino[i].used)
            ino_free(&d->ino[i]);
    for (int i = 0; i < SIM_DISK_FILES; i++)
        d->dur[i].ino = -1;
    /* 4. every surviving file is a fresh, fully durable inode */
    int newino[SIM_DISK_FILES];
    for (int i = 0; i < SIM_DISK_FILES; i++)
        newino[i] = -1;
    for (int i = 0; i < SIM_DISK_FILES; i++) {
        int ino = pick[i].ino;
        if (ino < 0)
            continue;
        if (newino[ino] < 0) {
            for (int k = 0; k < SIM_DISK_FILES; k++)
                if (!d->ino[k].used) {
                    newino[ino] = k;
                    break;
                }
            struct sim_inode *n = &d->ino[newino[ino]];
            memset(n, 0, sizeof(*n));
            n->used = 1;
            n->dur = img[ino];
            n->dur_len = img_len[ino];
            img[ino] = NULL;
        }
        name_set(d->vol, pick[i].name, newino[ino]);
        name_set(d->dur, pick[i].name, newino[ino]);
    }
    for (int i = 0; i < SIM_DISK_FILES; i++)
        free(img[i]);
    d->crashed = 0;
    d->crash_at = 0;
    d->nlose = 0;
    return rc;
}

void
sim_disk_arm_crash(struct sim_disk *d, uint64_t nth)
{
    d->crash_at = nth ? d->mutating_calls + nth : 0;
}

/* A fault hit [off, end) of `name`: the torn writes there no longer
 * explain its bytes alone. */
static void
torn_touch(struct sim_disk *d, const char *name, uint64_t off, uint64_t end)
{
    for (unsigned k = 0; k < d->ntorn; k++)
        if (strcmp(d->tornlog[k].name, name) == 0 && off < d->tornlog[k].end &&
            end > d->tornlog[k].off)
            d->tornlog[k].touched = 1;
}

static struct sim_inode *
durable_file(struct sim_disk *d, const char *name)
{
    struct sim_dname *e = name_find(d->dur, name);
    if (e == NULL || !d->ino[e->ino].used)
        return NULL;
    return &d->ino[e->ino];
}

int
sim_disk_flip(struct sim_disk *d, const char *name, uint64_t off, uint8_t mask)
{
    struct sim_inode *n = durable_file(d, name);
    if (n == NULL || n->dur_len == 0 || mask == 0)
        return 0;
    off %= n->dur_len;
    n->dur[off] ^= mask;
    torn_touch(d, name, off, off + 1);
    char path[2400];
    snprintf(path, sizeof(path), "%s/%s", d->dir, name);
    int rc = write_file(path, n->dur, n->dur_len);
    return rc < 0 ? rc : 1;
}

int
sim_disk_latent(struct sim_disk *d, const char *name, uint64_t off)
{
    struct sim_inode *n = durable_file(d, name);
    if (n == NULL || n->dur_len == 0 || n->nbad >= SIM_DISK_BAD)
        return 0;
    uint64_t sector = (off % n->dur_len) / 512;
    torn_touch(d, name, sector * 512, sector * 512 + 512);
    for (unsigned k = 0; k < n->nbad; k++)
        if (n->bad[k] == sector)
            return 1;
    n->bad[n->nbad++] = sector;
    return 1;
}

int
sim_disk_remap(struct sim_disk *d, const char *name, uint64_t off)
{
    struct sim_inode *n = durable_file(d, name);
    if (n == NULL || n->dur_len == 0)
        return 0;
    uint64_t sector = (off % n->dur_len) / 512;
    for (unsigned k = 0; k < n->nbad; k++)
        if (n->bad[k] == sector) {
            n->bad[k] = n->bad[--n->nbad];
            return 1;
        }
    return 0;
}

long
sim_disk_size(struct sim_disk *d, const char *name)
{
    struct sim_inode *n = durable_file(d, name);
    return n ? (long)n->dur_len : -1;
}

uint8_t *
sim_disk_read(struct sim_disk *d, const char *name, size_t *len)
{
    struct sim_inode *n = durable_file(d, name);
    if (n == NULL)
        return NULL;
    uint8_t *b = vs_xmalloc(n->dur_len ? n->dur_len : 1);
    if (n->dur_len)
        memcpy(b, n->dur, n->dur_len);
    *len = n->dur_len;
    return b;
}

int
sim_disk_wipe(struct sim_disk *d)
{
    char path[2400];
    for (int i = 0; i < SIM_DISK_FILES; i++) {
        if (d->vol[i].ino >= 0) {
            snprintf(path, sizeof(path), "%s/%s", d->dir, d->vol[i].name);
            unlink(path);
        }
        d->vol[i].ino = d->dur[i].ino = -1;
    }
    ino_gc(d);
    sim_disk_torn_forget(d);
    d->nlose = 0;
    return 0;
}

int
sim_disk_torn_unsynced(const struct sim_disk *d, const char *name, uint64_t off,
                       uint64_t end)
{
    if (d->tornlog_full || end <= off)
        return 0;
    int torn = 0;
    for (unsigned k = 0; k < d->ntorn; k++) {
        const struct sim_torn *t = &d->tornlog[k];
        if (strcmp(t->name, name) != 0 || off >= t->end || end <= t->off)
            continue;
        if (t->touched || t->durable_len > off)
            return 0; /* damaged since, or bytes of it were fsynced */
        torn = 1;
    }
    return torn;
}

void
sim_disk_torn_forget(struct sim_disk *d)
{
    d->ntorn = 0;
    d->tornlog_full = 0;
}

int
sim_disk_lose_whole(struct sim_disk *d, const char *name, uint64_t off,
                    uint64_t end)
{
    if (d->nlose == SIM_DISK_LOSE)
        return -ENOSPC;
    struct sim_torn *t = &d->lose[d->nlose++];
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%.63s", name);
    t->off = off;
    t->end = end;
    return 0;
}
