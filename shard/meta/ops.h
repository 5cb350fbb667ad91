/*
 * shard/meta/ops.h - the body of a metadata prepare: one operation's input
 * in a compact, versioned binary encoding.
 *
 * Role: the serving layer (shard 0, after pre-proposal checks: body
 * decoding, name rules, option resolution, password hashing, PAT token
 * digest) fills a struct meta_op and encodes it with meta_op_encode(); the
 * bytes become the prepare body in the WAL. meta_apply() decodes them with
 * meta_op_decode(). Secrets never appear in plaintext: password fields
 * carry argon2id PHC strings, PAT fields a BLAKE2b-256 digest.
 *
 * Encoding (little-endian): [format u8 = META_OP_FORMAT][operation u8]
 * then, in the fixed order of enum meta_op_field, exactly the fields the
 * operation uses (meta_op_fields()):
 *   ident:   [kind u8: 1 numeric, 2 name][id u32 | len u8 + bytes]
 *   name:    [len u8][bytes]            u32/u64: fixed width
 *   options: message_expiry u64, max_topic_size u64, segment_size u64,
 *            size_to_save u64, msgs_to_save u32, compression u8,
 *            enforce_fsync u8, preallocate u8, explicit_mask u8
 *   perms:   [has u8][len u32][Permissions wire bytes] (protocol-2 §2.2)
 *   secret:  [len u8][bytes]  client: u128   list: [n u32][u32 × n]
 * Trailing bytes are refused. Decoding never reads out of bounds and
 * returns -EPROTO (truncated/trailing), -EINVAL (bad value, unknown
 * operation) or -ENOTSUP (unknown format byte).
 * Formats: 1 is the first; 2 adds META_F_CREATED_OP (the partition's
 * created_op, u64, last) to DeleteSegments and TruncatePartition, so a
 * watermark computed for one partition is never applied to another that
 * reuses its ids. Every other operation has the same fields in both, and
 * the encoder writes format 1 for them (their bytes, WAL entries and
 * golden fixtures, stay as they were) and format 2 only where the fields
 * differ; the decoder reads both (a format-1 op 68 has created_op 0:
 * unchecked, as it was). 3 adds META_F_REPLICATION (the topic's
 * replication factor, u8, last) to CreateTopic (132 and 64); the encoder
 * writes it only for a factor other than 0 (the default keeps its
 * format-1 bytes), and a format-3 factor of 0 is refused.
 *
 * Operations (enum vs_operation values): REGISTER, LOGOUT, GENESIS, every
 * metadata op 128..149 and the internal ones 64..68; 64 and 65 carry the
 * same fields as 132 and 136 (vstream derives partition owners from the
 * group id, so an "assignment" needs no extra fields).
 *
 * Callers: any process (pure functions).
 */
#ifndef VS_SHARD_META_OPS_H
#define VS_SHARD_META_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"
#include "shard/meta/state.h"

#define META_OP_FORMAT        3u /* the newest format: written, 1.. read */
#define META_OP_FORMAT_MIN    1u
#define META_INFLIGHT_MAX     4096u
#define META_PROTOCOL_VERSION 11264u /* 0.11.0 */
#define META_SERVER_VERSION   "0.9.0-edge.5"

enum meta_ident_kind {
    META_IDENT_NONE = 0,
    META_IDENT_NUMERIC = 1,
    META_IDENT_NAME = 2,
};

/* A stream/topic/group/user identifier: numeric id or name. */
struct meta_ident {
    uint8_t kind; /* enum meta_ident_kind */
    uint8_t len;
    uint32_t id;
    char name[META_NAME_MAX + 1];
};

enum meta_op_field {
    META_F_STREAM = 1u << 0,
    META_F_TOPIC = 1u << 1,
    META_F_GROUP = 1u << 2,
    META_F_USER = 1u << 3,
    META_F_NAME = 1u << 4,      /* new name / username / PAT name */
    META_F_COUNT = 1u << 5,     /* partitions_count */
    META_F_PARTITION = 1u << 6, /* partition id */
    META_F_OPTIONS = 1u << 7,   /* topic options */
    META_F_HAS_NAME = 1u << 8,  /* UpdateUser: [has u8] then name if 1 */
    META_F_STATUS = 1u << 9,    /* [has u8][status u8] */
    META_F_PERMS = 1u << 10,
    META_F_SECRET = 1u << 11,  /* password PHC string or PAT digest */
    META_F_SECRET2 = 1u << 12, /* ChangePassword: the verified old hash */
    META_F_EXPIRY = 1u << 13,  /* PAT expiry duration µs */
    META_F_CLIENT = 1u << 14,  /* client u128 */
    META_F_OFFSET = 1u << 15,  /* u64 */
    META_F_INFLIGHT = 1u << 16,
    META_F_USER_ID = 1u << 17,     /* u32 */
    META_F_CREATED_OP = 1u << 18,  /* u64 (format 2) */
    META_F_REPLICATION = 1u << 19, /* u8 1..255 (format 3) */
};

struct meta_op {
    uint8_t operation; /* enum vs_operation */
    struct meta_ident stream, topic, group, user;
    uint8_t name_len;
    char name[META_NAME_MAX + 1];
    uint8_t has_name;
    uint8_t has_status;
    uint8_t status; /* raw byte; apply stores 1/2, other values as 1 */
    uint32_t count;
    uint32_t partition_id;
    struct meta_topic_opts opts;
    /* permissions: borrowed wire bytes (point into the decoded body) */
    uint8_t has_perms;
    uint32_t perms_len;
    const uint8_t *perms;
    uint8_t secret_len;
    uint8_t secret[META_PWHASH_MAX];
    uint8_t secret2_len;
    uint8_t secret2[META_PWHASH_MAX];
    uint64_t expiry;
    struct vs_u128 client;
    uint64_t offset;
    uint32_t user_id;
    /* DeleteSegments/TruncatePartition: the created_op of the partition
     * `offset` was computed for (0: unchecked, format 1) */
    uint64_t created_op;
    /* JoinGroup: partitions the group polled past its committed offset
     * (in flight), computed by the data plane before proposing */
    uint32_t inflight_count;
    uint32_t inflight[META_INFLIGHT_MAX];
};

/* Fields used by `operation` (enum meta_op_field) in the newest format,
 * or 0 if unknown. */
uint32_t meta_op_fields(unsigned operation);
/* The same in format `format` (META_OP_FORMAT_MIN..META_OP_FORMAT), or 0
 * if unknown. */
uint32_t meta_op_fields_v(unsigned operation, unsigned format);

/* Zeroes an op and sets its operation. */
void meta_op_init(struct meta_op *op, unsigned operation);

/* Helpers to fill identifiers and names (len <= 255; no validation). */
void meta_ident_id(struct meta_ident *id, uint32_t value);
void meta_ident_name(struct meta_ident *id, const char *name, size_t len);
void meta_op_set_name(struct meta_op *op, const char *name, size_t len);
void meta_op_set_secret(struct meta_op *op, const void *s, size_t len);

/* Appends the encoding of op to w. Returns 0, or -EINVAL if the operation
 * is unknown or a length is out of range. */
int meta_op_encode(const struct meta_op *op, struct vs_wbuf *w);

/* Decodes a body into op (op->perms borrows from body). 0 or -errno. */
int meta_op_decode(const uint8_t *body, size_t len, struct meta_op *op);

/* Name rules (protocol-2 §11), checked before proposing and again in
 * apply: 1..255 bytes of valid UTF-8 -> 0, else VS_E_INVALID_COMMAND (3);
 * usernames additionally 3..50 bytes else VS_E_INVALID_USERNAME (43). */
uint32_t meta_name_check(const char *name, size_t len);
uint32_t meta_username_check(const char *name, size_t len);
/* 1 if the bytes are valid UTF-8 (no overlongs, no surrogates). */
int meta_utf8_valid(const uint8_t *s, size_t len);

/* Permissions wire decoder (protocol-2 §2.2): validates the whole blob
 * (bounded, exact length) and calls the callbacks in wire order. Any
 * callback may be NULL. Returns 0 or -EPROTO. */
struct meta_perms_visit {
    void (*global)(void *arg, uint16_t bits);
    void (*stream)(void *arg, uint32_t stream_id, uint8_t bits,
                   uint8_t has_topics);
    void (*topic)(void *arg, uint32_t stream_id, uint32_t topic_id,
                  uint8_t bits);
    void *arg;
};
int meta_perms_parse(const uint8_t *p, size_t len,
                     const struct meta_perms_visit *v);

#endif /* VS_SHARD_META_OPS_H */
