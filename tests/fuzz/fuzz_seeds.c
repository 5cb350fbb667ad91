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
#include "common/checksum.h"
#include "common/wire.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/storage/io.h"
#include "shard/meta/client_table.h"
#include "shard/meta/ops.h"
#include "shard/meta/snapshot_codec.h"
#include "shard/serve/proto.h"
#include "shard/storage/snapshot_file.h"
#include "shard/storage/superblock.h"
#include "shard/storage/vsr_state.h"
#include "tests/unit/meta_fixture.h"
#include "tools/client/vsc.h"

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

/* ---- fuzz_wal: [ctl][journal.wal] ---- */

/* Appends a chained prepare of op with a body of blen bytes at out+pos. */
static size_t
wal_entry(uint8_t *out, size_t pos, uint64_t op, struct vs_u128 *prev,
          size_t blen)
{
    struct vs_hdr_prepare h;
    memset(&h, 0, sizeof(h));
    h.f.size = (uint32_t)(VS_HEADER_SIZE + blen);
    h.f.view = 1;
    h.f.release = VS_WIRE_FORMAT_VERSION;
    h.f.command = VS_CMD_PREPARE;
    h.f.cluster.lo = 7;
    h.client.lo = 0x55;
    h.parent = *prev;
    h.op = op;
    h.commit = op - 1;
    h.timestamp = 1700000000000000000u + op;
    h.request = op;
    h.operation = VS_OP_CREATE_STREAM;
    h.group = UINT64_C(1) << 63;
    uint8_t *body = out + pos + VS_HEADER_SIZE;
    for (size_t i = 0; i < blen; i++)
        body[i] = (uint8_t)(op * 31 + i);
    vs_prepare_seal(&h, body, blen);
    memcpy(out + pos, &h, sizeof(h));
    *prev = h.f.checksum;
    return pos + VS_HEADER_SIZE + blen;
}

static void
wal_seed(const char *name, uint8_t ctl, uint64_t first, int n, size_t cut)
{
    static uint8_t in[1 + 8192];
    struct vs_u128 prev = {0, 0};
    size_t pos = 1;
    for (int i = 0; i < n; i++)
        pos =
            wal_entry(in, pos, first + (uint64_t)i, &prev, 16 + 8 * (size_t)i);
    in[0] = ctl;
    seed_write("fuzz_wal", name, in, pos - cut);
}

static void
seeds_wal(void)
{
    wal_seed("empty", 0, 1, 0, 0);
    wal_seed("one", 0, 1, 1, 0);
    wal_seed("three", 0, 1, 3, 0);
    wal_seed("three-from-41", 0, 41, 3, 0);
    wal_seed("three-torn-body", 0, 1, 3, 10);
    wal_seed("three-torn-header", 0, 1, 3, 40 + 256);
    wal_seed("three-resealed-chained", 3, 5, 3, 0);
    wal_seed("three-cut-damaged", 4, 1, 3, 0);
}

/* ---- fuzz_snapshot: [ctl][payload or snapshot.bin];
 *      fuzz_client_table: [ctl][ICT2] ---- */

static void
with_ctl(const char *target, const char *name, uint8_t ctl, const void *b,
         size_t len)
{
    uint8_t *in = malloc(len + 1);
    if (in == NULL)
        exit(1);
    in[0] = ctl;
    memcpy(in + 1, b, len);
    seed_write(target, name, in, len + 1);
    free(in);
}

static void
seeds_meta(void)
{
    struct meta_caps caps;
    th_caps(&caps);
    void *st = th_state(&caps);
    struct th_run run;
    th_run_init(&run);
    struct meta_client_table ct;
    meta_ct_init(&ct);
    struct vs_wbuf w;
    vs_wbuf_init(&w);

    /* an instance after genesis only, then the rich fixture state */
    if (th_genesis(st, &run) != 0)
        exit(1);
    meta_snapshot_encode(st, &ct, &w);
    with_ctl("fuzz_snapshot", "genesis", 0, w.data, w.len);
    vs_wbuf_reset(&w);
    free(st);
    st = th_state(&caps);
    th_run_init(&run);
    fx_build(st, &run, &ct);
    meta_snapshot_encode(st, &ct, &w);
    with_ctl("fuzz_snapshot", "fixture", 0, w.data, w.len);
    /* the same payload as a snapshot.bin file */
    struct vs_u128 c = vs_checksum(w.data, w.len);
    uint8_t t[SNAPFILE_TRAILER_SIZE];
    memcpy(t, SNAPFILE_MAGIC, 4);
    vs_store_u64(t + 4, c.lo);
    vs_store_u64(t + 12, c.hi);
    vs_wr_bytes(&w, t, sizeof(t));
    with_ctl("fuzz_snapshot", "fixture-file", 1, w.data, w.len);
    with_ctl("fuzz_snapshot", "fixture-file-resealed", 3, w.data, w.len);
    vs_wbuf_reset(&w);
    meta_snapshot_encode(st, NULL, &w);
    with_ctl("fuzz_snapshot", "fixture-no-replies", 0, w.data, w.len);

    vs_wbuf_reset(&w);
    if (meta_ct_transfer_encode(&ct, st, &w) != 0) {
        fprintf(stderr, "meta_ct_transfer_encode failed\n");
        exit(1);
    }
    with_ctl("fuzz_client_table", "fixture", 0, w.data, w.len);
    with_ctl("fuzz_client_table", "fixture-resealed", 1, w.data, w.len);
    vs_wbuf_reset(&w);
    struct meta_client_table empty;
    meta_ct_init(&empty);
    void *st0 = th_state(&caps);
    meta_ct_transfer_encode(&empty, st0, &w);
    with_ctl("fuzz_client_table", "empty", 0, w.data, w.len);
    free(st0);
    meta_ct_fini(&empty);

    vs_wbuf_fini(&w);
    meta_ct_fini(&ct);
    meta_result_fini(&run.res);
    free(st);
}

/* ---- fuzz_client_reply: [selector][reply bytes] ---- */

static void
cr_seed(const char *name, uint8_t sel, const struct vs_wbuf *w)
{
    with_ctl("fuzz_client_reply", name, sel, w->data, w->len);
}

static void
wr_name(struct vs_wbuf *w, const char *s)
{
    vs_wr_u8(w, (uint8_t)strlen(s));
    vs_wr_bytes(w, s, strlen(s));
}

static void
wr_topic_header(struct vs_wbuf *w, uint32_t id, uint32_t parts)
{
    vs_wr_u32(w, id);
    vs_wr_u64(w, 1700000000000000u);
    vs_wr_u32(w, parts);
    vs_wr_u64(w, 0);
    vs_wr_u8(w, 1);
    vs_wr_u64(w, 0);
    vs_wr_u64(w, 1234);
    vs_wr_u64(w, 7);
    wr_name(w, "orders");
    vs_wr_u32(w, 0);
    vs_wr_u32(w, 0);
}

static void
seeds_client_reply(void)
{
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    /* reply frames: plain, result-framed, status, eviction */
    static const uint8_t ops[3] = {VS_OP_NON_REPLICATED, VS_OP_CREATE_STREAM,
                                   VS_OP_REGISTER};
    for (int i = 0; i < 4; i++) {
        struct vs_hdr_reply h;
        memset(&h, 0, sizeof(h));
        h.f.command = VS_CMD_REPLY;
        h.operation = ops[i % 3];
        h.status = i == 3 ? 1009 : 0;
        vs_wbuf_reset(&w);
        vs_wr_bytes(&w, &h, sizeof(h));
        if (i == 1) { /* result section: one result, then a payload */
            vs_wr_u32(&w, 1);
            vs_wr_u32(&w, 0);
            vs_wr_u32(&w, 0);
            vs_wr_u32(&w, 5);
        } else if (i == 2) {
            vs_wr_u32(&w, 1);
            vs_wr_u64(&w, 42);
            vs_wr_u32(&w, 11264);
        }
        vs_store_u32(w.data + offsetof(struct vs_frame, size), (uint32_t)w.len);
        char name[32];
        snprintf(name, sizeof(name), "reply-%d", i);
        cr_seed(name, 0, &w);
    }
    struct vs_hdr_eviction ev;
    memset(&ev, 0, sizeof(ev));
    ev.f.command = VS_CMD_EVICTION;
    ev.f.size = VS_HEADER_SIZE;
    ev.reason = 15;
    vs_wbuf_reset(&w);
    vs_wr_bytes(&w, &ev, sizeof(ev));
    cr_seed("eviction", 0, &w);
    /* login */
    vs_wbuf_reset(&w);
    vs_wr_u32(&w, 1);
    vs_wr_u64(&w, 42);
    vs_wr_u32(&w, 11264);
    wr_name(&w, "vstream 0.1.0");
    cr_seed("login", 1, &w);
    /* a stream with topics, a topic with partitions */
    vs_wbuf_reset(&w);
    vs_wr_u32(&w, 3);
    vs_wr_u64(&w, 1700000000000000u);
    vs_wr_u32(&w, 2);
    vs_wr_u64(&w, 100);
    vs_wr_u64(&w, 9);
    wr_name(&w, "alpha");
    vs_wr_u32(&w, 0);
    cr_seed("stream-record", 2, &w);
    cr_seed("stream-list", 14, &w);
    wr_topic_header(&w, 0, 2);
    wr_topic_header(&w, 1, 1);
    cr_seed("stream-details", 3, &w);
    vs_wbuf_reset(&w);
    vs_wr_u32(&w, 2);
    wr_topic_header(&w, 0, 2);
    wr_topic_header(&w, 1, 1);
    cr_seed("topic-list", 15, &w);
    vs_wbuf_reset(&w);
    wr_topic_header(&w, 0, 2);
    cr_seed("topic-record", 4, &w);
    for (uint32_t i = 0; i < 2; i++) {
        vs_wr_u32(&w, i);
        vs_wr_u64(&w, 1700000000000000u);
        vs_wr_u32(&w, 1);
        vs_wr_u64(&w, 10 + i);
        vs_wr_u64(&w, 4096);
        vs_wr_u64(&w, 11 + i);
    }
    cr_seed("topic-details", 5, &w);
    /* permissions: global, one stream with one topic */
    struct vs_wbuf pw;
    vs_wbuf_init(&pw);
    for (int i = 0; i < 10; i++)
        vs_wr_u8(&pw, (uint8_t)(i % 2));
    vs_wr_u8(&pw, 1);
    vs_wr_u32(&pw, 2);
    for (int i = 0; i < 6; i++)
        vs_wr_u8(&pw, 1);
    vs_wr_u8(&pw, 1);
    vs_wr_u32(&pw, 5);
    for (int i = 0; i < 4; i++)
        vs_wr_u8(&pw, 1);
    vs_wr_u8(&pw, 0);
    vs_wr_u8(&pw, 0);
    cr_seed("perms", 8, &pw);
    /* users */
    vs_wbuf_reset(&w);
    vs_wr_u32(&w, 1);
    vs_wr_u64(&w, 1700000000000000u);
    vs_wr_u8(&w, 1);
    wr_name(&w, "alice");
    vs_wr_u32(&w, 0);
    cr_seed("user-record", 6, &w);
    cr_seed("user-list", 14 + 16, &w);
    vs_wr_u8(&w, 1);
    vs_wr_u32(&w, (uint32_t)pw.len);
    vs_wr_bytes(&w, pw.data, pw.len);
    cr_seed("user-details", 7, &w);
    vs_wbuf_fini(&pw);
    /* send confirmation */
    vs_wbuf_reset(&w);
    vs_wr_u32(&w, 1);
    vs_wr_u32(&w, 0);
    vs_wr_u32(&w, 1);
    vs_wr_u32(&w, 2);
    vs_wr_u64(&w, 77);
    cr_seed("sent", 9, &w);
    /* poll: two stored batches */
    vs_wbuf_reset(&w);
    vs_wr_u32(&w, 2);
    vs_wr_u64(&w, 5);
    vs_wr_u32(&w, 5);
    for (int k = 0; k < 2; k++) {
        static uint8_t b[4096];
        const uint8_t *pay[3] = {(const uint8_t *)"abc", (const uint8_t *)"de",
                                 (const uint8_t *)"f"};
        uint32_t plen[3] = {3, 2, 1};
        size_t n = batch_build(b, sizeof(b), 1700000000000000u,
                               (uint32_t)(3 - k), pay, plen, NULL, NULL, NULL);
        batch_stamp(b, 2, k == 0 ? 0 : 3, 1700000000000001u);
        vs_wr_bytes(&w, b, n);
    }
    cr_seed("poll", 10, &w);
    /* groups */
    vs_wbuf_reset(&w);
    vs_wr_u32(&w, 1);
    vs_wr_u32(&w, 3);
    vs_wr_u32(&w, 2);
    wr_name(&w, "workers");
    cr_seed("group-record", 11, &w);
    cr_seed("group-list", 15 + 16, &w);
    for (uint32_t m = 0; m < 2; m++) {
        vs_wr_u32(&w, m);
        vs_wr_u32(&w, 2 - m);
        for (uint32_t j = 0; j < 2 - m; j++)
            vs_wr_u32(&w, j + m);
    }
    cr_seed("group-details", 12, &w);
    /* options TLV */
    vs_wbuf_reset(&w);
    vsc_opt_str(&w, "compression", "gzip");
    vsc_opt_u64(&w, "message_expiry", 60000000);
    vsc_opt_bool(&w, "fsync", 1);
    cr_seed("tlv", 13, &w);
    vs_wbuf_fini(&w);
}

/* ---- fuzz_partition: [ctl] + records [kind][len u16][bytes] ---- */

static void
part_record(struct vs_wbuf *w, uint8_t kind, const char *dir, const char *name)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return;
    static uint8_t b[65536];
    size_t n = fread(b, 1, sizeof(b), f);
    fclose(f);
    vs_wr_u8(w, kind);
    vs_wr_u16(w, (uint16_t)n);
    vs_wr_bytes(w, b, n);
}

static void
seeds_partition(void)
{
    char root[] = "/tmp/vs-fuzz-seeds-XXXXXX";
    if (mkdtemp(root) == NULL)
        exit(1);
    struct vs_sio io;
    sio_init_real(&io);
    const struct part_id id = {1, 2, 3, 7};
    struct part_opts o;
    part_opts_default(&o);
    o.index_interval = 0;
    o.segment_size = 4096;
    struct vs_part *p;
    struct part_verdict v;
    if (part_open(&io, root, &id, &o, 1, 0, &p, &v) != 0)
        exit(1);
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", part_dir(p));
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
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    /* one segment of two batches (1 and 2 messages), then a batch too big
     * for the rest of the 4 KiB segment: it rolls to a segment at 3 */
    static uint8_t pay[3500];
    memset(pay, 'p', sizeof(pay));
    for (int k = 0; k < 3; k++) {
        static uint8_t b[8192];
        const uint8_t *pp[2] = {pay, pay};
        uint32_t pl[2] = {k < 2 ? 20u : 3500u, 30};
        uint32_t cnt = k == 1 ? 2 : 1;
        size_t n = batch_build(b, sizeof(b), 1700000000000000u, cnt, pp, pl,
                               NULL, NULL, NULL);
        struct part_append_result r;
        if (part_append(p, b, n, 1700000000000000u + (uint64_t)k, &r, NULL) !=
            0)
            exit(1);
        if (k == 1) {
            /* a snapshot of the dir with one segment, every-batch */
            struct part_consumer c = {PART_CONSUMER, 7, 0};
            if (part_offset_store(p, &c, 1) != 0)
                exit(1);
            vs_wbuf_reset(&w);
            vs_wr_u8(&w, 0);
            for (uint8_t i = 0; i < 8; i++)
                part_record(&w, i, dir, names[i]);
            seed_write("fuzz_partition", "one-segment", w.data, w.len);
            w.data[0] = 1 | 4;
            seed_write("fuzz_partition", "one-segment-interval-resealed",
                       w.data, w.len);
        }
    }
    struct part_consumer g = {PART_GROUP, 1, 5};
    if (part_offset_store(p, &g, 2) != 0)
        exit(1);
    if (part_close(p) != 0)
        exit(1);
    vs_wbuf_reset(&w);
    vs_wr_u8(&w, 0);
    for (uint8_t i = 0; i < 8; i++)
        part_record(&w, i, dir, names[i]);
    seed_write("fuzz_partition", "two-segments", w.data, w.len);
    w.data[0] = 2 | 4;
    seed_write("fuzz_partition", "two-segments-cut-resealed", w.data, w.len);
    vs_wbuf_reset(&w);
    vs_wr_u8(&w, 8);
    for (uint8_t i = 4; i < 6; i++)
        part_record(&w, i, dir, names[i]);
    seed_write("fuzz_partition", "only-second-segment", w.data, w.len);
    vs_wbuf_fini(&w);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    if (system(cmd) != 0)
        exit(1);
}

/* ---- fuzz_request: [selector][arg][body] ---- */

static void
rq_seed(const char *name, uint8_t sel, uint8_t arg, const struct vs_wbuf *w)
{
    uint8_t *in = malloc(w->len + 2);
    if (in == NULL)
        exit(1);
    in[0] = sel;
    in[1] = arg;
    memcpy(in + 2, w->data, w->len);
    seed_write("fuzz_request", name, in, w->len + 2);
    free(in);
}

static void
seeds_request(void)
{
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    vsc_body_login(&w, 11264, "node-sdk", "0.10.0-edge.4", "iggy", "iggy");
    rq_seed("login", 0, 0, &w);
    vs_wbuf_reset(&w);
    vsc_body_login_pat(
        &w, 11264, "node-sdk", "0.10.0",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123"
        "456789ABCDE=");
    rq_seed("login-pat", 0, 0, &w);

    struct vsc_id sid = vsc_id_name("smoke-stream"), tid = vsc_id_num(1);
    /* CreateStream [name] (+ an empty options block) */
    vs_wbuf_reset(&w);
    vsc_wr_name(&w, "smoke-stream");
    rq_seed("create-stream", 1, 0, &w);
    /* CreateTopic [stream][partitions u32][name][options] */
    vs_wbuf_reset(&w);
    vsc_wr_id(&w, &sid);
    vs_wr_u32(&w, 3);
    vsc_wr_name(&w, "smoke-topic");
    vsc_opt_str(&w, "message_expiry", "1h 30m");
    vsc_opt_str(&w, "max_topic_size", "10 GB");
    vsc_opt_u64(&w, "segment_size", 1 << 20);
    rq_seed("create-topic", 1, 4, &w);
    /* DeleteStream [stream], DeleteTopic [stream][topic] */
    vs_wbuf_reset(&w);
    vsc_wr_id(&w, &sid);
    rq_seed("delete-stream", 1, 2, &w);
    vsc_wr_id(&w, &tid);
    rq_seed("delete-topic", 1, 6, &w);
    rq_seed("get-topic", 2, 11, &w);
    vs_wbuf_reset(&w);
    vsc_wr_id(&w, &sid);
    rq_seed("get-stream", 2, 9, &w);
    /* CreateUser [name][password][status u8][has_perms u8][len u32][perms] */
    vs_wbuf_reset(&w);
    vsc_wr_name(&w, "alice");
    vsc_wr_name(&w, "secret-pw");
    vs_wr_u8(&w, 1);
    vs_wr_u8(&w, 1);
    struct vs_wbuf pw;
    vs_wbuf_init(&pw);
    struct vsc_perms perms;
    memset(&perms, 0, sizeof(perms));
    perms.global[0] = 1;
    struct vsc_stream_perms sp;
    memset(&sp, 0, sizeof(sp));
    sp.stream_id = 2;
    sp.flags[1] = 1;
    perms.streams = &sp;
    perms.n_streams = 1;
    vsc_perms_encode(&pw, &perms);
    vs_wr_u32(&w, (uint32_t)pw.len);
    vs_wr_bytes(&w, pw.data, pw.len);
    vs_wbuf_fini(&pw);
    rq_seed("create-user", 1, 141 - 128, &w);
    /* PollMessages and SendMessages */
    vs_wbuf_reset(&w);
    struct vsc_id cid = vsc_id_num(7);
    struct vsc_poll_args pa = {vsc_consumer_single(&cid), 1, 0, 1, 0, 10, 1};
    vsc_body_poll(&w, &sid, &tid, &pa);
    rq_seed("poll", 3, 0, &w);
    vs_wbuf_reset(&w);
    static uint8_t bb[1024];
    const uint8_t *pay[2] = {(const uint8_t *)"hello", (const uint8_t *)"you"};
    uint32_t pl[2] = {5, 3};
    size_t bn = batch_build(bb, sizeof(bb), 1700000000000000u, 2, pay, pl, NULL,
                            NULL, NULL);
    struct vsc_partitioning part;
    memset(&part, 0, sizeof(part));
    part.kind = 3;
    part.key_len = 3;
    memcpy(part.key, "key", 3);
    vsc_body_send(&w, &sid, &tid, &part, 2, bb, bn);
    rq_seed("send-key", 4, 0, &w);
    /* options blocks */
    vs_wbuf_reset(&w);
    vsc_opt_str(&w, "compression_algorithm", "gzip");
    vsc_opt_u64(&w, "message_expiry", 60000000);
    vsc_opt_bool(&w, "fsync", 1);
    rq_seed("options-create", 5, 3 * 2 + 1, &w);
    rq_seed("options-update", 5, 2, &w);
    /* journaled op bodies */
    struct meta_op op;
    meta_op_init(&op, VS_OP_CREATE_TOPIC);
    meta_ident_name(&op.stream, "smoke-stream", 12);
    meta_op_set_name(&op, "smoke-topic", 11);
    op.count = 3;
    op.opts.compression = 2;
    op.opts.explicit_mask = META_TOPT_COMPRESSION;
    vs_wbuf_reset(&w);
    if (meta_op_encode(&op, &w) != 0)
        exit(1);
    rq_seed("op-create-topic", 6, 0, &w);
    meta_op_init(&op, VS_OP_DELETE_PAT);
    meta_ident_id(&op.user, 3);
    meta_op_set_name(&op, "token", 5);
    vs_wbuf_reset(&w);
    if (meta_op_encode(&op, &w) != 0)
        exit(1);
    rq_seed("op-delete-pat", 6, 0, &w);
    /* text */
    vs_wbuf_reset(&w);
    vs_wr_bytes(&w, "1h 30m 15s 100ms", 16);
    rq_seed("duration", 7, 0, &w);
    vs_wbuf_reset(&w);
    vs_wr_bytes(&w, "512MiB", 6);
    rq_seed("size", 7, 1, &w);
    /* consumer offsets: [kind][consumer][stream][topic][has_p][pid]... */
    vs_wbuf_reset(&w);
    vs_wr_u8(&w, 1);
    vsc_wr_id(&w, &cid);
    vsc_wr_id(&w, &sid);
    vsc_wr_id(&w, &tid);
    vs_wr_u8(&w, 1);
    vs_wr_u32(&w, 0);
    rq_seed("get-offset", 8, 0, &w);
    vs_wr_u64(&w, 42);
    vs_wr_u8(&w, 0);
    rq_seed("store-offset", 8, 1, &w);
    vs_wbuf_fini(&w);
}

/* ---- fuzz_frames: [meta limit][message limit][stream] ---- */

static void
seeds_frames(void)
{
    struct vs_wbuf s, b;
    vs_wbuf_init(&s);
    vs_wbuf_init(&b);
    struct vs_u128 client = {0xa7a6a5a4a3a2a1a0u, 0xafaeadacabaaa9a8u};
    vs_wr_u8(&s, 255);
    vs_wr_u8(&s, 255);
    vsc_body_login(&b, 11264, "node-sdk", "0.10.0", "iggy", "iggy");
    vsc_frame_request(&s, client, 0, 0, VS_OP_REGISTER, 0, b.data, b.len, 0);
    vsc_frame_request(&s, client, 1, 1, VS_OP_NON_REPLICATED, SERVE_C_PING,
                      NULL, 0, 0);
    vs_wbuf_reset(&b);
    vsc_wr_name(&b, "smoke-stream");
    vsc_frame_request(&s, client, 1, 1, VS_OP_CREATE_STREAM, 0, b.data, b.len,
                      1);
    vs_wbuf_reset(&b);
    struct vsc_id sid = vsc_id_num(0), tid = vsc_id_num(0), cid = vsc_id_num(1);
    struct vsc_poll_args pa = {vsc_consumer_single(&cid), 1, 0, 5, 0, 10, 1};
    vsc_body_poll(&b, &sid, &tid, &pa);
    vsc_frame_request(&s, client, 1, 2, VS_OP_NON_REPLICATED, SERVE_C_POLL,
                      b.data, b.len, 0);
    vs_wbuf_reset(&b);
    vsc_wr_id(&b, &sid);
    vsc_frame_request(&s, client, 1, 2, VS_OP_NON_REPLICATED,
                      SERVE_C_GET_STREAM, b.data, b.len, 1);
    seed_write("fuzz_frames", "session", s.data, s.len);
    s.data[0] = 0; /* metadata limit 64: the login is oversized */
    seed_write("fuzz_frames", "session-small-limit", s.data, s.len);
    vs_wbuf_fini(&s);
    vs_wbuf_fini(&b);
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
    seeds_wal();
    seeds_meta();
    seeds_client_reply();
    seeds_partition();
    seeds_request();
    seeds_frames();
    return 0;
}
