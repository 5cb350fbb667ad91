/*
 * tests/integration/check_cluster_restart.c - restarts of a real 3-node
 * cluster: a backup stopped and restarted rejoins (Recovering, then
 * Normal) and catches up by repair; the whole cluster SIGKILLed and
 * restarted elects on its recovered logs and keeps every acknowledged
 * stream; a stopped backup with a corrupt superblock slot refuses to
 * boot (exit 2, one line) while the other two keep serving; a node with
 * the wrong cluster secret is refused and logged, the cluster keeps
 * running, and with the right secret it rejoins; `vstreamd recover`
 * rebuilds a lost disk that rejoins and catches up; a damaged last WAL
 * entry on a backup is cut, marked faulty and repaired from the peers,
 * while damage before the last entry refuses the boot (exit 2).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "common/errors.h"
#include "common/wire.h"
#include "shard/storage/wal_mark.h"
#include "tests/integration/cluster.h"
#include "tools/client/vsc.h"

static struct vs_cluster cl;

static uint64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_cluster_init(&cl, 3), 0);
    int rc = vs_cluster_start(&cl, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "cluster start: %d", rc);
}

static void
teardown(void)
{
    vs_cluster_cleanup(&cl);
}

static int
has_stream(struct vsc *c, const char *name)
{
    struct vsc_stream s;
    int found = 0;
    struct vsc_id id = vsc_id_name(name);
    if (vsc_stream_get(c, &id, &s, &found) != 0)
        return -1;
    if (found)
        vsc_stream_fini(&s);
    return found;
}

static void
create_ok(struct vsc *c, const char *name)
{
    struct vsc_stream s;
    int rc = vsc_stream_create(c, name, &s);
    ck_assert_msg(rc == 0, "create %s: %d %s", name, rc, vsc_last_error(c));
    vsc_stream_fini(&s);
}

/* Logs in on node i and waits until it lists every stream `prefix-k`,
 * k < n, and is Normal (bounded). Returns the handle. */
static struct vsc *
wait_caught_up(unsigned i, const char *prefix, unsigned n, uint32_t ms)
{
    uint64_t end = now_ms() + ms;
    struct vsc *c = NULL;
    char name[32];
    snprintf(name, sizeof(name), "%s-%u", prefix, n - 1);
    while (now_ms() < end) {
        if (c == NULL)
            c = vs_cluster_login(&cl, i, 3000);
        struct vs_replica_status st;
        if (c != NULL && vs_replica_status(c, &st) == 0 && st.status == 0 &&
            has_stream(c, name) == 1)
            break;
        usleep(100 * 1000);
    }
    ck_assert_msg(c != NULL, "node %u: no login", i);
    for (unsigned k = 0; k < n; k++) {
        snprintf(name, sizeof(name), "%s-%u", prefix, k);
        ck_assert_msg(has_stream(c, name) == 1, "node %u lacks %s", i, name);
    }
    return c;
}

START_TEST(test_restart_backup)
{
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    char name[32];
    for (unsigned k = 0; k < 10; k++) {
        snprintf(name, sizeof(name), "b-%u", k);
        create_ok(c0, name); /* two of three commit */
    }
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS), 0);
    struct vsc *c2 = wait_caught_up(2, "b", 10, 20000);
    vsc_destroy(c2);
    vsc_destroy(c0);
}
END_TEST

START_TEST(test_restart_whole_cluster)
{
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    char name[32];
    for (unsigned k = 0; k < 10; k++) {
        snprintf(name, sizeof(name), "w-%u", k);
        create_ok(c0, name);
    }
    vsc_destroy(c0);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_int_gt(vs_node_kill(&cl.node[i]), -1);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_int_eq(vs_cluster_start_node(&cl, i, VS_CLUSTER_START_MS), 0);
    /* every probe unanswered: they elect on the recovered logs */
    for (unsigned i = 0; i < 3; i++) {
        struct vsc *c = wait_caught_up(i, "w", 10, 40000);
        vsc_destroy(c);
    }
    /* and commit again, through any node */
    struct vsc *c1 = vs_cluster_login(&cl, 1, 20000);
    ck_assert_ptr_nonnull(c1);
    create_ok(c1, "after-restart");
    vsc_destroy(c1);
}
END_TEST

START_TEST(test_corrupt_superblock_refuses)
{
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    create_ok(c0, "x-0");
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    /* flip one byte in the middle of each slot's record: a corrupt slot
     * beside another is Unreadable (its lost sequence may be newer) */
    char path[400];
    snprintf(path, sizeof(path), "%s/metadata/superblock.a",
             cl.node[2].data_dir);
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    uint8_t b;
    ck_assert_int_eq(pread(fd, &b, 1, 40), 1);
    b ^= 0x5a;
    ck_assert_int_eq(pwrite(fd, &b, 1, 40), 1);
    close(fd);
    int rc = vs_cluster_start_node(&cl, 2, 20000);
    ck_assert_int_eq(rc, -ECHILD);
    ck_assert(WIFEXITED(cl.node[2].status));
    ck_assert_int_eq(WEXITSTATUS(cl.node[2].status), 2);
    ck_assert(vs_file_contains(cl.node[2].stderr_file, "superblock"));
    /* the other two keep serving */
    create_ok(c0, "x-1");
    vsc_destroy(c0);
}
END_TEST

START_TEST(test_wrong_secret_refused)
{
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    char good[320], bad[320];
    snprintf(good, sizeof(good), "%s", cl.secret_file);
    snprintf(bad, sizeof(bad), "%.200s/other-secret", cl.dir);
    uint8_t key[32];
    randombytes_buf(key, sizeof(key));
    int fd = open(bad, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, key, sizeof(key)), 32);
    close(fd);
    snprintf(cl.secret_file, sizeof(cl.secret_file), "%s", bad);
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS), 0);
    snprintf(cl.secret_file, sizeof(cl.secret_file), "%s", good);
    /* refused and logged by the node that dials it */
    ck_assert_int_eq(vs_wait_file_contains(cl.node[0].log_file,
                                           "replica link with replica 2 "
                                           "refused",
                                           15000),
                     0);
    create_ok(c0, "s-0"); /* 0 and 1 keep committing */
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS), 0);
    struct vsc *c2 = wait_caught_up(2, "s", 1, 20000);
    vsc_destroy(c2);
    vsc_destroy(c0);
    unlink(bad);
}
END_TEST

START_TEST(test_recover_lost_disk)
{
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    char name[32];
    for (unsigned k = 0; k < 5; k++) {
        snprintf(name, sizeof(name), "r-%u", k);
        create_ok(c0, name);
    }
    ck_assert_int_gt(vs_node_kill(&cl.node[2]), -1);
    /* the disk is lost: an empty data dir is refused without recover */
    char cmd[800];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cl.node[2].data_dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, 20000), -ECHILD);
    ck_assert_int_eq(WEXITSTATUS(cl.node[2].status), 2);
    /* vstreamd recover, then it rejoins without a vote and catches up */
    const char *argv[64];
    char addrs[VS_CLUSTER_MAX * 34];
    argv[0] = "recover";
    vs_cluster_args(&cl, 2, argv + 1, 63, addrs, sizeof(addrs));
    ck_assert_int_eq(vs_node_spawn(&cl.node[2], argv), 0);
    ck_assert_int_eq(vs_node_wait_exit(&cl.node[2], 20000), 0);
    ck_assert(vs_file_contains(cl.node[2].stderr_file, "rebuilt"));
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS), 0);
    struct vsc *c2 = wait_caught_up(2, "r", 5, 30000);
    vsc_destroy(c2);
    create_ok(c0, "r-after");
    vsc_destroy(c0);
}
END_TEST

/* Opens node i's WAL read-write and finds the journal entry `which`
 * (0 = first, -1 = last, -k = the k-th from the last) among its entries,
 * with a body if need_body; its offset in *at. Returns that entry's op. */
static uint64_t
wal_pick(unsigned i, int which, int need_body, int *fd_out, off_t *at)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/metadata/journal.wal",
             cl.node[i].data_dir);
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    off_t off = 0, offs[4096];
    uint64_t ops[4096];
    size_t n = 0;
    struct vs_hdr_prepare h;
    while (pread(fd, &h, sizeof(h), off) == (ssize_t)sizeof(h) &&
           h.f.size >= VS_HEADER_SIZE && n < 4096) {
        if (!need_body || h.f.size > VS_HEADER_SIZE) {
            offs[n] = off;
            ops[n++] = h.op;
        }
        off += h.f.size;
    }
    size_t k = which >= 0 ? (size_t)which : n - (size_t)(-which);
    ck_assert_uint_lt(k, n);
    *fd_out = fd;
    *at = offs[k];
    return ops[k];
}

/* Flips one byte of the body of the entry `which` (wal_pick) of node i's
 * WAL; returns that entry's op. */
static uint64_t
flip_wal_body(unsigned i, int which)
{
    int fd;
    off_t pick;
    uint64_t op = wal_pick(i, which, 1, &fd, &pick);
    uint8_t b;
    ck_assert_int_eq(pread(fd, &b, 1, pick + VS_HEADER_SIZE), 1);
    b ^= 0x01;
    ck_assert_int_eq(pwrite(fd, &b, 1, pick + VS_HEADER_SIZE), 1);
    close(fd);
    return op;
}

/* Zeroes the header of the entry `which` (wal_pick) of node i's WAL: a
 * write a power loss never persisted. Returns that entry's op. */
static uint64_t
zero_wal_header(unsigned i, int which)
{
    int fd;
    off_t pick;
    uint64_t op = wal_pick(i, which, 0, &fd, &pick);
    uint8_t zero[VS_HEADER_SIZE];
    memset(zero, 0, sizeof(zero));
    ck_assert_int_eq(pwrite(fd, zero, sizeof(zero), pick),
                     (ssize_t)sizeof(zero));
    close(fd);
    return op;
}

/* Node i's journal mark says every entry up to `op` completed an fsync
 * (both slots: whatever slot the node wrote last). */
static void
set_wal_mark(unsigned i, uint64_t op)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/metadata/%s", cl.node[i].data_dir,
             WAL_MARK_FILE);
    uint8_t b[WAL_MARK_SLOT_GAP + WAL_MARK_SLOT_SIZE];
    memset(b, 0, sizeof(b));
    wal_mark_encode(1, op, b + WAL_MARK_SLOT_GAP);
    int fd = open(path, O_WRONLY | O_TRUNC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
    close(fd);
}

START_TEST(test_damaged_tail_repaired_interior_refused)
{
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    char name[32];
    for (unsigned k = 0; k < 5; k++) {
        snprintf(name, sizeof(name), "d-%u", k);
        create_ok(c0, name);
    }
    struct vsc *c2 = wait_caught_up(2, "d", 5, 20000);
    vsc_destroy(c2);
    /* a damaged last entry on a backup: cut, marked faulty, repaired */
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    uint64_t op = flip_wal_body(2, -1);
    ck_assert_uint_gt(op, 0);
    create_ok(c0, "d-5"); /* the others keep serving */
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS), 0);
    c2 = wait_caught_up(2, "d", 6, 20000);
    vsc_destroy(c2);
    /* an entry never written with valid entries after it, their group
     * write's fsync never completed (the durable mark below it: what a
     * power loss can leave): a torn tail, cut, nackable; the node boots
     * and repairs the rest from peers */
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    op = zero_wal_header(2, -3);
    ck_assert_uint_gt(op, 0);
    set_wal_mark(2, op - 1);
    create_ok(c0, "d-6");
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS), 0);
    c2 = wait_caught_up(2, "d", 7, 20000);
    vsc_destroy(c2);
    ck_assert(vs_file_contains(cl.node[2].log_file,
                               "above the journal's durable mark"));
    /* damage before the last entry is interior: refused (one line naming
     * the entry's offset and the valid op after it) */
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    op = flip_wal_body(2, 0);
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, 20000), -ECHILD);
    ck_assert_int_eq(WEXITSTATUS(cl.node[2].status), 2);
    (void)op;
    ck_assert(vs_file_contains(cl.node[2].stderr_file, "interior corruption"));
    create_ok(c0, "d-7");
    vsc_destroy(c0);
}
END_TEST

static Suite *
restart_suite(void)
{
    Suite *s = suite_create("cluster_restart");
    TCase *t = tcase_create("restart");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 180);
    tcase_add_test(t, test_restart_backup);
    tcase_add_test(t, test_restart_whole_cluster);
    tcase_add_test(t, test_corrupt_superblock_refuses);
    tcase_add_test(t, test_wrong_secret_refused);
    tcase_add_test(t, test_recover_lost_disk);
    tcase_add_test(t, test_damaged_tail_repaired_interior_refused);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(restart_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
