/*
 * shard/storage/snapshot_reader.c - bounded, verifying reads of
 * snapshot.bin's payload; see snapshot_reader.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/layout.h"
#include "shard/storage/snapshot_file.h"
#include "shard/storage/snapshot_reader.h"

static struct vs_u128
u128_le(const uint8_t *p)
{
    struct vs_u128 v = {0, 0};
    for (int i = 7; i >= 0; i--) {
        v.lo = (v.lo << 8) | p[i];
        v.hi = (v.hi << 8) | p[8 + i];
    }
    return v;
}

int
snapfile_reader_open(struct snapfile_reader *r, struct vs_sio *io,
                     const char *dir, struct vs_u128 expected)
{
    char path[1100];
    uint8_t trailer[SNAPFILE_TRAILER_SIZE];
    uint8_t prefix[VS_SNAPSHOT_PREFIX_SIZE];
    struct stat st;
    int rc;

    memset(r, 0, sizeof(*r));
    r->io = io;
    r->fd = -1;
    r->expected = expected;
    snprintf(path, sizeof(path), "%s/%s", dir, VS_SNAPSHOT_FILE);
    rc = sio_open(io, path, O_RDONLY | O_CLOEXEC, 0);
    if (rc < 0) {
        snprintf(r->reason, sizeof(r->reason), "%s: %s", path, strerror(-rc));
        return rc;
    }
    r->fd = rc;
    if (fstat(r->fd, &st) != 0) {
        rc = -errno;
        snprintf(r->reason, sizeof(r->reason), "%s: %s", path, strerror(errno));
        goto fail;
    }
    if ((uint64_t)st.st_size < SNAPFILE_TRAILER_SIZE + sizeof(prefix)) {
        rc = st.st_size < (off_t)SNAPFILE_TRAILER_SIZE ? -ENODATA : -EPROTO;
        snprintf(r->reason, sizeof(r->reason),
                 "%s: %lld bytes, too short for a snapshot", path,
                 (long long)st.st_size);
        goto fail;
    }
    r->payload_len = (uint64_t)st.st_size - SNAPFILE_TRAILER_SIZE;
    rc = sio_pread_all(io, r->fd, trailer, sizeof(trailer),
                       (off_t)r->payload_len, NULL);
    if (rc < 0) {
        snprintf(r->reason, sizeof(r->reason), "%s: trailer: %s", path,
                 strerror(-rc));
        goto fail;
    }
    if (memcmp(trailer, SNAPFILE_MAGIC, 4) != 0) {
        rc = -ENODATA;
        snprintf(r->reason, sizeof(r->reason), "%s has no ISNP trailer", path);
        goto fail;
    }
    r->trailer = u128_le(trailer + 4);
    if (!vs_u128_eq(r->trailer, expected)) {
        rc = -EBADMSG;
        snprintf(r->reason, sizeof(r->reason),
                 "%s: trailer checksum %016llx is not the checkpoint's "
                 "%016llx",
                 path, (unsigned long long)r->trailer.lo,
                 (unsigned long long)expected.lo);
        goto fail;
    }
    rc = sio_pread_all(io, r->fd, prefix, sizeof(prefix), 0, NULL);
    if (rc < 0) {
        snprintf(r->reason, sizeof(r->reason), "%s: prefix: %s", path,
                 strerror(-rc));
        goto fail;
    }
    if (vs_snapshot_prefix_read(prefix, sizeof(prefix), &r->prefix) < 0) {
        rc = -EPROTO;
        snprintf(r->reason, sizeof(r->reason), "%s: unreadable prefix", path);
        goto fail;
    }
    vs_xxh3_stream_init(&r->hash);
    return 0;
fail:
    sio_close(io, r->fd);
    r->fd = -1;
    r->failed = 1;
    return rc;
}

long
snapfile_reader_read(struct snapfile_reader *r, uint64_t off, void *buf,
                     size_t len)
{
    if (r->failed || r->fd < 0)
        return -EIO;
    if (off >= r->payload_len)
        return 0;
    uint64_t left = r->payload_len - off;
    size_t n = left < len ? (size_t)left : len;
    int rc = sio_pread_all(r->io, r->fd, buf, n, (off_t)off, NULL);
    if (rc < 0) {
        r->failed = 1;
        snprintf(r->reason, sizeof(r->reason),
                 "snapshot.bin: read of %zu bytes at %llu: %s", n,
                 (unsigned long long)off, strerror(-rc));
        return rc;
    }
    if (off == r->hashed && !r->verified) {
        vs_xxh3_stream_update(&r->hash, buf, n);
        r->hashed += n;
        if (r->hashed == r->payload_len) {
            struct vs_u128 got = {vs_xxh3_stream_digest(&r->hash), 0};
            if (!vs_u128_eq(got, r->expected)) {
                r->failed = 1;
                snprintf(r->reason, sizeof(r->reason),
                         "snapshot.bin at rest fails its checksum "
                         "(%016llx, checkpoint %016llx): damaged since the "
                         "checkpoint",
                         (unsigned long long)got.lo,
                         (unsigned long long)r->expected.lo);
                return -EBADMSG;
            }
            r->verified = 1;
        }
    }
    return (long)n;
}

void
snapfile_reader_close(struct snapfile_reader *r)
{
    if (r->fd >= 0)
        sio_close(r->io, r->fd);
    r->fd = -1;
}
