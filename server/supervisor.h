/*
 * server/supervisor.h - vstreamd's supervisor: owns the node's life.
 *
 * Role (DESIGN §1, c-style §2): before forking it takes the data-dir
 * lock, resolves the recorded shard count, creates the shared-memory
 * segment and binds the listening sockets; then it forks shard 0 and K
 * data shards into fixed slots and only supervises: reaps children
 * (waitpid WNOHANG loop, once at start too), logs each exit with signal
 * and core flag, clears a reaped child's slot (left-right reader slot
 * included) and respawns it with exponential back-off; a child exiting
 * 2 stops the node with that child's reason and code 2; SIGKILLs a data
 * shard whose left-right slot missed lr_missed_deadlines_kill writer
 * deadlines; writes the ready file once every shard serves (and again
 * with the new pids after a respawn); SIGTERM/SIGINT stop the children
 * (SIGKILL after shutdown_timeout_ms, a second signal forces it);
 * SIGHUP reopens the log, reloads the log level and forwards SIGHUP.
 * It never reads or writes metadata or messages.
 *
 * Callers: vstreamd's main only (single-threaded, foreground process).
 */
#ifndef VS_SERVER_SUPERVISOR_H
#define VS_SERVER_SUPERVISOR_H

#include "common/config.h"

/* Runs the node until it stops; returns the exit code (VS_EXIT_*).
 * argv/envp are kept to re-read the configuration on SIGHUP. */
int sup_run(const struct vs_config *cfg, int argc, char **argv, char **envp);

#endif /* VS_SERVER_SUPERVISOR_H */
