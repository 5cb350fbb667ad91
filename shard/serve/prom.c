/*
 * shard/serve/prom.c - Prometheus exposition and readiness; see prom.h.
 *
 * Families (all prefixed vstream_, units in the name):
 *  - the scalar table of common/metrics.h, summed over the processes;
 *  - requests_total{operation,code} (non-zero series only) and
 *    request_duration_seconds{class} histograms, fsync_duration_seconds;
 *  - shard_up{shard}, shard_restarts_total{shard} (spawns - 1), node_ready,
 *    process_resident_memory_bytes / process_cpu_seconds_total{shard}
 *    (from /proc: the only reads outside the segment), node_info{name,
 *    replica};
 *  - vsr_link_state / _sent_bytes_total / _received_bytes_total{peer,
 *    name} for each peer of replica_addrs (name: its node name);
 *  - data_links_up{shard}, data_link_beats_sent_total /
 *    _beats_received_total / _refused_total{shard} and
 *    data_link_state / _sent_bytes_total / _received_bytes_total
 *    {shard,peer}: the data shards' links (read from each shard's block);
 *  - ipc_ring_queued_bytes{dst} (bytes published and not yet consumed
 *    towards each process);
 *  - partition_messages / partition_size_bytes{stream,topic,partition}
 *    for every live partition (bounded by the partitions table).
 * Invariants: reads only (relaxed loads of single-writer slots, acquire
 * loads of ring positions, seqlocked stats entries); the left-right read
 * section only copies partition ids and never spans a call that blocks.
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "common/mem.h"
#include "common/metrics.h"
#include "common/names.h"
#include "ipc/metrics.h"
#include "ipc/ring.h"
#include "ipc/stats.h"
#include "shard/meta/state.h"
#include "shard/serve/prom.h"

int
serve_node_ready(const struct vs_shard_ctx *ctx, char *why, size_t len)
{
    const struct vs_seg *seg = ctx->seg;
    if (atomic_load_explicit(&seg->hdr->stopping, memory_order_relaxed)) {
        snprintf(why, len, "node is stopping");
        return 0;
    }
    /* acquire: pairs with the child's release store of ready */
    if (!atomic_load_explicit(&seg_proc(seg, 0)->ready, memory_order_acquire)) {
        snprintf(why, len,
                 "shard 0 is not serving (booting, recovering "
                 "or restarting)");
        return 0;
    }
    for (uint32_t i = 1; i < seg->hdr->n_procs; i++)
        if (!atomic_load_explicit(&seg_proc(seg, i)->ready,
                                  memory_order_acquire)) {
            snprintf(why, len, "data shard %u is not serving", i);
            return 0;
        }
    if (ctx->cfg->replica_addrs[0] != '\0' &&
        metrics_read(seg, 0, VS_M_VSR_STATUS) != 1) {
        snprintf(why, len, "metadata group is not in a normal view");
        return 0;
    }
    snprintf(why, len, "serving");
    return 1;
}

static void
family(struct evbuffer *out, const char *name, const char *type,
       const char *help)
{
    evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                        type);
}

static void
render_scalars(const struct vs_seg *seg, struct evbuffer *out)
{
    uint32_t n;
    const struct vs_metric_desc *d = vs_metrics_scalars(&n);
    for (uint32_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(d[i].name, d[i - 1].name) != 0)
            family(out, d[i].name,
                   d[i].kind == VS_MK_COUNTER ? "counter" : "gauge", d[i].help);
        uint64_t v = metrics_sum(seg, i);
        if (d[i].labels[0])
            evbuffer_add_printf(out, "%s{%s} %" PRIu64 "\n", d[i].name,
                                d[i].labels, v);
        else
            evbuffer_add_printf(out, "%s %" PRIu64 "\n", d[i].name, v);
    }
}

static void
render_hist(const struct vs_seg *seg, struct evbuffer *out, const char *name,
            const char *labels, uint32_t base)
{
    uint64_t cum = 0;
    const char *sep = labels[0] ? "," : "";
    for (uint32_t b = 0; b <= VS_MH_BOUNDS; b++) {
        cum += metrics_sum(seg, base + b);
        if (b < VS_MH_BOUNDS)
            evbuffer_add_printf(out, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n",
                                name, labels, sep,
                                (double)vs_metrics_bound_us(b) / 1e6, cum);
        else
            evbuffer_add_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n",
                                name, labels, sep, cum);
    }
    uint64_t sum_us = metrics_sum(seg, base + VS_MH_BOUNDS + 1);
    /* _count is the +Inf bucket: the same loads, so they always agree */
    if (labels[0]) {
        evbuffer_add_printf(out, "%s_sum{%s} %.6f\n", name, labels,
                            (double)sum_us / 1e6);
        evbuffer_add_printf(out, "%s_count{%s} %" PRIu64 "\n", name, labels,
                            cum);
    } else {
        evbuffer_add_printf(out, "%s_sum %.6f\n", name, (double)sum_us / 1e6);
        evbuffer_add_printf(out, "%s_count %" PRIu64 "\n", name, cum);
    }
}

static void
render_requests(const struct vs_seg *seg, struct evbuffer *out)
{
    family(out, "vstream_requests_total", "counter",
           "Client requests answered, by operation and result code");
    for (uint32_t op = 0; op < VS_MO_COUNT; op++)
        for (uint32_t c = 0; c < VS_MR_COUNT; c++) {
            uint64_t v = metrics_sum(seg, VS_M_REQ + op * VS_MR_COUNT + c);
            if (v == 0)
                continue;
            evbuffer_add_printf(
                out,
                "vstream_requests_total{operation=\"%s\",code=\"%s\"} %" PRIu64
                "\n",
                vs_metrics_op_name(op), vs_metrics_code_name(c), v);
        }
    family(out, "vstream_request_duration_seconds", "histogram",
           "Request latency from dispatch to reply, by operation class");
    for (uint32_t k = 0; k < VS_MC_COUNT; k++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "class=\"%s\"",
                 vs_metrics_class_name((enum vs_metric_class)k));
        render_hist(seg, out, "vstream_request_duration_seconds", labels,
                    VS_M_HIST_REQ + k * VS_MH_SLOTS);
    }
    family(out, "vstream_fsync_duration_seconds", "histogram",
           "fsync and directory fsync latency (WAL, snapshots, segments)");
    render_hist(seg, out, "vstream_fsync_duration_seconds", "",
                VS_M_HIST_FSYNC);
}

/* Resident memory and CPU time of each shard process, from /proc (a
 * process that is not running has no series). */
static void
render_proc_usage(const struct vs_seg *seg, struct evbuffer *out)
{
    uint32_t n = seg->hdr->n_procs;
    long page = sysconf(_SC_PAGESIZE), tck = sysconf(_SC_CLK_TCK);
    uint64_t rss[VS_SEG_MAX_PROCS], cpu[VS_SEG_MAX_PROCS];
    int have[VS_SEG_MAX_PROCS];
    for (uint32_t i = 0; i < n; i++) {
        have[i] = 0;
        int32_t pid =
            atomic_load_explicit(&seg_proc(seg, i)->pid, memory_order_relaxed);
        if (pid <= 0)
            continue;
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
        FILE *f = fopen(path, "r");
        unsigned long long size = 0, res = 0;
        int ok = f != NULL && fscanf(f, "%llu %llu", &size, &res) == 2;
        if (f != NULL)
            fclose(f);
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = ok ? fopen(path, "r") : NULL;
        size_t len = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f != NULL)
            fclose(f);
        buf[len] = '\0';
        /* fields after the ")" closing the command name: state is field
         * 3, utime 14, stime 15 */
        const char *p = strrchr(buf, ')');
        unsigned long long ut = 0, st = 0;
        if (!ok || p == NULL ||
            sscanf(p + 2,
                   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                   &st) != 2)
            continue;
        have[i] = 1;
        rss[i] = (uint64_t)res * (uint64_t)(page > 0 ? page : 4096);
        cpu[i] = ut + st;
    }
    family(out, "vstream_process_resident_memory_bytes", "gauge",
           "Resident memory of the shard process");
    for (uint32_t i = 0; i < n; i++)
        if (have[i])
            evbuffer_add_printf(out,
                                "vstream_process_resident_memory_bytes{shard="
                                "\"%u\"} %" PRIu64 "\n",
                                i, rss[i]);
    family(out, "vstream_process_cpu_seconds_total", "counter",
           "CPU time (user + system) of the shard process's current "
           "incarnation");
    for (uint32_t i = 0; i < n; i++)
        if (have[i])
            evbuffer_add_printf(out,
                                "vstream_process_cpu_seconds_total{shard="
                                "\"%u\"} %.2f\n",
                                i,
                                (double)cpu[i] / (double)(tck > 0 ? tck : 100));
}

static void
render_procs(const struct vs_shard_ctx *ctx, struct evbuffer *out)
{
    const struct vs_seg *seg = ctx->seg;
    uint32_t n = seg->hdr->n_procs;
    family(out, "vstream_shard_up", "gauge",
           "1 while the shard process serves (shard 0 = metadata)");
    for (uint32_t i = 0; i < n; i++)
        evbuffer_add_printf(out, "vstream_shard_up{shard=\"%u\"} %u\n", i,
                            atomic_load_explicit(&seg_proc(seg, i)->ready,
                                                 memory_order_acquire) != 0);
    family(out, "vstream_shard_restarts_total", "counter",
           "Times the supervisor restarted the shard process");
    for (uint32_t i = 0; i < n; i++) {
        uint64_t inc = atomic_load_explicit(&seg_proc(seg, i)->incarnation,
                                            memory_order_relaxed);
        evbuffer_add_printf(out,
                            "vstream_shard_restarts_total{shard=\"%u\"} "
                            "%" PRIu64 "\n",
                            i, inc > 0 ? inc - 1 : 0);
    }
    render_proc_usage(seg, out);
    char why[128];
    family(out, "vstream_node_ready", "gauge",
           "1 when the node serves clients (as /health/ready)");
    evbuffer_add_printf(out, "vstream_node_ready %d\n",
                        serve_node_ready(ctx, why, sizeof(why)));
    struct vs_names nn;
    (void)vs_names_resolve(ctx->cfg, &nn, NULL, 0); /* checked at load */
    family(out, "vstream_node_info", "gauge",
           "Always 1: this node's name and replica id");
    evbuffer_add_printf(out,
                        "vstream_node_info{name=\"%s\",replica=\"%u\"} 1\n",
                        vs_names_self(ctx->cfg, &nn), ctx->cfg->replica_id);
    family(out, "vstream_ipc_ring_queued_bytes", "gauge",
           "Bytes published on IPC rings towards a process and not yet "
           "consumed");
    for (uint32_t dst = 0; dst < n; dst++) {
        uint64_t q = 0;
        for (uint32_t src = 0; src < n; src++) {
            if (src == dst)
                continue;
            size_t len;
            struct vs_ring_shm *r = seg_ring_region(seg, src, dst, &len);
            /* acquire: pairs with the producer's/consumer's stores */
            uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
            uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
            q += h >= t ? h - t : 0;
        }
        evbuffer_add_printf(
            out, "vstream_ipc_ring_queued_bytes{dst=\"%u\"} %" PRIu64 "\n", dst,
            q);
    }
}

/* Entries of replica_addrs (0 on a one-replica node). */
static uint32_t
prom_replicas(const struct vs_shard_ctx *ctx)
{
    const char *addrs = ctx->cfg->replica_addrs;
    uint32_t n = 0;
    if (addrs[0] != '\0') {
        n = 1;
        for (const char *p = addrs; *p; p++)
            n += *p == ',';
    }
    return n;
}

/* Replica links: one series per peer of replica_addrs (none on a
 * one-replica node). */
static void
render_links(const struct vs_shard_ctx *ctx, struct evbuffer *out)
{
    uint32_t n = prom_replicas(ctx);
    if (n > VS_M_LINKS)
        n = VS_M_LINKS;
    static const char *const names[3] = {
        "vstream_vsr_link_state",
        "vstream_vsr_link_sent_bytes_total",
        "vstream_vsr_link_received_bytes_total",
    };
    static const char *const helps[3] = {
        "Replica link to the peer: 0 down, 1 connecting, 2 authenticated",
        "Bytes sent to the peer replica",
        "Bytes received from the peer replica",
    };
    struct vs_names nn;
    (void)vs_names_resolve(ctx->cfg, &nn, NULL, 0); /* checked at load */
    for (uint32_t k = 0; k < 3; k++) {
        family(out, names[k], k == 0 ? "gauge" : "counter", helps[k]);
        for (uint32_t peer = 0; peer < n; peer++) {
            if (peer == ctx->cfg->replica_id)
                continue;
            evbuffer_add_printf(
                out, "%s{peer=\"%u\",name=\"%s\"} %" PRIu64 "\n", names[k],
                peer, peer < nn.count ? nn.name[peer] : "",
                metrics_sum(ctx->seg, VS_M_LINK_STATE(peer) + k));
        }
    }
}

/* Data shards' links: per shard (its own block), per peer. */
static void
render_data_links(const struct vs_shard_ctx *ctx, struct evbuffer *out)
{
    uint32_t n = prom_replicas(ctx);
    if (n < 2)
        return;
    if (n > VS_M_LINKS)
        n = VS_M_LINKS;
    static const struct {
        const char *name, *type, *help;
        uint32_t slot;
    } shard_fam[4] = {
        {"vstream_data_links_up", "gauge",
         "Data links of the shard authenticated now", VS_M_DLINK_UP},
        {"vstream_data_link_beats_sent_total", "counter",
         "Coalesced group beat frames sent by the shard", VS_M_DLINK_BEATS_OUT},
        {"vstream_data_link_beats_received_total", "counter",
         "Coalesced group beat frames received by the shard",
         VS_M_DLINK_BEATS_IN},
        {"vstream_data_link_refused_total", "counter",
         "Data link handshakes and frames the shard refused",
         VS_M_DLINK_REFUSED},
    };
    for (uint32_t k = 0; k < 4; k++) {
        family(out, shard_fam[k].name, shard_fam[k].type, shard_fam[k].help);
        for (uint32_t s = 1; s <= ctx->k; s++)
            evbuffer_add_printf(out, "%s{shard=\"%u\"} %" PRIu64 "\n",
                                shard_fam[k].name, s,
                                metrics_read(ctx->seg, s, shard_fam[k].slot));
    }
    static const char *const names[3] = {
        "vstream_data_link_state",
        "vstream_data_link_sent_bytes_total",
        "vstream_data_link_received_bytes_total",
    };
    static const char *const helps[3] = {
        "Data link to the peer's shard: 0 down, 1 connecting, 2 up",
        "Bytes the shard sent to the peer's same shard",
        "Bytes the shard received from the peer's same shard",
    };
    for (uint32_t k = 0; k < 3; k++) {
        family(out, names[k], k == 0 ? "gauge" : "counter", helps[k]);
        for (uint32_t s = 1; s <= ctx->k; s++)
            for (uint32_t peer = 0; peer < n; peer++) {
                if (peer == ctx->cfg->replica_id)
                    continue;
                evbuffer_add_printf(
                    out, "%s{shard=\"%u\",peer=\"%u\"} %" PRIu64 "\n", names[k],
                    s, peer,
                    metrics_read(ctx->seg, s, VS_M_DLINK_STATE(peer) + k));
            }
    }
}

struct prom_part {
    uint32_t stream, topic, id;
    uint64_t created_op;
};

static void
render_partitions(const struct vs_shard_ctx *ctx, struct vs_lr *lr,
                  struct evbuffer *out)
{
    const struct vs_stats *st = stats_process();
    /* the copy is bounded by the config and allocated before the read
     * section (which must not block) */
    uint32_t max = ctx->cfg->metrics_max_partition_series, n = 0;
    struct prom_part *parts = max ? vs_xcalloc(max, sizeof(*parts)) : NULL;
    const void *state = lr_read_begin(lr, NULL);
    const struct meta_hdr *h = state;
    uint32_t cap = h->caps.partitions;
    uint32_t count = h->count[META_TAB_PARTITION];
    const struct meta_partition *tab = meta_tab_c(state, META_TAB_PARTITION);
    for (uint32_t i = 0; i < cap && n < count && n < max; i++)
        if (tab[i].in_use)
            parts[n++] = (struct prom_part){tab[i].stream_id, tab[i].topic_id,
                                            tab[i].id, tab[i].created_op};
    lr_read_end(lr);
    uint32_t omitted = count - n;
    family(out, "vstream_partition_series_omitted", "gauge",
           "Partitions left out of the per-partition series "
           "(metrics_max_partition_series)");
    evbuffer_add_printf(out, "vstream_partition_series_omitted %u\n", omitted);
    family(out, "vstream_partition_messages", "gauge",
           "Messages stored in the partition");
    for (uint32_t i = 0; i < n; i++) {
        struct vs_stats_values v;
        (void)stats_lookup(
            st, meta_group_id(parts[i].stream, parts[i].topic, parts[i].id),
            parts[i].created_op, &v);
        evbuffer_add_printf(out,
                            "vstream_partition_messages{stream=\"%u\","
                            "topic=\"%u\",partition=\"%u\"} %" PRIu64 "\n",
                            parts[i].stream, parts[i].topic, parts[i].id,
                            v.messages_count);
    }
    family(out, "vstream_partition_size_bytes", "gauge",
           "Bytes stored in the partition's segments");
    for (uint32_t i = 0; i < n; i++) {
        struct vs_stats_values v;
        (void)stats_lookup(
            st, meta_group_id(parts[i].stream, parts[i].topic, parts[i].id),
            parts[i].created_op, &v);
        evbuffer_add_printf(out,
                            "vstream_partition_size_bytes{stream=\"%u\","
                            "topic=\"%u\",partition=\"%u\"} %" PRIu64 "\n",
                            parts[i].stream, parts[i].topic, parts[i].id,
                            v.size_bytes);
    }
    free(parts);
}

void
serve_prom_render(const struct vs_shard_ctx *ctx, struct vs_lr *lr,
                  struct evbuffer *out)
{
    render_scalars(ctx->seg, out);
    render_requests(ctx->seg, out);
    render_procs(ctx, out);
    render_links(ctx, out);
    render_data_links(ctx, out);
    render_partitions(ctx, lr, out);
}
