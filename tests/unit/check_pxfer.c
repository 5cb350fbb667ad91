/*
 * tests/unit/check_pxfer.c - partition state transfer (shard/serve/
 * pxfer.c, shard/data/pimage.c, shard/data/pinstall.c, the partition
 * profile of shard/vsr/xfer_fetch.c): the file-set image codec and each
 * of its refusals; the partition manifest rules; three replicas of one
 * partition group in one process (tests/unit/pgroup_net.h: an
 * in-memory queue for the links, synchronous fsyncs; the runtime's
 * install emulated here as pgroups.c does it) where a replica down while its
 * peers checkpoint past its window fetches the primary's partition,
 * installs it and converges byte-identical (segments, polls, consumer
 * offsets); the serving rules (first wins, unknown sessions, chunks at or
 * past an artifact's end refused, a corrupted chunk dropped); the
 * install's fsyncs handed off the loop (held: nothing published; a crash
 * meanwhile: fetched again; done: installed); and the
 * install's crash points: a failure at every storage call of the swap
 * leaves, after the boot recovery, a partition that opens with its
 * journal, holding the old state or the new one. Every loop is bounded.
 */
#include "config.h"

#include <check.h>
#include <sodium.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/wire.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/data/pjournal.h"
#include "shard/data/pimage.h"
#include "shard/data/pinstall.h"
#include "shard/serve/pgroup.h"
#include "shard/serve/pxfer.h"
#include "shard/vsr/xfer_fetch.h"
#include "shard/vsr/xfer_frames.h"
#include "shard/storage/io.h"
#include "tests/unit/data_testutil.h"
#include "tests/unit/pgroup_net.h"

/* chunks to alter (resealed) in flight, and how many were */
static unsigned g_tamper, g_tampered;
/* distinct nonces of the RequestStateTransfer frames seen */
static struct vs_u128 g_nonces[64];
static unsigned g_nnonces;
static uint64_t g_installs;
static int g_hold_install; /* leave a staged install for the test */

static void
note_nonce(struct vs_u128 n)
{
    for (unsigned i = 0; i < g_nnonces; i++)
        if (vs_u128_eq(g_nonces[i], n))
            return;
    if (g_nnonces < 64)
        g_nonces[g_nnonces++] = n;
}

/* pn_hooks.sent: notes the nonces asked for, alters chunks to tamper */
static void
sent(struct pn_node *n, const void *frame, size_t len, struct pn_msg *m)
{
    (void)n;
    const struct vs_header *h = frame;
    if (m == NULL)
        return;
    if (h->f.command == VS_CMD_REQUEST_STATE_TRANSFER)
        note_nonce(
            ((const struct vs_hdr_request_state_transfer *)frame)->nonce);
    if (h->f.command == VS_CMD_STATE_CHUNK && g_tamper > 0 &&
        len > VS_HEADER_SIZE + 64) {
        /* a server that sends other bytes than its manifest promised,
         * resealed so that only the artifact checksum can catch it */
        g_tamper--;
        g_tampered++;
        struct vs_hdr_state_chunk *c = (struct vs_hdr_state_chunk *)m->data;
        uint8_t *body = m->data + VS_HEADER_SIZE;
        body[40] ^= 0x5A;
        struct xfer_sender snd = {pn_cluster, c->group, c->f.replica,
                                  c->f.view};
        xfer_frame_chunk(c, &snd, c->nonce, c->artifact, c->offset, body,
                         len - VS_HEADER_SIZE);
    }
}

/* What the runtime (pgroups.c, parts.c) does with a staged install: the
 * group and the partition close, the directories swap, both reopen. */
static void
node_reinstall(struct pn_node *n)
{
    if (g_hold_install)
        return;
    pgroup_close(n->g);
    n->g = NULL;
    ck_assert_int_eq(part_close(n->p), 0);
    n->p = NULL;
    ck_assert_int_eq(pinstall_swap(&n->f.io, n->parts, &pn_id), 0);
    g_installs++;
    pn_node_start(n);
}

/* pn_hooks.stepped: staged installs swap in */
static void
stepped(void)
{
    for (int i = 0; i < PN_N; i++)
        if (pn_nodes[i].up && pgroup_install_pending(pn_nodes[i].g))
            node_reinstall(&pn_nodes[i]);
}

static void
setup(void)
{
    g_installs = 0;
    g_hold_install = 0;
    g_tamper = g_tampered = 0;
    g_nnonces = 0;
    struct pn_hooks h = {sent, stepped};
    pn_setup(&h);
}

/* ---- the file-set image ---- */

static uint8_t *
image(uint32_t kind, const char *const *names, const uint64_t *lens, uint32_t n,
      size_t *len)
{
    struct pimg_file f[8];
    uint64_t meta[3] = {7, 100, 42};
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    memset(f, 0, sizeof(f));
    for (uint32_t i = 0; i < n; i++) {
        snprintf(f[i].name, sizeof(f[i].name), "%s", names[i]);
        f[i].len = lens[i];
    }
    ck_assert_int_eq(pimg_header(&w, kind, meta, f, n), 0);
    for (uint32_t i = 0; i < n; i++)
        for (uint64_t k = 0; k < lens[i]; k++)
            vs_wr_u8(&w, (uint8_t)(i * 31 + k));
    *len = w.len;
    return w.data;
}

START_TEST(test_image_roundtrip_and_refusals)
{
    const char *names[] = {"00000000000000000000.log",
                           "00000000000000000000.vsr",
                           "00000000000000000000.index"};
    uint64_t lens[] = {100, 272, 24};
    size_t len;
    uint8_t *b = image(PIMG_SEGMENTS, names, lens, 3, &len);
    struct pimg m;
    char err[256];
    ck_assert_int_eq(pimg_decode(b, len, PIMG_SEGMENTS, &m, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(m.count, 3);
    ck_assert_uint_eq(m.meta[0], 7);
    ck_assert_uint_eq(m.meta[1], 100);
    ck_assert_uint_eq(m.meta[2], 42);
    ck_assert_str_eq(m.files[1].name, names[1]);
    ck_assert_uint_eq(m.files[1].len, 272);
    ck_assert_uint_eq(m.files[1].off, m.header_len + 100);
    ck_assert_uint_eq(b[m.files[2].off], (uint8_t)(2 * 31));
    pimg_free(&m);
    /* every refusal */
    ck_assert_int_eq(pimg_decode(b, len - 1, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG); /* a file runs past the end */
    ck_assert_int_eq(pimg_decode(b, 10, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG); /* shorter than the header */
    ck_assert_int_eq(pimg_decode(b, len, PIMG_OFFSETS, &m, err, 256),
                     -EBADMSG); /* another kind */
    uint8_t *c = malloc(len + 1);
    memcpy(c, b, len);
    c[len] = 0;
    ck_assert_int_eq(pimg_decode(c, len + 1, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG); /* trailing bytes */
    c[0] ^= 1;
    ck_assert_int_eq(pimg_decode(c, len, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG); /* magic */
    c[0] ^= 1;
    c[4] = 9;
    ck_assert_int_eq(pimg_decode(c, len, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG); /* version */
    c[4] = 1;
    c[PIMG_FIXED + 2] = '/'; /* a name with a path in it */
    ck_assert_int_eq(pimg_decode(c, len, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err, "file name"));
    free(c);
    free(b);
    /* names outside the patterns are refused by the encoder too */
    const char *bad[] = {"../00000000000000000000.log"};
    struct pimg_file f;
    memset(&f, 0, sizeof(f));
    snprintf(f.name, sizeof(f.name), "%s", bad[0]);
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    uint64_t meta[3] = {0, 0, 0};
    ck_assert_int_eq(pimg_header(&w, PIMG_SEGMENTS, meta, &f, 1), -EINVAL);
    vs_wbuf_fini(&w);
    /* a file named twice; a segment image without journal records */
    const char *dup[] = {"00000000000000000000.log",
                         "00000000000000000000.log"};
    uint64_t dl[] = {1, 1};
    b = image(PIMG_SEGMENTS, dup, dl, 2, &len);
    ck_assert_int_eq(pimg_decode(b, len, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err, "twice"));
    free(b);
    b = image(PIMG_SEGMENTS, names, lens, 1, &len);
    ck_assert_int_eq(pimg_decode(b, len, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG);
    free(b);
    /* offsets names; an empty offsets image is valid */
    ck_assert(pimg_name_ok(PIMG_OFFSETS, "offsets/consumers/17"));
    ck_assert(pimg_name_ok(PIMG_OFFSETS, "offsets/groups/3.99"));
    ck_assert(pimg_name_ok(PIMG_OFFSETS, "offsets_applied"));
    ck_assert(pimg_name_ok(PIMG_OFFSETS, "clients"));
    ck_assert(!pimg_name_ok(PIMG_SEGMENTS, "clients"));
    ck_assert(!pimg_name_ok(PIMG_OFFSETS, "offsets/groups/3"));
    ck_assert(!pimg_name_ok(PIMG_OFFSETS, "offsets/consumers/x"));
    ck_assert(!pimg_name_ok(PIMG_OFFSETS, "format"));
    vs_wbuf_init(&w);
    ck_assert_int_eq(pimg_header(&w, PIMG_OFFSETS, meta, NULL, 0), 0);
    ck_assert_int_eq(pimg_decode(w.data, w.len, PIMG_OFFSETS, &m, err, 256), 0);
    ck_assert_uint_eq(m.count, 0);
    pimg_free(&m);
    vs_wbuf_fini(&w);
}
END_TEST

/* ---- the partition manifest profile ---- */

static size_t
target_frame(uint8_t *out, struct vs_u128 nonce, const struct xfer_manifest *m,
             uint64_t commit)
{
    uint8_t mb[XFER_MANIFEST_MAX_SIZE];
    int n = xfer_manifest_encode(m, mb, sizeof(mb));
    ck_assert_int_gt(n, 0);
    struct xfer_sender s = {pn_cluster, 9, 0, 1};
    return xfer_frame_target(out, &s, nonce, commit, commit, mb, (size_t)n, 0,
                             0);
}

START_TEST(test_partition_manifest_rules)
{
    struct xfer_fetch f;
    struct xfer_fetch_opts o = {.me = {pn_cluster, 9, 2, 1},
                                .profile = XFER_PROFILE_PARTITION};
    struct vs_u128 nonce = {5, 6};
    uint8_t frame[XFER_TARGET_FRAME_MAX];
    struct xfer_manifest good;
    memset(&good, 0, sizeof(good));
    good.count = 3;
    good.a[0] = (struct xfer_artifact){XFER_KIND_SEGMENT_LOG, 40, 1000, 1};
    good.a[1] = (struct xfer_artifact){XFER_KIND_CONSUMER_OFFSETS, 44, 40, 2};
    good.a[2] = (struct xfer_artifact){XFER_KIND_CHECKPOINT_PREPARE, 40,
                                       VS_HEADER_SIZE, 3};
    struct xfer_manifest bad[5];
    for (int i = 0; i < 5; i++)
        bad[i] = good;
    bad[0].count = 2;                          /* no prepare */
    bad[1].a[2].frontier = 39;                 /* prepare of another op */
    bad[2].a[2].len = 100;                     /* not one header */
    bad[3].a[1].frontier = 60;                 /* offsets above the commit */
    bad[4].a[1].kind = XFER_KIND_CLIENT_TABLE; /* a metadata kind */
    uint64_t commit[5] = {50, 50, 50, 50, 50};
    for (int i = 0; i < 5; i++) {
        xfer_fetch_init(&f, &o);
        ck_assert_int_eq(xfer_fetch_arm(&f, nonce, 0), 0);
        size_t n = target_frame(frame, nonce, &bad[i], commit[i]);
        ck_assert_int_eq(
            xfer_frame_check(frame, n, pn_cluster, 9, XFER_CHUNK_MAX),
            XFER_FRAME_OK);
        ck_assert_int_eq(xfer_fetch_on_target(&f, 0, frame, n),
                         XFER_DROP_MANIFEST);
        ck_assert_int_eq(f.stage, XFER_AWAITING_TARGET);
        xfer_fetch_destroy(&f);
    }
    /* the log's frontier above the commit */
    xfer_fetch_init(&f, &o);
    ck_assert_int_eq(xfer_fetch_arm(&f, nonce, 0), 0);
    size_t n = target_frame(frame, nonce, &good, 39);
    ck_assert_int_eq(xfer_fetch_on_target(&f, 0, frame, n), XFER_DROP_MANIFEST);
    /* another nonce, another peer, then the good one */
    struct vs_u128 other = {7, 7};
    n = target_frame(frame, other, &good, 50);
    ck_assert_int_eq(xfer_fetch_on_target(&f, 0, frame, n), XFER_DROP_NONCE);
    n = target_frame(frame, nonce, &good, 50);
    ck_assert_int_eq(xfer_fetch_on_target(&f, 1, frame, n), XFER_DROP_PEER);
    ck_assert_int_eq(xfer_fetch_on_target(&f, 0, frame, n), XFER_TAKEN);
    ck_assert_int_eq(f.stage, XFER_FETCHING);
    /* first wins: a second Target is not taken */
    ck_assert_int_eq(xfer_fetch_on_target(&f, 0, frame, n), XFER_DROP_STAGE);
    xfer_fetch_destroy(&f);
    /* the metadata profile refuses a partition manifest */
    o.profile = XFER_PROFILE_METADATA;
    xfer_fetch_init(&f, &o);
    ck_assert_int_eq(xfer_fetch_arm(&f, nonce, 0), 0);
    ck_assert_int_eq(xfer_fetch_on_target(&f, 0, frame, n), XFER_DROP_MANIFEST);
    xfer_fetch_destroy(&f);
}
END_TEST

/* ---- three replicas ---- */

static void
fresh_cluster(uint32_t slots)
{
    for (int i = 0; i < PN_N; i++) {
        pn_node_kill(&pn_nodes[i]);
        pn_node_wipe(&pn_nodes[i]);
    }
    pn_slots = slots;
    for (int i = 0; i < PN_N; i++)
        pn_node_start(&pn_nodes[i]);
    ck_assert_int_eq(pn_wait_primary(-1), 0);
}

static void
offsets_equal(uint32_t consumers)
{
    for (uint32_t c = 1; c <= consumers; c++) {
        struct part_consumer pc = {.kind = PART_CONSUMER, .id = c};
        uint64_t ref = 0, off = 0;
        int rr = part_offset_get(pgroup_part(pn_nodes[0].g), &pc, &ref);
        for (int i = 1; i < PN_N; i++) {
            int r = part_offset_get(pgroup_part(pn_nodes[i].g), &pc, &off);
            ck_assert_int_eq(r, rr);
            if (r == 0)
                ck_assert_uint_eq(off, ref);
        }
    }
}

/* Node 2 is down while its peers commit and checkpoint far past its
 * window; restarted, repair cannot reach the ops (RangeEvicted), so it
 * fetches the primary's partition, installs it and repairs above it. */
static void
lag_node2(void)
{
    pn_produce(2, 1, 3);
    ck_assert_int_eq(pn_offset_op(0, 40, 1, VS_OP_STORE_CONSUMER_OFFSET, 1, 2),
                     0);
    pn_wait_status(40, 1, 0);
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    pn_node_kill(&pn_nodes[2]);
    pn_produce(3, 4, 40); /* ~110 ops: many checkpoints of a 16-slot window */
    ck_assert_int_eq(pn_offset_op(0, 40, 2, VS_OP_STORE_CONSUMER_OFFSET, 2, 30),
                     0);
    pn_wait_status(40, 2, 0);
    ck_assert_int_eq(pn_offset_op(0, 40, 3, VS_OP_STORE_CONSUMER_OFFSET, 1, 50),
                     0);
    pn_wait_status(40, 3, 0);
    pn_produce(3, 41, 44);
    struct vs_vsr_persist d;
    vsr_durable(pgroup_engine(pn_nodes[0].g), &d);
    ck_assert_uint_gt(d.checkpoint_op, 3 * 16);
    pn_node_start(&pn_nodes[2]);
}

START_TEST(test_lagging_replica_installs_and_converges)
{
    fresh_cluster(16);
    lag_node2();
    for (int s = 0; s < PN_MAX_STEPS && g_installs == 0; s++)
        pn_step();
    ck_assert_uint_eq(g_installs, 1);
    pn_produce(3, 45, 46); /* the group goes on with all three */
    uint64_t top = pgroup_commit(pn_nodes[0].g);
    pn_wait_commit_all(top);
    pn_files_identical();
    uint64_t l0 = 0, l2 = 0;
    ck_assert_uint_eq(pn_polled(0, &l0), pn_polled(2, &l2));
    ck_assert_uint_eq(l0, l2);
    ck_assert_uint_gt(l0, 100);
    offsets_equal(3);
    /* a restart of the installed replica recovers on its own files */
    pn_node_kill(&pn_nodes[2]);
    pn_node_start(&pn_nodes[2]);
    pn_produce(3, 47, 47);
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    pn_files_identical();
    ck_assert_uint_eq(g_installs, 1);
    for (int i = 0; i < PN_N; i++)
        ck_assert_int_eq(pgroup_fatal(pn_nodes[i].g), 0);
}
END_TEST

/* After node 2's install: a send round commits on all three, whose
 * files, polls and consumer offsets then agree. */
static void
converged(uint64_t round)
{
    pn_produce(3, round, round);
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    pn_files_identical();
    uint64_t l0 = 0, l2 = 0;
    ck_assert_uint_eq(pn_polled(0, &l0), pn_polled(2, &l2));
    ck_assert_uint_eq(l0, l2);
    offsets_equal(3);
}

static int
node_has(const struct pn_node *n, const char *rel)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", n->parts, rel);
    return dt_exists(path);
}

/* Steps until node 2 asks for its install's fsyncs (held). */
static void
wait_files_request(void)
{
    for (int s = 0; s < PN_MAX_STEPS && pn_nodes[2].files_tok == NULL; s++)
        pn_step();
    ck_assert_ptr_nonnull(pn_nodes[2].files_tok);
}

/* The install's fsyncs off the loop (env->files_sync): while they are
 * held the staged directory waits unpublished (no install, the session's
 * frames dropped); a replica killed meanwhile drops the request (its
 * token freed) and fetches again after its restart; released, the
 * directory is published after a second round (the partitions directory
 * and the staging root), installed, and the replica converges. */
START_TEST(test_install_fsyncs_off_the_loop)
{
    pn_async_files = 1;
    pn_hold_files[2] = 1;
    fresh_cluster(16);
    lag_node2();
    wait_files_request();
    ck_assert_uint_gt(pn_nodes[2].n_files, 6); /* files and directories */
    ck_assert(node_has(&pn_nodes[2], ".pxfer/4.5.6.88"));
    for (int s = 0; s < 300; s++)
        pn_step();
    ck_assert_ptr_nonnull(pn_nodes[2].files_tok);
    ck_assert(!node_has(&pn_nodes[2], "4.5.6.88.pxfer-new"));
    ck_assert(!pinstall_pending(pn_nodes[2].parts, &pn_id));
    ck_assert_uint_eq(g_installs, 0);
    /* a crash with the fsyncs in flight, then a fresh fetch */
    pn_node_kill(&pn_nodes[2]);
    ck_assert_ptr_null(pn_nodes[2].files_tok);
    pn_node_start(&pn_nodes[2]);
    wait_files_request();
    size_t first = pn_nodes[2].n_files;
    pn_hold_files[2] = 0;
    for (int s = 0; s < PN_MAX_STEPS && g_installs == 0; s++)
        pn_step();
    ck_assert_uint_eq(g_installs, 1);
    ck_assert_uint_eq(pn_nodes[2].files_synced, first + 2);
    ck_assert(!node_has(&pn_nodes[2], ".pxfer/4.5.6.88"));
    converged(45);
}
END_TEST

/* The staged directory cannot be written (its first file's open fails
 * with ENOSPC) with the install's fsyncs off the loop: nothing is left
 * open or staged, the session ends without an install, and a later fetch
 * installs. */
START_TEST(test_install_write_failure_then_retried)
{
    pn_async_files = 1;
    fresh_cluster(16);
    lag_node2();
    struct pn_node *n = &pn_nodes[2];
    struct pxfer_info in;
    memset(&in, 0, sizeof(in));
    for (int s = 0; s < PN_MAX_STEPS && in.stage != XFER_FETCHING; s++) {
        pn_step();
        pgroup_xfer_info(n->g, &in);
    }
    ck_assert_int_eq(in.stage, XFER_FETCHING);
    sio_fault_arm(&n->f, SIO_OPEN, 1, ENOSPC, -1);
    for (int s = 0; s < PN_MAX_STEPS && in.completed + in.abandoned == 0; s++) {
        pn_step();
        ck_assert_ptr_null(n->files_tok); /* the refused one asked nothing */
        pgroup_xfer_info(n->g, &in);
    }
    ck_assert_uint_eq(in.completed, 0);
    ck_assert_uint_eq(in.abandoned, 1);
    ck_assert(!node_has(n, ".pxfer/4.5.6.88"));
    ck_assert_uint_eq(g_installs, 0);
    for (int s = 0; s < PN_MAX_STEPS && g_installs == 0; s++)
        pn_step();
    ck_assert_uint_eq(g_installs, 1);
    converged(45);
}
END_TEST

/* The shard's fetch budget: while its sessions all run (here: held by
 * another group), the lagging replica starts no fetch (no request leaves,
 * the refusals counted); once one ends it fetches, installs, converges
 * and leaves the budget. */
START_TEST(test_fetch_budget_defers_transfer)
{
    struct pxfer_budget b = {.running = 1, .max = 1};
    pn_fetch_budget = &b;
    fresh_cluster(16);
    lag_node2();
    for (int s = 0; s < 1500; s++)
        pn_step();
    ck_assert_uint_eq(g_nnonces, 0);
    ck_assert_uint_gt(b.refused, 0);
    ck_assert_uint_eq(g_installs, 0);
    b.running = 0; /* the other group's session ended */
    for (int s = 0; s < PN_MAX_STEPS && g_installs == 0; s++) {
        pn_step();
        ck_assert_uint_le(b.running, 1);
    }
    ck_assert_uint_eq(g_installs, 1);
    ck_assert_uint_eq(b.running, 0);
    converged(45);
}
END_TEST

/* A chunk whose bytes differ from what the manifest promised (resealed,
 * so the frame checks pass): the artifact fails its checksum, nothing is
 * installed, the session ends and the engine is disarmed; the next fetch
 * (a fresh nonce) installs. */
START_TEST(test_tampered_artifact_refused_then_retried)
{
    fresh_cluster(16);
    g_tamper = 1;
    lag_node2();
    for (int s = 0; s < PN_MAX_STEPS && g_installs == 0; s++)
        pn_step();
    ck_assert_uint_eq(g_tampered, 1);
    ck_assert_uint_eq(g_installs, 1);
    ck_assert_uint_ge(g_nnonces, 2); /* a fresh nonce for the retry */
    pn_produce(3, 45, 46);
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    pn_files_identical();
    offsets_equal(3);
}
END_TEST

/* The serving side's rules, driven by hand-made frames from "replica 2"
 * to the primary (node 0): the offer is hashed first (answered
 * "transient"), then a retry with the same nonce gets the same Target
 * byte for byte, a chunk at the artifact's end or for an unknown
 * session is not served, a corrupted chunk is dropped by the receiver. */
static struct pn_msg *
take_from(int from, int to, uint8_t command)
{
    for (size_t i = 0; i < pn_nq; i++)
        if (pn_q[i].from == from && pn_q[i].to == to &&
            pn_q[i].data[60] == command) {
            struct pn_msg *m = malloc(sizeof(*m));
            *m = pn_q[i];
            memmove(&pn_q[i], &pn_q[i + 1], (pn_nq - i - 1) * sizeof(*pn_q));
            pn_nq--;
            return m;
        }
    return NULL;
}

static void
drop_queue(void)
{
    for (size_t i = 0; i < pn_nq; i++)
        free(pn_q[i].data);
    pn_nq = 0;
}

START_TEST(test_serving_rules)
{
    fresh_cluster(16);
    pn_produce(3, 1, 20);
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    pn_node_kill(&pn_nodes[2]); /* its frames are made by hand */
    drop_queue();
    struct xfer_sender me = {pn_cluster, pgroup_id(pn_nodes[0].g), 2, 0};
    struct vs_u128 nonce = {0x1234, 0x5678};
    struct vs_hdr_request_state_transfer rq;
    xfer_frame_request_transfer(&rq, &me, nonce);
    ck_assert_int_eq(pgroup_on_message(pn_nodes[0].g, &rq, sizeof(rq)),
                     VSR_ACCEPTED);
    struct pn_msg *t = take_from(0, 2, VS_CMD_STATE_TRANSFER_TARGET);
    ck_assert_ptr_nonnull(t);
    const struct vs_hdr_state_transfer_target *th = (const void *)t->data;
    ck_assert_int_eq(th->available, 0);
    ck_assert_int_eq(th->unavailable_transient, 1); /* hashing */
    free(t->data);
    free(t);
    /* the tick finishes the hash and sends the Target */
    pgroup_tick(pn_nodes[0].g);
    struct pn_msg *t1 = take_from(0, 2, VS_CMD_STATE_TRANSFER_TARGET);
    ck_assert_ptr_nonnull(t1);
    th = (const void *)t1->data;
    ck_assert_int_eq(th->available, 1);
    struct xfer_manifest m;
    ck_assert_int_eq(xfer_manifest_decode(t1->data + VS_HEADER_SIZE,
                                          t1->len - VS_HEADER_SIZE, &m),
                     XFER_MANIFEST_OK);
    ck_assert_uint_eq(m.count, 3);
    ck_assert_uint_eq(m.a[0].kind, XFER_KIND_SEGMENT_LOG);
    /* a retry with the same nonce: the same Target, byte for byte */
    drop_queue();
    ck_assert_int_eq(pgroup_on_message(pn_nodes[0].g, &rq, sizeof(rq)),
                     VSR_ACCEPTED);
    struct pn_msg *t2 = take_from(0, 2, VS_CMD_STATE_TRANSFER_TARGET);
    ck_assert_ptr_nonnull(t2);
    ck_assert_uint_eq(t2->len, t1->len);
    ck_assert(memcmp(t2->data, t1->data, t1->len) == 0);
    /* a chunk inside the artifact is served, never more than asked */
    struct vs_hdr_request_state_chunk rc;
    xfer_frame_request_chunk(&rc, &me, nonce, 0, 0, 100);
    ck_assert_int_eq(pgroup_on_message(pn_nodes[0].g, &rc, sizeof(rc)),
                     VSR_ACCEPTED);
    struct pn_msg *c = take_from(0, 2, VS_CMD_STATE_CHUNK);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(c->len, VS_HEADER_SIZE + 100);
    ck_assert_int_eq(xfer_frame_check(c->data, c->len, pn_cluster,
                                      pgroup_id(pn_nodes[0].g), XFER_CHUNK_MAX),
                     XFER_FRAME_OK);
    /* a flipped byte in transit: the receiver's frame check drops it */
    c->data[VS_HEADER_SIZE + 5] ^= 0x40;
    ck_assert_int_ne(xfer_frame_check(c->data, c->len, pn_cluster,
                                      pgroup_id(pn_nodes[0].g), XFER_CHUNK_MAX),
                     XFER_FRAME_OK);
    free(c->data);
    free(c);
    /* at the artifact's end, past it, another artifact: no answer */
    struct pxfer_info in0, in1;
    pgroup_xfer_info(pn_nodes[0].g, &in0);
    xfer_frame_request_chunk(&rc, &me, nonce, 0, m.a[0].len, 10);
    (void)pgroup_on_message(pn_nodes[0].g, &rc, sizeof(rc));
    xfer_frame_request_chunk(&rc, &me, nonce, 2, VS_HEADER_SIZE, 10);
    (void)pgroup_on_message(pn_nodes[0].g, &rc, sizeof(rc));
    xfer_frame_request_chunk(&rc, &me, nonce, 3, 0, 10);
    (void)pgroup_on_message(pn_nodes[0].g, &rc, sizeof(rc));
    ck_assert_ptr_null(take_from(0, 2, VS_CMD_STATE_CHUNK));
    pgroup_xfer_info(pn_nodes[0].g, &in1);
    ck_assert_uint_eq(in1.served_chunks, in0.served_chunks);
    ck_assert_uint_ge(in1.refused_chunks, in0.refused_chunks + 2);
    /* a request running past the end is served up to the end only */
    xfer_frame_request_chunk(&rc, &me, nonce, 2, VS_HEADER_SIZE - 4, 10);
    (void)pgroup_on_message(pn_nodes[0].g, &rc, sizeof(rc));
    c = take_from(0, 2, VS_CMD_STATE_CHUNK);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(c->len, VS_HEADER_SIZE + 4);
    free(c->data);
    free(c);
    /* a zero-byte chunk request never passes the frame check */
    xfer_frame_request_chunk(&rc, &me, nonce, 0, 0, 0);
    ck_assert_int_ne(xfer_frame_check(&rc, sizeof(rc), pn_cluster,
                                      pgroup_id(pn_nodes[0].g), XFER_CHUNK_MAX),
                     XFER_FRAME_OK);
    /* an unknown session is answered "unknown session" */
    struct vs_u128 stranger = {9, 9};
    xfer_frame_request_chunk(&rc, &me, stranger, 0, 0, 10);
    (void)pgroup_on_message(pn_nodes[0].g, &rc, sizeof(rc));
    struct pn_msg *u = take_from(0, 2, VS_CMD_STATE_TRANSFER_TARGET);
    ck_assert_ptr_nonnull(u);
    th = (const void *)u->data;
    ck_assert_int_eq(th->available, 0);
    ck_assert_int_eq(th->reason, XFER_UNKNOWN_SESSION);
    free(u->data);
    free(u);
    /* a backup does not serve */
    drop_queue();
    xfer_frame_request_transfer(&rq, &me, (struct vs_u128){77, 1});
    (void)pgroup_on_message(pn_nodes[1].g, &rq, sizeof(rq));
    u = take_from(1, 2, VS_CMD_STATE_TRANSFER_TARGET);
    ck_assert_ptr_nonnull(u);
    th = (const void *)u->data;
    ck_assert_int_eq(th->available, 0);
    ck_assert_int_eq(th->reason, XFER_NOT_CAUGHT_UP_PRIMARY);
    free(u->data);
    free(u);
    free(t1->data);
    free(t1);
    free(t2->data);
    free(t2);
    drop_queue();
}
END_TEST

/* ---- install crash points ---- */

static void
sh(const char *cmd)
{
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

/* The partitions directory as it was saved in `backup`. */
static void
restore(const char *parts, const char *backup)
{
    char cmd[2400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -a '%s' '%s'", parts, backup,
             parts);
    sh(cmd);
}

/* Opens the partition at dir (with its journal) and returns its
 * superblock's checkpoint op; asserts it boots. */
static uint64_t
boot_checkpoint(struct vs_sio *io, const char *parts)
{
    struct part_opts o;
    part_opts_default(&o);
    o.cut_damaged_tail = 1;
    o.segment_size = 16 * 1024;
    struct vs_part *p = NULL;
    struct part_verdict v;
    memset(&v, 0, sizeof(v));
    int rc = part_open(io, parts, &pn_id, &o, 0, 0, &p, &v);
    ck_assert_msg(rc == 0, "the partition does not boot: %d %s", rc, v.msg);
    struct vs_pjournal *j = NULL;
    struct pj_recovered rec;
    rc = pj_open(p, pn_slots, &j, &rec, &v);
    ck_assert_msg(rc == 0, "its journal does not open: %d %s", rc, v.msg);
    uint64_t c = rec.state.checkpoint_op;
    pj_recovered_free(&rec);
    pj_close(j);
    part_abandon(p);
    return c;
}

START_TEST(test_install_crash_points)
{
    fresh_cluster(16);
    g_hold_install = 1;
    lag_node2();
    struct pn_node *n = &pn_nodes[2];
    for (int s = 0;
         s < PN_MAX_STEPS && !(n->up && pgroup_install_pending(n->g)); s++)
        pn_step();
    ck_assert(pgroup_install_pending(n->g));
    ck_assert(pinstall_pending(n->parts, &pn_id));
    pn_node_kill(n);
    /* what each state looks like */
    char backup[400];
    snprintf(backup, sizeof(backup), "%s/backup", n->root);
    char cmd[2400];
    snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s'", n->parts, backup);
    sh(cmd);
    struct sio_fault f;
    sio_fault_init(&f, 1);
    uint64_t old_ck = 0, new_ck = 0;
    {
        /* the two outcomes, measured once */
        old_ck = boot_checkpoint(&f.io, n->parts);
        ck_assert_int_eq(pinstall_swap(&f.io, n->parts, &pn_id), 0);
        new_ck = boot_checkpoint(&f.io, n->parts);
        ck_assert_uint_gt(new_ck, old_ck);
    }
    const enum sio_kind kinds[] = {SIO_DIR_RENAME, SIO_DIR_FSYNC, SIO_UNLINK,
                                   SIO_RMDIR, SIO_READDIR};
    unsigned points = 0, olds = 0, news = 0;
    for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        for (uint64_t nth = 1; nth < 200; nth++) {
            restore(n->parts, backup);
            sio_fault_reset(&f);
            f.crash_after_fault = 1;
            sio_fault_arm(&f, kinds[k], nth, EIO, -1);
            int rc = pinstall_swap(&f.io, n->parts, &pn_id);
            int fired = f.crashed || rc != 0;
            sio_fault_reset(&f);
            if (!fired)
                break; /* past the last call of that kind */
            points++;
            enum pinstall_outcome out;
            ck_assert_int_eq(pinstall_recover(&f.io, n->parts, &pn_id, &out),
                             0);
            uint64_t ck = boot_checkpoint(&f.io, n->parts);
            ck_assert_msg(ck == old_ck || ck == new_ck,
                          "crash at call %llu of kind %u: checkpoint %llu",
                          (unsigned long long)nth, kinds[k],
                          (unsigned long long)ck);
            olds += ck == old_ck;
            news += ck == new_ck;
            /* nothing of the install is left behind */
            ck_assert(!pinstall_pending(n->parts, &pn_id));
        }
    }
    ck_assert_uint_ge(points, 5);
    ck_assert_uint_gt(olds + news, 0);
    /* a crash while staging (the staged tree incomplete) is cleaned up and
     * leaves the old state */
    restore(n->parts, backup);
    snprintf(cmd, sizeof(cmd),
             "mkdir -p '%s/" PINSTALL_STAGE_DIR
             "' && mv '%s/4.5.6.88" PINSTALL_NEW "' '%s/" PINSTALL_STAGE_DIR
             "/4.5.6.88'",
             n->parts, n->parts, n->parts);
    sh(cmd);
    enum pinstall_outcome out;
    ck_assert_int_eq(pinstall_recover(&f.io, n->parts, &pn_id, &out), 0);
    ck_assert_int_eq(out, PINSTALL_CLEANED);
    ck_assert_uint_eq(boot_checkpoint(&f.io, n->parts), old_ck);
    dt_rm_rf(backup);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("pxfer");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, pn_teardown);
    tcase_add_test(tc, test_image_roundtrip_and_refusals);
    tcase_add_test(tc, test_partition_manifest_rules);
    tcase_add_test(tc, test_lagging_replica_installs_and_converges);
    tcase_add_test(tc, test_install_fsyncs_off_the_loop);
    tcase_add_test(tc, test_install_write_failure_then_retried);
    tcase_add_test(tc, test_fetch_budget_defers_transfer);
    tcase_add_test(tc, test_tampered_artifact_refused_then_retried);
    tcase_add_test(tc, test_serving_rules);
    tcase_add_test(tc, test_install_crash_points);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    if (sodium_init() < 0)
        return 1;
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
