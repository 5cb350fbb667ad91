/*
 * ipc/port.h - a shard process's IPC endpoint on its libevent loop.
 *
 * Role: binds the rings of one process slot to its event_base: the
 * process's eventfd doorbell is an EV_READ|EV_PERSIST event; when it
 * fires, every incoming ring is drained (each frame handed to on_frame)
 * and every outgoing queue is retried. Sends are batched: port_send
 * appends to the ring and schedules one flush (publish + doorbell) for
 * the end of the current loop iteration, so many frames cost one
 * doorbell write.
 *
 * Back-pressure: when a ring is full, port_send keeps the frame in a
 * per-destination queue (never dropped, never blocking the loop) and
 * returns 1 once the queue holds more than queue_high bytes: the caller
 * must stop reading from the clients that feed this destination until
 * on_drain(dst) says the queue emptied. The consumer wakes us through
 * the ring's producer_waiting handshake when it frees space.
 *
 * A request forwarded to another shard is answered on the reverse ring
 * (dst -> src): frames carry whatever correlation the layer above puts
 * in them.
 *
 * Callers: one port per shard process, created after fork on that
 * process's own event_base; all calls from that loop's thread.
 */
#ifndef VS_IPC_PORT_H
#define VS_IPC_PORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ipc/segment.h"

struct event_base;
struct vs_port;

/* A frame from process slot `src`; valid only during the call. */
typedef void port_frame_fn(void *ctx, uint32_t src, const void *frame,
                           uint32_t len);
/* The queue towards `dst` emptied: resume feeding it. */
typedef void port_drain_fn(void *ctx, uint32_t dst);

struct vs_port_ops {
    port_frame_fn *on_frame;
    port_drain_fn *on_drain; /* may be NULL */
    void *ctx;
    size_t queue_high; /* bytes queued per destination before "stop" */
};

/* Creates the port of slot `self`: attaches its rings, resets the
 * incoming ones (frames for a previous incarnation are dropped) and the
 * producer side of the outgoing ones, and adds the doorbell event.
 * NULL + errno on failure. */
struct vs_port *port_create(struct event_base *base, const struct vs_seg *seg,
                            uint32_t self, const struct vs_port_ops *ops);
/* Removes the event, frees queues. Accepts NULL. */
void port_destroy(struct vs_port *p);

/* Sends one frame to slot `dst`. 0 = sent or queued below the high
 * water mark, 1 = queued above it (stop feeding dst), -EMSGSIZE (too big
 * for the ring), -EINVAL (bad dst). Never blocks, never drops. */
int port_send(struct vs_port *p, uint32_t dst, const void *frame, uint32_t len);
/* The same with the frame gathered from n pieces, copied once, straight
 * into the ring when it has room (no staging copy). */
int port_sendv(struct vs_port *p, uint32_t dst, const struct iovec *iov, int n);
/* Publishes pending frames and rings doorbells now (port_send schedules
 * this automatically). */
void port_flush(struct vs_port *p);
/* Bytes queued towards dst (not yet in the ring). */
size_t port_queued(const struct vs_port *p, uint32_t dst);
/* Drains the incoming rings once without waiting for the doorbell;
 * returns the number of frames delivered. */
size_t port_poll(struct vs_port *p);

#endif /* VS_IPC_PORT_H */
