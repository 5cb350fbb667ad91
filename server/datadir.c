/*
 * server/datadir.c - data-dir lock and recorded shard count; see
 * datadir.h. Supervisor only, before fork.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/layout.h"
#include "server/datadir.h"

static int
dd_path(char *out, size_t len, const char *dir, const char *name)
{
    if (snprintf(out, len, "%s/%s", dir, name) >= (int)len)
        return -ENAMETOOLONG;
    return 0;
}

int
sup_datadir_lock(const char *dir, char *err, size_t errlen)
{
    char path[4096];
    int rc;
    if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
        rc = -errno;
        snprintf(err, errlen, "cannot create data dir %s: %s", dir,
                 strerror(-rc));
        return rc;
    }
    rc = dd_path(path, sizeof(path), dir, VS_DATADIR_LOCK_FILE);
    if (rc != 0) {
        snprintf(err, errlen, "data dir path too long: %s", dir);
        return rc;
    }
    /* No O_CLOEXEC needed (no exec), and the children inherit the fd on
     * purpose: the lock lives until the last process of the node is
     * gone. */
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    if (fd == -1) {
        rc = -errno;
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(-rc));
        return rc;
    }
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            break;
        if (errno == EINTR)
            continue;
        rc = -errno;
        if (rc == -EWOULDBLOCK) {
            char buf[32] = {0};
            ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
            long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
            snprintf(err, errlen, "data dir %s is locked by vstreamd pid %ld",
                     dir, pid);
        } else {
            snprintf(err, errlen, "cannot lock %s: %s", path, strerror(-rc));
        }
        close(fd);
        return rc;
    }
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
    if (ftruncate(fd, 0) == -1 || pwrite(fd, buf, (size_t)n, 0) != n) {
        rc = errno ? -errno : -EIO;
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(-rc));
        close(fd);
        return rc;
    }
    return fd;
}

/* Writes "K\n" to dir/shards: tmp, fsync, rename, fsync dir. */
static int
dd_record_shards(const char *dir, uint32_t k, char *err, size_t errlen)
{
    char path[4096], tmp[4200];
    int rc = dd_path(path, sizeof(path), dir, VS_DATADIR_SHARDS_FILE);
    if (rc != 0)
        return rc;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int dfd = -1;
    if (fd == -1) {
        rc = -errno;
        goto fail;
    }
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%u\n", k);
    if (write(fd, buf, (size_t)n) != n) {
        rc = errno ? -errno : -EIO;
        goto fail;
    }
    if (fsync(fd) == -1 || close(fd) == -1) {
        fd = -1;
        rc = -errno;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) == -1) {
        rc = -errno;
        goto fail;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd == -1 || fsync(dfd) == -1) {
        rc = -errno;
        goto fail;
    }
    close(dfd);
    return 0;
fail:
    snprintf(err, errlen, "cannot record the shard count in %s: %s", path,
             strerror(-rc));
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    unlink(tmp);
    return rc;
}

int
sup_shards_resolve(const char *dir, uint32_t requested, int explicit_set,
                   uint32_t *k_out, char *err, size_t errlen)
{
    char path[4096];
    int rc = dd_path(path, sizeof(path), dir, VS_DATADIR_SHARDS_FILE);
    if (rc != 0) {
        snprintf(err, errlen, "data dir path too long: %s", dir);
        return rc;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1 && errno != ENOENT) {
        rc = -errno;
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(-rc));
        return rc;
    }
    if (fd >= 0) {
        char buf[32] = {0};
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        char *end = NULL;
        errno = 0;
        unsigned long v = n > 0 ? strtoul(buf, &end, 10) : 0;
        if (n <= 0 || errno != 0 || end == buf || *end != '\n' ||
            end[1] != '\0' || v < 1 || v > 256) {
            snprintf(err, errlen,
                     "%s is damaged (expected a shard count 1..256 and a "
                     "newline)",
                     path);
            return -EINVAL;
        }
        if (explicit_set && requested != 0 && requested != v) {
            snprintf(err, errlen,
                     "--shards %u differs from the %lu shards recorded in "
                     "%s at first boot; re-sharding is not supported",
                     requested, v, path);
            return -EINVAL;
        }
        *k_out = (uint32_t)v;
        return 0;
    }
    uint32_t k = requested;
    if (k == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        k = cpus < 1 ? 1 : (cpus > 256 ? 256 : (uint32_t)cpus);
    }
    rc = dd_record_shards(dir, k, err, errlen);
    if (rc != 0)
        return rc;
    *k_out = k;
    return 0;
}
