/*
 * tools/client/codec.c - pure encoders and decoders of the client library.
 *
 * Role: request frames and bodies, options TLV blocks, permissions, the
 * reply decode order of the Node SDK (protocol §3: command, size, status,
 * declared operation, result section) and the record decoders of reply
 * payloads (protocol-2 §1.1, §2.1).
 * Invariants: every decoder reads untrusted bytes through struct vs_rbuf
 * and never past `len`; a malformed payload gives -EPROTO and leaves no
 * heap memory behind. No I/O here.
 * Callers: any process (the library, the CLI, tests).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/errors.h"
#include "common/mem.h"
#include "tools/client/vsc.h"
#include "tools/client/vsc_int.h"

const char *const vsc_global_perm_names[VSC_G_COUNT] = {
    "manage_servers", "read_servers",  "manage_users",  "read_users",
    "manage_streams", "read_streams",  "manage_topics", "read_topics",
    "poll_messages",  "send_messages",
};
const char *const vsc_stream_perm_names[VSC_S_COUNT] = {
    "manage_stream", "read_stream",   "manage_topics",
    "read_topics",   "poll_messages", "send_messages",
};
const char *const vsc_topic_perm_names[VSC_T_COUNT] = {
    "manage_topic",
    "read_topic",
    "poll_messages",
    "send_messages",
};

struct vsc_id
vsc_id_num(uint32_t n)
{
    struct vsc_id id;
    memset(&id, 0, sizeof id);
    id.kind = 1;
    id.num = n;
    return id;
}

struct vsc_id
vsc_id_name(const char *name)
{
    struct vsc_id id;
    size_t n = strlen(name);
    memset(&id, 0, sizeof id);
    id.kind = 2;
    if (n > VSC_NAME_MAX)
        n = VSC_NAME_MAX;
    memcpy(id.name, name, n);
    return id;
}

struct vsc_id
vsc_id_parse(const char *s)
{
    uint64_t v = 0;
    size_t i;
    if (s[0] == '\0' || strlen(s) > 10)
        return vsc_id_name(s);
    for (i = 0; s[i]; i++) {
        if (s[i] < '0' || s[i] > '9')
            return vsc_id_name(s);
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > UINT32_MAX)
        return vsc_id_name(s);
    return vsc_id_num((uint32_t)v);
}

void
vsc_wr_id(struct vs_wbuf *w, const struct vsc_id *id)
{
    if (id->kind == 1) {
        vs_wr_u8(w, 1);
        vs_wr_u8(w, 4);
        vs_wr_u32(w, id->num);
    } else {
        size_t n = strlen(id->name);
        vs_wr_u8(w, 2);
        vs_wr_u8(w, (uint8_t)n);
        vs_wr_bytes(w, id->name, n);
    }
}

void
vsc_wr_name(struct vs_wbuf *w, const char *name)
{
    size_t n = strlen(name);
    if (n > VSC_NAME_MAX)
        n = VSC_NAME_MAX;
    vs_wr_u8(w, (uint8_t)n);
    vs_wr_bytes(w, name, n);
}

/* ---- options TLV ---- */

static void
vsc_opt_key(struct vs_wbuf *w, const char *key)
{
    size_t n = strlen(key);
    vs_wr_u8(w, 2);
    vs_wr_u32(w, (uint32_t)n);
    vs_wr_bytes(w, key, n);
}

void
vsc_opt_str(struct vs_wbuf *w, const char *key, const char *val)
{
    size_t n = strlen(val);
    vsc_opt_key(w, key);
    vs_wr_u8(w, 2);
    vs_wr_u32(w, (uint32_t)n);
    vs_wr_bytes(w, val, n);
}

void
vsc_opt_u64(struct vs_wbuf *w, const char *key, uint64_t v)
{
    vsc_opt_key(w, key);
    vs_wr_u8(w, 12);
    vs_wr_u32(w, 8);
    vs_wr_u64(w, v);
}

void
vsc_opt_u32(struct vs_wbuf *w, const char *key, uint32_t v)
{
    vsc_opt_key(w, key);
    vs_wr_u8(w, 11);
    vs_wr_u32(w, 4);
    vs_wr_u32(w, v);
}

void
vsc_opt_replication_factor(struct vs_wbuf *w, uint8_t rf)
{
    vsc_opt_key(w, "replication_factor");
    vs_wr_u8(w, 9); /* Uint8 */
    vs_wr_u32(w, 1);
    vs_wr_u8(w, rf);
}

void
vsc_opt_bool(struct vs_wbuf *w, const char *key, int v)
{
    vsc_opt_key(w, key);
    vs_wr_u8(w, 3);
    vs_wr_u32(w, 1);
    vs_wr_u8(w, v ? 1 : 0);
}

int
vsc_tlv_next(const uint8_t *blk, size_t len, size_t *off, struct vsc_tlv *kv)
{
    struct vs_rbuf r;
    if (*off >= len)
        return 0;
    vs_rbuf_init(&r, blk + *off, len - *off);
    (void)vs_rd_u8(&r); /* key kind */
    kv->key_len = vs_rd_u32(&r);
    kv->key = r.err ? NULL : vs_rd_bytes(&r, kv->key_len);
    kv->kind = vs_rd_u8(&r);
    kv->val_len = vs_rd_u32(&r);
    kv->val = r.err ? NULL : vs_rd_bytes(&r, kv->val_len);
    if (r.err)
        return -EPROTO;
    *off += r.off;
    return 1;
}

/* ---- permissions ---- */

void
vsc_perms_fini(struct vsc_perms *p)
{
    size_t i;
    if (p == NULL)
        return;
    for (i = 0; i < p->n_streams; i++)
        free(p->streams[i].topics);
    free(p->streams);
    p->streams = NULL;
    p->n_streams = 0;
}

void
vsc_perms_encode(struct vs_wbuf *w, const struct vsc_perms *p)
{
    size_t i, j, k;
    for (i = 0; i < VSC_G_COUNT; i++)
        vs_wr_u8(w, p->global[i] ? 1 : 0);
    vs_wr_u8(w, p->n_streams > 0);
    for (i = 0; i < p->n_streams; i++) {
        const struct vsc_stream_perms *s = &p->streams[i];
        vs_wr_u32(w, s->stream_id);
        for (k = 0; k < VSC_S_COUNT; k++)
            vs_wr_u8(w, s->flags[k] ? 1 : 0);
        vs_wr_u8(w, s->n_topics > 0);
        for (j = 0; j < s->n_topics; j++) {
            vs_wr_u32(w, s->topics[j].topic_id);
            for (k = 0; k < VSC_T_COUNT; k++)
                vs_wr_u8(w, s->topics[j].flags[k] ? 1 : 0);
            vs_wr_u8(w, j + 1 < s->n_topics);
        }
        vs_wr_u8(w, i + 1 < p->n_streams);
    }
}

int
vsc_perms_decode(const uint8_t *data, size_t len, struct vsc_perms *p)
{
    struct vs_rbuf r;
    size_t i;
    uint8_t more;
    memset(p, 0, sizeof *p);
    vs_rbuf_init(&r, data, len);
    for (i = 0; i < VSC_G_COUNT; i++)
        p->global[i] = vs_rd_u8(&r) != 0;
    more = vs_rd_u8(&r);
    while (!r.err && more) {
        struct vsc_stream_perms *s;
        uint8_t tmore;
        /* Each stream entry needs at least 12 bytes: bound the growth. */
        if (vs_rbuf_left(&r) < 12)
            goto fail;
        p->streams =
            vs_xrealloc(p->streams, (p->n_streams + 1) * sizeof *p->streams);
        s = &p->streams[p->n_streams++];
        memset(s, 0, sizeof *s);
        s->stream_id = vs_rd_u32(&r);
        for (i = 0; i < VSC_S_COUNT; i++)
            s->flags[i] = vs_rd_u8(&r) != 0;
        tmore = vs_rd_u8(&r);
        while (!r.err && tmore) {
            struct vsc_topic_perms *t;
            if (vs_rbuf_left(&r) < 9)
                goto fail;
            s->topics =
                vs_xrealloc(s->topics, (s->n_topics + 1) * sizeof *s->topics);
            t = &s->topics[s->n_topics++];
            t->topic_id = vs_rd_u32(&r);
            for (i = 0; i < VSC_T_COUNT; i++)
                t->flags[i] = vs_rd_u8(&r) != 0;
            tmore = vs_rd_u8(&r);
        }
        more = vs_rd_u8(&r);
    }
    if (r.err || vs_rbuf_left(&r) != 0)
        goto fail;
    return 0;
fail:
    vsc_perms_fini(p);
    return -EPROTO;
}

/* ---- frames and bodies ---- */

uint8_t
vsc_code_operation(uint32_t code)
{
    switch (code) {
    case 38:
    case 40:
    case 44:
    case 45:
        return VS_OP_REGISTER;
    case 39:
        return VS_OP_LOGOUT;
    case 202:
        return VS_OP_CREATE_STREAM;
    case 204:
        return VS_OP_UPDATE_STREAM;
    case 203:
        return VS_OP_DELETE_STREAM;
    case 205:
        return VS_OP_PURGE_STREAM;
    case 302:
        return VS_OP_CREATE_TOPIC;
    case 304:
        return VS_OP_UPDATE_TOPIC;
    case 303:
        return VS_OP_DELETE_TOPIC;
    case 305:
        return VS_OP_PURGE_TOPIC;
    case 402:
        return VS_OP_CREATE_PARTITIONS;
    case 403:
        return VS_OP_DELETE_PARTITIONS;
    case 503:
        return VS_OP_DELETE_SEGMENTS;
    case 602:
        return VS_OP_CREATE_CONSUMER_GROUP;
    case 603:
        return VS_OP_DELETE_CONSUMER_GROUP;
    case 33:
        return VS_OP_CREATE_USER;
    case 35:
        return VS_OP_UPDATE_USER;
    case 34:
        return VS_OP_DELETE_USER;
    case 37:
        return VS_OP_CHANGE_PASSWORD;
    case 36:
        return VS_OP_UPDATE_PERMISSIONS;
    case 42:
        return VS_OP_CREATE_PAT;
    case 43:
        return VS_OP_DELETE_PAT;
    case 604:
        return VS_OP_JOIN_CONSUMER_GROUP;
    case 605:
        return VS_OP_LEAVE_CONSUMER_GROUP;
    case 101:
        return VS_OP_SEND_MESSAGES;
    case 121:
        return VS_OP_STORE_CONSUMER_OFFSET;
    case 122:
        return VS_OP_DELETE_CONSUMER_OFFSET;
    default:
        return VS_OP_NON_REPLICATED;
    }
}

int
vsc_operation_is_replicated(uint8_t op)
{
    return op == VS_OP_REGISTER || op == VS_OP_LOGOUT ||
           (op >= VS_OP_CREATE_STREAM && op <= VS_OP_LEAVE_CONSUMER_GROUP);
}

void
vsc_request_header(struct vs_hdr_request *h, struct vs_u128 client,
                   uint64_t session, uint64_t request, uint8_t operation,
                   uint32_t code, const void *body, size_t len, int checksum)
{
    memset(h, 0, sizeof *h);
    h->f.size = (uint32_t)(VS_HEADER_SIZE + len);
    h->f.command = VS_CMD_REQUEST;
    h->client = client;
    if (checksum)
        h->request_checksum = vs_checksum(body, len);
    h->request = request;
    h->operation = operation;
    h->session = session;
    if (operation == VS_OP_NON_REPLICATED)
        h->command_code = code;
}

void
vsc_frame_request(struct vs_wbuf *w, struct vs_u128 client, uint64_t session,
                  uint64_t request, uint8_t operation, uint32_t code,
                  const void *body, size_t len, int checksum)
{
    struct vs_hdr_request h;
    vsc_request_header(&h, client, session, request, operation, code, body, len,
                       checksum);
    vs_wr_bytes(w, &h, sizeof h);
    if (len > 0)
        vs_wr_bytes(w, body, len);
}

static void
vsc_body_version(struct vs_wbuf *w, uint32_t protocol_version,
                 const char *sdk_name, const char *sdk_version)
{
    vs_wr_u32(w, protocol_version);
    vsc_wr_name(w, sdk_name);
    vsc_wr_name(w, sdk_version);
}

void
vsc_body_login(struct vs_wbuf *w, uint32_t protocol_version,
               const char *sdk_name, const char *sdk_version, const char *user,
               const char *password)
{
    vsc_body_version(w, protocol_version, sdk_name, sdk_version);
    vsc_wr_name(w, user);
    vsc_wr_name(w, password);
    vs_wr_u32(w, 0);
}

void
vsc_body_login_pat(struct vs_wbuf *w, uint32_t protocol_version,
                   const char *sdk_name, const char *sdk_version,
                   const char *token)
{
    vsc_body_version(w, protocol_version, sdk_name, sdk_version);
    vsc_wr_name(w, token);
    vs_wr_u32(w, 0);
}

/* ---- replies ---- */

uint32_t
vsc_eviction_code(uint8_t reason, uint32_t version, uint32_t version_min)
{
    switch (reason) {
    case VS_EVICT_INVALID_CREDENTIALS:
        return VS_E_INVALID_CREDENTIALS;
    case VS_EVICT_INVALID_TOKEN:
        return VS_E_INVALID_PAT;
    case VS_EVICT_NO_SESSION:
    case VS_EVICT_SESSION_TOO_LOW:
    case VS_EVICT_SESSION_RELEASE_MISMATCH:
    case VS_EVICT_USER_INACTIVE:
    case VS_EVICT_SESSION_ERROR:
        return VS_E_UNAUTHENTICATED;
    case VS_EVICT_STALE_CLIENT:
        return VS_E_STALE_CLIENT;
    case VS_EVICT_INCOMPATIBLE_PROTOCOL:
        if (version_min != 0 && version >= version_min)
            return VS_E_INCOMPATIBLE_PROTOCOL_VERSION;
        return VS_E_UNAUTHENTICATED;
    case VS_EVICT_MALFORMED_LOGIN:
        return VS_E_INVALID_FORMAT;
    default:
        return VS_E_INVALID_COMMAND;
    }
}

int
vsc_reply_decode(const uint8_t *frame, size_t len, struct vsc_reply *r)
{
    struct vs_hdr_reply h;
    struct vs_rbuf rb;
    uint32_t count;
    memset(r, 0, sizeof *r);
    if (len < VS_HEADER_SIZE)
        return VS_E_EMPTY_RESPONSE;
    memcpy(&h, frame, sizeof h);
    r->command = h.f.command;
    if (h.f.command == VS_CMD_EVICTION) {
        struct vs_hdr_eviction e;
        memcpy(&e, frame, sizeof e);
        r->reason = e.reason;
        return (int)vsc_eviction_code(e.reason, e.server_protocol_version,
                                      e.server_protocol_version_min);
    }
    if (h.f.command != VS_CMD_REPLY)
        return -EPROTO;
    if (h.f.size < VS_HEADER_SIZE || h.f.size > len)
        return -EPROTO;
    r->operation = h.operation;
    r->status = h.status;
    /* a code that does not fit a positive int would read as -errno */
    if (h.status > INT32_MAX)
        return -EPROTO;
    if (h.status != 0)
        return (int)h.status;
    if (!vs_operation_is_declared(h.operation))
        return -EPROTO;
    r->payload = frame + VS_HEADER_SIZE;
    r->payload_len = h.f.size - VS_HEADER_SIZE;
    if (!vs_operation_is_result_framed(h.operation) ||
        (h.operation == VS_OP_REGISTER && r->payload_len == 0))
        return 0;
    vs_rbuf_init(&rb, r->payload, r->payload_len);
    count = vs_rd_u32(&rb);
    if (rb.err || vs_rbuf_left(&rb) / 8 < count)
        return -EPROTO;
    if (count > 0) {
        (void)vs_rd_u32(&rb); /* index */
        r->result = vs_rd_u32(&rb);
        if (r->result > INT32_MAX)
            return -EPROTO;
    }
    r->payload += 4 + 8 * (size_t)count;
    r->payload_len -= 4 + 8 * (size_t)count;
    return (int)r->result;
}

/* Reads [len u8][bytes] into a NUL-terminated buffer of 256 bytes. */
static void
vsc_rd_name(struct vs_rbuf *r, char out[VSC_NAME_MAX + 1])
{
    uint8_t n = vs_rd_u8(r);
    const uint8_t *p = vs_rd_bytes(r, n);
    if (p == NULL) {
        out[0] = '\0';
        return;
    }
    memcpy(out, p, n);
    out[n] = '\0';
}

int
vsc_decode_login(const uint8_t *p, size_t len, uint32_t *user_id,
                 uint64_t *session, uint32_t *server_protocol,
                 char server_version[256])
{
    struct vs_rbuf r;
    vs_rbuf_init(&r, p, len);
    *user_id = vs_rd_u32(&r);
    *session = vs_rd_u64(&r);
    *server_protocol = vs_rd_u32(&r);
    vsc_rd_name(&r, server_version);
    return r.err ? -EPROTO : 0;
}

/* Copies a u32-length-prefixed block into heap memory. */
static uint8_t *
vsc_rd_block(struct vs_rbuf *r, uint32_t *len)
{
    const uint8_t *p;
    uint8_t *out;
    *len = vs_rd_u32(r);
    p = vs_rd_bytes(r, *len);
    if (p == NULL) {
        *len = 0;
        return NULL;
    }
    out = vs_xmalloc(*len + 1);
    memcpy(out, p, *len);
    return out;
}

static void
vsc_rd_topic_header(struct vs_rbuf *r, struct vsc_topic *t)
{
    t->id = vs_rd_u32(r);
    t->created_at = vs_rd_u64(r);
    t->partitions_count = vs_rd_u32(r);
    t->message_expiry = vs_rd_u64(r);
    t->compression = vs_rd_u8(r);
    t->max_topic_size = vs_rd_u64(r);
    t->size_bytes = vs_rd_u64(r);
    t->messages_count = vs_rd_u64(r);
    vsc_rd_name(r, t->name);
    t->explicit_opts = vsc_rd_block(r, &t->explicit_len);
    t->derived_opts = vsc_rd_block(r, &t->derived_len);
}

void
vsc_topic_fini(struct vsc_topic *t)
{
    if (t == NULL)
        return;
    free(t->explicit_opts);
    free(t->derived_opts);
    free(t->partitions);
    t->explicit_opts = t->derived_opts = NULL;
    t->partitions = NULL;
    t->n_partitions = 0;
}

void
vsc_stream_fini(struct vsc_stream *s)
{
    size_t i;
    if (s == NULL)
        return;
    for (i = 0; i < s->n_topics; i++)
        vsc_topic_fini(&s->topics[i]);
    free(s->topics);
    s->topics = NULL;
    s->n_topics = 0;
}

static void
vsc_rd_stream_record(struct vs_rbuf *r, struct vsc_stream *s)
{
    uint32_t olen;
    s->id = vs_rd_u32(r);
    s->created_at = vs_rd_u64(r);
    s->topics_count = vs_rd_u32(r);
    s->size_bytes = vs_rd_u64(r);
    s->messages_count = vs_rd_u64(r);
    vsc_rd_name(r, s->name);
    olen = vs_rd_u32(r);
    (void)vs_rd_bytes(r, olen);
}

/* Decodes one stream record at the reader (for lists). */
int
vsc_decode_records(const uint8_t *p, size_t len, size_t elem_size,
                   vsc_record_fn *decode, void **out, size_t *n)
{
    struct vs_rbuf r;
    uint8_t *arr = NULL;
    size_t cap = 0, count = 0;
    vs_rbuf_init(&r, p, len);
    while (vs_rbuf_left(&r) > 0) {
        if (count == cap) {
            cap = cap ? cap * 2 : 8;
            arr = vs_xrealloc(arr, cap * elem_size);
        }
        if (decode(&r, arr + count * elem_size) != 0 || r.err != 0) {
            free(arr);
            *out = NULL;
            *n = 0;
            return -EPROTO;
        }
        count++;
    }
    *out = arr;
    *n = count;
    return 0;
}

int
vsc_decode_stream_at(struct vs_rbuf *r, struct vsc_stream *s)
{
    memset(s, 0, sizeof *s);
    vsc_rd_stream_record(r, s);
    return r->err ? -EPROTO : 0;
}

int
vsc_decode_stream(const uint8_t *p, size_t len, struct vsc_stream *s,
                  int with_topics)
{
    struct vs_rbuf r;
    uint32_t i;
    memset(s, 0, sizeof *s);
    vs_rbuf_init(&r, p, len);
    vsc_rd_stream_record(&r, s);
    if (r.err)
        return -EPROTO;
    if (!with_topics)
        return 0;
    /* Each header is at least 58 bytes: bound the allocation. */
    if (s->topics_count > vs_rbuf_left(&r) / 58)
        return -EPROTO;
    s->topics =
        vs_xcalloc(s->topics_count ? s->topics_count : 1, sizeof *s->topics);
    for (i = 0; i < s->topics_count && !r.err; i++) {
        vsc_rd_topic_header(&r, &s->topics[i]);
        s->n_topics = i + 1;
    }
    if (r.err) {
        vsc_stream_fini(s);
        return -EPROTO;
    }
    return 0;
}

/* Decodes one topic header at the reader (for lists). */
int
vsc_decode_topic_at(struct vs_rbuf *r, struct vsc_topic *t)
{
    memset(t, 0, sizeof *t);
    vsc_rd_topic_header(r, t);
    if (r->err) {
        vsc_topic_fini(t);
        return -EPROTO;
    }
    return 0;
}

int
vsc_decode_topic(const uint8_t *p, size_t len, struct vsc_topic *t,
                 int with_partitions)
{
    struct vs_rbuf r;
    uint32_t i;
    memset(t, 0, sizeof *t);
    vs_rbuf_init(&r, p, len);
    vsc_rd_topic_header(&r, t);
    if (r.err)
        goto fail;
    if (!with_partitions)
        return 0;
    if (t->partitions_count > vs_rbuf_left(&r) / 40)
        goto fail;
    t->partitions = vs_xcalloc(t->partitions_count ? t->partitions_count : 1,
                               sizeof *t->partitions);
    for (i = 0; i < t->partitions_count; i++) {
        struct vsc_partition *q = &t->partitions[i];
        q->id = vs_rd_u32(&r);
        q->created_at = vs_rd_u64(&r);
        q->segments_count = vs_rd_u32(&r);
        q->current_offset = vs_rd_u64(&r);
        q->size_bytes = vs_rd_u64(&r);
        q->messages_count = vs_rd_u64(&r);
    }
    t->n_partitions = t->partitions_count;
    if (r.err)
        goto fail;
    return 0;
fail:
    vsc_topic_fini(t);
    return -EPROTO;
}

void
vsc_user_fini(struct vsc_user *u)
{
    if (u == NULL)
        return;
    vsc_perms_fini(&u->perms);
    u->has_perms = 0;
}

/* Decodes a UserRecord (details = 0) or UserDetails at the reader. */
int
vsc_decode_user_at(struct vs_rbuf *r, struct vsc_user *u, int details)
{
    uint32_t olen;
    memset(u, 0, sizeof *u);
    u->id = vs_rd_u32(r);
    u->created_at = vs_rd_u64(r);
    u->status = vs_rd_u8(r);
    vsc_rd_name(r, u->name);
    olen = vs_rd_u32(r);
    (void)vs_rd_bytes(r, olen);
    if (r->err)
        return -EPROTO;
    if (!details)
        return 0;
    if (vs_rd_u8(r) == 1) {
        uint32_t plen = vs_rd_u32(r);
        const uint8_t *pp = vs_rd_bytes(r, plen);
        if (pp == NULL || vsc_perms_decode(pp, plen, &u->perms) != 0)
            return -EPROTO;
        u->has_perms = 1;
    } else {
        /* `00000000`: no permissions (readers test only the first byte). */
        size_t skip = vs_rbuf_left(r) < 3 ? vs_rbuf_left(r) : 3;
        (void)vs_rd_bytes(r, skip);
    }
    return r->err ? -EPROTO : 0;
}

int
vsc_decode_user(const uint8_t *p, size_t len, struct vsc_user *u, int details)
{
    struct vs_rbuf r;
    vs_rbuf_init(&r, p, len);
    return vsc_decode_user_at(&r, u, details);
}
