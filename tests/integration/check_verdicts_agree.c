/*
 * tests/integration/check_verdicts_agree.c - vstream-inspect and boot
 * agree, for metadata and data. A node (one data shard, fsync every
 * batch, 1 MiB segments) gets a partition of several sealed segments and
 * is stopped cleanly; then, for each corruption fixture (file, damage),
 * vstream-inspect runs on the dir and vstreamd boots it: inspect exits 0
 * exactly when the node boots and serves, 3 exactly when it refuses
 * (exit 2, a one-line reason naming the partition). --verify-data also
 * finds a flipped payload byte in a sealed segment that boot (which walks
 * only sealed headers) lets through -- and that a poll refuses. The
 * pristine files are restored after each case.
 * Every wait is bounded; nodes are stopped by pid (harness).
 * Callers: make check (INTEG_TESTS).
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/layout.h"
#include "shard/data/batch.h"
#include "tests/integration/data_raw.h"
#include "tests/integration/harness.h"

#define START_MS 20000u
#define BATCHES  40u
#define MSGS     100u
#define MSG_SIZE 1000u /* 40 x 100 KB: four 1 MiB segments */

static struct vs_node node;
static char pdir[1000]; /* the partition's directory */
static char out[65536];

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
}

static const char *const args[] = {
    "--shards", "1", "--with-default-root-credentials=true", NULL};

/* Runs vstream-inspect DATA [flag]; its exit status, stdout in `out`. */
static int
inspect(const char *flag)
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
        alarm(60);
        execl(bin, bin, node.data_dir, flag, (char *)NULL);
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

/* Boots the node on its dir: 1 if it boots and serves the partition
 * (every message polled, verified on read), 0 if it refused (exit 2). */
static int
boots(uint32_t *served)
{
    (void)truncate(node.log_file, 0); /* only this boot's lines */
    int rc = vs_node_start(&node, args, START_MS);
    if (rc == -ECHILD) {
        ck_assert_msg(WIFEXITED(node.status) &&
                          WEXITSTATUS(node.status) == VS_EXIT_FATAL,
                      "status %d", node.status);
        return 0;
    }
    ck_assert_msg(rc == 0, "start: %d", rc);
    /* a partition refusal stops the node shortly after its start */
    if (vs_wait_file_contains(node.log_file, "refusing partition", 10000) ==
        0) {
        ck_assert_int_ge(vs_node_wait_exit(&node, START_MS), 0);
        ck_assert(WIFEXITED(node.status) &&
                  WEXITSTATUS(node.status) == VS_EXIT_FATAL);
        return 0;
    }
    struct dr_sess s;
    dr_login(&s, &node, 0x9001);
    static struct dr_poll r;
    uint64_t next = 0;
    *served = 0;
    for (int i = 0; i < 200; i++) {
        dr_poll(&s, 1, 3, 0, 0, 1, 0, 1, next, 500, 0, &r);
        if (r.status != 0 || r.n == 0)
            break;
        next = r.m[r.n - 1].offset + 1;
        *served += r.n;
    }
    dr_close(&s);
    ck_assert_int_eq(vs_node_stop(&node, START_MS), 0);
    return 1;
}

/* ---- the pristine files of the partition ---- */

struct file {
    char name[256];
    uint8_t *b;
    size_t len;
};
static struct file files[32];
static size_t nfiles;

static uint8_t *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    ck_assert(n == 0 || fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void
put(const char *name, const uint8_t *b, size_t len)
{
    char path[1300];
    snprintf(path, sizeof(path), "%s/%s", pdir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert(len == 0 || fwrite(b, 1, len, f) == len);
    fclose(f);
}

static void
snapshot_files(void)
{
    DIR *d = opendir(pdir);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    nfiles = 0;
    while ((de = readdir(d)) != NULL && nfiles < 32) {
        char path[1300];
        snprintf(path, sizeof(path), "%s/%s", pdir, de->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        snprintf(files[nfiles].name, sizeof(files[nfiles].name), "%s",
                 de->d_name);
        files[nfiles].b = slurp(path, &files[nfiles].len);
        nfiles++;
    }
    closedir(d);
}

static void
restore_files(void)
{
    for (size_t i = 0; i < nfiles; i++)
        put(files[i].name, files[i].b, files[i].len);
}

/* pdir/name into out (asserts it fits). */
static void
in_pdir(char *dst, size_t cap, const char *name)
{
    size_t a = strlen(pdir), b = strlen(name);
    ck_assert_uint_lt(a + 1 + b, cap);
    memcpy(dst, pdir, a);
    dst[a] = '/';
    memcpy(dst + a + 1, name, b + 1);
}

static const struct file *
file_named(const char *name)
{
    for (size_t i = 0; i < nfiles; i++)
        if (strcmp(files[i].name, name) == 0)
            return &files[i];
    ck_abort_msg("no file %s", name);
    return NULL;
}

/* The .log names in order of start offset. */
static size_t
logs(char names[][256], size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < nfiles && n < max; i++) {
        size_t l = strlen(files[i].name);
        if (l > 4 && strcmp(files[i].name + l - 4, ".log") == 0)
            snprintf(names[n++], 256, "%s", files[i].name);
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[256];
            memcpy(t, names[j], 256);
            memcpy(names[j], names[j - 1], 256);
            memcpy(names[j - 1], t, 256);
        }
    return n;
}

/* Start of the last batch of a log image. */
static uint64_t
last_batch(const struct file *f, uint64_t *second_last)
{
    uint64_t pos = 0, last = 0, prev = 0;
    while (pos < f->len) {
        prev = last;
        last = pos;
        pos += batch_length(f->b + pos);
    }
    if (second_last)
        *second_last = prev;
    return last;
}

enum expect { BOOTS, REFUSES };

struct fixture {
    const char *what;
    enum expect want;
    int verify_finds; /* --verify-data exits 3 although boot boots */
};

START_TEST(test_inspect_and_boot_agree)
{
    ck_assert_int_eq(vs_node_start(&node, args, START_MS), 0);
    struct dr_sess s;
    dr_login(&s, &node, 0x9000);
    dr_create_stream(&s, "st");
    dr_create_topic(&s, 0, "tp", 1, NULL, 0);
    for (uint32_t i = 0; i < BATCHES; i++) {
        size_t bl, len;
        uint32_t p = 0;
        uint8_t *batch = dr_batch_sized("m", MSGS, MSG_SIZE, &bl);
        uint8_t *body = dr_send_body(0, 0, 2, &p, 4, batch, bl, MSGS, &len);
        uint64_t base = 0;
        ck_assert_uint_eq(dr_send(&s, body, len, NULL, &base), 0);
        ck_assert_uint_eq(base, (uint64_t)i * MSGS);
        free(batch);
        free(body);
    }
    dr_close(&s);
    ck_assert_int_eq(vs_node_stop(&node, START_MS), 0);

    /* the partition directory */
    char parts[600];
    snprintf(parts, sizeof(parts), "%s/%s", node.data_dir, VS_PARTITIONS_DIR);
    DIR *d = opendir(parts);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    pdir[0] = 0;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, "0.0.0.", 6) == 0)
            snprintf(pdir, sizeof(pdir), "%s/%s", parts, de->d_name);
    closedir(d);
    ck_assert(pdir[0]);
    snapshot_files();
    char lg[8][256];
    size_t nl = logs(lg, 8);
    ck_assert_uint_ge(nl, 3);
    const struct file *act = file_named(lg[nl - 1]);
    const struct file *sealed = file_named(lg[1]);
    uint64_t prev_act = 0;
    uint64_t last_act = last_batch(act, &prev_act);
    uint64_t last_sealed = last_batch(sealed, NULL);
    ck_assert_uint_gt(last_act, 0);

    const struct fixture fx[] = {
        {"pristine", BOOTS, 0},
        {"active .log: payload byte of the last batch flipped", REFUSES, 0},
        {"active .log: cut inside the last batch", REFUSES, 0},
        {"active .log: the last two batches cut at a boundary", REFUSES, 0},
        {"sealed .log: emptied", REFUSES, 0},
        {"sealed .log: deleted", REFUSES, 0},
        {"sealed .log: its last batch cut at a boundary", REFUSES, 0},
        {"sealed .log: a payload byte flipped", BOOTS, 1},
        {"sealed .log: a batch header's offset flipped", REFUSES, 0},
        {"state file: a byte flipped", REFUSES, 0},
        {"format file: deleted", REFUSES, 0},
        {"active .index: deleted", BOOTS, 0},
        {"metadata journal.wal: last entry's body flipped", REFUSES, 0},
    };
    char wal[700];
    snprintf(wal, sizeof(wal), "%s/%s/%s", node.data_dir, VS_METADATA_DIR,
             VS_JOURNAL_FILE);
    char path[1300];
    for (size_t k = 0; k < sizeof(fx) / sizeof(fx[0]); k++) {
        restore_files();
        uint8_t *c = NULL, *wal_orig = NULL;
        size_t wal_len = 0;
        switch (k) {
        case 1:
            c = malloc(act->len);
            memcpy(c, act->b, act->len);
            c[last_act + 256 + 48 + 7] ^= 0x01;
            put(act->name, c, act->len);
            break;
        case 2:
            put(act->name, act->b, (size_t)last_act + 300);
            break;
        case 3:
            put(act->name, act->b, (size_t)prev_act);
            break;
        case 4:
            put(sealed->name, sealed->b, 0);
            break;
        case 5:
            in_pdir(path, sizeof(path), sealed->name);
            ck_assert_int_eq(unlink(path), 0);
            break;
        case 6:
            put(sealed->name, sealed->b, (size_t)last_sealed);
            break;
        case 7:
            c = malloc(sealed->len);
            memcpy(c, sealed->b, sealed->len);
            c[sealed->len / 2] ^= 0x20;
            put(sealed->name, c, sealed->len);
            break;
        case 8:
            c = malloc(sealed->len);
            memcpy(c, sealed->b, sealed->len);
            c[last_sealed + BATCH_OFF_BASE_OFFSET + 2] ^= 0x10;
            put(sealed->name, c, sealed->len);
            break;
        case 9: {
            const struct file *st = file_named("state");
            c = malloc(st->len);
            memcpy(c, st->b, st->len);
            c[10] ^= 0x04;
            put("state", c, st->len);
            break;
        }
        case 10:
            in_pdir(path, sizeof(path), "format");
            ck_assert_int_eq(unlink(path), 0);
            break;
        case 11: {
            char idx[64];
            snprintf(idx, sizeof(idx), "%.20s.index", act->name);
            in_pdir(path, sizeof(path), idx);
            ck_assert_int_eq(unlink(path), 0);
            break;
        }
        case 12: {
            wal_orig = slurp(wal, &wal_len);
            ck_assert_uint_gt(wal_len, 256);
            c = malloc(wal_len);
            memcpy(c, wal_orig, wal_len);
            c[wal_len - 1] ^= 0x08;
            FILE *f = fopen(wal, "wb");
            ck_assert_ptr_nonnull(f);
            ck_assert(fwrite(c, 1, wal_len, f) == wal_len);
            fclose(f);
            break;
        }
        default:
            break;
        }
        free(c);
        int ins = inspect(NULL);
        int ver = inspect("--verify-data");
        uint32_t served = 0;
        int booted = boots(&served);
        ck_assert_msg(ins == (booted ? 0 : 3),
                      "%s: inspect exit %d but the node %s\n%s", fx[k].what,
                      ins, booted ? "booted" : "refused", out);
        ck_assert_msg(booted == (fx[k].want == BOOTS), "%s: the node %s",
                      fx[k].what, booted ? "booted" : "refused");
        if (fx[k].verify_finds) {
            ck_assert_msg(ver == 3, "%s: --verify-data exit %d", fx[k].what,
                          ver);
            ck_assert_uint_lt(served, BATCHES * MSGS); /* never served */
        } else {
            ck_assert_msg(ver == ins, "%s: --verify-data exit %d, plain %d",
                          fx[k].what, ver, ins);
        }
        if (booted && !fx[k].verify_finds)
            ck_assert_uint_eq(served, BATCHES * MSGS);
        printf("verdicts agree: %-55s inspect %d verify %d node %s\n",
               fx[k].what, ins, ver, booted ? "boots" : "refuses");
        if (k == 10)
            put("format", file_named("format")->b, file_named("format")->len);
        if (wal_orig) {
            FILE *f = fopen(wal, "wb");
            ck_assert_ptr_nonnull(f);
            ck_assert(fwrite(wal_orig, 1, wal_len, f) == wal_len);
            fclose(f);
            free(wal_orig);
        }
    }
    for (size_t i = 0; i < nfiles; i++)
        free(files[i].b);
}
END_TEST

static int
rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* The metadata lists a partition whose directory is gone: boot refuses
 * (exit 2, naming it) instead of creating it empty and handing out
 * offset 0 again. (vstream-inspect reads no metadata state, so this one
 * verdict is boot's alone.) Deleting the topic through the API, by
 * contrast, removes the directory and boots fine. */
START_TEST(test_missing_partition_dir)
{
    ck_assert_int_eq(vs_node_start(&node, args, START_MS), 0);
    struct dr_sess s;
    dr_login(&s, &node, 0x9100);
    dr_create_stream(&s, "st");
    dr_create_topic(&s, 0, "tp", 2, NULL, 0);
    for (uint32_t p = 0; p < 2; p++) {
        size_t bl, len;
        uint8_t *batch = dr_batch("x", 3, &bl);
        uint8_t *body = dr_send_body(0, 0, 2, &p, 4, batch, bl, 3, &len);
        ck_assert_uint_eq(dr_send(&s, body, len, NULL, NULL), 0);
        free(batch);
        free(body);
    }
    dr_close(&s);
    ck_assert_int_eq(vs_node_stop(&node, START_MS), 0);
    char parts[600], victim[1300] = "";
    snprintf(parts, sizeof(parts), "%s/%s", node.data_dir, VS_PARTITIONS_DIR);
    DIR *d = opendir(parts);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, "0.0.1.", 6) == 0)
            snprintf(victim, sizeof(victim), "%s/%s", parts, de->d_name);
    closedir(d);
    ck_assert(victim[0]);
    ck_assert_int_eq(nftw(victim, rm_cb, 16, FTW_DEPTH | FTW_PHYS), 0);
    (void)truncate(node.log_file, 0);
    int rc = vs_node_start(&node, args, START_MS);
    if (rc == 0)
        rc = vs_node_wait_exit(&node, START_MS);
    else
        ck_assert_int_eq(rc, -ECHILD);
    ck_assert(WIFEXITED(node.status) &&
              WEXITSTATUS(node.status) == VS_EXIT_FATAL);
    ck_assert_int_eq(vs_file_contains(node.log_file, "0.0.1@"), 1);
    ck_assert_int_eq(vs_file_contains(node.log_file, "is missing"), 1);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("verdicts_agree");
    TCase *t = tcase_create("fixtures");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 300);
    tcase_add_test(t, test_inspect_and_boot_agree);
    tcase_add_test(t, test_missing_partition_dir);
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
