/*
 * tests/fuzz/fuzz_client_reply.c - libFuzzer target: every reply decoder
 * of the client library (tools/client: vsc_reply_decode, the login,
 * stream, topic, user, permissions, send confirmation, poll and group
 * decoders, the record-list decoder and the TLV walker).
 *
 * Input: [selector u8][bytes]; the selector picks the decoder (and its
 * details/with_* flag). Invariants checked:
 *  - results are 0, -EPROTO, -EBADMSG (poll) or an Iggy code, and every
 *    borrowed pointer lies inside the input (or the decoder's copy);
 *  - a reply frame's payload is inside [256, size) of the frame, status
 *    and result are echoed;
 *  - decoded counts match the elements allocated; names are NUL-ended;
 *  - permissions re-encode (vsc_perms_encode) to bytes that decode to the
 *    same permissions and re-encode to themselves (flag bytes other than
 *    0/1 read as booleans, so only that canonical form round-trips);
 *  - a send confirmation is exactly [count][count x 20];
 *  - a poll body whose every record is a valid stored batch
 *    (shard/data/batch.c) decodes with all checksums good, one message per
 *    frame at base_offset + delta, payload and headers inside the copy.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/wire.h"
#include "shard/data/batch.h"
#include "tests/fuzz/fuzz_util.h"
#include "tools/client/vsc.h"
#include "tools/client/vsc_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INSIDE(ptr, n, base, len)                                              \
    ((n) == 0 || ((const uint8_t *)(ptr) >= (const uint8_t *)(base) &&         \
                  (size_t)((const uint8_t *)(ptr) - (const uint8_t *)(base)) + \
                          (size_t)(n) <=                                       \
                      (size_t)(len)))

static void
name_ok(const char *s)
{
    fuzz_check(memchr(s, '\0', VSC_NAME_MAX + 1) != NULL, "name NUL-ended");
}

static void
do_reply(const uint8_t *p, size_t len)
{
    struct vsc_reply r;
    int rc = vsc_reply_decode(p, len, &r);
    fuzz_check(rc >= 0 || rc == -EPROTO, "0, a code or -EPROTO");
    if (rc == 0) {
        struct vs_hdr_reply h;
        memcpy(&h, p, sizeof(h));
        fuzz_check(r.command == VS_CMD_REPLY && h.f.command == VS_CMD_REPLY,
                   "success is a reply frame");
        fuzz_check(h.status == 0 && r.status == 0 && r.result == 0,
                   "success has no status or result");
        fuzz_check(h.f.size >= VS_HEADER_SIZE && h.f.size <= len,
                   "the frame fits the bytes");
        fuzz_check(INSIDE(r.payload, r.payload_len, p + VS_HEADER_SIZE,
                          h.f.size - VS_HEADER_SIZE),
                   "the payload lies in the frame's body");
        fuzz_check(vs_operation_is_declared(r.operation), "declared op");
    } else if (rc > 0 && r.command == VS_CMD_REPLY) {
        fuzz_check((uint32_t)rc == r.status || (uint32_t)rc == r.result,
                   "the code is the status or the result");
    }
}

static void
do_perms(const uint8_t *p, size_t len)
{
    struct vsc_perms a, b;
    if (vsc_perms_decode(p, len, &a) != 0) {
        fuzz_check(a.streams == NULL && a.n_streams == 0,
                   "a refusal leaves no permissions");
        return;
    }
    struct vs_wbuf w, w2;
    vs_wbuf_init(&w);
    vs_wbuf_init(&w2);
    vsc_perms_encode(&w, &a);
    fuzz_check(vsc_perms_decode(w.data, w.len, &b) == 0,
               "encoded permissions decode");
    fuzz_check(a.n_streams == b.n_streams &&
                   memcmp(a.global, b.global, sizeof(a.global)) == 0,
               "same permissions after a round trip");
    for (size_t i = 0; i < a.n_streams; i++)
        fuzz_check(a.streams[i].stream_id == b.streams[i].stream_id &&
                       a.streams[i].n_topics == b.streams[i].n_topics,
                   "same stream grants after a round trip");
    vsc_perms_encode(&w2, &b);
    fuzz_check(w.len == w2.len && memcmp(w.data, w2.data, w.len) == 0,
               "the canonical encoding re-encodes to itself");
    vs_wbuf_fini(&w);
    vs_wbuf_fini(&w2);
    vsc_perms_fini(&a);
    vsc_perms_fini(&b);
}

static void
do_poll(const uint8_t *p, size_t len)
{
    struct vsc_polled o;
    int rc = vsc_poll_decode(p, len, &o);
    fuzz_check(rc == 0 || rc == -EPROTO || rc == -EBADMSG, "typed result");
    /* is every record a valid stored batch? */
    int all_valid = len >= 16;
    uint64_t frames = 0;
    for (size_t off = 16; all_valid && off < len;) {
        if (len - off < BATCH_HEADER_SIZE) {
            all_valid = 0;
            break;
        }
        uint64_t bl = batch_length(p + off);
        if (bl < BATCH_HEADER_SIZE || bl > len - off ||
            batch_validate(p + off, (size_t)bl, NULL, 0, NULL) != BATCH_OK) {
            all_valid = 0;
            break;
        }
        frames += batch_count(p + off);
        off += (size_t)bl;
    }
    if (all_valid)
        fuzz_check(rc == 0 && o.batch_checksums_ok && o.n == frames,
                   "valid stored batches decode, one message per frame");
    if (rc != 0) {
        fuzz_check(o.msgs == NULL && o.buf == NULL && o.n == 0,
                   "a refusal frees everything");
        return;
    }
    size_t off = 16, k = 0;
    for (uint32_t rec = 0; rec < o.records; rec++) {
        const uint8_t *r = o.buf + off;
        uint64_t bl = vs_load_u64(r + 32);
        size_t fo = BATCH_HEADER_SIZE;
        while (fo < bl) {
            fuzz_check(k < o.n, "a message per frame");
            const struct vsc_message *m = &o.msgs[k++];
            fuzz_check(m->offset ==
                           vs_load_u64(r + 8) + vs_load_u32(r + fo + 24),
                       "offset = base_offset + offset_delta");
            fuzz_check(INSIDE(m->payload, m->payload_len, o.buf, len) &&
                           INSIDE(m->headers, m->headers_len, o.buf, len),
                       "payload and headers inside the copy");
            fo += BATCH_FRAME_SIZE + m->payload_len + m->headers_len;
        }
        fuzz_check(fo == bl, "frames tile the record");
        off += (size_t)bl;
    }
    fuzz_check(off == len && k == o.n, "records tile the body");
    vsc_polled_fini(&o);
}

static int
rec_stream(struct vs_rbuf *r, void *e)
{
    return vsc_decode_stream_at(r, e);
}
/* GetTopics: [count u32] then count topic headers (the list form of
 * vsc_topics, whose records own heap memory, so it is not a
 * vsc_decode_records list). */
static void
do_topic_list(const uint8_t *p, size_t len)
{
    struct vs_rbuf r;
    vs_rbuf_init(&r, p, len);
    uint32_t count = vs_rd_u32(&r);
    if (r.err || count > vs_rbuf_left(&r) / 58)
        return;
    struct vsc_topic *t = calloc(count ? count : 1, sizeof(*t));
    fuzz_check(t != NULL, "calloc");
    uint32_t i;
    for (i = 0; i < count; i++) {
        if (vsc_decode_topic_at(&r, &t[i]) != 0) {
            fuzz_check(t[i].explicit_opts == NULL && t[i].derived_opts == NULL,
                       "a refused topic frees its options");
            break;
        }
        name_ok(t[i].name);
        fuzz_check(r.off <= len, "reader in range");
    }
    for (uint32_t j = 0; j < i; j++)
        vsc_topic_fini(&t[j]);
    free(t);
}
static int
rec_user(struct vs_rbuf *r, void *e)
{
    return vsc_decode_user_at(r, e, 0);
}
static int
rec_group(struct vs_rbuf *r, void *e)
{
    return vsc_decode_group_at(r, e, 0);
}

static void
do_records(int which, const uint8_t *p, size_t len)
{
    static vsc_record_fn *const fns[4] = {rec_stream, NULL, rec_user,
                                          rec_group};
    if (which == 1) {
        do_topic_list(p, len);
        return;
    }
    static const size_t sizes[4] = {
        sizeof(struct vsc_stream), sizeof(struct vsc_topic),
        sizeof(struct vsc_user), sizeof(struct vsc_group)};
    void *out = NULL;
    size_t n = 99;
    int rc = vsc_decode_records(p, len, sizes[which], fns[which], &out, &n);
    if (rc != 0) {
        fuzz_check(rc == -EPROTO && out == NULL && n == 0,
                   "a refused list is empty");
        return;
    }
    fuzz_check((n == 0) == (len == 0), "records iff bytes");
    for (size_t i = 0; i < n; i++) {
        uint8_t *e = (uint8_t *)out + i * sizes[which];
        if (which == 0)
            name_ok(((struct vsc_stream *)e)->name);
        if (which == 2)
            name_ok(((struct vsc_user *)e)->name);
        if (which == 3)
            name_ok(((struct vsc_group *)e)->name);
    }
    free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    const uint8_t *p = data + 1;
    size_t len = size - 1;
    /* a heap copy of exactly len bytes, so ASan sees any over-read */
    uint8_t *b = malloc(len ? len : 1);
    fuzz_check(b != NULL, "malloc");
    memcpy(b, p, len);
    switch (sel % 16) {
    case 0:
        do_reply(b, len);
        break;
    case 1: {
        uint32_t uid, proto;
        uint64_t session;
        char ver[256];
        if (vsc_decode_login(b, len, &uid, &session, &proto, ver) == 0)
            name_ok(ver);
        break;
    }
    case 2:
    case 3: {
        struct vsc_stream s;
        int rc = vsc_decode_stream(b, len, &s, sel % 16 == 3);
        fuzz_check(rc == 0 || rc == -EPROTO, "0 or -EPROTO");
        if (rc == 0) {
            name_ok(s.name);
            if (sel % 16 == 3)
                fuzz_check(s.n_topics == s.topics_count, "all topics read");
            for (size_t i = 0; i < s.n_topics; i++)
                name_ok(s.topics[i].name);
        }
        vsc_stream_fini(&s);
        break;
    }
    case 4:
    case 5: {
        struct vsc_topic t;
        int rc = vsc_decode_topic(b, len, &t, sel % 16 == 5);
        fuzz_check(rc == 0 || rc == -EPROTO, "0 or -EPROTO");
        if (rc == 0) {
            name_ok(t.name);
            if (sel % 16 == 5)
                fuzz_check(t.n_partitions == t.partitions_count,
                           "all partitions read");
        } else {
            fuzz_check(t.partitions == NULL && t.explicit_opts == NULL,
                       "a refusal frees the topic");
        }
        vsc_topic_fini(&t);
        break;
    }
    case 6:
    case 7: {
        struct vsc_user u;
        int rc = vsc_decode_user(b, len, &u, sel % 16 == 7);
        fuzz_check(rc == 0 || rc == -EPROTO, "0 or -EPROTO");
        if (rc == 0)
            name_ok(u.name);
        vsc_user_fini(&u);
        break;
    }
    case 8:
        do_perms(b, len);
        break;
    case 9: {
        struct vsc_sent s;
        int rc = vsc_decode_sent(b, len, &s);
        if (rc == 0 && len > 0)
            fuzz_check(len >= 4 && len - 4 == (size_t)vs_load_u32(b) * 20,
                       "a confirmation is [count][count x 20]");
        if (rc == 0)
            fuzz_check(s.confirmed == (len > 4), "confirmed iff one follows");
        break;
    }
    case 10:
        do_poll(b, len);
        break;
    case 11:
    case 12: {
        struct vsc_group g;
        int rc = vsc_decode_group(b, len, &g, sel % 16 == 12);
        fuzz_check(rc == 0 || rc == -EPROTO, "0 or -EPROTO");
        if (rc == 0) {
            name_ok(g.name);
            if (sel % 16 == 12)
                fuzz_check(g.n_members == g.members_count, "all members");
        }
        vsc_group_fini(&g);
        break;
    }
    case 13: {
        size_t off = 0;
        struct vsc_tlv kv;
        int rc, steps = 0;
        while ((rc = vsc_tlv_next(b, len, &off, &kv)) == 1) {
            fuzz_check(INSIDE(kv.key, kv.key_len, b, len) &&
                           INSIDE(kv.val, kv.val_len, b, len),
                       "key and value inside the block");
            fuzz_check(off <= len && ++steps <= (int)len, "progress");
        }
        fuzz_check(rc == 0 || rc == -EPROTO, "end or -EPROTO");
        break;
    }
    default:
        do_records(sel % 16 - 14 + (sel / 16) % 2 * 2, b, len);
        break;
    }
    free(b);
    return 0;
}
