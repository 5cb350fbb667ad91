/*
 * tests/fuzz/fuzz_request.c - libFuzzer target: every request body
 * decoder of the data shards (shard/serve/proto.c, options.c) and the
 * metadata op codec the decoded bodies are proposed and journaled in
 * (shard/meta/ops.c: meta_op_encode / meta_op_decode, meta_perms_parse).
 *
 * Input: [selector u8][arg u8][body]. selector % 9: 0 Register
 * (serve_login_decode), 1 a replicated request (operation Logout or
 * 128..149 from arg), 2 a NonReplicated read (a read code from arg),
 * 3 PollMessages, 4 SendMessages metadata (+ its batch), 5 an options
 * block (scope and partitions from arg), 6 a journaled op body
 * (meta_op_decode), 7 the duration / size text parsers, 8 a consumer
 * offset request (Get, Store or Delete from arg).
 * Invariants checked:
 *  - every status is one the decoders document (0, 3, 4041, 4042, 2015,
 *    1019; -EPROTO for a login prefix; 0/-errno for the op codec);
 *  - what is borrowed (login strings, partitioning key, permissions)
 *    lies inside the body; identifiers are numeric (no name) or names of
 *    1..255 valid UTF-8 bytes; decoded names are valid and NUL-ended (for
 *    a journaled op body only the structure: apply validates names);
 *  - a decoded replicated request encodes as an op (meta_op_encode) that
 *    decodes again and re-encodes to the same bytes; a journaled op body
 *    that decodes re-encodes to the same bytes; permissions parse;
 *  - a send's batch offset is inside the body;
 *  - the text parsers accept only what re-parses to the same value.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/wire.h"
#include "shard/data/batch.h"
#include "shard/meta/ops.h"
#include "shard/serve/options.h"
#include "shard/serve/proto.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INSIDE(ptr, n, base, len)                                              \
    ((n) == 0 || ((const uint8_t *)(ptr) >= (const uint8_t *)(base) &&         \
                  (size_t)((const uint8_t *)(ptr) - (const uint8_t *)(base)) + \
                          (size_t)(n) <=                                       \
                      (size_t)(len)))

/* The client-body decoders validate names; the op codec is a transport
 * (apply validates again), so for it only the structure is checked. */
static int check_utf8;

static void
ident_ok(const struct meta_ident *id)
{
    if (id->kind == META_IDENT_NONE)
        return;
    if (id->kind == META_IDENT_NUMERIC) {
        fuzz_check(id->len == 0 && id->name[0] == '\0',
                   "a numeric identifier carries no name");
        return;
    }
    fuzz_check(id->kind == META_IDENT_NAME, "identifier kind 1 or 2");
    fuzz_check(id->len >= 1 && id->name[id->len] == '\0' &&
                   strlen(id->name) <= id->len,
               "a name identifier of 1..255 bytes, NUL-ended");
    fuzz_check(!check_utf8 ||
                   meta_utf8_valid((const uint8_t *)id->name, id->len),
               "a name identifier is valid UTF-8");
}

static void
op_ok(const struct meta_op *op)
{
    ident_ok(&op->stream);
    ident_ok(&op->topic);
    ident_ok(&op->group);
    ident_ok(&op->user);
    if (op->has_name)
        fuzz_check(
            op->name[op->name_len] == '\0' &&
                (!check_utf8 ||
                 meta_utf8_valid((const uint8_t *)op->name, op->name_len)),
            "a decoded name is valid UTF-8, NUL-ended");
}

/* op -> bytes -> op -> the same bytes */
static void
op_roundtrip(const struct meta_op *op, const uint8_t *want, size_t want_len)
{
    static struct meta_op back;
    struct vs_wbuf a, b;
    vs_wbuf_init(&a);
    vs_wbuf_init(&b);
    int rc = meta_op_encode(op, &a);
    fuzz_check(rc == 0, "a decoded op encodes");
    /* the encoder writes one format per operation (the newest that
     * operation has); a body in another format (still read) is canonical
     * only in its own */
    if (want != NULL && want_len > 0 && a.len > 0 && want[0] == a.data[0])
        fuzz_check(a.len == want_len && memcmp(a.data, want, want_len) == 0,
                   "an accepted op body re-encodes to its bytes");
    fuzz_check(meta_op_decode(a.data, a.len, &back) == 0,
               "an encoded op decodes");
    fuzz_check(meta_op_encode(&back, &b) == 0 && a.len == b.len &&
                   memcmp(a.data, b.data, a.len) == 0,
               "an op re-encodes to the same bytes");
    vs_wbuf_fini(&a);
    vs_wbuf_fini(&b);
}

static int
status_known(uint32_t st)
{
    return st == 0 || st == 3 || st == 4041 || st == 4042 || st == 2015 ||
           st == 1019;
}

static const uint32_t read_codes[] = {
    SERVE_C_GET_STATS,  SERVE_C_GET_CLUSTER, SERVE_C_DESCRIBE_OPTIONS,
    SERVE_C_GET_ME,     SERVE_C_GET_CLIENT,  SERVE_C_GET_CLIENTS,
    SERVE_C_GET_USER,   SERVE_C_GET_USERS,   SERVE_C_GET_PATS,
    SERVE_C_GET_STREAM, SERVE_C_GET_STREAMS, SERVE_C_GET_TOPIC,
    SERVE_C_GET_TOPICS, SERVE_C_GET_GROUP,   SERVE_C_GET_GROUPS,
    SERVE_C_SYNC_GROUP, SERVE_C_GET_OFFSET,  SERVE_C_POLL,
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct meta_op op;
    static struct serve_secrets sec;
    if (size < 2)
        return 0;
    uint8_t sel = data[0], arg = data[1];
    size_t len = size - 2;
    uint8_t *b = malloc(len ? len : 1); /* exact size: ASan sees overreads */
    fuzz_check(b != NULL, "malloc");
    memcpy(b, data + 2, len);
    check_utf8 = sel % 9 != 6;

    switch (sel % 9) {
    case 0: {
        struct serve_login l;
        int rc = serve_login_decode(b, len, &l);
        fuzz_check(rc == 0 || rc == -EPROTO, "0 or -EPROTO");
        if (rc == 0) {
            fuzz_check(INSIDE(l.sdk_name, l.sdk_name_len, b, len) &&
                           INSIDE(l.sdk_version, l.sdk_version_len, b, len),
                       "the version strings lie in the body");
            if (l.pw_shape)
                fuzz_check(INSIDE(l.username, l.ulen, b, len) &&
                               INSIDE(l.password, l.plen, b, len),
                           "the credentials lie in the body");
            if (l.pat_shape)
                fuzz_check(INSIDE(l.token, l.tlen, b, len),
                           "the token lies in the body");
        }
        break;
    }
    case 1: {
        unsigned operation =
            arg % 23 == 22 ? VS_OP_LOGOUT : VS_OP_CREATE_STREAM + arg % 23;
        meta_op_init(&op, operation);
        uint32_t st = serve_decode_replicated(operation, b, len, &op, &sec);
        fuzz_check(status_known(st), "a documented status");
        if (st != 0)
            break;
        op_ok(&op);
        fuzz_check(op.operation == operation, "the operation is kept");
        if (op.has_perms) {
            fuzz_check(INSIDE(op.perms, op.perms_len, b, len),
                       "permissions lie in the body");
            struct meta_perms_visit v = {0};
            fuzz_check(meta_perms_parse(op.perms, op.perms_len, &v) == 0,
                       "accepted permissions parse");
        }
        fuzz_check(sec.pw_len <= 255 && sec.pw2_len <= 255, "secret lengths");
        op_roundtrip(&op, NULL, 0);
        break;
    }
    case 2: {
        uint32_t code =
            read_codes[arg % (sizeof(read_codes) / sizeof(read_codes[0]))];
        struct serve_read_req q;
        uint32_t st = serve_decode_read(code, b, len, &q);
        fuzz_check(st == 0 || st == 3, "0 or 3");
        if (st == 0) {
            ident_ok(&q.stream);
            ident_ok(&q.topic);
            ident_ok(&q.group);
            ident_ok(&q.user);
        }
        break;
    }
    case 3: {
        struct serve_poll_req q;
        uint32_t st = serve_decode_poll(b, len, &q);
        fuzz_check(status_known(st), "a documented status");
        if (st == 0) {
            ident_ok(&q.consumer);
            ident_ok(&q.stream);
            ident_ok(&q.topic);
        }
        break;
    }
    case 4: {
        struct serve_send_meta m;
        uint32_t st = serve_decode_send_meta(b, len, &m);
        fuzz_check(status_known(st), "a documented status");
        if (st != 0)
            break;
        ident_ok(&m.stream);
        ident_ok(&m.topic);
        fuzz_check(m.batch_off <= len, "the batch starts inside the body");
        fuzz_check(INSIDE(m.partitioning, m.partitioning_len, b, len),
                   "the partitioning key lies in the body");
        fuzz_check(m.partitioning_kind >= 1 && m.partitioning_kind <= 3,
                   "partitioning kind 1..3");
        struct batch_info info;
        (void)batch_validate(b + m.batch_off, len - m.batch_off, NULL, 1,
                             &info);
        break;
    }
    case 5: {
        struct meta_topic_opts o;
        uint32_t st = serve_options_parse(
            b, len, (enum serve_opt_scope)(arg % 3), arg / 3, &o);
        fuzz_check(status_known(st), "a documented status");
        if (st == 0 && arg % 3 == SERVE_OPT_TOPIC_CREATE)
            fuzz_check(o.max_topic_size >= o.segment_size ||
                           o.max_topic_size == 0,
                       "max_topic_size is not below the segment size");
        break;
    }
    case 6: {
        int rc = meta_op_decode(b, len, &op);
        if (rc == 0) {
            op_ok(&op);
            op_roundtrip(&op, b, len);
        } else {
            fuzz_check(rc < 0, "a refused op body is -errno");
        }
        break;
    }
    case 7: {
        uint64_t v, v2;
        char text[64];
        if (arg % 2 == 0) {
            if (serve_parse_duration_us((const char *)b, len, &v) == 0) {
                int n = snprintf(text, sizeof(text), "%lluus",
                                 (unsigned long long)v);
                fuzz_check(serve_parse_duration_us(text, (size_t)n, &v2) == 0 &&
                               v2 == v,
                           "an accepted duration re-parses in µs");
            }
        } else if (serve_parse_size((const char *)b, len, &v) == 0) {
            int n = snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
            fuzz_check(serve_parse_size(text, (size_t)n, &v2) == 0 && v2 == v,
                       "an accepted size re-parses in bytes");
        }
        break;
    }
    case 8: {
        static const unsigned ops[3] = {VS_OP_NON_REPLICATED,
                                        VS_OP_STORE_CONSUMER_OFFSET,
                                        VS_OP_DELETE_CONSUMER_OFFSET};
        struct serve_offset_req q;
        int rc = serve_decode_offset(b, len, ops[arg % 3], &q);
        fuzz_check(rc == 0 || rc == -1, "0 or -1");
        if (rc == 0) {
            fuzz_check(q.kind == 1 || q.kind == 2, "consumer kind 1 or 2");
            ident_ok(&q.consumer);
            ident_ok(&q.stream);
            ident_ok(&q.topic);
        }
        break;
    }
    }
    free(b);
    return 0;
}
