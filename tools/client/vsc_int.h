/*
 * tools/client/vsc_int.h - internals shared by the client library's files.
 *
 * Role: record decoders that read one record at a reader position (used by
 * list commands) and the private state of a connection handle.
 * Callers: the .c files of tools/client only.
 */
#ifndef VS_TOOLS_CLIENT_VSC_INT_H
#define VS_TOOLS_CLIENT_VSC_INT_H

#include "common/buf.h"
#include "tools/client/vsc.h"

int vsc_decode_stream_at(struct vs_rbuf *r, struct vsc_stream *s);
int vsc_decode_topic_at(struct vs_rbuf *r, struct vsc_topic *t);
int vsc_decode_user_at(struct vs_rbuf *r, struct vsc_user *u, int details);
int vsc_decode_group_at(struct vs_rbuf *r, struct vsc_group *g, int details);

/* Sets the handle's last-error text from a result of a call. Returns rc. */
int vsc_fail(struct vsc *c, int rc, const char *what);

/* The handle's scratch buffer for a command body (reset). */
struct vs_wbuf *vsc_body(struct vsc *c);

/* Starts the request frame of a call in the handle's frame buffer: room
 * for the header, then the caller appends the body (or its head). */
struct vs_wbuf *vsc_frame_begin(struct vsc *c);
/* vsc_call of the frame begun by vsc_frame_begin, whose body is what was
 * appended and then `tail` (tail_len bytes, borrowed for the call: written
 * to the socket from there, never copied, and sent again from there by a
 * resend; a replicated op, whose request checksum covers the whole body,
 * copies it into the frame). -E2BIG for a body over a frame. */
int vsc_call_frame(struct vsc *c, uint32_t code, const uint8_t *tail,
                   size_t tail_len, struct vsc_reply *r);

/* Decodes records laid back to back up to the end of a reply payload
 * (the list replies without a count prefix) into a heap array of
 * elem_size-byte elements: `decode` reads one record into `elem` and
 * returns 0, or non-zero on a malformed record. 0 with *out (free()) and
 * *n set, or -EPROTO with *out NULL and *n 0. The records must own no
 * heap memory: a refused list frees only the array. */
typedef int vsc_record_fn(struct vs_rbuf *r, void *elem);
int vsc_decode_records(const uint8_t *p, size_t len, size_t elem_size,
                       vsc_record_fn *decode, void **out, size_t *n);

/* vsc_poll_decode of the body at buf + off (len bytes) in place: the
 * heap buffer buf becomes out->buf whatever the result (freed by
 * vsc_polled_fini, or here on a refusal), so a reply is decoded without
 * a copy. verify 0 checks the structure only (no checksum computed:
 * out->checksums_verified and out->batch_checksums_ok are 0). */
int vsc_poll_decode_owned(uint8_t *buf, size_t off, size_t len, int verify,
                          struct vsc_polled *out);

/* Hands the last reply frame's buffer to the caller (free()): the handle
 * reads its next reply into a new one; vsc_last_reply is empty until
 * then. The frame is *len bytes. */
uint8_t *vsc_reply_take(struct vsc *c, size_t *len);

/* ---- TLS transport (tls.c) ---- */
struct vsc_tls;
/* A client TLS context from the handle's options (the CA file is loaded
 * now). NULL with the one-line reason in err. */
struct vsc_tls *vsc_tls_create(const struct vsc_opts *o, char *err,
                               size_t errlen);
void vsc_tls_destroy(struct vsc_tls *t);
/* TLS handshake on the connected non-blocking fd, verifying the server
 * as `name`, bounded by deadline (monotonic ns). 0, or -ECONNABORTED /
 * -ETIMEDOUT with the reason in err. */
int vsc_tls_start(struct vsc_tls *t, int fd, const char *name,
                  uint64_t deadline, char *err, size_t errlen);
/* Ends the session of the current connection (no close_notify wait). */
void vsc_tls_stop(struct vsc_tls *t);
/* Writes / reads exactly len bytes before the deadline. 0, -ETIMEDOUT,
 * -ECONNRESET (closed) or -EIO (a TLS error). */
int vsc_tls_write_all(struct vsc_tls *t, int fd, const uint8_t *p, size_t len,
                      uint64_t deadline);
int vsc_tls_read_all(struct vsc_tls *t, int fd, uint8_t *p, size_t len,
                     uint64_t deadline);

#endif /* VS_TOOLS_CLIENT_VSC_INT_H */
