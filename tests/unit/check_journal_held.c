/*
 * tests/unit/check_journal_held.c - a backup's group commit of journal
 * appends on shard 0's commit path: two replicas of a 3-node cluster
 * (primary 0 and backup 1, replica 2 absent) run in-process, each on its
 * own data dir, with the replica frames carried by hand. The Prepares
 * the backup handles in one pass are journaled without an fsync and not
 * acknowledged; one commit_flush makes them durable with ONE fsync and
 * only then are their PrepareOks sent, in op order (R3); a failed fsync
 * sends none; a StartView that truncates the held ops before their
 * fsync drops them (no PrepareOk, no crash) and the backup goes on.
 * On the primary, proposals beyond a pipeline full of prepares waiting
 * for PrepareOks are queued, not answered 57, and proposed once ops
 * commit (no flush asked for before that: no busy loop); at a view
 * change they leave the queue at the next tick.
 * Driven through tests/unit/commit_fixture.h.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/errors.h"
#include "shard/storage/io.h"
#include "shard/vsr/engine.h"
#include "tests/unit/commit_fixture.h"

#define JH_OUT_MAX 256u

struct jh_msg {
    uint8_t to;
    uint8_t *frame;
    uint32_t len;
};

/* One replica: its commit path and the frames it sent to replicas. */
struct jh_node {
    struct fx fx;
    uint8_t id;
    struct sio_fault flt;
    struct jh_msg out[JH_OUT_MAX];
    unsigned nout;
};

static int
jh_replica_send(void *ctx, uint8_t replica, const void *frame, uint32_t len)
{
    struct jh_node *n = ctx;
    if (n->nout == JH_OUT_MAX)
        abort();
    struct jh_msg *m = &n->out[n->nout++];
    m->to = replica;
    m->len = len;
    m->frame = vs_xmalloc(len);
    memcpy(m->frame, frame, len);
    return 0;
}

static void
jh_clear_out(struct jh_node *n)
{
    for (unsigned i = 0; i < n->nout; i++)
        free(n->out[i].frame);
    n->nout = 0;
}

static uint8_t
jh_command(const struct jh_msg *m)
{
    return ((const struct vs_header *)m->frame)->f.command;
}

/* Formats and boots replica `id` of a 3-node cluster with group commit
 * and a counting (real) I/O layer. */
static void
jh_boot(struct jh_node *n, uint8_t id)
{
    char err[512], id_s[8];
    memset(n, 0, sizeof(*n));
    n->id = id;
    fx_init(&n->fx);
    snprintf(id_s, sizeof(id_s), "%u", id);
    fx_config(&n->fx, "replica_id", id_s);
    fx_config(&n->fx, "replica_addrs", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3");
    fx_region(&n->fx);
    ck_assert_msg(shard0_format(&n->fx.cfg, err, sizeof(err)) == 0,
                  "format: %s", err);
    sio_fault_init(&n->flt, 0);
    struct vs_lr_writer_opts wo = {.deadline_ns = 1000000000ull};
    lr_writer_start(&n->fx.lr, &wo);
    ck_assert_msg(shard0_boot(&n->fx.cfg, &n->fx.rec, err, sizeof(err)) == 0,
                  "boot: %s", err);
    struct commit_options o = {
        .cfg = &n->fx.cfg,
        .lr = &n->fx.lr,
        .io = &n->flt.io,
        .send = fx_send,
        .send_ctx = &n->fx,
        .replica_send = jh_replica_send,
        .replica_ctx = n,
        .clock = fx_clock,
        .clock_ctx = &n->fx,
        .group_commit = 1,
    };
    int rc = commit_create(&o, &n->fx.rec, &n->fx.c, err, sizeof(err));
    shard0_recovered_fini(&n->fx.rec);
    ck_assert_msg(rc == 0, "commit_create: %s", err);
    for (uint8_t p = 0; p < 3; p++)
        if (p != id)
            commit_on_link(n->fx.c, p, 1);
}

static void
jh_fini(struct jh_node *n)
{
    jh_clear_out(n);
    fx_fini(&n->fx);
}

/* Hands every frame `from` sent to `to` (in order) to `to`; the frames
 * for other replicas are dropped. Returns how many were delivered. */
static unsigned
jh_deliver(struct jh_node *from, struct jh_node *to)
{
    unsigned k = 0;
    for (unsigned i = 0; i < from->nout; i++) {
        struct jh_msg *m = &from->out[i];
        if (m->to == to->id) {
            ck_assert_int_eq(
                commit_on_replica_frame(to->fx.c, from->id, m->frame, m->len),
                0);
            k++;
        }
    }
    jh_clear_out(from);
    return k;
}

/* PrepareOks in n's outbox, their ops in out[] (in send order). */
static unsigned
jh_prepare_oks(const struct jh_node *n, uint64_t *ops, unsigned cap)
{
    unsigned k = 0;
    for (unsigned i = 0; i < n->nout; i++) {
        if (jh_command(&n->out[i]) != VS_CMD_PREPARE_OK)
            continue;
        const struct vs_hdr_prepare_ok *ok =
            (const struct vs_hdr_prepare_ok *)n->out[i].frame;
        if (k < cap)
            ops[k] = ok->op;
        k++;
    }
    return k;
}

static struct vs_u128
client_n(uint64_t i)
{
    struct vs_u128 c = {0x7000 + i, 0xbac0};
    return c;
}

/* The header of the genesis prepare, as primary 0 sent it. */
static struct vs_hdr_prepare jh_genesis;

/* Primary 0 and backup 1 with genesis committed on both. */
static void
jh_pair(struct jh_node *p, struct jh_node *b)
{
    char err[512];
    jh_boot(p, 0);
    jh_boot(b, 1);
    ck_assert_int_eq(commit_genesis_needed(p->fx.c), 1);
    ck_assert_msg(commit_genesis(p->fx.c, err, sizeof(err)) == 0, "genesis: %s",
                  err);
    ck_assert_uint_ge(p->nout, 1);
    ck_assert_uint_eq(jh_command(&p->out[0]), VS_CMD_PREPARE);
    memcpy(&jh_genesis, p->out[0].frame, sizeof(jh_genesis));
    ck_assert_uint_eq(jh_deliver(p, b), 1); /* its Prepare */
    if (commit_flush_needed(b->fx.c))
        ck_assert_int_eq(commit_flush(b->fx.c), 0);
    ck_assert_uint_ge(jh_deliver(b, p), 1); /* its PrepareOk */
    if (commit_flush_needed(p->fx.c))
        ck_assert_int_eq(commit_flush(p->fx.c), 0);
    ck_assert_uint_eq(vsr_commit_min(commit_engine(p->fx.c)), 1);
    fx_clear_sent(&p->fx);
    jh_clear_out(p);
    jh_clear_out(b);
}

/* The primary proposes `count` registers in one pass and flushes its
 * own appends; its Prepares stay in its outbox. */
static uint64_t
jh_propose(struct jh_node *p, unsigned count, uint64_t first)
{
    uint64_t op0 = vsr_op(commit_engine(p->fx.c));
    for (unsigned i = 0; i < count; i++)
        ck_assert_int_eq(fx_register(&p->fx, client_n(first + i), 0), 0);
    ck_assert_uint_eq(vsr_op(commit_engine(p->fx.c)), op0 + count);
    if (commit_flush_needed(p->fx.c))
        ck_assert_int_eq(commit_flush(p->fx.c), 0);
    return op0;
}

START_TEST(test_backup_one_fsync_then_prepare_oks)
{
    struct jh_node p, b;
    jh_pair(&p, &b);
    uint64_t op0 = jh_propose(&p, 5, 0);
    uint64_t syncs0 = b.flt.calls[SIO_FSYNC];
    uint64_t grouped0 = commit_stats(b.fx.c)->grouped_ops;
    ck_assert_uint_eq(jh_deliver(&p, &b), 5);
    /* journaled, not durable, not acknowledged */
    ck_assert_uint_eq(vsr_op(commit_engine(b.fx.c)), op0 + 5);
    uint64_t ops[16];
    ck_assert_uint_eq(jh_prepare_oks(&b, ops, 16), 0);
    ck_assert_uint_eq(b.flt.calls[SIO_FSYNC], syncs0);
    ck_assert_int_eq(commit_flush_needed(b.fx.c), 1);
    ck_assert_int_eq(commit_flush(b.fx.c), 0);
    /* one fsync, then one PrepareOk per op, in op order */
    ck_assert_uint_eq(b.flt.calls[SIO_FSYNC], syncs0 + 1);
    ck_assert_uint_eq(commit_stats(b.fx.c)->grouped_ops, grouped0 + 5);
    ck_assert_uint_eq(jh_prepare_oks(&b, ops, 16), 5);
    for (unsigned i = 0; i < 5; i++)
        ck_assert_uint_eq(ops[i], op0 + 1 + i);
    ck_assert_int_eq(commit_flush_needed(b.fx.c), 0);
    /* the primary commits and answers all five */
    jh_deliver(&b, &p);
    ck_assert_uint_eq(vsr_commit_min(commit_engine(p.fx.c)), op0 + 5);
    ck_assert_uint_eq(p.fx.nsent, 5);
    jh_fini(&p);
    jh_fini(&b);
}
END_TEST

START_TEST(test_backup_fsync_failure_sends_no_prepare_ok)
{
    struct jh_node p, b;
    jh_pair(&p, &b);
    jh_propose(&p, 3, 10);
    ck_assert_uint_eq(jh_deliver(&p, &b), 3);
    sio_fault_arm(&b.flt, SIO_FSYNC, 1, EIO, -1);
    ck_assert_int_eq(commit_flush(b.fx.c), -VS_EFATAL);
    uint64_t ops[8];
    ck_assert_uint_eq(jh_prepare_oks(&b, ops, 8), 0); /* never acknowledged */
    char msg[512];
    commit_fatal_msg(b.fx.c, msg, sizeof(msg));
    ck_assert_ptr_nonnull(strstr(msg, "journal"));
    jh_fini(&p);
    jh_fini(&b);
}
END_TEST

/* A StartView of view 2 (primary 2) whose log ends at the prepare
 * `top` (its one suffix header), everything up to it committed. */
static void
jh_start_view(uint8_t *frame, struct vs_u128 cluster,
              const struct vs_hdr_prepare *top)
{
    memset(frame, 0, 2 * VS_HEADER_SIZE);
    struct vs_hdr_start_view *h = (struct vs_hdr_start_view *)frame;
    h->f.cluster = cluster;
    h->f.size = 2 * VS_HEADER_SIZE;
    h->f.view = 2;
    h->f.release = VS_WIRE_FORMAT_VERSION;
    h->f.command = VS_CMD_START_VIEW;
    h->f.replica = 2;
    h->op = top->op;
    h->commit = top->op;
    h->group = VS_METADATA_GROUP;
    memcpy(frame + VS_HEADER_SIZE, top, VS_HEADER_SIZE);
    h->f.checksum_body =
        vs_body_checksum(frame + VS_HEADER_SIZE, VS_HEADER_SIZE);
    vs_frame_seal((struct vs_header *)frame);
}

START_TEST(test_start_view_truncates_held_ops)
{
    struct jh_node p, b;
    jh_pair(&p, &b);
    uint64_t op0 = jh_propose(&p, 4, 20);
    struct vs_u128 cluster =
        ((const struct vs_header *)p.out[0].frame)->f.cluster;
    ck_assert_uint_eq(jh_deliver(&p, &b), 4);
    const struct vs_vsr *e = commit_engine(b.fx.c);
    ck_assert_uint_eq(vsr_op(e), op0 + 4);
    ck_assert_uint_le(vsr_commit_min(e), op0);
    ck_assert_int_eq(commit_flush_needed(b.fx.c), 1);
    /* view 2's log ends below the held ops: they are cut before their
     * fsync (the StartView is persisted first, synchronously) */
    uint8_t sv[2 * VS_HEADER_SIZE] __attribute__((aligned(16)));
    ck_assert_uint_eq(jh_genesis.op, op0);
    jh_start_view(sv, cluster, &jh_genesis);
    ck_assert_int_eq(commit_on_replica_frame(b.fx.c, 2, sv, sizeof(sv)), 0);
    ck_assert_uint_eq(vsr_view(e), 2);
    ck_assert_uint_eq(vsr_op(e), op0);
    ck_assert_uint_eq(commit_stats(b.fx.c)->truncations, 1);
    /* the flush reports the cut ops stale: dropped, never acknowledged */
    ck_assert_int_eq(commit_flush(b.fx.c), 0);
    uint64_t ops[16];
    unsigned k = jh_prepare_oks(&b, ops, 16);
    for (unsigned i = 0; i < k && i < 16; i++)
        ck_assert_uint_le(ops[i], op0);
    ck_assert_int_eq(commit_flush_needed(b.fx.c), 0);
    jh_clear_out(&b);
    /* the backup goes on in view 2: a restart finds the journal at op0 */
    fx_stop(&b.fx);
    char err[512];
    struct vs_lr_writer_opts wo = {.deadline_ns = 1000000000ull};
    lr_writer_start(&b.fx.lr, &wo);
    ck_assert_msg(shard0_boot(&b.fx.cfg, &b.fx.rec, err, sizeof(err)) == 0,
                  "reboot: %s", err);
    struct commit_options o = {
        .cfg = &b.fx.cfg,
        .lr = &b.fx.lr,
        .io = &b.flt.io,
        .send = fx_send,
        .send_ctx = &b.fx,
        .replica_send = jh_replica_send,
        .replica_ctx = &b,
        .clock = fx_clock,
        .clock_ctx = &b.fx,
        .group_commit = 1,
    };
    int rc = commit_create(&o, &b.fx.rec, &b.fx.c, err, sizeof(err));
    shard0_recovered_fini(&b.fx.rec);
    ck_assert_msg(rc == 0, "commit_create: %s", err);
    struct vs_vsr_info in;
    vsr_info(commit_engine(b.fx.c), &in);
    ck_assert_uint_eq(in.journal_op, op0);
    ck_assert_uint_eq(in.view, 2);
    jh_fini(&p);
    jh_fini(&b);
}
END_TEST

/* Replies the primary sent: all status 0 (none a 57); their count. */
static unsigned
jh_replies_ok(const struct fx *f)
{
    for (unsigned i = 0; i < f->nsent; i++) {
        ck_assert_uint_eq(f->sent[i].h.kind, FWD_REPLY);
        const struct vs_hdr_reply *r =
            (const struct vs_hdr_reply *)f->sent[i].frame;
        ck_assert_uint_eq(r->status, 0);
    }
    return f->nsent;
}

/* Carries frames both ways and flushes both until nothing moves. */
static void
jh_settle(struct jh_node *p, struct jh_node *b)
{
    for (unsigned round = 0; round < 64; round++) {
        unsigned moved = jh_deliver(p, b);
        if (commit_flush_needed(b->fx.c))
            ck_assert_int_eq(commit_flush(b->fx.c), 0);
        moved += jh_deliver(b, p);
        int again = commit_flush_needed(p->fx.c);
        if (again)
            ck_assert_int_eq(commit_flush(p->fx.c), 0);
        if (moved == 0 && !again && p->nout == 0)
            return;
    }
    ck_abort_msg("frames still moving after 64 rounds");
}

START_TEST(test_cluster_full_pipeline_queues)
{
    struct jh_node p, b;
    jh_pair(&p, &b);
    const unsigned n = VSR_PIPELINE_MAX + 3;
    uint64_t op0 = vsr_op(commit_engine(p.fx.c));
    for (unsigned i = 0; i < n; i++)
        ck_assert_int_eq(fx_register(&p.fx, client_n(40 + i), 0), 0);
    ck_assert_int_eq(commit_flush(p.fx.c), 0);
    /* the pipeline is full of prepares waiting for PrepareOks: the three
     * beyond it wait in the queue, unanswered (no 57), and the queue
     * asks for no flush before an op commits (no busy loop) */
    ck_assert_uint_eq(vsr_op(commit_engine(p.fx.c)), op0 + VSR_PIPELINE_MAX);
    ck_assert_uint_eq(p.fx.nsent, 0);
    ck_assert_uint_eq(commit_stats(p.fx.c)->transient, 0);
    ck_assert_int_eq(commit_flush_needed(p.fx.c), 0);
    /* the PrepareOks free the pipeline; a newcomer arriving before the
     * flush waits behind the queue (arrival order), it does not take
     * the room */
    ck_assert_uint_eq(jh_deliver(&p, &b), VSR_PIPELINE_MAX);
    ck_assert_int_eq(commit_flush(b.fx.c), 0);
    jh_deliver(&b, &p);
    ck_assert_uint_eq(vsr_commit_min(commit_engine(p.fx.c)),
                      op0 + VSR_PIPELINE_MAX);
    ck_assert_uint_eq(jh_replies_ok(&p.fx), VSR_PIPELINE_MAX);
    ck_assert_int_eq(fx_register(&p.fx, client_n(39), 0), 0);
    ck_assert_uint_eq(vsr_op(commit_engine(p.fx.c)), op0 + VSR_PIPELINE_MAX);
    ck_assert_int_eq(commit_flush_needed(p.fx.c), 1);
    jh_settle(&p, &b);
    ck_assert_uint_eq(vsr_commit_min(commit_engine(p.fx.c)), op0 + n + 1);
    ck_assert_uint_eq(jh_replies_ok(&p.fx), n + 1);
    ck_assert_uint_eq(commit_stats(p.fx.c)->transient, 0);
    for (unsigned i = 0; i <= n; i++) { /* clients 40.. then 39 */
        const struct vs_hdr_reply *r =
            (const struct vs_hdr_reply *)p.fx.sent[i].frame;
        ck_assert_uint_eq(r->client.lo, client_n(i < n ? 40 + i : 39).lo);
    }
    jh_fini(&p);
    jh_fini(&b);
}
END_TEST

START_TEST(test_queued_proposal_answered_when_no_longer_primary)
{
    struct jh_node p, b;
    jh_pair(&p, &b);
    const unsigned n = VSR_PIPELINE_MAX + 2;
    for (unsigned i = 0; i < n; i++)
        ck_assert_int_eq(fx_register(&p.fx, client_n(100 + i), 0), 0);
    ck_assert_int_eq(commit_flush(p.fx.c), 0);
    ck_assert_uint_eq(p.fx.nsent, 0);
    ck_assert_int_eq(commit_flush_needed(p.fx.c), 0);
    /* a tick retries the queue even without a commit: still full */
    ck_assert_int_eq(commit_tick(p.fx.c), 0);
    ck_assert_int_eq(commit_flush_needed(p.fx.c), 1);
    ck_assert_int_eq(commit_flush(p.fx.c), 0);
    ck_assert_uint_eq(p.fx.nsent, 0);
    ck_assert_int_eq(commit_flush_needed(p.fx.c), 0);
    /* view 2 (primary 2) starts without the uncommitted ops: the cut
     * ones are answered 57 at once, the queued ones leave the queue at
     * the next tick (handed to the new primary): none waits forever */
    struct vs_u128 cluster =
        ((const struct vs_header *)p.out[0].frame)->f.cluster;
    uint8_t sv[2 * VS_HEADER_SIZE] __attribute__((aligned(16)));
    jh_start_view(sv, cluster, &jh_genesis);
    ck_assert_int_eq(commit_on_replica_frame(p.fx.c, 2, sv, sizeof(sv)), 0);
    ck_assert_uint_eq(vsr_view(commit_engine(p.fx.c)), 2);
    ck_assert_uint_eq(p.fx.nsent, VSR_PIPELINE_MAX);
    ck_assert_int_eq(commit_tick(p.fx.c), 0);
    if (commit_flush_needed(p.fx.c))
        ck_assert_int_eq(commit_flush(p.fx.c), 0);
    /* the two queued ones went to view 2's primary as forwards */
    unsigned fwd = 0;
    for (unsigned i = 0; i < p.nout; i++)
        if (p.out[i].to == 2 && jh_command(&p.out[i]) == VS_CMD_FORWARD_REQUEST)
            fwd++;
    ck_assert_uint_eq(fwd, 2);
    ck_assert_uint_eq(p.fx.nsent, VSR_PIPELINE_MAX);
    for (unsigned i = 0; i < p.fx.nsent; i++) {
        const struct vs_hdr_reply *r =
            (const struct vs_hdr_reply *)p.fx.sent[i].frame;
        ck_assert_uint_eq(r->status, VS_E_TRANSIENT_NOT_COMMITTED);
    }
    ck_assert_int_eq(commit_flush_needed(p.fx.c), 0);
    jh_fini(&p);
    jh_fini(&b);
}
END_TEST

static Suite *
held_suite(void)
{
    Suite *s = suite_create("journal_held");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_backup_one_fsync_then_prepare_oks);
    tcase_add_test(tc, test_backup_fsync_failure_sends_no_prepare_ok);
    tcase_add_test(tc, test_start_view_truncates_held_ops);
    tcase_add_test(tc, test_cluster_full_pipeline_queues);
    tcase_add_test(tc, test_queued_proposal_answered_when_no_longer_primary);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(held_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
