/*
 * tests/unit/check_sim_sio.c - the simulator's file system (tests/sim/
 * sim_sio.h): fsynced bytes and fsynced directory entries survive a
 * crash; unsynced writes are applied, dropped or torn and nothing else;
 * a name created without a directory fsync may vanish, never with one;
 * an armed crash fails its call and every later one (the storage helpers
 * make it fatal) and a crash clears it; latent sectors fail reads until
 * rewritten; flips change the durable image; an fsync through a dup
 * covers the file; errors are clean refusals;
 * the real partition storage opens, appends, crashes and recovers on it,
 * also with many writes unsynced at once (the interval policy's batches,
 * a replicated partition's records and batches): a power loss never
 * leaves it refusing to open.
 * Test code only.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/checksum.h"
#include "common/wire.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/data/pjournal.h"
#include "shard/storage/io.h"
#include "tests/sim/sim_sio.h"
#include "tests/unit/data_testutil.h"

static char g_root[256], g_fs[300];

static void
setup(void)
{
    char parts[300];
    dt_mkdtemp(g_root, sizeof(g_root), parts, sizeof(parts));
    snprintf(g_fs, sizeof(g_fs), "%s/fs", g_root);
}

static void
teardown(void)
{
    dt_rm_rf(g_root);
}

static void
path_of(char *out, size_t cap, const char *rel)
{
    snprintf(out, cap, "%s/%s", g_fs, rel);
}

static int
put(struct vs_sio *io, const char *rel, const char *text, int sync)
{
    char p[400];
    path_of(p, sizeof(p), rel);
    int fd = sio_open(io, p, O_CREAT | O_WRONLY, 0600);
    if (fd < 0)
        return fd;
    int rc = sio_pwrite_all(io, fd, text, strlen(text), 0, p);
    if (rc == 0 && sync)
        rc = sio_fsync(io, fd, p);
    sio_close(io, fd);
    return rc;
}

/* The file's content after a crash: its length, -1 if absent. */
static long
get(struct vs_sio *io, const char *rel, char *buf, size_t cap)
{
    char p[400];
    path_of(p, sizeof(p), rel);
    int fd = sio_open(io, p, O_RDONLY, 0);
    if (fd < 0)
        return -1;
    ssize_t r = io->pread(io, fd, buf, cap - 1, 0);
    sio_close(io, fd);
    if (r < 0)
        return -2;
    buf[r] = '\0';
    return (long)r;
}

START_TEST(synced_survives)
{
    struct sim_sio *s;
    ck_assert_int_eq(sim_sio_create(g_fs, 1, 500, &s), 0);
    struct vs_sio *io = sim_sio_io(s);
    char d[400], buf[64];
    path_of(d, sizeof(d), "a");
    ck_assert_int_eq(sio_mkdir(io, d, 0700), 0);
    ck_assert_int_eq(sio_dir_fsync(io, g_fs), 0);
    ck_assert_int_eq(put(io, "a/f", "hello", 1), 0);
    ck_assert_int_eq(sio_dir_fsync(io, d), 0);
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(sim_sio_crash(s), 0);
        ck_assert_int_eq(get(io, "a/f", buf, sizeof(buf)), 5);
        ck_assert_str_eq(buf, "hello");
    }
    path_of(d, sizeof(d), "a/f");
    ck_assert_int_eq(sim_sio_size(s, d), 5);
    sim_sio_destroy(s);
}
END_TEST

/* An unsynced overwrite of a synced file: old, new, or a torn mix. */
START_TEST(unsynced_applied_dropped_or_torn)
{
    int seen_old = 0, seen_new = 0, seen_torn = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        struct sim_sio *s;
        ck_assert_int_eq(sim_sio_create(g_fs, seed, 300, &s), 0);
        struct vs_sio *io = sim_sio_io(s);
        ck_assert_int_eq(put(io, "f", "aaaaaaaa", 1), 0);
        ck_assert_int_eq(sio_dir_fsync(io, g_fs), 0);
        ck_assert_int_eq(put(io, "f", "bbbbbbbb", 0), 0);
        ck_assert_int_eq(sim_sio_crash(s), 0);
        char buf[64];
        ck_assert_int_eq(get(io, "f", buf, sizeof(buf)), 8);
        if (strcmp(buf, "aaaaaaaa") == 0) {
            seen_old++;
        } else if (strcmp(buf, "bbbbbbbb") == 0) {
            seen_new++;
        } else {
            /* a cut: b's then a's */
            size_t k = strspn(buf, "b");
            ck_assert_msg(strspn(buf + k, "a") == 8 - k, "bytes %s", buf);
            seen_torn++;
        }
        sim_sio_destroy(s);
    }
    ck_assert(seen_old > 0 && seen_new > 0 && seen_torn > 0);
}
END_TEST

START_TEST(names_need_dir_fsync)
{
    int lost = 0, kept = 0;
    for (uint64_t seed = 1; seed <= 100; seed++) {
        struct sim_sio *s;
        ck_assert_int_eq(sim_sio_create(g_fs, seed, 0, &s), 0);
        struct vs_sio *io = sim_sio_io(s);
        ck_assert_int_eq(put(io, "new", "x", 1), 0);
        ck_assert_int_eq(put(io, "durable", "y", 1), 0);
        ck_assert_int_eq(sio_dir_fsync(io, g_fs), 0);
        ck_assert_int_eq(put(io, "late", "z", 1), 0);
        char p[400];
        path_of(p, sizeof(p), "durable");
        ck_assert_int_eq(sio_unlink(io, p), 0);
        ck_assert_int_eq(sim_sio_crash(s), 0);
        char buf[16];
        ck_assert_int_eq(get(io, "new", buf, sizeof(buf)), 1);
        long late = get(io, "late", buf, sizeof(buf));
        ck_assert(late == -1 || late == 1);
        if (late < 0)
            lost++;
        else
            kept++;
        sim_sio_destroy(s);
    }
    ck_assert(lost > 0 && kept > 0);
}
END_TEST

START_TEST(rename_is_atomic)
{
    for (uint64_t seed = 1; seed <= 60; seed++) {
        struct sim_sio *s;
        ck_assert_int_eq(sim_sio_create(g_fs, seed, 0, &s), 0);
        struct vs_sio *io = sim_sio_io(s);
        ck_assert_int_eq(put(io, "state", "old", 1), 0);
        ck_assert_int_eq(sio_dir_fsync(io, g_fs), 0);
        ck_assert_int_eq(put(io, "state.tmp", "new", 1), 0);
        char a[400], b[400];
        path_of(a, sizeof(a), "state.tmp");
        path_of(b, sizeof(b), "state");
        ck_assert_int_eq(sio_rename(io, a, b), 0);
        int synced = seed % 2;
        if (synced)
            ck_assert_int_eq(sio_dir_fsync(io, g_fs), 0);
        ck_assert_int_eq(sim_sio_crash(s), 0);
        char buf[16];
        ck_assert_int_eq(get(io, "state", buf, sizeof(buf)), 3);
        ck_assert(strcmp(buf, "new") == 0 || (!synced && !strcmp(buf, "old")));
        sim_sio_destroy(s);
    }
}
END_TEST

START_TEST(dir_rename_moves_subtree)
{
    struct sim_sio *s;
    ck_assert_int_eq(sim_sio_create(g_fs, 7, 0, &s), 0);
    struct vs_sio *io = sim_sio_io(s);
    char t[400], f[400];
    path_of(t, sizeof(t), "tmp");
    path_of(f, sizeof(f), "final");
    ck_assert_int_eq(sio_mkdir(io, t, 0700), 0);
    ck_assert_int_eq(put(io, "tmp/x", "data", 1), 0);
    ck_assert_int_eq(sio_dir_fsync(io, t), 0);
    ck_assert_int_eq(sio_dir_rename(io, t, f), 0);
    ck_assert_int_eq(sio_dir_fsync(io, g_fs), 0);
    ck_assert_int_eq(sim_sio_crash(s), 0);
    char buf[16];
    ck_assert_int_eq(get(io, "final/x", buf, sizeof(buf)), 4);
    ck_assert_int_eq(get(io, "tmp/x", buf, sizeof(buf)), -1);
    sim_sio_destroy(s);
}
END_TEST

START_TEST(armed_crash_is_fatal_until_crash)
{
    struct sim_sio *s;
    ck_assert_int_eq(sim_sio_create(g_fs, 3, 0, &s), 0);
    struct vs_sio *io = sim_sio_io(s);
    ck_assert_int_eq(put(io, "f", "keep", 1), 0);
    ck_assert_int_eq(sio_dir_fsync(io, g_fs), 0);
    sim_sio_arm_crash(s, 2); /* the open (O_CREAT) is the first */
    ck_assert_int_eq(put(io, "f", "gone", 1), -VS_EFATAL);
    ck_assert(sim_sio_crashed(s));
    ck_assert(sio_is_fatal(io));
    char p[400];
    path_of(p, sizeof(p), "g");
    ck_assert_int_lt(sio_open(io, p, O_CREAT | O_WRONLY, 0600), 0);
    ck_assert_int_eq(sim_sio_crash(s), 0);
    ck_assert(!sim_sio_crashed(s));
    ck_assert(!sio_is_fatal(io));
    char buf[16];
    long n = get(io, "f", buf, sizeof(buf));
    ck_assert_int_eq(n, 4);
    /* the firing write landed at most a pending prefix of "gone" */
    size_t k = 0;
    while (k < 4 && buf[k] == "gone"[k])
        k++;
    ck_assert_str_eq(buf + k, &"keep"[k]);
    ck_assert_int_eq(put(io, "f", "next", 1), 0);
    sim_sio_destroy(s);
}
END_TEST

START_TEST(latent_and_flip)
{
    struct sim_sio *s;
    ck_assert_int_eq(sim_sio_create(g_fs, 4, 0, &s), 0);
    struct vs_sio *io = sim_sio_io(s);
    char big[1500];
    memset(big, 'q', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ck_assert_int_eq(put(io, "f", big, 1), 0);
    ck_assert_int_eq(sio_dir_fsync(io, g_fs), 0);
    ck_assert_int_eq(sim_sio_crash(s), 0);
    char p[400];
    path_of(p, sizeof(p), "f");
    ck_assert_int_eq(sim_sio_latent(s, p, 600), 1);
    ck_assert_int_eq(sim_sio_flip(s, p, 10, 0x01), 1);
    path_of(big, sizeof(big), "nope");
    ck_assert_int_eq(sim_sio_flip(s, big, 0, 1), 0);
    ck_assert_int_eq(sim_sio_latent(s, big, 0), 0);
    int fd = sio_open(io, p, O_RDWR, 0);
    ck_assert_int_ge(fd, 0);
    char b[1500];
    ck_assert_int_eq(sio_pread_all(io, fd, b, 1499, 0, NULL), -EIO);
    ck_assert_int_eq(sio_pread_all(io, fd, b, 100, 0, NULL), 0);
    ck_assert_int_eq(b[10], 'q' ^ 0x01);
    ck_assert_int_eq(sio_pread_all(io, fd, b, 100, 1100, NULL), 0);
    memset(b, 'r', 512);
    ck_assert_int_eq(sio_pwrite_all(io, fd, b, 512, 512, p), 0);
    ck_assert_int_eq(sio_pread_all(io, fd, b, 1499, 0, NULL), 0);
    sio_close(io, fd);
    sim_sio_destroy(s);
}
END_TEST

/* An fsync through a duplicate (taken before the handle closed) makes the
 * file's bytes durable. */
START_TEST(dup_fsync)
{
    struct sim_sio *s;
    ck_assert_int_eq(sim_sio_create(g_fs, 8, 1000, &s), 0);
    struct vs_sio *io = sim_sio_io(s);
    char p[400];
    path_of(p, sizeof(p), "f");
    int fd = sio_open(io, p, O_CREAT | O_RDWR, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(sio_dir_fsync(io, g_fs), 0);
    ck_assert_int_eq(sio_pwrite_all(io, fd, "durable", 7, 0, p), 0);
    int d = sim_sio_dup(s, fd);
    ck_assert_int_ge(d, 0);
    ck_assert_int_eq(sim_sio_dup(s, 1000), -EBADF);
    sio_close(io, fd);
    ck_assert_int_eq(sio_fsync(io, d, p), 0);
    sio_close(io, d);
    ck_assert_int_eq(sim_sio_crash(s), 0);
    char buf[16];
    ck_assert_int_eq(get(io, "f", buf, sizeof(buf)), 7);
    ck_assert_str_eq(buf, "durable");
    sim_sio_destroy(s);
}
END_TEST

START_TEST(refusals)
{
    struct sim_sio *s;
    ck_assert_int_eq(sim_sio_create(g_fs, 5, 0, &s), 0);
    struct vs_sio *io = sim_sio_io(s);
    ck_assert_int_eq(sio_open(io, "/etc/passwd", O_RDONLY, 0), -EACCES);
    char p[400], q[400];
    path_of(p, sizeof(p), "missing");
    ck_assert_int_eq(sio_open(io, p, O_RDONLY, 0), -ENOENT);
    path_of(p, sizeof(p), "missing/x");
    ck_assert_int_eq(sio_open(io, p, O_CREAT | O_RDWR, 0600), -ENOENT);
    path_of(p, sizeof(p), "d");
    ck_assert_int_eq(sio_mkdir(io, p, 0700), 0);
    ck_assert_int_eq(sio_mkdir(io, p, 0700), 0); /* existing: fine */
    ck_assert_int_eq(sio_open(io, p, O_RDONLY, 0), -EISDIR);
    ck_assert_int_eq(put(io, "d/x", "1", 1), 0);
    ck_assert_int_eq(sio_rmdir(io, p), -ENOTEMPTY);
    path_of(q, sizeof(q), "d/x/y");
    ck_assert_int_eq(sio_open(io, q, O_CREAT | O_RDWR, 0600), -ENOTDIR);
    path_of(q, sizeof(q), "nothere");
    ck_assert_int_eq(sio_unlink(io, q), -ENOENT);
    ck_assert_int_eq(sio_rmdir(io, q), -ENOENT);
    sim_sio_destroy(s);
}
END_TEST

static void
open_p(struct vs_sio *io, const char *parts, struct vs_part **p)
{
    static const struct part_id id = {1, 2, 3, 77};
    struct part_opts o;
    struct part_verdict v;
    part_opts_default(&o);
    o.segment_size = 8 * 1024;
    int rc = part_open(io, parts, &id, &o, 1, 0, p, &v);
    ck_assert_msg(rc == 0, "open: %d %s", rc, v.msg);
}

/* The real partition storage: every-batch appends survive every crash;
 * an unsynced append is cut or kept whole; offsets never go back. */
START_TEST(partition_on_sim_sio)
{
    for (uint64_t seed = 1; seed <= 12; seed++) {
        struct sim_sio *s;
        ck_assert_int_eq(sim_sio_create(g_fs, seed, 500, &s), 0);
        struct vs_sio *io = sim_sio_io(s);
        char parts[400];
        path_of(parts, sizeof(parts), "partitions");
        /* the data directory's layout is durable before any partition */
        ck_assert_int_eq(sio_mkdir(io, parts, 0700), 0);
        ck_assert_int_eq(sio_dir_fsync(io, g_fs), 0);
        struct vs_part *p;
        open_p(io, parts, &p);
        uint64_t acked = 0;
        for (int round = 0; round < 4; round++) {
            for (int i = 0; i < 5; i++) {
                uint32_t pl[3] = {300, 10, 900}, hl[3] = {0, 0, 0};
                size_t len;
                uint8_t *b =
                    dt_batch(seed * 100 + (uint64_t)i, 3, pl, hl, &len);
                struct part_append_result r;
                enum batch_err be;
                ck_assert_int_eq(part_append(p, b, len, 1000, &r, &be), 0);
                ck_assert_uint_eq(r.base_offset, acked);
                acked += 3;
                free(b);
            }
            uint32_t pl[1] = {100}, hl[1] = {0};
            size_t len;
            uint8_t *b = dt_batch(seed, 1, pl, hl, &len);
            struct part_append_result r;
            ck_assert_int_eq(part_append_nosync(p, b, len, 1000, &r, NULL), 0);
            free(b);
            part_abandon(p);
            ck_assert_int_eq(sim_sio_crash(s), 0);
            open_p(io, parts, &p);
            struct part_stats st;
            part_stats(p, &st);
            ck_assert_msg(
                st.next_offset == acked || st.next_offset == acked + 1,
                "seed %llu next %llu acked %llu", (unsigned long long)seed,
                (unsigned long long)st.next_offset, (unsigned long long)acked);
            acked = st.next_offset;
            struct vs_wbuf out;
            vs_wbuf_init(&out);
            struct part_poll_result pr;
            ck_assert_int_eq(
                part_poll(p, PART_POLL_OFFSET, 0, 100000, 1u << 24, &out, &pr),
                0);
            ck_assert_uint_eq(pr.count, acked);
            vs_wbuf_fini(&out);
        }
        part_abandon(p);
        sim_sio_destroy(s);
    }
}
END_TEST

/* A file system for seed with tears at 40%, its partitions directory
 * durable (path in parts); *o the default options, 64 KiB segments. */
static struct vs_sio *
tail_fs(uint64_t seed, struct sim_sio **s, char *parts, size_t cap,
        struct part_opts *o)
{
    part_opts_default(o);
    o->segment_size = 64 * 1024;
    ck_assert_int_eq(sim_sio_create(g_fs, seed, 400, s), 0);
    struct vs_sio *io = sim_sio_io(*s);
    path_of(parts, cap, "partitions");
    ck_assert_int_eq(sio_mkdir(io, parts, 0700), 0);
    ck_assert_int_eq(sio_dir_fsync(io, g_fs), 0);
    return io;
}

/* Under the interval policy many batches are written between fsyncs: a
 * power loss keeps any subset of them, torn or whole, and the partition
 * opens (the unsynced group tail is cut), with every batch synced before
 * the crash and never more than what was written. */
START_TEST(interval_power_loss_opens)
{
    static const struct part_id id = {1, 2, 3, 78};
    for (uint64_t seed = 1; seed <= 40; seed++) {
        struct sim_sio *s;
        char parts[400];
        struct part_opts o;
        struct vs_sio *io = tail_fs(seed, &s, parts, sizeof(parts), &o);
        o.durability = PART_FSYNC_INTERVAL;
        o.fsync_bytes = 8 * 1024;
        o.frontier_step = 1000;
        o.limits.max_batch_bytes = 4096;
        uint64_t synced = 0, written = 0;
        for (int round = 0; round < 3; round++) {
            struct vs_part *p;
            struct part_verdict v;
            int rc = part_open(io, parts, &id, &o, 1, 0, &p, &v);
            ck_assert_msg(rc == 0, "seed %llu round %d: %d %s",
                          (unsigned long long)seed, round, rc, v.msg);
            uint32_t got = 0;
            {
                struct vs_wbuf out;
                struct part_poll_result pr;
                vs_wbuf_init(&out);
                ck_assert_int_eq(part_poll(p, PART_POLL_OFFSET, 0, 1000000,
                                           1u << 24, &out, &pr),
                                 0);
                got = pr.count;
                vs_wbuf_fini(&out);
            }
            ck_assert_uint_ge(got, synced);
            ck_assert_uint_le(got, written);
            synced = written = got;
            ck_assert_int_eq(part_flush(p), 0);
            for (int i = 0; i < 12; i++) {
                uint32_t pl[2] = {200 + (uint32_t)(seed % 300), 40},
                         hl[2] = {0, 0};
                size_t len;
                uint8_t *b = dt_batch(seed * 31 + (uint64_t)i, 2, pl, hl, &len);
                ck_assert_int_eq(part_append(p, b, len, 1000, NULL, NULL), 0);
                free(b);
                written += 2;
            }
            part_abandon(p);
            ck_assert_int_eq(sim_sio_crash(s), 0);
        }
        sim_sio_destroy(s);
    }
}
END_TEST

static void
pj_prepare(struct vs_hdr_prepare *h, uint64_t op, struct vs_u128 parent,
           const void *body, uint32_t len)
{
    memset(h, 0, sizeof(*h));
    h->f.cluster = (struct vs_u128){7, 7};
    h->f.size = (uint32_t)sizeof(*h) + len;
    h->f.release = VS_WIRE_FORMAT_VERSION;
    h->f.command = VS_CMD_PREPARE;
    h->parent = parent;
    h->op = op;
    h->operation = VS_OP_SEND_MESSAGES;
    h->group = 99;
    vs_prepare_seal(h, body, len);
}

/* A replicated partition's group appends several ops (records and their
 * batches) before one fsync: a power loss keeps any subset of those
 * writes, and the journal opens with every op synced before the crash
 * (a faulty range, if any, only above them). */
START_TEST(pjournal_power_loss_opens)
{
    static const struct part_id id = {1, 2, 3, 79};
    for (uint64_t seed = 1; seed <= 40; seed++) {
        struct sim_sio *s;
        char parts[400];
        struct part_opts o;
        struct vs_sio *io = tail_fs(seed, &s, parts, sizeof(parts), &o);
        o.cut_damaged_tail = 1;
        o.replicated = 1;
        o.unsynced_max = 64u * 4096u; /* 64 ops of at most 4 KiB */
        uint64_t synced = 0, written = 0;
        for (int round = 0; round < 3; round++) {
            struct vs_part *p;
            struct part_verdict v;
            int rc = part_open(io, parts, &id, &o, 1, 0, &p, &v);
            ck_assert_msg(rc == 0, "seed %llu: %d %s", (unsigned long long)seed,
                          rc, v.msg);
            struct vs_pjournal *j;
            struct pj_recovered rec;
            rc = pj_open(p, 64, &j, &rec, &v);
            ck_assert_msg(rc == 0, "seed %llu round %d: pj_open %d %s",
                          (unsigned long long)seed, round, rc, v.msg);
            ck_assert_uint_ge(pj_head(j), synced);
            ck_assert_uint_le(pj_head(j), written);
            /* a record whose batch did not land whole is repaired,
             * never nacked (pjournal.h): only above the synced ops */
            ck_assert(rec.faulty_op == 0 ||
                      (rec.faulty_op > synced && rec.faulty_op <= written));
            pj_recovered_free(&rec);
            synced = written = pj_head(j);
            for (int i = 0; i < 10; i++) {
                uint32_t pl[2] = {100 + (uint32_t)(seed % 500), 30},
                         hl[2] = {0, 0};
                size_t len;
                uint8_t *b = dt_batch(seed * 17 + (uint64_t)i, 2, pl, hl, &len);
                struct part_stats ps;
                part_stats(p, &ps);
                batch_stamp(b, id.partition_id, ps.next_offset, 1000);
                struct vs_hdr_prepare h;
                pj_prepare(&h, pj_head(j) + 1, pj_head_checksum(j), b,
                           (uint32_t)len);
                ck_assert_int_eq(pj_append(j, &h, b, (uint32_t)len), 0);
                free(b);
                written++;
                if (i == 4) { /* half of them synced */
                    ck_assert_int_eq(pj_sync(j), 0);
                    synced = written;
                }
            }
            pj_close(j);
            part_abandon(p);
            ck_assert_int_eq(sim_sio_crash(s), 0);
        }
        sim_sio_destroy(s);
    }
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("sim_sio");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, synced_survives);
    tcase_add_test(t, unsynced_applied_dropped_or_torn);
    tcase_add_test(t, names_need_dir_fsync);
    tcase_add_test(t, rename_is_atomic);
    tcase_add_test(t, dir_rename_moves_subtree);
    tcase_add_test(t, armed_crash_is_fatal_until_crash);
    tcase_add_test(t, latent_and_flip);
    tcase_add_test(t, dup_fsync);
    tcase_add_test(t, refusals);
    tcase_add_test(t, partition_on_sim_sio);
    tcase_add_test(t, interval_power_loss_opens);
    tcase_add_test(t, pjournal_power_loss_opens);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
