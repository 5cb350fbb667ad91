/*
 * ipc/handoff.h - passing a client connection (its socket, with
 * SCM_RIGHTS, and its session state) from one data shard to another.
 *
 * Channels: one AF_UNIX SOCK_SEQPACKET socketpair per data shard slot,
 * created by the supervisor with the segment (seg_create) and inherited
 * by every child: data shard s reads end `rx[s]`; any other data shard
 * writes to `tx[s]`. A seqpacket message is delivered whole or not at
 * all, so several writers share one end. The supervisor keeps both ends
 * open, so a message sent to a shard that dies before reading it waits
 * in the socket for the shard's next incarnation (the connection is not
 * lost with it).
 *
 * Message (every field little-endian, HANDOFF_HEAD_SIZE bytes, then
 * `pending_len` bytes the sender had already read from the socket and
 * not yet parsed):
 *   0  magic "VSHO"            4  version u16 (2)   6  flags u16
 *   8  from_slot u32           12 pending_len u32
 *   16 from_incarnation u64    24 conn_id u64 (the sender's id)
 *   32 ct_idx i32 (-1: none)   36 user_id u32
 *   40 session u64             48 client lo u64     56 client hi u64
 *   64 cred_user_created_op u64                     72 cred_checked_op u64
 *   80 cred_expiry_us u64      88 last_active_ms u64
 *   96 cred_digest [32]        128 peer [64] (NUL-terminated text)
 *   192 frames u64
 *   200 part_request u64       208 part_subseq u64
 *   216 part_base lo u64       224 part_base hi u64
 *   232 part_status u32        236 part_seen u32 (0 or 1)
 *   240 reserved [8] (zero)
 * (part_*: the connection's partition-op key, shard/serve/partkey.h;
 * all zero while part_seen is 0.)
 * Flags: HANDOFF_F_BOUND (a session is bound: session, user, client and
 * the credentials are meaningful; without it they must be zero),
 * HANDOFF_F_PAT (the session was opened with a personal access token).
 * A decoder refuses (-EBADMSG) a short or long message, a wrong magic,
 * an unknown version (-EPROTO), unknown flags, a pending length that
 * does not match the bytes after the head or exceeds HANDOFF_PENDING_MAX,
 * an unterminated peer, session fields set without the bound flag, and
 * non-zero reserved bytes, part_seen other than 0/1 and part fields
 * set while part_seen is 0. Version 1 (208 bytes, without the part
 * fields) is refused: a handoff only crosses between the data shards of
 * one node, which run one build.
 * Invariants: pure codec plus the two system calls; no allocation.
 * Callers: data shards (shard/serve/handoff.c), the supervisor
 * (handoff_pair_create through seg_create), tests.
 */
#ifndef VS_IPC_HANDOFF_H
#define VS_IPC_HANDOFF_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

#define HANDOFF_MAGIC       0x4f485356u /* "VSHO" as bytes */
#define HANDOFF_VERSION     2u
#define HANDOFF_HEAD_SIZE   248u
#define HANDOFF_PENDING_MAX (128u * 1024u)
#define HANDOFF_MSG_MAX     (HANDOFF_HEAD_SIZE + HANDOFF_PENDING_MAX)
#define HANDOFF_DIGEST_LEN  32u
#define HANDOFF_PEER_MAX    64u

enum handoff_flags {
    HANDOFF_F_BOUND = 1u << 0,
    HANDOFF_F_PAT = 1u << 1,
};

struct handoff_msg {
    uint16_t flags;
    uint32_t from_slot;
    uint64_t from_incarnation;
    uint64_t conn_id;
    int32_t ct_idx;
    uint32_t user_id;
    uint64_t session;
    struct vs_u128 client;
    uint64_t cred_user_created_op;
    uint64_t cred_checked_op;
    uint64_t cred_expiry_us;
    uint64_t last_active_ms;
    uint8_t cred_digest[HANDOFF_DIGEST_LEN];
    char peer[HANDOFF_PEER_MAX];
    uint64_t frames;
    uint64_t part_request, part_subseq;
    struct vs_u128 part_base;
    uint32_t part_status, part_seen;
    const uint8_t *pending; /* decode: points into the message */
    uint32_t pending_len;
};

/* Encodes m and its pending bytes into out (cap bytes). The length, or
 * -EMSGSIZE if it does not fit or pending_len > HANDOFF_PENDING_MAX. */
int handoff_encode(const struct handoff_msg *m, uint8_t *out, size_t cap);
/* Decodes a whole message; m->pending points into p. 0, -EBADMSG or
 * -EPROTO (see above). */
int handoff_decode(const uint8_t *p, size_t len, struct handoff_msg *m);

/* A channel: rx (read by the owning shard) and tx (written by the
 * others), non-blocking, with room for a few whole messages. 0 or
 * -errno. */
int handoff_pair_create(int *rx, int *tx);
/* Sends msg with conn_fd attached (MSG_DONTWAIT). 0, -EAGAIN (the
 * receiver's queue is full: keep the connection) or -errno. The caller
 * still holds conn_fd afterwards (the message holds its own
 * reference). */
int handoff_send(int tx, int conn_fd, const void *msg, size_t len);
/* Receives one message into buf (cap >= HANDOFF_MSG_MAX) and its
 * socket. 0 with *len and *conn_fd set; -EAGAIN when nothing waits;
 * -EBADMSG for a truncated message or one without exactly one socket
 * (any descriptors it carried are closed, *conn_fd = -1); -errno. */
int handoff_recv(int rx, uint8_t *buf, size_t cap, size_t *len, int *conn_fd);

#endif /* VS_IPC_HANDOFF_H */
