/*
 * shard/data/offsets.c - consumer and group offsets of a partition.
 *
 * Files (partition.h): offsets/consumers/<key> and
 * offsets/groups/<group id>.<created_op>, written by atomic replace. A
 * record is 16 bytes: offset u64 LE | XXH3-64(those 8 bytes) u64 LE
 * (iggy-server-ng §8). A file holds one record (16 bytes, as earlier
 * releases wrote) or two (32 bytes, written now): the current value, then
 * the previous durable one to fall back on if the current record is
 * damaged. A file with no valid record reads as -EBADMSG: never as "no
 * offset" (the caller reports the partition's offsets damaged).
 *
 * Invariants: auto-commit never lowers a stored offset; an explicit store
 * may (iggy-client-protocol-2 §5). Callers: the owning data shard.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "shard/data/partition.h"
#include "shard/storage/atomic_file.h"

#define OFFSETS_PATH_MAX 1024

uint32_t
part_consumer_name_key(const void *name, size_t len)
{
    return vs_xxh32(name, len);
}

/* dir = <partition>/offsets/{consumers,groups}; name = the file. */
static int
offset_where(struct vs_part *p, const struct part_consumer *c, char *dir,
             size_t dcap, char *name, size_t ncap)
{
    int n;
    const char *sub =
        c->kind == PART_GROUP ? "offsets/groups" : "offsets/consumers";
    if (c->kind != PART_GROUP && c->kind != PART_CONSUMER)
        return -EINVAL;
    if (afile_join(dir, dcap, part_dir(p), sub) < 0)
        return -ENAMETOOLONG;
    if (c->kind == PART_GROUP)
        n = snprintf(name, ncap, "%" PRIu32 ".%" PRIu64, c->id,
                     c->group_created_op);
    else
        n = snprintf(name, ncap, "%" PRIu32, c->id);
    if (n < 0 || (size_t)n >= ncap)
        return -ENAMETOOLONG;
    return 0;
}

/* 0 (current record), 1 (the current record is damaged: the previous
 * durable value), -ENOENT, -EBADMSG (no valid record), -errno. */
static int
offset_read(struct vs_part *p, const struct part_consumer *c, uint64_t *offset)
{
    char dir[OFFSETS_PATH_MAX], name[64], path[OFFSETS_PATH_MAX];
    int rc = offset_where(p, c, dir, sizeof(dir), name, sizeof(name));
    if (rc < 0)
        return rc;
    if (afile_join(path, sizeof(path), dir, name) < 0)
        return -ENAMETOOLONG;
    uint8_t *buf = NULL;
    size_t len = 0;
    rc = afile_read_all(part_io(p), path, 64, &buf, &len);
    if (rc == -EFBIG)
        return -EBADMSG;
    if (rc < 0)
        return rc;
    rc = -EBADMSG;
    if (len == 16 || len == 32) {
        for (size_t at = 0; at < len; at += 16) {
            if (vs_load_u64(buf + at + 8) == vs_xxh3_64(buf + at, 8)) {
                *offset = vs_load_u64(buf + at);
                rc = at == 0 ? 0 : 1; /* 1: the fallback record */
                break;
            }
        }
    }
    free(buf);
    return rc;
}

int
part_offset_get(struct vs_part *p, const struct part_consumer *c,
                uint64_t *offset)
{
    int rc = offset_read(p, c, offset);
    return rc == 1 ? 0 : rc;
}

static int
offset_put(struct vs_part *p, const struct part_consumer *c, uint64_t offset)
{
    char dir[OFFSETS_PATH_MAX], name[64];
    int rc = offset_where(p, c, dir, sizeof(dir), name, sizeof(name));
    if (rc < 0)
        return rc;
    uint64_t prev = offset;
    int got = offset_read(p, c, &prev);
    if (got < 0 && got != -ENOENT && got != -EBADMSG)
        return got;
    if (got < 0)
        prev = offset;
    uint8_t b[32];
    vs_store_u64(b, offset);
    vs_store_u64(b + 8, vs_xxh3_64(b, 8));
    vs_store_u64(b + 16, prev);
    vs_store_u64(b + 24, vs_xxh3_64(b + 16, 8));
    return afile_replace(part_io(p), dir, name, b, sizeof(b));
}

int
part_offset_store(struct vs_part *p, const struct part_consumer *c,
                  uint64_t offset)
{
    struct part_stats st;
    part_stats(p, &st);
    if (st.empty || offset > st.current_offset)
        return -ERANGE;
    return offset_put(p, c, offset);
}

int
part_offset_commit(struct vs_part *p, const struct part_consumer *c,
                   uint64_t offset, uint64_t *stored)
{
    uint64_t cur = 0;
    int rc = part_offset_get(p, c, &cur);
    if (rc == 0 && cur >= offset) {
        if (stored)
            *stored = cur;
        return 0;
    }
    /* a damaged file is never taken for "no offset" by an auto-commit
     * (it could lower the offset); an explicit store repairs it */
    if (rc < 0 && rc != -ENOENT)
        return rc;
    rc = offset_put(p, c, offset);
    if (rc == 0 && stored)
        *stored = offset;
    return rc;
}

int
part_offset_delete(struct vs_part *p, const struct part_consumer *c)
{
    char dir[OFFSETS_PATH_MAX], name[64], path[OFFSETS_PATH_MAX];
    int rc = offset_where(p, c, dir, sizeof(dir), name, sizeof(name));
    if (rc < 0)
        return rc;
    if (afile_join(path, sizeof(path), dir, name) < 0)
        return -ENAMETOOLONG;
    rc = sio_unlink(part_io(p), path);
    if (rc < 0)
        return rc;
    rc = sio_dir_fsync(part_io(p), dir);
    return rc;
}

static int
clear_dir(struct vs_sio *io, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    int rc = 0, any = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[OFFSETS_PATH_MAX];
        rc = afile_join(path, sizeof(path), dir, de->d_name);
        if (rc == 0) {
            rc = sio_unlink(io, path);
            if (rc == -ENOENT)
                rc = 0;
        }
        any = 1;
    }
    closedir(d);
    if (rc == 0 && any)
        rc = sio_dir_fsync(io, dir);
    return rc;
}

int
part_offsets_clear(struct vs_part *p)
{
    char dir[OFFSETS_PATH_MAX];
    int rc = afile_join(dir, sizeof(dir), part_dir(p), "offsets/consumers");
    if (rc == 0)
        rc = clear_dir(part_io(p), dir);
    if (rc == 0)
        rc = afile_join(dir, sizeof(dir), part_dir(p), "offsets/groups");
    if (rc == 0)
        rc = clear_dir(part_io(p), dir);
    return rc;
}
