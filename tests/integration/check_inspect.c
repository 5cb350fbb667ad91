/*
 * tests/integration/check_inspect.c - runs the real vstream-inspect
 * ($VSTREAM_INSPECT) on data dirs the test writes with the storage
 * library: exit status (0 boot / 3 refuse / 1 usage), the text report,
 * --json, read-only behaviour, and a dir locked by a "running node".
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shard/storage/datadir.h"
#include "shard/storage/recovery.h"
#include "../unit/storage_testutil.h"

static char out[65536];

/* Runs vstream-inspect with up to 3 args; returns its exit status and
 * leaves stdout in `out`. */
static int
inspect(const char *a1, const char *a2, const char *a3)
{
    const char *bin = getenv("VSTREAM_INSPECT");
    ck_assert_msg(bin != NULL, "VSTREAM_INSPECT not set");
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        alarm(60); /* bounded */
        execl(bin, bin, a1, a2, a3, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    size_t n = 0;
    for (;;) {
        ssize_t k = read(p[0], out + n, sizeof(out) - 1 - n);
        if (k == -1 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        n += (size_t)k;
        if (n == sizeof(out) - 1)
            break;
    }
    out[n] = '\0';
    close(p[0]);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st), "vstream-inspect died (status %d)", st);
    return WEXITSTATUS(st);
}

struct dd {
    char dir[256];
    char meta[300];
    struct vs_sio io;
};

/* A one- or more-replica metadata dir: snapshot at op 2, superblock
 * slots of view 3 and 4, WAL entries 2..last_op (40-byte bodies). */
static void
healthy_upto(struct dd *d, uint8_t replica_count, uint64_t last_op)
{
    tu_mkdtemp(d->dir, sizeof(d->dir), d->meta, sizeof(d->meta));
    sio_init_real(&d->io);
    uint8_t p[30];
    struct vs_snapshot_prefix pre = {.format_version = 1, .op = 2};
    vs_snapshot_prefix_write(p, &pre);
    memset(p + 12, 7, sizeof(p) - 12);
    struct vs_u128 cs;
    ck_assert_int_eq(snapfile_write(&d->io, d->meta, p, sizeof(p), &cs), 0);
    struct vs_vsr_state s = tu_state(3, 2, cs);
    s.replica_count = replica_count;
    struct sb_store st;
    ck_assert_int_eq(sb_open(&st, &d->io, d->meta, NULL), 0);
    uint8_t pl[VSR_STATE_SIZE];
    /* the older slot carries a faulty range, the newest none: both are
     * printed per slot, the verdict reads the newest */
    s.faulty_op = 9;
    s.nonack_op = 8;
    vsr_state_encode(&s, pl);
    ck_assert_int_eq(sb_write(&st, pl, sizeof(pl)), 0);
    s.view = 4;
    s.faulty_op = s.nonack_op = 0;
    vsr_state_encode(&s, pl);
    ck_assert_int_eq(sb_write(&st, pl, sizeof(pl)), 0);
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &d->io, d->meta, NULL, NULL), 0);
    struct vs_u128 parent = {0, 0};
    uint8_t body[64];
    for (uint64_t op = 2; op <= last_op; op++) {
        struct vs_hdr_prepare h;
        tu_prepare(&h, body, 40, op, parent, 1);
        ck_assert_int_eq(wal_append(&w, &h, body, 40), 0);
        parent = h.f.checksum;
    }
    wal_close(&w);
}

static void
healthy(struct dd *d, uint8_t replica_count)
{
    healthy_upto(d, replica_count, 6);
}

START_TEST(test_usage)
{
    ck_assert_int_eq(inspect(NULL, NULL, NULL), 1);
    ck_assert_int_eq(inspect("--bogus", NULL, NULL), 1);
    ck_assert_int_eq(inspect("/nonexistent/vs-inspect", NULL, NULL), 1);
}
END_TEST

START_TEST(test_healthy_and_fresh)
{
    struct dd d;
    healthy(&d, 1);
    ck_assert_int_eq(inspect(d.dir, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "superblock: present (sequence 2"));
    ck_assert_ptr_nonnull(strstr(out, "superblock.a: valid sequence 1 view 3"));
    ck_assert_ptr_nonnull(strstr(out, "superblock.b: valid sequence 2 view 4"));
    ck_assert_ptr_nonnull(strstr(out, "checkpoint (op 2,"));
    ck_assert_ptr_nonnull(strstr(out, "replica 0/1 faulty_op 9 nonack_op 8\n"
                                      "  superblock.b: valid sequence 2"));
    ck_assert_ptr_nonnull(strstr(out, "replica 0/1 faulty_op 0 nonack_op 0\n"));
    ck_assert_ptr_nonnull(strstr(out, "snapshot: ok (size 50 bytes, format "
                                      "version 1, op 2)"));
    ck_assert_ptr_nonnull(strstr(out, "wal: clean"));
    ck_assert_ptr_nonnull(strstr(out, "5 entries (ops 2..6), format v1: 5"));
    ck_assert_ptr_nonnull(strstr(out, "verdict: boot"));
    ck_assert_ptr_nonnull(strstr(out, "replay ops 3..6"));
    ck_assert_ptr_nonnull(strstr(out, "not held"));
    ck_assert_int_eq(inspect(d.dir, "--json", NULL), 0);
    ck_assert_int_eq(out[0], '{');
    ck_assert_ptr_nonnull(strstr(out, "\"verdict\":\"boot\""));
    ck_assert_ptr_nonnull(strstr(out, "\"boots\":true"));
    ck_assert_ptr_nonnull(strstr(out, "\"first_op\":2,\"last_op\":6"));
    ck_assert_ptr_nonnull(strstr(out, "\"per_version\":{\"1\":5}"));
    ck_assert_ptr_nonnull(strstr(out, "\"running\":false"));
    ck_assert_ptr_nonnull(strstr(out, "\"faulty_op\":9,\"nonack_op\":8"));
    ck_assert_ptr_nonnull(strstr(out, "\"faulty_op\":0,\"nonack_op\":0"));
    tu_rm_rf(d.dir);
    /* an empty dir: fresh for a one-replica node */
    tu_mkdtemp(d.dir, sizeof(d.dir), NULL, 0);
    ck_assert_int_eq(inspect(d.dir, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "verdict: fresh"));
    tu_rm_rf(d.dir);
}
END_TEST

START_TEST(test_refusals_read_only)
{
    struct dd d;
    healthy(&d, 1);
    size_t len;
    uint8_t *b = tu_read_file(d.meta, VS_JOURNAL_FILE, &len);
    /* torn tail: would boot (and would cut), file untouched */
    tu_write_file(d.meta, VS_JOURNAL_FILE, b, len - 7);
    ck_assert_int_eq(inspect(d.dir, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "wal: torn-tail"));
    ck_assert_ptr_nonnull(strstr(out, "boot would cut it"));
    size_t now;
    free(tu_read_file(d.meta, VS_JOURNAL_FILE, &now));
    ck_assert_uint_eq(now, len - 7);
    /* damaged tail on one replica: refuse (3); with the flag: boot */
    b[len - 1] ^= 1;
    tu_write_file(d.meta, VS_JOURNAL_FILE, b, len);
    ck_assert_int_eq(inspect(d.dir, NULL, NULL), 3);
    ck_assert_ptr_nonnull(strstr(out, "wal: damaged-tail"));
    ck_assert_ptr_nonnull(strstr(out, "verdict: refuse-wal-damaged-tail"));
    ck_assert_int_eq(inspect(d.dir, "--cut-damaged-tail", NULL), 0);
    ck_assert_int_eq(inspect(d.dir, "--json", NULL), 3);
    ck_assert_ptr_nonnull(
        strstr(out, "\"verdict\":\"refuse-wal-damaged-tail\""));
    ck_assert_ptr_nonnull(strstr(out, "\"bad_op\":6"));
    b[len - 1] ^= 1;
    /* interior corruption: refuse naming op and offset */
    b[296 + 20] ^= 1; /* op 3's header (op 2 is 296 bytes) */
    tu_write_file(d.meta, VS_JOURNAL_FILE, b, len);
    ck_assert_int_eq(inspect(d.dir, NULL, NULL), 3);
    ck_assert_ptr_nonnull(strstr(out, "interior corruption at op 3, offset "
                                      "296"));
    /* the same entry never written (zero header), valid entries after it:
     * fsynced (the durable mark covers it) and zeroed since, interior;
     * its write's fsync never completed (the mark at op 2: a power loss
     * kept later pages), a torn tail, boots; an older release's journal
     * (no mark) within what shard 0's group commit leaves unsynced, the
     * same */
    memset(b + 296, 0, VS_HEADER_SIZE);
    tu_write_file(d.meta, VS_JOURNAL_FILE, b, len);
    ck_assert_int_eq(inspect(d.dir, NULL, NULL), 3);
    ck_assert_ptr_nonnull(strstr(out, "interior corruption at op 3"));
    tu_mark_set(d.meta, 2);
    ck_assert_int_eq(inspect(d.dir, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "torn tail at op 3, offset 296"));
    ck_assert_ptr_nonnull(strstr(out, "durable mark op 2"));
    ck_assert_ptr_nonnull(strstr(out, "above the journal's durable mark"));
    tu_mark_remove(d.meta);
    ck_assert_int_eq(inspect(d.dir, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "torn tail at op 3, offset 296"));
    ck_assert_ptr_nonnull(strstr(out, "durable mark absent"));
    free(b);
    tu_rm_rf(d.dir);
    /* beyond that window (more valid entries after it than group commit
     * leaves unsynced): interior corruption */
    healthy_upto(&d, 1, 2 + WAL_GROUP_UNSYNCED_MAX + 1);
    tu_mark_remove(d.meta);
    b = tu_read_file(d.meta, VS_JOURNAL_FILE, &len);
    ck_assert_uint_gt(len, 296 + VS_HEADER_SIZE);
    for (size_t i = 296; i < 296 + VS_HEADER_SIZE; i++)
        b[i] = 0;
    tu_write_file(d.meta, VS_JOURNAL_FILE, b, len);
    ck_assert_int_eq(inspect(d.dir, NULL, NULL), 3);
    ck_assert_ptr_nonnull(strstr(out, "interior corruption at op 3, offset "
                                      "296"));
    free(b);
    /* superblock slot corrupt beside a valid one */
    b = tu_read_file(d.meta, VS_SUPERBLOCK_A, &len);
    b[9] ^= 1;
    tu_write_file(d.meta, VS_SUPERBLOCK_A, b, len);
    ck_assert_int_eq(inspect(d.dir, NULL, NULL), 3);
    ck_assert_ptr_nonnull(strstr(out, "superblock: unreadable"));
    ck_assert_ptr_nonnull(strstr(out, "superblock.a: corrupt"));
    ck_assert_ptr_nonnull(strstr(out, "refuse-superblock-unreadable"));
    free(b);
    tu_rm_rf(d.dir);
}
END_TEST

START_TEST(test_cluster_damaged_tail_would_cut)
{
    struct dd d;
    healthy(&d, 3);
    size_t len;
    uint8_t *b = tu_read_file(d.meta, VS_JOURNAL_FILE, &len);
    b[len - 1] ^= 1;
    tu_write_file(d.meta, VS_JOURNAL_FILE, b, len);
    free(b);
    ck_assert_int_eq(inspect(d.dir, NULL, NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "boot would cut it"));
    tu_rm_rf(d.dir);
}
END_TEST

START_TEST(test_running_node)
{
    struct dd d;
    healthy(&d, 1);
    int fd = -1;
    char err[256];
    ck_assert_int_eq(datadir_open_locked(d.dir, &fd, err, sizeof(err)), 0);
    ck_assert_int_eq(inspect(d.dir, NULL, NULL), 0);
    char want[64];
    snprintf(want, sizeof(want), "running on this dir (pid %ld)",
             (long)getpid());
    ck_assert_ptr_nonnull(strstr(out, want));
    ck_assert_ptr_nonnull(strstr(out, "verdict: boot"));
    ck_assert_int_eq(inspect(d.dir, "--json", NULL), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"running\":true"));
    close(fd);
    tu_rm_rf(d.dir);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("inspect");
    TCase *tc = tcase_create("inspect");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_usage);
    tcase_add_test(tc, test_healthy_and_fresh);
    tcase_add_test(tc, test_refusals_read_only);
    tcase_add_test(tc, test_cluster_damaged_tail_would_cut);
    tcase_add_test(tc, test_running_node);
    suite_add_tcase(s, tc);
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
