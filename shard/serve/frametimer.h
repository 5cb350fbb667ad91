/*
 * shard/serve/frametimer.h - the per-connection frame timer: a frame
 * whose first byte has arrived must be complete within frame_timeout_ms,
 * else the connection is closed (a client that trickles a frame, or
 * stops in the middle of one, would otherwise hold its buffers and its
 * slot forever, logged in or not).
 *
 * Invariants: the timer runs only while the connection is reading and a
 * partial frame is buffered; it is started when that frame's first byte
 * is seen (more bytes never extend it) and stopped when the frame
 * completes, a request goes in flight, or reading pauses for
 * back-pressure (time the server holds the client up never counts
 * against it; the wait starts over when reading resumes).
 * Callers: the data shard's loop thread (conn.c).
 */
#ifndef VS_SHARD_SERVE_FRAMETIMER_H
#define VS_SHARD_SERVE_FRAMETIMER_H

struct serve_conn;

/* Creates c's timer (not armed). 0 or -ENOMEM. */
int serve_frame_timer_init(struct serve_conn *c);
void serve_frame_timer_fini(struct serve_conn *c);
/* Re-evaluates the timer after c's input or state changed. */
void serve_frame_timer_update(struct serve_conn *c);

#endif /* VS_SHARD_SERVE_FRAMETIMER_H */
