/*
 * tests/unit/check_pjournal.c - the replicated partition's journal
 * (shard/data/pjournal.c) and the partition additions it uses: appends of
 * stamped batches, visibility capped at the commit, recovery of every
 * damage the header lists (torn and flipped records and batches, chain
 * breaks, holes, a rotted message count in a sealed segment), truncate
 * then re-append, the two superblock slots,
 * ENOSPC and fatal I/O through the fault injector.
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

#include "common/buf.h"
#include "common/checksum.h"
#include "common/wire.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/data/pjournal.h"
#include "shard/storage/io.h"
#include "tests/unit/data_testutil.h"

#define WINDOW 64u

static char g_root[256], g_parts[300];
static struct sio_fault g_f;
static const struct part_id g_id = {1, 2, 3, 77};
static const struct vs_u128 g_cluster = {0x1111, 0x2222};

struct tj {
    struct vs_part *p;
    struct vs_pjournal *j;
    struct pj_recovered rec;
    struct part_verdict v;
    uint64_t segment_size;
    int interval;   /* the interval policy (else every-batch) */
    int index_each; /* an index entry for every batch */
};

static void
setup(void)
{
    dt_mkdtemp(g_root, sizeof(g_root), g_parts, sizeof(g_parts));
    sio_fault_init(&g_f, 1);
}

static void
teardown(void)
{
    dt_rm_rf(g_root);
}

/* part_open + pj_open; returns pj_open's result. */
static int
tj_open(struct tj *t)
{
    struct part_opts o;
    part_opts_default(&o);
    o.cut_damaged_tail = 1;
    if (t->interval)
        o.durability = PART_FSYNC_INTERVAL;
    if (t->segment_size)
        o.segment_size = t->segment_size;
    if (t->index_each)
        o.index_interval = 0;
    int rc = part_open(&g_f.io, g_parts, &g_id, &o, 1, 0, &t->p, &t->v);
    ck_assert_msg(rc == 0, "part_open: %d %s", rc, t->v.msg);
    rc = pj_open(t->p, WINDOW, &t->j, &t->rec, &t->v);
    if (rc < 0) {
        part_abandon(t->p);
        t->p = NULL;
    }
    return rc;
}

static void
tj_open_ok(struct tj *t)
{
    int rc = tj_open(t);
    ck_assert_msg(rc == 0, "pj_open: %d %s", rc, t->v.msg);
}

/* Closes without syncing anything more (a crash after the last sync). */
static void
tj_crash(struct tj *t)
{
    pj_recovered_free(&t->rec);
    pj_close(t->j);
    part_abandon(t->p);
    t->j = NULL;
    t->p = NULL;
}

static void
mk_prepare(struct vs_hdr_prepare *h, uint64_t op, struct vs_u128 parent,
           uint8_t operation, const void *body, uint32_t len, uint64_t ts)
{
    memset(h, 0, sizeof(*h));
    h->f.cluster = g_cluster;
    h->f.size = (uint32_t)sizeof(*h) + len;
    h->f.release = VS_WIRE_FORMAT_VERSION;
    h->f.command = VS_CMD_PREPARE;
    h->parent = parent;
    h->op = op;
    h->timestamp = ts;
    h->operation = operation;
    h->group = 4242;
    vs_prepare_seal(h, body, len);
}

/* Appends the next op: a stamped batch of n messages (n > 0) or an inline
 * body (n == 0). *out (may be NULL) gets its header. */
static int
tj_append(struct tj *t, uint32_t n, uint64_t seed, struct vs_hdr_prepare *out)
{
    struct vs_hdr_prepare h;
    uint64_t op = pj_head(t->j) + 1;
    struct vs_u128 parent = pj_head_checksum(t->j);
    int rc;
    if (n > 0) {
        uint32_t pl[8], hl[8];
        for (uint32_t i = 0; i < n && i < 8; i++) {
            pl[i] = 30 + (uint32_t)(seed % 50) + i;
            hl[i] = i % 2 ? 4 : 0;
        }
        size_t len;
        uint8_t *b = dt_batch(seed, n, pl, hl, &len);
        struct part_stats ps;
        part_stats(t->p, &ps);
        batch_stamp(b, g_id.partition_id, ps.next_offset, 1000 + op);
        mk_prepare(&h, op, parent, VS_OP_SEND_MESSAGES, b, (uint32_t)len,
                   5000 + op);
        rc = pj_append(t->j, &h, b, (uint32_t)len);
        free(b);
    } else {
        uint8_t body[21];
        for (size_t i = 0; i < sizeof(body); i++)
            body[i] = (uint8_t)(seed + i);
        mk_prepare(&h, op, parent, VS_OP_STORE_CONSUMER_OFFSET, body,
                   sizeof(body), 5000 + op);
        rc = pj_append(t->j, &h, body, sizeof(body));
    }
    if (out)
        *out = h;
    return rc;
}

static void
tj_fill(struct tj *t, uint64_t ops)
{
    for (uint64_t i = 0; i < ops; i++)
        ck_assert_int_eq(
            tj_append(t, i % 4 == 3 ? 0 : 1 + (uint32_t)(i % 3), 100 + i, NULL),
            0);
    ck_assert_int_eq(pj_sync(t->j), 0);
}

static void
file_path(char *out, size_t cap, const struct tj *t, const char *name)
{
    snprintf(out, cap, "%s/%s", part_dir(t->p), name);
}

static void
seg_name(char *out, size_t cap, uint64_t start, const char *ext)
{
    snprintf(out, cap, "%020llu.%s", (unsigned long long)start, ext);
}

static void
flip_bits(const char *path, off_t at, uint8_t mask)
{
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    uint8_t b;
    ck_assert_int_eq(pread(fd, &b, 1, at), 1);
    b ^= mask;
    ck_assert_int_eq(pwrite(fd, &b, 1, at), 1);
    close(fd);
}

static void
flip_byte(const char *path, off_t at)
{
    flip_bits(path, at, 0x40);
}

static void
cut_file(const char *path, off_t by)
{
    off_t sz = dt_file_size(path);
    ck_assert_int_ge(sz, by);
    ck_assert_int_eq(truncate(path, sz - by), 0);
}

static uint64_t
next_offset(const struct tj *t)
{
    struct part_stats ps;
    part_stats(t->p, &ps);
    return ps.next_offset;
}

static uint32_t
polled(struct tj *t)
{
    struct vs_wbuf out;
    struct part_poll_result r;
    vs_wbuf_init(&out);
    ck_assert_int_eq(
        part_poll(t->p, PART_POLL_OFFSET, 0, 100000, 64 << 20, &out, &r), 0);
    vs_wbuf_fini(&out);
    return r.count;
}

/* Headers recovered are contiguous, chained, ending at head. */
static void
check_chain(const struct tj *t)
{
    const struct pj_recovered *r = &t->rec;
    ck_assert_uint_gt(r->count, 0);
    for (size_t i = 0; i < r->count; i++) {
        ck_assert(vs_prepare_verify_identity(&r->headers[i]));
        if (i > 0) {
            ck_assert_uint_eq(r->headers[i].op, r->headers[i - 1].op + 1);
            ck_assert(
                vs_u128_eq(r->headers[i].parent, r->headers[i - 1].f.checksum));
        }
    }
    ck_assert_uint_eq(r->headers[r->count - 1].op, pj_head(t->j));
}

START_TEST(test_append_reopen_read)
{
    struct tj t = {0};
    tj_open_ok(&t);
    ck_assert(t.rec.fresh);
    ck_assert_uint_eq(t.rec.count, 0);
    struct vs_hdr_prepare h3;
    tj_fill(&t, 2);
    ck_assert_int_eq(tj_append(&t, 2, 9, &h3), 0);
    tj_fill(&t, 5);
    uint64_t next = next_offset(&t);
    /* the wrong op, a broken parent, an oversized inline body */
    struct vs_hdr_prepare bad;
    uint8_t body[8] = {0};
    mk_prepare(&bad, pj_head(t.j) + 2, pj_head_checksum(t.j),
               VS_OP_STORE_CONSUMER_OFFSET, body, 8, 1);
    ck_assert_int_eq(pj_append(t.j, &bad, body, 8), -EINVAL);
    mk_prepare(&bad, pj_head(t.j) + 1, (struct vs_u128){1, 2},
               VS_OP_STORE_CONSUMER_OFFSET, body, 8, 1);
    ck_assert_int_eq(pj_append(t.j, &bad, body, 8), -EINVAL);
    /* a batch at the wrong offset */
    uint32_t pl[1] = {10}, hl[1] = {0};
    size_t blen;
    uint8_t *b = dt_batch(3, 1, pl, hl, &blen);
    batch_stamp(b, g_id.partition_id, next + 5, 1);
    mk_prepare(&bad, pj_head(t.j) + 1, pj_head_checksum(t.j),
               VS_OP_SEND_MESSAGES, b, (uint32_t)blen, 1);
    ck_assert_int_eq(pj_append(t.j, &bad, b, (uint32_t)blen), -EINVAL);
    free(b);
    ck_assert_uint_eq(next_offset(&t), next);
    ck_assert_uint_eq(pj_head(t.j), 8);

    /* read back op 3 (a batch) and op 4 (inline) */
    struct vs_wbuf out;
    vs_wbuf_init(&out);
    ck_assert_int_eq(pj_read(t.j, 3, &out), 0);
    ck_assert_uint_eq(out.len, h3.f.size);
    ck_assert(memcmp(out.data, &h3, sizeof(h3)) == 0);
    vs_wbuf_reset(&out);
    ck_assert_int_eq(pj_read(t.j, 4, &out), 0);
    ck_assert_int_eq(pj_read(t.j, 99, &out), -ENOENT);
    vs_wbuf_fini(&out);

    struct pj_state s = {.view = 3, .log_view = 2, .commit_max = 6};
    ck_assert_int_eq(pj_state_write(t.j, &s), 0);
    tj_crash(&t);
    tj_open_ok(&t);
    ck_assert(!t.rec.fresh);
    ck_assert_uint_eq(pj_head(t.j), 8);
    ck_assert_uint_eq(t.rec.count, 8);
    ck_assert_uint_eq(t.rec.faulty_op, 0);
    ck_assert_uint_eq(t.rec.state.view, 3);
    ck_assert_uint_eq(t.rec.state.commit_max, 6);
    ck_assert(vs_u128_eq(t.rec.headers[2].f.checksum, h3.f.checksum));
    ck_assert_uint_eq(next_offset(&t), next);
    check_chain(&t);
    tj_crash(&t);
}
END_TEST

START_TEST(test_visibility_capped_at_commit)
{
    struct tj t = {0};
    tj_open_ok(&t);
    ck_assert_int_eq(tj_append(&t, 2, 1, NULL), 0); /* offsets 0..1 */
    ck_assert_int_eq(tj_append(&t, 0, 2, NULL), 0);
    ck_assert_int_eq(tj_append(&t, 3, 3, NULL), 0); /* 2..4 */
    ck_assert_int_eq(tj_append(&t, 1, 4, NULL), 0); /* 5 */
    ck_assert_int_eq(pj_sync(t.j), 0);
    ck_assert_uint_eq(polled(&t), 0); /* nothing committed */
    pj_set_commit(t.j, 1);
    ck_assert_uint_eq(polled(&t), 2);
    pj_set_commit(t.j, 2);
    ck_assert_uint_eq(polled(&t), 2);
    pj_set_commit(t.j, 3);
    ck_assert_uint_eq(polled(&t), 5);
    pj_set_commit(t.j, 4);
    ck_assert_uint_eq(polled(&t), 6);
    /* after a restart only the checkpoint is visible until the replay */
    struct pj_state s = {.commit_max = 4, .checkpoint_op = 1};
    ck_assert_int_eq(pj_state_write(t.j, &s), 0);
    tj_crash(&t);
    tj_open_ok(&t);
    ck_assert_uint_eq(polled(&t), 2);
    ck_assert_uint_eq(t.rec.count, 4); /* from the checkpoint op up */
    ck_assert_uint_eq(t.rec.headers[0].op, 1);
    tj_crash(&t);
}
END_TEST

START_TEST(test_torn_record)
{
    struct tj t = {0};
    tj_open_ok(&t);
    tj_fill(&t, 3); /* op 3 a batch */
    uint64_t after2 = 0;
    {
        struct vs_wbuf out;
        vs_wbuf_init(&out);
        ck_assert_int_eq(pj_read(t.j, 3, &out), 0);
        after2 = batch_base_offset(out.data + sizeof(struct vs_hdr_prepare));
        vs_wbuf_fini(&out);
    }
    char name[64], path[900];
    seg_name(name, sizeof(name), 0, "vsr");
    file_path(path, sizeof(path), &t, name);
    tj_crash(&t);
    cut_file(path, 10);
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 2);
    ck_assert_uint_eq(t.rec.faulty_op, 0);      /* never acknowledged */
    ck_assert_uint_eq(next_offset(&t), after2); /* its batch cut too */
    check_chain(&t);
    /* the journal goes on from op 3 */
    ck_assert_int_eq(tj_append(&t, 2, 77, NULL), 0);
    ck_assert_int_eq(pj_sync(t.j), 0);
    tj_crash(&t);
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 3);
    check_chain(&t);
    tj_crash(&t);
}
END_TEST

/* The batch of the last op is torn or flipped: cut, faulty, header kept. */
static void
damaged_last_batch(int flip)
{
    struct tj t = {0};
    tj_open_ok(&t);
    tj_fill(&t, 2);
    struct vs_hdr_prepare h3;
    ck_assert_int_eq(tj_append(&t, 3, 5, &h3), 0);
    ck_assert_int_eq(pj_sync(t.j), 0);
    uint64_t before3 = next_offset(&t) - 3;
    char name[64], path[900];
    seg_name(name, sizeof(name), 0, "log");
    file_path(path, sizeof(path), &t, name);
    tj_crash(&t);
    if (flip)
        flip_byte(path, dt_file_size(path) - 7);
    else
        cut_file(path, 9);
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 2);
    ck_assert_uint_eq(t.rec.faulty_op, 3);
    ck_assert(t.rec.has_bad_header);
    ck_assert(vs_u128_eq(t.rec.bad_header.f.checksum, h3.f.checksum));
    ck_assert_uint_eq(next_offset(&t), before3);
    check_chain(&t);
    /* repaired: the same op appended again */
    ck_assert_int_eq(tj_append(&t, 3, 5, NULL), 0);
    ck_assert_int_eq(pj_sync(t.j), 0);
    tj_crash(&t);
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 3);
    ck_assert_uint_eq(t.rec.faulty_op, 0);
    ck_assert(vs_u128_eq(t.rec.headers[2].f.checksum, h3.f.checksum));
    tj_crash(&t);
}

START_TEST(test_torn_batch)
{
    damaged_last_batch(0);
}
END_TEST

START_TEST(test_flipped_last_body)
{
    damaged_last_batch(1);
}
END_TEST

START_TEST(test_flipped_last_inline_body)
{
    struct tj t = {0};
    tj_open_ok(&t);
    tj_fill(&t, 3);
    struct vs_hdr_prepare h4;
    ck_assert_int_eq(tj_append(&t, 0, 5, &h4), 0); /* inline op 4 */
    ck_assert_int_eq(pj_sync(t.j), 0);
    char name[64], path[900];
    seg_name(name, sizeof(name), 0, "vsr");
    file_path(path, sizeof(path), &t, name);
    tj_crash(&t);
    flip_byte(path, dt_file_size(path) - 8 - 3); /* inside the body */
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 3);
    ck_assert_uint_eq(t.rec.faulty_op, 4);
    ck_assert(t.rec.has_bad_header);
    ck_assert(vs_u128_eq(t.rec.bad_header.f.checksum, h4.f.checksum));
    tj_crash(&t);
}
END_TEST

START_TEST(test_flipped_last_record_header)
{
    struct tj t = {0};
    tj_open_ok(&t);
    tj_fill(&t, 3); /* op 3: a batch, record of 272 bytes at the end */
    uint64_t before3;
    {
        struct vs_wbuf out;
        vs_wbuf_init(&out);
        ck_assert_int_eq(pj_read(t.j, 3, &out), 0);
        before3 = batch_base_offset(out.data + sizeof(struct vs_hdr_prepare));
        vs_wbuf_fini(&out);
    }
    char name[64], path[900];
    seg_name(name, sizeof(name), 0, "vsr");
    file_path(path, sizeof(path), &t, name);
    tj_crash(&t);
    flip_byte(path, dt_file_size(path) - 256 + 200); /* its header */
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 2);
    ck_assert_uint_eq(t.rec.faulty_op, 3);
    ck_assert(!t.rec.has_bad_header);
    ck_assert_uint_eq(next_offset(&t), before3);
    tj_crash(&t);
}
END_TEST

START_TEST(test_flip_before_last_refused)
{
    struct tj t = {0};
    tj_open_ok(&t);
    tj_fill(&t, 3); /* ops 1..3 are batch records of 272 bytes */
    char name[64], path[900], logp[900];
    seg_name(name, sizeof(name), 0, "vsr");
    file_path(path, sizeof(path), &t, name);
    seg_name(name, sizeof(name), 0, "log");
    file_path(logp, sizeof(logp), &t, name);
    tj_crash(&t);
    off_t vsz = dt_file_size(path), lsz = dt_file_size(logp);
    flip_byte(path, 272 + 16 + 180); /* op 2's header */
    ck_assert_int_eq(tj_open(&t), -EBADMSG);
    ck_assert_int_eq(t.v.reason, PART_R_INTERIOR_DAMAGE);
    ck_assert_msg(strstr(t.v.msg, "op 2") != NULL, "%s", t.v.msg);
    /* nothing modified */
    ck_assert_int_eq(dt_file_size(path), vsz);
    ck_assert_int_eq(dt_file_size(logp), lsz);
    flip_byte(path, 272 + 16 + 180);
    flip_byte(path, 272 + 4); /* op 2's prefix */
    ck_assert_int_eq(tj_open(&t), -EBADMSG);
    ck_assert_msg(strstr(t.v.msg, "op 2") != NULL, "%s", t.v.msg);
    flip_byte(path, 272 + 4);
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 3);
    tj_crash(&t);
}
END_TEST

/* ---- the unsynced group tail: several records unsynced at once ---- */

/* Byte position of op's record in the .vsr file at path (walking the
 * record lengths of the prefixes from `first` on), or the file's length
 * for op = last + 1. */
static uint64_t
rec_pos(const char *path, uint64_t first, uint64_t op)
{
    size_t n = 0;
    uint8_t *b = dt_read_file(path, &n);
    uint64_t at = 0;
    for (uint64_t o = first; o < op; o++) {
        ck_assert_uint_le(at + PJ_RECORD_PREFIX, n);
        at += vs_load_u32(b + at + 8);
    }
    free(b);
    return at;
}

/* ops 1..3 then 4..6 (batches); returns the .vsr path and the next
 * offset after op 3 */
static uint64_t
six_ops(struct tj *t, char *path, size_t cap)
{
    tj_open_ok(t);
    tj_fill(t, 3);
    uint64_t after3 = next_offset(t);
    for (uint64_t i = 0; i < 3; i++)
        ck_assert_int_eq(tj_append(t, 2, 40 + i, NULL), 0);
    ck_assert_int_eq(pj_sync(t->j), 0);
    char name[64];
    seg_name(name, sizeof(name), 0, "vsr");
    file_path(path, cap, t, name);
    tj_crash(t);
    return after3;
}

/* A record cut short, a lost record, two records cut short: each
 * followed by whole records above the durable checkpoint is cut there
 * with every later record and batch. Under every-batch no fsync
 * completed after the damaged write, so none of them was acknowledged:
 * no faulty range. Under interval they were acknowledged once written:
 * faulty up to the last op the file held (repaired, never nacked). */
START_TEST(test_unsynced_records_cut)
{
    for (int c = 0; c < 4; c++) {
        struct tj t = {0};
        t.interval = c == 3;
        char path[900];
        uint64_t after3 = six_ops(&t, path, sizeof(path));
        uint64_t r4 = rec_pos(path, 1, 4), r5 = rec_pos(path, 1, 5),
                 r6 = rec_pos(path, 1, 6);
        if (c == 0 || c == 3) /* op 4's record cut short */
            dt_zero_range(path, r4 + 100, r5);
        else if (c == 1) /* op 4's record lost */
            dt_zero_range(path, r4, r5);
        else { /* ops 4 and 5 cut short, op 6 whole */
            dt_zero_range(path, r4 + 40, r5);
            dt_zero_range(path, r5 + 200, r6);
        }
        tj_open_ok(&t);
        ck_assert_uint_eq(pj_head(t.j), 3);
        ck_assert_uint_eq(t.rec.faulty_op, c == 3 ? 6 : 0);
        ck_assert_uint_eq(next_offset(&t), after3);
        ck_assert_int_eq(dt_file_size(path), (off_t)r4);
        check_chain(&t);
        /* the journal goes on from op 4 */
        ck_assert_int_eq(tj_append(&t, 1, 90, NULL), 0);
        ck_assert_int_eq(pj_sync(t.j), 0);
        tj_crash(&t);
        tj_open_ok(&t);
        ck_assert_uint_eq(pj_head(t.j), 4);
        tj_crash(&t);
        dt_rm_rf(g_parts);
    }
}
END_TEST

/* Non-zero damage followed by records, never-written damage at or below
 * the durable checkpoint, or followed by ops further above it than the
 * journal's window: refused, naming the file, byte and op, and nothing
 * modified. */
START_TEST(test_unsynced_records_refusals)
{
    for (int c = 0; c < 3; c++) {
        struct tj t = {0};
        char path[900];
        uint64_t bad = 4;
        if (c < 2) {
            (void)six_ops(&t, path, sizeof(path));
        } else {
            tj_open_ok(&t);
            tj_fill(&t, WINDOW + 6);
            char name[64];
            seg_name(name, sizeof(name), 0, "vsr");
            file_path(path, sizeof(path), &t, name);
            tj_crash(&t);
        }
        uint64_t r4 = rec_pos(path, 1, bad), r5 = rec_pos(path, 1, bad + 1);
        if (c == 0) {
            size_t n = 0;
            uint8_t *b = dt_read_file(path, &n);
            b[r4 + 16 + 150] ^= 0x08; /* op 4's header: a flip */
            dt_write_file(path, b, n);
            free(b);
        } else if (c == 2) {
            dt_zero_range(path, r4 + 100, r5);
        }
        if (c == 1) { /* op 4 is at the durable checkpoint */
            tj_open_ok(&t);
            struct pj_state st;
            memset(&st, 0, sizeof(st));
            st.commit_max = 4;
            st.checkpoint_op = 4;
            ck_assert_int_eq(pj_state_write(t.j, &st), 0);
            tj_crash(&t);
            dt_zero_range(path, r4 + 100, r5);
        }
        off_t vsz = dt_file_size(path);
        ck_assert_int_eq(tj_open(&t), -EBADMSG);
        ck_assert_int_eq(t.v.reason, PART_R_INTERIOR_DAMAGE);
        ck_assert_uint_eq(t.v.position, r4);
        char at[80];
        snprintf(at, sizeof(at), "at byte %llu of 00000000000000000000.vsr",
                 (unsigned long long)r4);
        ck_assert_msg(strstr(t.v.msg, at) != NULL, "%s", t.v.msg);
        ck_assert_msg(strstr(t.v.msg, "record of op 4") != NULL, "%s", t.v.msg);
        const char *why =
            c == 0   ? "not an unsynced tail: the damaged bytes"
            : c == 1 ? "not an unsynced tail: op 4 is at or below the durable "
                       "checkpoint (op 4)"
                     : "ops the journal holds above the durable checkpoint";
        ck_assert_msg(strstr(t.v.msg, why) != NULL, "%s", t.v.msg);
        ck_assert_int_eq(dt_file_size(path), vsz);
        dt_rm_rf(g_parts);
    }
}
END_TEST

START_TEST(test_chain_break_refused)
{
    struct tj t = {0};
    tj_open_ok(&t);
    tj_fill(&t, 4); /* op 4 inline, 1..3 batches */
    char name[64], path[900];
    seg_name(name, sizeof(name), 0, "vsr");
    file_path(path, sizeof(path), &t, name);
    /* a different but valid header for op 2 (same body length) */
    struct vs_wbuf out;
    vs_wbuf_init(&out);
    ck_assert_int_eq(pj_read(t.j, 2, &out), 0);
    struct vs_hdr_prepare h2;
    memcpy(&h2, out.data, sizeof(h2));
    h2.timestamp += 1;
    vs_prepare_seal(&h2, out.data + sizeof(h2), out.len - sizeof(h2));
    vs_wbuf_fini(&out);
    tj_crash(&t);
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, &h2, sizeof(h2), 272 + 16), sizeof(h2));
    close(fd);
    ck_assert_int_eq(tj_open(&t), -EBADMSG);
    ck_assert_msg(strstr(t.v.msg, "chain") && strstr(t.v.msg, "op 3"), "%s",
                  t.v.msg);
}
END_TEST

/* Upstream bug: repaired prepares rewound the journal's parent and broke
 * the chain, so nodes could not restart. Append, truncate the uncommitted
 * suffix, append repaired ops, reopen: the chain verifies. */
START_TEST(test_truncate_then_reappend)
{
    struct tj t = {.segment_size = 2048}; /* several segments */
    tj_open_ok(&t);
    tj_fill(&t, 12);
    pj_set_commit(t.j, 5);
    ck_assert_int_eq(pj_truncate_from(t.j, 5), -EINVAL); /* committed */
    ck_assert_int_eq(pj_truncate_from(t.j, 0), -EINVAL);
    struct vs_wbuf out;
    vs_wbuf_init(&out);
    ck_assert_int_eq(pj_read(t.j, 6, &out), 0);
    struct vs_hdr_prepare h6;
    memcpy(&h6, out.data, sizeof(h6));
    vs_wbuf_fini(&out);
    uint64_t seg_before = 0, sz;
    size_t nseg = 0;
    while (part_segment_at(t.p, nseg, &seg_before, &sz) == 0)
        nseg++;
    ck_assert_uint_gt(nseg, 2);
    ck_assert_int_eq(pj_truncate_from(t.j, 6), 0);
    ck_assert_uint_eq(pj_head(t.j), 5);
    ck_assert(vs_u128_eq(pj_head_checksum(t.j), h6.parent));
    /* the repaired (different) ops 6..9 chain to op 5 */
    struct vs_hdr_prepare r6;
    ck_assert_int_eq(tj_append(&t, 2, 999, &r6), 0);
    ck_assert(vs_u128_eq(r6.parent, h6.parent));
    ck_assert(!vs_u128_eq(r6.f.checksum, h6.f.checksum));
    tj_fill(&t, 3);
    uint64_t next = next_offset(&t);
    tj_crash(&t);
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 9);
    ck_assert_uint_eq(t.rec.faulty_op, 0);
    check_chain(&t);
    ck_assert(vs_u128_eq(t.rec.headers[5].f.checksum, r6.f.checksum));
    ck_assert_uint_eq(next_offset(&t), next);
    /* and once more after the restart, across a segment boundary */
    pj_set_commit(t.j, 2);
    ck_assert_int_eq(pj_truncate_from(t.j, 3), 0);
    tj_fill(&t, 8);
    next = next_offset(&t);
    tj_crash(&t);
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 10);
    check_chain(&t);
    ck_assert_uint_eq(next_offset(&t), next);
    tj_crash(&t);
}
END_TEST

/* A crash between the record cut and the batch cut of a truncation:
 * batches past the last record are cut at open. */
START_TEST(test_batches_past_last_record_cut)
{
    struct tj t = {0};
    tj_open_ok(&t);
    tj_fill(&t, 3);
    uint64_t end = next_offset(&t);
    char name[64], path[900];
    seg_name(name, sizeof(name), 0, "vsr");
    file_path(path, sizeof(path), &t, name);
    tj_crash(&t);
    cut_file(path, 272); /* op 3's whole record */
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 2);
    ck_assert_uint_lt(next_offset(&t), end);
    ck_assert_uint_eq(t.rec.faulty_op, 0);
    tj_crash(&t);
}
END_TEST

START_TEST(test_superblock_slots)
{
    struct tj t = {0};
    tj_open_ok(&t);
    struct pj_state a = {.view = 1, .log_view = 1, .commit_max = 3};
    struct pj_state b = {.view = 2,
                         .log_view = 1,
                         .commit_max = 4,
                         .faulty_op = 9,
                         .checkpoint_op = 2};
    ck_assert_int_eq(pj_state_write(t.j, &a), 0); /* seq 1: slot 1 */
    ck_assert_int_eq(pj_state_write(t.j, &b), 0); /* seq 2: slot 0 */
    char path[900];
    file_path(path, sizeof(path), &t, "vsr_state");
    tj_crash(&t);
    tj_open_ok(&t);
    ck_assert_uint_eq(t.rec.state.view, 2);
    ck_assert_uint_eq(t.rec.state.faulty_op, 9);
    ck_assert_uint_eq(t.rec.state.checkpoint_op, 2);
    tj_crash(&t);
    flip_byte(path, 30); /* slot 0 flipped: slot 1 wins */
    tj_open_ok(&t);
    ck_assert_uint_eq(t.rec.state.view, 1);
    ck_assert_uint_eq(t.rec.state.commit_max, 3);
    /* the next write goes to slot 0 (seq 2 again: the newest valid + 1) */
    b.view = 5;
    ck_assert_int_eq(pj_state_write(t.j, &b), 0);
    tj_crash(&t);
    tj_open_ok(&t);
    ck_assert_uint_eq(t.rec.state.view, 5);
    tj_crash(&t);
    /* slot 0 torn (zeros from byte 64 on): slot 1 wins */
    {
        int fd = open(path, O_RDWR);
        uint8_t z[64] = {0};
        ck_assert_int_eq(pwrite(fd, z, sizeof(z), 64), 64);
        close(fd);
    }
    tj_open_ok(&t);
    ck_assert_uint_eq(t.rec.state.view, 1);
    tj_crash(&t);
    flip_byte(path, 128 + 20); /* both bad */
    ck_assert_int_eq(tj_open(&t), -EBADMSG);
    ck_assert_int_eq(t.v.reason, PART_R_BAD_STATE);
}
END_TEST

START_TEST(test_enospc_append_changes_nothing)
{
    struct tj t = {0};
    tj_open_ok(&t);
    tj_fill(&t, 3);
    char vname[64], lname[64], vpath[900], lpath[900];
    seg_name(vname, sizeof(vname), 0, "vsr");
    seg_name(lname, sizeof(lname), 0, "log");
    file_path(vpath, sizeof(vpath), &t, vname);
    file_path(lpath, sizeof(lpath), &t, lname);
    /* count the writes of one batch append */
    uint64_t w0 = g_f.calls[SIO_WRITE];
    ck_assert_int_eq(tj_append(&t, 2, 50, NULL), 0);
    uint64_t writes = g_f.calls[SIO_WRITE] - w0;
    ck_assert_uint_ge(writes, 2);
    ck_assert_int_eq(pj_sync(t.j), 0);
    for (uint64_t nth = 1; nth <= writes; nth++) {
        for (long tear = -1; tear <= 5; tear += 6) {
            off_t vsz = dt_file_size(vpath), lsz = dt_file_size(lpath);
            uint64_t head = pj_head(t.j), next = next_offset(&t);
            sio_fault_arm(&g_f, SIO_WRITE, nth, ENOSPC, tear);
            ck_assert_int_eq(tj_append(&t, 2, 60 + nth, NULL), -ENOSPC);
            sio_fault_reset(&g_f);
            ck_assert_uint_eq(pj_head(t.j), head);
            ck_assert_uint_eq(next_offset(&t), next);
            ck_assert_int_eq(dt_file_size(vpath), vsz);
            ck_assert_int_eq(dt_file_size(lpath), lsz);
        }
    }
    /* an inline op out of space too */
    sio_fault_arm(&g_f, SIO_WRITE, 1, ENOSPC, 3);
    ck_assert_int_eq(tj_append(&t, 0, 61, NULL), -ENOSPC);
    sio_fault_reset(&g_f);
    /* then everything works and survives a restart */
    ck_assert_int_eq(tj_append(&t, 2, 70, NULL), 0);
    ck_assert_int_eq(tj_append(&t, 0, 71, NULL), 0);
    ck_assert_int_eq(pj_sync(t.j), 0);
    uint64_t next = next_offset(&t);
    tj_crash(&t);
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 6);
    ck_assert_uint_eq(next_offset(&t), next);
    check_chain(&t);
    tj_crash(&t);
}
END_TEST

START_TEST(test_fatal_io)
{
    struct tj t = {0};
    tj_open_ok(&t);
    tj_fill(&t, 2);
    sio_fault_arm(&g_f, SIO_FSYNC, 1, EIO, -1);
    ck_assert_int_eq(tj_append(&t, 1, 5, NULL), 0);
    ck_assert_int_eq(pj_sync(t.j), -VS_EFATAL);
    ck_assert(sio_is_fatal(&g_f.io));
    /* poisoned: nothing else is written */
    ck_assert_int_eq(tj_append(&t, 1, 6, NULL), -VS_EFATAL);
    struct pj_state s = {.view = 1};
    ck_assert_int_eq(pj_state_write(t.j, &s), -VS_EFATAL);
    pj_set_commit(t.j, 0);
    ck_assert_int_eq(pj_truncate_from(t.j, 3), -VS_EFATAL);
    /* an EIO on a record write is fatal as well */
    tj_crash(&t);
    sio_fault_reset(&g_f);
    tj_open_ok(&t);
    uint64_t head = pj_head(t.j);
    sio_fault_arm(&g_f, SIO_WRITE, 2, EIO, -1);
    ck_assert_int_eq(tj_append(&t, 1, 7, NULL), -VS_EFATAL);
    ck_assert_uint_eq(pj_head(t.j), head);
    tj_crash(&t);
}
END_TEST

/* The oldest segment removed (retention): the journal starts at the
 * first retained record, its offsets taken from the segment's start. */
START_TEST(test_oldest_segment_removed)
{
    struct tj t = {.segment_size = 1500};
    tj_open_ok(&t);
    tj_fill(&t, 30);
    uint64_t next = next_offset(&t), s1 = 0, sz;
    ck_assert_int_eq(part_segment_at(t.p, 1, &s1, &sz), 0);
    char names[3][64], path[900];
    seg_name(names[0], sizeof(names[0]), 0, "log");
    seg_name(names[1], sizeof(names[1]), 0, "vsr");
    seg_name(names[2], sizeof(names[2]), 0, "index");
    char dir[700];
    snprintf(dir, sizeof(dir), "%s", part_dir(t.p));
    tj_crash(&t);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        unlink(path);
    }
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 30);
    ck_assert_uint_eq(next_offset(&t), next);
    ck_assert_uint_eq(t.rec.faulty_op, 0);
    check_chain(&t);
    ck_assert_uint_gt(t.rec.headers[0].op, 1);
    ck_assert_int_eq(tj_append(&t, 2, 5, NULL), 0);
    tj_crash(&t);
}
END_TEST

/* A committed batch in a sealed segment whose message count rotted
 * (raised past what its length can hold, or lowered by one bit: only its
 * body checksum covers the count, and the open verifies sealed segments
 * by their index and committed batches by their headers). The next
 * batches then do not start where the journal's offsets say: the open
 * must cut from the rotted op itself, never keep it with offsets running
 * past the log (every later batch would become visible to polls, above
 * the journal's head), and report the cut ops faulty. */
static off_t
seg0_batch_at(const struct tj *t, unsigned k, char *path, size_t cap)
{
    char name[64];
    seg_name(name, sizeof(name), 0, "log");
    file_path(path, cap, t, name);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    uint8_t hdr[BATCH_HEADER_SIZE];
    off_t at = 0;
    for (unsigned i = 0;; i++) {
        ck_assert_int_eq(pread(fd, hdr, sizeof(hdr), at), (ssize_t)sizeof(hdr));
        if (i == k)
            break;
        at += (off_t)batch_length(hdr);
    }
    close(fd);
    ck_assert_uint_eq(batch_base_offset(hdr), 3 * k);
    ck_assert_uint_eq(batch_count(hdr), 3);
    return at;
}

static void
rotted_count(uint8_t mask, off_t byte)
{
    struct tj t = {.segment_size = 2048, .index_each = 1};
    tj_open_ok(&t);
    for (uint64_t i = 0; i < 30; i++)
        ck_assert_int_eq(tj_append(&t, 3, 200 + i, NULL), 0);
    ck_assert_int_eq(pj_sync(t.j), 0);
    uint64_t head = pj_head(t.j), s1 = 0, sz = 0;
    ck_assert_int_eq(part_segment_at(t.p, 1, &s1, &sz), 0);
    ck_assert_uint_ge(s1, 9); /* op 2's batch lies in sealed segment 0 */
    struct pj_state st = {.commit_max = head};
    ck_assert_int_eq(pj_state_write(t.j, &st), 0);
    pj_set_commit(t.j, head);
    ck_assert_uint_eq(polled(&t), 90);
    char path[900];
    off_t at = seg0_batch_at(&t, 1, path, sizeof(path));
    tj_crash(&t);
    flip_bits(path, at + byte, mask);

    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 1);
    ck_assert_uint_eq(next_offset(&t), 3);
    ck_assert_uint_eq(t.rec.faulty_op, head);
    ck_assert(t.rec.has_bad_header);
    ck_assert_uint_eq(t.rec.bad_header.op, 2);
    /* the replay commits what is left: op 1's batch and nothing past it */
    pj_set_commit(t.j, st.commit_max);
    ck_assert_uint_eq(polled(&t), 3);
    tj_crash(&t);
}

START_TEST(test_rotted_count_raised)
{
    rotted_count(0x40, BATCH_OFF_COUNT + 3);
}
END_TEST

START_TEST(test_rotted_count_lowered)
{
    rotted_count(0x02, BATCH_OFF_COUNT); /* 3 messages read as 1 */
}
END_TEST

/* The same in the last batch of a segment a purge sealed, only inline
 * ops after it: no later batch shows the offsets wrong, the journal's
 * batches end short of the log's (a segment gap the replicated open
 * accepts), and the cut must still fall at the rotted batch, not inside
 * it. */
START_TEST(test_rotted_count_last_sealed)
{
    struct tj t = {.index_each = 1};
    tj_open_ok(&t);
    for (uint64_t i = 0; i < 4; i++)
        ck_assert_int_eq(tj_append(&t, 3, 300 + i, NULL), 0);
    ck_assert_int_eq(part_seal_active(t.p), 0);
    ck_assert_int_eq(tj_append(&t, 0, 7, NULL), 0);
    ck_assert_int_eq(tj_append(&t, 0, 8, NULL), 0);
    ck_assert_int_eq(pj_sync(t.j), 0);
    struct pj_state st = {.commit_max = 6};
    ck_assert_int_eq(pj_state_write(t.j, &st), 0);
    char path[900];
    off_t at = seg0_batch_at(&t, 3, path, sizeof(path));
    tj_crash(&t);
    flip_bits(path, at + BATCH_OFF_COUNT, 0x02);

    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 3);
    ck_assert_uint_eq(next_offset(&t), 9);
    ck_assert_uint_eq(t.rec.faulty_op, 6);
    ck_assert(t.rec.has_bad_header);
    ck_assert_uint_eq(t.rec.bad_header.op, 4);
    pj_set_commit(t.j, st.commit_max);
    ck_assert_uint_eq(polled(&t), 9);
    tj_crash(&t);
}
END_TEST

/* The walk keeps at most ~2 windows of records in memory and still
 * returns the newest window + 1 headers. */
START_TEST(test_long_journal_window)
{
    struct tj t = {.segment_size = 8192};
    tj_open_ok(&t);
    for (int k = 0; k < 5; k++) {
        tj_fill(&t, WINDOW);
        pj_set_commit(t.j, pj_head(t.j)); /* only ops above it must stay */
    }
    struct vs_wbuf out;
    vs_wbuf_init(&out);
    ck_assert_int_eq(pj_read(t.j, 1, &out), -ENOENT); /* trimmed */
    ck_assert_int_eq(pj_read(t.j, 5 * WINDOW, &out), 0);
    vs_wbuf_fini(&out);
    struct pj_state s = {.commit_max = 5 * WINDOW,
                         .checkpoint_op = 4 * WINDOW + 10};
    ck_assert_int_eq(pj_state_write(t.j, &s), 0);
    tj_crash(&t);
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 5 * WINDOW);
    ck_assert_uint_eq(t.rec.headers[0].op, 4 * WINDOW + 10);
    check_chain(&t);
    tj_crash(&t);
}
END_TEST

/* Every record lost (the .vsr emptied) while the batch stayed: the batch
 * goes too, and op 1 is appended again at offset 0. */
START_TEST(test_batches_without_any_record_cut)
{
    struct tj t = {0};
    tj_open_ok(&t);
    tj_fill(&t, 2);
    char name[64], path[900];
    seg_name(name, sizeof(name), 0, "vsr");
    file_path(path, sizeof(path), &t, name);
    tj_crash(&t);
    ck_assert_int_eq(truncate(path, 0), 0);
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 0);
    ck_assert_uint_eq(next_offset(&t), 0);
    ck_assert_int_eq(tj_append(&t, 2, 1, NULL), 0);
    ck_assert_int_eq(pj_sync(t.j), 0);
    tj_crash(&t);
    tj_open_ok(&t);
    ck_assert_uint_eq(pj_head(t.j), 1);
    tj_crash(&t);
}
END_TEST

/* A crash inside the first superblock write leaves no vsr_state (or a
 * whole one): the next open never refuses. */
START_TEST(test_first_state_write_crash)
{
    enum sio_kind kinds[] = {SIO_WRITE, SIO_FSYNC, SIO_RENAME, SIO_DIR_FSYNC};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        struct tj t = {0};
        tj_open_ok(&t);
        tj_fill(&t, 1);
        sio_fault_arm(&g_f, kinds[k], 1, EIO, kinds[k] == SIO_WRITE ? 9 : -1);
        g_f.crash_after_fault = 1;
        struct pj_state s = {.view = 4, .log_view = 4};
        ck_assert_int_eq(pj_state_write(t.j, &s), -VS_EFATAL);
        tj_crash(&t);
        sio_fault_reset(&g_f);
        g_f.crash_after_fault = 0;
        tj_open_ok(&t);
        ck_assert(t.rec.state.view == 0 || t.rec.state.view == 4);
        ck_assert_uint_eq(pj_head(t.j), 1);
        /* and the next write works */
        ck_assert_int_eq(pj_state_write(t.j, &s), 0);
        tj_crash(&t);
        tj_open_ok(&t);
        ck_assert_uint_eq(t.rec.state.view, 4);
        tj_crash(&t);
        dt_rm_rf(g_root);
        dt_mkdtemp(g_root, sizeof(g_root), g_parts, sizeof(g_parts));
    }
}
END_TEST

static Suite *
pjournal_suite(void)
{
    Suite *s = suite_create("pjournal");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_append_reopen_read);
    tcase_add_test(tc, test_visibility_capped_at_commit);
    tcase_add_test(tc, test_torn_record);
    tcase_add_test(tc, test_torn_batch);
    tcase_add_test(tc, test_flipped_last_body);
    tcase_add_test(tc, test_flipped_last_inline_body);
    tcase_add_test(tc, test_flipped_last_record_header);
    tcase_add_test(tc, test_flip_before_last_refused);
    tcase_add_test(tc, test_chain_break_refused);
    tcase_add_test(tc, test_unsynced_records_cut);
    tcase_add_test(tc, test_unsynced_records_refusals);
    tcase_add_test(tc, test_truncate_then_reappend);
    tcase_add_test(tc, test_batches_past_last_record_cut);
    tcase_add_test(tc, test_superblock_slots);
    tcase_add_test(tc, test_enospc_append_changes_nothing);
    tcase_add_test(tc, test_fatal_io);
    tcase_add_test(tc, test_oldest_segment_removed);
    tcase_add_test(tc, test_long_journal_window);
    tcase_add_test(tc, test_rotted_count_raised);
    tcase_add_test(tc, test_rotted_count_lowered);
    tcase_add_test(tc, test_rotted_count_last_sealed);
    tcase_add_test(tc, test_batches_without_any_record_cut);
    tcase_add_test(tc, test_first_state_write_crash);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(pjournal_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
