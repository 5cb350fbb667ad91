/*
 * ipc/handoff.c - the connection handoff message and its channel; see
 * handoff.h. Process: any (the codec); data shards and the supervisor
 * (the sockets).
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/buf.h"
#include "ipc/handoff.h"

#define HANDOFF_SNDBUF (4u * HANDOFF_MSG_MAX)

static void
st16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static uint16_t
ld16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

int
handoff_encode(const struct handoff_msg *m, uint8_t *out, size_t cap)
{
    if (m->pending_len > HANDOFF_PENDING_MAX ||
        cap < (size_t)HANDOFF_HEAD_SIZE + m->pending_len)
        return -EMSGSIZE;
    memset(out, 0, HANDOFF_HEAD_SIZE);
    vs_store_u32(out + 0, HANDOFF_MAGIC);
    st16(out + 4, HANDOFF_VERSION);
    st16(out + 6, m->flags);
    vs_store_u32(out + 8, m->from_slot);
    vs_store_u32(out + 12, m->pending_len);
    vs_store_u64(out + 16, m->from_incarnation);
    vs_store_u64(out + 24, m->conn_id);
    vs_store_u32(out + 32, (uint32_t)m->ct_idx);
    vs_store_u32(out + 36, m->user_id);
    vs_store_u64(out + 40, m->session);
    vs_store_u64(out + 48, m->client.lo);
    vs_store_u64(out + 56, m->client.hi);
    vs_store_u64(out + 64, m->cred_user_created_op);
    vs_store_u64(out + 72, m->cred_checked_op);
    vs_store_u64(out + 80, m->cred_expiry_us);
    vs_store_u64(out + 88, m->last_active_ms);
    memcpy(out + 96, m->cred_digest, HANDOFF_DIGEST_LEN);
    size_t pl = strnlen(m->peer, HANDOFF_PEER_MAX - 1);
    memcpy(out + 128, m->peer, pl); /* the rest stays zero: terminated */
    vs_store_u64(out + 192, m->frames);
    vs_store_u64(out + 200, m->part_request);
    vs_store_u64(out + 208, m->part_subseq);
    vs_store_u64(out + 216, m->part_base.lo);
    vs_store_u64(out + 224, m->part_base.hi);
    vs_store_u32(out + 232, m->part_status);
    vs_store_u32(out + 236, m->part_seen);
    if (m->pending_len > 0)
        memcpy(out + HANDOFF_HEAD_SIZE, m->pending, m->pending_len);
    return (int)(HANDOFF_HEAD_SIZE + m->pending_len);
}

static int
all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

int
handoff_decode(const uint8_t *p, size_t len, struct handoff_msg *m)
{
    memset(m, 0, sizeof(*m));
    if (len < HANDOFF_HEAD_SIZE || vs_load_u32(p) != HANDOFF_MAGIC)
        return -EBADMSG;
    if (ld16(p + 4) != HANDOFF_VERSION)
        return -EPROTO;
    m->flags = ld16(p + 6);
    if (m->flags & ~(uint16_t)(HANDOFF_F_BOUND | HANDOFF_F_PAT))
        return -EBADMSG;
    m->from_slot = vs_load_u32(p + 8);
    m->pending_len = vs_load_u32(p + 12);
    if (m->pending_len > HANDOFF_PENDING_MAX ||
        len != (size_t)HANDOFF_HEAD_SIZE + m->pending_len)
        return -EBADMSG;
    m->from_incarnation = vs_load_u64(p + 16);
    m->conn_id = vs_load_u64(p + 24);
    m->ct_idx = (int32_t)vs_load_u32(p + 32);
    m->user_id = vs_load_u32(p + 36);
    m->session = vs_load_u64(p + 40);
    m->client.lo = vs_load_u64(p + 48);
    m->client.hi = vs_load_u64(p + 56);
    m->cred_user_created_op = vs_load_u64(p + 64);
    m->cred_checked_op = vs_load_u64(p + 72);
    m->cred_expiry_us = vs_load_u64(p + 80);
    m->last_active_ms = vs_load_u64(p + 88);
    memcpy(m->cred_digest, p + 96, HANDOFF_DIGEST_LEN);
    if (memchr(p + 128, 0, HANDOFF_PEER_MAX) == NULL)
        return -EBADMSG;
    memcpy(m->peer, p + 128, HANDOFF_PEER_MAX);
    m->frames = vs_load_u64(p + 192);
    m->part_request = vs_load_u64(p + 200);
    m->part_subseq = vs_load_u64(p + 208);
    m->part_base.lo = vs_load_u64(p + 216);
    m->part_base.hi = vs_load_u64(p + 224);
    m->part_status = vs_load_u32(p + 232);
    m->part_seen = vs_load_u32(p + 236);
    if (!all_zero(p + 240, HANDOFF_HEAD_SIZE - 240))
        return -EBADMSG;
    if (m->part_seen > 1 || (m->part_seen == 0 && !all_zero(p + 200, 36)))
        return -EBADMSG;
    if (m->ct_idx < -1)
        return -EBADMSG;
    if (!(m->flags & HANDOFF_F_BOUND)) {
        /* no session: nothing of one may be set */
        if ((m->flags & HANDOFF_F_PAT) || m->session != 0 ||
            m->user_id != UINT32_MAX || m->client.lo != 0 ||
            m->client.hi != 0 || m->cred_user_created_op != 0 ||
            m->cred_expiry_us != 0 || !all_zero(p + 96, HANDOFF_DIGEST_LEN))
            return -EBADMSG;
    } else if (m->session == 0 || (m->client.lo == 0 && m->client.hi == 0)) {
        return -EBADMSG; /* a bound session has both */
    }
    m->pending = m->pending_len > 0 ? p + HANDOFF_HEAD_SIZE : NULL;
    return 0;
}

int
handoff_pair_create(int *rx, int *tx)
{
    int sv[2];
    *rx = *tx = -1;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv) == -1)
        return -errno;
    int sz = (int)HANDOFF_SNDBUF;
    /* best effort: the defaults already hold one whole message */
    (void)setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    (void)setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    *rx = sv[0];
    *tx = sv[1];
    return 0;
}

int
handoff_send(int tx, int conn_fd, const void *msg, size_t len)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof(ctl));
    struct iovec iov = {.iov_base = (void *)(uintptr_t)msg, .iov_len = len};
    struct msghdr mh = {
        .msg_iov = &iov,
        .msg_iovlen = 1,
        .msg_control = ctl.buf,
        .msg_controllen = sizeof(ctl.buf),
    };
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &conn_fd, sizeof(int));
    for (;;) {
        ssize_t n = sendmsg(tx, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n == (ssize_t)len)
            return 0;
        if (n >= 0)
            return -EMSGSIZE; /* seqpacket: never partial */
        if (errno == EINTR)
            continue;
        if (errno == EWOULDBLOCK)
            return -EAGAIN;
        return -errno;
    }
}

int
handoff_recv(int rx, uint8_t *buf, size_t cap, size_t *len, int *conn_fd)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(4 * sizeof(int))];
    } ctl;
    *conn_fd = -1;
    *len = 0;
    struct iovec iov = {.iov_base = buf, .iov_len = cap};
    struct msghdr mh = {
        .msg_iov = &iov,
        .msg_iovlen = 1,
        .msg_control = ctl.buf,
        .msg_controllen = sizeof(ctl.buf),
    };
    ssize_t n;
    do
        n = recvmsg(rx, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    while (n == -1 && errno == EINTR);
    if (n == -1)
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    int fds = 0, fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL;
         c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (fds++ == 0)
                fd = f;
            else
                close(f);
        }
    }
    int bad = fds != 1 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    if (bad) {
        if (fd >= 0)
            close(fd);
        return -EBADMSG;
    }
    *conn_fd = fd;
    *len = (size_t)n;
    return 0;
}
