/*
 * tests/fuzz/fuzz_superblock.c - libFuzzer target: the superblock slot
 * decoder, the read verdict over both slots and the VsrState payload
 * (shard/storage/superblock.c, vsr_state.c).
 *
 * Input: [ctl u8][len_a u16 LE][superblock.a bytes][superblock.b bytes].
 * ctl bit 0/1: slot a/b present (else no file); bit 2/3: reseal slot a/b
 * (recompute its trailing XXH3 over the rest) so mutations reach past
 * the checksum. Invariants checked:
 *  - a VALID slot re-encodes (sb_record_encode) to exactly its file bytes
 *    but for the reserved parent_checksum, which decode does not check;
 *  - a VsrState payload that decodes re-encodes to the same 66 bytes;
 *  - the verdict: EMPTY only with both slots absent; PRESENT names a
 *    VALID slot holding the reported sequence and payload, the other slot
 *    valid at sequence - 1 or absent (superblock.a at sequence 1 only);
 *    UNREADABLE whenever a slot is corrupt or of an unknown version, with
 *    a reason.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "shard/storage/io.h"
#include "shard/storage/superblock.h"
#include "shard/storage/vsr_state.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
reseal(uint8_t *b, size_t len)
{
    if (len < SB_TRAILER_SIZE)
        return;
    uint64_t x = vs_xxh3_64(b, len - SB_TRAILER_SIZE);
    for (int i = 0; i < 8; i++)
        b[len - SB_TRAILER_SIZE + (size_t)i] = (uint8_t)(x >> (8 * i));
}

static void
check_slot(const struct sb_slot *s, const uint8_t *file, size_t len)
{
    if (s->state != SB_SLOT_VALID) {
        fuzz_check(s->reason[0] != '\0', "a slot that is not valid says why");
        return;
    }
    static uint8_t enc[SB_RECORD_MAX];
    size_t n = sb_record_encode(s->version, s->sequence, s->payload,
                                s->payload_len, enc);
    /* parent_checksum (@16) is reserved: the encoder writes 0 and the
     * decoder does not read it, so it is the one field a re-encode may
     * not reproduce; carry it over, then reseal */
    fuzz_check(n == len, "a valid slot re-encodes to its length");
    memcpy(enc + 16, file + 16, 8);
    reseal(enc, n);
    fuzz_check(memcmp(enc, file, len) == 0,
               "a valid slot re-encodes to its bytes");
    struct vs_vsr_state st;
    char reason[256] = "";
    enum vsr_state_error e = vsr_state_decode(
        s->version, s->payload, s->payload_len, &st, reason, sizeof(reason));
    if (e == VSR_STATE_OK) {
        /* the encoder writes the newest version: older records (still
         * read) are canonical only in their own version */
        if (s->version == VSR_STATE_VERSION) {
            uint8_t p[VSR_STATE_SIZE];
            vsr_state_encode(&st, p);
            fuzz_check(s->payload_len == VSR_STATE_SIZE &&
                           memcmp(p, s->payload, VSR_STATE_SIZE) == 0,
                       "a decoded VsrState re-encodes to its bytes");
        }
        fuzz_check(st.log_view <= st.view, "log_view <= view");
        fuzz_check(st.replica_id < st.replica_count, "replica in range");
    } else {
        fuzz_check(reason[0] != '\0', "a VsrState refusal says why");
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct sb_read r;
    static struct sio_fault f;
    static int init;
    if (!init) {
        sio_fault_init(&f, 1);
        init = 1;
    }
    struct fuzz_in in = {data, size};
    uint8_t ctl = fuzz_take_u8(&in);
    size_t len_a = fuzz_take_u8(&in);
    len_a |= (size_t)fuzz_take_u8(&in) << 8;
    size_t la, lb;
    const uint8_t *pa = fuzz_take(&in, len_a, &la);
    const uint8_t *pb = fuzz_take(&in, in.len, &lb);
    uint8_t *a = malloc(la + 1), *b = malloc(lb + 1);
    fuzz_check(a && b, "malloc");
    memcpy(a, pa, la);
    memcpy(b, pb, lb);
    if (ctl & 4)
        reseal(a, la);
    if (ctl & 8)
        reseal(b, lb);

    const char *dir = fuzz_dir();
    if (ctl & 1)
        fuzz_write_file(dir, "superblock.a", a, la);
    if (ctl & 2)
        fuzz_write_file(dir, "superblock.b", b, lb);

    int rc = sb_read_latest(&f.io, dir, &r);
    fuzz_check(rc == 0, "reading two regular slot files succeeds");
    const uint8_t *file[2] = {a, b};
    size_t flen[2] = {la, lb};
    int present[2] = {ctl & 1, (ctl & 2) != 0};
    for (int i = 0; i < 2; i++) {
        fuzz_check((r.slot[i].state == SB_SLOT_ABSENT) == !present[i],
                   "absent exactly when there is no file");
        check_slot(&r.slot[i], file[i], flen[i]);
    }
    int bad = 0;
    for (int i = 0; i < 2; i++)
        bad |= r.slot[i].state == SB_SLOT_CORRUPT ||
               r.slot[i].state == SB_SLOT_UNKNOWN_VERSION;
    switch (r.verdict) {
    case SB_EMPTY:
        fuzz_check(!present[0] && !present[1], "EMPTY only without files");
        break;
    case SB_PRESENT: {
        fuzz_check(!bad, "PRESENT never beside a corrupt slot");
        fuzz_check(r.newest == 0 || r.newest == 1, "newest is a slot");
        const struct sb_slot *n = &r.slot[r.newest], *o = &r.slot[!r.newest];
        fuzz_check(n->state == SB_SLOT_VALID, "the newest slot is valid");
        fuzz_check(r.sequence == n->sequence && r.version == n->version &&
                       r.payload_len == n->payload_len &&
                       memcmp(r.payload, n->payload, n->payload_len) == 0,
                   "PRESENT reports the newest slot's record");
        if (o->state == SB_SLOT_VALID)
            fuzz_check(o->sequence + 1 == n->sequence,
                       "the other slot is one write older");
        else
            fuzz_check(o->state == SB_SLOT_ABSENT && r.newest == 0 &&
                           n->sequence == 1,
                       "a lone slot is superblock.a at sequence 1");
        break;
    }
    case SB_UNREADABLE:
        fuzz_check(r.reason[0] != '\0', "UNREADABLE says why");
        break;
    default:
        fuzz_fail("unknown verdict", __FILE__, __LINE__);
    }
    fuzz_check(!bad || r.verdict == SB_UNREADABLE,
               "a corrupt or unknown slot is UNREADABLE");
    free(a);
    free(b);
    fuzz_clear_dir(dir);
    return 0;
}
