/*
 * shard/serve/serve.h - the client listener of a data shard
 * (DESIGN §5): accepts connections on the inherited client socket and
 * speaks Iggy's VSR client framing on them; answers Ping, reads and
 * pre-consensus refusals itself and forwards Register, Logout and
 * metadata ops to shard 0 (shard/fwd.h), relaying shard 0's answer.
 *
 * Public API for the data shard's main (shard/serve/main.c): create on the
 * process's loop after the left-right reader slot and the IPC port
 * exist, route the port's frames and drains to serve_on_frame and
 * serve_on_drain, destroy after the loop stopped.
 *
 * Callers: data shard processes, on their loop thread only.
 */
#ifndef VS_SHARD_SERVE_SERVE_H
#define VS_SHARD_SERVE_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "ipc/lr.h"
#include "ipc/port.h"
#include "shard/shard.h"

struct event_base;
struct serve;

/* Takes ownership of listen_fd (closed by serve_destroy; -1 = no
 * listener). The lr handle must be a started reader. NULL + errno. */
struct serve *serve_create(struct event_base *base,
                           const struct vs_shard_ctx *ctx, struct vs_lr *lr,
                           struct vs_port *port, int listen_fd);
/* Closes every connection (no FWD_CLOSED is sent), stops the hasher,
 * closes the listener. Accepts NULL. */
void serve_destroy(struct serve *s);

/* Serves TLS clients on listen_fd too (taken over, closed by
 * serve_destroy), with a context built from the config's tls_* files.
 * 0, or -EINVAL with the one-line reason in err (a certificate or key
 * that the supervisor accepted no longer loads). */
int serve_tls_listen(struct serve *s, int listen_fd, char *err, size_t errlen);

/* SIGHUP: rebuilds the TLS context from the tls_* files (certificate
 * rotation). New connections use the new certificate, open ones keep
 * theirs; if the files do not load, the current context stays (logged). */
void serve_tls_reload(struct serve *s);

/* IPC: a frame from process slot `src` (FWD_REPLY from shard 0). */
void serve_on_frame(void *srv, uint32_t src, const void *frame, uint32_t len);
/* IPC: the queue towards `dst` emptied (resume reading clients). */
void serve_on_drain(void *srv, uint32_t dst);

/* Counters (tests, logs). */
struct serve_counters {
    uint64_t accepted;
    uint64_t refused; /* over max_connections */
    uint64_t closed;
    uint64_t requests;
    uint64_t forwarded;
    uint64_t evictions;
    uint64_t data_forwarded;       /* data requests sent to the owning shard */
    uint64_t data_remote;          /* data requests run for another shard */
    uint64_t data_forwarded_bytes; /* payload of those sent to another shard */
    uint64_t data_remote_reply_bytes; /* reply bodies (polls) sent back */
    uint64_t rx_direct; /* frames whose body was read into place (rxbody.h) */
    uint64_t poll_zero_copy; /* poll replies queued without a copy */
    uint64_t handed_out;     /* connections handed to another data shard */
    uint64_t handed_in;      /* connections taken over from one */
    uint64_t handoff_failed; /* handoff messages refused or not sent */
    uint32_t open;
};
void serve_get_counters(const struct serve *s, struct serve_counters *out);

#endif /* VS_SHARD_SERVE_SERVE_H */
