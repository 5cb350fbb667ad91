/*
 * tests/fuzz/fuzz_client_table.c - libFuzzer target: the client table's
 * transfer form "ICT2" (shard/meta/client_table.c:
 * meta_ct_transfer_decode, then install into an instance and a private
 * table as state transfer does).
 *
 * Input: [ctl u8][ICT2 bytes]. ctl bit 0: reseal (recompute the trailing
 * XXH3-64) so mutations reach past the checksum. Invariants checked:
 *  - a refusal is -EPROTO, -EINVAL or -EBADMSG and leaves an empty image;
 *  - an accepted image has non-zero, distinct client ids, a non-zero
 *    epoch and 1..5 valid replies per entry;
 *  - installed into an instance (sessions) and a private table (rings),
 *    it re-encodes (meta_ct_transfer_encode) to exactly the input bytes.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "shard/meta/client_table.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/unit/meta_helpers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static void *st;
    static struct meta_caps caps;
    static struct th_run run;
    static struct meta_client_table ct;
    if (st == NULL) {
        meta_ct_init(&ct);
        /* every access checks slot < ct.slots, and an installed image
         * has at most session_slots entries: a small table keeps runs
         * fast */
        ct.slots = caps.session_slots;
        th_caps(&caps);
        ct.slots = caps.session_slots;
        st = th_state(&caps);
        th_run_init(&run);
        fuzz_check(th_genesis(st, &run) == 0, "genesis");
    }
    if (size < 1)
        return 0;
    uint8_t ctl = data[0];
    size_t len = size - 1;
    uint8_t *b = malloc(len + 1);
    fuzz_check(b != NULL, "malloc");
    memcpy(b, data + 1, len);
    if ((ctl & 1) && len >= 8)
        vs_store_u64(b + len - 8, vs_xxh3_64(b, len - 8));

    struct meta_ct_image img;
    int rc = meta_ct_transfer_decode(b, len, &img);
    if (rc != 0) {
        fuzz_check(rc == -EPROTO || rc == -EINVAL || rc == -EBADMSG,
                   "a refusal is typed");
        fuzz_check(img.count == 0 && img.e == NULL,
                   "a refusal leaves an empty image");
        free(b);
        return 0;
    }
    for (uint32_t i = 0; i < img.count; i++) {
        const struct meta_ct_image_entry *e = &img.e[i];
        fuzz_check(!vs_u128_is_zero(e->client) && e->epoch != 0,
                   "an entry has a client id and an epoch");
        fuzz_check(e->ring_len <= META_CT_RING, "at most 5 cached replies");
        for (unsigned k = 0; k < e->ring_len; k++)
            fuzz_check(meta_ct_reply_valid(e->ring[k].bytes, e->ring[k].len),
                       "every cached reply is a valid reply frame");
        for (uint32_t j = 0; j < i; j++)
            fuzz_check(!vs_u128_eq(img.e[j].client, e->client),
                       "client ids are distinct");
    }
    rc = meta_ct_install_sessions(st, &img);
    if (rc == 0) {
        meta_ct_clear(&ct);
        meta_ct_install_replies(&ct, st, &img);
        struct vs_wbuf w;
        vs_wbuf_init(&w);
        /* re-encoded in the form it came in (ICT3, or ICT2 still read) */
        unsigned version = memcmp(b, META_CT_MAGIC_V2, 4) == 0 ? 2 : 3;
        fuzz_check(meta_ct_transfer_encode_version(&ct, st, &w, version) == 0,
                   "an installed image encodes");
        fuzz_check(w.len == len && memcmp(w.data, b, len) == 0,
                   "an installed image re-encodes to its bytes");
        vs_wbuf_fini(&w);
    } else {
        /* ICT3 keeps slot positions: the highest slot must fit too */
        uint32_t need = img.count;
        if (img.version == 3 && img.count > 0)
            need = img.e[img.count - 1].slot + 1;
        fuzz_check(rc == -ENOSPC && need > caps.session_slots,
                   "install refuses only an image the slots cannot hold");
    }
    meta_ct_image_fini(&img);
    free(b);
    return 0;
}
