/*
 * tests/bench/bench_dataserve.c - end-to-end data-plane throughput of a
 * real vstreamd (not run by make check): send-only, then poll-only, of
 * 1000-byte messages in batches of 1000 over raw sockets, for 1 and 2 data
 * shards, with fsync per batch (fsync_policy every_batch) and with the
 * interval policy; one client process per data shard, each on its own
 * partition (so with 2 shards some sends are forwarded between shards).
 * In the same run, a raw write + fdatasync loop of the same batch size on
 * the same filesystem gives the ratio for the fsync-per-batch figure.
 *
 * Usage: VSTREAMD=/path/vstreamd bench_dataserve [BATCHES_PER_CLIENT]
 * Bench code only (reads the clock; the server never does here).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shard/data/batch.h"
#include "tests/integration/harness.h"
#include "tests/integration/rawclient.h"

#define MSGS    1000u
#define MSG_LEN 1000u

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
read_full(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t k = read(fd, b, n);
        if (k <= 0) {
            if (k == -1 && errno == EINTR)
                continue;
            return -1;
        }
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Reads one reply; returns its status, body into *body (malloc'd). */
static int64_t
read_reply(int fd, uint8_t **body, size_t *blen)
{
    uint8_t h[256];
    if (read_full(fd, h, 256) != 0)
        return -1;
    uint32_t size, status;
    memcpy(&size, h + 48, 4);
    memcpy(&status, h + 216, 4);
    if (size < 256)
        return -1;
    *blen = size - 256;
    *body = malloc(*blen + 1);
    if (read_full(fd, *body, *blen) != 0)
        return -1;
    return status;
}

struct sess {
    int fd;
    uint64_t client, session, request;
};

static int
login(struct sess *s, const char *addr, uint64_t client)
{
    memset(s, 0, sizeof(*s));
    s->fd = vs_connect(addr);
    if (s->fd < 0)
        return -1;
    s->client = client;
    size_t n;
    uint8_t *b = rc_login_body(11264, "iggy", "iggy", &n);
    rc_send(s->fd, 1, 0, b, (uint32_t)n, client, 0, 0);
    free(b);
    uint8_t *body;
    size_t bl;
    if (read_reply(s->fd, &body, &bl) != 0 || bl < 16)
        return -1;
    memcpy(&s->session, body + 8, 8);
    free(body);
    return 0;
}

static int
meta(struct sess *s, uint8_t op, const void *b, size_t n)
{
    s->request++;
    rc_send(s->fd, op, 0, b, (uint32_t)n, s->client, s->request, s->session);
    uint8_t *body;
    size_t bl;
    int64_t st = read_reply(s->fd, &body, &bl);
    int ok = st == 0 && bl >= 4 && body[0] == 0;
    free(body);
    return ok ? 0 : -1;
}

static uint8_t *
make_send(uint32_t part, size_t *len)
{
    const uint8_t **pl = calloc(MSGS, sizeof(*pl));
    uint32_t *plen = calloc(MSGS, sizeof(*plen));
    uint8_t *payload = malloc(MSG_LEN);
    for (uint32_t i = 0; i < MSG_LEN; i++)
        payload[i] = (uint8_t)(i * 7 + 3);
    for (uint32_t i = 0; i < MSGS; i++) {
        pl[i] = payload;
        plen[i] = MSG_LEN;
    }
    size_t cap = BATCH_HEADER_SIZE + MSGS * (BATCH_FRAME_SIZE + MSG_LEN);
    uint32_t mlen = 6 + 6 + 2 + 4 + 4;
    uint8_t *b = malloc(4 + mlen + cap);
    size_t n = 0;
    uint32_t zero = 0, msgs = MSGS;
    memcpy(b, &mlen, 4);
    n = 4;
    b[n++] = 1;
    b[n++] = 4;
    memcpy(b + n, &zero, 4);
    n += 4;
    b[n++] = 1;
    b[n++] = 4;
    memcpy(b + n, &zero, 4);
    n += 4;
    b[n++] = 2;
    b[n++] = 4;
    memcpy(b + n, &part, 4);
    n += 4;
    memcpy(b + n, &msgs, 4);
    n += 4;
    n += batch_build(b + n, cap, 1, MSGS, pl, plen, NULL, NULL, NULL);
    free(pl);
    free(plen);
    free(payload);
    *len = n;
    return b;
}

/* One client: `batches` sends (mode 0) or polls (mode 1) of partition p.
 * Exits 0 on success. */
static _Noreturn void
client(const char *addr, uint64_t cid, uint32_t part, uint32_t batches,
       int mode)
{
    struct sess s;
    if (login(&s, addr, cid) != 0)
        _exit(2);
    size_t len;
    uint8_t *send = make_send(part, &len);
    uint64_t next = 0;
    for (uint32_t i = 0; i < batches; i++) {
        if (mode == 0) {
            rc_send(s.fd, 160, 0, send, (uint32_t)len, s.client, 1, s.session);
        } else {
            uint8_t q[64];
            size_t n = 0;
            uint32_t z = 0, cnt = MSGS;
            q[n++] = 1;
            q[n++] = 1;
            q[n++] = 4;
            memcpy(q + n, &z, 4);
            n += 4;
            q[n++] = 1;
            q[n++] = 4;
            memcpy(q + n, &z, 4);
            n += 4;
            q[n++] = 1;
            q[n++] = 4;
            memcpy(q + n, &z, 4);
            n += 4;
            q[n++] = 1;
            memcpy(q + n, &part, 4);
            n += 4;
            q[n++] = 1;
            memcpy(q + n, &next, 8);
            n += 8;
            memcpy(q + n, &cnt, 4);
            n += 4;
            q[n++] = 0;
            rc_send(s.fd, 2, 100, q, (uint32_t)n, s.client, 1, s.session);
        }
        uint8_t *body;
        size_t bl;
        int64_t st = read_reply(s.fd, &body, &bl);
        if (st != 0)
            _exit(3);
        if (mode == 1) {
            uint32_t c;
            memcpy(&c, body + 12, 4);
            if (c != MSGS)
                _exit(4);
            next += c;
        }
        free(body);
    }
    _exit(0);
}

static double
run_clients(const char *addr, uint32_t k, const uint32_t *parts,
            uint32_t batches, int mode)
{
    pid_t pids[8];
    double t0 = now_s();
    for (uint32_t i = 0; i < k; i++) {
        pids[i] = fork();
        if (pids[i] == 0)
            client(addr, 0x100 + i + (uint64_t)mode * 16, parts[i], batches,
                   mode);
    }
    int ok = 1;
    for (uint32_t i = 0; i < k; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            ok = 0;
    }
    double dt = now_s() - t0;
    return ok ? dt : -1;
}

/* Raw write + fdatasync loop of the same batch size. Seconds. */
static double
raw_loop(const char *dir, uint32_t batches)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/raw.bench", dir);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (fd < 0)
        return -1;
    size_t len = BATCH_HEADER_SIZE + MSGS * (BATCH_FRAME_SIZE + MSG_LEN);
    uint8_t *b = malloc(len);
    memset(b, 0x5a, len);
    double t0 = now_s();
    for (uint32_t i = 0; i < batches; i++) {
        if (write(fd, b, len) != (ssize_t)len || fdatasync(fd) != 0)
            break;
    }
    double dt = now_s() - t0;
    close(fd);
    unlink(path);
    free(b);
    return dt;
}

int
main(int argc, char **argv)
{
    uint32_t batches = argc > 1 ? (uint32_t)atoi(argv[1]) : 50;
    if (getenv("VSTREAMD") == NULL) {
        fprintf(stderr, "set VSTREAMD to the vstreamd binary\n");
        return 1;
    }
    vs_harness_init();
    double mb = (double)batches * MSGS * MSG_LEN / 1e6;
    double msgs = (double)batches * MSGS;
    printf("batches of %u x %u B, %u batches per client\n", MSGS, MSG_LEN,
           batches);
    for (uint32_t k = 1; k <= 2; k++) {
        for (int pol = 0; pol < 2; pol++) {
            struct vs_node n;
            if (vs_node_init(&n) != 0)
                return 1;
            char ks[8];
            snprintf(ks, sizeof(ks), "%u", k);
            const char *args[] = {"--shards",
                                  ks,
                                  "--with-default-root-credentials=true",
                                  "--segment-size",
                                  "1G",
                                  "--fsync-policy",
                                  pol ? "interval" : "every_batch",
                                  "--log-level",
                                  "warn",
                                  NULL};
            if (vs_node_start(&n, args, 30000) != 0) {
                fprintf(stderr, "start failed, see %s\n", n.stderr_file);
                vs_node_cleanup(&n);
                return 1;
            }
            struct sess s;
            if (login(&s, n.ready.client, 0x42) != 0)
                return 1;
            uint8_t cs[] = {2, 'b', 's'};
            uint8_t ct[] = {1, 4, 0, 0, 0, 0, 8, 0, 0, 0, 2, 'b', 't'};
            if (meta(&s, 128, cs, sizeof(cs)) || meta(&s, 132, ct, sizeof(ct)))
                return 1;
            close(s.fd);
            /* one partition per client: 0 and 1 */
            uint32_t parts[2] = {0, 1};
            double raw = raw_loop(n.data_dir, batches * k);
            double ts = run_clients(n.ready.client, k, parts, batches, 0);
            double tp = run_clients(n.ready.client, k, parts, batches, 1);
            double rawr = raw > 0 ? (double)batches * k / raw : 0;
            printf("shards %u %-11s send: %7.1f MB/s %9.0f msg/s | poll: "
                   "%7.1f MB/s %9.0f msg/s",
                   k, pol ? "interval" : "every_batch", mb * k / ts,
                   msgs * k / ts, mb * k / tp, msgs * k / tp);
            if (!pol)
                printf(" | raw write+fdatasync %.1f batches/s, send = %.2f "
                       "of raw",
                       rawr, ((double)batches * k / ts) / rawr);
            printf("\n");
            fflush(stdout);
            vs_node_stop(&n, 20000);
            vs_node_cleanup(&n);
        }
    }
    return 0;
}
