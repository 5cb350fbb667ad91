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
 * the server's cached reply instead of a second execution. Before it
 * resends, it asks the node (GetSessionStatus) whether the client table
 * still holds its history: when the session was evicted meanwhile the
 * table forgot every request of this client id and a resend would run as
 * new, so the call fails with -ESTALE instead ("outcome unknown": the
 * request may or may not have been executed once; it never runs twice).
 * A resend answered by an eviction fails with -ESTALE for the same
 * reason. A server that answers the query InvalidCommand (one that does
 * not implement it, such as Iggy's) gets the resend as before. Transient
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
/* vstream's CreateTopic key `replication_factor` as a Uint8 (0 = the
 * server's default, min(3, nodes)); Iggy servers refuse it (4041). */
void vsc_opt_replication_factor(struct vs_wbuf *w, uint8_t rf);

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

/* The header of a request frame whose body is `len` bytes: command 5,
 * size, client, request, operation, session, command_code @196 iff
 * op = 2, request_checksum = XXH3(body) iff `checksum` (body is read
 * only then). */
void vsc_request_header(struct vs_hdr_request *h, struct vs_u128 client,
                        uint64_t session, uint64_t request, uint8_t operation,
                        uint32_t code, const void *body, size_t len,
                        int checksum);
/* Appends a request frame: the header of vsc_request_header, then the
 * body. */
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
    /* TLS (the server's tls_addr): the same framing inside TLS 1.2+.
     * The server's certificate is always verified: against tls_ca_file
     * (PEM), else the system store; its name must match tls_server_name,
     * else the host part of addr (DNS name or IP address). A failed
     * verification fails vsc_connect with the reason in vsc_last_error. */
    int tls;
    const char *tls_ca_file;
    const char *tls_server_name;
    /* optional client certificate (servers with tls_ca_file) */
    const char *tls_cert_file;
    const char *tls_key_file;
    /* More node addresses ("HOST:PORT,HOST:PORT..."), tried in turn when
     * the current one cannot be reached; the nodes a cluster's metadata
     * lists are added as they are learnt. NULL: none. */
    const char *more_addrs;
    /* 1: stay on `addr` (no leader following). By default, after every
     * login (and re-login after a reconnect) the handle reads
     * GetClusterMetadata and, when another node is the healthy Leader,
     * moves there and registers again with the same client id (at most
     * VSC_HOPS_MAX hops), as Iggy's SDKs do; a partition-plane request
     * refused with 58 naming the leader moves there too. */
    int no_follow;
};
#define VSC_HOPS_MAX  3u
#define VSC_KNOWN_MAX 16u

struct vsc;

/* Allocates a handle (not connected) with a fresh random client id.
 * NULL + errno on failure. */
struct vsc *vsc_create(const struct vsc_opts *o);
void vsc_destroy(struct vsc *c);

/* Connects (bounded by connect_timeout_ms). 0 or -errno. */
int vsc_connect(struct vsc *c);
void vsc_close(struct vsc *c);
/* The address the handle uses now (after leader following). */
const char *vsc_addr(const struct vsc *c);
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
 * until the next call). The request is the part the library built: the
 * header and the body, except a prebuilt batch passed to vsc_send_batch,
 * which is written from the caller's buffer and not kept. */
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
/* GetReplicaStatus (vendor code 9100): the connected node's own account
 * of the cluster (shard/serve/cluster.h). count 0 on a one-node server. */
#define VSC_GET_REPLICA_STATUS 9100u
struct vsc_replica_status {
    uint32_t count; /* replicas; 0: not a cluster */
    uint8_t self;
    uint8_t status; /* 0 normal, 1 view change, 2 recovering */
    uint8_t leader; /* replica id, 255 none */
    uint32_t view, log_view;
    uint64_t op, commit_min, commit_max, checkpoint_op;
    struct vs_u128 checkpoint_checksum;
    struct {
        char addr[64]; /* client address, "" unknown */
        uint8_t role, status;
        uint8_t link; /* 0 down, 1 connecting, 2 handshake, 3 up, 255 self */
        uint64_t bytes_in, bytes_out;
    } nodes[32];
    /* The node's metadata state transfer (the reply's trailer; has_xfer 0
     * when the server sent none: an older server, or no report yet). */
    int has_xfer;
    struct {
        uint8_t stage; /* 0 idle, 1 awaiting target, 2 fetching, 3 installing */
        uint8_t peer;  /* serving replica, 255 none */
        uint64_t fetched, total;
        uint64_t sessions, completed, abandoned;
        uint64_t last_bytes, last_ms;
        char last[128]; /* how the last session ended, "" none */
    } xfer;
};
int vsc_replica_status(struct vsc *c, struct vsc_replica_status *out);
/* GetSessionStatus (vendor code 9101): this handle's session as the
 * connected node's published client table holds it (shard/serve/server.h).
 * H 40 when the session is no longer live. */
#define VSC_GET_SESSION_STATUS 9101u
struct vsc_session_status {
    uint64_t created_op; /* op of the Register that created the entry */
    uint64_t epoch;      /* op of the latest Register (the session) */
    uint64_t watermark;  /* highest committed request number */
};
int vsc_session_status(struct vsc *c, struct vsc_session_status *out);
/* GetTopicReplicas (vendor code 9102, shard/serve/reads.h): the replica
 * set of every partition of a topic and its primary in view 0. *found 0
 * (and nothing to free) for an unknown topic. */
#define VSC_GET_TOPIC_REPLICAS 9102u
struct vsc_partition_replicas {
    uint32_t id;
    uint64_t group_id;
    uint8_t count;
    uint8_t replicas[32]; /* node (replica) ids, view-0 primary first */
    uint8_t primary;      /* 255: none */
};
struct vsc_topic_replicas {
    uint32_t stream_id, topic_id;
    uint8_t replication_factor;
    uint8_t nodes;                             /* the cluster's node count */
    struct vsc_partition_replicas *partitions; /* heap */
    size_t n_partitions;
};
int vsc_topic_replicas(struct vsc *c, const struct vsc_id *stream,
                       const struct vsc_id *topic,
                       struct vsc_topic_replicas *out, int *found);
void vsc_topic_replicas_fini(struct vsc_topic_replicas *r);
int vsc_me(struct vsc *c, struct vsc_client_info *out); /* 20 */
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

/* ---------------------------------------------------------------- */
/* Messages, consumer offsets, consumer groups              */
/* ---------------------------------------------------------------- */

/*
 * Batches (protocol §5.6): a 256-byte batch header then N frames
 * [48-byte frame header][payload][user headers]. Frame checksum =
 * XXH3-64(seed 0) over frame[8..end); batch checksum = XXH3-64 over
 * [partition_id u64][base_offset u64][base_timestamp u64]
 * [origin_timestamp u64][batch_length u64][message_count u32] followed by
 * every frame checksum (u64 LE) in order. Producers send partition_id,
 * base_offset and base_timestamp as 0; the server stamps them.
 *
 * Delivery: SendMessages (op 160) keeps the current request number (it
 * does not advance it) and is AT-LEAST-ONCE. When the connection breaks
 * before the reply arrives, the library reconnects, registers again with
 * the same client id and resends the same batch (the same message ids):
 * if the server had stored it, the partition then holds the batch twice
 * (consecutive offsets, identical ids). Consumers that need exactly-once
 * deduplicate by message id. Polls and offset stores are resent the same
 * way (a resent poll with auto-commit may commit twice; the stored
 * offset never moves backwards on auto-commit).
 */
#define VSC_BATCH_HEADER 256u
#define VSC_FRAME_HEADER 48u

/* A message to send. id 0 = the library draws a random UUIDv4-style id
 * and writes it back here; origin_timestamp 0 = the send time (µs).
 * `headers` are raw user-header TLV bytes (vsc_uhdr_* below), may be
 * NULL/0. Payload and headers are borrowed. */
struct vsc_msg {
    struct vs_u128 id;
    uint64_t origin_timestamp;
    const void *payload;
    uint32_t payload_len;
    const void *headers;
    uint32_t headers_len;
};

/* User headers: repeated [key_kind u8 = 2][key_len u32][key]
 * [value_kind u8][value_len u32][value]; kinds as protocol §5.5. */
void vsc_uhdr_add(struct vs_wbuf *w, const char *key, uint8_t kind,
                  const void *val, uint32_t len);
void vsc_uhdr_str(struct vs_wbuf *w, const char *key, const char *val);
/* Walks a user-header block like an options block: 1 and *kv, 0 at the
 * end, -EPROTO if malformed (vsc_tlv_next). */
int vsc_uhdr_next(const uint8_t *blk, size_t len, size_t *off,
                  struct vsc_tlv *kv);

/* A random UUIDv4 as a u128 (version nibble 4 at bits 76..79, variant
 * 0b10 at bits 62..63 of the 128-bit value). */
struct vs_u128 vsc_uuid4(void);

/* Appends one client batch of n messages to w (ids of 0 are drawn and
 * written back into msgs[i].id). `now_us` is the default origin
 * timestamp. Returns the batch length, or 0 when n is 0 or the batch
 * would exceed 4 GiB. */
size_t vsc_batch_build(struct vs_wbuf *w, struct vsc_msg *msgs, uint32_t n,
                       uint64_t now_us);
/* Frame checksum of a frame lying in memory ([8 .. frame_len)). */
uint64_t vsc_frame_checksum(const uint8_t *frame, size_t frame_len);
/* Batch checksum from the header fields and the stored frame checksums
 * of a structurally valid batch. */
uint64_t vsc_batch_checksum(const uint8_t *batch);
/* Verifies one batch record of exactly `len` bytes: structure
 * (batch_length = len, frames walked by 48 + payload + headers, reserved
 * zero, count), every frame checksum and the batch checksum. 0,
 * -EPROTO (structure) or -EBADMSG (a checksum). */
int vsc_batch_verify(const uint8_t *batch, size_t len);

/* Partitioning of a send (protocol §5.6). */
enum vsc_part_kind {
    VSC_PART_BALANCED = 1,
    VSC_PART_ID = 2,
    VSC_PART_KEY = 3,
};
struct vsc_partitioning {
    uint8_t kind;          /* enum vsc_part_kind */
    uint32_t partition_id; /* VSC_PART_ID */
    uint8_t key_len;       /* VSC_PART_KEY: 1..255 raw bytes */
    uint8_t key[255];
};
struct vsc_partitioning vsc_part_balanced(void);
struct vsc_partitioning vsc_part_id(uint32_t id);
/* len 1..255 (longer keys are truncated to 255). */
struct vsc_partitioning vsc_part_key(const void *key, size_t len);
/* XXH32(key, seed 0) % partitions_count: the partition INDEX the server
 * picks for a message key (UINT32_MAX when partitions_count is 0). */
uint32_t vsc_key_partition(const void *key, size_t len,
                           uint32_t partitions_count);

/* SendMessages body: [metadata_len u32][stream][topic][partitioning]
 * [messages_count u32] then the batch (batch_len bytes). */
void vsc_body_send(struct vs_wbuf *w, const struct vsc_id *stream,
                   const struct vsc_id *topic, const struct vsc_partitioning *p,
                   uint32_t count, const uint8_t *batch, size_t batch_len);

/* The one confirmation of a send reply. confirmed = 0 when the server
 * answered with an empty (legacy) body. */
struct vsc_sent {
    int confirmed;
    uint32_t stream_id, topic_id, partition_id;
    uint64_t base_offset;
};
/* Decodes a send reply body: empty, or exactly [count u32] + count x 20
 * bytes; the first confirmation is returned. 0 or -EPROTO. */
int vsc_decode_sent(const uint8_t *p, size_t len, struct vsc_sent *out);

/* Sends n messages as one batch. `out` may be NULL. */
int vsc_send(struct vsc *c, const struct vsc_id *stream,
             const struct vsc_id *topic, const struct vsc_partitioning *p,
             struct vsc_msg *msgs, uint32_t n, struct vsc_sent *out);
/* Sends a prebuilt batch (vsc_batch_build) of `count` messages. */
int vsc_send_batch(struct vsc *c, const struct vsc_id *stream,
                   const struct vsc_id *topic, const struct vsc_partitioning *p,
                   uint32_t count, const uint8_t *batch, size_t batch_len,
                   struct vsc_sent *out);

/* Consumers (protocol-2 §5): kind 1 a single consumer (numeric id or
 * name), kind 2 a consumer group (id or name). */
enum vsc_consumer_kind {
    VSC_CONSUMER = 1,
    VSC_CONSUMER_GROUP = 2,
};
struct vsc_consumer {
    uint8_t kind;
    struct vsc_id id;
};
struct vsc_consumer vsc_consumer_single(const struct vsc_id *id);
struct vsc_consumer vsc_consumer_group(const struct vsc_id *id);

enum vsc_strategy {
    VSC_POLL_OFFSET = 1,
    VSC_POLL_TIMESTAMP = 2,
    VSC_POLL_FIRST = 3,
    VSC_POLL_LAST = 4,
    VSC_POLL_NEXT = 5,
};
struct vsc_poll_args {
    struct vsc_consumer consumer;
    int has_partition;
    uint32_t partition_id;
    uint8_t strategy; /* enum vsc_strategy */
    uint64_t value;   /* offset or timestamp µs */
    uint32_t count;
    int auto_commit;
    /* not on the wire: 1 decodes the reply without verifying the frame
     * and batch checksums (the structure is still checked), as Iggy's
     * SDKs and iggy-bench read polls; 0 (the default) verifies them */
    int skip_checksums;
};
/* PollMessages body (protocol §5.7). */
void vsc_body_poll(struct vs_wbuf *w, const struct vsc_id *stream,
                   const struct vsc_id *topic, const struct vsc_poll_args *a);

/* A polled message; pointers into vsc_polled.buf. */
struct vsc_message {
    uint64_t offset;           /* base_offset + offset_delta */
    uint64_t timestamp;        /* the record's base_timestamp (µs) */
    uint64_t origin_timestamp; /* origin_timestamp + timestamp_delta */
    struct vs_u128 id;
    uint64_t checksum; /* the frame checksum as stored */
    const uint8_t *payload;
    uint32_t payload_len;
    const uint8_t *headers;
    uint32_t headers_len;
};
struct vsc_polled {
    uint32_t partition_id; /* 0xFFFFFFFF: group re-sync sentinel */
    uint64_t current_offset;
    uint32_t count;           /* the reply's count field */
    struct vsc_message *msgs; /* heap */
    size_t n;
    uint32_t records;       /* batch records walked */
    int checksums_verified; /* 0: decoded with skip_checksums */
    int batch_checksums_ok; /* verified, and every record's batch
                             * checksum matched */
    uint8_t *buf;           /* heap: the reply frame (vsc_poll, which decodes it
                             * where it was received) or a copy of the body */
};
void vsc_polled_fini(struct vsc_polled *p);
/* Decodes a poll reply body as the SDK does (records walked by
 * batch_length >= 256; frames by 48 + payload + headers up to the record
 * end; a frame's reserved must be 0) and additionally verifies every
 * frame checksum. The body is copied. 0, -EPROTO (structure) or
 * -EBADMSG (a frame checksum mismatch). */
int vsc_poll_decode(const uint8_t *p, size_t len, struct vsc_polled *out);
/* PollMessages (code 100), decoded as vsc_poll_decode does but in the
 * buffer the reply was received into (no copy): after a poll that
 * returns 0, vsc_last_reply is empty (the frame is out->buf). With
 * a->skip_checksums the checksums are not verified (structure only). */
int vsc_poll(struct vsc *c, const struct vsc_id *stream,
             const struct vsc_id *topic, const struct vsc_poll_args *a,
             struct vsc_polled *out);

/* Consumer offsets (codes 120/121/122). has_partition 0: GetOffset
 * reads partition 0; Store/Delete are refused by the server (20). */
struct vsc_offset {
    uint32_t partition_id;
    uint64_t current_offset;
    uint64_t stored_offset;
};
int vsc_offset_get(struct vsc *c, const struct vsc_consumer *consumer,
                   const struct vsc_id *stream, const struct vsc_id *topic,
                   int has_partition, uint32_t partition_id,
                   struct vsc_offset *out, int *found);
int vsc_offset_store(struct vsc *c, const struct vsc_consumer *consumer,
                     const struct vsc_id *stream, const struct vsc_id *topic,
                     int has_partition, uint32_t partition_id, uint64_t offset);
int vsc_offset_delete(struct vsc *c, const struct vsc_consumer *consumer,
                      const struct vsc_id *stream, const struct vsc_id *topic,
                      int has_partition, uint32_t partition_id);

/* Consumer groups (protocol-2 §6). */
struct vsc_group_member {
    uint32_t id; /* per-group slot number, not the client id */
    uint32_t n_partitions;
    uint32_t *partitions; /* heap */
};
struct vsc_group {
    uint32_t id;
    uint32_t partitions_count;
    uint32_t members_count;
    char name[VSC_NAME_MAX + 1];
    struct vsc_group_member *members; /* GroupDetails only; heap */
    size_t n_members;
};
void vsc_group_fini(struct vsc_group *g);
/* GroupRecord (details 0) or GroupDetails at p. 0 or -EPROTO. */
int vsc_decode_group(const uint8_t *p, size_t len, struct vsc_group *g,
                     int details);
/* `out` may be NULL. */
int vsc_group_create(struct vsc *c, const struct vsc_id *stream,
                     const struct vsc_id *topic, const char *name,
                     struct vsc_group *out);
int vsc_group_get(struct vsc *c, const struct vsc_id *stream,
                  const struct vsc_id *topic, const struct vsc_id *group,
                  struct vsc_group *out, int *found);
/* *out heap array of records (no members); free(). */
int vsc_group_list(struct vsc *c, const struct vsc_id *stream,
                   const struct vsc_id *topic, struct vsc_group **out,
                   size_t *n);
int vsc_group_delete(struct vsc *c, const struct vsc_id *stream,
                     const struct vsc_id *topic, const struct vsc_id *group);
int vsc_group_join(struct vsc *c, const struct vsc_id *stream,
                   const struct vsc_id *topic, const struct vsc_id *group);
int vsc_group_leave(struct vsc *c, const struct vsc_id *stream,
                    const struct vsc_id *topic, const struct vsc_id *group);
/* SyncGroup (606): the caller's pollable partitions. *member = 0 (and
 * n 0) when the server answered empty (not a member, or the group or
 * topic is unknown). *parts heap (free()); may be NULL when n is 0. */
int vsc_group_sync(struct vsc *c, const struct vsc_id *stream,
                   const struct vsc_id *topic, const struct vsc_id *group,
                   uint64_t *generation, uint32_t **parts, size_t *n,
                   int *member);

/* FlushUnsavedBuffer (102): [stream][topic][partition_id u32][fsync u8]. */
int vsc_flush(struct vsc *c, const struct vsc_id *stream,
              const struct vsc_id *topic, uint32_t partition_id, int fsync);

/* Data-plane command codes. */
enum vsc_code_data {
    VSC_POLL_MESSAGES = 100,
    VSC_SEND_MESSAGES = 101,
    VSC_FLUSH_UNSAVED_BUFFER = 102,
    VSC_GET_CONSUMER_OFFSET = 120,
    VSC_STORE_CONSUMER_OFFSET = 121,
    VSC_DELETE_CONSUMER_OFFSET = 122,
    VSC_GET_CONSUMER_GROUP = 600,
    VSC_GET_CONSUMER_GROUPS = 601,
    VSC_CREATE_CONSUMER_GROUP = 602,
    VSC_DELETE_CONSUMER_GROUP = 603,
    VSC_JOIN_CONSUMER_GROUP = 604,
    VSC_LEAVE_CONSUMER_GROUP = 605,
    VSC_SYNC_CONSUMER_GROUP = 606,
};

#endif /* VS_TOOLS_CLIENT_VSC_H */
