/*
 * tests/fuzz/fuzz_partition.c - libFuzzer target: partition recovery over
 * arbitrary files (shard/data: part_open over the format and state files,
 * segment logs and sparse indexes, and the consumer offset files).
 *
 * Each run creates a valid empty partition (1.2.3, created_op 7) in the
 * scratch directory, then replaces its files with the input's and opens
 * it again. Input: [ctl u8] then records [kind u8][len u16 LE][bytes]:
 * kind % 8 = 0 format, 1 state, 2/3 the .log/.index of the segment
 * starting at 0, 4/5 those of a segment starting at offset 3, 6 the
 * offsets file of consumer 7, 7 that of group 1 (created_op 5). ctl bit 0:
 * interval durability (else every-batch); bit 1: cut_damaged_tail; bit 2:
 * reseal (recompute the trailing XXH3 of format, state and offsets files
 * and every frame and batch checksum the walk of a log reaches), so
 * mutations reach past the checksums; bit 3: remove the default segment
 * 0 files when the input gives none.
 * Invariants checked (recovery never reports an offset that is not in the
 * files):
 *  - a refusal is -EBADMSG with a reason and a one-line message, and
 *    changes no file (but for the removal of an .index whose .log is
 *    absent, a leftover of a crashed segment deletion);
 *  - after an open: the stats agree with an independent walk of the .log
 *    files as left by the open (the last one checked batch by batch: every
 *    batch valid as a stored batch, offsets increasing across batches and
 *    segments; a sealed segment damaged between its index entries, which
 *    the open does not look at, only has to read without crashing);
 * first/current/next offsets are offsets of those batches; a poll from the
 * first offset returns exactly the messages in the files, in order, each record
 * a valid batch when it comes from the last segment (sealed segments are only
 * header-walked at open, so their records need only a sound header); a consumer
 * offset is absent, corrupt
 *    (-EBADMSG), or the value of a well-formed 16-byte file.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/storage/io.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[8] = {
    "format",
    "state",
    "00000000000000000000.log",
    "00000000000000000000.index",
    "00000000000000000003.log",
    "00000000000000000003.index",
    "offsets/consumers/7",
    "offsets/groups/1.5",
};

static void
reseal_log(uint8_t *b, size_t len)
{
    size_t pos = 0;
    while (len - pos >= BATCH_HEADER_SIZE) {
        uint8_t *r = b + pos;
        uint64_t bl = batch_length(r);
        if (bl < BATCH_HEADER_SIZE || bl > len - pos)
            return;
        size_t fo = BATCH_HEADER_SIZE;
        uint32_t n = 0;
        while (bl - fo >= BATCH_FRAME_SIZE) {
            uint8_t *f = r + fo;
            uint64_t fl = (uint64_t)BATCH_FRAME_SIZE +
                          vs_load_u32(f + BATCH_FOFF_PAYLOAD_LEN) +
                          vs_load_u32(f + BATCH_FOFF_HEADERS_LEN);
            if (fl > bl - fo)
                break;
            vs_store_u64(f, batch_frame_checksum(f, (size_t)fl));
            fo += (size_t)fl;
            n++;
        }
        if (fo == bl && n == batch_count(r) && n > 0)
            vs_store_u64(r + BATCH_OFF_CHECKSUM, batch_compute_checksum(r));
        pos += (size_t)bl;
    }
}

static uint8_t *
read_all(const char *dir, const char *name, size_t *len)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (f == NULL) {
        *len = 0;
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    fuzz_check(b != NULL, "malloc");
    fuzz_check(fread(b, 1, (size_t)n, f) == (size_t)n, "read a file");
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Digests of every file we may have written, to prove a refusal changed
 * nothing. */
static void
dir_digest(const char *dir, uint64_t d[8])
{
    for (int k = 0; k < 8; k++) {
        size_t n;
        uint8_t *b = read_all(dir, names[k], &n);
        d[k] = b ? vs_xxh3_64(b, n) + n + 1 : 0;
        free(b);
    }
}

struct walk {
    uint64_t messages;
    int any;
    uint64_t first, last;
};

/* Walks one .log as left by the open. The last segment (`verify`) must be
 * valid batches back to back. A sealed segment is checked by the open only
 * through its index and the header walk after the last entry
 * (partition.h), so damage between index entries is out of the open's
 * scope: a sealed segment that is not valid batches back to back returns
 * -1 (the caller then checks no more than that reads do not crash)
 * instead of failing. 0 when it walked cleanly. */
static int
walk_log(const uint8_t *b, size_t len, int verify, struct walk *w)
{
    size_t pos = 0;
    while (pos < len) {
        const uint8_t *r = b + pos;
        int sound = len - pos >= BATCH_HEADER_SIZE &&
                    batch_length(r) >= BATCH_HEADER_SIZE &&
                    batch_length(r) <= len - pos && batch_count(r) > 0 &&
                    (!w->any || batch_base_offset(r) > w->last);
        if (!verify && (!sound || batch_validate(r, (size_t)batch_length(r),
                                                 NULL, 0, NULL) != BATCH_OK))
            return -1;
        fuzz_check(sound, "the last segment's batches are sound and ordered");
        uint64_t bl = batch_length(r);
        if (verify)
            fuzz_check(batch_validate(r, (size_t)bl, NULL, 0, NULL) == BATCH_OK,
                       "every batch of the last segment is valid");
        uint64_t base = batch_base_offset(r);
        uint32_t n = batch_count(r);
        if (!w->any)
            w->first = base;
        w->any = 1;
        w->last = base + n - 1;
        w->messages += n;
        pos += (size_t)bl;
    }
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct sio_fault f;
    static int init;
    if (!init) {
        sio_fault_init(&f, 1);
        init = 1;
    }
    sio_fault_reset(&f);
    if (size < 1)
        return 0;
    uint8_t ctl = data[0];
    struct fuzz_in in = {data + 1, size - 1};

    const char *root = fuzz_dir();
    const struct part_id id = {1, 2, 3, 7};
    struct part_opts o;
    part_opts_default(&o);
    o.durability = (ctl & 1) ? PART_FSYNC_INTERVAL : PART_FSYNC_EVERY_BATCH;
    o.cut_damaged_tail = (ctl & 2) != 0;
    o.index_interval = 0;
    o.segment_size = 4096;
    struct vs_part *p = NULL;
    struct part_verdict v;
    int rc = part_open(&f.io, root, &id, &o, 1, 0, &p, &v);
    fuzz_check(rc == 0, "creating an empty partition works");
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", part_dir(p));
    fuzz_check(part_close(p) == 0, "closing it works");

    char sub[1100];
    snprintf(sub, sizeof(sub), "%s/offsets", dir);
    mkdir(sub, 0700);
    snprintf(sub, sizeof(sub), "%s/offsets/consumers", dir);
    mkdir(sub, 0700);
    snprintf(sub, sizeof(sub), "%s/offsets/groups", dir);
    mkdir(sub, 0700);
    int given[8] = {0};
    while (in.len >= 3) {
        int kind = fuzz_take_u8(&in) % 8;
        size_t len = fuzz_take_u8(&in);
        len |= (size_t)fuzz_take_u8(&in) << 8;
        size_t got;
        const uint8_t *src = fuzz_take(&in, len, &got);
        uint8_t *b = malloc(got + 1);
        fuzz_check(b != NULL, "malloc");
        memcpy(b, src, got);
        if (ctl & 4) {
            if ((kind == 0 || kind == 1 || kind >= 6) && got >= 8)
                vs_store_u64(b + got - 8, vs_xxh3_64(b, got - 8));
            if (kind == 2 || kind == 4)
                reseal_log(b, got);
        }
        fuzz_write_file(dir, names[kind], b, got);
        given[kind] = 1;
        free(b);
    }
    if ((ctl & 8) && !given[2] && !given[3]) {
        char path[1100];
        snprintf(path, sizeof(path), "%s/%s", dir, names[2]);
        unlink(path);
        snprintf(path, sizeof(path), "%s/%s", dir, names[3]);
        unlink(path);
    }

    uint64_t before[8], after[8];
    dir_digest(dir, before);
    memset(&v, 0, sizeof(v));
    rc = part_open(&f.io, root, &id, &o, 0, 0, &p, &v);
    if (rc != 0) {
        if (rc != -EBADMSG)
            fprintf(stderr, "part_open: %d (%s)\n", rc, v.msg);
        fuzz_check(rc == -EBADMSG || rc == -ENOENT || rc == -EINVAL ||
                       rc == -ENOSPC,
                   "a refusal is typed");
        if (rc == -EBADMSG) {
            fuzz_check(v.reason != PART_R_NONE, "a refusal has a reason");
            fuzz_check(v.msg[0] != '\0' && strchr(v.msg, '\n') == NULL,
                       "a refusal says why on one line");
        }
        dir_digest(dir, after);
        /* the listing removes an .index whose .log is absent (what a
         * crashed segment deletion leaves; never data): not a change */
        for (int k = 3; k <= 5; k += 2)
            if (after[k] == 0 && before[k - 1] == 0)
                before[k] = 0;
        for (int k = 0; k < 8; k++)
            if (before[k] != after[k])
                fprintf(stderr, "refusal (%s) changed %s\n", v.msg, names[k]);
        fuzz_check(memcmp(before, after, sizeof(before)) == 0,
                   "a refusal changes no file");
        fuzz_clear_dir(root);
        return 0;
    }

    struct part_stats st;
    part_stats(p, &st);
    /* walk the logs in start order as the open left them */
    struct walk w = {0};
    int sealed_damaged = 0;
    int last_log = -1;
    uint64_t last_start = 0;
    for (int k = 2; k <= 4; k += 2) {
        size_t n;
        uint8_t *b = read_all(dir, names[k], &n);
        if (b != NULL) {
            last_log = k;
            last_start = k == 4 ? 3 : 0;
        }
        free(b);
    }
    for (int k = 2; k <= 4; k += 2) {
        size_t n;
        uint8_t *b = read_all(dir, names[k], &n);
        if (b == NULL)
            continue;
        if (walk_log(b, n, k == last_log, &w) != 0)
            sealed_damaged = 1;
        free(b);
    }
    if (sealed_damaged) { /* see walk_log: reads must merely not crash */
        struct vs_wbuf out;
        vs_wbuf_init(&out);
        struct part_poll_result pr;
        (void)part_poll(p, PART_POLL_FIRST, 0, UINT32_MAX, SIZE_MAX, &out, &pr);
        vs_wbuf_fini(&out);
        part_abandon(p);
        fuzz_clear_dir(root);
        return 0;
    }
    fuzz_check(st.empty == !w.any, "empty exactly when the logs are");
    if (w.any) {
        fuzz_check(st.first_offset == w.first,
                   "first_offset is the first batch's");
        fuzz_check(st.current_offset == w.last,
                   "current_offset is the last message's");
        fuzz_check(st.next_offset > w.last, "next_offset is past the end");
    }

    struct vs_wbuf out;
    vs_wbuf_init(&out);
    struct part_poll_result pr;
    rc = part_poll(p, PART_POLL_FIRST, 0, UINT32_MAX, SIZE_MAX, &out, &pr);
    if (rc == 0) {
        fuzz_check(pr.count == w.messages, "a poll returns every message");
        size_t pos = 0;
        uint64_t prev = 0;
        int any = 0;
        while (pos < out.len) {
            const uint8_t *r = out.data + pos;
            fuzz_check(out.len - pos >= BATCH_HEADER_SIZE, "a record header");
            uint64_t bl = batch_length(r);
            fuzz_check(bl >= BATCH_HEADER_SIZE && bl <= out.len - pos,
                       "a record inside the reply");
            /* the open verifies the last segment batch by batch but only
             * walks the headers of sealed ones (partition.h), so only a
             * record of the last segment must be a valid batch */
            int from_last = batch_base_offset(r) >= last_start;
            enum batch_err be =
                from_last ? batch_validate(r, (size_t)bl, NULL, 0, NULL)
                          : batch_header_check(r);
            if (be != BATCH_OK)
                fprintf(stderr, "polled record at offset %" PRIu64 ": %s\n",
                        batch_base_offset(r), batch_err_str(be));
            fuzz_check(be == BATCH_OK,
                       "a polled record is a valid batch (a sound header "
                       "from a sealed segment)");
            fuzz_check(!any || batch_base_offset(r) > prev,
                       "polled offsets increase");
            fuzz_check(batch_base_offset(r) >= w.first &&
                           batch_last_offset(r) <= w.last,
                       "polled offsets are in the files");
            prev = batch_last_offset(r);
            any = 1;
            pos += (size_t)bl;
        }
    } else {
        fuzz_check(rc < 0, "a failed poll is -errno");
    }
    vs_wbuf_fini(&out);

    const struct part_consumer cons[2] = {{PART_CONSUMER, 7, 0},
                                          {PART_GROUP, 1, 5}};
    for (int k = 0; k < 2; k++) {
        uint64_t off = 0;
        rc = part_offset_get(p, &cons[k], &off);
        fuzz_check(rc == 0 || rc == -ENOENT || rc == -EBADMSG,
                   "an offset is stored, absent or corrupt");
        if (rc == 0) {
            size_t n;
            uint8_t *b = read_all(dir, names[6 + k], &n);
            fuzz_check(b != NULL && n == 16 && vs_load_u64(b) == off &&
                           vs_load_u64(b + 8) == vs_xxh3_64(b, 8),
                       "a stored offset is a well-formed file's value");
            free(b);
        }
    }
    part_abandon(p);
    fuzz_clear_dir(root);
    return 0;
}
