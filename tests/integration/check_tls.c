/*
 * tests/integration/check_tls.c - TLS on the client listener of a real
 * vstreamd (two data shards), with certificates made by `openssl` in the
 * test: a CA, a server certificate for 127.0.0.1 / localhost signed by
 * it, a client certificate, and an unrelated CA.
 *
 * Covered: Iggy's SDK TLS scenarios through the client library with
 * verification on (connect, login, stream / topic / message round trip,
 * stats, logout) beside a plain-TCP session on the same node; the CLI
 * with --tls-ca / --tls-server-name; a wrong CA, a wrong server name and
 * no CA (system store) are refused; a plaintext client on the TLS port,
 * a TLS client on the plain port and random bytes after a handshake
 * each cost that connection only while an established TLS session goes
 * on; client certificates required by tls_ca_file; a missing, garbage or
 * mismatched certificate or key refuses the start with one line (exit 2);
 * SIGHUP rotates the certificate (a broken file keeps the current one);
 * the library never raises SIGPIPE when the server goes away.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "common/buf.h"
#include "tests/integration/e2e.h"

static struct vs_node node;
static char ca[400], ca_key[400], cert[400], key[400], other_ca[400];
static char ccert[400], ckey[400], other_key[400];

#define OK(c, call)                                                            \
    do {                                                                       \
        int rc_ = (call);                                                      \
        ck_assert_msg(rc_ == 0, "%s -> %d: %s", #call, rc_,                    \
                      vsc_last_error(c));                                      \
    } while (0)

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "command failed: %s", cmd);
}

/* CA, server and client certificates in dir (EC P-256, 2 days). */
static void
make_certs(const char *dir)
{
    snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    snprintf(ca_key, sizeof ca_key, "%s/ca.key", dir);
    snprintf(cert, sizeof cert, "%s/server.pem", dir);
    snprintf(key, sizeof key, "%s/server.key", dir);
    snprintf(ccert, sizeof ccert, "%s/client.pem", dir);
    snprintf(ckey, sizeof ckey, "%s/client.key", dir);
    snprintf(other_ca, sizeof other_ca, "%s/other.pem", dir);
    snprintf(other_key, sizeof other_key, "%s/other.key", dir);
    const char *q = ">/dev/null 2>&1";
    sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
       "-nodes -keyout %s -out %s -days 2 -subj /CN=vstream-test-ca %s",
       ca_key, ca, q);
    sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
       "-nodes -keyout %s -out %s -days 2 -subj /CN=other-ca %s",
       other_key, other_ca, q);
    sh("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
       "-keyout %s -out %s/server.csr -subj /CN=localhost %s",
       key, dir, q);
    sh("printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > %s/san.ext",
       dir);
    sh("openssl x509 -req -in %s/server.csr -CA %s -CAkey %s "
       "-CAcreateserial -days 2 -extfile %s/san.ext -out %s %s",
       dir, ca, ca_key, dir, cert, q);
    sh("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
       "-keyout %s -out %s/client.csr -subj /CN=client %s",
       ckey, dir, q);
    sh("openssl x509 -req -in %s/client.csr -CA %s -CAkey %s "
       "-CAcreateserial -days 2 -out %s %s",
       dir, ca, ca_key, ccert, q);
}

static void
start_tls_node(struct vs_node *n, const char *client_ca)
{
    ck_assert_int_eq(vs_node_init(n), 0);
    make_certs(n->dir);
    const char *extra[16];
    size_t k = 0;
    extra[k++] = "--tls-enabled";
    extra[k++] = "--tls-addr";
    extra[k++] = "127.0.0.1:0";
    extra[k++] = "--tls-cert-file";
    extra[k++] = cert;
    extra[k++] = "--tls-key-file";
    extra[k++] = key;
    if (client_ca != NULL) {
        extra[k++] = "--tls-ca-file";
        extra[k++] = client_ca;
    }
    extra[k] = NULL;
    e2e_start(n, 2, extra);
    ck_assert_str_ne(n->ready.tls, "");
}

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    start_tls_node(&node, NULL);
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
}

static struct vsc *
tls_client(const char *addr, const char *cafile, const char *name)
{
    struct vsc_opts o;
    memset(&o, 0, sizeof o);
    o.addr = addr;
    o.io_timeout_ms = 20000;
    o.connect_timeout_ms = 5000;
    o.reconnects = 1;
    o.tls = 1;
    o.tls_ca_file = cafile;
    o.tls_server_name = name;
    struct vsc *c = vsc_create(&o);
    ck_assert_ptr_nonnull(c);
    return c;
}

static struct vsc *
tls_login(void)
{
    struct vsc *c = tls_client(node.ready.tls, ca, NULL);
    OK(c, vsc_connect(c));
    OK(c, vsc_login(c, "iggy", "iggy", NULL));
    return c;
}

/* Iggy SDK TLS scenarios over the library, verification on. */
START_TEST(test_sdk_scenarios)
{
    struct vsc *c = tls_client(node.ready.tls, ca, NULL);
    OK(c, vsc_connect(c));
    OK(c, vsc_ping(c));
    uint32_t uid = 99;
    OK(c, vsc_login(c, "iggy", "iggy", &uid));
    ck_assert_uint_eq(uid, 0);
    struct vsc_stats st;
    OK(c, vsc_stats(c, &st));
    OK(c, vsc_stream_create(c, "tls-stream", NULL));
    struct vsc_id sid = vsc_id_name("tls-stream"), tid = vsc_id_name("t");
    struct vsc_topic top;
    OK(c, vsc_topic_create(c, &sid, 4, "t", NULL, 0, &top));
    vsc_topic_fini(&top);
    /* messages up to 200 KB: several TLS records per frame */
    static uint8_t big[200000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 31 + 7);
    for (uint32_t p = 0; p < 4; p++) {
        struct vsc_msg m[3];
        memset(m, 0, sizeof m);
        char a[32];
        snprintf(a, sizeof a, "hello-%u", p);
        m[0].payload = (uint8_t *)a;
        m[0].payload_len = (uint32_t)strlen(a);
        m[1].payload = big;
        m[1].payload_len = sizeof big;
        m[2].payload = (uint8_t *)"x";
        m[2].payload_len = 1;
        struct vsc_partitioning part = vsc_part_id(p);
        struct vsc_sent sent;
        if (p % 2 == 0) {
            OK(c, vsc_send(c, &sid, &tid, &part, m, 3, &sent));
        } else {
            /* a prebuilt batch, written from its own buffer after the
             * frame's head: two TLS writes of one frame */
            struct vs_wbuf b;
            vs_wbuf_init(&b);
            ck_assert_uint_gt(vsc_batch_build(&b, m, 3, 1), 0);
            OK(c,
               vsc_send_batch(c, &sid, &tid, &part, 3, b.data, b.len, &sent));
            vs_wbuf_fini(&b);
        }
        ck_assert_uint_eq(sent.partition_id, p);
    }
    /* a plain-TCP session on the same node sees the same data */
    struct vsc *plain = e2e_login(&node, "iggy", "iggy");
    for (uint32_t p = 0; p < 4; p++) {
        struct vsc_poll_args a;
        struct vsc_polled r;
        struct vsc_id cons = vsc_id_name("tls-reader");
        memset(&a, 0, sizeof a);
        a.consumer = vsc_consumer_single(&cons);
        a.has_partition = 1;
        a.partition_id = p;
        a.strategy = VSC_POLL_OFFSET;
        a.value = 0;
        a.count = 10;
        struct vsc *who = p % 2 ? plain : c;
        OK(who, vsc_poll(who, &sid, &tid, &a, &r));
        ck_assert_uint_eq(r.n, 3);
        char want[32];
        snprintf(want, sizeof want, "hello-%u", p);
        ck_assert_uint_eq(r.msgs[0].payload_len, strlen(want));
        ck_assert_mem_eq(r.msgs[0].payload, want, strlen(want));
        ck_assert_uint_eq(r.msgs[1].payload_len, sizeof big);
        ck_assert_mem_eq(r.msgs[1].payload, big, sizeof big);
        ck_assert_uint_eq(r.msgs[2].offset, 2);
        vsc_polled_fini(&r);
    }
    OK(c, vsc_stats(c, &st));
    ck_assert_uint_eq(st.messages_count, 12);
    OK(c, vsc_logout(c));
    vsc_destroy(plain);
    vsc_destroy(c);
}
END_TEST

/* Verification is on: a wrong CA, a wrong name, no CA (the system store
 * does not know the test CA) are refused with a reason. */
START_TEST(test_verification_refusals)
{
    struct vsc *c = tls_client(node.ready.tls, other_ca, NULL);
    ck_assert_int_ne(vsc_connect(c), 0);
    ck_assert_msg(strstr(vsc_last_error(c), "certificate verify failed"), "%s",
                  vsc_last_error(c));
    vsc_destroy(c);
    c = tls_client(node.ready.tls, ca, "not-this-host.example");
    ck_assert_int_ne(vsc_connect(c), 0);
    ck_assert_msg(strstr(vsc_last_error(c), "verify"), "%s", vsc_last_error(c));
    vsc_destroy(c);
    c = tls_client(node.ready.tls, NULL, NULL);
    ck_assert_int_ne(vsc_connect(c), 0);
    vsc_destroy(c);
    /* the name given explicitly and matching a DNS SAN is accepted */
    c = tls_client(node.ready.tls, ca, "localhost");
    OK(c, vsc_connect(c));
    OK(c, vsc_login(c, "iggy", "iggy", NULL));
    vsc_destroy(c);
    /* a CA file that does not exist is a clear error */
    c = tls_client(node.ready.tls, "/nonexistent/ca.pem", NULL);
    ck_assert_int_ne(vsc_connect(c), 0);
    ck_assert_msg(strstr(vsc_last_error(c), "/nonexistent/ca.pem"), "%s",
                  vsc_last_error(c));
    vsc_destroy(c);
}
END_TEST

START_TEST(test_cli)
{
    char out[8192], err[2048];
    const char *ok[] = {"--addr", node.ready.tls, "--tls-ca", ca,
                        "--json", "stats",        NULL};
    int st = e2e_cli(&node, "iggy", NULL, out, sizeof out, err, sizeof err, ok);
    ck_assert_msg(st == 0, "exit %d: %s", st, err);
    ck_assert_ptr_nonnull(strstr(out, "\"hostname\""));
    const char *named[] = {
        "--addr",    node.ready.tls, "--tls-ca", ca, "--tls-server-name",
        "localhost", "ping",         NULL};
    st = e2e_cli(&node, NULL, NULL, out, sizeof out, err, sizeof err, named);
    ck_assert_msg(st == 0, "exit %d: %s", st, err);
    const char *bad[] = {"--addr", node.ready.tls, "--tls-ca",
                         other_ca, "stats",        NULL};
    st = e2e_cli(&node, "iggy", NULL, out, sizeof out, err, sizeof err, bad);
    ck_assert_int_eq(st, 2);
    ck_assert_msg(strstr(err, "certificate verify failed"), "%s", err);
    const char *nosys[] = {"--addr", node.ready.tls, "--tls", "stats", NULL};
    st = e2e_cli(&node, "iggy", NULL, out, sizeof out, err, sizeof err, nosys);
    ck_assert_int_eq(st, 2);
}
END_TEST

/* Random bytes written under an established TLS session (not through
 * SSL): the server's record layer refuses them and drops that
 * connection. Returns 1 if the server closed it. */
static int
garbage_after_handshake(const char *addr)
{
    int fd = vs_connect(addr);
    ck_assert_int_ge(fd, 0);
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    ck_assert_int_eq(SSL_connect(ssl), 1);
    uint8_t junk[4096];
    uint64_t x = 0x1234567887654321ull;
    for (size_t i = 0; i < sizeof junk; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        junk[i] = (uint8_t)(x >> 56);
    }
    ck_assert_int_eq(e2e_send(fd, junk, sizeof junk), 0);
    int closed = e2e_closed(fd, 10000);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    return closed;
}

/* A handshake with a client limited to max_version / ciphers: 1 if the
 * server accepted it. */
static int
handshake_with(const char *addr, int max_version, const char *ciphers)
{
    int fd = vs_connect(addr);
    ck_assert_int_ge(fd, 0);
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_min_proto_version(ctx, 0);
    /* allow the old protocols on this side (the refusal must come from
     * the server's policy) */
    SSL_CTX_set_security_level(ctx, 0);
    SSL_CTX_set_max_proto_version(ctx, max_version);
    if (ciphers != NULL)
        ck_assert_int_eq(SSL_CTX_set_cipher_list(ctx, ciphers), 1);
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    int ok = SSL_connect(ssl) == 1;
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    return ok;
}

/* TLS 1.2+ with forward-secret AEAD suites only. */
START_TEST(test_protocol_policy)
{
    ck_assert_int_eq(handshake_with(node.ready.tls, TLS1_1_VERSION, NULL), 0);
    ck_assert_int_eq(handshake_with(node.ready.tls, TLS1_VERSION, NULL), 0);
    ck_assert_int_eq(handshake_with(node.ready.tls, TLS1_2_VERSION,
                                    "AES128-SHA:AES256-SHA256"),
                     0);
    ck_assert_int_eq(handshake_with(node.ready.tls, TLS1_2_VERSION,
                                    "ECDHE-ECDSA-AES128-GCM-SHA256"),
                     1);
    ck_assert_int_eq(handshake_with(node.ready.tls, TLS1_3_VERSION, NULL), 1);
    /* the node still serves */
    struct vsc *c = tls_login();
    OK(c, vsc_ping(c));
    vsc_destroy(c);
}
END_TEST

START_TEST(test_bad_peers_cost_one_connection)
{
    /* an established TLS session that must survive everything below */
    struct vsc *keep = tls_login();
    OK(keep, vsc_stream_create(keep, "survivor", NULL));

    /* a plaintext Iggy client on the TLS port: a request frame is not a
     * ClientHello */
    int fd = vs_connect(node.ready.tls);
    ck_assert_int_ge(fd, 0);
    uint8_t frame[256];
    memset(frame, 0, sizeof frame);
    frame[48] = 0; /* size = 256 */
    frame[49] = 1;
    frame[60] = 5; /* Request */
    ck_assert_int_eq(e2e_send(fd, frame, sizeof frame), 0);
    ck_assert_int_eq(e2e_closed(fd, 10000), 1);
    close(fd);

    /* a TLS client on the plain port */
    struct vsc *wrong = tls_client(node.ready.client, ca, NULL);
    ck_assert_int_ne(vsc_connect(wrong), 0);
    vsc_destroy(wrong);

    /* random bytes after a handshake */
    ck_assert_int_eq(garbage_after_handshake(node.ready.tls), 1);

    /* a half-open TLS connection that never sends a byte does not block
     * new sessions */
    int idle = vs_connect(node.ready.tls);
    ck_assert_int_ge(idle, 0);

    /* the node keeps serving: the old session, new TLS and plain ones */
    OK(keep, vsc_stream_create(keep, "survivor-2", NULL));
    struct vsc *fresh = tls_login();
    struct vsc_stream s;
    struct vsc_id sid = vsc_id_name("survivor");
    int found = 0;
    OK(fresh, vsc_stream_get(fresh, &sid, &s, &found));
    ck_assert_int_eq(found, 1);
    vsc_stream_fini(&s);
    struct vsc *plain = e2e_login(&node, "iggy", "iggy");
    OK(plain, vsc_ping(plain));
    close(idle);
    vsc_destroy(plain);
    vsc_destroy(fresh);
    vsc_destroy(keep);
}
END_TEST

/* tls_ca_file: a client without a certificate signed by it is refused;
 * with one it is served. */
START_TEST(test_client_certificates)
{
    struct vs_node n2;
    ck_assert_int_eq(vs_node_init(&n2), 0);
    const char *extra[] = {"--tls-enabled",
                           "--tls-addr",
                           "127.0.0.1:0",
                           "--tls-cert-file",
                           cert,
                           "--tls-key-file",
                           key,
                           "--tls-ca-file",
                           ca,
                           NULL};
    e2e_start(&n2, 1, extra);
    /* no client certificate: the handshake or the first request fails */
    struct vsc *c = tls_client(n2.ready.tls, ca, NULL);
    ck_assert_int_ne(vsc_connect(c) == 0 && vsc_ping(c) == 0, 1);
    vsc_destroy(c);
    struct vsc_opts o;
    memset(&o, 0, sizeof o);
    o.addr = n2.ready.tls;
    o.tls = 1;
    o.tls_ca_file = ca;
    o.tls_cert_file = ccert;
    o.tls_key_file = ckey;
    c = vsc_create(&o);
    OK(c, vsc_connect(c));
    OK(c, vsc_login(c, "iggy", "iggy", NULL));
    OK(c, vsc_ping(c));
    vsc_destroy(c);
    vs_node_cleanup(&n2);
}
END_TEST

/* The server goes away under an established TLS session: the library
 * reports errors and never raises SIGPIPE (default disposition here). */
START_TEST(test_no_sigpipe)
{
    signal(SIGPIPE, SIG_DFL);
    struct vsc *c = tls_login();
    static uint8_t big[1 << 20];
    struct vsc_msg m;
    memset(&m, 0, sizeof m);
    m.payload = big;
    m.payload_len = sizeof big;
    OK(c, vsc_stream_create(c, "p", NULL));
    struct vsc_id sid = vsc_id_name("p"), tid = vsc_id_name("t");
    struct vsc_topic top;
    OK(c, vsc_topic_create(c, &sid, 1, "t", NULL, 0, &top));
    vsc_topic_fini(&top);
    e2e_kill_node(&node);
    struct vsc_partitioning part = vsc_part_id(0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_ne(vsc_send(c, &sid, &tid, &part, &m, 1, NULL), 0);
    ck_assert_int_ne(vsc_ping(c), 0);
    vsc_destroy(c);
}
END_TEST

/* 1 if a fresh library session trusting cafile logs in (one try). */
static int
tls_try(const char *cafile)
{
    struct vsc *c = tls_client(node.ready.tls, cafile, NULL);
    int ok = vsc_connect(c) == 0 && vsc_login(c, "iggy", "iggy", NULL) == 0;
    vsc_destroy(c);
    return ok;
}

/* Waits until n consecutive sessions trusting cafile succeed (every data
 * shard reloaded). */
static int
tls_wait_trusted(const char *cafile, int n)
{
    int streak = 0;
    for (int i = 0; i < 400 && streak < n; i++) {
        streak = tls_try(cafile) ? streak + 1 : 0;
        if (streak == 0) {
            struct timespec ts = {0, 25000000};
            nanosleep(&ts, NULL);
        }
    }
    return streak >= n;
}

/* SIGHUP rotates the certificate; a broken file keeps the current one;
 * sessions opened before keep working. */
START_TEST(test_reload_certificate)
{
    struct vsc *keep = tls_login();
    /* the same key, now certified by the other CA */
    sh("openssl x509 -req -in %s/server.csr -CA %s -CAkey %s "
       "-CAcreateserial -days 2 -extfile %s/san.ext -out %s/new.pem "
       ">/dev/null 2>&1 && mv %s/new.pem %s",
       node.dir, other_ca, other_key, node.dir, node.dir, node.dir, cert);
    ck_assert(tls_try(ca));
    ck_assert_int_eq(kill(node.pid, SIGHUP), 0);
    ck_assert(tls_wait_trusted(other_ca, 6));
    ck_assert(!tls_try(ca));
    OK(keep, vsc_ping(keep));
    /* a broken certificate: the current one stays */
    sh("echo garbage > %s/bad.pem && mv %s/bad.pem %s", node.dir, node.dir,
       cert);
    ck_assert_int_eq(kill(node.pid, SIGHUP), 0);
    ck_assert_int_eq(vs_wait_file_contains(node.log_file,
                                           "keeping the current TLS "
                                           "certificate",
                                           20000),
                     0);
    ck_assert(tls_wait_trusted(other_ca, 4));
    OK(keep, vsc_ping(keep));
    vsc_destroy(keep);
}
END_TEST

/* A bad TLS configuration refuses the start: exit 2, one line. */
static void
expect_refusal(const char *certf, const char *keyf, const char *needle)
{
    struct vs_node n;
    ck_assert_int_eq(vs_node_init(&n), 0);
    const char *args[] = {
        "--tls-enabled", "--tls-addr",     "127.0.0.1:0", "--tls-cert-file",
        certf,           "--tls-key-file", keyf,          NULL};
    ck_assert_int_eq(vs_node_spawn(&n, args), 0);
    int st = vs_node_wait_exit(&n, 20000);
    ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d",
                  st);
    FILE *f = fopen(n.stderr_file, "r");
    ck_assert_ptr_nonnull(f);
    char line[1024] = "", extra[1024];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_ptr_null(fgets(extra, sizeof extra, f)); /* one line */
    fclose(f);
    ck_assert_msg(strstr(line, needle), "'%s' not in: %s", needle, line);
    vs_node_cleanup(&n);
}

START_TEST(test_bad_files_refused)
{
    char garbage[600];
    snprintf(garbage, sizeof garbage, "%s/garbage.pem", node.dir);
    sh("echo 'not a certificate' > %s", garbage);
    expect_refusal("/nonexistent/cert.pem", key, "tls_cert_file");
    expect_refusal(garbage, key, "tls_cert_file");
    expect_refusal(cert, "/nonexistent/key.pem", "tls_key_file");
    expect_refusal(cert, other_key, "mismatch");
    /* tls_enabled without files is a config error */
    struct vs_node n;
    ck_assert_int_eq(vs_node_init(&n), 0);
    const char *args[] = {"--tls-enabled", NULL};
    ck_assert_int_eq(vs_node_spawn(&n, args), 0);
    int st = vs_node_wait_exit(&n, 20000);
    ck_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 2);
    ck_assert(vs_file_contains(n.stderr_file, "tls_cert_file"));
    vs_node_cleanup(&n);
}
END_TEST

static Suite *
tls_suite(void)
{
    Suite *s = suite_create("tls");
    TCase *t = tcase_create("tls");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_sdk_scenarios);
    tcase_add_test(t, test_verification_refusals);
    tcase_add_test(t, test_cli);
    tcase_add_test(t, test_bad_peers_cost_one_connection);
    tcase_add_test(t, test_protocol_policy);
    tcase_add_test(t, test_client_certificates);
    tcase_add_test(t, test_bad_files_refused);
    tcase_add_test(t, test_no_sigpipe);
    tcase_add_test(t, test_reload_certificate);
    tcase_set_timeout(t, 180);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(tls_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
