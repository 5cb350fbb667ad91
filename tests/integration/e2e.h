/*
 * tests/integration/e2e.h - helpers of the end-to-end tests (check_e2e_*):
 * a node with the development root user, library sessions, the `vstream`
 * CLI as a child process, raw frames on a socket, and killing a whole
 * node (supervisor and shards) by pid.
 *
 * Every wait is bounded; processes are stopped by pid only.
 * Callers: the Check-forked test process of the e2e tests.
 */
#ifndef VS_TESTS_E2E_H
#define VS_TESTS_E2E_H

#include <stddef.h>
#include <stdint.h>

#include "tests/integration/harness.h"
#include "tools/client/vsc.h"

#define E2E_START_MS 30000u

/* Starts `n` (vs_node_init done by the caller) with
 * --with-default-root-credentials, a data shard count of `shards` (0 =
 * the default) and the extra args (NULL-terminated, may be NULL).
 * Asserts success. */
void e2e_start(struct vs_node *n, unsigned shards, const char *const *extra);

/* A connected library handle to n's client address, logged in as
 * user/password (asserts success). */
struct vsc *e2e_login(const struct vs_node *n, const char *user,
                      const char *password);
/* Connected, not logged in. */
struct vsc *e2e_connect(const struct vs_node *n);

/* Runs $VSTREAM_CLI with VSTREAM_ADDR = n's address and the given args
 * (NULL-terminated), feeding `input` (may be NULL) on stdin. Captures
 * stdout into out[cap] and stderr into err[ecap] (NUL-terminated).
 * Returns the exit status (0..255) or -1 if it did not exit in time.
 * `env_password`: VSTREAM_PASSWORD for the child (NULL = unset). */
int e2e_cli(const struct vs_node *n, const char *env_password,
            const char *input, char *out, size_t cap, char *err, size_t ecap,
            const char *const *args);

/* SIGKILLs the supervisor and every shard of n at once, reaps them and
 * waits until all are gone (asserts). */
void e2e_kill_node(struct vs_node *n);

/* Raw socket helpers. Sends all bytes (0 or -errno). */
int e2e_send(int fd, const void *p, size_t len);
/* Reads one frame (header + body, body at most cap - 256) within
 * timeout_ms: returns its size, 0 on EOF, -ETIMEDOUT, or -errno. */
int e2e_recv_frame(int fd, uint8_t *buf, size_t cap, uint32_t timeout_ms);
/* 1 if the peer closed the connection within timeout_ms (EOF or reset),
 * 0 if it is still open. */
int e2e_closed(int fd, uint32_t timeout_ms);

/* The names of all streams, newline-joined into out (sorted by id).
 * Returns the count. */
size_t e2e_stream_names(struct vsc *c, char *out, size_t cap);

#endif /* VS_TESTS_E2E_H */
