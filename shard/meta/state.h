/*
 * shard/meta/state.h - the metadata state instance: fixed-capacity,
 * pointer-free tables that live in shared memory (DESIGN §2).
 *
 * Role: one contiguous instance = a header (struct meta_hdr) followed by
 * record tables and open-addressing index arrays at byte offsets computed
 * from the capacities (struct meta_caps). Nothing inside is a pointer, so
 * an instance is position-independent, copyable with memcpy
 * (meta_state_copy) and readable from any mapping address.
 *
 * Empty instance: meta_state_init() writes ONLY the header (magic, layout
 * version, caps, offsets, effective client capacity). Every table and
 * index area of a valid empty instance is all-zero bytes, so the caller
 * passes zeroed memory (a fresh mmap/memfd: pages cost nothing until
 * touched) or calls meta_state_reset() which zeroes it.
 * The empty state holds no user: the cluster's first op (GENESIS, see
 * ops.h) creates the root user 0 through meta_apply.
 *
 * Invariants (kept by apply and by the snapshot decoder):
 *  - a record is live iff in_use == 1; free records are all zero;
 *  - streams[id] and users[id] are indexed directly by id (ids are
 *    smallest-free, so id < capacity); other tables use slots found by the
 *    indexes; slot numbers are not observable and not encoded;
 *  - cross references are by ids (stream_id, topic_id, ...), never slots;
 *  - topic ids < 4096 per stream, partition ids < 2^20 per topic, so the
 *    consensus group id stream<<32 | topic<<20 | partition is unique;
 *  - partitions of a topic are exactly ids 0..partitions_count-1;
 *  - every stored permission grant names a live stream (and topic), or
 *    carries dangling = 1 when it was granted for an id that did not exist
 *    at that time; creating a stream/topic with that id drops such
 *    dangling grants, deleting one drops every grant naming it;
 *  - sessions[] (the published part of the client table, client_table.h)
 *    holds one live entry per registered client, slot < client_capacity.
 *
 * Callers: shard 0 writes (meta_apply, snapshot decode) one instance at a
 * time; data shards read the published instance through the left-right
 * buffer (lookup.h, authz.h) and never write.
 */
#ifndef VS_SHARD_META_STATE_H
#define VS_SHARD_META_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/wire.h"

#define META_STATE_MAGIC      UINT64_C(0x31304154454d5356) /* "VSMETA01" */
#define META_LAYOUT_VERSION   2u
#define META_NAME_MAX         255u /* stream, topic, group, PAT names */
#define META_USERNAME_MIN     3u
#define META_USERNAME_MAX     50u
#define META_PWHASH_MAX       128u /* argon2id PHC string incl. NUL */
#define META_DIGEST_LEN       32u  /* BLAKE2b-256 of a PAT */
#define META_PATS_PER_USER    100u
#define META_MAX_STREAM_ID    1048576u /* stream ids < 2^20 (R 1020) */
#define META_MAX_TOPIC_ID     4096u    /* topic ids < 4096 per stream */
#define META_MAX_PARTITION_ID 1048576u /* partition ids < 2^20 */
#define META_CT_CEILING       65536u   /* client table slots, hard max */
#define META_NONE             UINT32_MAX

/* Capacities: the instance size and layout are a pure function of them. */
struct meta_caps {
    uint32_t streams;
    uint32_t topics;
    uint32_t partitions;
    uint32_t groups;
    uint32_t members;
    uint32_t users;
    uint32_t pats;
    uint32_t stream_grants; /* (user, stream) permission grants */
    uint32_t topic_grants;  /* (user, stream, topic) grants */
    uint32_t assignments;   /* (group, partition) ownership records */
    uint32_t session_slots; /* array size of sessions[] (<= 65536) */
    uint32_t clients;       /* configured clients_table_max (2..65536) */
    /* nodes of the configured cluster (0 or 1: one node; at most
     * VS_REPLICAS_MAX): the bound of a topic's replication factor and the
     * range of replica sets (placement.h). Not a capacity: the layout
     * does not depend on it. */
    uint32_t nodes;
    uint32_t pad;
};

/* An open-addressing index: `mask + 1` u32 entries at `off`; an entry is
 * slot + 1 of the record it points to, 0 = empty. Linear probing with
 * backward-shift deletion (no tombstones). */
struct meta_index {
    uint64_t off;
    uint32_t mask;
    uint32_t pad;
};

enum meta_ix {
    META_IX_STREAM_NAME = 0,
    META_IX_TOPIC_ID,
    META_IX_TOPIC_NAME,
    META_IX_PARTITION_ID,
    META_IX_GROUP_ID,
    META_IX_GROUP_NAME,
    META_IX_MEMBER_ID,
    META_IX_MEMBER_CLIENT,
    META_IX_ASSIGN,
    META_IX_USER_NAME,
    META_IX_SGRANT,
    META_IX_TGRANT,
    META_IX_PAT_NAME,
    META_IX_PAT_DIGEST,
    META_IX_SESSION,
    META_IX_COUNT
};

enum meta_tab {
    META_TAB_STREAM = 0,
    META_TAB_TOPIC,
    META_TAB_PARTITION,
    META_TAB_GROUP,
    META_TAB_MEMBER,
    META_TAB_ASSIGN,
    META_TAB_USER,
    META_TAB_SGRANT,
    META_TAB_TGRANT,
    META_TAB_PAT,
    META_TAB_SESSION,
    META_TAB_COUNT
};

struct meta_hdr {
    /* written by meta_state_init, constant afterwards */
    uint64_t magic;
    uint32_t layout_version;
    uint32_t pad0;
    uint64_t size; /* bytes of the whole instance */
    struct meta_caps caps;
    uint64_t tab_off[META_TAB_COUNT];
    struct meta_index ix[META_IX_COUNT];
    /* effective client-table capacity: config, or max(config, highest
     * restored slot + 1) after a snapshot restore; <= session_slots */
    uint32_t client_capacity;
    uint32_t pad1;
    /* dynamic part (zero in an empty instance) */
    uint64_t last_op;        /* op number of the last applied op */
    uint64_t last_timestamp; /* its timestamp, µs */
    uint32_t count[META_TAB_COUNT];
    uint32_t hint[META_TAB_COUNT]; /* lowest possibly-free slot */
    uint32_t dangling_grants;
    uint32_t genesis_done;
    /* derived from the partitions table (placement.h): live partitions
     * whose replica set starts with node i (their primary in view 0) */
    uint32_t leaders[VS_REPLICAS_MAX];
};

struct meta_stream { /* streams[id] */
    uint8_t in_use;
    uint8_t name_len;
    uint8_t pad[2];
    uint32_t id;
    uint32_t topics_count;
    uint32_t pad1;
    uint64_t created_op;
    uint64_t created_at;
    char name[META_NAME_MAX + 1];
};

/* explicit_mask bits: which topic options the creator/updater sent. */
enum meta_topic_opt {
    META_TOPT_COMPRESSION = 1u << 0,
    META_TOPT_MESSAGE_EXPIRY = 1u << 1,
    META_TOPT_MAX_TOPIC_SIZE = 1u << 2,
    META_TOPT_SEGMENT_SIZE = 1u << 3,
    META_TOPT_ENFORCE_FSYNC = 1u << 4,
    META_TOPT_MSGS_TO_SAVE = 1u << 5,
    META_TOPT_SIZE_TO_SAVE = 1u << 6,
    META_TOPT_PREALLOCATE = 1u << 7,
};

/* Resolved topic options (the serving layer validates and resolves the
 * client's TLV block before proposing; apply stores them as given). */
struct meta_topic_opts {
    uint64_t message_expiry; /* µs; 0 = server default; UINT64_MAX never */
    uint64_t max_topic_size; /* 0 = default; UINT64_MAX = unlimited */
    uint64_t segment_size;
    uint64_t size_of_messages_required_to_save;
    uint32_t messages_required_to_save;
    uint8_t compression; /* 1 none, 2 gzip */
    uint8_t enforce_fsync;
    uint8_t preallocate_segments;
    uint8_t explicit_mask; /* enum meta_topic_opt */
    /* replica count of every partition of the topic. In a CreateTopic op:
     * as the client sent it (0 = default min(3, nodes)); in a topic
     * record: resolved, 1..nodes. Not a catalog option: Iggy's topic
     * records do not carry it (never in explicit_mask). */
    uint8_t replication_factor;
};

struct meta_topic {
    uint8_t in_use;
    uint8_t name_len;
    uint8_t pad[2];
    uint32_t stream_id;
    uint32_t id;
    uint32_t partitions_count;
    uint32_t groups_count;
    uint32_t next_group_id; /* monotonic, never reused */
    uint64_t created_op;
    uint64_t created_at;
    struct meta_topic_opts opts;
    char name[META_NAME_MAX + 1];
};

struct meta_partition {
    uint8_t in_use;
    uint8_t pad[3];
    uint32_t stream_id;
    uint32_t topic_id;
    uint32_t id;
    uint64_t created_op;
    uint64_t created_at;
    uint64_t deleted_up_to_offset; /* DeleteSegments watermark */
    uint64_t purge_generation;     /* +1 on every purge */
    /* the partition's replica set (node ids, distinct, < nodes), decided
     * in apply (placement.h); the group's primary in view v is
     * replicas[v % replica_count] */
    uint8_t replica_count;
    uint8_t replicas[VS_REPLICAS_MAX];
    uint8_t pad2[7];
};

struct meta_group {
    uint8_t in_use;
    uint8_t name_len;
    uint8_t pad[2];
    uint32_t stream_id;
    uint32_t topic_id;
    uint32_t id;
    uint32_t members_count;
    uint32_t member_id_bound; /* every member id < this */
    uint64_t generation;
    uint64_t created_op;
    char name[META_NAME_MAX + 1];
};

struct meta_member {
    uint8_t in_use;
    uint8_t pad[3];
    uint32_t stream_id;
    uint32_t topic_id;
    uint32_t group_id;
    uint32_t member_id; /* smallest free per group ("slot order") */
    uint32_t pad1;
    struct vs_u128 client_id;
    uint64_t joined_op;
};

/* Ownership of one partition in one group. revoke_to != META_NONE: a
 * pending cooperative revocation; the owner keeps it until completion. */
struct meta_assign {
    uint8_t in_use;
    uint8_t pad[3];
    uint32_t stream_id;
    uint32_t topic_id;
    uint32_t group_id;
    uint32_t partition_id;
    uint32_t owner;     /* member id */
    uint32_t revoke_to; /* member id or META_NONE */
};

/* Global permission bits, wire order (iggy-client-protocol-2 §2.2). */
enum meta_gperm {
    META_G_MANAGE_SERVERS = 1u << 0,
    META_G_READ_SERVERS = 1u << 1,
    META_G_MANAGE_USERS = 1u << 2,
    META_G_READ_USERS = 1u << 3,
    META_G_MANAGE_STREAMS = 1u << 4,
    META_G_READ_STREAMS = 1u << 5,
    META_G_MANAGE_TOPICS = 1u << 6,
    META_G_READ_TOPICS = 1u << 7,
    META_G_POLL_MESSAGES = 1u << 8,
    META_G_SEND_MESSAGES = 1u << 9,
    META_G_ALL = 0x3ffu,
};
enum meta_sperm {
    META_S_MANAGE_STREAM = 1u << 0,
    META_S_READ_STREAM = 1u << 1,
    META_S_MANAGE_TOPICS = 1u << 2,
    META_S_READ_TOPICS = 1u << 3,
    META_S_POLL_MESSAGES = 1u << 4,
    META_S_SEND_MESSAGES = 1u << 5,
};
enum meta_tperm {
    META_T_MANAGE_TOPIC = 1u << 0,
    META_T_READ_TOPIC = 1u << 1,
    META_T_POLL_MESSAGES = 1u << 2,
    META_T_SEND_MESSAGES = 1u << 3,
};

struct meta_user { /* users[id] */
    uint8_t in_use;
    uint8_t status;    /* 1 active, 2 inactive */
    uint8_t has_perms; /* 0: no Permissions at all (None) */
    uint8_t name_len;
    uint32_t id;
    uint16_t global;    /* enum meta_gperm */
    uint16_t pat_count; /* <= META_PATS_PER_USER */
    uint32_t pad;
    uint64_t created_at;
    uint64_t created_op;
    char username[META_USERNAME_MAX + 2];
    char pw_hash[META_PWHASH_MAX]; /* NUL-terminated PHC string */
};

struct meta_sgrant {
    uint8_t in_use;
    uint8_t bits;       /* enum meta_sperm */
    uint8_t dangling;   /* stream did not exist when granted */
    uint8_t has_topics; /* unused (0): derived from the topic grants */
    uint32_t user_id;
    uint32_t stream_id;
};

struct meta_tgrant {
    uint8_t in_use;
    uint8_t bits; /* enum meta_tperm */
    uint8_t dangling;
    uint8_t pad;
    uint32_t user_id;
    uint32_t stream_id;
    uint32_t topic_id;
};

struct meta_pat {
    uint8_t in_use;
    uint8_t name_len;
    uint8_t pad[2];
    uint32_t user_id;
    uint64_t expiry_at; /* absolute µs, 0 = never */
    uint64_t created_op;
    uint8_t digest[META_DIGEST_LEN];
    char name[META_NAME_MAX + 1];
};

/* The replicated part of a client-table entry (client_table.h). */
struct meta_session {
    uint8_t in_use;
    uint8_t pad[3];
    uint32_t user_id;
    struct vs_u128 client_id;
    uint64_t epoch;         /* op of the latest committed Register */
    uint64_t watermark;     /* highest committed request number */
    uint64_t latest_commit; /* op of the latest commit for this client */
    uint64_t created_op;    /* op of the Register that created the entry */
    struct vs_u128 watermark_checksum;
};

/* Capacities from the config. Derived ones: stream_grants = topic_grants
 * = 64 * max_users, assignments = max_partitions, session_slots = 65536
 * (so a restore can always grow the table to highest slot + 1). */
void meta_caps_from_config(struct meta_caps *caps, const struct vs_config *c);

/* 0 if every capacity is within range (>= 1, tables <= 2^26 records,
 * 2 <= clients <= session_slots <= 65536, nodes <= VS_REPLICAS_MAX),
 * else -EINVAL. */
int meta_caps_check(const struct meta_caps *caps);

/* Bytes of one instance with these capacities (0 if caps are invalid). */
size_t meta_state_size(const struct meta_caps *caps);

/* Writes the header of an instance at `mem` (meta_state_size bytes, the
 * rest MUST already be zero). Returns 0 or -EINVAL (bad caps). */
int meta_state_init(void *mem, const struct meta_caps *caps);

/* Zeroes the tables and writes the header (an empty instance). */
int meta_state_reset(void *mem, const struct meta_caps *caps);

/* 0 if `mem` starts with a valid header of `len` bytes, else -EINVAL. */
int meta_state_check_header(const void *mem, size_t len);

/* Copies the whole instance src onto dst (dst must have room for
 * hdr->size bytes of src). For the second left-right instance. 0 or
 * -EINVAL if src has no valid header. */
int meta_state_copy(void *dst, const void *src);

/* The cluster's node count of an instance: caps.nodes, 0 read as 1. */
uint32_t meta_nodes(const void *st);

/* Accessors (no bounds checks beyond VS_ASSERT on the slot). */
const struct meta_hdr *meta_hdr_c(const void *st);
struct meta_hdr *meta_hdr(void *st);
void *meta_tab(void *st, enum meta_tab t);
const void *meta_tab_c(const void *st, enum meta_tab t);

/* The consensus group id of a partition and its owning data shard
 * (DESIGN §1: 1 + XXH3_64(group id as 8 LE bytes) % K; K >= 1). */
uint64_t meta_group_id(uint32_t stream_id, uint32_t topic_id,
                       uint32_t partition_id);
uint32_t meta_partition_shard(uint64_t group_id, uint32_t shards);

#endif /* VS_SHARD_META_STATE_H */
