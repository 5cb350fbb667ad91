/*
 * tests/integration/harness.h - start, watch and stop real vstreamd nodes
 * from integration tests.
 *
 * Role: every integration test of the project uses this instead of its
 * own process plumbing. A node gets a private temp dir holding its data
 * dir (DIR/data), ready file (DIR/ready), log (DIR/vstreamd.log) and
 * stderr (DIR/stderr.log). vs_node_start runs $VSTREAMD (absolute path
 * from the environment, set by make check) with the test's arguments plus
 * --profile test --data-dir --ready-file --log-file and, unless the test
 * gives one, --client-addr 127.0.0.1:0, then waits (bounded) for the
 * ready file; the bound addresses and pids come from it.
 *
 * The test process makes itself a child subreaper (vs_harness_init), so
 * a shard orphaned by its supervisor is re-parented to the test and
 * vs_harness_orphans() finds it; every process is stopped by pid, never
 * by name. All waits are bounded and return -ETIMEDOUT rather than hang.
 *
 * Callers: integration tests (in the Check-forked test process).
 */
#ifndef VS_TESTS_HARNESS_H
#define VS_TESTS_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/readyfile.h"

struct vs_node {
    char dir[256];        /* private temp dir (removed by cleanup) */
    char data_dir[320];   /* DIR/data unless the test passed --data-dir */
    char ready_file[320]; /* DIR/ready */
    char log_file[320];   /* DIR/vstreamd.log */
    char stderr_file[320];
    pid_t pid;                  /* supervisor, 0 when not running */
    int status;                 /* wait status once it exited, else -1 */
    struct vs_ready_info ready; /* last ready file read */
};

/* Once per test process: PR_SET_CHILD_SUBREAPER. 0 or -errno. */
int vs_harness_init(void);

/* Creates the temp dir and fills the paths. 0 or -errno. */
int vs_node_init(struct vs_node *n);

/* Spawns vstreamd with `args` (NULL-terminated, may be NULL) and waits up
 * to timeout_ms for its ready file. 0 (n->ready filled), -ECHILD if it
 * exited first (n->status set), -ETIMEDOUT, or -errno. */
int vs_node_start(struct vs_node *n, const char *const *args,
                  uint32_t timeout_ms);
/* Spawns without waiting for readiness (for nodes expected to fail). */
int vs_node_spawn(struct vs_node *n, const char *const *args);

/* Waits up to timeout_ms for the supervisor to exit; stores and returns
 * its wait status, or -ETIMEDOUT. */
int vs_node_wait_exit(struct vs_node *n, uint32_t timeout_ms);
/* SIGTERM, then vs_node_wait_exit. Returns the wait status or
 * -ETIMEDOUT (then the caller may vs_node_kill). */
int vs_node_stop(struct vs_node *n, uint32_t timeout_ms);
/* SIGKILL to the supervisor and reap it. Returns the wait status. */
int vs_node_kill(struct vs_node *n);

/* Re-reads the ready file. 0 or -errno. */
int vs_node_read_ready(struct vs_node *n);
/* Waits until the ready file lists a pid other than `old` at index
 * `slot` (0 = shard 0, 1..K data shards). 0 or -ETIMEDOUT. */
int vs_node_wait_respawn(struct vs_node *n, size_t slot, pid_t old,
                         uint32_t timeout_ms);

/* "HOST:PORT" -> connected TCP socket fd, or -errno. */
int vs_connect(const char *addr);

/* Pids whose parent is `ppid` (scan of /proc). Returns the count (may
 * exceed max; at most max are stored). */
size_t vs_proc_children(pid_t ppid, pid_t *out, size_t max);
/* Parent pid of `pid` from /proc, or -1 if it does not exist. */
pid_t vs_proc_ppid(pid_t pid);
/* 1 while `pid` exists and is not a zombie. */
int vs_proc_alive(pid_t pid);
/* Reaps exited orphans re-parented to this process, then returns how
 * many processes (other than running node supervisors in `nodes`, n of
 * them, may be NULL) still have this process as parent, storing up to
 * max of their pids. */
size_t vs_harness_orphans(const struct vs_node *const *nodes, size_t n,
                          pid_t *out, size_t max);
/* Like vs_harness_orphans, but waits up to timeout_ms for children that
 * are still exiting (a SIGKILLed ASan process can take a while to tear
 * down its address space): returns the number still alive at the end. */
size_t vs_harness_orphans_wait(const struct vs_node *const *nodes, size_t n,
                               pid_t *out, size_t max, uint32_t timeout_ms);
/* Waits until none of pids[0..n) is alive. 0 or -ETIMEDOUT. */
int vs_wait_gone(const pid_t *pids, size_t n, uint32_t timeout_ms);

/* 1 if the file contains `needle`. */
int vs_file_contains(const char *path, const char *needle);
/* Waits until it does. 0 or -ETIMEDOUT. */
int vs_wait_file_contains(const char *path, const char *needle,
                          uint32_t timeout_ms);

/* Stops the node if it still runs (SIGKILL), and removes its dir. */
void vs_node_cleanup(struct vs_node *n);

#endif /* VS_TESTS_HARNESS_H */
