/*
 * common/wire.h - the 256-byte consensus header and every per-command layout.
 *
 * Role: the byte layout of every frame vstream sends or stores: client
 * requests and replies (Iggy's VSR client framing), replica messages, WAL
 * entries (prepares). Facts: shared/reference/iggy-server-ng.md §2 and
 * iggy-client-protocol-2.md §9.
 *
 * Invariants:
 *  - Every struct is exactly 256 bytes, all fields little-endian and
 *    naturally aligned, so a frame is read by memcpy into the struct (no
 *    packed attribute). _Static_assert pins the size and the offset of
 *    every field; tests/unit/check_wire.c checks them again against a table
 *    written from the reference.
 *  - u128 values are two LE u64 halves, low half first (struct vs_u128).
 *  - The host is little-endian (configure refuses a big-endian host), so
 *    the in-memory struct IS the wire encoding.
 *  - Reserved bytes are zero on send.
 *  - `release` carries the wire/WAL format version of replica frames and
 *    WAL entries (VS_WIRE_FORMAT_VERSION); Iggy SDK frames carry 0.
 *
 * Callers: any process. Header-only (plus common/wire.c for names).
 */
#ifndef VS_COMMON_WIRE_H
#define VS_COMMON_WIRE_H

#include <stddef.h>
#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "vstream's wire structs assume a little-endian host"
#endif

#define VS_HEADER_SIZE    256u
#define VS_FRAME_MAX      (64u * 1024u * 1024u) /* header + body */
#define VS_METADATA_GROUP (UINT64_C(1) << 63)
#define VS_REPLICAS_MAX   32u
/* Format version of replica frames and WAL entries, in header.release.
 * A decoder accepts exactly the versions listed in vs_wire_format_known():
 * 1 and 2. Version 2 differs from 1 only in the prepare header: bytes
 * 248..255 hold checksum_view (see struct vs_hdr_prepare); every other
 * frame is laid out identically in both. New frames carry 2. */
#define VS_WIRE_FORMAT_V1      1u
#define VS_WIRE_FORMAT_V2      2u
#define VS_WIRE_FORMAT_VERSION VS_WIRE_FORMAT_V2

/* A 128-bit little-endian value: low 64 bits first. */
struct vs_u128 {
    uint64_t lo;
    uint64_t hi;
};

static inline int
vs_u128_eq(struct vs_u128 a, struct vs_u128 b)
{
    return a.lo == b.lo && a.hi == b.hi;
}

static inline int
vs_u128_is_zero(struct vs_u128 a)
{
    return a.lo == 0 && a.hi == 0;
}

/* Commands (header byte 60). */
enum vs_command {
    VS_CMD_RESERVED = 0,
    VS_CMD_PING = 1,
    VS_CMD_PONG = 2,
    VS_CMD_PING_CLIENT = 3,
    VS_CMD_PONG_CLIENT = 4,
    VS_CMD_REQUEST = 5,
    VS_CMD_PREPARE = 6,
    VS_CMD_PREPARE_OK = 7,
    VS_CMD_REPLY = 8,
    VS_CMD_COMMIT = 9,
    VS_CMD_START_VIEW_CHANGE = 10,
    VS_CMD_DO_VIEW_CHANGE = 11,
    VS_CMD_START_VIEW = 12,
    VS_CMD_EVICTION = 13,
    VS_CMD_REPLICA_HELLO = 14,
    VS_CMD_REPLICA_CHALLENGE = 15,
    VS_CMD_REPLICA_FINISH = 16,
    VS_CMD_REQUEST_START_VIEW = 17,
    VS_CMD_REQUEST_PREPARES = 18,
    VS_CMD_REPAIR_PREPARE = 19,
    VS_CMD_REPAIR_DONE = 20,
    VS_CMD_RANGE_EVICTED = 21,
    VS_CMD_REQUEST_STATE_TRANSFER = 22,
    VS_CMD_STATE_TRANSFER_TARGET = 23,
    VS_CMD_REQUEST_STATE_CHUNK = 24,
    VS_CMD_STATE_CHUNK = 25,
    VS_CMD_FORWARD_REGISTER = 26,
    VS_CMD_FORWARD_REGISTER_RESULT = 27,
    VS_CMD_FORWARD_LOGOUT = 28,
    VS_CMD_FORWARD_LOGOUT_RESULT = 29,
    /* vstream: a backup hands a client's replicated request (Register,
     * Logout or a metadata op) to the primary, and gets its answer. */
    VS_CMD_FORWARD_REQUEST = 30,
    VS_CMD_FORWARD_RESULT = 31,
};
#define VS_CMD_MAX VS_CMD_FORWARD_RESULT
/* Frames of the data shards' links only (shard/link/beat.h): above
 * VS_CMD_MAX on purpose, so no engine ever takes one for its own. */
#define VS_CMD_GROUP_BEAT 64u
/* shard 0's links: a backup tells the primary which consumer-group
 * members are alive on its node and which connections ended (struct
 * vs_hdr_member_report). Above VS_CMD_MAX too: shard 0's commit path
 * takes it before the engine. */
#define VS_CMD_MEMBER_REPORT 65u
/* The data shards' links: a send or offset command forwarded to a
 * partition group's primary, and its answer (shard/serve/pgroups.h). One
 * numbering for every link so a frame's command never has two meanings. */
#define VS_CMD_PART_FORWARD        66u
#define VS_CMD_PART_FORWARD_RESULT 67u

/* Operations (request/prepare/reply operation byte). */
enum vs_operation {
    VS_OP_RESERVED = 0,
    VS_OP_REGISTER = 1,
    VS_OP_NON_REPLICATED = 2,
    VS_OP_LOGOUT = 3,
    /* internal, produced by the primary's rewrite */
    VS_OP_CREATE_TOPIC_WITH_ASSIGNMENTS = 64,
    VS_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS = 65,
    VS_OP_REMOVE_CONSUMER_GROUP_MEMBER = 66,
    VS_OP_COMPLETE_CONSUMER_GROUP_REVOCATION = 67,
    VS_OP_TRUNCATE_PARTITION = 68,
    /* metadata, 128..149 in this order */
    VS_OP_CREATE_STREAM = 128,
    VS_OP_UPDATE_STREAM = 129,
    VS_OP_DELETE_STREAM = 130,
    VS_OP_PURGE_STREAM = 131,
    VS_OP_CREATE_TOPIC = 132,
    VS_OP_UPDATE_TOPIC = 133,
    VS_OP_DELETE_TOPIC = 134,
    VS_OP_PURGE_TOPIC = 135,
    VS_OP_CREATE_PARTITIONS = 136,
    VS_OP_DELETE_PARTITIONS = 137,
    VS_OP_DELETE_SEGMENTS = 138,
    VS_OP_CREATE_CONSUMER_GROUP = 139,
    VS_OP_DELETE_CONSUMER_GROUP = 140,
    VS_OP_CREATE_USER = 141,
    VS_OP_UPDATE_USER = 142,
    VS_OP_DELETE_USER = 143,
    VS_OP_CHANGE_PASSWORD = 144,
    VS_OP_UPDATE_PERMISSIONS = 145,
    VS_OP_CREATE_PAT = 146,
    VS_OP_DELETE_PAT = 147,
    VS_OP_JOIN_CONSUMER_GROUP = 148,
    VS_OP_LEAVE_CONSUMER_GROUP = 149,
    /* partition plane */
    VS_OP_SEND_MESSAGES = 160,
    VS_OP_STORE_CONSUMER_OFFSET = 161,
    VS_OP_DELETE_CONSUMER_OFFSET = 162,
    /* vstream-internal: the cluster's first op creates the root user */
    VS_OP_GENESIS = 200,
};

/* Eviction reasons (Eviction header byte 255). */
enum vs_eviction_reason {
    VS_EVICT_RESERVED = 0,
    VS_EVICT_NO_SESSION = 1,
    VS_EVICT_CLIENT_RELEASE_TOO_LOW = 2,
    VS_EVICT_CLIENT_RELEASE_TOO_HIGH = 3,
    VS_EVICT_INVALID_REQUEST_OPERATION = 4,
    VS_EVICT_INVALID_REQUEST_BODY = 5,
    VS_EVICT_INVALID_REQUEST_BODY_SIZE = 6,
    VS_EVICT_SESSION_TOO_LOW = 7,
    VS_EVICT_SESSION_RELEASE_MISMATCH = 8,
    VS_EVICT_INVALID_CREDENTIALS = 9,
    VS_EVICT_INVALID_TOKEN = 10,
    VS_EVICT_USER_INACTIVE = 11,
    VS_EVICT_SESSION_ERROR = 12,
    VS_EVICT_STALE_CLIENT = 13,
    VS_EVICT_INCOMPATIBLE_PROTOCOL = 14,
    VS_EVICT_MALFORMED_LOGIN = 15,
};

/* Bytes 0..128, common to every frame. */
struct vs_frame {
    struct vs_u128 checksum;      /* 0: sealed: XXH3(hdr[16..256]);
                                     prepares: identity checksum */
    struct vs_u128 checksum_body; /* 16: XXH3(body), 0 = unsealed */
    struct vs_u128 cluster;       /* 32 */
    uint32_t size;                /* 48: header + body */
    uint32_t view;                /* 52 */
    uint32_t release;             /* 56: wire/WAL format version */
    uint8_t command;              /* 60: enum vs_command */
    uint8_t replica;              /* 61: sender */
    uint8_t reserved_frame[66];   /* 62 */
};

/* Any frame: the common part and 128 command-specific bytes. */
struct vs_header {
    struct vs_frame f;
    uint8_t command_bytes[128]; /* 128 */
};

struct vs_hdr_request { /* command 5, client -> server */
    struct vs_frame f;
    struct vs_u128 client;           /* 128 */
    struct vs_u128 request_checksum; /* 144 */
    uint64_t timestamp;              /* 160 */
    uint64_t request;                /* 168 */
    uint8_t operation;               /* 176 */
    uint8_t operation_padding[7];    /* 177 */
    uint64_t session;                /* 184 */
    uint32_t user_id;                /* 192: stamped by the server */
    uint32_t command_code;           /* 196: NonReplicated command code */
    uint8_t reserved[56];            /* 200 */
};

struct vs_hdr_reply { /* command 8, server -> client */
    struct vs_frame f;
    struct vs_u128 request_checksum; /* 128 */
    struct vs_u128 context;          /* 144 */
    struct vs_u128 client;           /* 160 */
    uint64_t op;                     /* 176 */
    uint64_t commit;                 /* 184: = op */
    uint64_t timestamp;              /* 192 */
    uint64_t request;                /* 200 */
    uint8_t operation;               /* 208: echoes the request's */
    uint8_t operation_padding[7];    /* 209 */
    uint32_t status;                 /* 216: pre-commit denial, empty body */
    uint8_t reserved[36];            /* 220 */
};

struct vs_hdr_eviction { /* command 13, server -> client, no body */
    struct vs_frame f;
    struct vs_u128 client;                /* 128 */
    uint32_t server_protocol_version;     /* 144 */
    uint32_t server_protocol_version_min; /* 148 */
    uint8_t reserved[103];                /* 152 */
    uint8_t reason;                       /* 255: enum vs_eviction_reason */
};

/*
 * Prepare (also the stored WAL entry). The identity checksum (f.checksum)
 * is XXH3-64 (seed 0, widened) of the 256 header bytes with f.checksum
 * and f.view zeroed, and in format 2 also checksum_view zeroed, so a
 * retransmit that re-stamps the view keeps its identity.
 *
 * checksum_view (format 2 only; reserved zero in format 1) covers the
 * view, which the identity leaves out:
 *     checksum_view = XXH3-64(seed 0, header bytes [0, 16) ++ [52, 56))
 *                     | 0xC000000000000000
 * i.e. over the 20 bytes identity checksum (16, LE halves) then view
 * (u32 LE). The two top bits are always set, so byte 255 of a valid
 * format-2 header is non-zero even after any single bit flip: a header
 * cut at a 4 KiB boundary (zeros from the boundary on, a torn write) is
 * never mistaken for a flipped bit, and vice versa. Whoever changes
 * f.view re-stamps it (vs_prepare_seal_view); the journal stamps it on
 * every entry it stores.
 */
struct vs_hdr_prepare { /* command 6 (19 RepairPrepare: same layout) */
    struct vs_frame f;
    struct vs_u128 client;           /* 128 */
    struct vs_u128 parent;           /* 144: checksum of op - 1 */
    struct vs_u128 request_checksum; /* 160 */
    uint64_t op;                     /* 176 */
    uint64_t commit;                 /* 184 */
    uint64_t timestamp;              /* 192 */
    uint64_t request;                /* 200 */
    uint8_t operation;               /* 208 */
    uint8_t operation_padding[7];    /* 209 */
    uint64_t group;                  /* 216 */
    uint32_t user_id;                /* 224 */
    uint8_t reserved[20];            /* 228 */
    uint64_t checksum_view;          /* 248: format 2; 0 in format 1 */
};
#define VS_PREPARE_VIEW_MARK UINT64_C(0xC000000000000000)

struct vs_hdr_prepare_ok { /* command 7, sealed */
    struct vs_frame f;
    struct vs_u128 parent;           /* 128 */
    struct vs_u128 prepare_checksum; /* 144 */
    uint64_t op;                     /* 160 */
    uint64_t commit;                 /* 168 */
    uint64_t timestamp;              /* 176 */
    uint64_t request;                /* 184 */
    uint8_t operation;               /* 192 */
    uint8_t operation_padding[7];    /* 193 */
    uint64_t group;                  /* 200 */
    uint8_t reserved[48];            /* 208 */
};

struct vs_hdr_commit { /* command 9, sealed; also the heartbeat */
    struct vs_frame f;
    struct vs_u128 commit_checksum; /* 128 */
    uint64_t timestamp_monotonic;   /* 144 */
    uint64_t commit;                /* 152 */
    uint64_t checkpoint_op;         /* 160 */
    uint64_t group;                 /* 168 */
    uint8_t reserved[80];           /* 176 */
};

struct vs_hdr_pong { /* command 2, sealed: a backup's answer to the
                       primary's Commit heartbeat (the primary's lease) */
    struct vs_frame f;
    uint64_t timestamp_monotonic; /* 128: the heartbeat answered */
    uint64_t commit_min;          /* 136: the backup's applied op */
    uint64_t group;               /* 144 */
    uint8_t reserved[104];        /* 152 */
};

struct vs_hdr_start_view_change { /* command 10, sealed */
    struct vs_frame f;
    uint64_t group;        /* 128 */
    uint8_t reserved[120]; /* 136 */
};

struct vs_hdr_do_view_change { /* command 11, sealed; body: headers */
    struct vs_frame f;
    uint64_t op;                   /* 128 */
    uint64_t commit;               /* 136 */
    uint64_t group;                /* 144 */
    uint32_t log_view;             /* 152 */
    uint8_t reserved[68];          /* 156 */
    struct vs_u128 nack_bitset;    /* 224 */
    struct vs_u128 present_bitset; /* 240 */
};

struct vs_hdr_start_view { /* command 12, sealed; body: suffix headers */
    struct vs_frame f;
    uint64_t op;                /* 128 */
    uint64_t commit;            /* 136 */
    uint64_t group;             /* 144 */
    uint8_t reserved[88];       /* 152 */
    struct vs_u128 incarnation; /* 240 */
};

struct vs_hdr_request_start_view { /* command 17, sealed */
    struct vs_frame f;
    uint64_t group;             /* 128 */
    uint8_t reserved[104];      /* 136 */
    struct vs_u128 incarnation; /* 240 */
};

struct vs_hdr_request_prepares { /* command 18, sealed */
    struct vs_frame f;
    struct vs_u128 nonce; /* 128 */
    uint64_t from_op;     /* 144 */
    uint64_t to_op;       /* 152 */
    uint64_t group;       /* 160 */
    uint8_t reserved[88]; /* 168 */
};

struct vs_hdr_repair_done { /* commands 20 RepairDone, 21 RangeEvicted */
    struct vs_frame f;
    struct vs_u128 nonce; /* 128 */
    uint64_t op;          /* 144 */
    uint64_t group;       /* 152 */
    uint8_t reserved[96]; /* 160 */
};

struct vs_hdr_request_state_transfer { /* command 22, sealed */
    struct vs_frame f;
    struct vs_u128 nonce;  /* 128 */
    uint64_t group;        /* 144 */
    uint8_t reserved[104]; /* 152 */
};

struct vs_hdr_state_transfer_target { /* command 23, sealed; body: manifest */
    struct vs_frame f;
    struct vs_u128 nonce;          /* 128 */
    uint64_t commit_op;            /* 144 */
    uint64_t group;                /* 152 */
    uint8_t available;             /* 160 */
    uint8_t unavailable_transient; /* 161 */
    uint8_t padding[6];            /* 162 */
    uint64_t commit_max;           /* 168 */
    uint8_t reason;                /* 176: why not available (enum
                                      xfer_unavailable, vsr/xfer_frames.h) */
    uint8_t reserved[79];          /* 177 */
};

struct vs_hdr_request_state_chunk { /* command 24, sealed */
    struct vs_frame f;
    struct vs_u128 nonce; /* 128 */
    uint64_t offset;      /* 144 */
    uint64_t group;       /* 152 */
    uint32_t len;         /* 160 */
    uint32_t artifact;    /* 164 */
    uint8_t reserved[88]; /* 168 */
};

struct vs_hdr_state_chunk { /* command 25, sealed; body: bytes */
    struct vs_frame f;
    struct vs_u128 nonce; /* 128 */
    uint64_t offset;      /* 144 */
    uint64_t group;       /* 152 */
    uint32_t artifact;    /* 160 */
    uint8_t reserved[92]; /* 164 */
};

struct vs_hdr_replica_hello { /* command 14: the dialer's first frame,
                                  sealed; body: the dialer's client
                                  address (shard/link/links.h) */
    struct vs_frame f;
    uint8_t nonce_d[32];   /* 128: the dialer's fresh nonce */
    uint32_t release_min;  /* 160: wire formats the dialer understands */
    uint32_t release_max;  /* 164 */
    uint8_t replica_count; /* 168: replicas the dialer is configured with */
    uint8_t shard;         /* 169: the mesh: 0 = shard 0, s = data shard s */
    uint16_t shard_count;  /* 170: data shards per node (data meshes); 0 on
                              shard 0's mesh (not checked there) */
    uint8_t reserved0[4];  /* 172 */
    /* 176: vs_names_digest of the dialer's replica names (0: not sent,
     * not compared) */
    uint64_t names_digest;
    uint8_t reserved[72]; /* 184 */
};

struct vs_hdr_replica_challenge { /* command 15 */
    struct vs_frame f;
    uint8_t nonce_a[32];   /* 128 */
    uint8_t mac_a[32];     /* 160 */
    uint8_t status;        /* 192 */
    uint8_t reserved0[7];  /* 193 */
    uint64_t names_digest; /* 200: the acceptor's (0: not compared) */
    uint8_t reserved[48];  /* 208 */
};

struct vs_hdr_replica_finish { /* command 16 */
    struct vs_frame f;
    uint8_t reserved0[32]; /* 128 */
    uint8_t mac_d[32];     /* 160 */
    uint8_t reserved[64];  /* 192 */
};

struct vs_hdr_forward_register { /* command 26 */
    struct vs_frame f;
    struct vs_u128 client; /* 128 */
    struct vs_u128 nonce;  /* 144 */
    uint32_t user_id;      /* 160 */
    uint8_t reserved[92];  /* 164 */
};

struct vs_hdr_forward_register_result { /* command 27 */
    struct vs_frame f;
    struct vs_u128 nonce;  /* 128 */
    struct vs_u128 client; /* 144 */
    uint64_t epoch;        /* 160 */
    uint64_t watermark;    /* 168 */
    uint8_t reserved[79];  /* 176 */
    uint8_t outcome;       /* 255 */
};

struct vs_hdr_forward_logout { /* command 28 */
    struct vs_frame f;
    struct vs_u128 client; /* 128 */
    struct vs_u128 nonce;  /* 144 */
    uint64_t session;      /* 160 */
    uint64_t request;      /* 168 */
    uint8_t reserved[80];  /* 176 */
};

struct vs_hdr_forward_logout_result { /* command 29 */
    struct vs_frame f;
    struct vs_u128 nonce;  /* 128 */
    struct vs_u128 client; /* 144 */
    uint64_t commit;       /* 160 */
    uint8_t reserved[87];  /* 168 */
    uint8_t outcome;       /* 255 */
};

/* Forwarding between the shard 0s of a cluster (shard/zero/forward.h).
 * Register and Logout travel in these too (26..29 keep the reference's
 * layouts but vstream does not send them): one path for every request
 * that passes the replicated client table.
 * ForwardRequest, backup -> primary, sealed (header and body): body =
 * the 256-byte request header as the data shard proposed it (user_id and
 * request_checksum stamped) followed by the metadata op body. */
struct vs_hdr_forward_request { /* command 30 */
    struct vs_frame f;
    uint64_t nonce;        /* 128: the forwarder's id for it, echoed */
    struct vs_u128 client; /* 136 */
    uint64_t request;      /* 152 */
    uint8_t operation;     /* 160 */
    uint8_t reserved0[7];  /* 161 */
    /* 168: the forwarder's shard-0 incarnation (random per boot; 0 from
     * a release that did not send it) */
    uint64_t incarnation;
    uint8_t reserved[80]; /* 176 */
};

/* ForwardResult, primary -> backup, sealed: body = the frame for the
 * client (a Reply, header + body, or an Eviction). `op` is the op whose
 * apply the answer reports (0: none, e.g. a refusal before consensus):
 * the backup relays it only once it applied and published that op
 * itself. flags/session/user_id are the data shard's FWD_F_* binding. */
struct vs_hdr_forward_result { /* command 31 */
    struct vs_frame f;
    uint64_t nonce;        /* 128: echoed from the request */
    uint64_t op;           /* 136 */
    uint64_t session;      /* 144 */
    uint32_t user_id;      /* 152 */
    uint32_t flags;        /* 156 */
    struct vs_u128 client; /* 160 */
    uint8_t reserved[80];  /* 176 */
};

/* MemberReport, backup -> primary, sealed: body = (claims + events)
 * entries of 32 bytes [client u128][session u64][0 u64] (the layout of
 * shard/fwd.h's struct fwd_member): first the members alive on the
 * sender's node (with the session of their connection), then the
 * (client, session) whose connection ended there. Consumer-group
 * liveness, shard/zero/groups0.h. */
struct vs_hdr_member_report { /* command 32 */
    struct vs_frame f;
    uint64_t incarnation;  /* 128: the sender's shard-0 incarnation */
    uint64_t seq;          /* 136: counts the sender's reports */
    uint32_t claims;       /* 144 */
    uint32_t events;       /* 148 */
    uint32_t flags;        /* 152: VS_MEMBER_REPORT_COMPLETE */
    uint8_t reserved[100]; /* 156 */
};
#define VS_MEMBER_REPORT_COMPLETE 1u /* the claims are the node's all */
#define VS_MEMBER_ENTRY_SIZE      32u

/* ---- layout pins: size and offset of every field ---- */
#define VS_WIRE_AT(type, field, off)                                           \
    _Static_assert(offsetof(type, field) == (off), #type "." #field)

_Static_assert(sizeof(struct vs_u128) == 16, "u128");
_Static_assert(sizeof(struct vs_frame) == 128, "frame prefix");
VS_WIRE_AT(struct vs_frame, checksum, 0);
VS_WIRE_AT(struct vs_frame, checksum_body, 16);
VS_WIRE_AT(struct vs_frame, cluster, 32);
VS_WIRE_AT(struct vs_frame, size, 48);
VS_WIRE_AT(struct vs_frame, view, 52);
VS_WIRE_AT(struct vs_frame, release, 56);
VS_WIRE_AT(struct vs_frame, command, 60);
VS_WIRE_AT(struct vs_frame, replica, 61);
VS_WIRE_AT(struct vs_frame, reserved_frame, 62);

#define VS_WIRE_SIZE(type) _Static_assert(sizeof(type) == 256, #type " size")
VS_WIRE_SIZE(struct vs_header);
VS_WIRE_SIZE(struct vs_hdr_request);
VS_WIRE_SIZE(struct vs_hdr_reply);
VS_WIRE_SIZE(struct vs_hdr_eviction);
VS_WIRE_SIZE(struct vs_hdr_prepare);
VS_WIRE_SIZE(struct vs_hdr_prepare_ok);
VS_WIRE_SIZE(struct vs_hdr_commit);
VS_WIRE_SIZE(struct vs_hdr_pong);
VS_WIRE_SIZE(struct vs_hdr_start_view_change);
VS_WIRE_SIZE(struct vs_hdr_do_view_change);
VS_WIRE_SIZE(struct vs_hdr_start_view);
VS_WIRE_SIZE(struct vs_hdr_request_start_view);
VS_WIRE_SIZE(struct vs_hdr_request_prepares);
VS_WIRE_SIZE(struct vs_hdr_repair_done);
VS_WIRE_SIZE(struct vs_hdr_request_state_transfer);
VS_WIRE_SIZE(struct vs_hdr_state_transfer_target);
VS_WIRE_SIZE(struct vs_hdr_request_state_chunk);
VS_WIRE_SIZE(struct vs_hdr_state_chunk);
VS_WIRE_SIZE(struct vs_hdr_replica_hello);
VS_WIRE_SIZE(struct vs_hdr_replica_challenge);
VS_WIRE_SIZE(struct vs_hdr_replica_finish);
VS_WIRE_SIZE(struct vs_hdr_forward_register);
VS_WIRE_SIZE(struct vs_hdr_forward_register_result);
VS_WIRE_SIZE(struct vs_hdr_forward_logout);
VS_WIRE_SIZE(struct vs_hdr_forward_logout_result);
VS_WIRE_SIZE(struct vs_hdr_forward_request);
VS_WIRE_SIZE(struct vs_hdr_forward_result);
VS_WIRE_AT(struct vs_hdr_forward_request, nonce, 128);
VS_WIRE_AT(struct vs_hdr_forward_request, client, 136);
VS_WIRE_AT(struct vs_hdr_forward_request, request, 152);
VS_WIRE_AT(struct vs_hdr_forward_request, operation, 160);
VS_WIRE_AT(struct vs_hdr_forward_request, incarnation, 168);
VS_WIRE_SIZE(struct vs_hdr_member_report);
VS_WIRE_AT(struct vs_hdr_member_report, incarnation, 128);
VS_WIRE_AT(struct vs_hdr_member_report, seq, 136);
VS_WIRE_AT(struct vs_hdr_member_report, claims, 144);
VS_WIRE_AT(struct vs_hdr_member_report, events, 148);
VS_WIRE_AT(struct vs_hdr_member_report, flags, 152);
VS_WIRE_AT(struct vs_hdr_forward_result, nonce, 128);
VS_WIRE_AT(struct vs_hdr_forward_result, op, 136);
VS_WIRE_AT(struct vs_hdr_forward_result, session, 144);
VS_WIRE_AT(struct vs_hdr_forward_result, user_id, 152);
VS_WIRE_AT(struct vs_hdr_forward_result, flags, 156);
VS_WIRE_AT(struct vs_hdr_forward_result, client, 160);

VS_WIRE_AT(struct vs_header, command_bytes, 128);

VS_WIRE_AT(struct vs_hdr_request, client, 128);
VS_WIRE_AT(struct vs_hdr_request, request_checksum, 144);
VS_WIRE_AT(struct vs_hdr_request, timestamp, 160);
VS_WIRE_AT(struct vs_hdr_request, request, 168);
VS_WIRE_AT(struct vs_hdr_request, operation, 176);
VS_WIRE_AT(struct vs_hdr_request, operation_padding, 177);
VS_WIRE_AT(struct vs_hdr_request, session, 184);
VS_WIRE_AT(struct vs_hdr_request, user_id, 192);
VS_WIRE_AT(struct vs_hdr_request, command_code, 196);
VS_WIRE_AT(struct vs_hdr_request, reserved, 200);

VS_WIRE_AT(struct vs_hdr_reply, request_checksum, 128);
VS_WIRE_AT(struct vs_hdr_reply, context, 144);
VS_WIRE_AT(struct vs_hdr_reply, client, 160);
VS_WIRE_AT(struct vs_hdr_reply, op, 176);
VS_WIRE_AT(struct vs_hdr_reply, commit, 184);
VS_WIRE_AT(struct vs_hdr_reply, timestamp, 192);
VS_WIRE_AT(struct vs_hdr_reply, request, 200);
VS_WIRE_AT(struct vs_hdr_reply, operation, 208);
VS_WIRE_AT(struct vs_hdr_reply, operation_padding, 209);
VS_WIRE_AT(struct vs_hdr_reply, status, 216);
VS_WIRE_AT(struct vs_hdr_reply, reserved, 220);

VS_WIRE_AT(struct vs_hdr_eviction, client, 128);
VS_WIRE_AT(struct vs_hdr_eviction, server_protocol_version, 144);
VS_WIRE_AT(struct vs_hdr_eviction, server_protocol_version_min, 148);
VS_WIRE_AT(struct vs_hdr_eviction, reserved, 152);
VS_WIRE_AT(struct vs_hdr_eviction, reason, 255);

VS_WIRE_AT(struct vs_hdr_prepare, client, 128);
VS_WIRE_AT(struct vs_hdr_prepare, parent, 144);
VS_WIRE_AT(struct vs_hdr_prepare, request_checksum, 160);
VS_WIRE_AT(struct vs_hdr_prepare, op, 176);
VS_WIRE_AT(struct vs_hdr_prepare, commit, 184);
VS_WIRE_AT(struct vs_hdr_prepare, timestamp, 192);
VS_WIRE_AT(struct vs_hdr_prepare, request, 200);
VS_WIRE_AT(struct vs_hdr_prepare, operation, 208);
VS_WIRE_AT(struct vs_hdr_prepare, operation_padding, 209);
VS_WIRE_AT(struct vs_hdr_prepare, group, 216);
VS_WIRE_AT(struct vs_hdr_prepare, user_id, 224);
VS_WIRE_AT(struct vs_hdr_prepare, reserved, 228);
VS_WIRE_AT(struct vs_hdr_prepare, checksum_view, 248);

VS_WIRE_AT(struct vs_hdr_prepare_ok, parent, 128);
VS_WIRE_AT(struct vs_hdr_prepare_ok, prepare_checksum, 144);
VS_WIRE_AT(struct vs_hdr_prepare_ok, op, 160);
VS_WIRE_AT(struct vs_hdr_prepare_ok, commit, 168);
VS_WIRE_AT(struct vs_hdr_prepare_ok, timestamp, 176);
VS_WIRE_AT(struct vs_hdr_prepare_ok, request, 184);
VS_WIRE_AT(struct vs_hdr_prepare_ok, operation, 192);
VS_WIRE_AT(struct vs_hdr_prepare_ok, operation_padding, 193);
VS_WIRE_AT(struct vs_hdr_prepare_ok, group, 200);
VS_WIRE_AT(struct vs_hdr_prepare_ok, reserved, 208);

VS_WIRE_AT(struct vs_hdr_commit, commit_checksum, 128);
VS_WIRE_AT(struct vs_hdr_commit, timestamp_monotonic, 144);
VS_WIRE_AT(struct vs_hdr_commit, commit, 152);
VS_WIRE_AT(struct vs_hdr_commit, checkpoint_op, 160);
VS_WIRE_AT(struct vs_hdr_commit, group, 168);
VS_WIRE_AT(struct vs_hdr_commit, reserved, 176);
VS_WIRE_AT(struct vs_hdr_pong, timestamp_monotonic, 128);
VS_WIRE_AT(struct vs_hdr_pong, commit_min, 136);
VS_WIRE_AT(struct vs_hdr_pong, group, 144);
VS_WIRE_AT(struct vs_hdr_pong, reserved, 152);

VS_WIRE_AT(struct vs_hdr_start_view_change, group, 128);
VS_WIRE_AT(struct vs_hdr_start_view_change, reserved, 136);

VS_WIRE_AT(struct vs_hdr_do_view_change, op, 128);
VS_WIRE_AT(struct vs_hdr_do_view_change, commit, 136);
VS_WIRE_AT(struct vs_hdr_do_view_change, group, 144);
VS_WIRE_AT(struct vs_hdr_do_view_change, log_view, 152);
VS_WIRE_AT(struct vs_hdr_do_view_change, reserved, 156);
VS_WIRE_AT(struct vs_hdr_do_view_change, nack_bitset, 224);
VS_WIRE_AT(struct vs_hdr_do_view_change, present_bitset, 240);

VS_WIRE_AT(struct vs_hdr_start_view, op, 128);
VS_WIRE_AT(struct vs_hdr_start_view, commit, 136);
VS_WIRE_AT(struct vs_hdr_start_view, group, 144);
VS_WIRE_AT(struct vs_hdr_start_view, reserved, 152);
VS_WIRE_AT(struct vs_hdr_start_view, incarnation, 240);

VS_WIRE_AT(struct vs_hdr_request_start_view, group, 128);
VS_WIRE_AT(struct vs_hdr_request_start_view, reserved, 136);
VS_WIRE_AT(struct vs_hdr_request_start_view, incarnation, 240);

VS_WIRE_AT(struct vs_hdr_request_prepares, nonce, 128);
VS_WIRE_AT(struct vs_hdr_request_prepares, from_op, 144);
VS_WIRE_AT(struct vs_hdr_request_prepares, to_op, 152);
VS_WIRE_AT(struct vs_hdr_request_prepares, group, 160);
VS_WIRE_AT(struct vs_hdr_request_prepares, reserved, 168);

VS_WIRE_AT(struct vs_hdr_repair_done, nonce, 128);
VS_WIRE_AT(struct vs_hdr_repair_done, op, 144);
VS_WIRE_AT(struct vs_hdr_repair_done, group, 152);
VS_WIRE_AT(struct vs_hdr_repair_done, reserved, 160);

VS_WIRE_AT(struct vs_hdr_request_state_transfer, nonce, 128);
VS_WIRE_AT(struct vs_hdr_request_state_transfer, group, 144);
VS_WIRE_AT(struct vs_hdr_request_state_transfer, reserved, 152);

VS_WIRE_AT(struct vs_hdr_state_transfer_target, nonce, 128);
VS_WIRE_AT(struct vs_hdr_state_transfer_target, commit_op, 144);
VS_WIRE_AT(struct vs_hdr_state_transfer_target, group, 152);
VS_WIRE_AT(struct vs_hdr_state_transfer_target, available, 160);
VS_WIRE_AT(struct vs_hdr_state_transfer_target, unavailable_transient, 161);
VS_WIRE_AT(struct vs_hdr_state_transfer_target, padding, 162);
VS_WIRE_AT(struct vs_hdr_state_transfer_target, commit_max, 168);
VS_WIRE_AT(struct vs_hdr_state_transfer_target, reason, 176);
VS_WIRE_AT(struct vs_hdr_state_transfer_target, reserved, 177);

VS_WIRE_AT(struct vs_hdr_request_state_chunk, nonce, 128);
VS_WIRE_AT(struct vs_hdr_request_state_chunk, offset, 144);
VS_WIRE_AT(struct vs_hdr_request_state_chunk, group, 152);
VS_WIRE_AT(struct vs_hdr_request_state_chunk, len, 160);
VS_WIRE_AT(struct vs_hdr_request_state_chunk, artifact, 164);
VS_WIRE_AT(struct vs_hdr_request_state_chunk, reserved, 168);

VS_WIRE_AT(struct vs_hdr_state_chunk, nonce, 128);
VS_WIRE_AT(struct vs_hdr_state_chunk, offset, 144);
VS_WIRE_AT(struct vs_hdr_state_chunk, group, 152);
VS_WIRE_AT(struct vs_hdr_state_chunk, artifact, 160);
VS_WIRE_AT(struct vs_hdr_state_chunk, reserved, 164);

VS_WIRE_AT(struct vs_hdr_replica_hello, nonce_d, 128);
VS_WIRE_AT(struct vs_hdr_replica_hello, release_min, 160);
VS_WIRE_AT(struct vs_hdr_replica_hello, release_max, 164);
VS_WIRE_AT(struct vs_hdr_replica_hello, replica_count, 168);
VS_WIRE_AT(struct vs_hdr_replica_hello, shard, 169);
VS_WIRE_AT(struct vs_hdr_replica_hello, shard_count, 170);
VS_WIRE_AT(struct vs_hdr_replica_hello, reserved0, 172);
VS_WIRE_AT(struct vs_hdr_replica_hello, names_digest, 176);
VS_WIRE_AT(struct vs_hdr_replica_hello, reserved, 184);

VS_WIRE_AT(struct vs_hdr_replica_challenge, nonce_a, 128);
VS_WIRE_AT(struct vs_hdr_replica_challenge, mac_a, 160);
VS_WIRE_AT(struct vs_hdr_replica_challenge, status, 192);
VS_WIRE_AT(struct vs_hdr_replica_challenge, reserved0, 193);
VS_WIRE_AT(struct vs_hdr_replica_challenge, names_digest, 200);
VS_WIRE_AT(struct vs_hdr_replica_challenge, reserved, 208);

VS_WIRE_AT(struct vs_hdr_replica_finish, reserved0, 128);
VS_WIRE_AT(struct vs_hdr_replica_finish, mac_d, 160);
VS_WIRE_AT(struct vs_hdr_replica_finish, reserved, 192);

VS_WIRE_AT(struct vs_hdr_forward_register, client, 128);
VS_WIRE_AT(struct vs_hdr_forward_register, nonce, 144);
VS_WIRE_AT(struct vs_hdr_forward_register, user_id, 160);
VS_WIRE_AT(struct vs_hdr_forward_register, reserved, 164);

VS_WIRE_AT(struct vs_hdr_forward_register_result, nonce, 128);
VS_WIRE_AT(struct vs_hdr_forward_register_result, client, 144);
VS_WIRE_AT(struct vs_hdr_forward_register_result, epoch, 160);
VS_WIRE_AT(struct vs_hdr_forward_register_result, watermark, 168);
VS_WIRE_AT(struct vs_hdr_forward_register_result, reserved, 176);
VS_WIRE_AT(struct vs_hdr_forward_register_result, outcome, 255);

VS_WIRE_AT(struct vs_hdr_forward_logout, client, 128);
VS_WIRE_AT(struct vs_hdr_forward_logout, nonce, 144);
VS_WIRE_AT(struct vs_hdr_forward_logout, session, 160);
VS_WIRE_AT(struct vs_hdr_forward_logout, request, 168);
VS_WIRE_AT(struct vs_hdr_forward_logout, reserved, 176);

VS_WIRE_AT(struct vs_hdr_forward_logout_result, nonce, 128);
VS_WIRE_AT(struct vs_hdr_forward_logout_result, client, 144);
VS_WIRE_AT(struct vs_hdr_forward_logout_result, commit, 160);
VS_WIRE_AT(struct vs_hdr_forward_logout_result, reserved, 168);
VS_WIRE_AT(struct vs_hdr_forward_logout_result, outcome, 255);

/* Names for logs and tools; "unknown" for values outside the enums. */
const char *vs_command_name(unsigned command);
const char *vs_operation_name(unsigned operation);
const char *vs_eviction_reason_name(unsigned reason);

/* 1 if `op` is a declared operation value (what an Iggy SDK accepts). */
int vs_operation_is_declared(unsigned op);
/* 1 if a reply carrying `op` is result-framed (iggy-client-protocol §3.1;
 * Register only with a non-empty body, which the caller decides). */
int vs_operation_is_result_framed(unsigned op);
/* 1 if `release` is a replica/WAL format version this build decodes. */
int vs_wire_format_known(uint32_t release);

/* Structural check of a frame header as read from a socket or disk:
 * size within [256, max], command within range. Returns 0 or -EPROTO. */
int vs_header_check_structure(const struct vs_header *h, uint32_t size_max);

#endif /* VS_COMMON_WIRE_H */
