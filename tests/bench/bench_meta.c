/*
 * tests/bench/bench_meta.c - micro-benchmark of shard/meta (not run by
 * make check): apply() ops/s while building a state of S streams x T
 * topics x P partitions, snapshot encode/decode MB/s and size of that
 * state, and the memory of one instance at the production default
 * capacities.
 * Usage: bench_meta [streams topics partitions]   (default 10000 10 10)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/mem.h"
#include "shard/meta/apply.h"
#include "shard/meta/ops.h"
#include "shard/meta/snapshot_codec.h"
#include "shard/meta/state.h"

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t opn;

static void
apply(void *st, const struct meta_op *op, struct meta_result *res,
      struct vs_wbuf *w)
{
    vs_wbuf_reset(w);
    if (meta_op_encode(op, w) != 0)
        abort();
    struct meta_op_ctx c = {0};
    c.op = ++opn;
    c.timestamp = 1000 + opn;
    c.operation = op->operation;
    if (meta_apply(st, &c, w->data, w->len, res) != 0) {
        fprintf(stderr, "op %llu failed: %u\n", (unsigned long long)opn,
                res->code);
        exit(1);
    }
}

int
main(int argc, char **argv)
{
    uint32_t ns = 10000, nt = 10, np = 10;
    if (argc == 4) {
        ns = (uint32_t)atoi(argv[1]);
        nt = (uint32_t)atoi(argv[2]);
        np = (uint32_t)atoi(argv[3]);
    }
    struct vs_config cfg;
    vs_config_init(&cfg);
    char err[256];
    if (vs_config_finalize(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    struct meta_caps caps;
    meta_caps_from_config(&caps, &cfg);
    size_t sz = meta_state_size(&caps);
    printf("default capacities: streams %u topics %u partitions %u groups %u "
           "members %u users %u pats %u clients %u (slots %u)\n",
           caps.streams, caps.topics, caps.partitions, caps.groups,
           caps.members, caps.users, caps.pats, caps.clients,
           caps.session_slots);
    printf("instance size at default capacities: %.1f MiB (x2 for "
           "left-right)\n",
           (double)sz / (1024.0 * 1024.0));
    if (caps.streams < ns)
        caps.streams = ns;
    if (caps.topics < ns * nt)
        caps.topics = ns * nt;
    if (caps.partitions < ns * nt * np)
        caps.partitions = ns * nt * np;
    sz = meta_state_size(&caps);
    void *st = vs_xcalloc(1, sz);
    meta_state_init(st, &caps);
    struct meta_result res;
    meta_result_init(&res);
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    struct meta_op *op = vs_xmalloc(sizeof(*op));
    meta_op_init(op, VS_OP_GENESIS);
    meta_op_set_name(op, "iggy", 4);
    meta_op_set_secret(op, "$argon2id$x", 11);
    apply(st, op, &res, &w);

    double t0 = now();
    uint64_t n0 = opn;
    char name[32];
    for (uint32_t s = 0; s < ns; s++) {
        meta_op_init(op, VS_OP_CREATE_STREAM);
        int l = snprintf(name, sizeof(name), "stream-%u", s);
        meta_op_set_name(op, name, (size_t)l);
        apply(st, op, &res, &w);
        for (uint32_t t = 0; t < nt; t++) {
            meta_op_init(op, VS_OP_CREATE_TOPIC);
            meta_ident_id(&op->stream, s);
            l = snprintf(name, sizeof(name), "topic-%u", t);
            meta_op_set_name(op, name, (size_t)l);
            op->count = np;
            op->opts.compression = 1;
            op->opts.message_expiry = UINT64_MAX;
            op->opts.max_topic_size = UINT64_MAX;
            apply(st, op, &res, &w);
        }
    }
    double t1 = now();
    uint64_t nops = opn - n0;
    printf("apply (create stream / create topic with %u partitions): %llu "
           "ops in %.2f s = %.0f ops/s\n",
           np, (unsigned long long)nops, t1 - t0, (double)nops / (t1 - t0));
    /* small ops on a big state: rename stream (update) */
    t0 = now();
    n0 = opn;
    for (uint32_t i = 0; i < 200000; i++) {
        meta_op_init(op, VS_OP_UPDATE_STREAM);
        meta_ident_id(&op->stream, i % ns);
        int l = snprintf(name, sizeof(name), "r%u-%u", i % ns, i);
        meta_op_set_name(op, name, (size_t)l);
        apply(st, op, &res, &w);
    }
    t1 = now();
    nops = opn - n0;
    printf("apply (update stream on the full state): %.0f ops/s\n",
           (double)nops / (t1 - t0));

    struct vs_wbuf snap;
    vs_wbuf_init(&snap);
    t0 = now();
    meta_snapshot_encode(st, NULL, &snap);
    t1 = now();
    double mb = (double)snap.len / 1e6;
    printf("snapshot of %u x %u x %u: %.1f MB; encode %.3f s = %.0f MB/s\n", ns,
           nt, np, mb, t1 - t0, mb / (t1 - t0));
    void *st2 = vs_xcalloc(1, sz);
    meta_state_init(st2, &caps);
    t0 = now();
    enum meta_snap_status s =
        meta_snapshot_decode(snap.data, snap.len, st2, NULL);
    t1 = now();
    printf("decode: %s, %.3f s = %.0f MB/s\n", meta_snap_status_str(s), t1 - t0,
           mb / (t1 - t0));
    struct vs_wbuf snap2;
    vs_wbuf_init(&snap2);
    meta_snapshot_encode(st2, NULL, &snap2);
    printf("re-encode identical: %s\n",
           snap2.len == snap.len && !memcmp(snap2.data, snap.data, snap.len)
               ? "yes"
               : "NO");
    t0 = now();
    meta_state_copy(st2, st);
    t1 = now();
    printf("instance size for this state's caps: %.1f MiB; memcpy copy "
           "%.3f s\n",
           (double)sz / (1024.0 * 1024.0), t1 - t0);
    vs_wbuf_fini(&snap);
    vs_wbuf_fini(&snap2);
    vs_wbuf_fini(&w);
    meta_result_fini(&res);
    free(op);
    free(st);
    free(st2);
    return 0;
}
