/*
 * shard/serve/proto.h - the client protocol's pure parts on a data shard:
 * the command-code table, request body decoders for every command the
 * shard serves, and the reply / eviction frame encoders
 * (iggy-client-protocol.md, iggy-client-protocol-2.md).
 *
 * Decoders read through struct vs_rbuf (never out of bounds) and return
 * an Iggy error code for the reply header status: 0 = decoded, 3 =
 * undecodable (truncated, bad identifier kind or length, empty name, bad
 * UTF-8), 4041/4042/2015/1019 for option and count rules (protocol-2
 * §10, §12). Trailing bytes are ignored except where an options block runs
 * to the end of the body. Replicated request bodies decode straight into
 * a struct meta_op (shard/meta/ops.h); plaintext passwords go to struct
 * serve_secrets and never into the op.
 *
 * Callers: data shards (any thread: pure functions), tests.
 */
#ifndef VS_SHARD_SERVE_PROTO_H
#define VS_SHARD_SERVE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"
#include "shard/meta/ops.h"

/* Legacy command codes (header u32 @196 when operation = 2). */
enum serve_code {
    SERVE_C_PING = 1,
    SERVE_C_GET_STATS = 10,
    SERVE_C_GET_SNAPSHOT = 11,
    SERVE_C_GET_CLUSTER = 12,
    SERVE_C_DESCRIBE_OPTIONS = 13,
    SERVE_C_GET_ME = 20,
    SERVE_C_GET_CLIENT = 21,
    SERVE_C_GET_CLIENTS = 22,
    SERVE_C_GET_USER = 31,
    SERVE_C_GET_USERS = 32,
    SERVE_C_LOGIN_USER = 38,
    SERVE_C_LOGOUT = 39,
    SERVE_C_LOGIN_REGISTER = 40,
    SERVE_C_GET_PATS = 41,
    SERVE_C_LOGIN_PAT = 44,
    SERVE_C_LOGIN_REGISTER_PAT = 45,
    SERVE_C_POLL = 100,
    SERVE_C_FLUSH = 102,
    SERVE_C_GET_OFFSET = 120,
    SERVE_C_GET_STREAM = 200,
    SERVE_C_GET_STREAMS = 201,
    SERVE_C_GET_TOPIC = 300,
    SERVE_C_GET_TOPICS = 301,
    SERVE_C_GET_GROUP = 600,
    SERVE_C_GET_GROUPS = 601,
    SERVE_C_SYNC_GROUP = 606,
    /* vstream's own read (NonReplicated, login needed; Iggy's SDKs never
     * send it): a topic's replica sets, body [stream id][topic id] like
     * GetTopic; reply (reads.h) or empty for an unknown topic */
    SERVE_C_GET_TOPIC_REPLICAS = 9102,
};

/* How the server answers a NonReplicated code (protocol-2 §7). */
enum serve_nr_class {
    SERVE_NR_UNKNOWN = 0,  /* H 3 after login */
    SERVE_NR_PING,         /* status 0, empty body, even before login */
    SERVE_NR_LEGACY_LOGIN, /* 38, 44: Eviction 15 */
    SERVE_NR_REPLICATED,   /* a replicated command code: H 5 */
    SERVE_NR_NO_HANDLER,   /* 39, 40, 45 as NR: status 0, empty body */
    SERVE_NR_READ,         /* served from the published state */
    SERVE_NR_UNAVAILABLE,  /* FlushUnsavedBuffers: H 5 */
    SERVE_NR_UNSUPPORTED,  /* known, not served by this build: H 3 */
};
enum serve_nr_class serve_nr_classify(uint32_t code);

/* The header operation an Iggy SDK uses for a command code (1, 2, 3,
 * 128..149, 160..162); 2 for every other code. */
unsigned serve_code_operation(uint32_t code);

/* Per-operation body limit class: 1 if the request is a message-plane
 * frame (SendMessages, or NR PollMessages) limited by max_message_body,
 * else 0 (max_metadata_body). */
int serve_is_message_plane(unsigned operation, uint32_t command_code);

/* ---- request framing ---- */

/* What the bytes buffered on a connection hold, judged by the first 256
 * (h) and how many there are (have >= 256). */
enum serve_frame_verdict {
    SERVE_FRAME_NEED_MORE = 0, /* a valid header; the body is not all in */
    SERVE_FRAME_COMPLETE,      /* a whole request frame of *size bytes */
    SERVE_FRAME_GARBAGE,       /* size < 256 or not a request: close */
    SERVE_FRAME_OVERSIZED,     /* body over its limit (*limit): evict */
};
/* The body limit is max_message_body for the message plane
 * (serve_is_message_plane), max_metadata_body otherwise. *size gets the
 * frame size for COMPLETE and NEED_MORE; *limit the limit applied. */
enum serve_frame_verdict serve_frame_check(const struct vs_hdr_request *h,
                                           size_t have,
                                           uint32_t max_metadata_body,
                                           uint32_t max_message_body,
                                           uint32_t *size, uint32_t *limit);

/* ---- common encodings ---- */

/* Identifier [kind u8][len u8][value]: kind 1 len 4, kind 2 len 1..255
 * valid UTF-8. 0 or 3. */
uint32_t serve_rd_ident(struct vs_rbuf *r, struct meta_ident *id);
/* Name [len u8 1..255][UTF-8 bytes] into a NUL-terminated buffer of
 * META_NAME_MAX + 1 bytes. 0 or 3. */
uint32_t serve_rd_name(struct vs_rbuf *r, char *name, uint8_t *len);

/* ---- Register (operation 1) ---- */

struct serve_login {
    uint32_t protocol_version;
    uint8_t sdk_name_len, sdk_version_len;
    const uint8_t *sdk_name, *sdk_version;
    /* password shape [ulen u8][user][plen u8][pw][ctx_len u32][ctx] */
    int pw_shape;
    uint8_t ulen, plen;
    const char *username, *password;
    /* PAT shape [tlen u8][token][ctx_len u32][ctx] */
    int pat_shape;
    uint8_t tlen;
    const char *token;
};
/* Decodes the ClientVersionInfo prefix and tries both shapes (pointers
 * borrow from body). 0, or -EPROTO when the prefix does not decode
 * (Eviction 15). */
int serve_login_decode(const uint8_t *body, size_t len, struct serve_login *l);
/* Protocol window (protocol-2 §8): v >= 11264 && (v >> 10) <= 11. */
int serve_version_ok(uint32_t v);

/* ---- replicated requests (operations 3, 128..149) ---- */

struct serve_secrets {
    uint8_t pw_len, pw2_len;
    char pw[256];  /* CreateUser: password; ChangePassword: current */
    char pw2[256]; /* ChangePassword: new */
};
/* Decodes the client body of a replicated operation into op
 * (meta_op_init(op, operation) first; op->perms borrows from body).
 * Returns 0 or the header status. 3 also for operations this build does
 * not propose (DeleteSegments, partition plane). */
uint32_t serve_decode_replicated(unsigned operation, const uint8_t *body,
                                 size_t len, struct meta_op *op,
                                 struct serve_secrets *sec);

/* ---- NonReplicated reads ---- */

struct serve_read_req {
    uint32_t code;
    struct meta_ident stream, topic, group, user;
    uint32_t client_id;
    uint8_t scope; /* DescribeOptions */
};
/* Decodes the body of a read code (SERVE_NR_READ). 0 or 3. */
uint32_t serve_decode_read(uint32_t code, const uint8_t *body, size_t len,
                           struct serve_read_req *q);

/* ---- data-plane layouts (decoded here, served by the data plane) ---- */

struct serve_poll_req {
    uint8_t consumer_kind;
    struct meta_ident consumer, stream, topic;
    uint8_t has_partition;
    uint32_t partition_id;
    uint8_t strategy_kind;
    uint64_t strategy_value;
    uint32_t count;
    uint8_t autocommit;
};
uint32_t serve_decode_poll(const uint8_t *body, size_t len,
                           struct serve_poll_req *q);

struct serve_send_meta {
    uint32_t metadata_len;
    struct meta_ident stream, topic;
    uint8_t partitioning_kind; /* 1 balanced, 2 partition id, 3 key */
    uint8_t partitioning_len;
    const uint8_t *partitioning; /* borrowed */
    uint32_t messages_count;
    size_t batch_off; /* body offset of the batch */
};
uint32_t serve_decode_send_meta(const uint8_t *body, size_t len,
                                struct serve_send_meta *m);

/* Consumer offsets: GetOffset (NR code 120, operation 2), Store (161) and
 * Delete (162): [consumer kind u8 1|2][consumer ident][stream][topic]
 * [has_partition u8][partition_id u32], then Store's [offset u64], then
 * for 161/162 [ack u8]. 0 or -1 (undecodable: a bad kind, identifier or
 * a short body). */
struct serve_offset_req {
    uint8_t kind;
    struct meta_ident consumer, stream, topic;
    uint8_t has_partition;
    uint32_t partition_id;
    uint64_t offset;
    uint8_t ack;
};
int serve_decode_offset(const uint8_t *body, size_t len, unsigned operation,
                        struct serve_offset_req *q);

/* ---- reply frames ---- */

/* Appends a Reply frame answering `req`: 256-byte header (command 8,
 * size, the request's cluster, client, request, request_checksum and
 * operation echoed, status) + body. */
void serve_reply_frame(struct vs_wbuf *w, const struct vs_hdr_request *req,
                       uint32_t status, const void *body, size_t len);
/* Its header alone, sized for a body of `len` bytes sent after it. */
void serve_reply_head(struct vs_wbuf *w, const struct vs_hdr_request *req,
                      uint32_t status, size_t len);
/* Appends an Eviction frame (256 bytes): cluster id, client, the
 * protocol window @144/@148, reason @255. */
void serve_eviction_frame(struct vs_wbuf *w, struct vs_u128 cluster,
                          struct vs_u128 client, uint8_t reason);

#endif /* VS_SHARD_SERVE_PROTO_H */
