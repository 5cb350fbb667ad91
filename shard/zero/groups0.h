/*
 * shard/zero/groups0.h - shard 0's consumer-group liveness bookkeeping: which
 * connection each registered client is bound to, and when a member's
 * removal (RemoveConsumerGroupMember, op 66) or a pending cooperative
 * revocation's completion (CompleteConsumerGroupRevocation, op 67) must
 * be proposed (iggy-client-protocol-2.md §6.3).
 *
 * Rules (the proposals themselves go through shard 0's ordinary commit
 * path as internal ops: client 0, no reply; shard/zero/commit.c):
 *  - Disconnect: a FWD_CLOSED for the connection a client is bound to
 *    (or for a client with no recorded binding, e.g. after a shard-0
 *    restart) removes the client from every group. A FWD_CLOSED for an
 *    OLDER connection of a client that has re-registered elsewhere since
 *    is ignored (the ring from another data shard may deliver it late).
 *  - Handoff: a data shard that was handed a bound connection by another
 *    (FWD_REBIND) moves the binding to its own (slot, incarnation,
 *    connection) if the binding still names the old one.
 *  - Dead data shard: a binding whose data shard process has a different
 *    incarnation now (the shard died; its connections are gone without a
 *    FWD_CLOSED) counts as a disconnect, checked every sweep.
 *  - Heartbeat loss: the data shard that owns a connection sees its
 *    requests; it reports a member's connection silent for 1.2 x
 *    group_heartbeat_interval_ms (FWD_MEMBER_SILENT, shard/fwd.h). The
 *    report removes the client from every group if it names the client's
 *    current binding (or the client has none); the binding stays (the
 *    connection is still open and may rejoin). A client that registered
 *    again on another connection (any data shard) is bound there, so a
 *    stale silent connection cannot evict it.
 *  - Revocation: a pending revocation (assignment with revoke_to set)
 *    completes as soon as the partition's owning data shard reports that
 *    the revoking member committed what it polled (FWD_GROUP_REPORT
 *    `done`, checked against the live assignment by
 *    groups0_revoke_current), else after `rebalancing_timeout_us`
 *    (reference: 30 s) from the first sweep that saw it.
 *  - In flight: each data shard reports the complete set of (group,
 *    partition) it owns that were polled past the committed group offset
 *    (FWD_GROUP_REPORT `inflight`); a JoinGroup proposal gets its
 *    in-flight list filled from the sets of the live incarnations.
 *
 *
 * Cluster rules (replica_count > 1; the primary removes, through op 66,
 * every member whose client is not alive on ANY node, within a bounded
 * time T = the liveness timeout, 1.2 x group_heartbeat_interval_ms):
 *  - Claims: every data shard of every node sends its shard 0 the
 *    complete set of its bound connections whose client is a member and
 *    whose session is the client's current one (FWD_MEMBERS, every
 *    LIVE_MEMBERS_MS, shard/fwd.h). Each node's shard 0 keeps the last
 *    complete set per live data shard (groups0_members_piece); the union
 *    (groups0_node_members) is the node's claim. Local claims bind the
 *    client to its connection here (groups0_claim_local; on any node).
 *  - Reports: a backup sends the primary, over the replica link, its
 *    node's claim once a second (a MemberReport, common/wire.h), marked
 *    complete once its shard 0 has run for GROUPS0_COMPLETE_US (every
 *    live data shard has sent a set to it), with its shard 0's
 *    incarnation (a random per-boot nonce). Connection ends on a backup
 *    (FWD_CLOSED of a bound connection, a dead data shard) are sent at
 *    once as events of a report (client, session).
 *  - Binding to the origin: the primary binds a client registered
 *    through a backup (a forwarded Register's commit) and a client
 *    claimed by a node's report (session = its current one) to that node
 *    and the node's incarnation (groups0_bind_remote, groups0_report).
 *  - Events: a remote event (client, session) removes the client if the
 *    session is still its current one in the replicated state
 *    GROUPS0_CLOSE_GRACE_US later (a client that registered again
 *    anywhere has a newer session, so an event of its old connection
 *    changes nothing; the grace covers an SDK that closes its connection
 *    on a backup just before it logs in again on the leader); session 0
 *    (unknown to the node) counts only if the primary's binding names
 *    that node, and then if the client is still unbound at the end of
 *    the grace.
 *  - A remote binding is dead (groups0_sweep_members) when: the link to
 *    its node has been down for T; or the node reported a new
 *    incarnation (it restarted) and its first complete report did not
 *    claim the client; or GROUPS0_MISSED_REPORTS complete reports of the
 *    node in a row did not claim it while it was a member (a lost
 *    event; reports claim members only, so a client bound there that
 *    joins a group later starts counting at its join). Absence counts in
 *    reports received, never in time: a slow or partitioned node whose
 *    link stays up and whose reports stop arriving loses no member, and
 *    a live member is in every complete report of its node.
 *  - Lease: a member with no binding (after a view change the new
 *    primary knows only its own node's connections; groups0_tenure drops
 *    every remote binding and every lease) is kept for T from the first
 *    sweep that saw it unbound; a claim within T binds it, else it is
 *    removed. A member of the new primary's own node is claimed by its
 *    own data shards (a local binding: the connection rules above).
 *  The sweep runs only on the settled primary of a cluster. A one-node
 *  server keeps the connection rules above only (its shard 0 sees every
 *  connection).
 *
 * Invariants: pure bookkeeping over memory, no clock (callers pass the
 * time), no I/O. Callers: shard 0 only (commit.c), tests.
 */
#ifndef VS_SHARD_GROUPS0_H
#define VS_SHARD_GROUPS0_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/fwd.h"
#include "shard/meta/ops.h"

#define GROUPS0_REBALANCING_TIMEOUT_US (30ull * 1000000ull)
/* Complete reports of a node in a row that must miss a client bound
 * there before it counts as gone (a bind reaches the node's data shard
 * and then its report within about two reports). */
#define GROUPS0_MISSED_REPORTS 4u
/* A node's report interval, and the shard-0 uptime after which its
 * claim is complete (its data shards send sets every 500 ms). */
#define GROUPS0_REPORT_US 1000000ull
/* How long a remote connection end waits for the client to log in
 * again elsewhere (groups0_remote_closed). */
#define GROUPS0_CLOSE_GRACE_US 2000000ull
#define GROUPS0_COMPLETE_US    2000000ull

struct groups0;

/* Returns the current incarnation of a process slot (0 = none). */
typedef uint64_t groups0_incarnation_fn(void *ctx, uint32_t slot);

struct groups0 *groups0_create(void);
void groups0_destroy(struct groups0 *g);

/* A Register of `client` committed on connection (slot, inc, conn). */
void groups0_bind(struct groups0 *g, struct vs_u128 client, uint32_t slot,
                  uint64_t inc, uint64_t conn_id);
/* A Logout committed (apply already released the memberships). */
void groups0_unbind(struct groups0 *g, struct vs_u128 client);
/* FWD_REBIND: the connection (from_slot, from_inc, from_conn) of
 * `client` now is (slot, inc, conn_id); moves the binding only if it
 * names the old connection (1), else leaves it (0: a newer Register
 * elsewhere wins). */
int groups0_rebind(struct groups0 *g, struct vs_u128 client, uint32_t from_slot,
                   uint64_t from_inc, uint64_t from_conn, uint32_t slot,
                   uint64_t inc, uint64_t conn_id);
/* FWD_CLOSED: 1 if the client's memberships must be removed (the closed
 * connection is its binding, or it has none); the binding is dropped. */
int groups0_closed(struct groups0 *g, struct vs_u128 client, uint32_t slot,
                   uint64_t inc, uint64_t conn_id);
/* Drops the bindings whose slot now has another incarnation and returns
 * their clients in *out (heap, free()); *n the count. */
void groups0_sweep_dead(struct groups0 *g, groups0_incarnation_fn *fn,
                        void *ctx, struct vs_u128 **out, size_t *n);

/* 1 if `client` is a member of any group in metadata instance st. */
int groups0_is_member(const void *st, struct vs_u128 client);

/* A pending revocation that is due: the op 67 target. */
struct groups0_revoke {
    uint32_t stream_id, topic_id, group_id, partition_id;
};
/* Scans st's assignments: records newly pending revocations at now_us,
 * forgets completed ones, and returns in *out (heap) those pending for
 * at least timeout_us. */
void groups0_due_revocations(struct groups0 *g, const void *st, uint64_t now_us,
                             uint64_t timeout_us, struct groups0_revoke **out,
                             size_t *n);

/* FWD_MEMBER_SILENT: 1 if the client's memberships must be removed (the
 * silent connection is its binding, or it has none); the binding stays. */
int groups0_silent(const struct groups0 *g, struct vs_u128 client,
                   uint32_t slot, uint64_t inc, uint64_t conn_id);

/* 1 if the reported completed revocation `e` is still pending in st
 * exactly as reported (same group incarnation, owner and revoke_to). */
int groups0_revoke_current(const void *st, const struct fwd_group_part *e);

/* FWD_GROUP_REPORT: replaces the in-flight set of data shard `slot`
 * (incarnation inc) with e[0..n). */
void groups0_set_inflight(struct groups0 *g, uint32_t slot, uint64_t inc,
                          const struct fwd_group_part *e, size_t n);
/* JoinGroup: adds to op->inflight (deduplicated, at most
 * META_INFLIGHT_MAX) the partitions of the op's group (resolved in st)
 * that a live data shard reported in flight. fn (NULL: every slot is
 * live) gives a slot's current incarnation; sets of other incarnations
 * are ignored. Returns the number of partitions added. */
size_t groups0_fill_inflight(const struct groups0 *g, const void *st,
                             groups0_incarnation_fn *fn, void *ctx,
                             struct meta_op *op);

/* A Register committed on (slot, inc, conn_id) with session `session`
 * (the Register's op). groups0_bind is this with session 0 (unknown). */
void groups0_bind_session(struct groups0 *g, struct vs_u128 client,
                          uint64_t session, uint32_t slot, uint64_t inc,
                          uint64_t conn_id);
/* groups0_sweep_dead, also giving each client's bound session (heap,
 * when sessions is not NULL; 0 unknown). */
void groups0_sweep_dead_sessions(struct groups0 *g, groups0_incarnation_fn *fn,
                                 void *ctx, struct vs_u128 **out,
                                 uint64_t **sessions, size_t *n);
/* 1 if client has a binding (local or remote). */
int groups0_has(const struct groups0 *g, struct vs_u128 client);
/* The bound session of client (0: none or unknown). */
uint64_t groups0_session_of(const struct groups0 *g, struct vs_u128 client);
/* 1 if `session` is client's current session in st, or the client has
 * none at all (no connection can hold it any more). */
int groups0_session_current(const void *st, struct vs_u128 client,
                            uint64_t session);

/* This replica's id (bindings of this node are local). Default 0. */
void groups0_set_self(struct groups0 *g, uint8_t self);
/* The replica link to `node` went up (1) or down (0) at now_us. */
void groups0_link(struct groups0 *g, uint8_t node, int up, uint64_t now_us);
/* This replica became the settled primary: remote bindings, node report
 * counts and leases are forgotten; down links count from now_us. */
void groups0_tenure(struct groups0 *g, uint64_t now_us);
/* A Register forwarded by `node` (incarnation node_inc, 0 unknown)
 * committed with session `session`. */
void groups0_bind_remote(struct groups0 *g, struct vs_u128 client,
                         uint64_t session, uint8_t node, uint64_t node_inc);
/* A MemberReport of `node` (incarnation inc): claims e[0..n) (checked
 * against st: members with their current session) bind their clients to
 * the node; `complete` counts the report for the absence rule. Returns
 * the number of claims taken, or -1 for node = self or out of range. */
int groups0_report(struct groups0 *g, const void *st, uint8_t node,
                   uint64_t inc, int complete, const struct fwd_member *e,
                   size_t n);
/* A MemberReport event of `node` at now_us: if it counts (the rule
 * above) the binding it names is dropped and the end waits
 * GROUPS0_CLOSE_GRACE_US; groups0_sweep_members then removes the client
 * if that session is still its current one. */
void groups0_remote_closed(struct groups0 *g, const void *st, uint8_t node,
                           struct vs_u128 client, uint64_t session,
                           uint64_t now_us);
/* FWD_MEMBERS claims of this node's data shard (slot, inc): binds each
 * member with its current session to its connection here. */
void groups0_claim_local(struct groups0 *g, const void *st, uint32_t slot,
                         uint64_t inc, const struct fwd_member *e, size_t n);
/* One FWD_MEMBERS piece of data shard (slot, inc); `more`: pieces
 * follow. Returns 1 when the set is complete (then it replaces the
 * slot's previous one), else 0. */
int groups0_members_piece(struct groups0 *g, uint32_t slot, uint64_t inc,
                          const struct fwd_member *e, size_t n, int more);
/* This node's claim: the last complete sets of the data shards whose
 * incarnation is current (fn NULL: all), in *out (heap), *n entries. */
void groups0_node_members(const struct groups0 *g, groups0_incarnation_fn *fn,
                          void *ctx, struct fwd_member **out, size_t *n);
/* The primary's sweep: the members of st whose remote connection end is
 * due, whose remote binding is dead or whose lease ran out (timeout_us),
 * in *out (heap; a client may appear twice).
 * Local bindings are left to the connection rules. */
void groups0_sweep_members(struct groups0 *g, const void *st, uint64_t now_us,
                           uint64_t timeout_us, struct vs_u128 **out,
                           size_t *n);

/* Number of recorded bindings (tests). */
size_t groups0_bindings(const struct groups0 *g);

#endif /* VS_SHARD_GROUPS0_H */
