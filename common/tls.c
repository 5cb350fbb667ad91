/*
 * common/tls.c - TLS contexts; see tls.h for the policy. Any process.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "common/tls.h"

/* TLS 1.2 suites: forward secrecy and AEAD only. TLS 1.3 keeps
 * OpenSSL's default suites (all AEAD). */
#define VS_TLS12_CIPHERS                                                       \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"               \
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"               \
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

void
vs_tls_error_line(const SSL *ssl, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    unsigned long e;
    while ((e = ERR_get_error()) != 0) {
        const char *r = ERR_reason_error_string(e);
        char buf[128];
        if (r == NULL) {
            ERR_error_string_n(e, buf, sizeof(buf));
            r = buf;
        }
        if (n < len) {
            int m = snprintf(out + n, len - n, "%s%s", n ? "; " : "", r);
            n += m > 0 ? (size_t)m : 0;
        }
    }
    if (ssl != NULL) {
        long v = SSL_get_verify_result(ssl);
        if (v != X509_V_OK && n < len)
            snprintf(out + n, len - n, "%scertificate verify: %s",
                     n ? "; " : "", X509_verify_cert_error_string(v));
    }
}

static void
tls_fail(char *err, size_t errlen, const char *what, const char *path,
         const char *fallback)
{
    char line[384];
    vs_tls_error_line(NULL, line, sizeof(line));
    snprintf(err, errlen, "%s %s: %s", what, path, line[0] ? line : fallback);
}

static int
tls_is_set(const char *p)
{
    return p != NULL && p[0] != '\0';
}

static SSL_CTX *
tls_ctx_new(const SSL_METHOD *m, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(m);
    if (ctx == NULL) {
        snprintf(err, errlen, "TLS: cannot create a context");
        return NULL;
    }
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_cipher_list(ctx, VS_TLS12_CIPHERS) != 1) {
        snprintf(err, errlen, "TLS: cannot set the protocol policy");
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    return ctx;
}

/* Loads cert + key and checks they match. 0 or -EINVAL. */
static int
tls_load_pair(SSL_CTX *ctx, const struct vs_tls_opts *o, char *err,
              size_t errlen)
{
    const char *cw = o->cert_what ? o->cert_what : "certificate";
    const char *kw = o->key_what ? o->key_what : "key";
    if (!tls_is_set(o->key_file)) {
        snprintf(err, errlen, "%s is set but %s is not", cw, kw);
        return -EINVAL;
    }
    ERR_clear_error();
    if (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1) {
        tls_fail(err, errlen, cw, o->cert_file, "unreadable certificate");
        return -EINVAL;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1) {
        tls_fail(err, errlen, kw, o->key_file, "unreadable private key");
        return -EINVAL;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        snprintf(err, errlen, "%s %s does not match %s %s", kw, o->key_file, cw,
                 o->cert_file);
        return -EINVAL;
    }
    return 0;
}

static int
tls_load_ca(SSL_CTX *ctx, const struct vs_tls_opts *o, char *err, size_t errlen)
{
    const char *aw = o->ca_what ? o->ca_what : "CA file";
    ERR_clear_error();
    if (SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL) != 1) {
        tls_fail(err, errlen, aw, o->ca_file, "unreadable CA file");
        return -EINVAL;
    }
    return 0;
}

SSL_CTX *
vs_tls_server_ctx(const struct vs_tls_opts *o, char *err, size_t errlen)
{
    if (!tls_is_set(o->cert_file)) {
        snprintf(err, errlen, "%s is not set",
                 o->cert_what ? o->cert_what : "certificate");
        return NULL;
    }
    SSL_CTX *ctx = tls_ctx_new(TLS_server_method(), err, errlen);
    if (ctx == NULL)
        return NULL;
    SSL_CTX_set_options(ctx,
                        SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_TICKET);
    if (tls_load_pair(ctx, o, err, errlen) != 0)
        goto fail;
    if (tls_is_set(o->ca_file)) {
        if (tls_load_ca(ctx, o, err, errlen) != 0)
            goto fail;
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(o->ca_file);
        if (names != NULL)
            SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(
            ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    ERR_clear_error();
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

SSL_CTX *
vs_tls_client_ctx(const struct vs_tls_opts *o, char *err, size_t errlen)
{
    SSL_CTX *ctx = tls_ctx_new(TLS_client_method(), err, errlen);
    if (ctx == NULL)
        return NULL;
    if (tls_is_set(o->cert_file) && tls_load_pair(ctx, o, err, errlen) != 0)
        goto fail;
    if (tls_is_set(o->ca_file)) {
        if (tls_load_ca(ctx, o, err, errlen) != 0)
            goto fail;
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        snprintf(err, errlen, "TLS: cannot load the system CA store");
        goto fail;
    }
    SSL_CTX_set_verify(ctx, o->no_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                       NULL);
    ERR_clear_error();
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

int
vs_tls_client_set_name(SSL *ssl, const char *name, char *err, size_t errlen)
{
    unsigned char ip[16];
    int is_ip =
        inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
    if (is_ip) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
        if (X509_VERIFY_PARAM_set1_ip_asc(vp, name) != 1) {
            snprintf(err, errlen, "TLS: bad server address %s", name);
            return -EINVAL;
        }
        return 0;
    }
    if (name[0] == '\0' || SSL_set_tlsext_host_name(ssl, name) != 1 ||
        SSL_set1_host(ssl, name) != 1) {
        ERR_clear_error();
        snprintf(err, errlen, "TLS: bad server name '%s'", name);
        return -EINVAL;
    }
    return 0;
}
