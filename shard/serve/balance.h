/*
 * shard/serve/balance.h - client connections spread evenly over the data
 * shards.
 *
 * Role: every data shard watches the inherited client listeners (plain
 * TCP and, when enabled, TLS; each listener is balanced the same way,
 * on the shard's count of connections of both kinds). A
 * shard publishes its open connection count in its shared-memory process
 * slot (vs_proc_shm.conns) at every accept and on its 100 ms timer, and
 * accepts ONE connection at a time, and only while its count is at most
 * the smallest count among the data shards that are ready (ties accept,
 * and the kernel gives the connection to one of them). A shard above the
 * minimum stops watching the listener for SERVE_BAL_RETRY_MS and looks
 * again; if it has been declining for SERVE_BAL_GRACE_MS while a
 * connection still waits (the shard with fewer connections is stuck or
 * busy), it accepts anyway: a slow shard never holds clients back for
 * long. A shard that is not ready (crashed, restarting) does not count.
 * So connections alternate between shards instead of whole accept bursts
 * landing on whichever shard woke first.
 * Invariants: only the owning shard writes its slot's count; the counts
 * of other shards may be up to 100 ms stale for closes (accepts are
 * published at once), so the spread is even within a few connections.
 * Process: data shards, loop thread.
 */
#ifndef VS_SHARD_SERVE_BALANCE_H
#define VS_SHARD_SERVE_BALANCE_H

#include <stdint.h>

#define SERVE_BAL_RETRY_MS 2u
#define SERVE_BAL_GRACE_MS 20u

struct serve;
struct serve_bal;

/* 0 or -ENOMEM. Publishes a count of 0. */
int serve_bal_init(struct serve *s);
void serve_bal_fini(struct serve *s);
/* Stores this shard's open connection count in its slot. */
void serve_bal_publish(struct serve *s);
/* A listener (tls: the TLS one) is readable: accepts what this shard
 * should take (see above). */
void serve_bal_on_accept(struct serve *s, int listen_fd, int tls);
/* 1 if a shard with `mine` connections may accept now, given the counts
 * of the other ready shards (n of them; pure, for tests). */
int serve_bal_fair(uint32_t mine, const uint32_t *others, uint32_t n);

#endif /* VS_SHARD_SERVE_BALANCE_H */
