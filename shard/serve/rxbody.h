/*
 * shard/serve/rxbody.h - the body of a large frame on a plain TCP
 * connection read from the socket straight into the buffer it is
 * dispatched (and stored) from.
 *
 * Role: the bufferevent reads at most SERVE_RX_HEAD_READ bytes per call
 * on a plain TCP connection; when the header of a frame of at least
 * SERVE_RX_DIRECT_MIN bytes is in its input and the frame is not
 * complete there, conn.c calls serve_rx_start: the frame gets a buffer
 * of its exact size, the bytes already buffered are moved into it (at
 * most SERVE_RX_HEAD_READ), the bufferevent stops reading and an event
 * on the socket recv()s the rest of the body into place. Once complete
 * the frame is dispatched from that buffer (serve_conn_dispatch_frame)
 * and freed; the bufferevent resumes with the next frame. The batch is
 * then copied only by the kernel (socket to buffer) and by the write to
 * the segment (or the IPC ring of a forward), never by a pull-up.
 * TLS connections keep the bufferevent path (decryption is a copy).
 *
 * Invariants: at most one direct frame per connection (c->rx != NULL),
 * only while nothing is in flight; while it runs the bufferevent does
 * not read (serve_conn_update_read) and the frame timer keeps running
 * (frametimer.h); a peer that closes or fails mid-body ends the
 * connection (logged, the partial frame is dropped, nothing dispatched).
 * Process: data shards, loop thread.
 */
#ifndef VS_SHARD_SERVE_RXBODY_H
#define VS_SHARD_SERVE_RXBODY_H

#include <stdint.h>

struct serve_conn;

/* Frames at least this large are read directly (plain TCP). */
#define SERVE_RX_DIRECT_MIN (64u * 1024u)
/* Bytes the bufferevent reads per call on a plain TCP connection. */
#define SERVE_RX_HEAD_READ (64u * 1024u)

/* Starts the direct read of c's frame of `size` bytes whose header is in
 * the bufferevent's input. 0, or -ENOMEM (the connection should close). */
int serve_rx_start(struct serve_conn *c, uint32_t size);
/* Frees c's direct-read state (connection end). */
void serve_rx_fini(struct serve_conn *c);

#endif /* VS_SHARD_SERVE_RXBODY_H */
