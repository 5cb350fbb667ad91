/*
 * shard/serve/transport.c - how a data shard's client connection is
 * carried: plain TCP on the inherited client listener, or TLS (OpenSSL
 * through libevent's bufferevent_openssl) on the inherited TLS
 * listener, with the same Iggy VSR framing inside.
 *
 * TLS policy: common/tls.h (TLS 1.2+, AEAD suites; client certificates
 * required when tls_ca_file is set). Failures cost one connection only:
 * a handshake that fails (plaintext on the TLS port, a client that does
 * not trust us, no client certificate) or a record that does not decrypt
 * after the handshake is a bufferevent error, and conn.c frees that
 * connection; the listener and every other connection go on. A TLS
 * client on the plain port sends a ClientHello, which is not a request
 * frame: conn.c's framing closes it. TLS accepts are balanced over the
 * data shards like plain ones (balance.h); a TLS connection is never
 * handed to another shard (its OpenSSL state lives in this process:
 * handoff.h).
 * Invariants: the TLS context is built at start from the files the
 * supervisor validated, and again on SIGHUP (certificate rotation: the
 * new context replaces the old only if it loads; sessions already open
 * hold their own reference to the context they started on); each
 * connection's SSL belongs to its bufferevent (freed with it:
 * BEV_OPT_CLOSE_ON_FREE).
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/tls.h"
#include "shard/serve/balance.h"
#include "shard/serve/server.h"

struct bufferevent *
serve_transport_bev(struct serve *s, int fd, int tls)
{
    if (!tls) {
        struct bufferevent *bev =
            bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (bev == NULL)
            close(fd);
        return bev;
    }
    SSL *ssl = SSL_new(s->tls_ctx);
    if (ssl == NULL) {
        close(fd);
        return NULL;
    }
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        s->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        SSL_free(ssl);
        close(fd);
        return NULL;
    }
    /* a client that closes without close_notify is an EOF, not an error */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

void
serve_transport_event(struct serve_conn *c, short what)
{
    if (!c->tls)
        return;
    if (what & BEV_EVENT_CONNECTED) {
        c->tls_up = 1;
        return;
    }
    if (!(what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)))
        return;
    char line[256] = "";
    unsigned long e;
    size_t n = 0;
    while ((e = bufferevent_get_openssl_error(c->bev)) != 0 &&
           n < sizeof(line)) {
        const char *r = ERR_reason_error_string(e);
        int m = snprintf(line + n, sizeof(line) - n, "%s%s", n ? "; " : "",
                         r ? r : "unknown TLS error");
        n += m > 0 ? (size_t)m : 0;
    }
    if (!c->tls_up) {
        vs_metrics_add(VS_M_TLS_HANDSHAKE_FAILURES, 1);
        vs_log_info("client %s: TLS handshake failed: %s", c->peer,
                    line[0] ? line : "connection closed");
    } else if (what & BEV_EVENT_ERROR) {
        vs_log_info("client %s: TLS error: %s", c->peer,
                    line[0] ? line : "connection reset");
    }
}

static void
serve_tls_on_accept(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    serve_bal_on_accept(arg, fd, 1); /* balance.h: the same even spread */
}

static SSL_CTX *
serve_tls_ctx(const struct vs_config *cfg, char *err, size_t errlen)
{
    struct vs_tls_opts o = {
        .cert_file = cfg->tls_cert_file,
        .key_file = cfg->tls_key_file,
        .ca_file = cfg->tls_ca_file,
        .cert_what = "tls_cert_file",
        .key_what = "tls_key_file",
        .ca_what = "tls_ca_file",
    };
    return vs_tls_server_ctx(&o, err, errlen);
}

void
serve_tls_reload(struct serve *s)
{
    if (s->tls_ctx == NULL)
        return;
    char err[512];
    SSL_CTX *ctx = serve_tls_ctx(s->cfg, err, sizeof(err));
    if (ctx == NULL) {
        vs_log_warn("SIGHUP: keeping the current TLS certificate: %s", err);
        return;
    }
    /* SSL objects of open connections hold a reference to the old one */
    SSL_CTX_free(s->tls_ctx);
    s->tls_ctx = ctx;
    vs_log_info("SIGHUP: TLS certificate reloaded from %s",
                s->cfg->tls_cert_file);
}

int
serve_tls_listen(struct serve *s, int listen_fd, char *err, size_t errlen)
{
    s->tls_fd = listen_fd;
    s->tls_ctx = serve_tls_ctx(s->cfg, err, errlen);
    if (s->tls_ctx == NULL)
        return -EINVAL;
    s->tls_ev = event_new(s->base, listen_fd, EV_READ | EV_PERSIST,
                          serve_tls_on_accept, s);
    if (s->tls_ev == NULL || event_add(s->tls_ev, NULL) != 0) {
        snprintf(err, errlen, "TLS listener: out of memory");
        return -ENOMEM;
    }
    return 0;
}
