/*
 * shard/serve/liveness.h - what a data shard tells shard 0 about its
 * consumer-group members (iggy-client-protocol-2.md §6.3, shard/fwd.h):
 *  - heartbeat loss: a bound connection whose client sent nothing (any
 *    request, Ping included; Iggy's SDKs ping every 5 s) for 1.2 x
 *    group_heartbeat_interval_ms, with no request of its own in flight,
 *    is evicted with StaleClient (13) as upstream does: its session ends
 *    on this connection, FWD_CLOSED tells shard 0, which releases the
 *    client's consumer-group memberships unless the client is bound to
 *    another connection now (a client that registered again elsewhere
 *    keeps them); the connection stays open unauthenticated (the client
 *    reads the eviction as the answer to its next request and may log in
 *    again; else the unauthenticated-connection timer closes it). The
 *    shard that owns the connection is the only one that sees its
 *    requests.
 *  - cooperative revocations: the poll path records the last offset each
 *    member polled per partition this shard owns (polled.h); every
 *    LIVE_SCAN_MS the pending revocations of owned partitions are checked
 *    against the committed group offset and reported done
 *    (FWD_GROUP_REPORT), and the set of in-flight (group, partition) is
 *    reported when it changes (or shard 0 restarted) so shard 0 can fill
 *    a JoinGroup's in-flight list.
 *
 *  - live members (a node of a cluster): every LIVE_MEMBERS_MS the
 *    complete set of this shard's bound connections whose client is a
 *    group member with its current session goes to shard 0
 *    (FWD_MEMBERS), which claims them alive to the primary
 *    (shard/zero/groups0.h "Cluster rules").
 *
 * Invariants: read sections on the published state never span I/O (the
 * offsets are read after the section); records whose group, partition or
 * member is gone are pruned on every scan. Callers: the data shard's loop
 * thread (serve.c, the poll path of data.c).
 */
#ifndef VS_SHARD_SERVE_LIVENESS_H
#define VS_SHARD_SERVE_LIVENESS_H

#include <stdint.h>

#include "common/wire.h"
#include "shard/serve/data.h"

#define LIVE_SCAN_MS    200u
#define LIVE_MEMBERS_MS 500u

struct serve;
struct serve_conn;
struct dparts;

void serve_live_init(struct serve *s);
void serve_live_fini(struct serve *s);
/* A request arrived on c (serve_dispatch). */
void serve_live_touch(struct serve_conn *c);
/* Evicts c with StaleClient and unbinds it (see above). */
void serve_live_evict_stale(struct serve_conn *c);
/* Called every ~100 ms (serve.c's watch timer). */
void serve_live_tick(struct serve *s);
/* The poll path (owner side): member `client` polled cmd's partition for
 * group cmd->consumer_id up to `last`; `committed` (0/1) and `off`: the
 * group offset stored after the poll's auto-commit, if any. */
void serve_live_polled(struct serve *s, struct vs_u128 client,
                       const struct data_cmd *cmd, uint64_t last, int committed,
                       uint64_t off);

/* Defined in data.c: the owned partitions. */
struct dparts *serve_data_parts(struct serve *s);

#endif /* VS_SHARD_SERVE_LIVENESS_H */
