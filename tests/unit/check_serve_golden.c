/*
 * tests/unit/check_serve_golden.c - the data shard's client protocol
 * against the reference frames (shared/reference/iggy-client-protocol*.md),
 * the stand-in for Iggy's SDKs: every *(example)* request layout decodes
 * to the right command with shard/serve's decoders, and every reply
 * shard/serve builds for them matches the reference bytes except the
 * fields that cannot match, listed ONCE here:
 *   - created_at timestamps of records (taken from the state),
 *   - session (the Register's commit number), client id, server_version,
 *   - in reply headers: the echoed client, request and request_checksum.
 * Plus every decoder's error paths: truncations, bad kinds and lengths,
 * option rules, random bytes (an error code, never a crash; the ASan leg
 * checks the bounds).
 * Callers: make check (normal and ASan legs).
 */
#include "config.h"

#include <check.h>
#include <event2/event.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "meta_helpers.h"
#include "shard/meta/lookup.h"
#include "shard/meta/state.h"
#include "shard/meta/secrets.h"
#include "shard/serve/cluster.h"
#include "shard/serve/hasher.h"
#include "shard/serve/options.h"
#include "shard/serve/proto.h"
#include "shard/serve/reads.h"

/* ---------------------------------------------------------- helpers */

static size_t
unhex(const char *hex, uint8_t *out, size_t max)
{
    size_t n = 0;
    int hi = -1;
    for (const char *p = hex; *p; p++) {
        int v;
        if (*p >= '0' && *p <= '9')
            v = *p - '0';
        else if (*p >= 'a' && *p <= 'f')
            v = *p - 'a' + 10;
        else
            continue; /* spaces and '|' separators */
        if (hi < 0) {
            hi = v;
        } else {
            ck_assert_uint_lt(n, max);
            out[n++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    ck_assert_int_eq(hi, -1);
    return n;
}

/* The 26-byte stream name of the example session (any 26 bytes). */
static const char STREAM26[] = "smoke-stream-0123456789abc";

static struct meta_op *
new_op(void)
{
    return calloc(1, sizeof(struct meta_op));
}

/* A request header exactly as the Node SDK writes it (§2): only the
 * listed offsets are non-zero. */
static void
sdk_header(uint8_t h[256], uint32_t body_len, uint8_t operation,
           uint64_t request, uint64_t session, uint32_t code)
{
    memset(h, 0, 256);
    vs_store_u32(h + 48, 256 + body_len);
    h[60] = 5;
    for (int i = 0; i < 16; i++)
        h[128 + i] = (uint8_t)(0xa0 + i); /* random client id */
    vs_store_u64(h + 168, request);
    h[176] = operation;
    vs_store_u64(h + 184, session);
    vs_store_u32(h + 196, code);
}

/* -------------------------------------------------- golden: requests */

START_TEST(test_header_example)
{
    uint8_t h[256];
    sdk_header(h, 0, 2, 1, 0, 1);
    for (int i = 0; i < 256; i++) {
        int allowed = (i >= 48 && i <= 51) || i == 60 ||
                      (i >= 128 && i <= 143) || (i >= 168 && i <= 176) ||
                      (i >= 184 && i <= 191) || (i >= 196 && i <= 199);
        if (!allowed)
            ck_assert_uint_eq(h[i], 0);
    }
    struct vs_hdr_request r;
    memcpy(&r, h, sizeof(r));
    ck_assert_uint_eq(r.f.size, 256);
    ck_assert_uint_eq(r.f.command, VS_CMD_REQUEST);
    ck_assert_uint_eq(r.operation, VS_OP_NON_REPLICATED);
    ck_assert_uint_eq(r.command_code, SERVE_C_PING);
    ck_assert_uint_eq(r.request, 1);
    ck_assert_uint_eq(r.client.lo, UINT64_C(0xa7a6a5a4a3a2a1a0));
    ck_assert_int_eq(serve_nr_classify(r.command_code), SERVE_NR_PING);
}
END_TEST

/* The request framing rules, as a connection applies them to what it has
 * buffered: garbage, over the operation's body limit, incomplete, whole. */
START_TEST(test_frame_check)
{
    uint8_t h[256];
    struct vs_hdr_request r;
    uint32_t size = 0, limit = 0;
    sdk_header(h, 100, 2, 1, 0, SERVE_C_GET_STREAMS);
    memcpy(&r, h, sizeof(r));
    ck_assert_int_eq(serve_frame_check(&r, 256, 1000, 50, &size, &limit),
                     SERVE_FRAME_NEED_MORE);
    ck_assert_uint_eq(size, 356);
    ck_assert_int_eq(serve_frame_check(&r, 356, 1000, 50, &size, &limit),
                     SERVE_FRAME_COMPLETE);
    ck_assert_uint_eq(limit, 1000);
    ck_assert_int_eq(serve_frame_check(&r, 356, 99, 5000, &size, &limit),
                     SERVE_FRAME_OVERSIZED);
    /* PollMessages is message plane: the message limit applies */
    r.command_code = SERVE_C_POLL;
    ck_assert_int_eq(serve_frame_check(&r, 356, 1000, 50, &size, &limit),
                     SERVE_FRAME_OVERSIZED);
    ck_assert_uint_eq(limit, 50);
    r.f.size = 255;
    ck_assert_int_eq(serve_frame_check(&r, 356, 1000, 1000, &size, &limit),
                     SERVE_FRAME_GARBAGE);
    r.f.size = 256;
    r.f.command = VS_CMD_PREPARE;
    ck_assert_int_eq(serve_frame_check(&r, 356, 1000, 1000, &size, &limit),
                     SERVE_FRAME_GARBAGE);
}
END_TEST

START_TEST(test_code_table)
{
    /* iggy-client-protocol §2, "Command code -> header operation" */
    static const uint32_t t[][2] = {
        {40, 1},    {45, 1},    {39, 3},    {202, 128}, {204, 129}, {203, 130},
        {205, 131}, {302, 132}, {304, 133}, {303, 134}, {305, 135}, {402, 136},
        {403, 137}, {503, 138}, {602, 139}, {603, 140}, {33, 141},  {35, 142},
        {34, 143},  {37, 144},  {36, 145},  {42, 146},  {43, 147},  {604, 148},
        {605, 149}, {101, 160}, {121, 161}, {122, 162},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        ck_assert_uint_eq(serve_code_operation(t[i][0]), t[i][1]);
        /* a replicated code sent as NonReplicated: H 5, except the login
         * and logout codes (no handler: status 0) */
        enum serve_nr_class k = serve_nr_classify(t[i][0]);
        if (t[i][1] <= 3)
            ck_assert_int_eq(k, SERVE_NR_NO_HANDLER);
        else
            ck_assert_int_eq(k, SERVE_NR_REPLICATED);
    }
    static const uint32_t nr[] = {1,   10,  12,  13,  20,  21,  22,
                                  31,  32,  41,  100, 102, 120, 200,
                                  201, 300, 301, 600, 601, 606, 60001};
    for (size_t i = 0; i < sizeof(nr) / sizeof(nr[0]); i++)
        ck_assert_uint_eq(serve_code_operation(nr[i]), VS_OP_NON_REPLICATED);
    ck_assert_int_eq(serve_nr_classify(38), SERVE_NR_LEGACY_LOGIN);
    ck_assert_int_eq(serve_nr_classify(44), SERVE_NR_LEGACY_LOGIN);
    ck_assert_int_eq(serve_nr_classify(60001), SERVE_NR_UNKNOWN);
    ck_assert_int_eq(serve_nr_classify(102), SERVE_NR_UNAVAILABLE);
    ck_assert_int_eq(serve_nr_classify(12), SERVE_NR_READ);
    /* body limits: send and poll are message-plane frames */
    ck_assert(serve_is_message_plane(160, 0));
    ck_assert(serve_is_message_plane(2, 100));
    ck_assert(!serve_is_message_plane(2, 12));
    ck_assert(!serve_is_message_plane(128, 0));
}
END_TEST

START_TEST(test_login_example)
{
    uint8_t b[64];
    size_t n =
        unhex("002c0000 08 6e6f64652d73646b 0d 302e31302e302d656467652e34 "
              "04 69676779 04 69676779 00000000",
              b, sizeof(b));
    ck_assert_uint_eq(n, 41);
    struct serve_login l;
    ck_assert_int_eq(serve_login_decode(b, n, &l), 0);
    ck_assert_uint_eq(l.protocol_version, 11264);
    ck_assert(serve_version_ok(l.protocol_version));
    ck_assert_uint_eq(l.sdk_name_len, 8);
    ck_assert(memcmp(l.sdk_name, "node-sdk", 8) == 0);
    ck_assert(memcmp(l.sdk_version, "0.10.0-edge.4", 13) == 0);
    ck_assert(l.pw_shape);
    ck_assert(!l.pat_shape); /* a password body never parses as PAT */
    ck_assert_uint_eq(l.ulen, 4);
    ck_assert(memcmp(l.username, "iggy", 4) == 0);
    ck_assert_uint_eq(l.plen, 4);
    ck_assert(memcmp(l.password, "iggy", 4) == 0);
    /* the protocol window: any 0.11.x */
    ck_assert(serve_version_ok((0u << 20) | (11u << 10) | 7u));
    ck_assert(!serve_version_ok((0u << 20) | (10u << 10) | 9u));
    ck_assert(!serve_version_ok((0u << 20) | (12u << 10)));
    ck_assert(!serve_version_ok((1u << 20) | (11u << 10)));
}
END_TEST

START_TEST(test_login_pat_example)
{
    uint8_t b[128];
    size_t n =
        unhex("002c0000 08 6e6f64652d73646b 0d 302e31302e302d656467652e34", b,
              sizeof(b));
    b[n++] = 68;
    for (int i = 0; i < 67; i++)
        b[n++] = (uint8_t)('A' + i % 26);
    b[n++] = '=';
    memset(b + n, 0, 4);
    n += 4;
    struct serve_login l;
    ck_assert_int_eq(serve_login_decode(b, n, &l), 0);
    ck_assert(l.pat_shape);
    ck_assert(!l.pw_shape); /* its ctx_len is 3 bytes short */
    ck_assert_uint_eq(l.tlen, 68);
    ck_assert_uint_eq((uint8_t)l.token[67], '=');
}
END_TEST

START_TEST(test_create_stream_example)
{
    uint8_t b[32];
    b[0] = 0x1a;
    memcpy(b + 1, STREAM26, 26);
    struct meta_op *op = new_op();
    struct serve_secrets sec;
    ck_assert_uint_eq(serve_decode_replicated(128, b, 27, op, &sec), 0);
    ck_assert_uint_eq(op->operation, VS_OP_CREATE_STREAM);
    ck_assert_uint_eq(op->name_len, 26);
    ck_assert_str_eq(op->name, STREAM26);
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    ck_assert_int_eq(meta_op_encode(op, &w), 0);
    struct meta_op *back = new_op();
    ck_assert_int_eq(meta_op_decode(w.data, w.len, back), 0);
    ck_assert_str_eq(back->name, STREAM26);
    vs_wbuf_fini(&w);
    free(back);
    free(op);
}
END_TEST

START_TEST(test_create_topic_example)
{
    uint8_t b[64];
    size_t n = 0;
    b[n++] = 0x02;
    b[n++] = 0x1a;
    memcpy(b + n, STREAM26, 26);
    n += 26;
    n += unhex("01000000 0b 736d6f6b652d746f706963", b + n, sizeof(b) - n);
    struct meta_op *op = new_op();
    struct serve_secrets sec;
    ck_assert_uint_eq(serve_decode_replicated(132, b, n, op, &sec), 0);
    ck_assert_uint_eq(op->stream.kind, META_IDENT_NAME);
    ck_assert_uint_eq(op->stream.len, 26);
    ck_assert(memcmp(op->stream.name, STREAM26, 26) == 0);
    ck_assert_uint_eq(op->count, 1);
    ck_assert_str_eq(op->name, "smoke-topic");
    /* empty options block: the catalog defaults, nothing explicit */
    ck_assert_uint_eq(op->opts.explicit_mask, 0);
    ck_assert_uint_eq(op->opts.message_expiry, UINT64_MAX);
    ck_assert_uint_eq(op->opts.max_topic_size, UINT64_MAX);
    ck_assert_uint_eq(op->opts.segment_size, UINT64_C(1073741824));
    ck_assert_uint_eq(op->opts.compression, 1);
    ck_assert_uint_eq(op->opts.messages_required_to_save, 1024);
    /* every truncation fails with 3 */
    for (size_t k = 0; k < n; k++)
        ck_assert_uint_eq(serve_decode_replicated(132, b, k, op, &sec), 3);
    free(op);
}
END_TEST

START_TEST(test_delete_stream_and_topic_examples)
{
    uint8_t b[64];
    b[0] = 0x02;
    b[1] = 0x1a;
    memcpy(b + 2, STREAM26, 26);
    struct meta_op *op = new_op();
    struct serve_secrets sec;
    ck_assert_uint_eq(serve_decode_replicated(130, b, 28, op, &sec), 0);
    ck_assert_uint_eq(op->operation, VS_OP_DELETE_STREAM);
    ck_assert(memcmp(op->stream.name, STREAM26, 26) == 0);
    /* DeleteTopic: the Node SDK appends u32 partitions_count (ignored) */
    size_t n = 28;
    n += unhex("02 0b 736d6f6b652d746f706963 01000000", b + n, sizeof(b) - n);
    ck_assert_uint_eq(serve_decode_replicated(134, b, n, op, &sec), 0);
    ck_assert_str_eq(op->topic.name, "smoke-topic");
    free(op);
}
END_TEST

START_TEST(test_poll_example)
{
    uint8_t b[128];
    size_t n = unhex("01 01 04 00000000", b, sizeof(b));
    b[n++] = 0x02;
    b[n++] = 0x1a;
    memcpy(b + n, STREAM26, 26);
    n += 26;
    n += unhex("02 0b 736d6f6b652d746f706963 | 01 00000000 | 01 "
               "0000000000000000 | 0a000000 | 00",
               b + n, sizeof(b) - n);
    struct serve_poll_req q;
    ck_assert_uint_eq(serve_decode_poll(b, n, &q), 0);
    ck_assert_uint_eq(q.consumer_kind, 1);
    ck_assert_uint_eq(q.consumer.kind, META_IDENT_NUMERIC);
    ck_assert_uint_eq(q.consumer.id, 0);
    ck_assert_str_eq(q.topic.name, "smoke-topic");
    ck_assert_uint_eq(q.has_partition, 1);
    ck_assert_uint_eq(q.strategy_kind, 1);
    ck_assert_uint_eq(q.count, 10);
    ck_assert_uint_eq(q.autocommit, 0);
    for (size_t k = 0; k < n; k++)
        ck_assert_uint_eq(serve_decode_poll(b, k, &q), 3);
}
END_TEST

START_TEST(test_send_metadata_example)
{
    uint8_t b[128];
    size_t n = unhex("33000000", b, sizeof(b));
    b[n++] = 0x02;
    b[n++] = 0x1a;
    memcpy(b + n, STREAM26, 26);
    n += 26;
    n += unhex("02 0b 736d6f6b652d746f706963 02 04 00000000 0a000000", b + n,
               sizeof(b) - n);
    ck_assert_uint_eq(n, 4 + 51);
    struct serve_send_meta m;
    ck_assert_uint_eq(serve_decode_send_meta(b, n, &m), 0);
    ck_assert_uint_eq(m.metadata_len, 51);
    ck_assert_uint_eq(m.partitioning_kind, 2);
    ck_assert_uint_eq(vs_load_u32(m.partitioning), 0);
    ck_assert_uint_eq(m.messages_count, 10);
    ck_assert_uint_eq(m.batch_off, 55);
    b[0] = 0x40; /* metadata_len beyond the body */
    ck_assert_uint_eq(serve_decode_send_meta(b, n, &m), 3);
}
END_TEST

static const char PERMS32[] = "00000101 01010101 0101 | 01 | 01000000 "
                              "010101010101 | 01 | 01000000 01010101 | 00 | 00";

START_TEST(test_create_user_permissions_example)
{
    uint8_t perms[64];
    size_t pn = unhex(PERMS32, perms, sizeof(perms));
    ck_assert_uint_eq(pn, 32);
    uint8_t b[128];
    size_t n = 0;
    b[n++] = 5;
    memcpy(b + n, "alice", 5);
    n += 5;
    b[n++] = 6;
    memcpy(b + n, "secret", 6);
    n += 6;
    b[n++] = 1; /* active */
    b[n++] = 1; /* has_perms */
    vs_store_u32(b + n, 32);
    n += 4;
    memcpy(b + n, perms, 32);
    n += 32;
    struct meta_op *op = new_op();
    struct serve_secrets sec;
    ck_assert_uint_eq(serve_decode_replicated(141, b, n, op, &sec), 0);
    ck_assert_str_eq(op->name, "alice");
    ck_assert_uint_eq(sec.pw_len, 6);
    ck_assert_str_eq(sec.pw, "secret");
    ck_assert_uint_eq(op->status, 1);
    ck_assert_uint_eq(op->has_perms, 1);
    ck_assert_uint_eq(op->perms_len, 32);
    ck_assert(memcmp(op->perms, perms, 32) == 0);
    /* perms_len that does not match the permissions: 3 */
    vs_store_u32(b + 15, 31);
    ck_assert_uint_eq(serve_decode_replicated(141, b, n - 1, op, &sec), 3);
    vs_store_u32(b + 15, 32);
    /* an option key: CreateUser's catalog is empty -> 4041 */
    uint8_t opt[] = {2, 1, 0, 0, 0, 'k', 2, 1, 0, 0, 0, 'v'};
    memcpy(b + n, opt, sizeof(opt));
    ck_assert_uint_eq(
        serve_decode_replicated(141, b, n + sizeof(opt), op, &sec), 4041);
    /* UpdatePermissions [user id][has_perms][len][perms] */
    n = 0;
    n += unhex("01 04 01000000 01 20000000", b, sizeof(b));
    memcpy(b + n, perms, 32);
    n += 32;
    ck_assert_uint_eq(serve_decode_replicated(145, b, n, op, &sec), 0);
    ck_assert_uint_eq(op->user.id, 1);
    ck_assert_uint_eq(op->perms_len, 32);
    free(op);
}
END_TEST

START_TEST(test_other_requests)
{
    struct meta_op *op = new_op();
    struct serve_secrets sec;
    uint8_t b[64];
    size_t n;
    /* ChangePassword [user id][cur][new] */
    n = unhex("02 04 69676779 | 04 6f6c6421 | 03 6e6577", b, sizeof(b));
    ck_assert_uint_eq(serve_decode_replicated(144, b, n, op, &sec), 0);
    ck_assert_str_eq(op->user.name, "iggy");
    ck_assert_str_eq(sec.pw, "old!");
    ck_assert_str_eq(sec.pw2, "new");
    /* UpdateUser [id][has_name 1][name][has_status 1][2] */
    n = unhex("01 04 01000000 01 03 626f62 01 02", b, sizeof(b));
    ck_assert_uint_eq(serve_decode_replicated(142, b, n, op, &sec), 0);
    ck_assert_uint_eq(op->has_name, 1);
    ck_assert_str_eq(op->name, "bob");
    ck_assert_uint_eq(op->has_status, 1);
    ck_assert_uint_eq(op->status, 2);
    /* has_name = 2 is "absent" */
    n = unhex("01 04 01000000 02 00", b, sizeof(b));
    ck_assert_uint_eq(serve_decode_replicated(142, b, n, op, &sec), 0);
    ck_assert_uint_eq(op->has_name, 0);
    ck_assert_uint_eq(op->has_status, 0);
    /* CreatePAT [name][expiry u64] */
    n = unhex("03 746f6b 0807000000000000", b, sizeof(b));
    ck_assert_uint_eq(serve_decode_replicated(146, b, n, op, &sec), 0);
    ck_assert_str_eq(op->name, "tok");
    ck_assert_uint_eq(op->expiry, 1800);
    ck_assert_uint_eq(serve_decode_replicated(146, b, n - 1, op, &sec), 3);
    /* Create/DeletePartitions: count 0 or > 1000 -> 2015 */
    n = unhex("01 04 00000000 01 04 00000000 00000000", b, sizeof(b));
    ck_assert_uint_eq(serve_decode_replicated(136, b, n, op, &sec), 2015);
    vs_store_u32(b + 12, 1001);
    ck_assert_uint_eq(serve_decode_replicated(137, b, n, op, &sec), 2015);
    vs_store_u32(b + 12, 3);
    ck_assert_uint_eq(serve_decode_replicated(136, b, n, op, &sec), 0);
    ck_assert_uint_eq(op->count, 3);
    /* CreateTopic with 1001 partitions -> 2015; 0 allowed */
    n = unhex("01 04 00000000 e9030000 01 74", b, sizeof(b));
    ck_assert_uint_eq(serve_decode_replicated(132, b, n, op, &sec), 2015);
    vs_store_u32(b + 6, 0);
    ck_assert_uint_eq(serve_decode_replicated(132, b, n, op, &sec), 0);
    /* ops this build does not propose -> 3 */
    ck_assert_uint_eq(serve_decode_replicated(138, b, n, op, &sec), 3);
    ck_assert_uint_eq(serve_decode_replicated(160, b, n, op, &sec), 3);
    free(op);
}
END_TEST

/* ---------------------------------------------------- golden: replies */

START_TEST(test_ping_reply)
{
    uint8_t h[256];
    sdk_header(h, 0, 2, 1, 0, 1);
    struct vs_hdr_request r;
    memcpy(&r, h, sizeof(r));
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    serve_reply_frame(&w, &r, 0, NULL, 0);
    ck_assert_uint_eq(w.len, 256);
    /* §3: size @48, command @60 = 8, operation @208 echoed, status @216 */
    ck_assert_uint_eq(vs_load_u32(w.data + 48), 256);
    ck_assert_uint_eq(w.data[60], 8);
    ck_assert_uint_eq(w.data[208], 2);
    ck_assert_uint_eq(vs_load_u32(w.data + 216), 0);
    /* masked: client @160..175, request @200..207 (echoed) */
    ck_assert(memcmp(w.data + 160, h + 128, 16) == 0);
    ck_assert_uint_eq(vs_load_u64(w.data + 200), 1);
    for (int i = 0; i < 256; i++) {
        int masked = (i >= 48 && i <= 51) || i == 60 ||
                     (i >= 160 && i <= 175) || (i >= 200 && i <= 208);
        if (!masked)
            ck_assert_uint_eq(w.data[i], 0);
    }
    /* a status reply: same frame, status @216, empty body */
    vs_wbuf_reset(&w);
    serve_reply_frame(&w, &r, 40, NULL, 0);
    ck_assert_uint_eq(vs_load_u32(w.data + 216), 40);
    ck_assert_uint_eq(w.len, 256);
    vs_wbuf_fini(&w);
}
END_TEST

START_TEST(test_eviction_incompatible)
{
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    struct vs_u128 cluster = {0x1111, 0x2222};
    struct vs_u128 client = {0xa7a6a5a4a3a2a1a0ull, 0xafaeadacabaaa9a8ull};
    serve_eviction_frame(&w, cluster, client, 14);
    ck_assert_uint_eq(w.len, 256);
    uint8_t exp[256];
    memset(exp, 0, sizeof(exp));
    memcpy(exp + 32, &cluster, 16);
    vs_store_u32(exp + 48, 256);
    exp[60] = 13;
    memcpy(exp + 128, &client, 16);
    vs_store_u32(exp + 144, 11264);
    vs_store_u32(exp + 148, 11264);
    exp[255] = 14;
    ck_assert(memcmp(w.data, exp, 256) == 0);
    vs_wbuf_fini(&w);
}
END_TEST

START_TEST(test_cluster_metadata_reply)
{
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    serve_wr_cluster_metadata(&w, "single-node", "iggy-node", "127.0.0.1",
                              8090);
    uint8_t exp[128];
    size_t n =
        unhex("0b000000 73696e676c652d6e6f6465 | 01000000 | "
              "09000000 696767792d6e6f6465 | 09000000 3132372e302e302e31 | "
              "9a1f 0000 0000 0000 | 00 | 00",
              exp, sizeof(exp));
    ck_assert_uint_eq(w.len, n);
    ck_assert(memcmp(w.data, exp, n) == 0);
    vs_wbuf_fini(&w);
}
END_TEST

/* GetReplicaStatus (vendor 9100): the layout of shard/serve/cluster.h,
 * the transfer trailer included, byte for byte; none before a report. */
START_TEST(test_replica_status_reply)
{
    struct serve_cluster sc;
    memset(&sc, 0, sizeof(sc));
    sc.clustered = 1;
    sc.self = 1;
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    serve_cluster_write_status(&sc, &w);
    uint8_t exp[512];
    size_t n = unhex("00000000 | 01 | ff | ff | 00000000 | 00000000 | "
                     "0000000000000000 0000000000000000 0000000000000000 "
                     "0000000000000000 | "
                     "00000000000000000000000000000000",
                     exp, sizeof(exp));
    ck_assert_uint_eq(w.len, n);
    ck_assert(memcmp(w.data, exp, n) == 0);
    vs_wbuf_reset(&w);

    sc.have = 1;
    struct fwd_cluster *v = &sc.v;
    v->count = 2;
    v->self = 1;
    v->vsr_status = 0;
    v->leader = 0;
    v->view = 3;
    v->log_view = 3;
    v->op = 10;
    v->commit_min = 9;
    v->commit_max = 10;
    v->checkpoint_op = 8;
    v->checkpoint_checksum.lo = 1;
    v->checkpoint_checksum.hi = 2;
    snprintf(v->nodes[0].client_addr, FWD_CLUSTER_ADDR_MAX, "a:1");
    v->nodes[0].role = 0;
    v->nodes[0].link = 3;
    v->nodes[0].bytes_in = 5;
    v->nodes[0].bytes_out = 6;
    snprintf(v->nodes[1].client_addr, FWD_CLUSTER_ADDR_MAX, "b:2");
    v->nodes[1].role = 1;
    v->nodes[1].link = 255;
    v->xfer.stage = 2;
    v->xfer.peer = 0;
    v->xfer.fetched = 100;
    v->xfer.total = 200;
    v->xfer.sessions = 2;
    v->xfer.completed = 1;
    v->xfer.last_bytes = 300;
    v->xfer.last_ms = 7;
    snprintf(v->xfer.last, FWD_XFER_LAST_MAX, "installed");
    serve_cluster_write_status(&sc, &w);
    n = unhex("02000000 | 01 | 00 | 00 | 03000000 | 03000000 | "
              "0a00000000000000 0900000000000000 0a00000000000000 "
              "0800000000000000 | "
              "0100000000000000 0200000000000000 | "
              /* node 0: addr, role, status, link, bytes in/out */
              "03000000 613a31 | 00 | 00 | 03 | 0500000000000000 "
              "0600000000000000 | "
              "03000000 623a32 | 01 | 00 | ff | 0000000000000000 "
              "0000000000000000 | "
              /* transfer: version, stage, peer, fetched, total,
               * sessions, completed, abandoned, last_bytes, last_ms,
               * last */
              "01 | 02 | 00 | 6400000000000000 c800000000000000 | "
              "0200000000000000 0100000000000000 0000000000000000 | "
              "2c01000000000000 0700000000000000 | "
              "09000000 696e7374616c6c6564",
              exp, sizeof(exp));
    ck_assert_uint_eq(w.len, n);
    ck_assert(memcmp(w.data, exp, n) == 0);
    vs_wbuf_fini(&w);
}
END_TEST

START_TEST(test_describe_options_reply)
{
    static const char *keys[8] = {"compression_algorithm",
                                  "message_expiry",
                                  "max_topic_size",
                                  "segment_size",
                                  "enforce_fsync",
                                  "messages_required_to_save",
                                  "size_of_messages_required_to_save",
                                  "preallocate_segments"};
    static const uint8_t kinds[8] = {2, 12, 12, 12, 3, 11, 12, 3};
    static const uint64_t defs[8] = {0, UINT64_MAX, UINT64_MAX, 1073741824,
                                     0, 1024,       1048576,    0};
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    serve_wr_describe_options(&w, 1);
    struct vs_rbuf r;
    vs_rbuf_init(&r, w.data, w.len);
    ck_assert_uint_eq(vs_rd_u32(&r), 8);
    for (int i = 0; i < 8; i++) {
        uint8_t kl = vs_rd_u8(&r);
        const uint8_t *k = vs_rd_bytes(&r, kl);
        ck_assert_uint_eq(kl, strlen(keys[i]));
        ck_assert(memcmp(k, keys[i], kl) == 0);
        ck_assert_uint_eq(vs_rd_u8(&r), kinds[i]);
        uint32_t dl = vs_rd_u32(&r);
        const uint8_t *d = vs_rd_bytes(&r, dl);
        if (i == 0) {
            ck_assert_uint_eq(dl, 4);
            ck_assert(memcmp(d, "none", 4) == 0);
        } else {
            uint64_t v = 0;
            memcpy(&v, d, dl);
            ck_assert_uint_eq(v, defs[i]);
        }
        uint32_t tl = vs_rd_u32(&r);
        const uint8_t *desc = vs_rd_bytes(&r, tl);
        ck_assert(desc != NULL);
        ck_assert(tl > 0 && meta_utf8_valid(desc, tl));
    }
    ck_assert_int_eq(r.err, 0);
    ck_assert_uint_eq(vs_rbuf_left(&r), 0);
    vs_wbuf_reset(&w);
    serve_wr_describe_options(&w, 2);
    ck_assert_uint_eq(w.len, 4);
    ck_assert_uint_eq(vs_load_u32(w.data), 0);
    vs_wbuf_fini(&w);
}
END_TEST

/* A state with root, one stream (the example's name) with one topic of 2
 * partitions, and a user "nobody" without permissions. */
static void *
golden_state(struct th_run *r)
{
    struct meta_caps caps;
    th_caps(&caps);
    void *st = th_state(&caps);
    th_run_init(r);
    ck_assert_uint_eq(th_genesis(st, r), 0);
    ck_assert_uint_eq(th_create_stream(st, r, 0, STREAM26), 0);
    ck_assert_uint_eq(th_create_topic(st, r, 0, 0, "smoke-topic", 2), 0);
    ck_assert_uint_eq(th_create_user(st, r, 0, "nobody", NULL, 0), 0);
    return st;
}

static uint32_t
do_read(const void *st, uint32_t user, uint32_t code, const char *hexbody,
        struct vs_wbuf *out)
{
    uint8_t b[64];
    size_t n = unhex(hexbody, b, sizeof(b));
    struct serve_read_req q;
    uint32_t e = serve_decode_read(code, b, n, &q);
    if (e != 0)
        return e;
    struct vs_config cfg;
    vs_config_init(&cfg);
    struct serve_client_info self = {.client_id = 7, .user_id = user};
    strcpy(self.address, "127.0.0.1:5000");
    struct serve_read_env env = {.cfg = &cfg, .user_id = user, .self = &self};
    vs_wbuf_reset(out);
    return serve_read(st, &env, &q, out);
}

START_TEST(test_read_records)
{
    struct th_run r;
    void *st = golden_state(&r);
    const struct meta_stream *s = meta_stream_by_id(st, 0);
    const struct meta_topic *t = meta_topic_by_id(st, 0, 0);
    const struct meta_user *root = meta_user_by_id(st, 0);
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(t);
    struct vs_wbuf w, e;
    vs_wbuf_init(&w);
    vs_wbuf_init(&e);

    /* GetStreams: StreamRecord x n, no count (§1.1) */
    ck_assert_uint_eq(do_read(st, 0, 201, "", &w), 0);
    vs_wr_u32(&e, 0);
    vs_wr_u64(&e, s->created_at); /* masked: created_at */
    vs_wr_u32(&e, 1);
    vs_wr_u64(&e, 0);
    vs_wr_u64(&e, 0);
    vs_wr_u8(&e, 26);
    vs_wr_bytes(&e, STREAM26, 26);
    vs_wr_u32(&e, 0);
    ck_assert_uint_eq(w.len, e.len);
    ck_assert(memcmp(w.data, e.data, e.len) == 0);

    /* GetTopic: TopicHeader + partitions; segments_count >= 1 in reads */
    uint8_t th[512];
    size_t thn = 0;
    vs_store_u32(th, 0);
    vs_store_u64(th + 4, t->created_at); /* masked */
    vs_store_u32(th + 12, 2);
    vs_store_u64(th + 16, UINT64_MAX);
    th[24] = 1;
    vs_store_u64(th + 25, UINT64_MAX);
    vs_store_u64(th + 33, 0);
    vs_store_u64(th + 41, 0);
    th[49] = 11;
    memcpy(th + 50, "smoke-topic", 11);
    thn = 61;
    vs_store_u32(th + thn, 0); /* explicit: none */
    thn += 4;
    /* derived: all 8 keys, sorted by key bytes */
    struct vs_wbuf d;
    vs_wbuf_init(&d);
    static const char *sorted[8] = {"compression_algorithm",
                                    "enforce_fsync",
                                    "max_topic_size",
                                    "message_expiry",
                                    "messages_required_to_save",
                                    "preallocate_segments",
                                    "segment_size",
                                    "size_of_messages_required_to_save"};
    for (int i = 0; i < 8; i++) {
        vs_wr_u8(&d, 2);
        vs_wr_u32(&d, (uint32_t)strlen(sorted[i]));
        vs_wr_bytes(&d, sorted[i], strlen(sorted[i]));
        switch (i) {
        case 0:
            vs_wr_u8(&d, 2);
            vs_wr_u32(&d, 4);
            vs_wr_bytes(&d, "none", 4);
            break;
        case 1:
        case 5:
            vs_wr_u8(&d, 3);
            vs_wr_u32(&d, 1);
            vs_wr_u8(&d, 0);
            break;
        case 4:
            vs_wr_u8(&d, 11);
            vs_wr_u32(&d, 4);
            vs_wr_u32(&d, 1024);
            break;
        default:
            vs_wr_u8(&d, 12);
            vs_wr_u32(&d, 8);
            vs_wr_u64(&d, i == 6   ? UINT64_C(1073741824)
                          : i == 7 ? UINT64_C(1048576)
                                   : UINT64_MAX);
        }
    }
    vs_store_u32(th + thn, (uint32_t)d.len);
    thn += 4;
    memcpy(th + thn, d.data, d.len);
    thn += d.len;
    vs_wbuf_fini(&d);
    ck_assert_uint_eq(do_read(st, 0, 300, "01 04 00000000 01 04 00000000", &w),
                      0);
    ck_assert_uint_eq(w.len, thn + 2 * 40);
    ck_assert(memcmp(w.data, th, thn) == 0);
    for (uint32_t p = 0; p < 2; p++) {
        const uint8_t *pr = w.data + thn + 40 * p;
        ck_assert_uint_eq(vs_load_u32(pr), p);
        ck_assert_uint_eq(vs_load_u32(pr + 12), 1); /* segments */
        for (int i = 16; i < 40; i++)
            ck_assert_uint_eq(pr[i], 0);
    }
    /* GetTopic by names */
    vs_wbuf_reset(&e);
    vs_wr_bytes(&e, w.data, w.len);
    {
        struct serve_read_req q;
        uint8_t b[64];
        size_t n = 0;
        b[n++] = 2;
        b[n++] = 26;
        memcpy(b + n, STREAM26, 26);
        n += 26;
        n += unhex("02 0b 736d6f6b652d746f706963", b + n, sizeof(b) - n);
        ck_assert_uint_eq(serve_decode_read(300, b, n, &q), 0);
        struct vs_config cfg;
        vs_config_init(&cfg);
        struct serve_client_info self = {0};
        struct serve_read_env env = {.cfg = &cfg, .user_id = 0, .self = &self};
        vs_wbuf_reset(&w);
        ck_assert_uint_eq(serve_read(st, &env, &q, &w), 0);
        ck_assert_uint_eq(w.len, e.len);
        ck_assert(memcmp(w.data, e.data, e.len) == 0);
    }
    /* GetTopics: [count] + headers; unknown stream -> 00000000 */
    ck_assert_uint_eq(do_read(st, 0, 301, "01 04 00000000", &w), 0);
    ck_assert_uint_eq(vs_load_u32(w.data), 1);
    ck_assert_uint_eq(w.len, 4 + thn);
    ck_assert(memcmp(w.data + 4, th, thn) == 0);
    ck_assert_uint_eq(do_read(st, 0, 301, "01 04 05000000", &w), 0);
    ck_assert_uint_eq(w.len, 4);
    ck_assert_uint_eq(vs_load_u32(w.data), 0);
    /* GetStream: StreamRecord + TopicHeaders (no partitions) */
    ck_assert_uint_eq(do_read(st, 0, 200, "01 04 00000000", &w), 0);
    ck_assert_uint_eq(w.len, 33 + 26 + 4 + thn);
    ck_assert(memcmp(w.data + 63, th, thn) == 0);

    /* not found on single-object reads: status 0, empty body */
    ck_assert_uint_eq(do_read(st, 0, 200, "01 04 09000000", &w), 0);
    ck_assert_uint_eq(w.len, 0);
    ck_assert_uint_eq(do_read(st, 0, 300, "01 04 00000000 01 04 07000000", &w),
                      0);
    ck_assert_uint_eq(w.len, 0);
    ck_assert_uint_eq(do_read(st, 0, 31, "02 03 626f62", &w), 0);
    ck_assert_uint_eq(w.len, 0);

    /* GetUsers: UserRecord x n, root first (§2.1) */
    ck_assert_uint_eq(do_read(st, 0, 32, "", &w), 0);
    vs_wbuf_reset(&e);
    vs_wr_u32(&e, 0);
    vs_wr_u64(&e, root->created_at); /* masked */
    vs_wr_u8(&e, 1);
    vs_wr_u8(&e, 4);
    vs_wr_bytes(&e, "iggy", 4);
    vs_wr_u32(&e, 0);
    ck_assert_uint_ge(w.len, e.len);
    ck_assert(memcmp(w.data, e.data, e.len) == 0);
    /* GetUser(nobody) -> UserDetails without permissions: 00000000 */
    ck_assert_uint_eq(do_read(st, 0, 31, "02 06 6e6f626f6479", &w), 0);
    ck_assert_uint_eq(w.len, 4 + 8 + 1 + 1 + 6 + 4 + 4);
    ck_assert_uint_eq(vs_load_u32(w.data + w.len - 4), 0);

    /* GetMe: ClientDetails of the caller: 17 + address bytes */
    ck_assert_uint_eq(do_read(st, 0, 20, "", &w), 0);
    vs_wbuf_reset(&e);
    vs_wr_u32(&e, 7);
    vs_wr_u32(&e, 0);
    vs_wr_u8(&e, 1);
    vs_wr_u32(&e, 14);
    vs_wr_bytes(&e, "127.0.0.1:5000", 14);
    vs_wr_u32(&e, 0);
    ck_assert_uint_eq(w.len, e.len);
    ck_assert(memcmp(w.data, e.data, e.len) == 0);

    /* authorization: a user without permissions -> 41; own record ok */
    ck_assert_uint_eq(do_read(st, 1, 201, "", &w), 41);
    ck_assert_uint_eq(do_read(st, 1, 200, "01 04 00000000", &w), 41);
    ck_assert_uint_eq(do_read(st, 1, 300, "01 04 00000000 01 04 00000000", &w),
                      41);
    ck_assert_uint_eq(do_read(st, 1, 32, "", &w), 41);
    ck_assert_uint_eq(do_read(st, 1, 10, "", &w), 41);
    ck_assert_uint_eq(do_read(st, 1, 22, "", &w), 41);
    ck_assert_uint_eq(do_read(st, 1, 31, "01 04 00000000", &w), 41);
    ck_assert_uint_eq(do_read(st, 1, 31, "01 04 01000000", &w), 0);
    ck_assert_uint_gt(w.len, 0);
    ck_assert_uint_eq(do_read(st, 1, 20, "", &w), 0);
    ck_assert_uint_eq(do_read(st, 1, 41, "", &w), 0);
    ck_assert_uint_eq(w.len, 0); /* no PATs */
    ck_assert_uint_eq(do_read(st, 1, 13, "01", &w), 0);
    ck_assert_uint_eq(do_read(st, 1, 12, "", &w), 0);
    /* GetStats (root): fixed part 108 bytes then 4 strings */
    ck_assert_uint_eq(do_read(st, 0, 10, "", &w), 0);
    ck_assert_uint_gt(w.len, 108 + 16);
    ck_assert_uint_eq(vs_load_u32(w.data + 76), 1); /* streams */
    ck_assert_uint_eq(vs_load_u32(w.data + 80), 1); /* topics */
    ck_assert_uint_eq(vs_load_u32(w.data + 84), 2); /* partitions */

    /* GetTopicReplicas (vstream's 9102): one node, factor 1 */
    ck_assert_uint_eq(do_read(st, 0, 9102, "01 04 00000000 01 04 00000000", &w),
                      0);
    vs_wbuf_reset(&e);
    vs_wr_u32(&e, 0); /* stream */
    vs_wr_u32(&e, 0); /* topic */
    vs_wr_u8(&e, 1);  /* replication factor */
    vs_wr_u8(&e, 1);  /* nodes */
    vs_wr_u32(&e, 2);
    for (uint32_t p = 0; p < 2; p++) {
        vs_wr_u32(&e, p);
        vs_wr_u64(&e, meta_group_id(0, 0, p));
        vs_wr_u8(&e, 1);
        vs_wr_u8(&e, 0); /* the set: node 0 */
        vs_wr_u8(&e, 0); /* primary in view 0 */
    }
    ck_assert_uint_eq(w.len, e.len);
    ck_assert(memcmp(w.data, e.data, e.len) == 0);
    ck_assert_uint_eq(do_read(st, 0, 9102, "01 04 00000000 01 04 07000000", &w),
                      0);
    ck_assert_uint_eq(w.len, 0);
    ck_assert_uint_eq(do_read(st, 1, 9102, "01 04 00000000 01 04 00000000", &w),
                      41);
    ck_assert_uint_eq(do_read(st, 0, 9102, "01 04 00000000", &w), 3);

    vs_wbuf_fini(&w);
    vs_wbuf_fini(&e);
    meta_result_fini(&r.res);
    free(st);
}
END_TEST

START_TEST(test_register_reply_layout)
{
    /* The Register reply is built by shard 0 (meta_apply + the result
     * section); checked here against §5.1/§8 with session and
     * server_version masked. */
    struct th_run r;
    void *st = golden_state(&r);
    struct meta_op *op = new_op();
    meta_op_init(op, VS_OP_REGISTER);
    op->user_id = 0;
    ck_assert_uint_eq(th_apply_full(st, &r, 0, th_client(99), 0, op), 0);
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    meta_reply_body_write(0, r.res.payload.data, r.res.payload.len, &w);
    uint8_t exp[64];
    size_t n = unhex("00000000 | 00000000 | 0000000000000000 | 002c0000 | 0c",
                     exp, sizeof(exp));
    vs_store_u64(exp + 8, r.op); /* masked: session */
    ck_assert_uint_eq(w.len, n + 12);
    ck_assert(memcmp(w.data, exp, n) == 0);
    ck_assert_uint_gt(vs_load_u64(w.data + 8), 0);
    vs_wbuf_fini(&w);
    free(op);
    meta_result_fini(&r.res);
    free(st);
}
END_TEST

/* ------------------------------------------------------- error paths */

START_TEST(test_ident_errors)
{
    static const char *bad[] = {
        "",                       /* empty */
        "01",                     /* kind only */
        "01 04 000000",           /* numeric truncated */
        "01 03 000000",           /* numeric len 3 */
        "01 08 0000000000000000", /* numeric len 8 */
        "00 04 00000000",         /* kind 0 */
        "03 04 00000000",         /* kind 3 */
        "02 00",                  /* empty name */
        "02 03 6162",             /* name truncated */
        "02 02 ff fe",            /* bad UTF-8 */
        "02 03 ed a0 80",         /* surrogate */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint8_t b[32];
        size_t n = unhex(bad[i], b, sizeof(b));
        struct vs_rbuf r;
        vs_rbuf_init(&r, b, n);
        struct meta_ident id;
        ck_assert_msg(serve_rd_ident(&r, &id) == 3, "case %zu", i);
    }
    uint8_t b[8];
    size_t n = unhex("02 02 c3a9", b, sizeof(b)); /* "é" */
    struct vs_rbuf r;
    vs_rbuf_init(&r, b, n);
    struct meta_ident id;
    ck_assert_uint_eq(serve_rd_ident(&r, &id), 0);
    ck_assert_uint_eq(id.len, 2);
}
END_TEST

START_TEST(test_login_errors)
{
    uint8_t b[64];
    size_t n =
        unhex("002c0000 08 6e6f64652d73646b 0d 302e31302e302d656467652e34 "
              "04 69676779 04 69676779 00000000",
              b, sizeof(b));
    struct serve_login l;
    /* prefix truncations: -EPROTO (Eviction 15) */
    for (size_t k = 0; k < 4 + 1 + 8 + 1 + 13; k++)
        ck_assert_int_eq(serve_login_decode(b, k, &l), -EPROTO);
    /* later truncations: the prefix decodes, no shape parses */
    for (size_t k = 27; k < n; k++) {
        ck_assert_int_eq(serve_login_decode(b, k, &l), 0);
        ck_assert(!l.pw_shape);
        ck_assert(!l.pat_shape);
    }
    /* ulen 0 is not a password shape */
    b[27] = 0;
    ck_assert_int_eq(serve_login_decode(b, n, &l), 0);
    ck_assert(!l.pw_shape);
}
END_TEST

static uint32_t
opts(const char *hex, enum serve_opt_scope scope, uint32_t parts,
     struct meta_topic_opts *o)
{
    uint8_t b[512];
    size_t n = unhex(hex, b, sizeof(b));
    return serve_options_parse(b, n, scope, parts, o);
}

/* key "segment_size" as a TLV: 02 0c000000 + bytes */
#define K_SEG  "02 0c000000 7365676d656e745f73697a65"
#define K_COMP "02 15000000 636f6d7072657373696f6e5f616c676f726974686d"
#define K_EXP  "02 0e000000 6d6573736167655f657870697279"
#define K_MAX  "02 0e000000 6d61785f746f7069635f73697a65"

/* vstream's create-only key replication_factor */
#define K_RF "02 12000000 7265706c69636174696f6e5f666163746f72"

START_TEST(test_options_replication_factor)
{
    struct meta_topic_opts o;
    ck_assert_uint_eq(opts("", SERVE_OPT_TOPIC_CREATE, 1, &o), 0);
    ck_assert_uint_eq(o.replication_factor, 0);
    ck_assert_uint_eq(
        opts(K_RF " 09 01000000 02", SERVE_OPT_TOPIC_CREATE, 1, &o), 0);
    ck_assert_uint_eq(o.replication_factor, 2);
    ck_assert_uint_eq(o.explicit_mask, 0); /* never echoed */
    ck_assert_uint_eq(
        opts(K_RF " 0b 04000000 03000000", SERVE_OPT_TOPIC_CREATE, 1, &o), 0);
    ck_assert_uint_eq(o.replication_factor, 3);
    ck_assert_uint_eq(opts(K_RF " 0c 08000000 2000000000000000",
                           SERVE_OPT_TOPIC_CREATE, 1, &o),
                      0);
    ck_assert_uint_eq(o.replication_factor, 32);
    ck_assert_uint_eq(
        opts(K_RF " 02 01000000 31", SERVE_OPT_TOPIC_CREATE, 1, &o), 0);
    ck_assert_uint_eq(o.replication_factor, 1);
    ck_assert_uint_eq(
        opts(K_RF " 09 01000000 00", SERVE_OPT_TOPIC_CREATE, 1, &o), 0);
    ck_assert_uint_eq(o.replication_factor, 0);
    /* more than any cluster: 2018; not a count: 4042 */
    ck_assert_uint_eq(
        opts(K_RF " 09 01000000 21", SERVE_OPT_TOPIC_CREATE, 1, &o), 2018);
    ck_assert_uint_eq(
        opts(K_RF " 0b 04000000 00010000", SERVE_OPT_TOPIC_CREATE, 1, &o),
        2018);
    ck_assert_uint_eq(
        opts(K_RF " 02 01000000 78", SERVE_OPT_TOPIC_CREATE, 1, &o), 4042);
    ck_assert_uint_eq(
        opts(K_RF " 02 02000000 2d31", SERVE_OPT_TOPIC_CREATE, 1, &o), 4042);
    ck_assert_uint_eq(
        opts(K_RF " 03 01000000 01", SERVE_OPT_TOPIC_CREATE, 1, &o), 4042);
    ck_assert_uint_eq(
        opts(K_RF " 09 02000000 0100", SERVE_OPT_TOPIC_CREATE, 1, &o), 4042);
    /* UpdateTopic cannot change it; streams and users know no key */
    ck_assert_uint_eq(
        opts(K_RF " 09 01000000 02", SERVE_OPT_TOPIC_UPDATE, 0, &o), 4041);
    ck_assert_uint_eq(opts(K_RF " 09 01000000 02", SERVE_OPT_EMPTY, 0, &o),
                      4041);
}
END_TEST

START_TEST(test_options)
{
    struct meta_topic_opts o;
    ck_assert_uint_eq(opts("", SERVE_OPT_TOPIC_CREATE, 1, &o), 0);
    ck_assert_uint_eq(o.explicit_mask, 0);
    /* gzip by string, any case */
    ck_assert_uint_eq(
        opts(K_COMP " 02 04000000 475a4950", SERVE_OPT_TOPIC_CREATE, 1, &o), 0);
    ck_assert_uint_eq(o.compression, 2);
    ck_assert_uint_eq(o.explicit_mask, META_TOPT_COMPRESSION);
    /* Uint8 2 also gzip; 3 -> 4042 */
    ck_assert_uint_eq(
        opts(K_COMP " 09 01000000 02", SERVE_OPT_TOPIC_CREATE, 1, &o), 0);
    ck_assert_uint_eq(
        opts(K_COMP " 09 01000000 03", SERVE_OPT_TOPIC_CREATE, 1, &o), 4042);
    /* expiry as humantime "1h" and as Uint64 */
    ck_assert_uint_eq(
        opts(K_EXP " 02 02000000 3168", SERVE_OPT_TOPIC_CREATE, 1, &o), 0);
    ck_assert_uint_eq(o.message_expiry, UINT64_C(3600000000));
    ck_assert_uint_eq(o.explicit_mask, META_TOPT_MESSAGE_EXPIRY);
    ck_assert_uint_eq(opts(K_EXP " 0c 08000000 0000000000000000",
                           SERVE_OPT_TOPIC_CREATE, 1, &o),
                      0);
    /* 0 = default: never, and not explicit */
    ck_assert_uint_eq(o.message_expiry, UINT64_MAX);
    ck_assert_uint_eq(o.explicit_mask, 0);
    /* segment size rules */
    ck_assert_uint_eq(opts(K_SEG " 0c 08000000 0000100000000000",
                           SERVE_OPT_TOPIC_CREATE, 1, &o),
                      0);
    ck_assert_uint_eq(o.segment_size, UINT64_C(1048576));
    ck_assert_uint_eq(opts(K_SEG " 0c 08000000 e803000000000000",
                           SERVE_OPT_TOPIC_CREATE, 1, &o),
                      4042);
    ck_assert_uint_eq(
        opts(K_SEG " 02 05000000 32204d6942", SERVE_OPT_TOPIC_CREATE, 1, &o),
        0); /* "2 MiB" */
    ck_assert_uint_eq(o.segment_size, UINT64_C(2097152));
    /* max_topic_size below the segment size -> 1019 */
    ck_assert_uint_eq(opts(K_MAX " 0c 08000000 0000100000000000",
                           SERVE_OPT_TOPIC_CREATE, 1, &o),
                      1019);
    /* unknown key -> 4041; stream scope: any key -> 4041 */
    ck_assert_uint_eq(opts("02 03000000 666f6f 02 01000000 31",
                           SERVE_OPT_TOPIC_CREATE, 1, &o),
                      4041);
    ck_assert_uint_eq(
        opts(K_COMP " 02 04000000 677a6970", SERVE_OPT_EMPTY, 1, &o), 4041);
    /* update accepts only compression, expiry, max size; 0 stays 0 */
    ck_assert_uint_eq(opts(K_SEG " 0c 08000000 0000100000000000",
                           SERVE_OPT_TOPIC_UPDATE, 1, &o),
                      4041);
    ck_assert_uint_eq(opts(K_EXP " 0c 08000000 0000000000000000",
                           SERVE_OPT_TOPIC_UPDATE, 1, &o),
                      0);
    ck_assert_uint_eq(o.message_expiry, 0);
    ck_assert_uint_eq(o.explicit_mask, META_TOPT_MESSAGE_EXPIRY);
    /* malformed blocks -> 3 */
    static const char *bad[] = {
        K_COMP,                          /* key without value */
        "03 01000000 61 02 01000000 62", /* key not a string */
        "02 00000000 02 01000000 62",    /* key len 0 */
        "00 01000000 61 02 01000000 62", /* kind 0 */
        "02 01000000 61 02 00010000 62", /* value len 256 */
        "02 05000000 6162",              /* truncated */
        K_COMP " 02 04000000 677a6970 " K_COMP " 02 04000000 677a6970",
        /* duplicate key */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(opts(bad[i], SERVE_OPT_TOPIC_CREATE, 1, &o) == 3,
                      "case %zu", i);
    /* preallocation: segment x partitions <= 64 GiB */
    ck_assert_uint_eq(
        opts("02 14000000 707265616c6c6f636174655f7365676d656e7473 03 "
             "01000000 01",
             SERVE_OPT_TOPIC_CREATE, 65, &o),
        4042);
    ck_assert_uint_eq(
        opts("02 14000000 707265616c6c6f636174655f7365676d656e7473 03 "
             "01000000 01",
             SERVE_OPT_TOPIC_CREATE, 64, &o),
        0);
}
END_TEST

START_TEST(test_human_parsers)
{
    uint64_t v;
    ck_assert_int_eq(serve_parse_duration_us("1h 30m", 6, &v), 0);
    ck_assert_uint_eq(v, UINT64_C(5400000000));
    ck_assert_int_eq(serve_parse_duration_us("100ms", 5, &v), 0);
    ck_assert_uint_eq(v, 100000);
    ck_assert_int_eq(serve_parse_duration_us("15 s", 4, &v), 0);
    ck_assert_uint_eq(v, 15000000);
    ck_assert_int_ne(serve_parse_duration_us("", 0, &v), 0);
    ck_assert_int_ne(serve_parse_duration_us("5", 1, &v), 0);
    ck_assert_int_ne(serve_parse_duration_us("5 parsecs", 9, &v), 0);
    ck_assert_int_ne(serve_parse_duration_us("99999999999999999999s", 21, &v),
                     0);
    ck_assert_int_eq(serve_parse_size("1 GB", 4, &v), 0);
    ck_assert_uint_eq(v, UINT64_C(1000000000));
    ck_assert_int_eq(serve_parse_size("512MiB", 6, &v), 0);
    ck_assert_uint_eq(v, UINT64_C(536870912));
    ck_assert_int_eq(serve_parse_size("4096", 4, &v), 0);
    ck_assert_uint_eq(v, 4096);
    ck_assert_int_ne(serve_parse_size("GB", 2, &v), 0);
    ck_assert_int_ne(serve_parse_size("1 XB", 4, &v), 0);
    ck_assert_int_ne(serve_parse_size("99999999999 TiB", 15, &v), 0);
}
END_TEST

START_TEST(test_read_decode_errors)
{
    struct serve_read_req q;
    uint8_t b[4] = {0, 4, 1, 2};
    ck_assert_uint_eq(serve_decode_read(13, b, 1, &q), 3); /* scope 0 */
    b[0] = 4;
    ck_assert_uint_eq(serve_decode_read(13, b, 1, &q), 3); /* scope 4 */
    ck_assert_uint_eq(serve_decode_read(13, b, 0, &q), 3);
    ck_assert_uint_eq(serve_decode_read(21, b, 3, &q), 3);
    ck_assert_uint_eq(serve_decode_read(200, b, 0, &q), 3);
    ck_assert_uint_eq(serve_decode_read(60001, b, 0, &q), 3);
}
END_TEST

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t
rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

START_TEST(test_random_bytes)
{
    static const unsigned ops[] = {3,   128, 129, 130, 131, 132, 133, 134, 135,
                                   136, 137, 138, 139, 140, 141, 142, 143, 144,
                                   145, 146, 147, 148, 149, 160, 0,   255};
    static const uint32_t codes[] = {10,  12,  13,  20,  21,  22,
                                     31,  32,  41,  200, 201, 300,
                                     301, 600, 601, 606, 100, 9999};
    struct meta_op *op = new_op();
    struct serve_secrets sec;
    uint8_t b[96];
    uint32_t errors = 0;
    for (int it = 0; it < 3000; it++) {
        size_t n = rnd() % sizeof(b);
        for (size_t i = 0; i < n; i++)
            b[i] = (uint8_t)rnd();
        /* bias identifiers towards valid kinds to reach deeper fields */
        if (n > 2 && (it & 1)) {
            b[0] = 1 + (rnd() & 1);
            b[1] = b[0] == 1 ? 4 : (uint8_t)(rnd() % 8);
        }
        for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
            uint32_t e = serve_decode_replicated(ops[k], b, n, op, &sec);
            ck_assert(e == 0 || e == 3 || e == 4041 || e == 4042 || e == 2015 ||
                      e == 1019);
            errors += e != 0;
        }
        for (size_t k = 0; k < sizeof(codes) / sizeof(codes[0]); k++) {
            struct serve_read_req q;
            uint32_t e = serve_decode_read(codes[k], b, n, &q);
            ck_assert(e == 0 || e == 3);
        }
        struct serve_login l;
        int rc = serve_login_decode(b, n, &l);
        ck_assert(rc == 0 || rc == -EPROTO);
        struct serve_poll_req pq;
        (void)serve_decode_poll(b, n, &pq);
        struct serve_send_meta sm;
        (void)serve_decode_send_meta(b, n, &sm);
        struct meta_topic_opts o;
        uint32_t e = serve_options_parse(b, n, SERVE_OPT_TOPIC_CREATE, 1, &o);
        ck_assert(e == 0 || e == 3 || e == 4041 || e == 4042 || e == 1019 ||
                  e == 2018);
    }
    ck_assert_uint_gt(errors, 1000);
    free(op);
}
END_TEST

/* ------------------------------------------------------------ hasher */

struct hdone {
    int n;
    uint64_t order[8];
    int result[8];
    char out[8][META_PWHASH_MAX];
    struct event_base *base;
};

static void
hasher_done(void *ctx, struct serve_hash_job *j)
{
    struct hdone *d = ctx;
    ck_assert_int_lt(d->n, 8);
    d->order[d->n] = j->conn_id;
    d->result[d->n] = j->result;
    memcpy(d->out[d->n], j->out, META_PWHASH_MAX);
    /* the plaintext was wiped by the worker */
    for (size_t i = 0; i < sizeof(j->pw); i++)
        ck_assert_uint_eq((uint8_t)j->pw[i], 0);
    d->n++;
    serve_hash_job_free(j);
    if (d->n == 4)
        event_base_loopbreak(d->base);
}

START_TEST(test_hasher)
{
    ck_assert_int_eq(meta_secrets_init(), 0);
    char phc[META_PWHASH_MAX];
    ck_assert_int_eq(meta_password_hash("pw-1", 4, 1, 8192, phc), 0);
    struct event_base *base = event_base_new();
    struct hdone d = {.base = base};
    struct serve_hasher *h =
        serve_hasher_create(base, 1, 8192, hasher_done, &d);
    ck_assert_ptr_nonnull(h);
    struct serve_hash_job *j = serve_hash_job_new(SERVE_HASH_VERIFY);
    j->conn_id = 1;
    strcpy(j->phc, phc);
    memcpy(j->pw, "pw-1", 4);
    j->pw_len = 4;
    serve_hasher_submit(h, j);
    j = serve_hash_job_new(SERVE_HASH_VERIFY);
    j->conn_id = 2;
    strcpy(j->phc, phc);
    memcpy(j->pw, "pw-2", 4);
    j->pw_len = 4;
    serve_hasher_submit(h, j);
    j = serve_hash_job_new(SERVE_HASH_MAKE);
    j->conn_id = 3;
    memcpy(j->pw, "new", 3);
    j->pw_len = 3;
    serve_hasher_submit(h, j);
    j = serve_hash_job_new(SERVE_HASH_VERIFY_MAKE);
    j->conn_id = 4;
    strcpy(j->phc, phc);
    memcpy(j->pw, "pw-1", 4);
    j->pw_len = 4;
    memcpy(j->pw2, "pw-3", 4);
    j->pw2_len = 4;
    serve_hasher_submit(h, j);
    /* bounded: the loop breaks after 4 completions or 60 s */
    struct timeval tv = {60, 0};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
    ck_assert_int_eq(d.n, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(d.order[i], (uint64_t)i + 1); /* FIFO */
    ck_assert_int_eq(d.result[0], 0);
    ck_assert_int_eq(d.result[1], -EACCES);
    ck_assert_int_eq(d.result[2], 0);
    ck_assert_int_eq(meta_password_verify(d.out[2], "new", 3), 0);
    ck_assert_int_eq(d.result[3], 0);
    ck_assert_int_eq(meta_password_verify(d.out[3], "pw-3", 4), 0);
    ck_assert_uint_eq(serve_hasher_pending(h), 0);
    /* destroy with work still queued: freed, no callback */
    j = serve_hash_job_new(SERVE_HASH_MAKE);
    j->conn_id = 5;
    serve_hasher_submit(h, j);
    serve_hasher_destroy(h);
    ck_assert_int_eq(d.n, 4);
    event_base_free(base);
}
END_TEST

static Suite *
serve_suite(void)
{
    Suite *s = suite_create("serve_golden");
    TCase *g = tcase_create("golden");
    tcase_add_test(g, test_header_example);
    tcase_add_test(g, test_frame_check);
    tcase_add_test(g, test_code_table);
    tcase_add_test(g, test_login_example);
    tcase_add_test(g, test_login_pat_example);
    tcase_add_test(g, test_create_stream_example);
    tcase_add_test(g, test_create_topic_example);
    tcase_add_test(g, test_delete_stream_and_topic_examples);
    tcase_add_test(g, test_poll_example);
    tcase_add_test(g, test_send_metadata_example);
    tcase_add_test(g, test_create_user_permissions_example);
    tcase_add_test(g, test_other_requests);
    tcase_add_test(g, test_ping_reply);
    tcase_add_test(g, test_eviction_incompatible);
    tcase_add_test(g, test_cluster_metadata_reply);
    tcase_add_test(g, test_replica_status_reply);
    tcase_add_test(g, test_describe_options_reply);
    tcase_add_test(g, test_read_records);
    tcase_add_test(g, test_register_reply_layout);
    suite_add_tcase(s, g);
    TCase *e = tcase_create("errors");
    tcase_add_test(e, test_ident_errors);
    tcase_add_test(e, test_login_errors);
    tcase_add_test(e, test_options);
    tcase_add_test(e, test_options_replication_factor);
    tcase_add_test(e, test_human_parsers);
    tcase_add_test(e, test_read_decode_errors);
    tcase_add_test(e, test_random_bytes);
    suite_add_tcase(s, e);
    TCase *h = tcase_create("hasher");
    tcase_set_timeout(h, 120);
    tcase_add_test(h, test_hasher);
    suite_add_tcase(s, h);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(serve_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
