/*
 * tools/vstream-bench.c - metadata throughput and latency of a running node.
 *
 * Role: N client threads, each with its own connection and session
 * (tools/client/vsc.h), run a fixed number of metadata operations against
 * a running node and report ops/s and p50/p99/max latency. The default
 * workload alternates CreateStream and DeleteStream of a per-thread name
 * (every op goes through the one-replica commit path: client table,
 * prepare, WAL fsync, apply, publish, reply); `--op read` measures
 * GetStreams (NonReplicated, served by the data shard) for contrast.
 * Not run by make check; the numbers are reported, never asserted.
 * Callers: a user's shell.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "tools/client/vsc.h"

struct bench {
    const char *addr;
    const char *user;
    const char *password;
    uint32_t clients;
    uint32_t ops;
    int read_only;
};

struct worker {
    const struct bench *b;
    uint32_t index;
    uint64_t *lat_ns; /* ops entries */
    uint32_t done;
    int err;
    char msg[512];
    pthread_t th;
};

static void *
bench_worker(void *arg)
{
    struct worker *w = arg;
    struct vsc_opts o;
    struct vsc *c;
    char name[64];
    uint32_t i;
    int rc;
    memset(&o, 0, sizeof o);
    o.addr = w->b->addr;
    c = vsc_create(&o);
    if (c == NULL) {
        w->err = -ENOMEM;
        return NULL;
    }
    rc = vsc_login(c, w->b->user, w->b->password, NULL);
    if (rc != 0)
        goto fail;
    snprintf(name, sizeof name, "bench-%u-%" PRIu64, w->index,
             vs_monotonic_ns() % 1000000007u);
    for (i = 0; i < w->b->ops; i++) {
        uint64_t t0 = vs_monotonic_ns();
        if (w->b->read_only) {
            struct vsc_stream *v;
            size_t n;
            rc = vsc_stream_list(c, &v, &n);
            if (rc == 0)
                free(v);
        } else if (i % 2 == 0) {
            rc = vsc_stream_create(c, name, NULL);
        } else {
            struct vsc_id id = vsc_id_name(name);
            rc = vsc_stream_delete(c, &id);
        }
        if (rc != 0)
            goto fail;
        w->lat_ns[i] = vs_monotonic_ns() - t0;
        w->done++;
    }
    if (!w->b->read_only && w->b->ops % 2 == 1) {
        struct vsc_id id = vsc_id_name(name);
        (void)vsc_stream_delete(c, &id);
    }
    (void)vsc_logout(c);
    vsc_destroy(c);
    return NULL;
fail:
    w->err = rc;
    snprintf(w->msg, sizeof w->msg, "%s", vsc_last_error(c));
    vsc_destroy(c);
    return NULL;
}

static int
bench_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int
bench_usage(void)
{
    fputs("usage: vstream-bench [--addr H:P] [--user U] [--password P]\n"
          "                     [--clients N] [--ops N per client]\n"
          "                     [--op write|read]\n"
          "write: CreateStream/DeleteStream pairs (replicated, fsync'd)\n"
          "read:  GetStreams (NonReplicated)\n"
          "env: VSTREAM_ADDR, VSTREAM_USER, VSTREAM_PASSWORD\n",
          stderr);
    return 1;
}

int
main(int argc, char **argv)
{
    struct bench b;
    struct worker *w;
    uint64_t *all, t0, wall, total = 0;
    uint32_t i, k;
    int failed = 0;

    memset(&b, 0, sizeof b);
    b.addr = getenv("VSTREAM_ADDR");
    b.user = getenv("VSTREAM_USER");
    b.password = getenv("VSTREAM_PASSWORD");
    b.clients = 1;
    b.ops = 2000;
    for (i = 1; i < (uint32_t)argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < (uint32_t)argc ? argv[i + 1] : NULL;
        if (v == NULL)
            return bench_usage();
        if (strcmp(a, "--addr") == 0)
            b.addr = v;
        else if (strcmp(a, "--user") == 0)
            b.user = v;
        else if (strcmp(a, "--password") == 0)
            b.password = v;
        else if (strcmp(a, "--clients") == 0)
            b.clients = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--ops") == 0)
            b.ops = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--op") == 0)
            b.read_only = strcmp(v, "read") == 0;
        else
            return bench_usage();
        i++;
    }
    if (b.addr == NULL)
        b.addr = "127.0.0.1:8090";
    if (b.user == NULL)
        b.user = "iggy";
    if (b.password == NULL)
        b.password = "iggy";
    if (b.clients == 0 || b.clients > 1024 || b.ops == 0 || b.ops > 10000000)
        return bench_usage();

    w = calloc(b.clients, sizeof *w);
    if (w == NULL)
        return 1;
    for (i = 0; i < b.clients; i++) {
        w[i].b = &b;
        w[i].index = i;
        w[i].lat_ns = calloc(b.ops, sizeof *w[i].lat_ns);
        if (w[i].lat_ns == NULL)
            return 1;
    }
    t0 = vs_monotonic_ns();
    for (i = 0; i < b.clients; i++)
        if (pthread_create(&w[i].th, NULL, bench_worker, &w[i]) != 0)
            return 1;
    for (i = 0; i < b.clients; i++)
        pthread_join(w[i].th, NULL);
    wall = vs_monotonic_ns() - t0;

    for (i = 0; i < b.clients; i++) {
        total += w[i].done;
        if (w[i].err != 0) {
            fprintf(stderr, "vstream-bench: client %u: %s\n", i, w[i].msg);
            failed = 1;
        }
    }
    all = calloc(total ? total : 1, sizeof *all);
    if (all == NULL)
        return 1;
    for (i = 0, k = 0; i < b.clients; i++) {
        memcpy(all + k, w[i].lat_ns, w[i].done * sizeof *all);
        k += w[i].done;
    }
    qsort(all, total, sizeof *all, bench_cmp);
    if (total > 0)
        printf("op=%s clients=%u ops=%" PRIu64 " wall=%.3fs ops/s=%.0f "
               "p50=%.1fus p99=%.1fus max=%.1fus\n",
               b.read_only ? "read" : "write", b.clients, total,
               (double)wall / 1e9, (double)total * 1e9 / (double)wall,
               (double)all[total / 2] / 1e3,
               (double)all[(total * 99) / 100] / 1e3,
               (double)all[total - 1] / 1e3);
    for (i = 0; i < b.clients; i++)
        free(w[i].lat_ns);
    free(w);
    free(all);
    return failed ? 2 : 0;
}
