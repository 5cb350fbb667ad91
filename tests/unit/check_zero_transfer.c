/*
 * tests/unit/check_zero_transfer.c - shard 0's state-transfer binding
 * (shard/zero/transfer.h): a serving primary with a real snapshot.bin and
 * a lagging replica, wired through an in-memory frame queue.
 *
 * Covers: the payload (never the trailer) and the client table arrive and
 * are installed byte-exact, with the checkpoint op's prepare header; a
 * checkpoint whose header is unknown is not offered; a replica that is not a
 * caught-up primary, or has no checkpoint, answers "not available" with its
 * reason; a snapshot.bin that does not match its checkpoint pairing is refused
 * at offer time; rot at rest inside the payload is caught while serving, the
 * offer is dropped, nothing is installed, and later requests are told the
 * snapshot is unreadable; install decode failures are charged per snapshot
 * generation.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/checksum.h"
#include "common/layout.h"
#include "shard/storage/io.h"
#include "shard/storage/snapshot_file.h"
#include "shard/zero/transfer.h"

#define PRIMARY 0
#define LAGGER  2
#define SNAP    300001u
#define TABLE   4321u
#define QMAX    64

struct frame {
    uint8_t to, from;
    size_t len;
    uint8_t *bytes;
};

static struct frame queue[QMAX];
static int qhead, qlen;
static struct zt *zt_of[3];
static char dir[64], lagdir[64];
static uint8_t payload[SNAP], table[TABLE];
static struct vs_u128 pairing;
static struct vs_sio io;
static int caught_up = 1;
static uint64_t checkpoint_op = 500;
static int installs, install_rc;
static uint8_t *installed_snap, *installed_table;
static size_t installed_snap_len, installed_table_len;
static uint64_t installed_op, installed_commit;
static struct vs_hdr_prepare ckpt_prepare, installed_prepare;
static int installed_has_prepare;

static void
on_send(void *ctx, uint8_t peer, const void *f, size_t len)
{
    uint8_t from = (uint8_t)(uintptr_t)ctx;
    ck_assert_int_lt(qlen, QMAX);
    struct frame *q = &queue[(qhead + qlen++) % QMAX];
    q->to = peer;
    q->from = from;
    q->len = len;
    q->bytes = malloc(len);
    memcpy(q->bytes, f, len);
}

static void
serve_state(void *ctx, struct zt_serve_state *s)
{
    (void)ctx;
    s->caught_up_primary = caught_up;
    s->view = 4;
    s->commit_min = 520;
    s->commit_max = 520;
    s->checkpoint_op = checkpoint_op;
    s->checkpoint_checksum = pairing;
    s->checkpoint_prepare = ckpt_prepare;
}

static int
encode_table(void *ctx, struct vs_wbuf *w, uint64_t *frontier)
{
    (void)ctx;
    vs_wr_bytes(w, table, TABLE);
    *frontier = 520;
    return 0;
}

static int
install(void *ctx, const struct zt_artifacts *a, char *err, size_t errlen)
{
    (void)ctx;
    const uint8_t *snap = a->snapshot, *tab = a->table;
    size_t snap_len = a->snapshot_len, tab_len = a->table_len;
    uint64_t snap_op = a->snapshot_op, commit_op = a->commit_op;
    installed_has_prepare = a->prepare != NULL;
    if (a->prepare != NULL)
        memcpy(&installed_prepare, a->prepare, sizeof(installed_prepare));
    installs++;
    free(installed_snap);
    free(installed_table);
    installed_snap = malloc(snap_len);
    memcpy(installed_snap, snap, snap_len);
    installed_snap_len = snap_len;
    installed_table = malloc(tab_len ? tab_len : 1);
    memcpy(installed_table, tab, tab_len);
    installed_table_len = tab_len;
    installed_op = snap_op;
    installed_commit = commit_op;
    if (install_rc != 0)
        snprintf(err, errlen, "test decode failure");
    return install_rc;
}

static struct zt *
make(uint8_t self, const char *d)
{
    struct zt_opts o = {.cluster = {7, 7},
                        .group = UINT64_C(1) << 63,
                        .self = self,
                        .metadata_dir = d,
                        .io = &io,
                        .chunk_max = 65536,
                        .stall_ticks = 5};
    struct zt_hooks h = {.ctx = (void *)(uintptr_t)self,
                         .serve_state = serve_state,
                         .encode_table = encode_table,
                         .send = on_send,
                         .install = install};
    struct zt *t;
    char err[128];
    ck_assert_int_eq(zt_create(&o, &h, &t, err, sizeof(err)), 0);
    return t;
}

static void
deliver_all(int rounds)
{
    for (int r = 0; r < rounds; r++) {
        while (qlen > 0) {
            struct frame f = queue[qhead];
            qhead = (qhead + 1) % QMAX;
            qlen--;
            ck_assert(zt_is_transfer_command(
                ((struct vs_header *)f.bytes)->f.command));
            zt_on_frame(zt_of[f.to], f.from, f.bytes, f.len);
            free(f.bytes);
        }
        zt_tick(zt_of[PRIMARY]);
        zt_tick(zt_of[LAGGER]);
        if (!zt_fetching(zt_of[LAGGER]) && qlen == 0)
            return;
    }
}

static void
setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/vs-zt-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(lagdir, sizeof(lagdir), "/tmp/vs-zt-lag-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(lagdir));
    sio_init_real(&io);
    for (size_t i = 0; i < SNAP; i++)
        payload[i] = (uint8_t)(i * 13 + 1);
    struct vs_snapshot_prefix p = {1, 500};
    vs_snapshot_prefix_write(payload, &p);
    for (size_t i = 0; i < TABLE; i++)
        table[i] = (uint8_t)(i * 7);
    ck_assert_int_eq(snapfile_write(&io, dir, payload, SNAP, &pairing), 0);
    caught_up = 1;
    checkpoint_op = 500;
    memset(&ckpt_prepare, 0, sizeof(ckpt_prepare));
    ckpt_prepare.f.command = VS_CMD_PREPARE;
    ckpt_prepare.op = 500;
    ckpt_prepare.f.checksum.lo = 0x5005;
    ckpt_prepare.f.checksum.hi = 0x77;
    installed_has_prepare = 0;
    installs = 0;
    install_rc = 0;
    qhead = qlen = 0;
    zt_of[PRIMARY] = make(PRIMARY, dir);
    zt_of[LAGGER] = make(LAGGER, lagdir);
}

static void
teardown(void)
{
    zt_destroy(zt_of[PRIMARY]);
    zt_destroy(zt_of[LAGGER]);
    while (qlen > 0) {
        free(queue[qhead].bytes);
        qhead = (qhead + 1) % QMAX;
        qlen--;
    }
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, VS_SNAPSHOT_FILE);
    unlink(path);
    rmdir(dir);
    rmdir(lagdir);
    free(installed_snap);
    free(installed_table);
    installed_snap = installed_table = NULL;
}

START_TEST(test_transfer_installs_payload_and_table)
{
    ck_assert_int_eq(zt_start(zt_of[LAGGER], PRIMARY, 4), 0);
    ck_assert_int_eq(zt_start(zt_of[LAGGER], PRIMARY, 4), -EALREADY);
    ck_assert(zt_fetching(zt_of[LAGGER]));
    deliver_all(1000);
    ck_assert_int_eq(installs, 1);
    ck_assert_uint_eq(installed_snap_len, SNAP); /* no trailer */
    ck_assert_int_eq(memcmp(installed_snap, payload, SNAP), 0);
    ck_assert_uint_eq(installed_table_len, TABLE);
    ck_assert_int_eq(memcmp(installed_table, table, TABLE), 0);
    ck_assert_uint_eq(installed_op, 500);
    ck_assert_uint_eq(installed_commit, 520);
    ck_assert(installed_has_prepare);
    ck_assert_int_eq(
        memcmp(&installed_prepare, &ckpt_prepare, sizeof(ckpt_prepare)), 0);
    ck_assert(!zt_fetching(zt_of[LAGGER]));
    struct zt_info li, pi;
    zt_info(zt_of[LAGGER], &li);
    zt_info(zt_of[PRIMARY], &pi);
    ck_assert_uint_eq(li.completed, 1);
    ck_assert_str_eq(li.last, "installed");
    ck_assert_uint_eq(pi.served_offers, 1);
    ck_assert_uint_eq(pi.served_bytes, SNAP + TABLE + VS_HEADER_SIZE);
}
END_TEST

/* A checkpoint whose op's prepare header is unknown (not recorded in the
 * superblock) is never offered: the receiver could not restart on it. */
START_TEST(test_checkpoint_without_header_not_offered)
{
    ckpt_prepare.op = 499; /* the header of another op */
    zt_start(zt_of[LAGGER], PRIMARY, 4);
    deliver_all(100);
    ck_assert_int_eq(installs, 0);
    struct zt_info li;
    zt_info(zt_of[LAGGER], &li);
    ck_assert_ptr_nonnull(strstr(li.last, "no snapshot"));
    memset(&ckpt_prepare, 0, sizeof(ckpt_prepare));
    ckpt_prepare.op = 500; /* zero checksum: unknown */
    zt_start(zt_of[LAGGER], PRIMARY, 4);
    deliver_all(100);
    ck_assert_int_eq(installs, 0);
}
END_TEST

START_TEST(test_not_caught_up_and_no_snapshot)
{
    caught_up = 0;
    zt_start(zt_of[LAGGER], PRIMARY, 4);
    deliver_all(100);
    ck_assert_int_eq(installs, 0);
    struct zt_info li;
    zt_info(zt_of[LAGGER], &li);
    ck_assert_ptr_nonnull(strstr(li.last, "not a caught-up primary"));
    caught_up = 1;
    checkpoint_op = 0;
    zt_start(zt_of[LAGGER], PRIMARY, 4);
    deliver_all(100);
    zt_info(zt_of[LAGGER], &li);
    ck_assert_ptr_nonnull(strstr(li.last, "no snapshot"));
    ck_assert_int_eq(installs, 0);
}
END_TEST

START_TEST(test_pairing_mismatch_refused_at_offer)
{
    pairing.lo ^= 0x100; /* the superblock names another snapshot */
    zt_start(zt_of[LAGGER], PRIMARY, 4);
    deliver_all(100);
    ck_assert_int_eq(installs, 0);
    struct zt_info li;
    zt_info(zt_of[LAGGER], &li);
    ck_assert_ptr_nonnull(strstr(li.last, "snapshot unreadable"));
}
END_TEST

START_TEST(test_rot_at_rest_never_installed)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, VS_SNAPSHOT_FILE);
    int fd = open(path, O_RDWR);
    uint8_t b;
    ck_assert_int_eq(pread(fd, &b, 1, 123456), 1);
    b ^= 0x80; /* inside a string, say: the trailer still matches */
    ck_assert_int_eq(pwrite(fd, &b, 1, 123456), 1);
    close(fd);
    zt_start(zt_of[LAGGER], PRIMARY, 4);
    deliver_all(2000);
    ck_assert_int_eq(installs, 0);
    ck_assert(!zt_fetching(zt_of[LAGGER]));
    /* the primary now refuses to offer that checkpoint at all */
    zt_start(zt_of[LAGGER], PRIMARY, 4);
    deliver_all(100);
    struct zt_info li;
    zt_info(zt_of[LAGGER], &li);
    ck_assert_ptr_nonnull(strstr(li.last, "snapshot unreadable"));
    ck_assert_int_eq(installs, 0);
}
END_TEST

START_TEST(test_decode_failures_refuse_generation)
{
    install_rc = -EPROTO;
    for (int i = 0; i < 5; i++) {
        zt_start(zt_of[LAGGER], PRIMARY, 4);
        deliver_all(1000);
    }
    ck_assert_int_eq(installs, 5);
    zt_start(zt_of[LAGGER], PRIMARY, 4);
    deliver_all(1000);
    ck_assert_int_eq(installs, 5); /* that generation is refused now */
    struct zt_info li;
    zt_info(zt_of[LAGGER], &li);
    ck_assert_ptr_nonnull(strstr(li.last, "refused after"));
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("zero_transfer");
    TCase *tc = tcase_create("transfer");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_transfer_installs_payload_and_table);
    tcase_add_test(tc, test_not_caught_up_and_no_snapshot);
    tcase_add_test(tc, test_checkpoint_without_header_not_offered);
    tcase_add_test(tc, test_pairing_mismatch_refused_at_offer);
    tcase_add_test(tc, test_rot_at_rest_never_installed);
    tcase_add_test(tc, test_decode_failures_refuse_generation);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
