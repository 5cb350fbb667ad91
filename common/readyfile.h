/*
 * common/readyfile.h - the --ready-file a node writes once it serves.
 *
 * One JSON object on one line:
 *   {"client":"127.0.0.1:40123","replica":"127.0.0.1:40124",
 *    "tls":"127.0.0.1:40125","http":"127.0.0.1:40126","pid":1234,
 *    "shards":[1235,1236]}
 * "replica" only when clustered, "tls" / "http" only when served,
 * "shards" lists the child pids when given.
 * Written atomically (tmp, fsync, rename) so a reader never sees half.
 * Callers: the supervisor; tests read it with vs_ready_file_read().
 */
#ifndef VS_COMMON_READYFILE_H
#define VS_COMMON_READYFILE_H

#include <stddef.h>
#include <sys/types.h>

struct vs_ready_info {
    char client[256];
    char replica[256]; /* "" when not clustered */
    char tls[256];     /* "" when TLS is off */
    char http[256];    /* "" when there is no HTTP endpoint */
    pid_t pid;
    pid_t shard_pids[64];
    size_t n_shard_pids;
};

/* 0 or -errno. */
int vs_ready_file_write(const char *path, const struct vs_ready_info *info);
/* Parses a file written by vs_ready_file_write. 0, -ENOENT, or -EPROTO. */
int vs_ready_file_read(const char *path, struct vs_ready_info *info);

#endif /* VS_COMMON_READYFILE_H */
