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
#include "shard/storage/atomic_file.h"
#include "shard/storage/datadir.h"
#include "shard/storage/io.h"

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
    /* The children inherit the lock fd across fork (no exec), so the lock
     * lives until the last process of the node is gone. */
    int fd = -1;
    int rc = datadir_open_locked(dir, &fd, err, errlen);
    return rc != 0 ? rc : fd;
}

/* Writes "K\n" to dir/shards through the storage layer's atomic
 * replacement (tmp, fsync, rename, fsync dir). */
static int
dd_record_shards(const char *dir, uint32_t k, char *err, size_t errlen)
{
    struct vs_sio io;
    sio_init_real(&io);
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%u\n", k);
    int rc = afile_replace(&io, dir, VS_DATADIR_SHARDS_FILE, buf, (size_t)n);
    if (rc != 0) {
        char why[512];
        if (sio_is_fatal(&io))
            sio_fatal_msg(&io, why, sizeof(why));
        else
            snprintf(why, sizeof(why), "%s", strerror(-rc));
        snprintf(err, errlen, "cannot record the shard count in %s/%s: %s", dir,
                 VS_DATADIR_SHARDS_FILE, why);
    }
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
