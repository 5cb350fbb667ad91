/*
 * shard/loop.h - the event loop every shard process runs.
 *
 * Role: one libevent base per shard process, created after fork (never
 * the supervisor's). Signals go through libevent: SIGTERM/SIGINT break
 * the loop (the main then cleans up and exits 0), SIGHUP reopens the log
 * and takes the log level the supervisor stored in the segment header.
 * The process's IPC port (ipc/port.h) hangs on the same base. An
 * optional inherited listener is accepted from; until the client and
 * replica protocols exist every accepted connection is closed at once.
 * shard_loop_ready() marks the slot ready and rings the supervisor.
 * Callers: shard 0 and the data shards, in their own process.
 */
#ifndef VS_SHARD_LOOP_H
#define VS_SHARD_LOOP_H

#include <stdint.h>

#include "ipc/port.h"
#include "shard/shard.h"

struct event_base;
struct event;

struct shard_loop {
    const struct vs_shard_ctx *ctx;
    struct event_base *base;
    struct event *sig[3];
    struct event *listen_ev;
    int listen_fd;
    struct vs_port *port;
    port_frame_fn *frame_fn; /* IPC frames go here once set */
    void *frame_ctx;
    port_drain_fn *drain_fn; /* port drains go here once set */
    void *drain_ctx;
    void (*hup_fn)(void *); /* after the log reopen on SIGHUP, if set */
    void *hup_ctx;
    uint64_t accepted;  /* connections accepted (and closed) */
    uint64_t frames_in; /* IPC frames received */
};

/* Creates the base, the signal events, the port and (listen_fd >= 0)
 * the accept event. 0 or -errno. */
int shard_loop_init(struct shard_loop *l, const struct vs_shard_ctx *ctx,
                    int listen_fd);
/* Routes every IPC frame received from now on to fn(ctx, ...). */
void shard_loop_set_frame_handler(struct shard_loop *l, port_frame_fn *fn,
                                  void *ctx);
/* Routes every "queue towards dst emptied" of the port to fn(ctx, dst). */
void shard_loop_set_drain_handler(struct shard_loop *l, port_drain_fn *fn,
                                  void *ctx);
/* Calls fn(ctx) on every SIGHUP, after the log was reopened. */
void shard_loop_set_hup_handler(struct shard_loop *l, void (*fn)(void *),
                                void *ctx);
/* Stores ready = 1 in the slot and rings the supervisor's doorbell. */
void shard_loop_ready(struct shard_loop *l);
/* Runs until SIGTERM/SIGINT. 0 or -1 if the loop failed. */
int shard_loop_run(struct shard_loop *l);
/* Frees everything init created, closes the listener. */
void shard_loop_fini(struct shard_loop *l);

#endif /* VS_SHARD_LOOP_H */
