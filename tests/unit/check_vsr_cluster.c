/*
 * tests/unit/check_vsr_cluster.c - the VSR engine's normal path for n > 1,
 * driven through the deterministic in-memory harness (tests/sim).
 *
 * Covers: replication and commit on quorum, backups committing from
 * prepares and Commit heartbeats, PrepareOk only after the backup's
 * journal append is durable (checked by the harness on every frame),
 * backups refusing prepares with a bad identity / body / parent chain /
 * cluster / group / release, a backup taking the primary's prepare over a
 * gap and repairing the ops below it by the hash chain, duplicate and late
 * PrepareOks ignored, message loss repaired by retransmission, seeded random
 * loss, reordering and duplication with one history on every replica, restart
 * into Recovering. Every run is bounded in ticks; seeds are fixed.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/mem.h"
#include "shard/vsr/engine.h"
#include "tests/sim/sim_net.h"

#define ck_assert_clean(s)                                                     \
    ck_assert_msg((s)->violations == 0, "violation: %s", (s)->violation)

static struct sim *
sim_new(unsigned n, uint64_t seed)
{
    struct sim *s = vs_xcalloc(1, sizeof(*s));
    struct vs_vsr_options o;
    sim_default_options(&o, n);
    ck_assert_int_eq(sim_init(s, n, seed, &o), 0);
    return s;
}

static void
sim_free(struct sim *s)
{
    sim_fini(s);
    free(s);
}

/* Submits `count` requests from distinct clients to the primary,
 * stepping while the pipeline is full; bounded by max_ticks. */
static void
submit(struct sim *s, uint64_t first_client, unsigned count, uint64_t max_ticks)
{
    uint64_t ticks = 0;
    for (unsigned k = 0; k < count; k++) {
        uint64_t c = first_client + k;
        uint8_t body[24];
        memset(body, (int)(c * 7), sizeof(body));
        for (;;) {
            int rc =
                sim_request(s, 0, c, 1, VS_OP_CREATE_TOPIC, body, sizeof(body));
            if (rc == 0)
                break;
            ck_assert_int_eq(rc, -EBUSY);
            ck_assert_uint_lt(ticks++, max_ticks);
            sim_step(s);
        }
    }
}

static void
assert_converged(struct sim *s, uint64_t op)
{
    for (unsigned i = 0; i < s->n; i++) {
        ck_assert_uint_eq(s->r[i].applied, op);
        ck_assert_uint_eq(s->r[i].sm_hash, s->r[0].sm_hash);
        ck_assert_uint_eq(vsr_op(s->r[i].eng), op);
        struct vs_hdr_prepare a, b;
        ck_assert(vsr_header(s->r[0].eng, op, &a));
        ck_assert(vsr_header(s->r[i].eng, op, &b));
        ck_assert(vs_u128_eq(a.f.checksum, b.f.checksum));
    }
    for (uint64_t k = 1; k <= op; k++)
        ck_assert(s->history_set[k]);
}

START_TEST(test_three_normal_path)
{
    struct sim *s = sim_new(3, 101);
    ck_assert(vsr_is_primary(s->r[0].eng));
    ck_assert(!vsr_is_primary(s->r[1].eng));
    ck_assert_int_eq(vsr_status(s->r[1].eng), VSR_STATUS_NORMAL);
    submit(s, 1, 20, 200);
    ck_assert_int_eq(sim_run_until_applied(s, 20, 200), 0);
    assert_converged(s, 20);
    ck_assert_uint_eq(s->replies_len, 20);
    for (size_t k = 0; k < 20; k++) {
        ck_assert_uint_eq(s->replies[k].replica, 0); /* primary only */
        ck_assert_uint_eq(s->replies[k].op, k + 1);
    }
    ck_assert_uint_eq(s->r[1].replies, 0);
    /* Backups refuse client requests with "not primary, forward it":
     * only the primary prepares. */
    ck_assert_int_eq(sim_request(s, 1, 99, 1, VS_OP_CREATE_TOPIC, "x", 1),
                     -EREMOTE);
    ck_assert_int_eq(vsr_primary(s->r[1].eng), 0);
    ck_assert(vsr_is_settled_primary(s->r[0].eng));
    ck_assert(!vsr_is_settled_primary(s->r[1].eng));
    ck_assert_uint_eq(vsr_stats(s->r[0].eng)->withheld, 0);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Counts PrepareOks on the wire. */
static int
count_prepare_ok(void *ctx, unsigned from, unsigned to,
                 const struct vs_header *h)
{
    (void)from;
    (void)to;
    if (h->f.command == VS_CMD_PREPARE_OK)
        ++*(unsigned *)ctx;
    return 0;
}

/* A backup acknowledges only after its append is durable, and the
 * primary does not commit on its own durability alone (quorum 2). */
START_TEST(test_prepare_ok_after_durable)
{
    struct sim *s = sim_new(3, 102);
    unsigned oks = 0;
    s->filter = count_prepare_ok;
    s->filter_ctx = &oks;
    s->r[1].hold_journal = 1;
    s->r[2].hold_journal = 1;
    ck_assert_int_eq(sim_request(s, 0, 1, 1, VS_OP_CREATE_TOPIC, "a", 1), 0);
    for (int t = 0; t < 30; t++)
        sim_step(s);
    ck_assert_uint_eq(oks, 0);
    ck_assert_uint_eq(vsr_commit_max(s->r[0].eng), 0);
    ck_assert_uint_eq(s->r[0].applied, 0);
    ck_assert_uint_eq(vsr_op(s->r[1].eng), 1); /* received, not durable */
    ck_assert_int_eq(sim_complete_journal(s, 1, 1), 0);
    ck_assert_uint_eq(oks, 1);
    ck_assert_int_eq(sim_run_until_applied(s, 1, 50), -ETIMEDOUT);
    ck_assert_uint_eq(s->r[0].applied, 1); /* quorum: primary + backup 1 */
    ck_assert_uint_eq(s->r[1].applied, 1); /* via the heartbeat */
    ck_assert_uint_eq(s->r[2].applied, 0); /* its append is still held */
    ck_assert_uint_eq(s->replies_len, 1);
    ck_assert_int_eq(sim_complete_journal(s, 2, 1), 0);
    ck_assert_int_eq(sim_run_until_applied(s, 1, 50), 0);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Captures the first Prepare the primary sends. */
struct capture {
    uint8_t frame[VS_HEADER_SIZE + 64];
    uint32_t len;
    uint8_t command;
    int drop;
};

static int
capture_first(void *ctx, unsigned from, unsigned to, const struct vs_header *h)
{
    struct capture *c = ctx;
    (void)from;
    (void)to;
    if (h->f.command == c->command && c->len == 0 &&
        h->f.size <= sizeof(c->frame)) {
        memcpy(c->frame, h, h->f.size);
        c->len = h->f.size;
    }
    return c->drop && h->f.command == c->command;
}

static void
reseal(uint8_t *frame)
{
    struct vs_hdr_prepare *p = (struct vs_hdr_prepare *)frame;
    p->f.checksum = vs_prepare_identity(p);
}

START_TEST(test_backup_refuses_bad_prepares)
{
    struct sim *s = sim_new(3, 103);
    struct capture c;
    memset(&c, 0, sizeof(c));
    c.command = VS_CMD_PREPARE;
    c.drop = 1; /* the backups see only what we hand them */
    s->filter = capture_first;
    s->filter_ctx = &c;
    ck_assert_int_eq(sim_request(s, 0, 1, 1, VS_OP_CREATE_TOPIC, "payload!", 8),
                     0);
    ck_assert_uint_eq(c.len, VS_HEADER_SIZE + 8);
    struct vs_vsr *b = s->r[1].eng;
    uint8_t f[sizeof(c.frame)];
    struct vs_hdr_prepare *p = (struct vs_hdr_prepare *)f;

    /* identity: any header bit outside checksum/view */
    memcpy(f, c.frame, c.len);
    p->timestamp ^= 4;
    ck_assert_int_eq(vsr_on_message(b, f, c.len), VSR_DROP_IDENTITY);
    /* body */
    memcpy(f, c.frame, c.len);
    f[VS_HEADER_SIZE + 3] ^= 0x10;
    ck_assert_int_eq(vsr_on_message(b, f, c.len), VSR_DROP_BODY);
    /* unsealed body (checksum_body 0) */
    memcpy(f, c.frame, c.len);
    memset(&p->f.checksum_body, 0, sizeof(p->f.checksum_body));
    reseal(f);
    ck_assert_int_eq(vsr_on_message(b, f, c.len), VSR_DROP_BODY);
    /* broken parent chain with a valid identity */
    memcpy(f, c.frame, c.len);
    p->parent.lo = 77;
    reseal(f);
    ck_assert_int_eq(vsr_on_message(b, f, c.len), VSR_DROP_CHAIN);
    /* gap: an op further above the journal than the bodies held in
     * memory allow (a nearer one is taken over the gap, see
     * test_prepare_over_gap) */
    memcpy(f, c.frame, c.len);
    p->op = 2 + 4 * (uint64_t)VSR_PIPELINE_MAX;
    reseal(f);
    ck_assert_int_eq(vsr_on_message(b, f, c.len), VSR_DROP_GAP);
    ck_assert_uint_eq(vsr_op(b), 0);
    /* another cluster, another group, unknown release */
    memcpy(f, c.frame, c.len);
    p->f.cluster.hi ^= 1;
    reseal(f);
    ck_assert_int_eq(vsr_on_message(b, f, c.len), VSR_DROP_CLUSTER);
    memcpy(f, c.frame, c.len);
    p->group = 12;
    reseal(f);
    ck_assert_int_eq(vsr_on_message(b, f, c.len), VSR_DROP_GROUP);
    memcpy(f, c.frame, c.len);
    p->f.release = VS_WIRE_FORMAT_V2 + 1;
    reseal(f);
    ck_assert_int_eq(vsr_on_message(b, f, c.len), VSR_DROP_RELEASE);
    /* newer view (not part of the identity) needs the view change */
    memcpy(f, c.frame, c.len);
    p->f.view = 1;
    ck_assert_int_eq(vsr_on_message(b, f, c.len), VSR_DROP_VIEW_NEW);
    /* from a backup instead of the primary */
    memcpy(f, c.frame, c.len);
    p->f.replica = 2;
    reseal(f);
    ck_assert_int_eq(vsr_on_message(b, f, c.len), VSR_DROP_NOT_PRIMARY);
    /* truncated frame */
    ck_assert_int_eq(vsr_on_message(b, c.frame, c.len - 1), VSR_DROP_SHORT);
    ck_assert_uint_eq(vsr_op(b), 0);
    struct vs_vsr_action a;
    ck_assert_int_eq(vsr_pop(b, &a), 0); /* nothing journaled */

    /* The genuine prepare is accepted, once. */
    ck_assert_int_eq(vsr_on_message(b, c.frame, c.len), VSR_ACCEPTED);
    ck_assert_uint_eq(vsr_op(b), 1);
    ck_assert_int_eq(vsr_on_message(b, c.frame, c.len), VSR_DROP_DUPLICATE);
    /* A different prepare for the same op conflicts. */
    memcpy(f, c.frame, c.len);
    p->timestamp += 1;
    reseal(f);
    ck_assert_int_eq(vsr_on_message(b, f, c.len), VSR_DROP_CONFLICT);
    /* The primary itself refuses a prepare (its replica byte names the
     * builder, which a retransmit after a view change may be us: the
     * refusal is by role). */
    ck_assert_int_eq(vsr_on_message(s->r[0].eng, c.frame, c.len),
                     VSR_DROP_NOT_PRIMARY);
    sim_drain(s);
    s->filter = NULL;
    ck_assert_int_eq(sim_run_until_applied(s, 1, 200), 0);
    ck_assert_uint_gt(vsr_stats(b)->verdicts[VSR_DROP_IDENTITY], 0);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

struct oks {
    uint8_t frame[16][VS_HEADER_SIZE];
    unsigned count;
};

static int
keep_oks(void *ctx, unsigned from, unsigned to, const struct vs_header *h)
{
    struct oks *k = ctx;
    (void)from;
    (void)to;
    if (h->f.command == VS_CMD_PREPARE_OK && k->count < 16)
        memcpy(k->frame[k->count++], h, VS_HEADER_SIZE);
    return 0;
}

START_TEST(test_duplicate_and_late_prepare_ok)
{
    struct sim *s = sim_new(3, 104);
    struct oks k;
    memset(&k, 0, sizeof(k));
    s->filter = keep_oks;
    s->filter_ctx = &k;
    ck_assert_int_eq(sim_request(s, 0, 1, 1, VS_OP_CREATE_TOPIC, "d", 1), 0);
    ck_assert_int_eq(sim_run_until_applied(s, 1, 100), 0);
    ck_assert_uint_eq(k.count, 2);
    const struct vs_vsr_stats *st = vsr_stats(s->r[0].eng);
    /* Both backups acked; the second arrived after the commit. */
    ck_assert_uint_eq(st->verdicts[VSR_ACCEPTED], 1);
    ck_assert_uint_eq(st->verdicts[VSR_DROP_LATE], 1);
    uint64_t commits = st->commits;
    ck_assert_int_eq(vsr_on_message(s->r[0].eng, k.frame[0], VS_HEADER_SIZE),
                     VSR_DROP_DUPLICATE);
    ck_assert_int_eq(vsr_on_message(s->r[0].eng, k.frame[1], VS_HEADER_SIZE),
                     VSR_DROP_DUPLICATE);
    /* A tampered PrepareOk fails its seal. */
    k.frame[0][170] ^= 1;
    ck_assert_int_eq(vsr_on_message(s->r[0].eng, k.frame[0], VS_HEADER_SIZE),
                     VSR_DROP_SEAL);
    sim_drain(s);
    ck_assert_uint_eq(st->commits, commits);
    ck_assert_uint_eq(s->replies_len, 1);

    /* Everything duplicated on the wire: still one commit per op. */
    s->filter = NULL;
    s->dup_per_mille = 1000;
    submit(s, 10, 12, 300);
    ck_assert_int_eq(sim_run_until_applied(s, 13, 300), 0);
    assert_converged(s, 13);
    ck_assert_uint_eq(st->commits, 13);
    ck_assert_uint_eq(s->replies_len, 13);
    ck_assert_uint_gt(st->verdicts[VSR_DROP_DUPLICATE], 2);
    ck_assert_uint_gt(vsr_stats(s->r[1].eng)->verdicts[VSR_DROP_STALE], 0);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Drops every Prepare of op 1 to replica 2 (first sends and
 * retransmits; RepairPrepares pass). */
static int
drop_op1_to_2(void *ctx, unsigned from, unsigned to, const struct vs_header *h)
{
    (void)from;
    if (to != 2 || h->f.command != VS_CMD_PREPARE)
        return 0;
    ++*(unsigned *)ctx;
    return ((const struct vs_hdr_prepare *)h)->op == 1;
}

/* The primary's commit waits on a backup that lost op 1: backup 1's
 * appends are held, so only backup 2's PrepareOks can make a quorum.
 * Backup 2 takes op 2's Prepare over the gap (its head jumps to 2, its
 * journal stays below the gap, no PrepareOk for op 2 yet), repairs op 1
 * by RequestPrepares, checked against op 2's parent, and only then
 * journals and acknowledges both: the primary commits 1 and 2. */
START_TEST(test_prepare_over_gap)
{
    struct sim *s = sim_new(3, 108);
    unsigned seen = 0;
    s->filter = drop_op1_to_2;
    s->filter_ctx = &seen;
    s->r[1].hold_journal = 1;
    ck_assert_int_eq(sim_request(s, 0, 1, 1, VS_OP_CREATE_TOPIC, "a", 1), 0);
    ck_assert_int_eq(sim_request(s, 0, 2, 1, VS_OP_CREATE_TOPIC, "b", 1), 0);
    struct vs_vsr *b = s->r[2].eng;
    const struct vs_vsr_stats *st = vsr_stats(b);
    for (int t = 0; t < 3 && st->gap_jumps == 0; t++)
        sim_step(s);
    ck_assert_uint_eq(st->gap_jumps, 1);
    ck_assert_uint_eq(vsr_op(b), 2);
    struct vs_hdr_prepare h1, h2;
    ck_assert(!vsr_header(b, 1, &h1)); /* the gap: not known yet */
    ck_assert(vsr_header(b, 2, &h2));
    ck_assert_uint_eq(vsr_commit_max(s->r[0].eng), 0);
    for (int t = 0; t < 400 && vsr_commit_max(s->r[0].eng) < 2; t++)
        sim_step(s);
    ck_assert_uint_eq(vsr_commit_max(s->r[0].eng), 2);
    ck_assert(vsr_header(b, 1, &h1));
    ck_assert(vs_u128_eq(h1.f.checksum, h2.parent));
    ck_assert_uint_ge(st->repairs, 1);
    ck_assert_uint_gt(st->repair_requests, 0);
    ck_assert_uint_eq(st->verdicts[VSR_DROP_GAP], 0);
    ck_assert_uint_gt(seen, 0);
    s->r[1].hold_journal = 0;
    ck_assert_int_eq(sim_complete_journal(s, 1, 1), 0);
    ck_assert_int_eq(sim_complete_journal(s, 1, 2), 0);
    ck_assert_int_eq(sim_run_until_applied(s, 2, 200), 0);
    assert_converged(s, 2);
    ck_assert_uint_eq(s->replies_len, 2);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* A backup that jumped a gap and enters a view change before the hole
 * is repaired drops the ops it holds above the hole (never journaled,
 * never acknowledged): its log ends below the hole again. */
START_TEST(test_gap_dropped_at_view_change)
{
    struct sim *s = sim_new(3, 109);
    unsigned seen = 0;
    s->filter = drop_op1_to_2;
    s->filter_ctx = &seen;
    s->r[1].hold_journal = 1; /* backup 1 serves no repair: not durable */
    ck_assert_int_eq(sim_request(s, 0, 1, 1, VS_OP_CREATE_TOPIC, "a", 1), 0);
    ck_assert_int_eq(sim_request(s, 0, 2, 1, VS_OP_CREATE_TOPIC, "b", 1), 0);
    struct vs_vsr *b = s->r[2].eng;
    const struct vs_vsr_stats *st = vsr_stats(b);
    for (int t = 0; t < 3 && st->gap_jumps == 0; t++)
        sim_step(s);
    ck_assert_uint_eq(st->gap_jumps, 1);
    ck_assert_uint_eq(vsr_op(b), 2);
    sim_isolate(s, 0, 1); /* no repair from the primary, and it falls silent */
    for (int t = 0; t < 3000 && vsr_status(b) == VSR_STATUS_NORMAL; t++)
        sim_step(s);
    ck_assert_int_ne(vsr_status(b), VSR_STATUS_NORMAL);
    ck_assert_uint_eq(st->gap_drops, 1);
    ck_assert_uint_eq(vsr_op(b), 0);
    struct vs_hdr_prepare h;
    ck_assert(!vsr_header(b, 2, &h));
    ck_assert_uint_eq(st->repairs, 0);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Drops every Prepare sent before tick `until`. */
struct blackout {
    uint64_t until;
    struct sim *s;
    unsigned dropped;
};

static int
drop_early_prepares(void *ctx, unsigned from, unsigned to,
                    const struct vs_header *h)
{
    struct blackout *b = ctx;
    (void)from;
    (void)to;
    if (h->f.command == VS_CMD_PREPARE && b->s->now < b->until) {
        b->dropped++;
        return 1;
    }
    return 0;
}

START_TEST(test_loss_then_retransmit)
{
    struct sim *s = sim_new(3, 105);
    struct blackout b = {.until = 40, .s = s, .dropped = 0};
    s->filter = drop_early_prepares;
    s->filter_ctx = &b;
    submit(s, 1, 4, 10);
    while (s->now < 39)
        sim_step(s);
    ck_assert_uint_eq(s->r[0].applied, 0); /* no backup has anything */
    ck_assert_uint_eq(vsr_op(s->r[1].eng), 0);
    ck_assert_uint_gt(b.dropped, 8); /* first sends and retransmits */
    ck_assert_int_eq(sim_run_until_applied(s, 4, 400), 0);
    assert_converged(s, 4);
    ck_assert_uint_gt(vsr_stats(s->r[0].eng)->retransmits, 4);
    ck_assert_uint_eq(s->replies_len, 4);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Seeded random loss, duplication and reordering for n = 2..5: every
 * request is answered once, every replica applies the same history. */
START_TEST(test_random_faults)
{
    static const uint64_t seeds[] = {1, 2, 3, 4, 5, 6};
    for (unsigned n = 2; n <= 5; n++) {
        for (size_t k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
            struct sim *s = sim_new(n, seeds[k] * 1000 + n);
            s->loss_per_mille = 150;
            s->dup_per_mille = 100;
            s->delay_min = 1;
            s->delay_max = 4;
            s->disk_delay = (unsigned)(sim_rand(s) % 3);
            submit(s, 1, 40, 20000);
            ck_assert_msg(sim_run_until_applied(s, 40, 20000) == 0,
                          "n=%u seed=%llu did not converge", n,
                          (unsigned long long)seeds[k]);
            assert_converged(s, 40);
            ck_assert_uint_eq(s->replies_len, 40);
            for (size_t r = 0; r < 40; r++)
                ck_assert_uint_eq(s->replies[r].op, r + 1);
            ck_assert_msg(s->violations == 0, "n=%u seed=%llu: %s", n,
                          (unsigned long long)seeds[k], s->violation);
            ck_assert_uint_gt(s->dropped, 0);
            sim_free(s);
        }
    }
}
END_TEST

/* Two runs of one seed produce the same frames in the same order. */
START_TEST(test_deterministic_replay)
{
    uint64_t sent[2], hash[2], now[2];
    for (int run = 0; run < 2; run++) {
        struct sim *s = sim_new(3, 4242);
        s->loss_per_mille = 200;
        s->delay_max = 5;
        submit(s, 1, 15, 5000);
        ck_assert_int_eq(sim_run_until_applied(s, 15, 5000), 0);
        sent[run] = s->sent;
        hash[run] = s->r[2].sm_hash;
        now[run] = s->now;
        ck_assert_clean(s);
        sim_free(s);
    }
    ck_assert_uint_eq(sent[0], sent[1]);
    ck_assert_uint_eq(hash[0], hash[1]);
    ck_assert_uint_eq(now[0], now[1]);
}
END_TEST

/* A restarted backup of a multi-replica group comes back Recovering: it
 * applies exactly what its journal proves committed (the highest commit
 * field it holds; the superblock's commit_max is 0 here), acknowledges
 * nothing, takes no prepare, and the other two keep committing. */
START_TEST(test_backup_restart_recovering)
{
    struct sim *s = sim_new(3, 106);
    submit(s, 1, 6, 100);
    ck_assert_int_eq(sim_run_until_applied(s, 6, 200), 0);
    sim_crash(s, 2);
    /* What its journal proves committed: the highest commit field. */
    uint64_t proven = 0;
    for (uint64_t op = 1; op <= 6; op++)
        if (s->r[2].journal[op].h.commit > proven)
            proven = s->r[2].journal[op].h.commit;
    ck_assert_uint_gt(proven, 0);
    ck_assert_uint_lt(proven, 6);
    char why[160];
    ck_assert_int_eq(sim_restart(s, 2, why, sizeof(why)), 0);
    struct vs_vsr *b = s->r[2].eng;
    ck_assert_int_eq(vsr_status(b), VSR_STATUS_RECOVERING);
    ck_assert(!vsr_is_primary(b));
    ck_assert_uint_eq(vsr_op(b), 6);
    ck_assert_uint_eq(s->r[2].applied, proven);
    ck_assert_uint_eq(vsr_commit_max(b), proven);
    /* Recovering: it counts in no quorum and takes no prepare until a
     * settled primary answers its probe; then it rejoins and catches up
     * (the harness checks it never acknowledged before). */
    submit(s, 20, 3, 100);
    sim_step(s);
    ck_assert_uint_eq(vsr_status(b), VSR_STATUS_RECOVERING);
    ck_assert_uint_gt(vsr_stats(b)->verdicts[VSR_DROP_STATUS], 0);
    ck_assert_int_eq(sim_run_until_applied(s, 9, 400), 0);
    ck_assert_uint_eq(vsr_status(b), VSR_STATUS_NORMAL);
    ck_assert_uint_eq(vsr_view(b), 0);
    ck_assert_uint_ge(vsr_stats(b)->probes, 1);
    ck_assert_uint_eq(vsr_stats(s->r[0].eng)->probe_answers,
                      vsr_stats(b)->sv_adopted);
    ck_assert_uint_eq(vsr_stats(b)->probe_elections, 0);
    assert_converged(s, 9);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

static int
drop_commits_to_2(void *ctx, unsigned from, unsigned to,
                  const struct vs_header *h)
{
    (void)ctx;
    (void)from;
    return to == 2 && h->f.command == VS_CMD_COMMIT;
}

static void
forge_commit(uint8_t *frame, uint8_t sender, uint64_t commit,
             struct vs_u128 checksum, uint64_t seq)
{
    struct vs_hdr_commit *c = (struct vs_hdr_commit *)frame;
    memset(c, 0, sizeof(*c));
    c->f.cluster.lo = 0x76737472u;
    c->f.cluster.hi = 0x1;
    c->f.size = VS_HEADER_SIZE;
    c->f.release = VS_WIRE_FORMAT_VERSION;
    c->f.command = VS_CMD_COMMIT;
    c->f.replica = sender;
    c->commit = commit;
    c->commit_checksum = checksum;
    c->timestamp_monotonic = seq;
    c->group = VS_METADATA_GROUP;
    vs_frame_seal((struct vs_header *)c);
}

/* Commit heartbeats: only the primary's, only newer ones, and a commit
 * whose checksum disagrees with the backup's op is not applied. */
START_TEST(test_commit_heartbeat_rules)
{
    struct sim *s = sim_new(3, 107);
    s->filter = drop_commits_to_2;
    ck_assert_int_eq(sim_request(s, 0, 1, 1, VS_OP_CREATE_TOPIC, "h", 1), 0);
    ck_assert_int_eq(sim_run_until_applied(s, 1, 60), -ETIMEDOUT);
    struct vs_vsr *b = s->r[2].eng;
    ck_assert_uint_eq(vsr_op(b), 1);
    ck_assert_uint_eq(s->r[2].applied, 0); /* commit 1 never reached it */
    struct vs_hdr_prepare h1;
    ck_assert(vsr_header(b, 1, &h1));
    struct vs_u128 wrong = h1.f.checksum;
    wrong.lo ^= 0x100;
    uint8_t f[VS_HEADER_SIZE];

    forge_commit(f, 1, 1, h1.f.checksum, 1000); /* from a backup */
    ck_assert_int_eq(vsr_on_message(b, f, sizeof(f)), VSR_DROP_NOT_PRIMARY);
    forge_commit(f, 0, 1, wrong, 1000);
    ck_assert_int_eq(vsr_on_message(b, f, sizeof(f)), VSR_ACCEPTED);
    sim_drain(s);
    ck_assert_uint_eq(s->r[2].applied, 0); /* diverged: not applied */
    ck_assert_uint_eq(vsr_stats(b)->divergences, 1);
    forge_commit(f, 0, 1, h1.f.checksum, 1000); /* not newer */
    ck_assert_int_eq(vsr_on_message(b, f, sizeof(f)), VSR_DROP_STALE);
    forge_commit(f, 0, 1, h1.f.checksum, 1001);
    f[200] ^= 1; /* tampered after sealing */
    ck_assert_int_eq(vsr_on_message(b, f, sizeof(f)), VSR_DROP_SEAL);
    forge_commit(f, 0, 1, h1.f.checksum, 1001);
    ((struct vs_hdr_commit *)f)->f.view = 3;
    vs_frame_seal((struct vs_header *)f);
    ck_assert_int_eq(vsr_on_message(b, f, sizeof(f)), VSR_DROP_VIEW_NEW);
    forge_commit(f, 0, 1, h1.f.checksum, 1001);
    ck_assert_int_eq(vsr_on_message(b, f, sizeof(f)), VSR_ACCEPTED);
    sim_drain(s);
    ck_assert_uint_eq(s->r[2].applied, 1);
    ck_assert_uint_eq(s->r[2].sm_hash, s->r[0].sm_hash);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* vsr_heartbeat_now: a settled primary whose commit moved sends a Commit
 * at once, and the backups apply the op without waiting for the next
 * heartbeat (every 50 ticks) or prepare; nothing new to say, or a
 * backup asked, sends nothing. */
START_TEST(test_heartbeat_now)
{
    struct sim *s = sim_new(3, 211);
    ck_assert_int_eq(sim_request(s, 0, 1, 1, VS_OP_CREATE_TOPIC, "n", 1), 0);
    for (unsigned t = 0; t < 40 && s->r[0].applied < 1; t++)
        sim_step(s);
    ck_assert_uint_eq(s->r[0].applied, 1);
    /* the backups hold op 1 but have not heard it committed */
    ck_assert_uint_eq(s->r[1].applied, 0);
    ck_assert_uint_eq(s->r[2].applied, 0);
    uint64_t hb = vsr_stats(s->r[0].eng)->heartbeats;
    vsr_heartbeat_now(s->r[1].eng); /* a backup: nothing */
    ck_assert_uint_eq(vsr_stats(s->r[1].eng)->heartbeats, 0);
    vsr_heartbeat_now(s->r[0].eng);
    ck_assert_uint_eq(vsr_stats(s->r[0].eng)->heartbeats, hb + 1);
    vsr_heartbeat_now(s->r[0].eng); /* the same commit: nothing */
    ck_assert_uint_eq(vsr_stats(s->r[0].eng)->heartbeats, hb + 1);
    sim_drain(s);
    for (unsigned t = 0; t < 10 && (s->r[1].applied < 1 || s->r[2].applied < 1);
         t++)
        sim_step(s);
    ck_assert_uint_eq(s->r[1].applied, 1);
    ck_assert_uint_eq(s->r[2].applied, 1);
    ck_assert_uint_eq(vsr_stats(s->r[0].eng)->heartbeats, hb + 1);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

static Suite *
vsr_cluster_suite(void)
{
    Suite *s = suite_create("vsr_cluster");
    TCase *tc = tcase_create("normal");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_three_normal_path);
    tcase_add_test(tc, test_prepare_ok_after_durable);
    tcase_add_test(tc, test_backup_refuses_bad_prepares);
    tcase_add_test(tc, test_duplicate_and_late_prepare_ok);
    tcase_add_test(tc, test_prepare_over_gap);
    tcase_add_test(tc, test_gap_dropped_at_view_change);
    tcase_add_test(tc, test_loss_then_retransmit);
    tcase_add_test(tc, test_random_faults);
    tcase_add_test(tc, test_deterministic_replay);
    tcase_add_test(tc, test_backup_restart_recovering);
    tcase_add_test(tc, test_commit_heartbeat_rules);
    tcase_add_test(tc, test_heartbeat_now);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(vsr_cluster_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
