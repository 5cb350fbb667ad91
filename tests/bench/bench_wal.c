/*
 * tests/bench/bench_wal.c - WAL micro-benchmark (not run by make check).
 *
 *   bench_wal [DIR]   (default /tmp; a vs-bench-wal-XXXXXX dir is made
 *                      there and removed at the end)
 * Measures, on the real I/O layer with real fsync:
 *   1. wal_append (write + fsync per entry) entries/s, 4 KiB bodies;
 *   2. the same with 64 KiB bodies;
 *   3. the open scan (identity + chain + body checksums, index build) of
 *      a 256 MiB WAL, MB/s (written with fsync stubbed to save time; the
 *      page cache is warm, so this is the CPU + read-syscall cost).
 * Prints one line per measurement. Single-threaded; any process.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/checksum.h"
#include "common/layout.h"
#include "common/mem.h"
#include "shard/storage/journal.h"

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
mk(struct vs_hdr_prepare *h, uint8_t *body, size_t len, uint64_t op,
   struct vs_u128 parent)
{
    memset(h, 0, sizeof(*h));
    body[0] = (uint8_t)op;
    h->f.size = (uint32_t)(VS_HEADER_SIZE + len);
    h->f.release = VS_WIRE_FORMAT_VERSION;
    h->f.command = VS_CMD_PREPARE;
    h->op = op;
    h->parent = parent;
    vs_prepare_seal(h, body, len);
}

/* Appends `count` entries of body_len; returns seconds. */
static double
run_appends(struct vs_sio *io, const char *dir, size_t body_len, uint64_t count)
{
    struct wal w;
    struct wal_options opt = {0};
    if (wal_open(&w, io, dir, &opt, NULL) != 0) {
        fprintf(stderr, "wal_open failed\n");
        exit(1);
    }
    uint8_t *body = vs_xcalloc(1, body_len);
    struct vs_hdr_prepare h;
    struct vs_u128 parent = {0, 0};
    double t0 = now_s();
    for (uint64_t op = 1; op <= count; op++) {
        mk(&h, body, body_len, op, parent);
        int rc = wal_append(&w, &h, body, body_len);
        if (rc != 0) {
            fprintf(stderr, "append: %s\n", sio_strerror(rc));
            exit(1);
        }
        parent = h.f.checksum;
    }
    double dt = now_s() - t0;
    wal_close(&w);
    free(body);
    return dt;
}

static void
reset(const char *dir)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, VS_JOURNAL_FILE);
    unlink(path);
}

/* fsync stubbed out, for writing the big scan fixture quickly */
static int
nosync(struct vs_sio *io, int fd)
{
    (void)io;
    (void)fd;
    return 0;
}

static int
nodirsync(struct vs_sio *io, const char *dir)
{
    (void)io;
    (void)dir;
    return 0;
}

int
main(int argc, char **argv)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/vs-bench-wal-XXXXXX",
             argc > 1 ? argv[1] : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    struct vs_sio io;
    sio_init_real(&io);

    const struct {
        size_t body;
        uint64_t n;
    } cases[] = {{4096, 2000}, {65536, 500}};
    for (size_t i = 0; i < 2; i++) {
        reset(dir);
        double dt = run_appends(&io, dir, cases[i].body, cases[i].n);
        printf("append+fsync %5zu B bodies: %llu entries in %.3f s = %.0f "
               "entries/s (%.1f MB/s)\n",
               cases[i].body, (unsigned long long)cases[i].n, dt,
               (double)cases[i].n / dt,
               (double)cases[i].n * (double)(cases[i].body + 256) / dt / 1e6);
    }

    reset(dir);
    struct vs_sio fast;
    sio_init_real(&fast);
    fast.fsync = nosync;
    fast.fdatasync = NULL; /* the journal's mark: nosync too */
    fast.dir_fsync = nodirsync;
    size_t body = 65536 - 256;
    uint64_t n = (256ull << 20) / 65536;
    run_appends(&fast, dir, body, n);
    struct wal w;
    struct wal_scan scan;
    struct wal_options opt = {.read_only = 1};
    double t0 = now_s();
    int rc = wal_open(&w, &io, dir, &opt, &scan);
    double dt = now_s() - t0;
    if (rc != 0 || scan.verdict != WAL_CLEAN || scan.entries != n) {
        fprintf(stderr, "scan failed: %d %s\n", rc, scan.reason);
        return 1;
    }
    printf("scan of a %.0f MiB WAL (%llu entries of 64 KiB): %.3f s = %.0f "
           "MB/s\n",
           (double)scan.file_size / (1 << 20), (unsigned long long)n, dt,
           (double)scan.file_size / dt / 1e6);
    wal_close(&w);
    reset(dir);
    rmdir(dir);
    return 0;
}
