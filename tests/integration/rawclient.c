/*
 * tests/integration/rawclient.c - see rawclient.h. All waits bounded.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/rawclient.h"

static void
st32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static void
st64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static uint32_t
ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

uint8_t *
rc_build(uint8_t operation, uint32_t code, const void *body, uint32_t body_len,
         uint64_t client, uint64_t request, uint64_t session, size_t *len)
{
    uint8_t *f = calloc(1, 256 + (size_t)body_len);
    if (f == NULL)
        abort();
    st32(f + 48, 256 + body_len);
    f[60] = 5;
    st64(f + 128, client);
    st64(f + 168, request);
    f[176] = operation;
    st64(f + 184, session);
    st32(f + 196, code);
    if (body_len)
        memcpy(f + 256, body, body_len);
    *len = 256 + (size_t)body_len;
    return f;
}

int
rc_send_all(int fd, const void *p, size_t len)
{
    const uint8_t *b = p;
    while (len > 0) {
        ssize_t n = write(fd, b, len);
        if (n == -1) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        b += n;
        len -= (size_t)n;
    }
    return 0;
}

int
rc_send(int fd, uint8_t operation, uint32_t code, const void *body,
        uint32_t body_len, uint64_t client, uint64_t request, uint64_t session)
{
    size_t n;
    uint8_t *f =
        rc_build(operation, code, body, body_len, client, request, session, &n);
    int rc = rc_send_all(fd, f, n);
    free(f);
    return rc;
}

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads exactly n bytes before deadline. 1, 0 (closed), -errno. */
static int
read_exact(int fd, uint8_t *p, size_t n, int64_t deadline)
{
    size_t got = 0;
    while (got < n) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return -ETIMEDOUT;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)left);
        if (pr == -1) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (pr == 0)
            return -ETIMEDOUT;
        ssize_t r = read(fd, p + got, n - got);
        if (r == -1) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            if (errno == ECONNRESET)
                return 0;
            return -errno;
        }
        if (r == 0)
            return 0;
        got += (size_t)r;
    }
    return 1;
}

int
rc_read(int fd, struct rc_frame *f, uint32_t timeout_ms)
{
    memset(f, 0, sizeof(*f));
    int64_t deadline = now_ms() + timeout_ms;
    uint8_t h[256];
    int rc = read_exact(fd, h, sizeof(h), deadline);
    if (rc != 1)
        return rc;
    f->size = ld32(h + 48);
    if (f->size < 256 || f->size > RC_FRAME_MAX)
        return -EPROTO;
    f->command = h[60];
    f->operation = h[208];
    f->status = ld32(h + 216);
    f->reason = h[255];
    f->proto_version = ld32(h + 144);
    f->proto_min = ld32(h + 148);
    f->body_len = f->size - 256;
    f->body = malloc(f->body_len + 1);
    if (f->body == NULL)
        abort();
    if (f->body_len > 0) {
        rc = read_exact(fd, f->body, f->body_len, deadline);
        if (rc != 1) {
            rc_frame_fini(f);
            return rc;
        }
    }
    return 1;
}

void
rc_frame_fini(struct rc_frame *f)
{
    free(f->body);
    f->body = NULL;
}

int
rc_wait_closed(int fd, uint32_t timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    uint8_t buf[4096];
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)left);
        if (pr == -1 && errno == EINTR)
            continue;
        if (pr <= 0)
            return 0;
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r == 0 || (r == -1 && errno == ECONNRESET))
            return 1;
        if (r == -1 && errno != EINTR && errno != EAGAIN)
            return 1;
    }
}

uint8_t *
rc_login_body(uint32_t version, const char *user, const char *pw, size_t *len)
{
    size_t ul = strlen(user), pl = strlen(pw);
    uint8_t *b = calloc(1, 64 + ul + pl);
    if (b == NULL)
        abort();
    size_t n = 0;
    st32(b, version);
    n = 4;
    b[n++] = 8;
    memcpy(b + n, "node-sdk", 8);
    n += 8;
    b[n++] = 13;
    memcpy(b + n, "0.10.0-edge.4", 13);
    n += 13;
    b[n++] = (uint8_t)ul;
    memcpy(b + n, user, ul);
    n += ul;
    b[n++] = (uint8_t)pl;
    memcpy(b + n, pw, pl);
    n += pl;
    st32(b + n, 0);
    n += 4;
    *len = n;
    return b;
}
