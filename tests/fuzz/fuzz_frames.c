/*
 * tests/fuzz/fuzz_frames.c - libFuzzer target: the client frame parser of
 * the data shards (shard/serve/proto.c: serve_frame_check, as a
 * connection applies it to its buffered stream) and the routing of each
 * whole frame to its body decoder (as serve_dispatch and serve_nr do).
 *
 * Input: [metadata limit u8][message limit u8][stream bytes]; the body
 * limits are 64 + 16 x the byte, so the oversize rule is reachable in
 * small inputs. Invariants checked:
 *  - the verdicts partition the cases: GARBAGE exactly for size < 256 or
 *    a command other than Request; OVERSIZED exactly for a body over the
 *    limit of its plane; COMPLETE exactly when the frame is all buffered;
 *    else NEED_MORE; a COMPLETE frame is consumed whole, so the parse
 *    always progresses and ends after at most one frame per 256 bytes;
 *  - a frame whose request_checksum is set is routed only when it matches
 *    the body; every routed body gets a documented status from its
 *    decoder (or -EPROTO for a login prefix);
 *  - a frame built by the client library (vsc_frame_request) for a body
 *    of the input is COMPLETE and routes the same body.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/wire.h"
#include "shard/meta/ops.h"
#include "shard/serve/proto.h"
#include "tests/fuzz/fuzz_util.h"
#include "tools/client/vsc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
status_known(uint32_t st)
{
    return st == 0 || st == 3 || st == 4041 || st == 4042 || st == 2015 ||
           st == 1019;
}

/* Routes one whole frame as serve_dispatch does; returns 1 if a decoder
 * saw the body. */
static int
route(const struct vs_hdr_request *h, const uint8_t *body, size_t len)
{
    static struct meta_op op;
    static struct serve_secrets sec;
    if (!vs_u128_is_zero(h->request_checksum) &&
        !vs_u128_eq(h->request_checksum, vs_checksum(body, len)))
        return 0; /* answered InvalidFormat */
    unsigned o = h->operation;
    if (o == VS_OP_REGISTER) {
        struct serve_login l;
        int rc = serve_login_decode(body, len, &l);
        fuzz_check(rc == 0 || rc == -EPROTO, "login: 0 or -EPROTO");
        return 1;
    }
    if (o == VS_OP_NON_REPLICATED) {
        uint32_t code = h->command_code;
        enum serve_nr_class k = serve_nr_classify(code);
        if (code == SERVE_C_POLL) {
            struct serve_poll_req q;
            fuzz_check(status_known(serve_decode_poll(body, len, &q)),
                       "poll: a documented status");
            return 1;
        }
        if (k == SERVE_NR_READ) {
            struct serve_read_req q;
            uint32_t st = serve_decode_read(code, body, len, &q);
            fuzz_check(st == 0 || st == 3, "read: 0 or 3");
            return 1;
        }
        return 0;
    }
    if (o == VS_OP_SEND_MESSAGES) {
        struct serve_send_meta m;
        uint32_t st = serve_decode_send_meta(body, len, &m);
        fuzz_check(status_known(st), "send: a documented status");
        if (st == 0)
            fuzz_check(m.batch_off <= len, "send: the batch is in the body");
        return 1;
    }
    if (o == VS_OP_LOGOUT ||
        (o >= VS_OP_CREATE_STREAM && o <= VS_OP_LEAVE_CONSUMER_GROUP)) {
        meta_op_init(&op, o);
        fuzz_check(
            status_known(serve_decode_replicated(o, body, len, &op, &sec)),
            "replicated: a documented status");
        return 1;
    }
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint32_t meta_max = 64 + 16u * data[0], msg_max = 64 + 16u * data[1];
    const uint8_t *s = data + 2;
    size_t len = size - 2;
    size_t pos = 0, frames = 0;
    for (;;) {
        size_t have = len - pos;
        if (have < VS_HEADER_SIZE)
            break; /* waits for more */
        struct vs_hdr_request h;
        memcpy(&h, s + pos, sizeof(h));
        uint32_t fsize = 0, limit = 0;
        enum serve_frame_verdict v =
            serve_frame_check(&h, have, meta_max, msg_max, &fsize, &limit);
        int garbage =
            h.f.size < VS_HEADER_SIZE || h.f.command != VS_CMD_REQUEST;
        fuzz_check((v == SERVE_FRAME_GARBAGE) == garbage,
                   "GARBAGE exactly for a short size or another command");
        if (garbage)
            break; /* closed */
        uint32_t want = serve_is_message_plane(h.operation, h.command_code)
                            ? msg_max
                            : meta_max;
        fuzz_check(limit == want, "the limit of the frame's plane");
        fuzz_check((v == SERVE_FRAME_OVERSIZED) ==
                       (h.f.size - VS_HEADER_SIZE > want),
                   "OVERSIZED exactly for a body over its limit");
        if (v == SERVE_FRAME_OVERSIZED)
            break; /* evicted */
        fuzz_check(fsize == h.f.size, "the frame size is the header's");
        fuzz_check((v == SERVE_FRAME_COMPLETE) == (have >= h.f.size),
                   "COMPLETE exactly when the frame is all in");
        if (v != SERVE_FRAME_COMPLETE)
            break; /* waits for more */
        const uint8_t *body = s + pos + VS_HEADER_SIZE;
        size_t blen = fsize - VS_HEADER_SIZE;
        uint8_t *copy = malloc(blen ? blen : 1); /* exact: ASan bounds */
        fuzz_check(copy != NULL, "malloc");
        memcpy(copy, body, blen);
        route(&h, copy, blen);

        /* the client library's framing of the same body */
        if (blen <= meta_max && blen <= msg_max) {
            struct vs_wbuf w;
            vs_wbuf_init(&w);
            struct vs_u128 client = {7, 9};
            vsc_frame_request(&w, client, 1, 1, h.operation, h.command_code,
                              copy, blen, 1);
            struct vs_hdr_request h2;
            memcpy(&h2, w.data, sizeof(h2));
            uint32_t s2 = 0, l2 = 0;
            fuzz_check(serve_frame_check(&h2, w.len, meta_max, msg_max, &s2,
                                         &l2) == SERVE_FRAME_COMPLETE &&
                           s2 == w.len,
                       "a client-built frame is complete");
            fuzz_check(w.len == fsize &&
                           memcmp(w.data + VS_HEADER_SIZE, copy, blen) == 0,
                       "and carries the same body");
            fuzz_check(vs_u128_eq(h2.request_checksum, vs_checksum(copy, blen)),
                       "with a matching request checksum");
            fuzz_check(route(&h2, copy, blen) || !route(&h, copy, blen),
                       "routed wherever the input frame was");
            vs_wbuf_fini(&w);
        }
        free(copy);
        pos += fsize;
        frames++;
        fuzz_check(frames <= len / VS_HEADER_SIZE, "the parse progresses");
    }
    return 0;
}
