/*
 * tests/bench/bench_data.c - partition engine throughput (not run by make
 * check): append of 1000-byte messages in batches of 1000 with fsync per
 * batch and with the interval policy, a raw write+fdatasync loop of the
 * same batch size in the same run (the ratio is reported), and reads
 * with and without per-read checksum verification (alternating rounds,
 * MB/s of each and their ratio reported).
 *
 * Usage: bench_data [DIR [BATCHES]]   (default: a /tmp dir, 100 batches)
 * Bench code only: it reads the clock, the engine never does.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/data/pdir.h"
#include "shard/storage/io.h"

#define MSGS    1000u
#define MSG_LEN 1000u

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static uint8_t *
make_batch(size_t *len)
{
    const uint8_t **pl = calloc(MSGS, sizeof(*pl));
    uint32_t *plen = calloc(MSGS, sizeof(*plen));
    uint8_t *payload = malloc(MSG_LEN);
    for (uint32_t i = 0; i < MSG_LEN; i++)
        payload[i] = (uint8_t)(i * 7 + 3);
    for (uint32_t i = 0; i < MSGS; i++) {
        pl[i] = payload;
        plen[i] = MSG_LEN;
    }
    size_t cap = BATCH_HEADER_SIZE + MSGS * (BATCH_FRAME_SIZE + MSG_LEN);
    uint8_t *b = malloc(cap);
    *len = batch_build(b, cap, 1, MSGS, pl, plen, NULL, NULL, NULL);
    free(pl);
    free(plen);
    free(payload);
    return b;
}

/* Puts a stamped batch back into its client form. */
static void
unstamp(uint8_t *b, uint64_t client_checksum)
{
    memset(b, 0, 24);
    vs_store_u64(b + BATCH_OFF_CHECKSUM, client_checksum);
}

static void
report(const char *what, double secs, uint64_t bytes, uint64_t msgs)
{
    printf("%-34s %8.1f MB/s %10.0f msgs/s (%.3f s)\n", what,
           (double)bytes / secs / 1e6, (double)msgs / secs, secs);
}

static double
run_append(const char *parts, struct part_id *id, enum part_durability d,
           uint8_t *b, size_t len, int nb, int drop)
{
    struct vs_sio io;
    sio_init_real(&io);
    struct part_opts o;
    part_opts_default(&o);
    o.durability = d;
    struct vs_part *p = NULL;
    struct part_verdict v;
    if (part_open(&io, parts, id, &o, 1, 0, &p, &v) != 0) {
        fprintf(stderr, "open failed: %s\n", v.msg);
        exit(1);
    }
    uint64_t ck = batch_checksum_field(b);
    double t0 = now_s();
    for (int i = 0; i < nb; i++) {
        unstamp(b, ck);
        if (part_append(p, b, len, (uint64_t)i, NULL, NULL) != 0) {
            fprintf(stderr, "append failed\n");
            exit(1);
        }
    }
    if (part_flush(p) != 0)
        exit(1);
    double t = now_s() - t0;
    part_close(p);
    unstamp(b, ck);
    if (drop) /* every phase then follows a deleted file, like raw */
        pdir_remove(&io, parts, id);
    return t;
}

int
main(int argc, char **argv)
{
    char root[512];
    int own = 0;
    if (argc > 1) {
        snprintf(root, sizeof(root), "%s", argv[1]);
    } else {
        snprintf(root, sizeof(root), "/tmp/vs-bench-data-XXXXXX");
        if (!mkdtemp(root))
            return 1;
        own = 1;
    }
    int nb = argc > 2 ? atoi(argv[2]) : 100;
    char parts[600];
    snprintf(parts, sizeof(parts), "%s/partitions", root);
    size_t len;
    uint8_t *b = make_batch(&len);
    uint64_t bytes = (uint64_t)len * (uint64_t)nb;
    uint64_t msgs = (uint64_t)MSGS * (uint64_t)nb;
    printf("batch: %u messages x %u B = %zu B; %d batches\n", MSGS, MSG_LEN,
           len, nb);

    /* A warm-up round, then two rounds of raw / every-batch / interval,
     * interleaved so that the writeback of one phase burdens the next equally;
     * the ratio is taken over both rounds. */
    char raw[700];
    snprintf(raw, sizeof(raw), "%s/raw.log", root);
    double sum_raw = 0, sum_every = 0, sum_int = 0;
    struct part_id id1 = {1, 1, 0, 1};
    for (int round = 0; round < 3; round++) {
        if (round == 0)
            printf("(warm-up round, not counted)\n");
        unlink(raw);
        int fd = open(raw, O_CREAT | O_EXCL | O_WRONLY, 0600);
        if (fd == -1)
            return 1;
        double t0 = now_s();
        for (int i = 0; i < nb; i++) {
            size_t done = 0;
            while (done < len) {
                ssize_t n = pwrite(fd, b + done, len - done,
                                   (off_t)((size_t)i * len + done));
                if (n == -1 && errno == EINTR)
                    continue;
                if (n <= 0)
                    return 1;
                done += (size_t)n;
            }
            if (fdatasync(fd) == -1)
                return 1;
        }
        double t_raw = now_s() - t0;
        close(fd);
        unlink(raw);
        report("raw write+fdatasync per batch", t_raw, bytes, msgs);
        struct part_id ide = {1, 1, (uint32_t)(10 + round), 1};
        struct part_id idi = {1, 1, (uint32_t)(20 + round), 1};
        double t_every =
            run_append(parts, &ide, PART_FSYNC_EVERY_BATCH, b, len, nb, 1);
        report("append, fsync every batch", t_every, bytes, msgs);
        double t_int =
            run_append(parts, &idi, PART_FSYNC_INTERVAL, b, len, nb, 1);
        report("append, interval (4 MiB) + flush", t_int, bytes, msgs);
        if (round == 0)
            continue;
        sum_raw += t_raw;
        sum_every += t_every;
        sum_int += t_int;
    }
    printf("fsync-per-batch throughput / raw loop throughput = %.2f\n",
           sum_raw / sum_every);
    printf("interval throughput / raw loop throughput = %.2f\n",
           sum_raw / sum_int);

    /* reads: poll everything, 1000 messages at a time, with per-read
     * verification of every message checksum (the default) and without,
     * alternating rounds in the same run (round 0 warms the page cache) */
    (void)run_append(parts, &id1, PART_FSYNC_INTERVAL, b, len, nb, 0);
    struct vs_sio io;
    sio_init_real(&io);
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    double sum_v[2] = {0, 0};
    uint64_t sum_b[2] = {0, 0};
    for (int round = 0; round < 7; round++) {
        int verify = round % 2; /* 0: off, 1: on */
        struct part_opts po;
        part_opts_default(&po);
        po.verify_reads = verify;
        struct vs_part *p = NULL;
        if (part_open(&io, parts, &id1, &po, 0, 0, &p, NULL) != 0)
            return 1;
        uint64_t got = 0, rbytes = 0;
        double t0 = now_s();
        for (uint64_t off = 0; off < msgs;) {
            struct part_poll_result r;
            vs_wbuf_reset(&w);
            if (part_poll(p, PART_POLL_OFFSET, off, MSGS, SIZE_MAX, &w, &r) !=
                    0 ||
                r.count == 0)
                return 1;
            got += r.count;
            rbytes += w.len;
            off = r.last_offset + 1;
        }
        double t_read = now_s() - t0;
        report(verify ? "poll by offset (page cache), verified"
                      : "poll by offset (page cache), not verified",
               t_read, rbytes, got);
        if (round >= 1) {
            sum_v[verify] += t_read;
            sum_b[verify] += rbytes;
        }
        if (round == 6) {
            /* unaligned reads: every poll trims two batches */
            got = rbytes = 0;
            t0 = now_s();
            for (uint64_t off = 500; off + MSGS <= msgs;) {
                struct part_poll_result r;
                vs_wbuf_reset(&w);
                if (part_poll(p, PART_POLL_OFFSET, off, MSGS, SIZE_MAX, &w,
                              &r) != 0 ||
                    r.count == 0)
                    return 1;
                got += r.count;
                rbytes += w.len;
                off = r.last_offset + 1;
            }
            t_read = now_s() - t0;
            report(verify ? "poll, unaligned (trimmed), verified"
                          : "poll, unaligned (trimmed), not verified",
                   t_read, rbytes, got);
        }
        part_close(p);
    }
    printf("poll MB/s verified %.1f, not verified %.1f (ratio %.2f)\n",
           (double)sum_b[1] / sum_v[1] / 1e6, (double)sum_b[0] / sum_v[0] / 1e6,
           ((double)sum_b[1] / sum_v[1]) / ((double)sum_b[0] / sum_v[0]));
    vs_wbuf_fini(&w);
    free(b);
    if (own)
        nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
