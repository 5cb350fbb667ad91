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

/* Number of recorded bindings (tests). */
size_t groups0_bindings(const struct groups0 *g);

#endif /* VS_SHARD_GROUPS0_H */
