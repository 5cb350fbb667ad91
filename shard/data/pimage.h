/*
 * shard/data/pimage.h - the file-set image of a partition state transfer:
 * the bytes of a partition's files, named, in one artifact (the segment
 * log image and the consumer offsets image of shard/serve/pxfer.h).
 *
 * Layout (little endian):
 *   "VSPF" | version u32 (1) | kind u32 | count u32 |
 *   meta[0] u64 | meta[1] u64 | meta[2] u64 |
 *   count x {name_len u16 | name bytes | len u64} |
 *   the files' bytes, in entry order; the image ends right after them.
 * kind PIMG_SEGMENTS: names "<start:020>.log", ".vsr", ".index"; meta =
 *   {purge generation, offset frontier (next offset after the checkpoint
 *   op's batches), checkpoint op}.
 * kind PIMG_OFFSETS: names "offsets_applied", "offsets/consumers/<key>",
 *   "offsets/groups/<group>.<created_op>" (decimal), and "clients" (the
 *   group's saved client table, when the group keeps one: it is saved
 *   before every checkpoint, so it is as of an op at or above the
 *   offered checkpoint and the receiver records no op below its mark
 *   twice); meta = {the applied consumer-offset op, 0, checkpoint op}.
 *
 * Invariants (the decoder trusts nothing): exact length; magic, version,
 * the expected kind; count <= PIMG_FILES_MAX (a segments image holds at
 * least one .log and one .vsr; an offsets image may be empty); names of the
 * kind's patterns, unique, no other characters; every file's bytes inside the
 * image. Pure functions; any process.
 */
#ifndef VS_SHARD_DATA_PIMAGE_H
#define VS_SHARD_DATA_PIMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define PIMG_MAGIC     "VSPF"
#define PIMG_VERSION   1u
#define PIMG_FILES_MAX 100000u
#define PIMG_NAME_MAX  64u
#define PIMG_FIXED     40u /* bytes before the entries */

enum pimg_kind {
    PIMG_SEGMENTS = 1,
    PIMG_OFFSETS = 2,
};

struct pimg_file {
    char name[PIMG_NAME_MAX];
    uint64_t len;
    uint64_t off; /* decode: where its bytes start in the image */
};

struct pimg {
    uint32_t kind;
    uint64_t meta[3];
    uint32_t count;
    struct pimg_file *files; /* heap (pimg_free) */
    uint64_t header_len;     /* bytes before the first file's */
};

/* 1 if `name` is a file name of that kind's image. */
int pimg_name_ok(uint32_t kind, const char *name);
/* Appends the header (everything before the files' bytes) of an image
 * of files[0..n) to w. 0, or -EINVAL (a bad name, count or kind). */
int pimg_header(struct vs_wbuf *w, uint32_t kind, const uint64_t meta[3],
                const struct pimg_file *files, uint32_t n);
/* Decodes an image of exactly len bytes. 0, or -EBADMSG with one line in
 * err (m is then freed). */
int pimg_decode(const uint8_t *p, uint64_t len, uint32_t kind, struct pimg *m,
                char *err, size_t errlen);
void pimg_free(struct pimg *m);

#endif /* VS_SHARD_DATA_PIMAGE_H */
