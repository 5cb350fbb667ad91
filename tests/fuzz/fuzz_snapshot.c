/*
 * tests/fuzz/fuzz_snapshot.c - libFuzzer target: the metadata snapshot
 * (shard/meta/snapshot_codec.c: meta_snapshot_decode) and the snapshot
 * file around it (shard/storage/snapshot_file.c: snapfile_read).
 *
 * Input: [ctl u8][bytes]. ctl bit 0 clear: bytes are a snapshot payload
 * ([format u32][op u64] + msgpack body); set: bytes are a whole
 * snapshot.bin (payload + ISNP trailer), read through snapfile_read, and
 * bit 1 reseals the trailer over the payload first. The instance has the
 * small test capacities (tests/unit/meta_helpers.h). Invariants checked:
 *  - decode returns a known status with a name; a failed decode leaves a
 *    valid, empty instance (it still encodes, and that re-decodes);
 *  - an accepted payload re-encodes (meta_snapshot_encode) to bytes that
 *    decode to the identical instance and re-encode to themselves; when
 *    the input spells every msgpack value in its shortest form (as the
 *    encoder does) the re-encoding is exactly the input: equal states,
 *    equal bytes. (msgpack has longer spellings of the same value; the
 *    decoder accepts them, so such an input re-encodes shorter.)
 *  - snapfile_read is OK exactly when the trailer verifies, and then the
 *    payload is the file minus the trailer.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/layout.h"
#include "shard/meta/client_table.h"
#include "shard/meta/snapshot_codec.h"
#include "shard/storage/io.h"
#include "shard/storage/snapshot_file.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/unit/meta_helpers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t
be(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* 1 if the msgpack body after the 12-byte prefix uses the shortest form
 * of every value, as msgpack-c's packer writes it (a flat token scan:
 * containers are just counts followed by their elements). 0 for a
 * longer spelling, or anything the scan does not know. */
static int
minimal_msgpack(const uint8_t *p, size_t len)
{
    if (len < VS_SNAPSHOT_PREFIX_SIZE)
        return 0;
    size_t i = VS_SNAPSHOT_PREFIX_SIZE;
    while (i < len) {
        uint8_t t = p[i++];
        if (t <= 0x7f || t >= 0xe0 || (t >= 0x80 && t <= 0x9f) || t == 0xc0 ||
            t == 0xc2 || t == 0xc3)
            continue;
        if (t >= 0xa0 && t <= 0xbf) {
            size_t n = t & 0x1f;
            if (len - i < n)
                return 0;
            i += n;
            continue;
        }
        unsigned w;     /* width of the length or value */
        uint64_t least; /* smallest value that needs this width */
        int skip;       /* a string or binary of that length follows */
        switch (t) {
        case 0xcc:
            w = 1, least = 128, skip = 0;
            break;
        case 0xcd:
            w = 2, least = 256, skip = 0;
            break;
        case 0xce:
            w = 4, least = 65536, skip = 0;
            break;
        case 0xcf:
            w = 8, least = UINT64_C(1) << 32, skip = 0;
            break;
        case 0xd9:
            w = 1, least = 32, skip = 1;
            break;
        case 0xda:
            w = 2, least = 256, skip = 1;
            break;
        case 0xdb:
            w = 4, least = 65536, skip = 1;
            break;
        case 0xc4:
            w = 1, least = 0, skip = 1;
            break;
        case 0xc5:
            w = 2, least = 256, skip = 1;
            break;
        case 0xc6:
            w = 4, least = 65536, skip = 1;
            break;
        case 0xdc:
            w = 2, least = 16, skip = 0;
            break;
        case 0xdd:
            w = 4, least = 65536, skip = 0;
            break;
        case 0xde:
            w = 2, least = 16, skip = 0;
            break;
        case 0xdf:
            w = 4, least = 65536, skip = 0;
            break;
        default:
            return 0; /* signed ints, floats, ext: not written */
        }
        if (len - i < w)
            return 0;
        uint64_t v = be(p + i, w);
        i += w;
        if (v < least)
            return 0;
        if (skip) {
            if (len - i < v)
                return 0;
            i += (size_t)v;
        }
    }
    return 1;
}

static void
check_payload(const uint8_t *p, size_t len)
{
    static void *st, *st2;
    static struct meta_caps caps;
    static struct meta_client_table ct, ct2;
    if (st == NULL) {
        th_caps(&caps);
        st = th_state(&caps);
        st2 = th_state(&caps);
        meta_ct_init(&ct);
        meta_ct_init(&ct2);
        /* every access checks slot < ct.slots and a restorable slot is
         * below the instance's session capacity: iterating 32 slots
         * instead of 65536 per decode keeps runs fast */
        ct.slots = ct2.slots = caps.session_slots;
    }
    enum meta_snap_status s = meta_snapshot_decode(p, len, st, &ct);
    fuzz_check(s <= META_SNAP_BAD_STATE, "a known status");
    fuzz_check(strcmp(meta_snap_status_str(s), "unknown snapshot status") != 0,
               "a status with a name");
    struct vs_wbuf e;
    vs_wbuf_init(&e);
    fuzz_check(meta_snapshot_encode(st, &ct, &e) == 0, "encode succeeds");
    if (s == META_SNAP_OK) {
        /* msgpack has several spellings of one value (an int as fixint
         * or uint16...) and the decoder takes any of them, so an accepted
         * input need not be the canonical bytes; its re-encoding is, and
         * must decode to the identical instance and encode to itself */
        fuzz_check(meta_snapshot_decode(e.data, e.len, st2, &ct2) ==
                       META_SNAP_OK,
                   "the re-encoding of an accepted snapshot decodes");
        fuzz_check(memcmp(st, st2, meta_state_size(&caps)) == 0,
                   "the re-encoding decodes to the same instance");
        struct vs_wbuf e2;
        vs_wbuf_init(&e2);
        meta_snapshot_encode(st2, &ct2, &e2);
        fuzz_check(e2.len == e.len && memcmp(e2.data, e.data, e.len) == 0,
                   "the canonical encoding re-encodes to its bytes");
        /* an older format re-encodes as the newest (replica sets added) */
        if (minimal_msgpack(p, len) && vs_load_u32(p) == META_SNAPSHOT_FORMAT)
            fuzz_check(e.len == len && memcmp(e.data, p, len) == 0,
                       "a canonical accepted snapshot re-encodes to its bytes");
        vs_wbuf_fini(&e2);
    } else {
        fuzz_check(meta_snapshot_decode(e.data, e.len, st2, &ct2) ==
                       META_SNAP_OK,
                   "the instance left by a failed decode is valid");
    }
    vs_wbuf_fini(&e);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct sio_fault f;
    static int init;
    if (!init) {
        sio_fault_init(&f, 1);
        init = 1;
    }
    if (size < 1)
        return 0;
    uint8_t ctl = data[0];
    const uint8_t *b = data + 1;
    size_t len = size - 1;
    if (!(ctl & 1)) {
        check_payload(b, len);
        return 0;
    }
    uint8_t *file = malloc(len + 1);
    fuzz_check(file != NULL, "malloc");
    memcpy(file, b, len);
    if ((ctl & 2) && len >= SNAPFILE_TRAILER_SIZE) {
        uint8_t *t = file + len - SNAPFILE_TRAILER_SIZE;
        memcpy(t, SNAPFILE_MAGIC, 4);
        struct vs_u128 c = vs_checksum(file, len - SNAPFILE_TRAILER_SIZE);
        vs_store_u64(t + 4, c.lo);
        vs_store_u64(t + 12, c.hi);
    }
    const char *dir = fuzz_dir();
    fuzz_write_file(dir, VS_SNAPSHOT_FILE, file, len);
    struct snapfile sf;
    int rc = snapfile_read(&f.io, dir, &sf);
    fuzz_check(rc == 0 && sf.status != SNAPFILE_IO, "reading succeeds");
    const uint8_t *pl;
    size_t plen;
    struct vs_u128 ck;
    int split = snapfile_split_trailer(file, len, &pl, &plen, &ck);
    if (sf.status == SNAPFILE_OK || sf.status == SNAPFILE_UNKNOWN_FORMAT) {
        fuzz_check(split == 0 && sf.payload_len == plen &&
                       plen == len - SNAPFILE_TRAILER_SIZE &&
                       memcmp(sf.payload, file, plen) == 0 &&
                       vs_u128_eq(sf.checksum, ck),
                   "the payload is the verified file minus its trailer");
        fuzz_check((sf.status == SNAPFILE_OK) ==
                       snapfile_format_known(sf.prefix.format_version),
                   "OK exactly for a known format");
        if (sf.status == SNAPFILE_OK)
            check_payload(sf.payload, sf.payload_len);
    } else {
        fuzz_check(sf.reason[0] != '\0', "a refusal says why");
        fuzz_check(split != 0 || sf.status == SNAPFILE_SHORT_PREFIX,
                   "a refused file has a bad trailer or a short prefix");
    }
    snapfile_fini(&sf);
    free(file);
    fuzz_clear_dir(dir);
    return 0;
}
