/*
 * shard/serve/handoff.h - a client connection moves to the data shard
 * that owns the partitions it uses, so its batches stop being copied
 * through the IPC rings (the socket itself is passed: ipc/handoff.h).
 *
 * Rule: every data-plane request (send, poll, offsets, flush) of a
 * connection notes the data shard that owns its partition. After
 * conn_handoff_after requests in a row for partitions of ONE other data
 * shard (a request for a partition of this shard, or of a third one,
 * starts the count over), the connection is handed to that shard at the
 * next point where all of these hold:
 *  - it is between requests: nothing in flight (no forward, no fsync
 *    wait, no hash job), no large body being read into place, not
 *    closing;
 *  - every reply was written to the socket (the output buffer is empty),
 *    so replies stay in order: the next one can only come from the new
 *    shard (while a due handoff waits for that, nothing more is parsed:
 *    pipelined requests travel with the socket);
 *  - it is plain TCP (a TLS session's state lives in this process's
 *    OpenSSL objects and cannot be passed: TLS connections stay where
 *    they were accepted and keep forwarding) and bound to a session;
 *  - the bytes already read and not yet parsed fit in
 *    HANDOFF_PENDING_MAX (they travel with the socket, so no request is
 *    lost or reordered), and the target shard is ready.
 * The message carries the session (user, session, client, the
 * credentials it was opened with and their last check), its liveness
 * time and its entry in the node's connection table, which the new shard
 * adopts in place (the node's count never drops, so max_connections
 * holds). The sender frees its side without a FWD_CLOSED (the session
 * lives on) and the receiver tells shard 0 (FWD_REBIND) so consumer-group
 * liveness follows the connection. If the channel is full the connection
 * stays and the count starts over. The new shard assigns its own
 * connection id (GetClients shows the new one).
 * Crashes: a message sent to a shard that dies before reading it waits
 * for its next incarnation (the supervisor holds the channel); the
 * connection is never in flight with a reply owed, so nothing
 * acknowledged depends on it.
 * Counters: handed_out / handed_in / handoff_failed (serve_counters),
 * logged when the shard stops; each handoff is logged at info level.
 * Process: data shards, loop thread.
 */
#ifndef VS_SHARD_SERVE_HANDOFF_H
#define VS_SHARD_SERVE_HANDOFF_H

#include <stdint.h>

struct serve;
struct serve_conn;

/* Watches this shard's handoff channel. 0 or -ENOMEM (no channel in
 * the segment: handoffs are off for this shard, 0). */
int serve_handoff_init(struct serve *s);
void serve_handoff_fini(struct serve *s);
/* A data-plane request of c is for a partition of data shard `owner`. */
void serve_handoff_note(struct serve_conn *c, uint32_t owner);
/* Hands c over if the rule above says so: 1 (c is freed); 2 when it is
 * due but replies are still being written (parse nothing more: the
 * write callback comes back here once the output is empty); else 0. */
int serve_handoff_try(struct serve_conn *c);

#endif /* VS_SHARD_SERVE_HANDOFF_H */
