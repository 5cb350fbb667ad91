/*
 * tests/bench/bench_cluster_create.c - what a CreateTopic of many
 * replicated partitions costs a real 3-node cluster (partition
 * replication on, one data shard per node unless told otherwise): the
 * CreateTopic round trip, then the time until every node's data shard
 * has opened every partition's group (counted from the nodes' logs:
 * "group ... open"), both from the request. The nodes run the vstreamd
 * of $VSTREAMD (default ./vstreamd), so two builds compare on one
 * machine.
 * Usage: bench_cluster_create [partitions] [shards] [runs]
 *        (not run by make check; the cluster's dirs are removed after)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/errors.h"
#include "tests/integration/cluster.h"
#include "tools/client/vsc.h"

static uint64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Groups node i's log says it opened. */
static unsigned
groups_open(const struct vs_node *n)
{
    FILE *f = fopen(n->log_file, "re");
    if (f == NULL)
        return 0;
    char line[1024];
    unsigned k = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strstr(line, ": group ") != NULL &&
            strstr(line, " open, replica ") != NULL)
            k++;
    fclose(f);
    return k;
}

static int
run_once(uint32_t parts, const char *shards, unsigned run)
{
    const char *extra[] = {"--partition-replication", "true", "--shards",
                           shards, NULL};
    struct vs_cluster cl;
    if (vs_cluster_init(&cl, 3) != 0)
        return 1;
    cl.extra = extra;
    int rc = vs_cluster_start(&cl, VS_CLUSTER_START_MS);
    struct vsc *c = rc == 0 ? vs_cluster_login(&cl, 0, 20000) : NULL;
    if (c == NULL) {
        fprintf(stderr, "bench_cluster_create: cluster start: %d\n", rc);
        vs_cluster_cleanup(&cl);
        return 1;
    }
    struct vsc_stream so;
    rc = vsc_stream_create(c, "bench", &so);
    if (rc == 0)
        vsc_stream_fini(&so);
    struct vs_wbuf o;
    vs_wbuf_init(&o);
    vsc_opt_replication_factor(&o, 3);
    struct vsc_id sid = vsc_id_name("bench");
    struct vsc_topic to;
    uint64_t t0 = now_ms();
    rc = vsc_topic_create(c, &sid, parts, "t", o.data, o.len, &to);
    uint64_t t1 = now_ms();
    vs_wbuf_fini(&o);
    if (rc != 0) {
        fprintf(stderr, "bench_cluster_create: CreateTopic: %d %s\n", rc,
                vsc_last_error(c));
        vsc_destroy(c);
        vs_cluster_cleanup(&cl);
        return 1;
    }
    vsc_topic_fini(&to);
    uint64_t done[3] = {0, 0, 0}, end = t0 + 300000;
    unsigned open[3] = {0, 0, 0};
    while (now_ms() < end && (!done[0] || !done[1] || !done[2])) {
        for (unsigned i = 0; i < 3; i++)
            if (!done[i] && (open[i] = groups_open(&cl.node[i])) >= parts)
                done[i] = now_ms();
        usleep(20 * 1000);
    }
    uint64_t last = 0;
    for (unsigned i = 0; i < 3; i++)
        last = done[i] > last ? done[i] : last;
    if (!done[0] || !done[1] || !done[2])
        printf("run %u: partitions %u: CreateTopic %llu ms; groups open "
               "%u/%u/%u after 300 s (incomplete)\n",
               run, parts, (unsigned long long)(t1 - t0), open[0], open[1],
               open[2]);
    else
        printf("run %u: partitions %u shards %s: CreateTopic reply %llu ms, "
               "every group open on all 3 nodes %llu ms (nodes %llu / %llu / "
               "%llu ms)\n",
               run, parts, shards, (unsigned long long)(t1 - t0),
               (unsigned long long)(last - t0),
               (unsigned long long)(done[0] - t0),
               (unsigned long long)(done[1] - t0),
               (unsigned long long)(done[2] - t0));
    vsc_destroy(c);
    vs_cluster_cleanup(&cl);
    return 0;
}

int
main(int argc, char **argv)
{
    uint32_t parts = argc > 1 ? (uint32_t)atol(argv[1]) : 1000;
    const char *shards = argc > 2 ? argv[2] : "1";
    unsigned runs = argc > 3 ? (unsigned)atoi(argv[3]) : 1;
    if (parts == 0 || runs == 0 || vs_harness_init() != 0) {
        fprintf(stderr, "usage: bench_cluster_create [partitions >= 1] "
                        "[shards] [runs >= 1]\n");
        return 1;
    }
    for (unsigned r = 0; r < runs; r++)
        if (run_once(parts, shards, r + 1) != 0)
            return 1;
    return 0;
}
