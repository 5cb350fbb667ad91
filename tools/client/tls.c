/*
 * tools/client/tls.c - the client library's TLS transport: OpenSSL over
 * the handle's non-blocking socket, every wait a poll() bounded by the
 * call's deadline. Context policy (TLS 1.2+, verification on): see
 * common/tls.h. Callers: conn.c; one handle per thread.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/clock.h"
#include "common/mem.h"
#include "common/tls.h"
#include "tools/client/vsc_int.h"

struct vsc_tls {
    SSL_CTX *ctx;
    SSL *ssl;
};

struct tls_nosig {
    sigset_t old;
    int was_pending;
};

static void
nosig_begin(struct tls_nosig *g)
{
    sigset_t pipe, pend;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
    sigpending(&pend);
    g->was_pending = sigismember(&pend, SIGPIPE) == 1;
}

static void
nosig_end(struct tls_nosig *g)
{
    if (!g->was_pending) {
        sigset_t pipe;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe, NULL, &zero) == -1 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

struct vsc_tls *
vsc_tls_create(const struct vsc_opts *o, char *err, size_t errlen)
{
    struct vs_tls_opts to = {
        .cert_file = o->tls_cert_file,
        .key_file = o->tls_key_file,
        .ca_file = o->tls_ca_file,
        .cert_what = "TLS client certificate",
        .key_what = "TLS client key",
        .ca_what = "TLS CA file",
    };
    SSL_CTX *ctx = vs_tls_client_ctx(&to, err, errlen);
    if (ctx == NULL)
        return NULL;
    struct vsc_tls *t = vs_xcalloc(1, sizeof(*t));
    t->ctx = ctx;
    return t;
}

void
vsc_tls_destroy(struct vsc_tls *t)
{
    if (t == NULL)
        return;
    vsc_tls_stop(t);
    SSL_CTX_free(t->ctx);
    free(t);
}

void
vsc_tls_stop(struct vsc_tls *t)
{
    if (t != NULL && t->ssl != NULL) {
        SSL_free(t->ssl);
        t->ssl = NULL;
    }
}

/* Waits for what SSL asked for. 0, -ETIMEDOUT or -errno. */
static int
tls_wait(int fd, int want, uint64_t deadline)
{
    short ev = want == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
    for (;;) {
        uint64_t now = vs_monotonic_ns();
        if (now >= deadline)
            return -ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = ev, .revents = 0};
        int ms = (int)((deadline - now + 999999u) / 1000000u);
        int rc = poll(&p, 1, ms);
        if (rc == -1 && errno == EINTR)
            continue;
        if (rc == -1)
            return -errno;
        return rc == 0 ? -ETIMEDOUT : 0;
    }
}

int
vsc_tls_start(struct vsc_tls *t, int fd, const char *name, uint64_t deadline,
              char *err, size_t errlen)
{
    vsc_tls_stop(t);
    ERR_clear_error();
    t->ssl = SSL_new(t->ctx);
    if (t->ssl == NULL || SSL_set_fd(t->ssl, fd) != 1) {
        snprintf(err, errlen, "TLS: cannot create a session");
        vsc_tls_stop(t);
        return -ENOMEM;
    }
    char why[384];
    if (vs_tls_client_set_name(t->ssl, name, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s", why);
        vsc_tls_stop(t);
        return -EINVAL;
    }
    for (;;) {
        struct tls_nosig g;
        nosig_begin(&g);
        int rc = SSL_connect(t->ssl);
        nosig_end(&g);
        if (rc == 1)
            return 0;
        int e = SSL_get_error(t->ssl, rc);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            int w = tls_wait(fd, e, deadline);
            if (w == 0)
                continue;
            snprintf(err, errlen, "TLS handshake with %s: %s", name,
                     w == -ETIMEDOUT ? "timed out" : strerror(-w));
            vsc_tls_stop(t);
            return w;
        }
        vs_tls_error_line(t->ssl, why, sizeof(why));
        snprintf(err, errlen, "TLS handshake with %s failed: %s", name,
                 why[0] ? why : "connection closed by the server");
        vsc_tls_stop(t);
        return -ECONNABORTED;
    }
}

int
vsc_tls_write_all(struct vsc_tls *t, int fd, const uint8_t *p, size_t len,
                  uint64_t deadline)
{
    if (t->ssl == NULL)
        return -ENOTCONN;
    while (len > 0) {
        size_t n = 0;
        struct tls_nosig g;
        nosig_begin(&g);
        int rc = SSL_write_ex(t->ssl, p, len, &n);
        nosig_end(&g);
        if (rc == 1) {
            p += n;
            len -= n;
            continue;
        }
        int e = SSL_get_error(t->ssl, rc);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            int w = tls_wait(fd, e, deadline);
            if (w != 0)
                return w;
            continue;
        }
        ERR_clear_error();
        return e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL
                   ? -ECONNRESET
                   : -EIO;
    }
    return 0;
}

int
vsc_tls_read_all(struct vsc_tls *t, int fd, uint8_t *p, size_t len,
                 uint64_t deadline)
{
    if (t->ssl == NULL)
        return -ENOTCONN;
    while (len > 0) {
        size_t n = 0;
        struct tls_nosig g;
        nosig_begin(&g);
        int rc = SSL_read_ex(t->ssl, p, len, &n);
        nosig_end(&g);
        if (rc == 1) {
            p += n;
            len -= n;
            continue;
        }
        int e = SSL_get_error(t->ssl, rc);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            int w = tls_wait(fd, e, deadline);
            if (w != 0)
                return w;
            continue;
        }
        ERR_clear_error();
        return e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL
                   ? -ECONNRESET
                   : -EIO;
    }
    return 0;
}
