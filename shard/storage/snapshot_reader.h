/*
 * shard/storage/snapshot_reader.h - reads snapshot.bin's payload in
 * bounded pieces for state transfer, verifying it as it goes.
 *
 * Role: a serving primary ships the snapshot PAYLOAD (the file without its
 * 20-byte integrity trailer, snapshot_file.h) one chunk at a time, so it
 * never reads a whole snapshot on its event loop. Open reads only the
 * trailer and the 12-byte prefix (op, format). Pieces read in order feed
 * a streaming XXH3; when the last payload byte has been read the sum is
 * compared with the trailer and the checksum the caller expects (the
 * superblock's checkpoint pairing): a mismatch is -EBADMSG with one line
 * in `reason`, and the reader stays failed, so a corrupt file at rest is
 * reported and never offered again. A piece read out of order is served
 * (a retry) but not hashed twice.
 *
 * Invariants: never reads past the payload (the trailer is never
 * served); pieces are at most the caller's buffer. Reads go through the
 * injectable I/O layer. Callers: shard 0 (one thread), tests.
 */
#ifndef VS_SHARD_STORAGE_SNAPSHOT_READER_H
#define VS_SHARD_STORAGE_SNAPSHOT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "common/checksum.h"
#include "common/layout.h"
#include "common/wire.h"
#include "shard/storage/io.h"

struct snapfile_reader {
    struct vs_sio *io;
    int fd;
    uint64_t payload_len;
    struct vs_u128 trailer;  /* checksum the trailer records */
    struct vs_u128 expected; /* checksum the caller expects */
    struct vs_snapshot_prefix prefix;
    struct vs_xxh3_stream hash;
    uint64_t hashed; /* payload bytes hashed, in order, so far */
    int verified;    /* 1 once every byte hashed and matched */
    int failed;      /* 1 after a mismatch or a read error */
    char reason[1280];
};

/* Opens DIR/snapshot.bin. Checks the trailer's magic, that the trailer's
 * checksum equals `expected`, and reads the prefix. 0, or -ENOENT,
 * -ENODATA (no trailer), -EBADMSG (trailer disagrees with `expected`),
 * -EPROTO (short prefix), -errno; reason holds one line either way. */
int snapfile_reader_open(struct snapfile_reader *r, struct vs_sio *io,
                         const char *dir, struct vs_u128 expected);
/* Reads up to `len` payload bytes at `off` into buf. Returns the bytes
 * read (0 at or past the end), -EBADMSG once the whole payload has been
 * hashed and does not match, -EIO after an earlier failure, -errno. */
long snapfile_reader_read(struct snapfile_reader *r, uint64_t off, void *buf,
                          size_t len);
void snapfile_reader_close(struct snapfile_reader *r);

#endif /* VS_SHARD_STORAGE_SNAPSHOT_READER_H */
