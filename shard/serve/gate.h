/*
 * shard/serve/gate.h - whether a data shard can judge logins and
 * metadata requests yet.
 *
 * Role: a node's data shards listen (and answer Ping) as soon as they
 * start, but the published metadata is empty until shard 0 has published
 * the recovered state (lr_restore at the recovered op) or, on a fresh
 * node, the genesis op that creates the root user. A login judged against
 * that empty state would be refused as final (Eviction 9) although a
 * moment later it succeeds. So until the published state records the
 * genesis (meta_hdr.genesis_done: set by the genesis op, and carried by
 * every snapshot and replay after it, so a restore publishes it in the
 * same flip as the recovered op), a Register, a replicated request or a
 * metadata read is answered with the retryable status 58 (NotAccepted,
 * which Iggy's SDKs resend every 50 ms); Ping keeps answering. Once open
 * the gate stays open for the shard's life: the published op never goes
 * back while the node runs.
 * Callers: the data shard's loop thread (serve.c).
 */
#ifndef VS_SHARD_SERVE_GATE_H
#define VS_SHARD_SERVE_GATE_H

struct serve;

/* 1 once the published metadata can judge requests (see above). */
int serve_gate_open(struct serve *s);

#endif /* VS_SHARD_SERVE_GATE_H */
