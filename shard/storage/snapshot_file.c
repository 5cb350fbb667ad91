/*
 * shard/storage/snapshot_file.c - snapshot.bin with its "ISNP" trailer.
 *
 * Invariants: nothing in the payload is looked at before the trailer
 * verified (verify before decode); only the 12-byte prefix is read here,
 * never the msgpack body. Callers: see snapshot_file.h.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/mem.h"
#include "shard/storage/atomic_file.h"
#include "shard/storage/snapshot_file.h"

int
snapfile_format_known(uint32_t v)
{
    return v >= SNAPFILE_FORMAT_MIN && v <= SNAPFILE_FORMAT_KNOWN;
}

static void
trailer_encode(uint8_t out[SNAPFILE_TRAILER_SIZE], struct vs_u128 cs)
{
    memcpy(out, SNAPFILE_MAGIC, 4);
    for (int i = 0; i < 8; i++) {
        out[4 + i] = (uint8_t)(cs.lo >> (8 * i));
        out[12 + i] = (uint8_t)(cs.hi >> (8 * i));
    }
}

int
snapfile_split_trailer(const void *file, size_t len, const uint8_t **payload,
                       size_t *payload_len, struct vs_u128 *checksum)
{
    const uint8_t *f = file;
    if (len < SNAPFILE_TRAILER_SIZE)
        return -ENODATA;
    const uint8_t *t = f + len - SNAPFILE_TRAILER_SIZE;
    if (memcmp(t, SNAPFILE_MAGIC, 4) != 0)
        return -ENODATA;
    struct vs_u128 want = {0, 0};
    for (int i = 7; i >= 0; i--) {
        want.lo = (want.lo << 8) | t[4 + i];
        want.hi = (want.hi << 8) | t[12 + i];
    }
    size_t plen = len - SNAPFILE_TRAILER_SIZE;
    struct vs_u128 got = vs_checksum(f, plen);
    if (!vs_u128_eq(got, want))
        return -EBADMSG;
    *payload = f;
    *payload_len = plen;
    if (checksum)
        *checksum = got;
    return 0;
}

int
snapfile_write(struct vs_sio *io, const char *dir, const void *payload,
               size_t len, struct vs_u128 *checksum)
{
    struct vs_snapshot_prefix p;
    if (vs_snapshot_prefix_read(payload, len, &p) < 0)
        return -EINVAL;
    struct vs_u128 cs = vs_checksum(payload, len);
    uint8_t trailer[SNAPFILE_TRAILER_SIZE];
    trailer_encode(trailer, cs);
    struct afile_tx tx;
    int rc = afile_begin(&tx, io, dir, VS_SNAPSHOT_FILE);
    if (rc < 0)
        return rc;
    rc = afile_write(&tx, payload, len);
    if (rc == 0)
        rc = afile_write(&tx, trailer, sizeof(trailer));
    if (rc < 0)
        goto fail;
    rc = afile_commit(&tx);
    if (rc < 0)
        return rc;
    if (checksum)
        *checksum = cs;
    return 0;
fail:
    afile_abort(&tx);
    return rc;
}

static void snap_reason(struct snapfile *s, enum snapfile_status st,
                        const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
snap_reason(struct snapfile *s, enum snapfile_status st, const char *fmt, ...)
{
    s->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof(s->reason), fmt, ap);
    va_end(ap);
}

int
snapfile_read(struct vs_sio *io, const char *dir, struct snapfile *out)
{
    memset(out, 0, sizeof(*out));
    char path[AFILE_PATH_MAX];
    int rc = afile_join(path, sizeof(path), dir, VS_SNAPSHOT_FILE);
    if (rc == 0)
        rc = afile_read_all(io, path, SNAPFILE_MAX, &out->file, &out->file_len);
    if (rc == -ENOENT) {
        snap_reason(out, SNAPFILE_ABSENT, "snapshot.bin absent");
        return 0;
    }
    if (rc == -EFBIG) {
        snap_reason(out, SNAPFILE_TOO_BIG,
                    "snapshot.bin is larger than %llu bytes",
                    (unsigned long long)SNAPFILE_MAX);
        return 0;
    }
    if (rc < 0) {
        out->err = rc;
        snap_reason(out, SNAPFILE_IO, "cannot read snapshot.bin: %s",
                    sio_strerror(rc));
        return rc;
    }
    rc = snapfile_split_trailer(out->file, out->file_len, &out->payload,
                                &out->payload_len, &out->checksum);
    if (rc == -ENODATA) {
        snap_reason(out, SNAPFILE_NO_TRAILER,
                    "snapshot.bin (%zu bytes) has no ISNP trailer",
                    out->file_len);
        return 0;
    }
    if (rc < 0) {
        snap_reason(out, SNAPFILE_BAD_CHECKSUM,
                    "snapshot.bin trailer checksum does not match its "
                    "payload (%zu bytes)",
                    out->file_len - SNAPFILE_TRAILER_SIZE);
        return 0;
    }
    if (vs_snapshot_prefix_read(out->payload, out->payload_len, &out->prefix) <
        0) {
        snap_reason(out, SNAPFILE_SHORT_PREFIX,
                    "snapshot payload is %zu bytes, shorter than its "
                    "12-byte prefix",
                    out->payload_len);
        return 0;
    }
    if (!snapfile_format_known(out->prefix.format_version)) {
        snap_reason(out, SNAPFILE_UNKNOWN_FORMAT,
                    "snapshot payload format version %u (op %llu) is "
                    "unknown to this release (knows %u..%u)",
                    out->prefix.format_version,
                    (unsigned long long)out->prefix.op, SNAPFILE_FORMAT_MIN,
                    SNAPFILE_FORMAT_KNOWN);
        return 0;
    }
    snap_reason(out, SNAPFILE_OK, "snapshot at op %llu, %zu payload bytes",
                (unsigned long long)out->prefix.op, out->payload_len);
    return 0;
}

void
snapfile_fini(struct snapfile *s)
{
    free(s->file);
    s->file = NULL;
    s->payload = NULL;
    s->file_len = s->payload_len = 0;
}

uint8_t *
snapfile_take_payload(struct snapfile *s, size_t *len)
{
    /* the payload starts at offset 0 of the file buffer */
    uint8_t *p = s->file;
    *len = s->payload_len;
    s->file = NULL;
    s->payload = NULL;
    s->file_len = s->payload_len = 0;
    return p;
}

const char *
snapfile_status_name(enum snapfile_status st)
{
    switch (st) {
    case SNAPFILE_OK:
        return "ok";
    case SNAPFILE_ABSENT:
        return "absent";
    case SNAPFILE_NO_TRAILER:
        return "no-trailer";
    case SNAPFILE_BAD_CHECKSUM:
        return "bad-checksum";
    case SNAPFILE_SHORT_PREFIX:
        return "short-prefix";
    case SNAPFILE_UNKNOWN_FORMAT:
        return "unknown-format";
    case SNAPFILE_TOO_BIG:
        return "too-big";
    case SNAPFILE_IO:
        return "io-error";
    }
    return "unknown";
}
