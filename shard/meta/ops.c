/*
 * shard/meta/ops.c - encoding and decoding of metadata op bodies, name
 * rules, and the Permissions wire parser (see ops.h).
 *
 * Invariants: the decoder reads through vs_rbuf (never out of bounds),
 * refuses trailing bytes and validates every length against the fixed
 * buffers of struct meta_op. Callers: any process.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/errors.h"
#include "common/wire.h"
#include "shard/meta/ops.h"

/* Fields of `operation` in format 1. */
static uint32_t
fields_v1(unsigned operation)
{
    switch (operation) {
    case VS_OP_REGISTER:
        return META_F_USER_ID;
    case VS_OP_LOGOUT:
        return 0x80000000u; /* no field, but known */
    case VS_OP_GENESIS:
        return META_F_NAME | META_F_SECRET;
    case VS_OP_CREATE_STREAM:
        return META_F_NAME;
    case VS_OP_UPDATE_STREAM:
        return META_F_STREAM | META_F_NAME;
    case VS_OP_DELETE_STREAM:
    case VS_OP_PURGE_STREAM:
        return META_F_STREAM;
    case VS_OP_CREATE_TOPIC:
    case VS_OP_CREATE_TOPIC_WITH_ASSIGNMENTS:
        return META_F_STREAM | META_F_NAME | META_F_COUNT | META_F_OPTIONS;
    case VS_OP_UPDATE_TOPIC:
        return META_F_STREAM | META_F_TOPIC | META_F_NAME | META_F_OPTIONS;
    case VS_OP_DELETE_TOPIC:
    case VS_OP_PURGE_TOPIC:
        return META_F_STREAM | META_F_TOPIC;
    case VS_OP_CREATE_PARTITIONS:
    case VS_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS:
    case VS_OP_DELETE_PARTITIONS:
        return META_F_STREAM | META_F_TOPIC | META_F_COUNT;
    case VS_OP_DELETE_SEGMENTS:
    case VS_OP_TRUNCATE_PARTITION:
        return META_F_STREAM | META_F_TOPIC | META_F_PARTITION | META_F_OFFSET;
    case VS_OP_CREATE_CONSUMER_GROUP:
        return META_F_STREAM | META_F_TOPIC | META_F_NAME;
    case VS_OP_DELETE_CONSUMER_GROUP:
    case VS_OP_LEAVE_CONSUMER_GROUP:
        return META_F_STREAM | META_F_TOPIC | META_F_GROUP;
    case VS_OP_JOIN_CONSUMER_GROUP:
        return META_F_STREAM | META_F_TOPIC | META_F_GROUP | META_F_INFLIGHT;
    case VS_OP_REMOVE_CONSUMER_GROUP_MEMBER:
        return META_F_CLIENT;
    case VS_OP_COMPLETE_CONSUMER_GROUP_REVOCATION:
        return META_F_STREAM | META_F_TOPIC | META_F_GROUP | META_F_PARTITION;
    case VS_OP_CREATE_USER:
        return META_F_NAME | META_F_STATUS | META_F_PERMS | META_F_SECRET;
    case VS_OP_UPDATE_USER:
        return META_F_USER | META_F_HAS_NAME | META_F_STATUS;
    case VS_OP_DELETE_USER:
        return META_F_USER;
    case VS_OP_CHANGE_PASSWORD:
        return META_F_USER | META_F_SECRET | META_F_SECRET2;
    case VS_OP_UPDATE_PERMISSIONS:
        return META_F_USER | META_F_PERMS;
    case VS_OP_CREATE_PAT:
        return META_F_NAME | META_F_SECRET | META_F_EXPIRY;
    case VS_OP_DELETE_PAT:
        return META_F_NAME;
    default:
        return 0;
    }
}

uint32_t
meta_op_fields_v(unsigned operation, unsigned format)
{
    uint32_t f = fields_v1(operation);
    if (f == 0 || format < META_OP_FORMAT_MIN || format > META_OP_FORMAT)
        return 0;
    if (format >= 2 && (operation == VS_OP_DELETE_SEGMENTS ||
                        operation == VS_OP_TRUNCATE_PARTITION))
        f |= META_F_CREATED_OP;
    if (format >= 3 && (operation == VS_OP_CREATE_TOPIC ||
                        operation == VS_OP_CREATE_TOPIC_WITH_ASSIGNMENTS))
        f |= META_F_REPLICATION;
    return f;
}

uint32_t
meta_op_fields(unsigned operation)
{
    return meta_op_fields_v(operation, META_OP_FORMAT);
}

/* The oldest format that carries what `op` holds: what the encoder
 * writes (unchanged operations keep their format-1 bytes; a CreateTopic
 * with the default replication factor 0 needs no format-3 field). */
static uint8_t
op_format(const struct meta_op *op)
{
    uint32_t need = meta_op_fields(op->operation);
    if (op->opts.replication_factor == 0)
        need &= ~(uint32_t)META_F_REPLICATION;
    for (unsigned v = META_OP_FORMAT_MIN; v < META_OP_FORMAT; v++)
        if (meta_op_fields_v(op->operation, v) == need)
            return (uint8_t)v;
    return META_OP_FORMAT;
}

void
meta_op_init(struct meta_op *op, unsigned operation)
{
    memset(op, 0, offsetof(struct meta_op, inflight));
    op->operation = (uint8_t)operation;
}

void
meta_ident_id(struct meta_ident *id, uint32_t value)
{
    memset(id, 0, sizeof(*id));
    id->kind = META_IDENT_NUMERIC;
    id->id = value;
}

void
meta_ident_name(struct meta_ident *id, const char *name, size_t len)
{
    memset(id, 0, sizeof(*id));
    id->kind = META_IDENT_NAME;
    if (len > META_NAME_MAX)
        len = META_NAME_MAX;
    id->len = (uint8_t)len;
    memcpy(id->name, name, len);
}

void
meta_op_set_name(struct meta_op *op, const char *name, size_t len)
{
    if (len > META_NAME_MAX)
        len = META_NAME_MAX;
    op->name_len = (uint8_t)len;
    memcpy(op->name, name, len);
    op->name[len] = '\0';
}

void
meta_op_set_secret(struct meta_op *op, const void *s, size_t len)
{
    if (len > META_PWHASH_MAX)
        len = META_PWHASH_MAX;
    op->secret_len = (uint8_t)len;
    memcpy(op->secret, s, len);
}

static int
put_ident(struct vs_wbuf *w, const struct meta_ident *id)
{
    if (id->kind == META_IDENT_NUMERIC) {
        vs_wr_u8(w, 1);
        vs_wr_u32(w, id->id);
        return 0;
    }
    if (id->kind != META_IDENT_NAME || id->len == 0)
        return -EINVAL;
    vs_wr_u8(w, 2);
    vs_wr_u8(w, id->len);
    vs_wr_bytes(w, id->name, id->len);
    return 0;
}

static void
get_ident(struct vs_rbuf *r, struct meta_ident *id, int *bad)
{
    memset(id, 0, sizeof(*id));
    uint8_t kind = vs_rd_u8(r);
    if (kind == 1) {
        id->kind = META_IDENT_NUMERIC;
        id->id = vs_rd_u32(r);
    } else if (kind == 2) {
        id->kind = META_IDENT_NAME;
        id->len = vs_rd_u8(r);
        const uint8_t *p = vs_rd_bytes(r, id->len);
        if (p)
            memcpy(id->name, p, id->len);
        if (id->len == 0)
            *bad = 1;
    } else {
        *bad = 1;
    }
}

static void
get_name(struct vs_rbuf *r, char *out, uint8_t *len)
{
    *len = vs_rd_u8(r);
    const uint8_t *p = vs_rd_bytes(r, *len);
    if (p) {
        memcpy(out, p, *len);
        out[*len] = '\0';
    }
}

static void
get_secret(struct vs_rbuf *r, uint8_t *out, uint8_t *len, int *bad)
{
    *len = vs_rd_u8(r);
    if (*len > META_PWHASH_MAX) {
        *bad = 1;
        return;
    }
    const uint8_t *p = vs_rd_bytes(r, *len);
    if (p)
        memcpy(out, p, *len);
}

int
meta_op_encode(const struct meta_op *op, struct vs_wbuf *w)
{
    if (meta_op_fields(op->operation) == 0)
        return -EINVAL;
    uint8_t fmt = op_format(op);
    uint32_t f = meta_op_fields_v(op->operation, fmt);
    vs_wr_u8(w, fmt);
    vs_wr_u8(w, op->operation);
    if ((f & META_F_STREAM) && put_ident(w, &op->stream) != 0)
        return -EINVAL;
    if ((f & META_F_TOPIC) && put_ident(w, &op->topic) != 0)
        return -EINVAL;
    if ((f & META_F_GROUP) && put_ident(w, &op->group) != 0)
        return -EINVAL;
    if ((f & META_F_USER) && put_ident(w, &op->user) != 0)
        return -EINVAL;
    if (f & META_F_NAME) {
        vs_wr_u8(w, op->name_len);
        vs_wr_bytes(w, op->name, op->name_len);
    }
    if (f & META_F_COUNT)
        vs_wr_u32(w, op->count);
    if (f & META_F_PARTITION)
        vs_wr_u32(w, op->partition_id);
    if (f & META_F_OPTIONS) {
        const struct meta_topic_opts *o = &op->opts;
        vs_wr_u64(w, o->message_expiry);
        vs_wr_u64(w, o->max_topic_size);
        vs_wr_u64(w, o->segment_size);
        vs_wr_u64(w, o->size_of_messages_required_to_save);
        vs_wr_u32(w, o->messages_required_to_save);
        vs_wr_u8(w, o->compression);
        vs_wr_u8(w, o->enforce_fsync);
        vs_wr_u8(w, o->preallocate_segments);
        vs_wr_u8(w, o->explicit_mask);
    }
    if (f & META_F_HAS_NAME) {
        vs_wr_u8(w, op->has_name ? 1 : 0);
        if (op->has_name) {
            vs_wr_u8(w, op->name_len);
            vs_wr_bytes(w, op->name, op->name_len);
        }
    }
    if (f & META_F_STATUS) {
        vs_wr_u8(w, op->has_status ? 1 : 0);
        vs_wr_u8(w, op->status);
    }
    if (f & META_F_PERMS) {
        vs_wr_u8(w, op->has_perms ? 1 : 0);
        uint32_t n = op->has_perms ? op->perms_len : 0;
        vs_wr_u32(w, n);
        if (n)
            vs_wr_bytes(w, op->perms, n);
    }
    if (f & META_F_SECRET) {
        vs_wr_u8(w, op->secret_len);
        vs_wr_bytes(w, op->secret, op->secret_len);
    }
    if (f & META_F_SECRET2) {
        vs_wr_u8(w, op->secret2_len);
        vs_wr_bytes(w, op->secret2, op->secret2_len);
    }
    if (f & META_F_EXPIRY)
        vs_wr_u64(w, op->expiry);
    if (f & META_F_CLIENT)
        vs_wr_u128(w, op->client);
    if (f & META_F_OFFSET)
        vs_wr_u64(w, op->offset);
    if (f & META_F_INFLIGHT) {
        if (op->inflight_count > META_INFLIGHT_MAX)
            return -EINVAL;
        vs_wr_u32(w, op->inflight_count);
        for (uint32_t i = 0; i < op->inflight_count; i++)
            vs_wr_u32(w, op->inflight[i]);
    }
    if (f & META_F_USER_ID)
        vs_wr_u32(w, op->user_id);
    if (f & META_F_CREATED_OP)
        vs_wr_u64(w, op->created_op);
    if (f & META_F_REPLICATION)
        vs_wr_u8(w, op->opts.replication_factor);
    return 0;
}

int
meta_op_decode(const uint8_t *body, size_t len, struct meta_op *op)
{
    struct vs_rbuf r;
    int bad = 0;
    vs_rbuf_init(&r, body, len);
    uint8_t fmt = vs_rd_u8(&r);
    uint8_t operation = vs_rd_u8(&r);
    if (r.err)
        return -EPROTO;
    if (fmt < META_OP_FORMAT_MIN || fmt > META_OP_FORMAT)
        return -ENOTSUP;
    uint32_t f = meta_op_fields_v(operation, fmt);
    if (f == 0)
        return -EINVAL;
    meta_op_init(op, operation);
    if (f & META_F_STREAM)
        get_ident(&r, &op->stream, &bad);
    if (f & META_F_TOPIC)
        get_ident(&r, &op->topic, &bad);
    if (f & META_F_GROUP)
        get_ident(&r, &op->group, &bad);
    if (f & META_F_USER)
        get_ident(&r, &op->user, &bad);
    if (f & META_F_NAME)
        get_name(&r, op->name, &op->name_len);
    if (f & META_F_COUNT)
        op->count = vs_rd_u32(&r);
    if (f & META_F_PARTITION)
        op->partition_id = vs_rd_u32(&r);
    if (f & META_F_OPTIONS) {
        struct meta_topic_opts *o = &op->opts;
        o->message_expiry = vs_rd_u64(&r);
        o->max_topic_size = vs_rd_u64(&r);
        o->segment_size = vs_rd_u64(&r);
        o->size_of_messages_required_to_save = vs_rd_u64(&r);
        o->messages_required_to_save = vs_rd_u32(&r);
        o->compression = vs_rd_u8(&r);
        o->enforce_fsync = vs_rd_u8(&r);
        o->preallocate_segments = vs_rd_u8(&r);
        o->explicit_mask = vs_rd_u8(&r);
    }
    if (f & META_F_HAS_NAME) {
        uint8_t h = vs_rd_u8(&r);
        if (h > 1)
            bad = 1;
        op->has_name = h;
        if (h == 1)
            get_name(&r, op->name, &op->name_len);
    }
    if (f & META_F_STATUS) {
        uint8_t h = vs_rd_u8(&r);
        if (h > 1)
            bad = 1;
        op->has_status = h;
        op->status = vs_rd_u8(&r);
    }
    if (f & META_F_PERMS) {
        uint8_t h = vs_rd_u8(&r);
        uint32_t n = vs_rd_u32(&r);
        if (h > 1 || (h == 0 && n != 0) || n > len)
            bad = 1;
        op->has_perms = h;
        op->perms_len = n;
        op->perms = (h == 1 && !bad) ? vs_rd_bytes(&r, n) : NULL;
    }
    if (f & META_F_SECRET)
        get_secret(&r, op->secret, &op->secret_len, &bad);
    if (f & META_F_SECRET2)
        get_secret(&r, op->secret2, &op->secret2_len, &bad);
    if (f & META_F_EXPIRY)
        op->expiry = vs_rd_u64(&r);
    if (f & META_F_CLIENT)
        op->client = vs_rd_u128(&r);
    if (f & META_F_OFFSET)
        op->offset = vs_rd_u64(&r);
    if (f & META_F_INFLIGHT) {
        uint32_t n = vs_rd_u32(&r);
        if (n > META_INFLIGHT_MAX || (size_t)n * 4 > vs_rbuf_left(&r)) {
            bad = 1;
        } else {
            op->inflight_count = n;
            for (uint32_t i = 0; i < n; i++)
                op->inflight[i] = vs_rd_u32(&r);
        }
    }
    if (f & META_F_USER_ID)
        op->user_id = vs_rd_u32(&r);
    if (f & META_F_CREATED_OP)
        op->created_op = vs_rd_u64(&r);
    if (f & META_F_REPLICATION) {
        op->opts.replication_factor = vs_rd_u8(&r);
        if (op->opts.replication_factor == 0)
            bad = 1; /* the default is written as format 1 */
    }
    if (r.err)
        return -EPROTO;
    if (bad)
        return -EINVAL;
    if (vs_rbuf_left(&r) != 0)
        return -EPROTO;
    return 0;
}

int
meta_utf8_valid(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            n = 1;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (len - i - 1 < n)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
            (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += n + 1;
    }
    return 1;
}

uint32_t
meta_name_check(const char *name, size_t len)
{
    if (len == 0 || len > META_NAME_MAX ||
        !meta_utf8_valid((const uint8_t *)name, len))
        return VS_E_INVALID_COMMAND;
    return 0;
}

uint32_t
meta_username_check(const char *name, size_t len)
{
    uint32_t e = meta_name_check(name, len);
    if (e)
        return e;
    if (len < META_USERNAME_MIN || len > META_USERNAME_MAX)
        return VS_E_INVALID_USERNAME;
    return 0;
}

int
meta_perms_parse(const uint8_t *p, size_t len, const struct meta_perms_visit *v)
{
    struct vs_rbuf r;
    vs_rbuf_init(&r, p, len);
    uint16_t g = 0;
    for (int i = 0; i < 10; i++)
        if (vs_rd_u8(&r))
            g |= (uint16_t)(1u << i);
    if (r.err)
        return -EPROTO;
    if (v && v->global)
        v->global(v->arg, g);
    uint8_t more = vs_rd_u8(&r);
    while (more && !r.err) {
        uint32_t sid = vs_rd_u32(&r);
        uint8_t bits = 0;
        for (int i = 0; i < 6; i++)
            if (vs_rd_u8(&r))
                bits |= (uint8_t)(1u << i);
        uint8_t has_topics = vs_rd_u8(&r) ? 1 : 0;
        if (r.err)
            break;
        if (v && v->stream)
            v->stream(v->arg, sid, bits, has_topics);
        uint8_t tmore = has_topics;
        while (tmore && !r.err) {
            uint32_t tid = vs_rd_u32(&r);
            uint8_t tb = 0;
            for (int i = 0; i < 4; i++)
                if (vs_rd_u8(&r))
                    tb |= (uint8_t)(1u << i);
            tmore = vs_rd_u8(&r);
            if (!r.err && v && v->topic)
                v->topic(v->arg, sid, tid, tb);
        }
        more = vs_rd_u8(&r);
    }
    if (r.err || vs_rbuf_left(&r) != 0)
        return -EPROTO;
    return 0;
}
