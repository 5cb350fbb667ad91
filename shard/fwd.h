/*
 * shard/fwd.h - frames between the data shards and shard 0 on the IPC
 * rings (ipc/port.h): how a client's replicated request reaches the
 * metadata shard and how its answer comes back.
 *
 * Flow (DESIGN §1, §5):
 *  1. A data shard owns the client connection. It answers every request
 *     it can itself (Ping, reads from the published left-right state,
 *     pre-consensus refusals in the header status). For a replicated
 *     request (Register, Logout, metadata ops 128..149) it checks the
 *     body, resolves options, hashes secrets off its event loop (argon2
 *     is slow by design), encodes the metadata op (shard/meta/ops.h) and
 *     sends FWD_PROPOSE to slot 0.
 *  2. Shard 0 runs the client table check (shard/meta/client_table.h),
 *     then the VSR commit path: prepare, WAL append + fsync, commit,
 *     apply, left-right publish; only then it sends FWD_REPLY with the
 *     complete frame for the client (read your writes). A duplicate gets
 *     the cached frame; an eviction outcome gets the Eviction frame.
 *  3. The data shard writes the frame to the connection `conn_id` if it
 *     still exists in the same incarnation; else drops it.
 *
 * Layout: struct fwd_hdr (64 bytes), then `payload_len` bytes.
 *  FWD_PROPOSE  payload = the client's 256-byte request header, exactly as
 *               received except: user_id = the session's user (for a
 *               Register: the user whose credentials were verified),
 *               request_checksum = XXH3(client body) widened (computed by
 *               the data shard when the client sent 0; verified when it
 *               did not: a mismatch is answered status 4 without
 *               forwarding), followed by the metadata op body
 *               (meta_op_encode). The client's own body is not forwarded.
 *  FWD_REPLY    payload = one whole frame to write to the client: a Reply
 *               (256-byte header + body) or an Eviction (256 bytes).
 *               flags FWD_F_BIND: the connection is now bound to session
 *               `session` of user `user_id` (Register committed);
 *               FWD_F_UNBIND: the session ended (Logout committed, or
 *               an eviction): the connection is logged out.
 *  FWD_CLOSED   payload = empty; a connection with a bound session
 *               closed (client id in `client`), so shard 0 may end
 *               consumer-group memberships (data-plane issue).
 *  FWD_MEMBER_SILENT payload = empty; the bound connection `conn_id` of
 *               client `client` (session `session`) sent nothing, not
 *               even a Ping, for 1.2 x group_heartbeat_interval_ms while
 *               its session was live in the published client table and
 *               the client was a member of a consumer group. Shard 0
 *               removes the client from every group (op 66) if that
 *               connection is the client's current binding (its last
 *               committed Register) or the client has none; a report from
 *               an older connection of a client that re-registered on
 *               another connection (any data shard) is ignored, so a
 *               client that reconnected elsewhere and stays active keeps
 *               its memberships. The connection and session stay; the
 *               report repeats at most once per limit while the client
 *               is still a member and silent (shard 0 busy).
 *  FWD_GROUP_REPORT payload = [n_done u32][n_inflight u32], then n_done
 *               then n_inflight struct fwd_group_part. The sender owns
 *               the partitions named (meta_partition_shard).
 *               done: a pending cooperative revocation whose revoking
 *               member (owner) has committed the group offset up to the
 *               last offset it polled there (or never polled it since
 *               this shard started): shard 0 proposes op 67 if the live
 *               assignment still has that owner and revoke_to.
 *               in-flight: this shard's COMPLETE current set of (group,
 *               partition) that a member polled past the group's
 *               committed offset; it replaces the sender's previous set
 *               (sent when it changes and to every new shard 0
 *               incarnation); shard 0 fills a JoinGroup's in-flight list
 *               (meta_op.inflight) from the sets of the live data shards
 *               when it proposes the join, because the proposing data
 *               shard only knows the partitions it owns.
 *
 *  FWD_CLUSTER  shard 0 -> every data shard, on a cluster node only:
 *               payload = struct fwd_cluster, this node's view of the
 *               cluster (its replica status and view, who leads, each
 *               node's client address, role, status and link, and this
 *               node's metadata state transfer), sent on
 *               every change and once a second. A data shard answers
 *               GetClusterMetadata from the last one and serves the
 *               partition plane only while it says this node leads.
 *
 *  FWD_REBIND   data shard -> shard 0: payload = struct fwd_rebind. The
 *               bound connection of client `client` that data shard
 *               `from_slot` (incarnation, connection) held was handed to
 *               this shard (ipc/handoff.h) and is now connection
 *               `conn_id` of (worker_slot, worker_incarnation): shard 0
 *               moves the client's binding if it still names the old
 *               connection, so a later FWD_CLOSED or FWD_MEMBER_SILENT
 *               of the new one counts and the old shard's restart does
 *               not end the memberships of a client that lives on.
 *
 *  FWD_MEMBERS  data shard -> shard 0, on a cluster node, every
 *               LIVE_MEMBERS_MS: payload = n struct fwd_member, this
 *               shard's COMPLETE current set of bound connections whose
 *               client is a consumer-group member and whose session is
 *               the client's current one (meta_session.epoch) in the
 *               published state. A set larger than one ring frame is
 *               split: FWD_F_MORE on all but the last piece. Shard 0
 *               claims these members live (shard/zero/groups0.h): the
 *               primary for its own node, a backup in its report to the
 *               primary.
 *  FWD_CLOSED   (as above) also carries `session`, the closed
 *               connection's session, so a node with no binding for the
 *               client can still tell the primary which session ended.
 *
 * Between data shards (shard/serve/data.h): a partition lives on
 * one data shard (meta_partition_owner); a data-plane request (send, poll,
 * consumer offsets, flush) arriving on another shard's connection is
 * resolved and authorized there, then forwarded to the owner:
 *  FWD_DATA_REQUEST  payload = struct data_cmd (shard/serve/data.h: the
 *               resolved target partition (ids + created_op), consumer,
 *               strategy...) followed by the batch bytes of a send;
 *               `session` carries the requester's sequence number of the
 *               request (echoed), `conn_id` its connection.
 *  FWD_DATA_REPLY    payload = [status u32][reply body] for the client's
 *               request; worker_slot/worker_incarnation/conn_id/session
 *               echo the request's, so a reply to an earlier incarnation
 *               or an abandoned request is dropped.
 *  Both may be split into several ring frames (a payload can exceed a
 *  ring's largest frame): every piece carries the same fwd_hdr, with
 *  FWD_F_MORE on all but the last; pieces of one message are contiguous on
 *  the (ordered) ring, and a piece whose (incarnation, conn_id, session)
 *  differs from the partial message discards it. The owner answers every
 *  complete FWD_DATA_REQUEST with one FWD_DATA_REPLY; if the owner dies
 *  first, the requester answers the client 57 (the SDK resends; sends are
 *  at-least-once).
 *
 * Invariants: frames are never dropped by the rings (ipc/port.h queues
 * under back-pressure); a data shard never sends FWD_PROPOSE for a
 * connection with a request still in flight (one request in flight per
 * connection, as Iggy's SDKs do); shard 0 answers every FWD_PROPOSE with
 * exactly one FWD_REPLY unless the destination's incarnation changed.
 * Callers: data shards (propose, closed, data request/reply, member
 * silent, group report), shard 0 (reply).
 */
#ifndef VS_SHARD_FWD_H
#define VS_SHARD_FWD_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

enum fwd_kind {
    FWD_PROPOSE = 1,
    FWD_REPLY = 2,
    FWD_CLOSED = 3,
    FWD_DATA_REQUEST = 4,
    FWD_DATA_REPLY = 5,
    FWD_MEMBER_SILENT = 6,
    FWD_GROUP_REPORT = 7,
    FWD_CLUSTER = 8,
    FWD_REBIND = 9,
    FWD_MEMBERS = 10,
};

enum fwd_flags {
    FWD_F_BIND = 1u << 0,
    FWD_F_UNBIND = 1u << 1,
    FWD_F_MORE = 1u << 2, /* FWD_DATA_*: more pieces of this payload follow */
};

struct fwd_hdr {
    uint32_t kind;               /* enum fwd_kind */
    uint32_t worker_slot;        /* the data shard's process slot */
    uint64_t worker_incarnation; /* replies to an older one are dropped */
    uint64_t conn_id;            /* the data shard's connection id */
    uint32_t payload_len;
    uint32_t flags; /* enum fwd_flags (FWD_REPLY) */
    /* FWD_REPLY with FWD_F_BIND: the bound session */
    uint64_t session;
    uint32_t user_id;
    uint32_t reserved;
    struct vs_u128 client; /* FWD_CLOSED, FWD_REPLY: the client id */
};
_Static_assert(sizeof(struct fwd_hdr) == 64, "fwd_hdr layout");
_Static_assert(offsetof(struct fwd_hdr, kind) == 0, "fwd_hdr.kind");
_Static_assert(offsetof(struct fwd_hdr, worker_incarnation) == 8,
               "fwd_hdr.worker_incarnation");
_Static_assert(offsetof(struct fwd_hdr, conn_id) == 16, "fwd_hdr.conn_id");
_Static_assert(offsetof(struct fwd_hdr, payload_len) == 24,
               "fwd_hdr.payload_len");
_Static_assert(offsetof(struct fwd_hdr, session) == 32, "fwd_hdr.session");
_Static_assert(offsetof(struct fwd_hdr, user_id) == 40, "fwd_hdr.user_id");
_Static_assert(offsetof(struct fwd_hdr, client) == 48, "fwd_hdr.client");

/* The FWD_REBIND payload: where the connection was. */
struct fwd_rebind {
    uint32_t from_slot;
    uint32_t reserved;
    uint64_t from_incarnation;
    uint64_t from_conn_id;
};
_Static_assert(sizeof(struct fwd_rebind) == 24, "fwd_rebind layout");

/* One entry of FWD_MEMBERS (and of the replica links' MemberReport,
 * common/wire.h, with conn_id 0). */
struct fwd_member {
    struct vs_u128 client;
    uint64_t session; /* the connection's session (meta_session.epoch) */
    uint64_t conn_id; /* the data shard's connection id */
};
_Static_assert(sizeof(struct fwd_member) == 32, "fwd_member layout");

/* One entry of FWD_GROUP_REPORT (same binary on both ends). */
struct fwd_group_part {
    uint32_t stream_id, topic_id, group_id, partition_id;
    uint64_t group_created_op;
    uint32_t owner;     /* done: the revoking member id (else 0) */
    uint32_t revoke_to; /* done: its target member id (else 0) */
};
_Static_assert(sizeof(struct fwd_group_part) == 32, "fwd_group_part layout");

#define FWD_CLUSTER_ADDR_MAX 64u
#define FWD_CLUSTER_NONE     0xffu /* no settled primary */

/* One node of FWD_CLUSTER. role/status use GetClusterMetadata's codes
 * (role 0 Leader, 1 Follower; status 0 Healthy, 1 Starting, 3
 * Unreachable); link is enum links_state (shard/link/links.h), 255 for
 * the node itself. */
struct fwd_cluster_node {
    char client_addr[FWD_CLUSTER_ADDR_MAX]; /* "HOST:PORT", "" unknown */
    uint8_t role;
    uint8_t status;
    uint8_t link;
    uint8_t pad[5];
    uint64_t bytes_in, bytes_out; /* link counters (0 for self) */
};
_Static_assert(sizeof(struct fwd_cluster_node) == 88, "fwd_cluster_node");

/* This node's metadata state transfer (shard/zero/transfer.h zt_info). */
#define FWD_XFER_LAST_MAX 128u
struct fwd_cluster_xfer {
    uint8_t stage; /* enum xfer_stage: idle, awaiting target, ... */
    uint8_t peer;  /* serving peer, FWD_CLUSTER_NONE when idle */
    uint8_t pad[6];
    uint64_t fetched, total; /* bytes of the running session */
    uint64_t sessions, completed, abandoned;
    uint64_t last_bytes;          /* bytes of the last installed session */
    uint64_t last_ms;             /* its duration, milliseconds */
    char last[FWD_XFER_LAST_MAX]; /* how the last session ended, "" none */
};
_Static_assert(sizeof(struct fwd_cluster_xfer) == 8 + 56 + 128,
               "fwd_cluster_xfer");

struct fwd_cluster {
    uint32_t count;     /* replicas, 2..VS_REPLICAS_MAX */
    uint8_t self;       /* this node's replica id */
    uint8_t vsr_status; /* enum vsr_status of this node's engine */
    uint8_t leader;     /* settled primary of the current view, or NONE */
    uint8_t pad;
    uint32_t view, log_view;
    uint64_t op, commit_min, commit_max, checkpoint_op;
    struct vs_u128 checkpoint_checksum;
    struct fwd_cluster_node nodes[VS_REPLICAS_MAX];
    struct fwd_cluster_xfer xfer;
};
_Static_assert(sizeof(struct fwd_cluster) ==
                   64 + 88 * VS_REPLICAS_MAX + sizeof(struct fwd_cluster_xfer),
               "fwd_cluster layout");

#endif /* VS_SHARD_FWD_H */
