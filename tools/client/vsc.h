/*
 * tools/client/vsc.h - vstream's C client library (libvs_client.a).
 *
 * Role: a blocking, single-connection client of Iggy's VSR client
 * framing (shared/reference/iggy-client-protocol*.md), used by the
 * `vstream` CLI, `vstream-bench` and the integration tests. It sends
 * exactly what Iggy's SDKs send: a 256-byte request header (command 5,
 * client id, request number, operation, session, NonReplicated command
 * code at @196) and the command's body; it decodes replies (header status,
 * result sections) and evictions into Iggy error codes.
 *
 * Session and request-number rules (protocol §4):
 *  - a handle draws one random non-zero u128 client id at creation;
 *  - Register: request 0, session 0; the reply's session (> 0) is kept;
 *  - metadata ops (128..149) and Logout use request = counter, then the
 *    counter advances; NonReplicated ops reuse the counter unchanged;
 *  - replicated ops (Register, Logout, metadata) carry request_checksum =
 *    XXH3-64(body) widened to u128 (NonReplicated: 0, like the Node SDK).
 * At-most-once (DESIGN §5), deliberately unlike the Node SDK: when the
 * connection breaks during a request, the library reconnects, registers
 * again with the SAME client id and the same credentials, and resends the
 * same request number and body, so a request whose reply was lost gets
 * the server's cached reply instead of a second execution. Transient
 * statuses 57/58 resend the identical frame every 50 ms up to the request
 * timeout.
 *
 * Return convention of every vsc_* call that talks to the server:
 *   0    success;
 *   > 0  Iggy error code (enum vs_iggy_error) from the header status, the
 *        result section, or an eviction mapped as protocol §3.2 says;
 *   < 0  -errno for local and transport failures (-ETIMEDOUT,
 *        -ECONNREFUSED, -EPROTO for an undecodable reply, -EINVAL).
 * vsc_last_error() describes the last failure in one line.
 *
 * Ownership: results with arrays are heap-allocated by the library; free
 * them with the matching vsc_*_fini / free() as each comment says. Name
 * fields are NUL-terminated copies (names are at most 255 bytes).
 *
 * Invariants: one request in flight per handle; a handle is not
 * thread-safe (use one per thread). Callers: any user-space process.
 */
#ifndef VS_TOOLS_CLIENT_VSC_H
#define VS_TOOLS_CLIENT_VSC_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"

/* Protocol version the library announces at Register (0.11.0). */
#define VSC_PROTOCOL_VERSION 11264u
#define VSC_SDK_NAME         "vstream-c"
#define VSC_SDK_VERSION      "0.1.0"
#define VSC_NAME_MAX         255u

/* ---------------------------------------------------------------- */
/* Identifiers and small values                                       */
/* ---------------------------------------------------------------- */

/* An Iggy identifier: numeric (kind 1) or string (kind 2). */
struct vsc_id {
    uint8_t kind; /* 1 numeric, 2 string */
    uint32_t num;
    char name[VSC_NAME_MAX + 1];
};

struct vsc_id vsc_id_num(uint32_t n);
/* A name longer than 255 bytes is truncated; callers validate first. */
struct vsc_id vsc_id_name(const char *name);
/* "12" -> numeric 12; anything else -> name. */
struct vsc_id vsc_id_parse(const char *s);

/* ---------------------------------------------------------------- */
/* Records                                                            */
/* ---------------------------------------------------------------- */

struct vsc_partition {
    uint32_t id;
    uint64_t created_at;
    uint32_t segments_count;
    uint64_t current_offset;
    uint64_t size_bytes;
    uint64_t messages_count;
};

struct vsc_topic {
    uint32_t id;
    uint64_t created_at;
    uint32_t partitions_count;
    uint64_t message_expiry;
    uint8_t compression; /* 1 none, 2 gzip */
    uint64_t max_topic_size;
    uint64_t size_bytes;
    uint64_t messages_count;
    char name[VSC_NAME_MAX + 1];
    /* Option TLV blocks (heap; walk with vsc_tlv_next). */
    uint8_t *explicit_opts;
    uint32_t explicit_len;
    uint8_t *derived_opts;
    uint32_t derived_len;
    /* Only filled by GetTopic / CreateTopic (heap). */
    struct vsc_partition *partitions;
    size_t n_partitions;
};
void vsc_topic_fini(struct vsc_topic *t);

struct vsc_stream {
    uint32_t id;
    uint64_t created_at;
    uint32_t topics_count;
    uint64_t size_bytes;
    uint64_t messages_count;
    char name[VSC_NAME_MAX + 1];
    /* Only filled by GetStream (heap; headers without partitions). */
    struct vsc_topic *topics;
    size_t n_topics;
};
void vsc_stream_fini(struct vsc_stream *s);

/* Permissions (protocol-2 §2.2). Flag order as on the wire. */
enum {
    VSC_G_MANAGE_SERVERS,
    VSC_G_READ_SERVERS,
    VSC_G_MANAGE_USERS,
    VSC_G_READ_USERS,
    VSC_G_MANAGE_STREAMS,
    VSC_G_READ_STREAMS,
    VSC_G_MANAGE_TOPICS,
    VSC_G_READ_TOPICS,
    VSC_G_POLL_MESSAGES,
    VSC_G_SEND_MESSAGES,
    VSC_G_COUNT
};
enum {
    VSC_S_MANAGE_STREAM,
    VSC_S_READ_STREAM,
    VSC_S_MANAGE_TOPICS,
    VSC_S_READ_TOPICS,
    VSC_S_POLL_MESSAGES,
    VSC_S_SEND_MESSAGES,
    VSC_S_COUNT
};
enum {
    VSC_T_MANAGE_TOPIC,
    VSC_T_READ_TOPIC,
    VSC_T_POLL_MESSAGES,
    VSC_T_SEND_MESSAGES,
    VSC_T_COUNT
};
extern const char *const vsc_global_perm_names[VSC_G_COUNT];
extern const char *const vsc_stream_perm_names[VSC_S_COUNT];
extern const char *const vsc_topic_perm_names[VSC_T_COUNT];

struct vsc_topic_perms {
    uint32_t topic_id;
    uint8_t flags[VSC_T_COUNT];
};
struct vsc_stream_perms {
    uint32_t stream_id;
    uint8_t flags[VSC_S_COUNT];
    struct vsc_topic_perms *topics; /* heap */
    size_t n_topics;
};
struct vsc_perms {
    uint8_t global[VSC_G_COUNT];
    struct vsc_stream_perms *streams; /* heap */
    size_t n_streams;
};
void vsc_perms_fini(struct vsc_perms *p);
/* Appends the wire encoding (without the has/len prefixes). */
void vsc_perms_encode(struct vs_wbuf *w, const struct vsc_perms *p);
/* Decodes exactly `len` bytes. 0 or -EPROTO (p then empty). */
int vsc_perms_decode(const uint8_t *data, size_t len, struct vsc_perms *p);

struct vsc_user {
    uint32_t id;
    uint64_t created_at;
    uint8_t status; /* 1 active, 2 inactive */
    char name[VSC_NAME_MAX + 1];
    int has_perms; /* UserDetails only */
    struct vsc_perms perms;
};
void vsc_user_fini(struct vsc_user *u);

struct vsc_client_info {
    uint32_t client_id;
    uint32_t user_id; /* 0xFFFFFFFF = not logged in */
    uint8_t transport;
    char address[VSC_NAME_MAX + 1];
    uint32_t groups_count;
};

struct vsc_pat {
    char name[VSC_NAME_MAX + 1];
    uint64_t expiry_at; /* absolute µs, 0 = never */
};

struct vsc_stats {
    uint32_t process_id;
    float cpu_usage;
    float total_cpu_usage;
    uint64_t memory_usage, total_memory, available_memory;
    uint64_t run_time, start_time;
    uint64_t read_bytes, written_bytes, messages_size_bytes;
    uint32_t streams_count, topics_count, partitions_count, segments_count;
    uint64_t messages_count;
    uint32_t clients_count, consumer_groups_count;
    char hostname[256], os_name[256], os_version[256], kernel_version[256];
};

struct vsc_node {
    char name[256];
    char ip[256];
    uint16_t tcp, quic, http, websocket;
    uint8_t role;   /* 0 leader, 1 follower */
    uint8_t status; /* 0 healthy ... */
};
struct vsc_cluster {
    char name[256];
    struct vsc_node *nodes; /* heap */
    size_t n_nodes;
};
void vsc_cluster_fini(struct vsc_cluster *c);

/* One TLV option (borrowed pointers into the block). */
struct vsc_tlv {
    const uint8_t *key;
    uint32_t key_len;
    uint8_t kind; /* 2 String, 3 Bool, 11 Uint32, 12 Uint64, ... */
    const uint8_t *val;
    uint32_t val_len;
};
/* Walks an options block: 1 and *kv filled, 0 at the end, -EPROTO on a
 * malformed pair. *off starts at 0. */
int vsc_tlv_next(const uint8_t *blk, size_t len, size_t *off,
                 struct vsc_tlv *kv);
/* Request options blocks (bare TLV, appended to w). */
void vsc_opt_str(struct vs_wbuf *w, const char *key, const char *val);
void vsc_opt_u64(struct vs_wbuf *w, const char *key, uint64_t v);
void vsc_opt_u32(struct vs_wbuf *w, const char *key, uint32_t v);
void vsc_opt_bool(struct vs_wbuf *w, const char *key, int v);

/* ---------------------------------------------------------------- */
/* Encoding and decoding (pure; exposed for golden tests and tools)   */
/* ---------------------------------------------------------------- */

void vsc_wr_id(struct vs_wbuf *w, const struct vsc_id *id);
/* [len u8][bytes]; the caller ensures 1..255 bytes. */
void vsc_wr_name(struct vs_wbuf *w, const char *name);

/* The operation a command code travels as (protocol §2): 1, 3, 128..149,
 * 160..162, or 2 (NonReplicated) for everything else. Codes 38/44 map to
 * Register (the SDK rewrites them). */
uint8_t vsc_code_operation(uint32_t code);
/* 1 for Register, Logout and metadata ops (request_checksum is set). */
int vsc_operation_is_replicated(uint8_t op);

/* Appends a request frame: header (command 5, size, client, request,
 * operation, session, command_code @196 iff op = 2, request_checksum =
 * XXH3(body) iff `checksum`) then the body. */
void vsc_frame_request(struct vs_wbuf *w, struct vs_u128 client,
                       uint64_t session, uint64_t request, uint8_t operation,
                       uint32_t code, const void *body, size_t len,
                       int checksum);

/* Register bodies. */
void vsc_body_login(struct vs_wbuf *w, uint32_t protocol_version,
                    const char *sdk_name, const char *sdk_version,
                    const char *user, const char *password);
void vsc_body_login_pat(struct vs_wbuf *w, uint32_t protocol_version,
                        const char *sdk_name, const char *sdk_version,
                        const char *token);

/* A decoded reply frame. `payload` points into the frame passed to
 * vsc_reply_decode (after the result section when result-framed). */
struct vsc_reply {
    uint8_t command;   /* 8 reply, 13 eviction */
    uint8_t operation; /* reply operation byte */
    uint32_t status;   /* header status */
    uint32_t result;   /* first result-section code, 0 if none */
    uint8_t reason;    /* eviction reason */
    const uint8_t *payload;
    size_t payload_len;
};
/* Decodes one reply frame of `len` bytes (header + body) as the Node SDK
 * does (protocol §3): returns 0 (success, payload set), an Iggy code
 * (status, result, or mapped eviction), or -EPROTO (code 3 semantics:
 * bad command, size, undeclared operation, short result section). */
int vsc_reply_decode(const uint8_t *frame, size_t len, struct vsc_reply *r);
/* Eviction reason -> Iggy code (protocol §3.2). */
uint32_t vsc_eviction_code(uint8_t reason, uint32_t version,
                           uint32_t version_min);

/* Decoders of reply payloads: 0 or -EPROTO. */
int vsc_decode_login(const uint8_t *p, size_t len, uint32_t *user_id,
                     uint64_t *session, uint32_t *server_protocol,
                     char server_version[256]);
int vsc_decode_stream(const uint8_t *p, size_t len, struct vsc_stream *s,
                      int with_topics);
int vsc_decode_topic(const uint8_t *p, size_t len, struct vsc_topic *t,
                     int with_partitions);
int vsc_decode_user(const uint8_t *p, size_t len, struct vsc_user *u,
                    int details);

/* ---------------------------------------------------------------- */
/* The connection                                                     */
/* ---------------------------------------------------------------- */

struct vsc_opts {
    const char *addr;            /* "host:port"; default 127.0.0.1:8090 */
    uint32_t connect_timeout_ms; /* default 5000 */
    uint32_t io_timeout_ms;      /* per request; default 30000 */
    uint32_t reconnects;         /* attempts after a broken request;
                                    default 3 */
};

struct vsc;

/* Allocates a handle (not connected) with a fresh random client id.
 * NULL + errno on failure. */
struct vsc *vsc_create(const struct vsc_opts *o);
void vsc_destroy(struct vsc *c);

/* Connects (bounded by connect_timeout_ms). 0 or -errno. */
int vsc_connect(struct vsc *c);
void vsc_close(struct vsc *c);
/* Changes the address used by the next (re)connect. */
void vsc_set_addr(struct vsc *c, const char *addr);

/* Register with username/password or a personal access token. On
 * success the session is bound; *user_id may be NULL. The credentials
 * are remembered for re-registering after a reconnect. */
int vsc_login(struct vsc *c, const char *user, const char *password,
              uint32_t *user_id);
int vsc_login_pat(struct vsc *c, const char *token, uint32_t *user_id);
int vsc_logout(struct vsc *c);

/* Introspection and test hooks. */
struct vs_u128 vsc_client_id(const struct vsc *c);
void vsc_set_client_id(struct vsc *c, struct vs_u128 id);
uint64_t vsc_session(const struct vsc *c);
uint64_t vsc_request_counter(const struct vsc *c);
/* The last request frame sent and reply frame received (borrowed, valid
 * until the next call). */
const uint8_t *vsc_last_request(const struct vsc *c, size_t *len);
const uint8_t *vsc_last_reply(const struct vsc *c, size_t *len);
/* The last error in one line: "<Name> (<code>): <text>". */
const char *vsc_last_error(const struct vsc *c);

/* Test hook for at-most-once: reconnect (to the current address),
 * register again with the same client id and credentials, and resend the
 * last replicated request frame with its request number and body (the
 * session field is the new one). The reply is decoded as usual. */
int vsc_resend_last(struct vsc *c);

/* Sends any command with a raw body and returns the decoded reply. The
 * operation and numbering follow from the code. `r->payload` is valid
 * until the next call. */
int vsc_call(struct vsc *c, uint32_t code, const void *body, size_t len,
             struct vsc_reply *r);

/* ---- commands (codes in comments) ---- */
int vsc_ping(struct vsc *c);                             /* 1 */
int vsc_stats(struct vsc *c, struct vsc_stats *out);     /* 10 */
int vsc_cluster(struct vsc *c, struct vsc_cluster *out); /* 12 */
int vsc_me(struct vsc *c, struct vsc_client_info *out);  /* 20 */
int vsc_client_get(struct vsc *c, uint32_t id, struct vsc_client_info *out,
                   int *found); /* 21 */
/* *out heap array, free(). */
int vsc_clients(struct vsc *c, struct vsc_client_info **out, size_t *n);

/* Streams. *found = 0 with return 0 when the server has no such stream. */
int vsc_stream_create(struct vsc *c, const char *name, struct vsc_stream *out);
int vsc_stream_get(struct vsc *c, const struct vsc_id *id,
                   struct vsc_stream *out, int *found);
int vsc_stream_list(struct vsc *c, struct vsc_stream **out, size_t *n);
int vsc_stream_update(struct vsc *c, const struct vsc_id *id, const char *name);
int vsc_stream_delete(struct vsc *c, const struct vsc_id *id);
int vsc_stream_purge(struct vsc *c, const struct vsc_id *id);

/* Topics. `opts`/`opts_len`: a bare TLV block (may be NULL/0). `out` of
 * create may be NULL. */
int vsc_topic_create(struct vsc *c, const struct vsc_id *stream,
                     uint32_t partitions, const char *name, const uint8_t *opts,
                     size_t opts_len, struct vsc_topic *out);
int vsc_topic_get(struct vsc *c, const struct vsc_id *stream,
                  const struct vsc_id *topic, struct vsc_topic *out,
                  int *found);
/* *out heap array of headers (no partitions); free each with
 * vsc_topic_fini, then free(). */
int vsc_topic_list(struct vsc *c, const struct vsc_id *stream,
                   struct vsc_topic **out, size_t *n);
int vsc_topic_update(struct vsc *c, const struct vsc_id *stream,
                     const struct vsc_id *topic, const char *name,
                     const uint8_t *opts, size_t opts_len);
int vsc_topic_delete(struct vsc *c, const struct vsc_id *stream,
                     const struct vsc_id *topic);
int vsc_topic_purge(struct vsc *c, const struct vsc_id *stream,
                    const struct vsc_id *topic);
int vsc_partitions_create(struct vsc *c, const struct vsc_id *stream,
                          const struct vsc_id *topic, uint32_t count);
int vsc_partitions_delete(struct vsc *c, const struct vsc_id *stream,
                          const struct vsc_id *topic, uint32_t count);

/* Users. `perms` may be NULL (no permissions). `out` may be NULL. */
int vsc_user_create(struct vsc *c, const char *name, const char *password,
                    uint8_t status, const struct vsc_perms *perms,
                    struct vsc_user *out);
int vsc_user_get(struct vsc *c, const struct vsc_id *id, struct vsc_user *out,
                 int *found);
/* *out heap array of records; free(). */
int vsc_user_list(struct vsc *c, struct vsc_user **out, size_t *n);
/* name NULL = unchanged; status 0 = unchanged. */
int vsc_user_update(struct vsc *c, const struct vsc_id *id, const char *name,
                    uint8_t status);
int vsc_user_delete(struct vsc *c, const struct vsc_id *id);
int vsc_user_passwd(struct vsc *c, const struct vsc_id *id, const char *current,
                    const char *new_password);
/* perms NULL clears them. */
int vsc_user_permissions(struct vsc *c, const struct vsc_id *id,
                         const struct vsc_perms *perms);

/* Personal access tokens. token: NUL-terminated, up to 255 bytes. */
int vsc_pat_create(struct vsc *c, const char *name, uint64_t expiry,
                   char token[256]);
/* *out heap array; free(). */
int vsc_pat_list(struct vsc *c, struct vsc_pat **out, size_t *n);
int vsc_pat_delete(struct vsc *c, const char *name);

/* Command codes used above. */
enum vsc_code {
    VSC_PING = 1,
    VSC_GET_STATS = 10,
    VSC_GET_CLUSTER_METADATA = 12,
    VSC_DESCRIBE_OPTIONS = 13,
    VSC_GET_ME = 20,
    VSC_GET_CLIENT = 21,
    VSC_GET_CLIENTS = 22,
    VSC_GET_USER = 31,
    VSC_GET_USERS = 32,
    VSC_CREATE_USER = 33,
    VSC_DELETE_USER = 34,
    VSC_UPDATE_USER = 35,
    VSC_UPDATE_PERMISSIONS = 36,
    VSC_CHANGE_PASSWORD = 37,
    VSC_LOGIN_USER = 38,
    VSC_LOGOUT_USER = 39,
    VSC_LOGIN_REGISTER = 40,
    VSC_GET_PATS = 41,
    VSC_CREATE_PAT = 42,
    VSC_DELETE_PAT = 43,
    VSC_LOGIN_WITH_PAT = 44,
    VSC_LOGIN_REGISTER_PAT = 45,
    VSC_GET_STREAM = 200,
    VSC_GET_STREAMS = 201,
    VSC_CREATE_STREAM = 202,
    VSC_DELETE_STREAM = 203,
    VSC_UPDATE_STREAM = 204,
    VSC_PURGE_STREAM = 205,
    VSC_GET_TOPIC = 300,
    VSC_GET_TOPICS = 301,
    VSC_CREATE_TOPIC = 302,
    VSC_DELETE_TOPIC = 303,
    VSC_UPDATE_TOPIC = 304,
    VSC_PURGE_TOPIC = 305,
    VSC_CREATE_PARTITIONS = 402,
    VSC_DELETE_PARTITIONS = 403,
};

#endif /* VS_TOOLS_CLIENT_VSC_H */
