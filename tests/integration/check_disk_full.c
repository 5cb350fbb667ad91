/*
 * tests/integration/check_disk_full.c - a real full filesystem: a node
 * whose data dir is a size-limited tmpfs (mounted by the test; it skips
 * with a printed reason when mounting is not permitted) is filled by
 * sends until they are refused; then a new connection logs in, metadata
 * growth gets DiskFull, a topic is deleted to free space, sends work
 * again, and after a restart every acknowledged message is there, in
 * order, and nothing unacknowledged is.
 * Every loop is bounded; the node is stopped by pid (harness) and the
 * tmpfs unmounted in teardown.
 * Callers: make check (INTEG_TESTS).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/errors.h"
#include "tests/integration/data_raw.h"
#include "tests/integration/harness.h"

#define START_MS  20000u
#define FS_SIZE   "24m"
#define WATERMARK "6M"
#define MSGS      200u  /* per batch */
#define MSG_SIZE  1000u /* bytes per payload */
#define MAX_SENDS 400u  /* 24 MiB / ~200 KiB per batch, with margin */

static struct vs_node node;
static char mnt[300];
static char data[400];
static int mounted;

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
    snprintf(mnt, sizeof(mnt), "%s/fs", node.dir);
    ck_assert_int_eq(mkdir(mnt, 0700), 0);
    mounted = mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV,
                    "size=" FS_SIZE ",mode=0700") == 0;
    if (!mounted)
        printf("check_disk_full: SKIP: cannot mount a tmpfs (%s); this "
               "test needs root or CAP_SYS_ADMIN\n",
               strerror(errno));
    snprintf(data, sizeof(data), "%s/data", mnt);
}

static void
teardown(void)
{
    if (node.pid > 0)
        vs_node_stop(&node, START_MS);
    if (mounted)
        umount2(mnt, MNT_DETACH);
    rmdir(mnt);
    vs_node_cleanup(&node);
}

static void
start(void)
{
    const char *args[] = {
        "--shards",   "1",  "--with-default-root-credentials=true",
        "--data-dir", data, "--disk-watermark-bytes",
        WATERMARK,    NULL};
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d, status %d", rc, node.status);
}

static uint64_t
fs_avail(void)
{
    struct statvfs v;
    ck_assert_int_eq(statvfs(mnt, &v), 0);
    return (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
}

/* One batch of MSGS messages "tag-i" padded to MSG_SIZE to partition 0
 * of topic `topic` in stream 0; the header status. */
static uint32_t
send_batch(struct dr_sess *s, uint32_t topic, const char *tag, uint64_t *base)
{
    size_t bl, len;
    uint32_t p = 0;
    uint8_t *batch = dr_batch_sized(tag, MSGS, MSG_SIZE, &bl);
    uint8_t *body = dr_send_body(0, topic, 2, &p, 4, batch, bl, MSGS, &len);
    uint32_t st = dr_send(s, body, len, NULL, base);
    free(batch);
    free(body);
    return st;
}

static void
sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

START_TEST(test_real_full_filesystem)
{
    if (!mounted)
        return; /* skipped, reason printed in setup */
    start();
    struct dr_sess s;
    dr_login(&s, &node, 0x7001);
    dr_create_stream(&s, "st");
    dr_create_topic(&s, 0, "keep", 1, NULL, 0); /* topic 0 */
    dr_create_topic(&s, 0, "fill", 1, NULL, 0); /* topic 1 */

    /* acknowledged messages that must survive everything below */
    uint32_t kept = 0;
    for (int i = 0; i < 3; i++) {
        char tag[16];
        snprintf(tag, sizeof(tag), "k%d", i);
        uint64_t base = 0;
        ck_assert_uint_eq(send_batch(&s, 0, tag, &base), 0);
        ck_assert_uint_eq(base, kept);
        kept += MSGS;
    }
    /* fill until refused: 4006 at the watermark, never a lost ack */
    uint32_t filled = 0, st = 0;
    for (uint32_t i = 0; i < MAX_SENDS; i++) {
        st = send_batch(&s, 1, "f", NULL);
        if (st != 0)
            break;
        filled++;
    }
    ck_assert_msg(st == VS_E_CANNOT_SAVE_MESSAGES,
                  "sends were never refused (%u accepted, status %u)", filled,
                  st);
    ck_assert_uint_gt(filled, 10);
    dr_close(&s);

    /* a new connection logs in; growth refused with DiskFull */
    dr_login(&s, &node, 0x7002);
    uint8_t cs[8] = {2, 'n', 'o'};
    ck_assert_uint_eq(dr_meta_status(&s, 128, cs, 3), VS_E_DISK_FULL);
    /* free space: delete the topic that filled the disk */
    uint8_t del[12] = {1, 4, 0, 0, 0, 0, 1, 4, 1, 0, 0, 0};
    ck_assert_uint_eq(dr_meta_status(&s, 134, del, sizeof(del)), 0);
    /* the data shard removes its files; the watermark check catches up
     * within 100 ms of it */
    int ok = 0;
    for (int i = 0; i < 100 && !ok; i++) {
        uint64_t base = 0;
        sleep_ms(50);
        if (fs_avail() < 8ull << 20)
            continue;
        st = send_batch(&s, 0, "after", &base);
        if (st == 0) {
            ck_assert_uint_eq(base, kept);
            kept += MSGS;
            ok = 1;
        }
    }
    ck_assert_msg(ok, "sends never accepted again (%llu bytes free)",
                  (unsigned long long)fs_avail());
    /* growth again (shard 0 re-checks free space every 100 ms) */
    st = VS_E_DISK_FULL;
    for (int i = 0; i < 100 && st == VS_E_DISK_FULL; i++) {
        st = dr_meta_status(&s, 128, cs, 3);
        if (st == VS_E_DISK_FULL)
            sleep_ms(50);
    }
    ck_assert_uint_eq(st, 0);
    dr_close(&s);

    /* restart: every acknowledged message, in order */
    ck_assert_int_eq(vs_node_stop(&node, START_MS), 0);
    start();
    dr_login(&s, &node, 0x7003);
    static struct dr_poll r;
    uint64_t next = 0;
    for (int i = 0; i < 100 && next < kept; i++) {
        dr_poll(&s, 1, 9, 0, 0, 1, 0, 1, next, 500, 0, &r);
        ck_assert_uint_eq(r.status, 0);
        if (r.n == 0)
            break;
        for (uint32_t k = 0; k < r.n; k++) {
            ck_assert_uint_eq(r.m[k].offset, next + k);
            char want[32];
            uint64_t o = next + k;
            if (o < 3u * MSGS)
                snprintf(want, sizeof(want), "k%u-%u", (unsigned)(o / MSGS),
                         (unsigned)(o % MSGS));
            else
                snprintf(want, sizeof(want), "after-%u", (unsigned)(o % MSGS));
            size_t wl = strlen(want);
            ck_assert_int_eq(strncmp(r.m[k].payload, want, wl), 0);
            ck_assert(r.m[k].payload[wl] == 'x' || r.m[k].payload[wl] == 0);
        }
        next += r.n;
    }
    ck_assert_uint_eq(next, kept);
    ck_assert_uint_eq(r.current, kept - 1);
    dr_close(&s);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("disk_full");
    TCase *t = tcase_create("tmpfs");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 180);
    tcase_add_test(t, test_real_full_filesystem);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
