/*
 * common/tls.h - TLS contexts (OpenSSL 3) for every TLS endpoint of
 * vstream: the client listener of the data shards, the client library
 * and CLI, and the replica links.
 *
 * Policy, the same for every context: TLS 1.2 and 1.3 only; TLS 1.2
 * restricted to ECDHE key exchange with AEAD ciphers (AES-GCM,
 * ChaCha20-Poly1305); no compression, no renegotiation, no session
 * tickets on the server. Peer verification is ON by default: a client
 * context verifies the server's chain against the given CA file (or the
 * system store) and its name (DNS name or IP address); a server context
 * with a CA file requires and verifies client certificates.
 *
 * Errors: every failure returns NULL (or -errno) with one line in err
 * naming the file and OpenSSL's reason, e.g.
 *   "tls_cert_file /etc/x.pem: no start line (not a PEM certificate)".
 *
 * Invariants: the contexts are reference-counted OpenSSL objects owned
 * by the caller (SSL_CTX_free). Nothing here touches libevent or a
 * socket. Callers: any process; a context is used by one thread at a
 * time here (OpenSSL contexts are thread-safe anyway).
 */
#ifndef VS_COMMON_TLS_H
#define VS_COMMON_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

/* What a context is built from. Paths may be NULL or "". */
struct vs_tls_opts {
    const char *cert_file; /* PEM chain (leaf first); server: required */
    const char *key_file;  /* PEM private key of cert_file */
    const char *ca_file;   /* server: client CAs (enables client-cert
                              verification); client: trusted CAs
                              (NULL = the system store) */
    int no_verify;         /* client only: skip verification (tests of
                              the refusal path; never the default) */
    /* Names used in messages: "tls_cert_file" / "--tls-ca"... */
    const char *cert_what, *key_what, *ca_what;
};

/* A server context. NULL with the reason in err. */
SSL_CTX *vs_tls_server_ctx(const struct vs_tls_opts *o, char *err,
                           size_t errlen);

/* A client context (cert/key optional: a client certificate). NULL with
 * the reason in err. */
SSL_CTX *vs_tls_client_ctx(const struct vs_tls_opts *o, char *err,
                           size_t errlen);

/* Prepares a client SSL for `name` (DNS name or IPv4/IPv6 literal): SNI
 * for DNS names, and the name the certificate must match. 0 or -EINVAL
 * with the reason in err. */
int vs_tls_client_set_name(SSL *ssl, const char *name, char *err,
                           size_t errlen);

/* Drains OpenSSL's error queue of this thread into one line ("" if it
 * was empty); adds the verification result of `ssl` (may be NULL) when
 * the handshake failed on it. */
void vs_tls_error_line(const SSL *ssl, char *out, size_t len);

#endif /* VS_COMMON_TLS_H */
