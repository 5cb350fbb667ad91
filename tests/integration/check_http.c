/*
 * tests/integration/check_http.c - the HTTP endpoint of a real vstreamd
 * (two data shards, --http-addr 127.0.0.1:0): /metrics parsed line by
 * line as Prometheus text format 0.0.4 by a small parser below (every
 * line a HELP, a TYPE or a sample; every sample's family typed before
 * it; metric and label names valid, label values quoted and escaped;
 * counters named *_total; one label-key set per family; histogram
 * buckets cumulative with le ending at +Inf equal to _count; no series
 * twice); counters moving after sends, polls and a failed login;
 * /health/live, /ping, /health/ready 200 when serving and 503 (with the
 * reason) while shard 0 is down and restarting, 200 again after;
 * malformed, oversized, wrong-method and unknown requests refused
 * without harm to the endpoint or the client port.
 */
#include "config.h"

#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "tests/integration/e2e.h"

static struct vs_node node;

#define OK(c, call)                                                            \
    do {                                                                       \
        int rc_ = (call);                                                      \
        ck_assert_msg(rc_ == 0, "%s -> %d: %s", #call, rc_,                    \
                      vsc_last_error(c));                                      \
    } while (0)

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
    /* a slow restart keeps shard 0 down long enough to see the 503 */
    const char *extra[] = {"--http-addr",
                           "127.0.0.1:0",
                           "--restart-backoff-min-ms",
                           "1500",
                           "--restart-backoff-max-ms",
                           "3000",
                           NULL};
    e2e_start(&node, 2, extra);
    ck_assert_str_ne(node.ready.http, "");
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
}

/* Sends raw bytes, reads the response to EOF (bounded). Returns the
 * status code (0 if none) and the body in *body (malloc). */
static int
http_raw(const char *req, size_t len, char **body)
{
    int fd = vs_connect(node.ready.http);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(e2e_send(fd, req, len), 0);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    uint64_t deadline = vs_monotonic_ns() + 10000000000ull;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ms = (int)((deadline - vs_monotonic_ns()) / 1000000);
        if (ms <= 0 || poll(&p, 1, ms) <= 0)
            break;
        if (n + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    int code = 0;
    if (strncmp(buf, "HTTP/1.", 7) == 0)
        code = atoi(buf + 9);
    char *b = strstr(buf, "\r\n\r\n");
    if (body != NULL)
        *body = strdup(b ? b + 4 : "");
    free(buf);
    return code;
}

static int
http_get(const char *path, char **body)
{
    char req[512];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                     path);
    return http_raw(req, (size_t)n, body);
}

/* ---- a small Prometheus text-format parser ---- */

#define MAXFAM 256
struct family {
    char name[128];
    char type[16];
    char keys[256]; /* label keys of its samples, sorted, without le */
    int has_samples;
    double last_bucket;
    int in_buckets;
};

struct expo {
    struct family fam[MAXFAM];
    size_t nfam;
    char **series; /* "name{labels}" seen */
    size_t nseries;
};

static int
name_ok(const char *s, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
            return 0;
    return 1;
}

static struct family *
fam_find(struct expo *e, const char *name)
{
    for (size_t i = 0; i < e->nfam; i++)
        if (strcmp(e->fam[i].name, name) == 0)
            return &e->fam[i];
    return NULL;
}

/* The family of a sample name (histogram suffixes stripped). */
static struct family *
fam_of(struct expo *e, const char *name, const char **suffix)
{
    struct family *f = fam_find(e, name);
    *suffix = "";
    if (f != NULL)
        return f;
    static const char *const sfx[] = {"_bucket", "_sum", "_count"};
    for (size_t i = 0; i < 3; i++) {
        size_t l = strlen(name), sl = strlen(sfx[i]);
        if (l > sl && strcmp(name + l - sl, sfx[i]) == 0) {
            char base[128];
            snprintf(base, sizeof base, "%.*s", (int)(l - sl), name);
            f = fam_find(e, base);
            if (f != NULL && strcmp(f->type, "histogram") == 0) {
                *suffix = sfx[i];
                return f;
            }
        }
    }
    return NULL;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Parses one exposition; fails the test on the first bad line. */
static void
parse_expo(const char *text, struct expo *e)
{
    memset(e, 0, sizeof *e);
    size_t lines = 0;
    const char *p = text;
    double hist_count_expect = -1;
    while (*p) {
        const char *eol = strchr(p, '\n');
        ck_assert_msg(eol != NULL, "last line not terminated");
        char line[2048];
        size_t ll = (size_t)(eol - p);
        ck_assert_uint_lt(ll, sizeof line);
        memcpy(line, p, ll);
        line[ll] = '\0';
        p = eol + 1;
        lines++;
        if (strncmp(line, "# HELP ", 7) == 0) {
            char *n = line + 7, *sp = strchr(n, ' ');
            ck_assert_msg(sp && name_ok(n, (size_t)(sp - n)), "HELP: %s", line);
            continue;
        }
        if (strncmp(line, "# TYPE ", 7) == 0) {
            char *n = line + 7, *sp = strchr(n, ' ');
            ck_assert_msg(sp && name_ok(n, (size_t)(sp - n)), "TYPE: %s", line);
            *sp = '\0';
            ck_assert_msg(fam_find(e, n) == NULL, "TYPE twice: %s", n);
            ck_assert(strcmp(sp + 1, "counter") == 0 ||
                      strcmp(sp + 1, "gauge") == 0 ||
                      strcmp(sp + 1, "histogram") == 0);
            ck_assert_uint_lt(e->nfam, MAXFAM);
            struct family *f = &e->fam[e->nfam++];
            ck_assert_uint_lt(strlen(n), sizeof f->name);
            ck_assert_uint_lt(strlen(sp + 1), sizeof f->type);
            memcpy(f->name, n, strlen(n) + 1);
            memcpy(f->type, sp + 1, strlen(sp + 1) + 1);
            if (strcmp(f->type, "counter") == 0) {
                size_t l = strlen(n);
                ck_assert_msg(l > 6 && strcmp(n + l - 6, "_total") == 0,
                              "counter without _total: %s", n);
            }
            continue;
        }
        ck_assert_msg(line[0] != '#' && line[0] != '\0', "bad line: %s", line);
        /* sample: name[{labels}] value */
        size_t nl = strcspn(line, "{ ");
        ck_assert_msg(name_ok(line, nl), "bad name: %s", line);
        char name[128];
        ck_assert_uint_lt(nl, sizeof name);
        memcpy(name, line, nl);
        name[nl] = '\0';
        ck_assert_msg(strncmp(name, "vstream_", 8) == 0, "prefix: %s", name);
        const char *suffix;
        struct family *f = fam_of(e, name, &suffix);
        ck_assert_msg(f != NULL, "sample before its TYPE: %s", line);
        const char *q = line + nl;
        char keys[16][64];
        size_t nk = 0;
        char le[256] = "";
        if (*q == '{') {
            q++;
            while (*q != '}') {
                size_t kl = strcspn(q, "=");
                ck_assert_msg(name_ok(q, kl) && q[kl] == '=' &&
                                  q[kl + 1] == '"',
                              "label: %s", line);
                ck_assert_uint_lt(nk, 16);
                snprintf(keys[nk], sizeof keys[nk], "%.*s", (int)kl, q);
                q += kl + 2;
                char val[256];
                size_t vl = 0;
                while (*q != '"') {
                    ck_assert_msg(*q != '\0', "unterminated value: %s", line);
                    if (*q == '\\') {
                        q++;
                        ck_assert(*q == '\\' || *q == '"' || *q == 'n');
                    }
                    ck_assert_uint_lt(vl, sizeof val - 1);
                    val[vl++] = *q++;
                }
                val[vl] = '\0';
                q++;
                if (strcmp(keys[nk], "le") == 0)
                    snprintf(le, sizeof le, "%s", val);
                else
                    nk++;
                if (*q == ',')
                    q++;
                else
                    ck_assert_msg(*q == '}', "labels: %s", line);
            }
            q++;
        }
        ck_assert_msg(*q == ' ', "no value: %s", line);
        char *end;
        double v = strtod(q + 1, &end);
        ck_assert_msg(end != q + 1 && *end == '\0', "value: %s", line);
        ck_assert_msg(v >= 0, "negative: %s", line);
        /* one label-key set per family */
        char ks[256] = "";
        for (size_t i = 0; i < nk; i++) {
            strcat(ks, keys[i]);
            strcat(ks, ",");
        }
        if (!f->has_samples)
            memcpy(f->keys, ks, sizeof ks);
        else
            ck_assert_msg(strcmp(f->keys, ks) == 0, "label set %s vs %s: %s",
                          ks, f->keys, line);
        f->has_samples = 1;
        /* histograms: cumulative buckets, le last +Inf == _count */
        if (strcmp(suffix, "_bucket") == 0) {
            ck_assert_msg(le[0] != '\0', "bucket without le: %s", line);
            if (!f->in_buckets)
                f->last_bucket = 0;
            ck_assert_msg(v >= f->last_bucket, "not cumulative: %s", line);
            f->last_bucket = v;
            f->in_buckets = 1;
            if (strcmp(le, "+Inf") == 0) {
                hist_count_expect = v;
                f->in_buckets = 0;
            }
        } else if (strcmp(suffix, "_count") == 0) {
            ck_assert_msg(v == hist_count_expect, "_count != +Inf: %s", line);
        } else {
            ck_assert_msg(le[0] == '\0', "le outside a bucket: %s", line);
        }
        /* no series twice */
        char series[2048];
        memcpy(series, line, (size_t)(q - line));
        series[q - line] = '\0';
        e->series = realloc(e->series, (e->nseries + 1) * sizeof(char *));
        e->series[e->nseries++] = strdup(series);
    }
    ck_assert_uint_gt(lines, 50);
    qsort(e->series, e->nseries, sizeof(char *), cmp_str);
    for (size_t i = 1; i < e->nseries; i++)
        ck_assert_msg(strcmp(e->series[i], e->series[i - 1]) != 0,
                      "series twice: %s", e->series[i]);
}

static void
expo_free(struct expo *e)
{
    for (size_t i = 0; i < e->nseries; i++)
        free(e->series[i]);
    free(e->series);
}

/* Value of the series "name{labels}" ("name" alone when unlabelled) in
 * an exposition text; 0 if absent. */
static double
value_of(const char *text, const char *series)
{
    size_t l = strlen(series);
    const char *p = text;
    while ((p = strstr(p, series)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[l] == ' ')
            return strtod(p + l + 1, NULL);
        p += l;
    }
    return 0;
}

static char *
scrape(void)
{
    char *body = NULL;
    ck_assert_int_eq(http_get("/metrics", &body), 200);
    struct expo e;
    parse_expo(body, &e);
    expo_free(&e);
    return body;
}

START_TEST(test_metrics_parse)
{
    char *m = scrape();
    /* the families the operator relies on are there */
    const char *want[] = {
        "vstream_connections_open{transport=\"tcp\"}",
        "vstream_connections_accepted_total{transport=\"tls\"}",
        "vstream_shard_up{shard=\"0\"}",
        "vstream_shard_restarts_total{shard=\"2\"}",
        "vstream_node_ready",
        "vstream_vsr_status",
        "vstream_vsr_commit",
        "vstream_wal_appends_total",
        "vstream_fsync_duration_seconds_count",
        "vstream_ipc_ring_queued_bytes{dst=\"1\"}",
        "vstream_leftright_publishes_total",
        "vstream_request_duration_seconds_bucket{class=\"send\",le=\"+Inf\"}",
        "vstream_process_resident_memory_bytes{shard=\"1\"}",
        "vstream_process_cpu_seconds_total{shard=\"0\"}",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(m, want[i]) != NULL, "missing %s", want[i]);
    ck_assert(value_of(m, "vstream_node_ready") == 1);
    ck_assert(value_of(m, "vstream_vsr_status") == 1);
    ck_assert(value_of(m, "vstream_process_resident_memory_bytes{shard="
                          "\"1\"}") > 1e6);
    ck_assert(value_of(m, "vstream_wal_appends_total") >= 1);
    free(m);
    /* HEAD works too */
    char *b = NULL;
    const char head[] = "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: "
                        "close\r\n\r\n";
    ck_assert_int_eq(http_raw(head, sizeof head - 1, &b), 200);
    free(b);
}
END_TEST

START_TEST(test_counters_move)
{
    char *m0 = scrape();
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    OK(c, vsc_stream_create(c, "m", NULL));
    struct vsc_id sid = vsc_id_name("m"), tid = vsc_id_name("t");
    struct vsc_topic top;
    OK(c, vsc_topic_create(c, &sid, 2, "t", NULL, 0, &top));
    vsc_topic_fini(&top);
    struct vsc_msg msg[10];
    memset(msg, 0, sizeof msg);
    for (int i = 0; i < 10; i++) {
        msg[i].payload = (uint8_t *)"0123456789";
        msg[i].payload_len = 10;
    }
    struct vsc_partitioning part = vsc_part_id(1);
    OK(c, vsc_send(c, &sid, &tid, &part, msg, 10, NULL));
    struct vsc_poll_args a;
    struct vsc_polled r;
    struct vsc_id cons = vsc_id_name("c");
    memset(&a, 0, sizeof a);
    a.consumer = vsc_consumer_single(&cons);
    a.has_partition = 1;
    a.partition_id = 1;
    a.strategy = VSC_POLL_OFFSET;
    a.count = 100;
    OK(c, vsc_poll(c, &sid, &tid, &a, &r));
    ck_assert_uint_eq(r.n, 10);
    vsc_polled_fini(&r);
    /* a failed login */
    struct vsc *bad = e2e_connect(&node);
    ck_assert_int_ne(vsc_login(bad, "iggy", "wrong-password", NULL), 0);
    vsc_destroy(bad);
    char *m1 = scrape();
#define DELTA(s) (value_of(m1, s) - value_of(m0, s))
    ck_assert(DELTA("vstream_messages_sent_total") == 10);
    ck_assert(DELTA("vstream_messages_polled_total") == 10);
    ck_assert(DELTA("vstream_messages_polled_bytes_total") > 100);
    ck_assert(DELTA("vstream_messages_sent_bytes_total") > 100);
    ck_assert(DELTA("vstream_requests_total{operation=\"Register\","
                    "code=\"42\"}") == 1);
    ck_assert(DELTA("vstream_requests_total{operation=\"SendMessages\","
                    "code=\"0\"}") == 1);
    ck_assert(DELTA("vstream_requests_total{operation=\"PollMessages\","
                    "code=\"0\"}") == 1);
    ck_assert(DELTA("vstream_requests_total{operation=\"CreateStream\","
                    "code=\"0\"}") == 1);
    ck_assert(DELTA("vstream_request_duration_seconds_count{class="
                    "\"send\"}") == 1);
    ck_assert(DELTA("vstream_request_duration_seconds_count{class="
                    "\"login\"}") == 2);
    ck_assert(DELTA("vstream_connections_accepted_total{transport="
                    "\"tcp\"}") == 2);
    ck_assert(DELTA("vstream_wal_appends_total") >= 2);
    /* the closed connections' EOF reaches the server asynchronously */
    double open = 0;
    for (int i = 0; i < 500; i++) {
        char *m = scrape();
        open = value_of(m, "vstream_connections_open{transport=\"tcp\"}");
        free(m);
        if (open == 1)
            break;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    ck_assert(open == 1);
    ck_assert(value_of(m1, "vstream_partition_messages{stream=\"0\","
                           "topic=\"0\",partition=\"1\"}") == 10);
    ck_assert(value_of(m1, "vstream_partition_size_bytes{stream=\"0\","
                           "topic=\"0\",partition=\"1\"}") > 100);
#undef DELTA
    vsc_destroy(c);
    free(m0);
    free(m1);
}
END_TEST

START_TEST(test_health)
{
    char *b = NULL;
    ck_assert_int_eq(http_get("/health/live", &b), 200);
    free(b);
    ck_assert_int_eq(http_get("/ping", &b), 200);
    ck_assert_ptr_nonnull(strstr(b, "pong"));
    free(b);
    ck_assert_int_eq(http_get("/health/ready", &b), 200);
    free(b);
    /* shard 0 dies: not ready until it has recovered and serves again */
    pid_t s0 = node.ready.shard_pids[0];
    ck_assert_int_gt(s0, 0);
    ck_assert_int_eq(kill(s0, SIGKILL), 0);
    int seen503 = 0;
    for (int i = 0; i < 1000 && !seen503; i++) {
        int code = http_get("/health/ready", &b);
        if (code == 503) {
            seen503 = 1;
            ck_assert_msg(strstr(b, "shard 0"), "%s", b);
        } else {
            ck_assert_int_eq(code, 200);
        }
        free(b);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    ck_assert(seen503);
    /* live stays 200 throughout; metrics still scrape */
    ck_assert_int_eq(http_get("/health/live", &b), 200);
    free(b);
    char *m = scrape();
    ck_assert(value_of(m, "vstream_node_ready") == 0);
    free(m);
    ck_assert_int_eq(vs_node_wait_respawn(&node, 0, s0, 30000), 0);
    int ready = 0;
    for (int i = 0; i < 3000 && !ready; i++) {
        ready = http_get("/health/ready", &b) == 200;
        free(b);
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    ck_assert(ready);
    m = scrape();
    ck_assert(value_of(m, "vstream_shard_restarts_total{shard=\"0\"}") == 1);
    free(m);
}
END_TEST

START_TEST(test_malformed_refused)
{
    char *b = NULL;
    const char garbage[] = "\x16\x03\x01garbage\r\n\r\n";
    int code = http_raw(garbage, sizeof garbage - 1, &b);
    ck_assert_msg(code == 0 || code == 400, "code %d", code);
    free(b);
    const char noproto[] = "GET\r\n\r\n";
    code = http_raw(noproto, sizeof noproto - 1, &b);
    ck_assert_msg(code == 0 || code == 400, "code %d", code);
    free(b);
    /* headers over the limit */
    size_t big = 64 * 1024;
    char *huge = malloc(big + 64);
    int n = snprintf(huge, big, "GET /metrics HTTP/1.1\r\nX-Big: ");
    memset(huge + n, 'a', big - (size_t)n - 8);
    memcpy(huge + big - 8, "\r\n\r\n", 4);
    code = http_raw(huge, big - 4, &b);
    ck_assert_msg(code == 0 || (code >= 400 && code < 500), "code %d", code);
    free(b);
    free(huge);
    /* wrong method, a body, an unknown path */
    const char post[] = "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: "
                        "3\r\nConnection: close\r\n\r\nabc";
    code = http_raw(post, sizeof post - 1, &b);
    ck_assert_msg(code == 405 || code == 413, "code %d", code);
    free(b);
    ck_assert_int_eq(http_get("/nope", &b), 404);
    free(b);
    ck_assert_int_eq(http_get("/metrics/../etc/passwd", &b), 404);
    free(b);
    /* half a request, then nothing: the endpoint serves others */
    int idle = vs_connect(node.ready.http);
    ck_assert_int_ge(idle, 0);
    ck_assert_int_eq(e2e_send(idle, "GET /met", 8), 0);
    ck_assert_int_eq(http_get("/ping", &b), 200);
    free(b);
    close(idle);
    /* the client port is unaffected */
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    OK(c, vsc_ping(c));
    vsc_destroy(c);
    char *m = scrape();
    free(m);
}
END_TEST

/* `vstream stats --json --http-addr` carries the same figures. */
START_TEST(test_cli_stats_json)
{
    char out[1 << 16], err[2048];
    const char *args[] = {"--http-addr", node.ready.http, "--json", "stats",
                          NULL};
    int st =
        e2e_cli(&node, "iggy", NULL, out, sizeof out, err, sizeof err, args);
    ck_assert_msg(st == 0, "exit %d: %s", st, err);
    ck_assert_ptr_nonnull(strstr(out, "\"hostname\""));
    ck_assert_ptr_nonnull(strstr(out, ",\"metrics\":{\"vstream_"));
    ck_assert_ptr_nonnull(strstr(out, "\"vstream_node_ready\":1"));
    ck_assert_ptr_nonnull(
        strstr(out, "\"vstream_connections_open{transport=\\\"tcp\\\"}\":"));
    ck_assert_ptr_nonnull(strstr(out, "le=\\\"+Inf\\\"}\":"));
    ck_assert_ptr_nonnull(strstr(out, "}}\n"));
    /* one line: a JSON object */
    ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);
    const char *bad[] = {"--http-addr", "127.0.0.1:1", "stats", NULL};
    st = e2e_cli(&node, "iggy", NULL, out, sizeof out, err, sizeof err, bad);
    ck_assert_int_eq(st, 2);
    ck_assert_msg(strstr(err, "127.0.0.1:1"), "%s", err);
}
END_TEST

/* Free space below disk_watermark_bytes: sends and metadata growth
 * refused, gauge set. The topic is created before the restart that sets
 * the watermark (below it, CreateStream itself is refused). */
START_TEST(test_disk_watermark)
{
    struct vs_node n2;
    ck_assert_int_eq(vs_node_init(&n2), 0);
    const char *plain[] = {"--http-addr", "127.0.0.1:0", NULL};
    e2e_start(&n2, 1, plain);
    struct vsc *c = e2e_login(&n2, "iggy", "iggy");
    OK(c, vsc_stream_create(c, "w", NULL));
    struct vsc_id sid = vsc_id_name("w"), tid = vsc_id_name("t");
    struct vsc_topic top;
    OK(c, vsc_topic_create(c, &sid, 1, "t", NULL, 0, &top));
    vsc_topic_fini(&top);
    vsc_destroy(c);
    ck_assert_int_eq(vs_node_stop(&n2, 20000), 0);
    const char *extra[] = {"--http-addr",
                           "127.0.0.1:0",
                           "--disk-watermark-bytes",
                           "4000000T",
                           "--metrics-max-partition-series",
                           "0",
                           NULL};
    e2e_start(&n2, 1, extra);
    c = e2e_login(&n2, "iggy", "iggy");
    ck_assert_int_eq(vsc_stream_create(c, "w2", NULL), VS_E_DISK_FULL);
    struct vsc_msg m;
    memset(&m, 0, sizeof m);
    m.payload = (uint8_t *)"x";
    m.payload_len = 1;
    struct vsc_partitioning part = vsc_part_id(0);
    ck_assert_int_eq(vsc_send(c, &sid, &tid, &part, &m, 1, NULL), 4006);
    vsc_destroy(c);
    struct vs_node keep = node;
    node = n2;
    char *body = scrape();
    node = keep;
    ck_assert(value_of(body, "vstream_disk_watermark_reached") == 1);
    /* per-partition series capped at 0: the one partition is omitted */
    ck_assert(value_of(body, "vstream_partition_series_omitted") == 1);
    ck_assert_ptr_null(strstr(body, "vstream_partition_messages{"));
    ck_assert(value_of(body, "vstream_requests_total{operation="
                             "\"SendMessages\",code=\"4006\"}") == 1);
    free(body);
    vs_node_cleanup(&n2);
}
END_TEST

static Suite *
http_suite(void)
{
    Suite *s = suite_create("http");
    TCase *t = tcase_create("http");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_metrics_parse);
    tcase_add_test(t, test_counters_move);
    tcase_add_test(t, test_health);
    tcase_add_test(t, test_malformed_refused);
    tcase_add_test(t, test_disk_watermark);
    tcase_add_test(t, test_cli_stats_json);
    tcase_set_timeout(t, 180);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(http_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
