/*
 * tests/fuzz/fuzz_seeds.c - writes the seed corpus of the fuzz targets.
 *
 * Role: `fuzz_seeds DIR` writes DIR/<target>/<name> for every target
 * whose seeds are made with the project's own encoders (valid
 * superblock records, batches, WAL files, snapshots, frames...), in each
 * target's input layout (see the target's header). The committed
 * tests/fuzz/corpus/ started from its output; rerun it after a format
 * change and commit what changed. Not a test: it checks nothing but its
 * own I/O. Callers: a developer, from the fuzz build (build-fuzz/).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "shard/data/batch.h"
#include "shard/storage/superblock.h"
#include "shard/storage/vsr_state.h"

static const char *out_root;

static void
seed_write(const char *target, const char *name, const void *buf, size_t len)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", out_root, target);
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
        perror(p);
        exit(1);
    }
    snprintf(p, sizeof(p), "%s/%s/%s", out_root, target, name);
    FILE *f = fopen(p, "wb");
    if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        perror(p);
        exit(1);
    }
}

/* ---- fuzz_superblock: [ctl][len_a u16][a][b] ---- */

static size_t
sb_record(uint64_t seq, uint8_t *out)
{
    struct vs_vsr_state s = {0};
    s.cluster.lo = 0x1122334455667788u;
    s.cluster.hi = 0x99aabbccddeeff00u;
    s.replica_id = 0;
    s.replica_count = 1;
    s.view = (uint32_t)seq;
    s.log_view = (uint32_t)seq;
    s.commit_max = seq * 10;
    s.checkpoint_op = seq * 5;
    uint8_t p[VSR_STATE_SIZE];
    vsr_state_encode(&s, p);
    return sb_record_encode(SB_VERSION, seq, p, sizeof(p), out);
}

static void
sb_seed(const char *name, uint8_t ctl, uint64_t seq_a, uint64_t seq_b)
{
    static uint8_t in[3 + 2 * SB_RECORD_MAX];
    size_t la = seq_a ? sb_record(seq_a, in + 3) : 0;
    size_t lb = seq_b ? sb_record(seq_b, in + 3 + la) : 0;
    in[0] = ctl;
    in[1] = (uint8_t)la;
    in[2] = (uint8_t)(la >> 8);
    seed_write("fuzz_superblock", name, in, 3 + la + lb);
}

static void
seeds_superblock(void)
{
    sb_seed("a1", 1, 1, 0);
    sb_seed("a1-b2", 3, 1, 2);
    sb_seed("a3-b2", 3, 3, 2);
    sb_seed("a3-b2-resealed", 3 | 4 | 8, 3, 2);
    sb_seed("none", 0, 0, 0);
}

/* ---- fuzz_batch: [ctl][batch] ---- */

static void
batch_seed(const char *name, uint8_t ctl, uint32_t count, int stamped)
{
    static uint8_t in[1 + 65536];
    const uint8_t *pay[4];
    const uint8_t *hdr[4];
    uint32_t plen[4], hlen[4];
    static const uint8_t hbytes[] = {1, 0, 0, 0, 'k', 1, 5, 0, 0, 0, 'v'};
    for (uint32_t i = 0; i < count; i++) {
        pay[i] = (const uint8_t *)"hello, vstream payload";
        plen[i] = 5 + 4 * i;
        hdr[i] = i == 1 ? hbytes : NULL;
        hlen[i] = i == 1 ? sizeof(hbytes) : 0;
    }
    size_t n = batch_build(in + 1, sizeof(in) - 1, 1700000000000000u, count,
                           pay, plen, hdr, hlen, NULL);
    if (n == 0) {
        fprintf(stderr, "batch_build failed\n");
        exit(1);
    }
    if (stamped)
        batch_stamp(in + 1, 3, 42, 1700000000000001u);
    in[0] = ctl;
    seed_write("fuzz_batch", name, in, 1 + n);
}

static void
seeds_batch(void)
{
    batch_seed("client-1", 1, 1, 0);
    batch_seed("client-3", 1 | 2, 3, 0);
    batch_seed("stored-4", 2, 4, 1);
    batch_seed("client-3-small-limits", 1 | 2 | 4, 3, 0);
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds DIR\n");
        return 1;
    }
    out_root = argv[1];
    if (mkdir(out_root, 0755) != 0 && errno != EEXIST) {
        perror(out_root);
        return 1;
    }
    seeds_superblock();
    seeds_batch();
    return 0;
}
