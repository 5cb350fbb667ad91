/*
 * shard/zero/gauges.h - shard 0's consensus figures for the metrics
 * endpoint: view, log_view, op, commit, role and status of the metadata
 * group, its view changes, repairs and state transfers, and the state and
 * bytes of every replica link, copied from the engine and the links into
 * this process's metrics block
 * (common/metrics.h) on every tick, so the HTTP endpoint and
 * /health/ready read them without asking shard 0.
 * Callers: shard 0's loop thread.
 */
#ifndef VS_SHARD_ZERO_GAUGES_H
#define VS_SHARD_ZERO_GAUGES_H

struct commit;
struct links;

/* Copies the engine's figures (status 1 = normal, 2 = view change,
 * 3 = recovering; role 1 = primary, 2 = backup) and, on a cluster (links
 * not NULL), each link's state (0 down, 1 connecting, 2 authenticated)
 * and bytes. */
void shard0_gauges_publish(const struct commit *c, const struct links *l);

#endif /* VS_SHARD_ZERO_GAUGES_H */
