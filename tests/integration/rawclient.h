/*
 * tests/integration/rawclient.h - a tiny raw-socket client of Iggy's VSR
 * client framing for integration tests of the data shards' listener:
 * builds request frames byte by byte (iggy-client-protocol §2), sends
 * them, and reads whole reply/eviction frames with a bounded wait.
 * It never interprets more than a test needs, so tests see exactly what
 * the server put on the wire.
 * Callers: integration tests.
 */
#ifndef VS_TESTS_RAWCLIENT_H
#define VS_TESTS_RAWCLIENT_H

#include <stddef.h>
#include <stdint.h>

#define RC_FRAME_MAX (1u << 20)

struct rc_frame {
    uint32_t size;
    uint8_t command;                   /* 8 Reply, 13 Eviction */
    uint8_t operation;                 /* @208 (Reply) */
    uint32_t status;                   /* @216 (Reply) */
    uint8_t reason;                    /* @255 (Eviction) */
    uint32_t proto_version, proto_min; /* @144/@148 (Eviction) */
    uint8_t *body; /* size - 256 bytes (heap, rc_frame_fini) */
    uint32_t body_len;
};

/* A request frame: header (client lo, request, operation, session,
 * command code @196) + body, into a heap buffer; *len gets its size. */
uint8_t *rc_build(uint8_t operation, uint32_t code, const void *body,
                  uint32_t body_len, uint64_t client, uint64_t request,
                  uint64_t session, size_t *len);
/* Writes all bytes (blocking socket). 0 or -errno. */
int rc_send_all(int fd, const void *p, size_t len);
/* Builds and sends. 0 or -errno. */
int rc_send(int fd, uint8_t operation, uint32_t code, const void *body,
            uint32_t body_len, uint64_t client, uint64_t request,
            uint64_t session);
/* Reads one frame within timeout_ms. 1 = frame, 0 = peer closed,
 * -ETIMEDOUT, -EPROTO (bad size), -errno. */
int rc_read(int fd, struct rc_frame *f, uint32_t timeout_ms);
void rc_frame_fini(struct rc_frame *f);
/* 1 if the peer closed (or reset) within timeout_ms, reading and
 * discarding anything before that; 0 if still open. */
int rc_wait_closed(int fd, uint32_t timeout_ms);

/* The Register body of §5.1 (password shape) with this protocol
 * version. Heap; *len gets its size. */
uint8_t *rc_login_body(uint32_t version, const char *user, const char *pw,
                       size_t *len);

#endif /* VS_TESTS_RAWCLIENT_H */
