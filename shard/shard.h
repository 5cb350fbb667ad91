/*
 * shard/shard.h - entry points of the shard processes, called by the
 * supervisor in the child right after fork and the common child set-up
 * (server/supervisor.c: signals reset, PR_SET_PDEATHSIG + getppid check,
 * oom_score_adj, foreign fds closed).
 *
 * Process slots: 0 = shard 0 (metadata: the only left-right writer),
 * 1..K = data shards (left-right readers with the instances mapped
 * read-only, client connections).
 *
 * Each main runs one libevent base with signals through libevent
 * (SIGTERM/SIGINT: clean stop, exit 0; SIGHUP: reopen the log, take the
 * log level the supervisor stored in the segment header), writes `ready`
 * in its vs_proc_shm slot and rings the supervisor's doorbell once it
 * serves, and returns the process exit code (VS_EXIT_*). A refusal that
 * must not be retried calls shard_fatal(), which records the one-line
 * reason in the slot for the supervisor and exits 2.
 */
#ifndef VS_SHARD_SHARD_H
#define VS_SHARD_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "ipc/segment.h"

struct vs_shard_ctx {
    const struct vs_config *cfg;
    const struct vs_seg *seg;
    uint32_t slot;  /* 0 = shard 0, 1..K data shards */
    uint32_t k;     /* number of data shards */
    int client_fd;  /* inherited client listener (data shards serve it;
                       shard 0 reads its bound address, closes it), -1 */
    int replica_fd; /* inherited replica-link listener of this slot's
                       mesh: shard 0's, or data shard s's own (a
                       cluster node; server/datalinks.h), -1 */
    int tls_fd;     /* inherited TLS client listener (data shards), -1 */
    int http_fd;    /* inherited HTTP endpoint listener (data shards), -1 */
    uint64_t incarnation;
};

/* Bytes of one left-right metadata instance for this configuration
 * (meta_state_size of its capacities; 0 if they are invalid). Called by
 * the supervisor before it creates the segment. */
size_t shard0_instance_size(const struct vs_config *cfg);

/* Process mains: return the exit code. */
int shard0_main(const struct vs_shard_ctx *ctx);
int worker_main(const struct vs_shard_ctx *ctx);

/* Records `reason` (printf format) in the slot, logs it, writes it to
 * stderr and exits 2. */
_Noreturn void shard_fatal(const struct vs_shard_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* VS_SHARD_SHARD_H */
