/*
 * tests/integration/check_cluster_ptrim.c - the partition group's own ops
 * beyond sends, on a real 3-node cluster (partition_replication on):
 *  - DeleteSegments on a topic of replication factor 3 (segments of
 *    1 MiB, several sealed): every node deletes the same sealed segments
 *    (the same first offset through every node's polls; the partition's
 *    .log/.vsr files byte-identical on every node, the deleted ones gone
 *    everywhere), and a node restarted afterwards serves the same; a
 *    DeleteSegments of every sealed segment (the watermark at the active
 *    segment's start): every node's polls from offset 0, between sends,
 *    read the active segment alone, no gap, nothing past the commit; then
 *    PurgeTopic: no message left on any node, the same files, offsets
 *    continuing after it;
 *  - a poll's auto-commit through a backup and through the primary: the
 *    stored offset is the group's, readable through every node, and it
 *    survives the SIGKILL of the group's primary node (the survivors read
 *    it and a poll-next continues after it; the killed node restarts and
 *    reads it too).
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/errors.h"
#include "tests/integration/cluster.h"
#include "tests/integration/preplica.h"
#include "tools/client/vsc.h"

static struct vs_cluster cl;
static const char *const extra[] = {"--partition-replication",
                                    "true",
                                    "--shards",
                                    "2",
                                    "--wal-slots",
                                    "1024",
                                    NULL};

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_cluster_init(&cl, 3), 0);
    cl.extra = extra;
    int rc = vs_cluster_start(&cl, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "cluster start: %d", rc);
}

static void
teardown(void)
{
    vs_cluster_cleanup(&cl);
}

/* Stream s, topic t (1 partition, factor 3, segment_size seg or the
 * default); waits until every node lists its replica set; returns the
 * view-0 primary node. */
static unsigned
make_topic(const char *s, const char *t, uint64_t seg)
{
    struct vsc *c = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c);
    struct vsc_stream so;
    int rc = vsc_stream_create(c, s, &so);
    ck_assert_msg(rc == 0, "stream: %d %s", rc, vsc_last_error(c));
    vsc_stream_fini(&so);
    struct vs_wbuf o;
    vs_wbuf_init(&o);
    vsc_opt_replication_factor(&o, 3);
    if (seg)
        vsc_opt_u64(&o, "segment_size", seg);
    struct vsc_id sid = vsc_id_name(s);
    struct vsc_topic to;
    rc = vsc_topic_create(c, &sid, 1, t, o.data, o.len, &to);
    vs_wbuf_fini(&o);
    ck_assert_msg(rc == 0, "topic: %d %s", rc, vsc_last_error(c));
    vsc_topic_fini(&to);
    vsc_destroy(c);
    unsigned primary = 255;
    for (unsigned i = 0; i < 3; i++) {
        struct vsc *h = prep_login_on(&cl, i, 5000);
        struct vsc_id tid = vsc_id_name(t);
        int found = 0;
        uint64_t end = prep_now_ms() + 10000;
        struct vsc_topic_replicas r;
        memset(&r, 0, sizeof(r));
        while (prep_now_ms() < end) {
            rc = vsc_topic_replicas(h, &sid, &tid, &r, &found);
            if (rc == 0 && found)
                break;
            usleep(50 * 1000);
        }
        ck_assert_msg(rc == 0 && found, "node %u: topic %s not listed", i, t);
        ck_assert_uint_eq(r.partitions[0].count, 3);
        primary = r.partitions[0].replicas[0];
        vsc_topic_replicas_fini(&r);
        vsc_destroy(h);
    }
    return primary;
}

/* n messages of `size` bytes (payload "tag-k-j" padded) to partition 0. */
static void
send_batch(struct vsc *c, const char *s, const char *t, unsigned k, unsigned n,
           size_t size)
{
    static char text[100][1024];
    struct vsc_msg m[100];
    ck_assert_uint_le(n, 100);
    ck_assert_uint_le(size, sizeof(text[0]));
    memset(m, 0, sizeof(m));
    for (unsigned j = 0; j < n; j++) {
        memset(text[j], 'a' + (char)(k % 26), size);
        int l = snprintf(text[j], size, "m-%u-%u", k, j);
        text[j][l] = '.';
        m[j].payload = text[j];
        m[j].payload_len = (uint32_t)size;
    }
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    struct vsc_partitioning p = vsc_part_id(0);
    int rc = vsc_send(c, &sid, &tid, &p, m, n, NULL);
    ck_assert_msg(rc == 0, "batch %u: %d %s", k, rc, vsc_last_error(c));
}

/* 1: a failed poll returns UINT32_MAX (a node still starting) */
static int g_tolerant;
static int g_last_rc;

/* A poll of partition 0 by consumer `cid`; returns the count, the first
 * and last offsets. */
static uint32_t
poll_on(struct vsc *c, const char *s, const char *t, uint32_t cid,
        uint8_t strategy, uint64_t value, uint32_t count, int auto_commit,
        uint64_t *first, uint64_t *last)
{
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    struct vsc_id id = vsc_id_num(cid);
    struct vsc_poll_args a;
    memset(&a, 0, sizeof(a));
    a.consumer = vsc_consumer_single(&id);
    a.has_partition = 1;
    a.partition_id = 0;
    a.strategy = strategy;
    a.value = value;
    a.count = count;
    a.auto_commit = auto_commit;
    struct vsc_polled r;
    memset(&r, 0, sizeof(r));
    int rc = vsc_poll(c, &sid, &tid, &a, &r);
    g_last_rc = rc;
    if (rc != 0 && g_tolerant)
        return UINT32_MAX; /* a restarted node not serving yet */
    ck_assert_msg(rc == 0, "poll: %d %s", rc, vsc_last_error(c));
    uint32_t n = (uint32_t)r.n;
    if (n > 0) {
        if (first)
            *first = r.msgs[0].offset;
        if (last)
            *last = r.msgs[n - 1].offset;
    }
    vsc_polled_fini(&r);
    return n;
}

/* Waits (bounded) until node i's first offset is `want` and it holds
 * `total` offsets in all (current offset total - 1). */
static void
wait_first(unsigned i, const char *s, const char *t, uint64_t want,
           uint64_t total, uint32_t ms)
{
    struct vsc *c = prep_login_on(&cl, i, 5000);
    uint64_t end = prep_now_ms() + ms, first = UINT64_MAX, last = 0;
    g_tolerant = 1;
    while (prep_now_ms() < end) {
        first = UINT64_MAX;
        uint32_t n =
            poll_on(c, s, t, 1, VSC_POLL_OFFSET, 0, 1, 0, &first, NULL);
        uint32_t m =
            poll_on(c, s, t, 1, VSC_POLL_OFFSET, total - 1, 1, 0, &last, NULL);
        if (n == 1 && first == want && m == 1 && last == total - 1)
            break;
        usleep(100 * 1000);
    }
    g_tolerant = 0;
    vsc_destroy(c);
    ck_assert_msg(first == want && last == total - 1,
                  "node %u: first offset %llu (want %llu), last %llu, last "
                  "poll status %d",
                  i, (unsigned long long)first, (unsigned long long)want,
                  (unsigned long long)last, g_last_rc);
}

/* The partition directory of node i (the only one under partitions/). */
static void
part_dir_of(unsigned i, char *out, size_t cap)
{
    char top[400];
    snprintf(top, sizeof(top), "%s/partitions", cl.node[i].data_dir);
    DIR *d = opendir(top);
    ck_assert_msg(d != NULL, "%s", top);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[700];
        snprintf(p, sizeof(p), "%s/%s", top, e->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            ck_assert_msg(!found, "two partition dirs on node %u", i);
            snprintf(out, cap, "%s", p);
            found = 1;
        }
    }
    closedir(d);
    ck_assert_msg(found, "no partition dir on node %u", i);
}

/* The segment files (.log, .vsr) of node i's partition, sorted. */
static size_t
seg_files(unsigned i, char names[][64], size_t max, char *dir, size_t cap)
{
    part_dir_of(i, dir, cap);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    size_t n = 0;
    while ((e = readdir(d)) != NULL && n < max) {
        size_t l = strlen(e->d_name);
        if (l > 4 && l < 64 &&
            (strcmp(e->d_name + l - 4, ".log") == 0 ||
             strcmp(e->d_name + l - 4, ".vsr") == 0))
            snprintf(names[n++], 64, "%s", e->d_name);
    }
    closedir(d);
    qsort(names, n, 64, (int (*)(const void *, const void *))strcmp);
    return n;
}

static uint8_t *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long l = ftell(f);
    ck_assert_int_ge(l, 0);
    rewind(f);
    uint8_t *b = malloc((size_t)l + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)l, f), (size_t)l);
    fclose(f);
    *len = (size_t)l;
    return b;
}

/* Every node holds the same segment files with the same bytes; returns
 * how many .log files. */
static size_t
files_identical(void)
{
    static char names[3][64][64];
    char dir[3][700];
    size_t n[3];
    for (unsigned i = 0; i < 3; i++)
        n[i] = seg_files(i, names[i], 64, dir[i], sizeof(dir[i]));
    size_t logs = 0;
    for (unsigned i = 1; i < 3; i++) {
        ck_assert_msg(n[i] == n[0], "node %u has %zu segment files, node 0 %zu",
                      i, n[i], n[0]);
        for (size_t k = 0; k < n[0]; k++)
            ck_assert_msg(strcmp(names[i][k], names[0][k]) == 0,
                          "node %u has %s where node 0 has %s", i, names[i][k],
                          names[0][k]);
    }
    for (size_t k = 0; k < n[0]; k++) {
        char a[800];
        snprintf(a, sizeof(a), "%.699s/%.63s", dir[0], names[0][k]);
        size_t la, lb;
        uint8_t *da = slurp(a, &la);
        for (unsigned i = 1; i < 3; i++) {
            char b[800];
            snprintf(b, sizeof(b), "%.699s/%.63s", dir[i], names[i][k]);
            uint8_t *db = slurp(b, &lb);
            ck_assert_msg(la == lb && memcmp(da, db, la) == 0,
                          "%s differs between nodes 0 and %u", names[0][k], i);
            free(db);
        }
        free(da);
        logs += strstr(names[0][k], ".log") != NULL;
    }
    return logs;
}

/* DeleteSegments [stream][topic][partition u32][count u32] of the
 * `count` oldest sealed segments of partition 0, through node i. */
static void
delete_segments(unsigned i, const char *s, const char *t, uint32_t count)
{
    struct vs_wbuf b;
    vs_wbuf_init(&b);
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    vsc_wr_id(&b, &sid);
    vsc_wr_id(&b, &tid);
    vs_wr_u32(&b, 0);
    vs_wr_u32(&b, count);
    struct vsc *d = prep_login_on(&cl, i, 20000);
    struct vsc_reply r;
    int rc = vsc_call(d, 503, b.data, b.len, &r);
    ck_assert_msg(rc == 0 && r.status == 0, "DeleteSegments: %d status %u %s",
                  rc, r.status, vsc_last_error(d));
    vs_wbuf_fini(&b);
    vsc_destroy(d);
}

/* The start offset of node i's active segment (its last .log). */
static uint64_t
active_start_of(unsigned i)
{
    char names[64][64], dir[700];
    size_t n = seg_files(i, names, 64, dir, sizeof(dir));
    uint64_t start = UINT64_MAX;
    for (size_t k = 0; k < n; k++)
        if (strstr(names[k], ".log") != NULL)
            start = strtoull(names[k], NULL, 10);
    ck_assert_msg(start != UINT64_MAX, "node %u has no .log", i);
    return start;
}

START_TEST(test_delete_segments_same_everywhere)
{
    (void)make_topic("pt", "t", 1024 * 1024);
    enum { BATCHES = 45, MSGS = 100, SIZE = 1000 };
    struct vsc *c = prep_login_on(&cl, 1, 20000);
    for (unsigned k = 0; k < BATCHES; k++)
        send_batch(c, "pt", "t", k, MSGS, SIZE);
    uint64_t total = (uint64_t)BATCHES * MSGS;
    for (unsigned i = 0; i < 3; i++)
        wait_first(i, "pt", "t", 0, total, 20000);
    size_t logs0 = files_identical();
    ck_assert_uint_ge(logs0, 4);

    /* through node 2: the two oldest sealed segments */
    delete_segments(2, "pt", "t", 2);
    int rc;

    /* the same first offset everywhere (the third segment's start) */
    uint64_t first = UINT64_MAX;
    uint64_t end = prep_now_ms() + 20000;
    while (prep_now_ms() < end) {
        (void)poll_on(c, "pt", "t", 1, VSC_POLL_OFFSET, 0, 1, 0, &first, NULL);
        if (first > 0)
            break;
        usleep(100 * 1000);
    }
    ck_assert_uint_gt(first, 0);
    for (unsigned i = 0; i < 3; i++)
        wait_first(i, "pt", "t", first, total, 20000);
    /* more sends after the trim: still one history */
    for (unsigned k = BATCHES; k < BATCHES + 3; k++)
        send_batch(c, "pt", "t", k, MSGS, SIZE);
    vsc_destroy(c);
    total += 3u * MSGS;
    for (unsigned i = 0; i < 3; i++)
        wait_first(i, "pt", "t", first, total, 20000);
    size_t logs1 = files_identical();
    ck_assert_uint_le(logs1, logs0 - 1);
    /* the deleted segments' files are gone everywhere, the third stays */
    for (unsigned i = 0; i < 3; i++) {
        char dir[700], f[800];
        part_dir_of(i, dir, sizeof(dir));
        snprintf(f, sizeof(f), "%s/%020llu.log", dir, 0ULL);
        ck_assert_int_ne(access(f, F_OK), 0);
        snprintf(f, sizeof(f), "%s/%020llu.vsr", dir, 0ULL);
        ck_assert_int_ne(access(f, F_OK), 0);
        snprintf(f, sizeof(f), "%s/%020llu.log", dir,
                 (unsigned long long)first);
        ck_assert_int_eq(access(f, F_OK), 0);
    }
    fprintf(stderr,
            "DeleteSegments: %zu -> %zu segments, first offset %llu "
            "on every node\n",
            logs0, logs1, (unsigned long long)first);

    /* a node restarted after the trim serves the same */
    ck_assert_int_gt(vs_node_kill(&cl.node[2]), -1);
    rc = vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "restart node 2: %d", rc);
    wait_first(2, "pt", "t", first, total, 30000);
    files_identical();

    /* every sealed segment deleted (the watermark the active segment's
     * start, as retention by expiry leaves it), through node 0, then
     * more sends: every node's polls from offset 0 read the active
     * segment alone, the history from its start with no gap and nothing
     * past what it committed */
    uint64_t active = active_start_of(0);
    ck_assert_uint_gt(active, first);
    delete_segments(0, "pt", "t", 1000);
    for (unsigned i = 0; i < 3; i++)
        wait_first(i, "pt", "t", active, total, 20000);
    ck_assert_uint_eq(files_identical(), 1);
    c = prep_login_on(&cl, 1, 20000);
    for (unsigned k = BATCHES + 3; k < BATCHES + 5; k++) {
        send_batch(c, "pt", "t", k, MSGS, SIZE);
        for (unsigned i = 0; i < 3; i++) {
            struct vsc *h = prep_login_on(&cl, i, 20000);
            uint64_t f = UINT64_MAX, l = 0;
            uint32_t n =
                poll_on(h, "pt", "t", 1, VSC_POLL_OFFSET, 0,
                        (uint32_t)(total - active) + 3u * MSGS, 0, &f, &l);
            vsc_destroy(h);
            ck_assert_msg(
                n > 0 && f == active && l - f + 1 == n && l < total + MSGS,
                "node %u after batch %u: %u messages %llu..%llu "
                "(active segment from %llu, %llu acknowledged)",
                i, k, n, (unsigned long long)f, (unsigned long long)l,
                (unsigned long long)active, (unsigned long long)(total + MSGS));
        }
        total += MSGS;
    }
    for (unsigned i = 0; i < 3; i++)
        wait_first(i, "pt", "t", active, total, 20000);
    files_identical();
    fprintf(stderr,
            "DeleteSegments of every sealed segment: first offset %llu on "
            "every node, polls from 0 within the commit\n",
            (unsigned long long)active);

    /* PurgeTopic through node 1: every node ends with no message and
     * the same files; offsets continue after the purge */
    struct vsc_id sid = vsc_id_name("pt"), tid = vsc_id_name("t");
    rc = vsc_topic_purge(c, &sid, &tid);
    ck_assert_msg(rc == 0, "purge: %d %s", rc, vsc_last_error(c));
    end = prep_now_ms() + 20000;
    uint32_t left = 1;
    for (unsigned i = 0; i < 3; i++) {
        struct vsc *h = prep_login_on(&cl, i, 20000);
        g_tolerant = 1;
        do {
            left =
                poll_on(h, "pt", "t", 1, VSC_POLL_OFFSET, 0, 1, 0, NULL, NULL);
            if (left != 0)
                usleep(100 * 1000);
        } while (left != 0 && prep_now_ms() < end);
        g_tolerant = 0;
        vsc_destroy(h);
        ck_assert_msg(left == 0,
                      "node %u still serves messages after the "
                      "purge (%u)",
                      i, left);
    }
    send_batch(c, "pt", "t", 999, 10, 100);
    vsc_destroy(c);
    for (unsigned i = 0; i < 3; i++)
        wait_first(i, "pt", "t", total, total + 10, 20000);
    ck_assert_uint_eq(files_identical(), 1);
}
END_TEST

/* Waits (bounded) until node i reads `want` as consumer cid's offset. */
static void
wait_offset(unsigned i, const char *s, const char *t, uint32_t cid,
            uint64_t want, uint32_t ms)
{
    struct vsc *c = prep_login_on(&cl, i, 5000);
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    struct vsc_id id = vsc_id_num(cid);
    struct vsc_consumer co = vsc_consumer_single(&id);
    struct vsc_offset o;
    int found = 0, rc = -1;
    uint64_t end = prep_now_ms() + ms;
    while (prep_now_ms() < end) {
        memset(&o, 0, sizeof(o));
        found = 0;
        rc = vsc_offset_get(c, &co, &sid, &tid, 1, 0, &o, &found);
        if (rc == 0 && found && o.stored_offset == want)
            break;
        usleep(100 * 1000);
    }
    vsc_destroy(c);
    ck_assert_msg(rc == 0 && found && o.stored_offset == want,
                  "node %u: consumer %u offset %llu (found %d, rc %d), want "
                  "%llu",
                  i, cid, (unsigned long long)o.stored_offset, found, rc,
                  (unsigned long long)want);
}

START_TEST(test_autocommit_is_the_groups)
{
    unsigned primary = make_topic("pa", "t", 0);
    ck_assert_uint_lt(primary, 3);
    unsigned backup = (primary + 1) % 3, other = (primary + 2) % 3;
    struct vsc *c = prep_login_on(&cl, other, 20000);
    for (unsigned k = 0; k < 10; k++)
        send_batch(c, "pa", "t", k, 10, 40);
    vsc_destroy(c);
    /* through a backup: auto-commit of offset 34 */
    struct vsc *b = prep_login_on(&cl, backup, 20000);
    uint64_t first = UINT64_MAX, last = 0;
    uint64_t end = prep_now_ms() + 20000;
    uint32_t n = 0;
    while (n == 0 && prep_now_ms() < end) {
        n = poll_on(b, "pa", "t", 7, VSC_POLL_NEXT, 0, 35, 1, &first, &last);
        if (n == 0)
            usleep(100 * 1000);
    }
    ck_assert_uint_eq(n, 35);
    ck_assert_uint_eq(first, 0);
    ck_assert_uint_eq(last, 34);
    vsc_destroy(b);
    for (unsigned i = 0; i < 3; i++)
        wait_offset(i, "pa", "t", 7, 34, 10000);
    /* through the primary: the next 10, committed at 44 */
    struct vsc *p = prep_login_on(&cl, primary, 20000);
    n = poll_on(p, "pa", "t", 7, VSC_POLL_NEXT, 0, 10, 1, &first, &last);
    ck_assert_uint_eq(n, 10);
    ck_assert_uint_eq(first, 35);
    ck_assert_uint_eq(last, 44);
    vsc_destroy(p);
    for (unsigned i = 0; i < 3; i++)
        wait_offset(i, "pa", "t", 7, 44, 10000);

    /* the group's primary node is lost: the survivors keep the offset and
     * a poll-next (auto-commit) through one continues after it */
    ck_assert_int_gt(vs_node_kill(&cl.node[primary]), -1);
    wait_offset(backup, "pa", "t", 7, 44, 10000);
    wait_offset(other, "pa", "t", 7, 44, 10000);
    struct vsc *o = prep_login_on(&cl, other, 30000);
    n = 0;
    end = prep_now_ms() + 30000;
    while (prep_now_ms() < end) {
        n = poll_on(o, "pa", "t", 7, VSC_POLL_NEXT, 0, 5, 1, &first, &last);
        ck_assert_uint_eq(n, 5);
        ck_assert_uint_ge(first, 45);
        /* once a new primary commits it, the next poll moves on */
        if (first > 45)
            break;
        usleep(200 * 1000);
    }
    vsc_destroy(o);
    ck_assert_uint_gt(first, 45);
    uint64_t stored = last;
    wait_offset(backup, "pa", "t", 7, stored, 10000);
    /* the lost node restarts and reads the group's offset */
    int rc = vs_cluster_start_node(&cl, primary, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "restart node %u: %d", primary, rc);
    wait_offset(primary, "pa", "t", 7, stored, 30000);
}
END_TEST

static Suite *
ptrim_suite(void)
{
    Suite *s = suite_create("cluster_ptrim");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_delete_segments_same_everywhere);
    tcase_add_test(tc, test_autocommit_is_the_groups);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(ptrim_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
