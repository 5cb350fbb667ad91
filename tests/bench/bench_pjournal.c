/*
 * tests/bench/bench_pjournal.c - cost of the replicated partition's
 * journal (not run by make check): 1000-byte messages in batches of 1000
 * appended with an fsync per batch, through part_append (unreplicated)
 * and through pj_append + pj_sync (the batch, its .vsr record, two
 * fsyncs), alternating rounds in the same run; then the time pj_open
 * takes to recover the journal written.
 *
 * Usage: bench_pjournal [DIR [BATCHES]]   (default: a /tmp dir, 100)
 * Bench code only: it reads the clock, the engine never does.
 */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/checksum.h"
#include "common/wire.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/data/pjournal.h"
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

static struct vs_part *
open_part(struct vs_sio *io, const char *dir, uint32_t pid)
{
    struct part_opts o;
    part_opts_default(&o);
    o.cut_damaged_tail = 1;
    struct part_id id = {1, 1, pid, 1};
    struct vs_part *p = NULL;
    struct part_verdict v;
    if (part_open(io, dir, &id, &o, 1, 0, &p, &v) != 0) {
        fprintf(stderr, "part_open: %s\n", v.msg);
        exit(1);
    }
    return p;
}

int
main(int argc, char **argv)
{
    char tmp[] = "/tmp/vs-bench-pj-XXXXXX";
    const char *dir = argc > 1 ? argv[1] : mkdtemp(tmp);
    int batches = argc > 2 ? atoi(argv[2]) : 100;
    if (!dir || batches <= 0)
        return 1;
    struct vs_sio io;
    sio_init_real(&io);
    size_t len;
    uint8_t *tmpl = make_batch(&len);
    uint8_t *b = malloc(len);
    struct vs_part *plain = open_part(&io, dir, 1);
    struct vs_part *rep = open_part(&io, dir, 2);
    struct vs_pjournal *j = NULL;
    struct pj_recovered rec;
    struct part_verdict v;
    if (pj_open(rep, 1024, &j, &rec, &v) != 0)
        return 1;
    pj_recovered_free(&rec);
    double t_plain = 0, t_rep = 0;
    uint64_t offset = 0;
    struct vs_u128 parent = {0, 0};
    for (int i = 0; i < batches; i++) {
        memcpy(b, tmpl, len);
        double t0 = now_s();
        if (part_append(plain, b, len, 1000 + (uint64_t)i, NULL, NULL) != 0)
            return 1;
        t_plain += now_s() - t0;
        memcpy(b, tmpl, len);
        batch_stamp(b, 2, offset, 1000 + (uint64_t)i);
        struct vs_hdr_prepare h;
        memset(&h, 0, sizeof(h));
        h.f.size = (uint32_t)(sizeof(h) + len);
        h.f.release = VS_WIRE_FORMAT_VERSION;
        h.f.command = VS_CMD_PREPARE;
        h.op = (uint64_t)i + 1;
        h.parent = parent;
        h.operation = VS_OP_SEND_MESSAGES;
        t0 = now_s();
        vs_prepare_seal(&h, b, len);
        if (pj_append(j, &h, b, (uint32_t)len) != 0 || pj_sync(j) != 0)
            return 1;
        t_rep += now_s() - t0;
        parent = h.f.checksum;
        offset += MSGS;
    }
    double mb = (double)batches * (double)len / 1e6;
    printf("batches %d x %u msgs x %u B, fsync per batch\n", batches, MSGS,
           MSG_LEN);
    printf("part_append            %8.1f MB/s  %8.0f msgs/s\n", mb / t_plain,
           batches * (double)MSGS / t_plain);
    printf("pj_append + pj_sync    %8.1f MB/s  %8.0f msgs/s  (%.2fx the "
           "unreplicated time)\n",
           mb / t_rep, batches * (double)MSGS / t_rep, t_rep / t_plain);
    pj_close(j);
    part_close(rep);
    part_close(plain);
    rep = open_part(&io, dir, 2);
    double t0 = now_s();
    if (pj_open(rep, 1024, &j, &rec, &v) != 0)
        return 1;
    double t_open = now_s() - t0;
    printf("pj_open of %d ops       %8.1f ms (%zu headers)\n", batches,
           t_open * 1e3, rec.count);
    pj_recovered_free(&rec);
    pj_close(j);
    part_close(rep);
    free(b);
    free(tmpl);
    if (argc <= 1)
        nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
