/*
 * shard/vsr/xfer_manifest.h - the state-transfer manifest "ISM1"
 * (iggy-server-ng.md §5): what a serving primary offers a lagging replica.
 *
 * Layout (little endian):
 *   "ISM1" | count u32 | entry_len u8 (= 25) |
 *   count x {kind u8, frontier u64, len u64, xxh3 u64} | XXH3-64 u64 of
 *   every preceding byte
 * kind: 0 metadata snapshot (frontier = the snapshot's op; the payload of
 * snapshot.bin without its integrity trailer), 1 client table (frontier =
 * commit_min when encoded; the ICT3 transfer form, ICT2 still decoded), 2
 * segment log and 3 consumer offsets (partition transfer), 4 checkpoint
 * prepare (frontier = the snapshot's op; the 256-byte stored prepare header
 * of that op, so the receiver's superblock pairing records it and a restart
 * right after the install can continue the hash chain).
 *
 * Invariants (enforced by the decoder, which trusts nothing): exact
 * length; magic; entry_len 25; 1 <= count <= XFER_ARTIFACTS_MAX; known
 * kinds, each at most once; every len <= XFER_ARTIFACT_CAP, their sum <=
 * XFER_MANIFEST_CAP; the checksum matches. Encoding is canonical:
 * decode(encode(m)) == m and encode(decode(b)) == b for every accepted b.
 * Pure functions; any process.
 */
#ifndef VS_SHARD_VSR_XFER_MANIFEST_H
#define VS_SHARD_VSR_XFER_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#define XFER_MANIFEST_MAGIC    "ISM1"
#define XFER_ENTRY_LEN         25u
#define XFER_ARTIFACTS_MAX     5u                  /* one of each kind */
#define XFER_ARTIFACT_CAP      (UINT64_C(1) << 30) /* 1 GiB */
#define XFER_MANIFEST_CAP      (UINT64_C(4) << 30) /* 4 GiB */
#define XFER_MANIFEST_SIZE(n)  (4u + 4u + 1u + XFER_ENTRY_LEN * (n) + 8u)
#define XFER_MANIFEST_MAX_SIZE XFER_MANIFEST_SIZE(XFER_ARTIFACTS_MAX)

enum xfer_kind {
    XFER_KIND_METADATA_SNAPSHOT = 0,
    XFER_KIND_CLIENT_TABLE = 1,
    XFER_KIND_SEGMENT_LOG = 2,
    XFER_KIND_CONSUMER_OFFSETS = 3,
    XFER_KIND_CHECKPOINT_PREPARE = 4,
    XFER_KIND_COUNT
};

struct xfer_artifact {
    uint8_t kind;      /* enum xfer_kind */
    uint64_t frontier; /* op the artifact reflects */
    uint64_t len;      /* bytes */
    uint64_t checksum; /* XXH3-64 of the bytes */
};

struct xfer_manifest {
    uint32_t count;
    struct xfer_artifact a[XFER_ARTIFACTS_MAX];
};

/* Why a manifest was refused. */
enum xfer_manifest_error {
    XFER_MANIFEST_OK = 0,
    XFER_MANIFEST_SHORT,     /* shorter than its count implies */
    XFER_MANIFEST_LONG,      /* trailing bytes */
    XFER_MANIFEST_MAGIC_BAD, /* not "ISM1" */
    XFER_MANIFEST_ENTRY_LEN, /* entry_len != 25 */
    XFER_MANIFEST_COUNT,     /* 0 or above XFER_ARTIFACTS_MAX */
    XFER_MANIFEST_KIND,      /* unknown or repeated kind */
    XFER_MANIFEST_CAP_BAD,   /* an artifact or the sum above the caps */
    XFER_MANIFEST_CHECKSUM,  /* checksum mismatch */
};
const char *xfer_manifest_error_name(enum xfer_manifest_error e);

/* Encodes m into out (cap bytes). Returns the size, or -ENOSPC if cap is
 * too small, -EINVAL if m breaks an invariant (it would not decode). */
int xfer_manifest_encode(const struct xfer_manifest *m, uint8_t *out,
                         size_t cap);
/* Decodes exactly len bytes. Returns XFER_MANIFEST_OK and *m, or the
 * first error found (m is then unspecified). */
enum xfer_manifest_error xfer_manifest_decode(const uint8_t *p, size_t len,
                                              struct xfer_manifest *m);
/* The artifact of `kind`, or NULL. */
const struct xfer_artifact *xfer_manifest_find(const struct xfer_manifest *m,
                                               enum xfer_kind kind);

#endif /* VS_SHARD_VSR_XFER_MANIFEST_H */
