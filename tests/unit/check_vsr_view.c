/*
 * tests/unit/check_vsr_view.c - view change, restart and journal repair
 * of the VSR engine, driven through the deterministic harness
 * (tests/sim), whose checkers run on every action (persist before send
 * incl. log_view, R2, R3, WAL without holes, one committed history).
 *
 * Covers: a primary crash elects a new primary within bounded ticks and
 * loses no committed op; duelling candidates after a partition; a new
 * primary's StartView withheld until its log_view is durable; a backup
 * with a gap repairs it; RangeEvicted surfaces as STATE_TRANSFER; a
 * restarted replica probes (incarnation echo) and a whole-cluster restart
 * elects after the probes; a restarted primary-by-index is elected past;
 * a damaged tail (faulty op) repaired from peers; a damaged tail several
 * entries long marks its whole range faulty (never nacked, kept across a
 * restart); a backup that adopted a StartView and restarted before the
 * repair still claims the view's whole log; a stale persisted mark (its
 * clearing write lost) is cleared at boot; a lost disk rebuilt;
 * n = 2; seeded random runs (300 seeds of n = 3, 100 of n = 5, 50 of
 * n = 2) of loss/dup/reorder/crash/damaged tail/partition. Every run is
 * bounded in ticks; seeds are fixed.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
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

/* The settled primary among live replicas, or -1. */
static int
settled(struct sim *s)
{
    int found = -1;
    for (unsigned i = 0; i < s->n; i++) {
        if (s->r[i].eng != NULL && vsr_is_settled_primary(s->r[i].eng)) {
            /* Two settled primaries may coexist only in different views
             * (an isolated old one): report the newest. */
            if (found < 0 || vsr_view(s->r[i].eng) > vsr_view(s->r[found].eng))
                found = (int)i;
        }
    }
    return found;
}

/* Steps until every live replica is Normal in view `view`. */
static int
await_normal(struct sim *s, uint32_t view, uint64_t max_ticks)
{
    for (uint64_t t = 0; t < max_ticks; t++) {
        int all = 1;
        for (unsigned i = 0; i < s->n; i++)
            if (s->r[i].eng != NULL &&
                (vsr_status(s->r[i].eng) != VSR_STATUS_NORMAL ||
                 vsr_view(s->r[i].eng) != view))
                all = 0;
        if (all)
            return 0;
        sim_step(s);
    }
    return -ETIMEDOUT;
}

/* Steps until a settled primary exists (other than `not`); returns its
 * index or -1 after max_ticks. */
static int
await_primary(struct sim *s, int not, uint64_t max_ticks)
{
    for (uint64_t t = 0; t < max_ticks; t++) {
        int p = settled(s);
        if (p >= 0 && p != not )
            return p;
        sim_step(s);
    }
    return -1;
}

/* Submits requests from clients first.. to whichever replica is the
 * settled primary, retrying refusals; bounded by max_ticks. Returns the
 * number accepted. */
static unsigned
submit_any(struct sim *s, uint64_t first, unsigned count, uint64_t max_ticks)
{
    unsigned done = 0;
    uint64_t ticks = 0;
    while (done < count && ticks < max_ticks) {
        int p = settled(s);
        if (p >= 0) {
            uint8_t body[16];
            memset(body, (int)(first + done), sizeof(body));
            int rc = sim_request(s, (unsigned)p, first + done, 1,
                                 VS_OP_CREATE_STREAM, body, sizeof(body));
            if (rc == 0) {
                done++;
                continue;
            }
            ck_assert_msg(rc == -EBUSY || rc == -EAGAIN || rc == -EALREADY,
                          "request refused with %d", rc);
        }
        sim_step(s);
        ticks++;
    }
    return done;
}

/* Steps until every live replica applied at least op. */
static int
run_applied(struct sim *s, uint64_t op, uint64_t max_ticks)
{
    return sim_run_until_applied(s, op, max_ticks);
}

static uint64_t
max_applied(const struct sim *s)
{
    uint64_t m = 0;
    for (unsigned i = 0; i < s->n; i++)
        if (s->r[i].applied > m)
            m = s->r[i].applied;
    return m;
}

static void
assert_history(struct sim *s, uint64_t op)
{
    for (uint64_t k = 1; k <= op; k++)
        ck_assert_msg(s->history_set[k], "op %llu never committed",
                      (unsigned long long)k);
    for (unsigned i = 0; i < s->n; i++) {
        if (s->r[i].eng == NULL || s->r[i].applied < op)
            continue;
        for (unsigned j = 0; j < s->n; j++)
            if (s->r[j].eng != NULL && s->r[j].applied == s->r[i].applied)
                ck_assert_uint_eq(s->r[j].sm_hash, s->r[i].sm_hash);
    }
}

/* Every reply the simulation recorded names a distinct op. */
static void
assert_replies_unique(const struct sim *s)
{
    for (size_t a = 0; a < s->replies_len; a++)
        for (size_t b = a + 1; b < s->replies_len; b++)
            ck_assert(s->replies[a].op != s->replies[b].op ||
                      s->replies[a].replica != s->replies[b].replica);
}

/* ---------------------------------------------------------------- */

START_TEST(test_primary_crash_elects)
{
    struct sim *s = sim_new(3, 201);
    ck_assert_uint_eq(submit_any(s, 1, 10, 500), 10);
    ck_assert_int_eq(run_applied(s, 10, 500), 0);
    uint64_t before = s->now;
    sim_crash(s, 0);
    int p = await_primary(s, 0, 3000);
    ck_assert_int_ge(p, 1);
    /* Heartbeat timeout (100) + jitter + a view change round. */
    ck_assert_uint_lt(s->now - before, 600);
    ck_assert_uint_eq(vsr_view(s->r[p].eng) % 3, (unsigned)p);
    ck_assert_int_eq(await_normal(s, vsr_view(s->r[p].eng), 100), 0);
    ck_assert_uint_ge(vsr_stats(s->r[1].eng)->view_changes, 1);
    ck_assert_uint_ge(vsr_stats(s->r[p].eng)->views_started, 1);
    ck_assert_uint_eq(vsr_primary(s->r[1].eng), p);
    ck_assert_uint_eq(vsr_primary(s->r[2].eng), p);
    /* Committed ops survive; new ones commit in the new view. */
    ck_assert_uint_eq(submit_any(s, 100, 10, 2000), 10);
    ck_assert_int_eq(run_applied(s, 20, 2000), 0);
    assert_history(s, 20);
    /* The old primary restarts, learns the view and catches up. */
    char why[160];
    ck_assert_int_eq(sim_restart(s, 0, why, sizeof(why)), 0);
    ck_assert_int_eq(run_applied(s, 20, 3000), 0);
    ck_assert_int_eq(vsr_status(s->r[0].eng), VSR_STATUS_NORMAL);
    ck_assert_uint_eq(vsr_view(s->r[0].eng), vsr_view(s->r[p].eng));
    assert_history(s, 20);
    assert_replies_unique(s);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* The primary crashes with prepares in flight: ops that reached a
 * backup's journal survive the view change (not nacked by a quorum),
 * and nothing is committed twice. */
START_TEST(test_primary_crash_mid_pipeline)
{
    unsigned dedup = 0;
    for (uint64_t seed = 210; seed < 222; seed++) {
        struct sim *s = sim_new(3, seed);
        s->delay_max = 3;
        ck_assert_uint_eq(submit_any(s, 1, 6, 500), 6);
        ck_assert_int_eq(run_applied(s, 6, 500), 0);
        /* Three more prepares, then a crash before they commit. */
        for (uint64_t c = 50; c < 53; c++)
            ck_assert_int_eq(
                sim_request(s, 0, c, 1, VS_OP_CREATE_TOPIC, "abc", 3), 0);
        sim_step(s);
        sim_crash(s, 0);
        int p = await_primary(s, 0, 3000);
        ck_assert_int_ge(p, 1);
        /* A client whose request the new primary holds in its pipeline
         * (prepared in the old view) is not prepared twice. */
        struct vs_vsr *np = s->r[p].eng;
        for (uint64_t op = vsr_commit_min(np) + 1; op <= vsr_op(np); op++) {
            struct vs_hdr_prepare h;
            ck_assert(vsr_header(np, op, &h));
            ck_assert_int_eq(sim_request(s, (unsigned)p, h.client.lo, 1,
                                         VS_OP_CREATE_TOPIC, "abc", 3),
                             -EALREADY);
            dedup++;
        }
        ck_assert_uint_ge(submit_any(s, 200, 4, 2000), 4);
        uint64_t top = vsr_op(s->r[p].eng);
        ck_assert_int_eq(run_applied(s, top, 3000), 0);
        assert_history(s, top);
        ck_assert_clean(s);
        sim_free(s);
    }
    ck_assert_uint_gt(dedup, 0); /* some seed reached the case */
}
END_TEST

/* Two backups cut from each other and from the primary both escalate
 * views alone; healed, one primary wins and the history is one. */
START_TEST(test_duelling_candidates)
{
    struct sim *s = sim_new(3, 202);
    ck_assert_uint_eq(submit_any(s, 1, 5, 500), 5);
    ck_assert_int_eq(run_applied(s, 5, 500), 0);
    sim_crash(s, 0);
    sim_partition(s, 1, 2, 1);
    for (int t = 0; t < 1500; t++)
        sim_step(s);
    ck_assert_int_eq(settled(s), -1); /* no quorum for anyone */
    ck_assert_uint_ge(vsr_stats(s->r[1].eng)->view_changes, 2);
    ck_assert_uint_ge(vsr_stats(s->r[2].eng)->view_changes, 2);
    sim_partition(s, 1, 2, 0);
    int p = await_primary(s, 0, 3000);
    ck_assert_int_ge(p, 1);
    int other = p == 1 ? 2 : 1;
    ck_assert_int_eq(await_normal(s, vsr_view(s->r[p].eng), 100), 0);
    ck_assert_uint_eq(vsr_view(s->r[other].eng), vsr_view(s->r[p].eng));
    ck_assert_int_eq(vsr_status(s->r[other].eng), VSR_STATUS_NORMAL);
    ck_assert_uint_eq(submit_any(s, 10, 3, 1000), 3);
    ck_assert_int_eq(run_applied(s, 8, 2000), 0);
    assert_history(s, 8);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* An isolated primary keeps its view but commits nothing; the others
 * elect; healed, the old primary adopts the new view and its orphan
 * prepare is truncated (never committed twice). */
START_TEST(test_isolated_primary)
{
    struct sim *s = sim_new(3, 203);
    ck_assert_uint_eq(submit_any(s, 1, 4, 500), 4);
    ck_assert_int_eq(run_applied(s, 4, 500), 0);
    sim_isolate(s, 0, 1);
    ck_assert_int_eq(sim_request(s, 0, 77, 1, VS_OP_CREATE_TOPIC, "zz", 2), 0);
    int p = await_primary(s, 0, 3000);
    ck_assert_int_ge(p, 1);
    ck_assert_uint_eq(s->r[0].applied, 4);
    ck_assert_uint_eq(submit_any(s, 20, 3, 1000), 3);
    ck_assert_int_eq(sim_run_until_applied(s, 7, 1), -ETIMEDOUT);
    sim_isolate(s, 0, 0);
    ck_assert_int_eq(run_applied(s, 7, 3000), 0);
    ck_assert_uint_eq(vsr_view(s->r[0].eng), vsr_view(s->r[p].eng));
    ck_assert(!vsr_is_primary(s->r[0].eng));
    ck_assert_uint_ge(s->r[0].truncations, 1); /* op 5 "zz" cut */
    assert_history(s, 7);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* The primary's lease: an idle, connected primary stays settled across
 * many heartbeat timeouts (backups answer each Commit with a Pong); an
 * isolated one stops being settled within normal_heartbeat ticks (no
 * request accepted, no `Leader` claim) while it still believes it is the
 * primary of its view; healed, the cluster converges on the new view. */
START_TEST(test_isolated_primary_loses_lease)
{
    struct sim *s = sim_new(3, 211);
    ck_assert_uint_eq(submit_any(s, 1, 2, 500), 2);
    ck_assert_int_eq(run_applied(s, 2, 500), 0);
    ck_assert_int_eq(settled(s), 0);
    /* the harness's normal_heartbeat is 100 ticks, the heartbeat 10 */
    for (int t = 0; t < 1600; t++)
        sim_step(s);
    ck_assert(vsr_is_settled_primary(s->r[0].eng));
    ck_assert_uint_eq(vsr_view(s->r[0].eng), 0);
    sim_isolate(s, 0, 1);
    for (int t = 0; t < 50; t++)
        sim_step(s);
    ck_assert(vsr_is_settled_primary(s->r[0].eng)); /* within its lease */
    for (int t = 0; t < 100; t++)
        sim_step(s);
    ck_assert(vsr_is_primary(s->r[0].eng));          /* it still thinks so */
    ck_assert(!vsr_is_settled_primary(s->r[0].eng)); /* but serves nothing */
    ck_assert_int_eq(sim_request(s, 0, 90, 1, VS_OP_CREATE_STREAM, "x", 1),
                     -EAGAIN);
    struct vs_vsr_info info;
    vsr_info(s->r[0].eng, &info);
    ck_assert(!info.settled);
    int p = await_primary(s, 0, 3000);
    ck_assert_int_ge(p, 1);
    sim_isolate(s, 0, 0);
    ck_assert_uint_eq(submit_any(s, 30, 1, 1000), 1);
    ck_assert_int_eq(run_applied(s, 3, 3000), 0);
    ck_assert_uint_eq(vsr_view(s->r[0].eng), vsr_view(s->r[p].eng));
    assert_history(s, 3);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Holding the new primary's superblock write (the one carrying
 * log_view = view) keeps its StartView and Commits off the wire: the
 * harness would flag either. The backups stay in the view change. */
START_TEST(test_start_view_waits_for_log_view)
{
    struct sim *s = sim_new(3, 204);
    ck_assert_uint_eq(submit_any(s, 1, 3, 500), 3);
    ck_assert_int_eq(run_applied(s, 3, 500), 0);
    sim_crash(s, 0);
    /* Step until replica 1 (primary of view 1) starts its view. */
    int started = 0;
    for (int t = 0; t < 2000 && !started; t++) {
        sim_step(s);
        if (!s->r[1].hold_superblock && s->r[1].sb.view == 1 &&
            !s->r[1].sb_pending) {
            /* view 1 is durable; the next write carries log_view 1 */
            ck_assert_uint_eq(vsr_stats(s->r[1].eng)->views_started, 0);
            s->r[1].hold_superblock = 1;
        }
        started = vsr_stats(s->r[1].eng)->views_started > 0;
    }
    ck_assert(started);
    ck_assert(s->r[1].hold_superblock);
    ck_assert(s->r[1].sb_pending);
    ck_assert_uint_eq(s->r[1].sb.log_view, 0);
    ck_assert_uint_eq(vsr_log_view(s->r[1].eng), 1);
    uint64_t sv = s->cmd_sent[VS_CMD_START_VIEW];
    for (int t = 0; t < 200; t++)
        sim_step(s);
    ck_assert_uint_eq(s->cmd_sent[VS_CMD_START_VIEW], sv);
    ck_assert_uint_gt(vsr_stats(s->r[1].eng)->withheld, 0);
    ck_assert_int_ne(vsr_status(s->r[2].eng), VSR_STATUS_NORMAL);
    /* Released: the view starts everywhere. */
    s->r[1].hold_superblock = 0;
    while (s->r[1].sb_pending)
        ck_assert_int_eq(sim_complete_superblock(s, 1), 0);
    int p = await_primary(s, 0, 2000);
    ck_assert_int_ge(p, 1);
    ck_assert_uint_eq(submit_any(s, 10, 2, 1000), 2);
    ck_assert_int_eq(run_applied(s, 5, 2000), 0);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* A backup misses prepares 3..6 (dropped to it only): it repairs them
 * from its peers by RequestPrepares and applies the same history. */
static int
drop_range_to_2(void *ctx, unsigned from, unsigned to,
                const struct vs_header *h)
{
    (void)ctx;
    (void)from;
    if (to != 2 || h->f.command != VS_CMD_PREPARE)
        return 0;
    uint64_t op = ((const struct vs_hdr_prepare *)h)->op;
    return op >= 3 && op <= 6;
}

START_TEST(test_backup_gap_repair)
{
    struct sim *s = sim_new(3, 205);
    s->filter = drop_range_to_2;
    ck_assert_uint_eq(submit_any(s, 1, 10, 500), 10);
    ck_assert_int_eq(run_applied(s, 10, 1500), 0);
    ck_assert_uint_gt(vsr_stats(s->r[2].eng)->repair_requests, 0);
    ck_assert_uint_ge(vsr_stats(s->r[2].eng)->repairs, 4);
    /* op 7's Prepare is taken over the gap, 3..6 repaired below it */
    ck_assert_uint_gt(vsr_stats(s->r[2].eng)->gap_jumps, 0);
    ck_assert_uint_eq(vsr_stats(s->r[2].eng)->verdicts[VSR_DROP_GAP], 0);
    ck_assert_uint_eq(s->r[2].sm_hash, s->r[0].sm_hash);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* A backup away while the others checkpoint past its head (by more than
 * the repair margin the drain keeps) asks for a range they drained:
 * RangeEvicted surfaces as one STATE_TRANSFER. */
START_TEST(test_range_evicted_surfaced)
{
    struct sim *s = sim_new(3, 206);
    ck_assert_uint_eq(submit_any(s, 1, 4, 500), 4);
    ck_assert_int_eq(run_applied(s, 4, 500), 0);
    sim_isolate(s, 2, 1);
    ck_assert_uint_eq(submit_any(s, 10, 40, 4000), 40);
    ck_assert_int_eq(sim_run_until_applied(s, 44, 1), -ETIMEDOUT);
    for (int t = 0; t < 50; t++)
        sim_step(s);
    ck_assert_int_eq(sim_checkpoint(s, 0), 0);
    ck_assert_int_eq(sim_checkpoint(s, 1), 0);
    for (int t = 0; t < 20; t++)
        sim_step(s);
    ck_assert_uint_eq(s->r[0].sb.checkpoint_op, 44);
    uint64_t oldest = vsr_drain_keep_from(s->r[0].eng, 44);
    ck_assert_uint_gt(oldest, 5); /* replica 2 needs op 5 */
    sim_isolate(s, 2, 0);
    for (int t = 0; t < 800 && s->r[2].transfers == 0; t++)
        sim_step(s);
    ck_assert_uint_ge(s->r[2].transfers, 1);
    ck_assert_uint_ge(vsr_stats(s->r[2].eng)->range_evicted, 1);
    struct vs_vsr_info info;
    vsr_info(s->r[2].eng, &info);
    ck_assert(info.state_transfer);
    ck_assert_uint_eq(info.transfer_op, oldest);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Whole cluster restart: every replica probes, nobody answers, after
 * the probes they elect on their recovered logs; committed state and
 * the chain survive, and new requests commit. */
START_TEST(test_whole_cluster_restart)
{
    struct sim *s = sim_new(3, 207);
    ck_assert_uint_eq(submit_any(s, 1, 8, 500), 8);
    ck_assert_int_eq(run_applied(s, 8, 500), 0);
    for (int t = 0; t < 30; t++)
        sim_step(s); /* heartbeats carry commit 8 */
    char why[160];
    for (unsigned i = 0; i < 3; i++)
        sim_crash(s, i);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_msg(sim_restart(s, i, why, sizeof(why)) == 0, "%s", why);
        ck_assert_int_eq(vsr_status(s->r[i].eng), VSR_STATUS_RECOVERING);
    }
    int p = await_primary(s, -1, 5000);
    ck_assert_int_ge(p, 0);
    unsigned elections = 0;
    for (unsigned i = 0; i < 3; i++) {
        elections += (unsigned)vsr_stats(s->r[i].eng)->probe_elections;
        ck_assert_uint_ge(vsr_stats(s->r[i].eng)->probes, 5);
    }
    ck_assert_uint_ge(elections, 2);
    ck_assert_uint_ge(vsr_view(s->r[p].eng), 1); /* never view 0 again */
    ck_assert_uint_eq(submit_any(s, 50, 3, 2000), 3);
    ck_assert_int_eq(run_applied(s, 11, 3000), 0);
    assert_history(s, 11);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* The primary restarts: it probes its own durable view; the backups,
 * seeing their primary-by-index probe, elect past it; it rejoins as a
 * backup of the new view. */
START_TEST(test_restarted_primary_elected_past)
{
    struct sim *s = sim_new(3, 208);
    ck_assert_uint_eq(submit_any(s, 1, 5, 500), 5);
    ck_assert_int_eq(run_applied(s, 5, 500), 0);
    sim_crash(s, 0);
    char why[160];
    ck_assert_int_eq(sim_restart(s, 0, why, sizeof(why)), 0);
    int p = await_primary(s, 0, 2000);
    ck_assert_int_ge(p, 1);
    ck_assert_uint_lt(s->now, 500); /* faster than a heartbeat timeout */
    ck_assert_int_eq(run_applied(s, 5, 1000), 0);
    for (int t = 0; t < 300; t++)
        sim_step(s);
    ck_assert_int_eq(vsr_status(s->r[0].eng), VSR_STATUS_NORMAL);
    ck_assert(!vsr_is_primary(s->r[0].eng));
    ck_assert_uint_eq(vsr_stats(s->r[0].eng)->probe_elections, 0);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* A backup's last journal entry is damaged at boot: cut and marked
 * faulty (persisted), never nacked, repaired from the peers once it has
 * the view; the mark is cleared durably. */
START_TEST(test_faulty_tail_repaired)
{
    struct sim *s = sim_new(3, 209);
    ck_assert_uint_eq(submit_any(s, 1, 6, 500), 6);
    ck_assert_int_eq(run_applied(s, 6, 500), 0);
    sim_crash(s, 2);
    ck_assert_int_eq(sim_cut_tail(s, 2), 0);
    char why[160];
    ck_assert_msg(sim_restart(s, 2, why, sizeof(why)) == 0, "%s", why);
    struct vs_vsr_info info;
    vsr_info(s->r[2].eng, &info);
    ck_assert_uint_eq(info.faulty_op, 6);
    ck_assert_uint_eq(info.op, 5);
    /* The mark is written durably first. */
    for (int t = 0; t < 5; t++)
        sim_step(s);
    ck_assert_int_eq(run_applied(s, 6, 2000), 0);
    vsr_info(s->r[2].eng, &info);
    ck_assert_uint_eq(info.faulty_op, 0);
    ck_assert_uint_eq(s->r[2].sb.faulty_op, 0);
    ck_assert_uint_ge(vsr_stats(s->r[2].eng)->faulty_repaired, 1);
    ck_assert_uint_eq(s->r[2].sm_hash, s->r[0].sm_hash);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Faulty op on the only other live replica: the candidate may not
 * truncate it (it is present but faulty, not nacked) and waits; the
 * third replica comes back holding it and the view starts with it. */
START_TEST(test_faulty_forces_wait)
{
    struct sim *s = sim_new(3, 211);
    ck_assert_uint_eq(submit_any(s, 1, 4, 500), 4);
    ck_assert_int_eq(run_applied(s, 4, 500), 0);
    /* Op 5 reaches replicas 0 and 2 only, and is committed by them. */
    sim_partition(s, 0, 1, 1);
    ck_assert_int_eq(sim_request(s, 0, 60, 1, VS_OP_CREATE_TOPIC, "f5", 2), 0);
    for (int t = 0; t < 20; t++)
        sim_step(s);
    ck_assert_uint_eq(vsr_commit_max(s->r[0].eng), 5);
    /* Replica 2 loses op 5 to a damaged tail; the primary dies. */
    sim_crash(s, 0);
    sim_crash(s, 2);
    ck_assert_int_eq(sim_cut_tail(s, 2), 0);
    sim_partition(s, 0, 1, 0);
    char why[160];
    ck_assert_msg(sim_restart(s, 2, why, sizeof(why)) == 0, "%s", why);
    for (int t = 0; t < 2500; t++)
        sim_step(s);
    /* Replica 1 never had op 5, replica 2 is faulty there: no quorum
     * proves op 5 unprepared, so no view starts without it. */
    ck_assert_int_eq(settled(s), -1);
    uint64_t waits = vsr_stats(s->r[1].eng)->merge_waits +
                     vsr_stats(s->r[2].eng)->merge_waits;
    ck_assert_uint_gt(waits, 0);
    ck_assert_uint_gt(vsr_stats(s->r[2].eng)->faulty_not_nacked, 0);
    ck_assert_uint_eq(vsr_stats(s->r[1].eng)->nack_truncations +
                          vsr_stats(s->r[2].eng)->nack_truncations,
                      0);
    /* Replica 0 returns with op 5: the view starts and keeps it. */
    ck_assert_msg(sim_restart(s, 0, why, sizeof(why)) == 0, "%s", why);
    int p = await_primary(s, -1, 4000);
    ck_assert_int_ge(p, 0);
    ck_assert_int_eq(run_applied(s, 5, 3000), 0);
    for (unsigned i = 0; i < 3; i++) {
        struct vs_hdr_prepare h;
        ck_assert(vsr_header(s->r[i].eng, 5, &h));
        ck_assert_uint_eq(h.client.lo, 60);
    }
    assert_history(s, 5);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* A damaged tail two entries long (ops 5 and 6, both committed by
 * replicas 0 and 2) is cut at replica 2's boot: the whole range is faulty
 * and never nacked. With replica 0 down, replica 1 (which never had them)
 * and replica 2 cannot prove either op unprepared: no view may start
 * without them (a mark on op 5 alone would let replica 2's DVC nack op 6
 * implicitly and truncate a committed op). Replica 0 returns: the view
 * keeps both and replica 2 repairs them, clearing the mark durably. */
START_TEST(test_faulty_range_never_nacked)
{
    struct sim *s = sim_new(3, 217);
    ck_assert_uint_eq(submit_any(s, 1, 4, 500), 4);
    ck_assert_int_eq(run_applied(s, 4, 500), 0);
    sim_partition(s, 0, 1, 1);
    ck_assert_int_eq(sim_request(s, 0, 70, 1, VS_OP_CREATE_TOPIC, "r5", 2), 0);
    ck_assert_int_eq(sim_request(s, 0, 71, 1, VS_OP_CREATE_TOPIC, "r6", 2), 0);
    for (int t = 0; t < 30; t++)
        sim_step(s);
    ck_assert_uint_eq(vsr_commit_max(s->r[0].eng), 6);
    sim_crash(s, 0);
    sim_crash(s, 2);
    ck_assert_int_eq(sim_cut_tail_n(s, 2, 2), 0);
    sim_partition(s, 0, 1, 0);
    char why[160];
    ck_assert_msg(sim_restart(s, 2, why, sizeof(why)) == 0, "%s", why);
    struct vs_vsr_info info;
    vsr_info(s->r[2].eng, &info);
    ck_assert_uint_eq(info.op, 4);
    ck_assert_uint_eq(info.faulty_op, 6);
    for (int t = 0; t < 3000; t++)
        sim_step(s);
    ck_assert_int_eq(settled(s), -1);
    ck_assert_uint_eq(s->r[2].sb.faulty_op, 6); /* persisted */
    ck_assert_uint_gt(vsr_stats(s->r[2].eng)->faulty_not_nacked, 0);
    for (unsigned i = 1; i < 3; i++) {
        ck_assert_uint_eq(vsr_stats(s->r[i].eng)->nack_truncations, 0);
        ck_assert_uint_le(s->r[i].applied, 4);
    }
    /* A crash before the repair keeps the whole range (the persisted
     * mark, with nothing cut at this boot). */
    sim_crash(s, 2);
    ck_assert_msg(sim_restart(s, 2, why, sizeof(why)) == 0, "%s", why);
    vsr_info(s->r[2].eng, &info);
    ck_assert_uint_eq(info.faulty_op, 6);
    ck_assert_msg(sim_restart(s, 0, why, sizeof(why)) == 0, "%s", why);
    ck_assert_int_ge(await_primary(s, -1, 4000), 0);
    ck_assert_int_eq(run_applied(s, 6, 3000), 0);
    for (unsigned i = 0; i < 3; i++) {
        struct vs_hdr_prepare h;
        ck_assert(vsr_header(s->r[i].eng, 5, &h));
        ck_assert_uint_eq(h.client.lo, 70);
        ck_assert(vsr_header(s->r[i].eng, 6, &h));
        ck_assert_uint_eq(h.client.lo, 71);
    }
    for (int t = 0; t < 50; t++)
        sim_step(s);
    vsr_info(s->r[2].eng, &info);
    ck_assert_uint_eq(info.faulty_op, 0);
    ck_assert_uint_eq(s->r[2].sb.faulty_op, 0);
    assert_history(s, 6);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* A backup adopts a StartView whose ops 5 and 6 (committed by replicas
 * 0 and 1) it has not journaled yet, and crashes before the repair. The
 * view's reach is written with its log_view: after the restart its DVC
 * still claims log_view 1 up to op 6 (not its journal's op 4), so with
 * replica 1 down no view may start without ops 5 and 6 (replica 0 holds
 * them only in the older log_view 0). Replica 1 returns: the view keeps
 * them. */
START_TEST(test_adopted_log_reach_survives_restart)
{
    struct sim *s = sim_new(3, 219);
    ck_assert_uint_eq(submit_any(s, 1, 4, 500), 4);
    ck_assert_int_eq(run_applied(s, 4, 500), 0);
    sim_isolate(s, 2, 1);
    ck_assert_int_eq(sim_request(s, 0, 80, 1, VS_OP_CREATE_TOPIC, "a5", 2), 0);
    ck_assert_int_eq(sim_request(s, 0, 81, 1, VS_OP_CREATE_TOPIC, "a6", 2), 0);
    for (int t = 0; t < 30; t++)
        sim_step(s);
    ck_assert_uint_eq(vsr_commit_max(s->r[0].eng), 6);
    s->r[2].hold_journal = 1; /* its repairs never become durable */
    sim_crash(s, 0);
    sim_isolate(s, 2, 0);
    uint64_t t = 0;
    while (t++ < 4000 && !(s->r[2].sb.log_view >= 1 &&
                           vsr_status(s->r[2].eng) == VSR_STATUS_NORMAL))
        sim_step(s);
    ck_assert_uint_ge(s->r[2].sb.log_view, 1);
    ck_assert(!s->r[2].journal[5].present);
    ck_assert_uint_ge(s->r[2].sb.faulty_op, 6); /* written with log_view */
    sim_crash(s, 2);
    sim_crash(s, 1);
    s->r[2].hold_journal = 0;
    char why[160];
    ck_assert_msg(sim_restart(s, 0, why, sizeof(why)) == 0, "%s", why);
    ck_assert_msg(sim_restart(s, 2, why, sizeof(why)) == 0, "%s", why);
    for (int k = 0; k < 3000; k++)
        sim_step(s);
    ck_assert_int_eq(settled(s), -1);
    ck_assert_uint_le(s->r[2].applied, 4);
    ck_assert_msg(sim_restart(s, 1, why, sizeof(why)) == 0, "%s", why);
    ck_assert_int_ge(await_primary(s, -1, 4000), 0);
    ck_assert_int_eq(run_applied(s, 6, 3000), 0);
    for (unsigned i = 0; i < 3; i++) {
        struct vs_hdr_prepare h;
        ck_assert(vsr_header(s->r[i].eng, 5, &h));
        ck_assert_uint_eq(h.client.lo, 80);
        ck_assert(vsr_header(s->r[i].eng, 6, &h));
        ck_assert_uint_eq(h.client.lo, 81);
    }
    assert_history(s, 6);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* The repair of a faulty op became durable but the superblock write that
 * clears the mark was lost in a crash: the persisted mark lies at the
 * recovered head. The replica boots (the mark is stale) and writes 0. */
START_TEST(test_stale_faulty_mark_cleared)
{
    struct sim *s = sim_new(3, 221);
    ck_assert_uint_eq(submit_any(s, 1, 6, 500), 6);
    ck_assert_int_eq(run_applied(s, 6, 500), 0);
    sim_crash(s, 2);
    s->r[2].sb.faulty_op = 6; /* its journal holds op 6 */
    char why[160];
    ck_assert_msg(sim_restart(s, 2, why, sizeof(why)) == 0, "%s", why);
    struct vs_vsr_info info;
    vsr_info(s->r[2].eng, &info);
    ck_assert_uint_eq(info.op, 6);
    ck_assert_uint_eq(info.faulty_op, 0);
    for (int t = 0; t < 20; t++)
        sim_step(s);
    ck_assert_uint_eq(s->r[2].sb.faulty_op, 0);
    ck_assert_int_eq(run_applied(s, 6, 2000), 0);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Beyond the fault model: a committed op damaged on both replicas that
 * held it. No quorum proves it unprepared and nobody holds it: the
 * cluster stays without a primary (halts) instead of losing it. */
START_TEST(test_faulty_majority_halts)
{
    struct sim *s = sim_new(3, 215);
    ck_assert_uint_eq(submit_any(s, 1, 4, 500), 4);
    ck_assert_int_eq(run_applied(s, 4, 500), 0);
    sim_partition(s, 0, 1, 1);
    ck_assert_int_eq(sim_request(s, 0, 61, 1, VS_OP_CREATE_TOPIC, "m5", 2), 0);
    for (int t = 0; t < 20; t++)
        sim_step(s);
    ck_assert_uint_eq(vsr_commit_max(s->r[0].eng), 5);
    sim_crash(s, 0);
    sim_crash(s, 2);
    ck_assert_int_eq(sim_cut_tail(s, 0), 0);
    ck_assert_int_eq(sim_cut_tail(s, 2), 0);
    sim_partition(s, 0, 1, 0);
    char why[160];
    ck_assert_int_eq(sim_restart(s, 0, why, sizeof(why)), 0);
    ck_assert_int_eq(sim_restart(s, 2, why, sizeof(why)), 0);
    for (int t = 0; t < 4000; t++)
        sim_step(s);
    ck_assert_int_eq(settled(s), -1);
    uint64_t waits = 0, deadlocks = 0;
    for (unsigned i = 0; i < 3; i++) {
        waits += vsr_stats(s->r[i].eng)->merge_waits;
        deadlocks += vsr_stats(s->r[i].eng)->merge_deadlocks;
        ck_assert_uint_le(s->r[i].applied, 5);
    }
    ck_assert_uint_gt(waits, 0);
    ck_assert_uint_gt(deadlocks, 0);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* An uncommitted op held by one replica is truncated only by a nack
 * quorum: the two others never had it (op > their op). */
START_TEST(test_nack_quorum_truncates)
{
    struct sim *s = sim_new(3, 212);
    ck_assert_uint_eq(submit_any(s, 1, 3, 500), 3);
    ck_assert_int_eq(run_applied(s, 3, 500), 0);
    sim_isolate(s, 0, 1);
    ck_assert_int_eq(sim_request(s, 0, 70, 1, VS_OP_CREATE_TOPIC, "nq", 2), 0);
    for (int t = 0; t < 5; t++)
        sim_step(s);
    ck_assert_uint_eq(vsr_op(s->r[0].eng), 4);
    int p = await_primary(s, 0, 3000);
    ck_assert_int_ge(p, 1);
    ck_assert_uint_eq(vsr_op(s->r[p].eng), 3);
    /* Heal: replica 0 adopts the view and cuts its op 4. */
    sim_isolate(s, 0, 0);
    ck_assert_uint_eq(submit_any(s, 80, 2, 1000), 2);
    ck_assert_int_eq(run_applied(s, 5, 3000), 0);
    struct vs_hdr_prepare h;
    ck_assert(vsr_header(s->r[0].eng, 4, &h));
    ck_assert_uint_ne(h.client.lo, 70);
    ck_assert_uint_ge(s->r[0].truncations, 1);
    assert_history(s, 5);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* A replica that lost its disk rejoins rebuilt: it votes nowhere and
 * acknowledges nothing until it holds the view's log, then catches up. */
START_TEST(test_lost_disk_rebuild)
{
    struct sim *s = sim_new(3, 213);
    ck_assert_uint_eq(submit_any(s, 1, 6, 500), 6);
    ck_assert_int_eq(run_applied(s, 6, 500), 0);
    char why[160];
    ck_assert_msg(sim_rebuild(s, 2, why, sizeof(why)) == 0, "%s", why);
    struct vs_vsr_info info;
    vsr_info(s->r[2].eng, &info);
    ck_assert(info.rebuilding);
    ck_assert_int_eq(info.status, VSR_STATUS_RECOVERING);
    ck_assert_uint_eq(submit_any(s, 20, 2, 500), 2);
    ck_assert_int_eq(run_applied(s, 8, 3000), 0);
    vsr_info(s->r[2].eng, &info);
    ck_assert(!info.rebuilding);
    ck_assert_int_eq(info.status, VSR_STATUS_NORMAL);
    ck_assert_uint_eq(s->r[2].sm_hash, s->r[0].sm_hash);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* n = 2: both replicas are needed to commit and to elect. */
START_TEST(test_two_replicas)
{
    struct sim *s = sim_new(2, 214);
    ck_assert_uint_eq(submit_any(s, 1, 5, 500), 5);
    ck_assert_int_eq(run_applied(s, 5, 500), 0);
    sim_crash(s, 0);
    for (int t = 0; t < 1500; t++)
        sim_step(s);
    ck_assert_int_eq(settled(s), -1); /* one of two is no quorum */
    char why[160];
    ck_assert_int_eq(sim_restart(s, 0, why, sizeof(why)), 0);
    int p = await_primary(s, -1, 4000);
    ck_assert_int_ge(p, 0);
    ck_assert_uint_eq(submit_any(s, 10, 3, 1000), 3);
    ck_assert_int_eq(run_applied(s, 8, 3000), 0);
    assert_history(s, 8);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Describes every replica on stderr (a failing seed's context). */
static void
dump(const struct sim *s, uint64_t seed)
{
    fprintf(stderr, "seed %llu at tick %llu:\n", (unsigned long long)seed,
            (unsigned long long)s->now);
    for (unsigned i = 0; i < s->n; i++) {
        if (s->r[i].eng == NULL) {
            fprintf(stderr, "  r%u down\n", i);
            continue;
        }
        struct vs_vsr_info f;
        vsr_info(s->r[i].eng, &f);
        fprintf(stderr,
                "  r%u st=%d role=%d view=%u lv=%u op=%llu jop=%llu "
                "cmin=%llu cmax=%llu applied=%llu missing=%llu faulty=%llu "
                "sb.view=%u sb.lv=%u\n",
                i, (int)f.status, (int)f.role, f.view, f.log_view,
                (unsigned long long)f.op, (unsigned long long)f.journal_op,
                (unsigned long long)f.commit_min,
                (unsigned long long)f.commit_max,
                (unsigned long long)s->r[i].applied,
                (unsigned long long)f.missing, (unsigned long long)f.faulty_op,
                s->r[i].sb.view, s->r[i].sb.log_view);
        const struct vs_vsr_stats *st = vsr_stats(s->r[i].eng);
        fprintf(stderr, "     repair req=%llu got=%llu served=%llu:",
                (unsigned long long)st->repair_requests,
                (unsigned long long)st->repairs,
                (unsigned long long)st->repair_served);
        for (int k = 1; k < VSR_VERDICT_COUNT; k++)
            if (st->verdicts[k] > 0)
                fprintf(stderr, " %s=%llu", vsr_verdict_name(k),
                        (unsigned long long)st->verdicts[k]);
        fprintf(stderr, "\n");
    }
}

/* Seeded random runs: loss, duplication, reordering, crashes with
 * restarts (some with a damaged tail) and partitions that heal, for
 * n = 2, 3 and 5. Checks: one committed history (the harness), progress
 * after the faults stop, every replica converges. */
struct coverage {
    uint64_t view_changes, views_started, repairs, nack_truncations,
        faulty_not_nacked, truncations, probe_elections, crashes, merge_waits;
};

static void
coverage_add(struct coverage *c, const struct sim *s)
{
    for (unsigned i = 0; i < s->n; i++) {
        if (s->r[i].eng == NULL)
            continue;
        const struct vs_vsr_stats *st = vsr_stats(s->r[i].eng);
        c->view_changes += st->view_changes;
        c->views_started += st->views_started;
        c->repairs += st->repairs;
        c->nack_truncations += st->nack_truncations;
        c->faulty_not_nacked += st->faulty_not_nacked;
        c->probe_elections += st->probe_elections;
        c->merge_waits += st->merge_waits;
        c->truncations += s->r[i].truncations;
    }
}

/* The fault model: a damaged tail hits a minority of the copies of an
 * op. Replica i's last entry may be cut only if every other replica is
 * up, has no unrepaired faulty op, and holds that entry durably. */
static int
tail_redundant(const struct sim *s, unsigned i)
{
    const struct sim_replica *r = &s->r[i];
    uint64_t op = r->journal_first;
    if (op == 0)
        return 0;
    while (op < SIM_OPS_MAX && r->journal[op + 1].present)
        op++;
    for (unsigned j = 0; j < s->n; j++) {
        if (j == i)
            continue;
        const struct sim_replica *o = &s->r[j];
        if (o->eng == NULL || o->sb.faulty_op != 0 || o->cut_faulty != 0)
            return 0;
        struct vs_vsr_info info;
        vsr_info(o->eng, &info);
        if (info.faulty_op != 0 || !o->journal[op].present ||
            !vs_u128_eq(o->journal[op].h.f.checksum,
                        r->journal[op].h.f.checksum))
            return 0;
    }
    return 1;
}

static void
random_run(unsigned n, uint64_t seed, struct coverage *cov)
{
    struct sim *s = sim_new(n, seed);
    s->loss_per_mille = (unsigned)(sim_rand(s) % 120);
    s->dup_per_mille = (unsigned)(sim_rand(s) % 80);
    s->delay_min = 1;
    s->delay_max = 1 + (unsigned)(sim_rand(s) % 6);
    s->disk_delay = (unsigned)(sim_rand(s) % 3);
    uint64_t client = 1;
    char why[160];
    for (int round = 0; round < 8; round++) {
        unsigned k = (unsigned)(sim_rand(s) % 4);
        client += submit_any(s, client, k, 150);
        unsigned f = (unsigned)(sim_rand(s) % 10);
        unsigned i = (unsigned)(sim_rand(s) % n);
        unsigned down = 0;
        for (unsigned j = 0; j < n; j++)
            down += s->r[j].eng == NULL;
        if (f < 2 && s->r[i].eng != NULL && down + 1 <= (n - 1) / 2) {
            coverage_add(cov, s); /* its counters die with it */
            cov->crashes++;
            sim_crash(s, i);
            if (sim_rand(s) % 3 == 0 && tail_redundant(s, i))
                (void)sim_cut_tail(s, i);
        } else if (f < 4 && s->r[i].eng == NULL) {
            ck_assert_msg(sim_restart(s, i, why, sizeof(why)) == 0,
                          "seed %llu: %s", (unsigned long long)seed, why);
        } else if (f < 6) {
            sim_partition(s, i, (i + 1) % n, 1);
        } else {
            memset(s->cut, 0, sizeof(s->cut));
        }
        for (int t = 0; t < 60; t++)
            sim_step(s);
        ck_assert_msg(s->violations == 0, "n=%u seed=%llu: %s", n,
                      (unsigned long long)seed, s->violation);
    }
    /* Heal everything: the cluster converges and commits again. */
    memset(s->cut, 0, sizeof(s->cut));
    s->loss_per_mille = 0;
    s->dup_per_mille = 0;
    for (unsigned j = 0; j < n; j++)
        if (s->r[j].eng == NULL)
            ck_assert_msg(sim_restart(s, j, why, sizeof(why)) == 0,
                          "seed %llu: %s", (unsigned long long)seed, why);
    /* Progress: new requests commit everywhere (an uncommitted one may
     * be truncated by a late view change: its client sends again). */
    uint64_t base = max_applied(s);
    uint64_t top = 0;
    uint64_t next = 10000;
    int done = 0;
    for (uint64_t t = 0; t < 12000 && !done; t++) {
        if (t % 400 == 0)
            next += submit_any(s, next, 1, 200);
        int p = settled(s);
        if (p >= 0 && vsr_commit_min(s->r[p].eng) == vsr_op(s->r[p].eng) &&
            vsr_op(s->r[p].eng) > base) {
            top = vsr_op(s->r[p].eng);
            done = 1;
            for (unsigned j = 0; j < n; j++)
                if (s->r[j].applied != top)
                    done = 0;
        }
        if (!done)
            sim_step(s);
    }
    if (!done)
        dump(s, seed);
    ck_assert_msg(done, "n=%u seed=%llu: no convergence after healing", n,
                  (unsigned long long)seed);
    assert_history(s, top);
    ck_assert_msg(s->violations == 0, "n=%u seed=%llu: %s", n,
                  (unsigned long long)seed, s->violation);
    coverage_add(cov, s);
    sim_free(s);
}

START_TEST(test_random_seeds)
{
    struct coverage cov;
    memset(&cov, 0, sizeof(cov));
    /* VSR_VIEW_SEEDS=k runs k times as many seeds (a soak by hand). */
    const char *env = getenv("VSR_VIEW_SEEDS");
    uint64_t mul = env != NULL ? strtoull(env, NULL, 10) : 1;
    if (mul < 1 || mul > 1000)
        mul = 1;
    for (uint64_t seed = 1; seed <= 300 * mul; seed++)
        random_run(3, 7000 + seed, &cov);
    for (uint64_t seed = 1; seed <= 100 * mul; seed++)
        random_run(5, 900000 + seed, &cov);
    for (uint64_t seed = 1; seed <= 50 * mul; seed++)
        random_run(2, 500000 + seed, &cov); /* no crash: no quorum left */
    fprintf(
        stderr,
        "coverage: crashes=%llu view_changes=%llu views_started=%llu "
        "repairs=%llu nack_truncations=%llu faulty_not_nacked=%llu "
        "truncations=%llu probe_elections=%llu merge_waits=%llu\n",
        (unsigned long long)cov.crashes, (unsigned long long)cov.view_changes,
        (unsigned long long)cov.views_started, (unsigned long long)cov.repairs,
        (unsigned long long)cov.nack_truncations,
        (unsigned long long)cov.faulty_not_nacked,
        (unsigned long long)cov.truncations,
        (unsigned long long)cov.probe_elections,
        (unsigned long long)cov.merge_waits);
    /* The seeds reach the paths they are meant to test. */
    ck_assert_uint_gt(cov.crashes, 50);
    ck_assert_uint_gt(cov.views_started, 50);
    ck_assert_uint_gt(cov.repairs, 0);
    ck_assert_uint_gt(cov.truncations, 0);
    ck_assert_uint_gt(cov.faulty_not_nacked, 0);
}
END_TEST

/* A replica whose disk cut a damaged first entry (a faulty op above an
 * empty journal, view 0) had a prior life: it must start recovering, or
 * as view 0's primary it would build a new op over a possibly committed
 * one. The engine refuses the options; recovering, it boots. */
START_TEST(test_faulty_op_requires_recovering)
{
    struct vs_vsr_options o;
    sim_default_options(&o, 3);
    o.replica = 0;
    o.faulty_op = 1;
    struct vs_vsr *v = NULL;
    char why[160];
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_null(v);
    ck_assert_ptr_nonnull(strstr(why, "faulty op must start recovering"));
    /* the mark persisted by an earlier boot, same rule */
    o.faulty_op = 0;
    o.durable.faulty_op = 1;
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "faulty op must start recovering"));
    o.durable.faulty_op = 0;
    o.faulty_op = 1;
    o.recovering = 1;
    o.incarnation.lo = 7;
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), 0);
    struct vs_vsr_info info;
    vsr_info(v, &info);
    ck_assert_int_eq(info.role, VSR_ROLE_RECOVERING);
    ck_assert_uint_eq(info.faulty_op, 1);
    vsr_destroy(v);
}
END_TEST

/* The persisted faulty range keeps its two parts apart (VsrState v3):
 * after a restart only the ops up to durable.nonack_op (cut as damaged at
 * an earlier boot) are never nacked; the rest up to durable.faulty_op is
 * an adopted log's reach this replica never journaled. A damaged tail cut
 * at this boot joins the never-nacked part and is persisted with it. */
START_TEST(test_faulty_parts_after_restart)
{
    struct vs_vsr_options o;
    sim_default_options(&o, 3);
    o.replica = 1;
    o.recovering = 1;
    o.incarnation.lo = 9;
    o.durable.faulty_op = 3; /* reach only */
    struct vs_vsr *v = NULL;
    char why[160];
    struct vs_vsr_info info;
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), 0);
    vsr_info(v, &info);
    ck_assert_uint_eq(info.faulty_op, 3);
    ck_assert_uint_eq(info.nonack_top, 0);
    vsr_destroy(v);
    /* a cut persisted by an earlier boot stays never nacked */
    o.durable.nonack_op = 2;
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), 0);
    vsr_info(v, &info);
    ck_assert_uint_eq(info.faulty_op, 3);
    ck_assert_uint_eq(info.nonack_top, 2);
    vsr_destroy(v);
    /* this boot's cut: never nacked, written with the mark */
    o.durable.nonack_op = 0;
    o.faulty_op = 1;
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), 0);
    vsr_info(v, &info);
    ck_assert_uint_eq(info.faulty_op, 3);
    ck_assert_uint_eq(info.nonack_top, 1);
    struct vs_vsr_action a;
    int written = 0;
    while (vsr_pop(v, &a))
        if (a.kind == VSR_ACT_SUPERBLOCK_WRITE) {
            ck_assert_uint_eq(a.persist.faulty_op, 3);
            ck_assert_uint_eq(a.persist.nonack_op, 1);
            written++;
        }
    ck_assert_int_eq(written, 1);
    vsr_destroy(v);
    /* an impossible pair is refused */
    o.faulty_op = 0;
    o.durable.nonack_op = 4;
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_null(v);
    ck_assert_ptr_nonnull(strstr(why, "never-nacked op 4"));
}
END_TEST

int
main(void)
{
    Suite *su = suite_create("vsr_view");
    TCase *tc = tcase_create("view");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_primary_crash_elects);
    tcase_add_test(tc, test_primary_crash_mid_pipeline);
    tcase_add_test(tc, test_duelling_candidates);
    tcase_add_test(tc, test_isolated_primary);
    tcase_add_test(tc, test_isolated_primary_loses_lease);
    tcase_add_test(tc, test_start_view_waits_for_log_view);
    tcase_add_test(tc, test_backup_gap_repair);
    tcase_add_test(tc, test_range_evicted_surfaced);
    tcase_add_test(tc, test_whole_cluster_restart);
    tcase_add_test(tc, test_restarted_primary_elected_past);
    tcase_add_test(tc, test_faulty_tail_repaired);
    tcase_add_test(tc, test_faulty_forces_wait);
    tcase_add_test(tc, test_faulty_majority_halts);
    tcase_add_test(tc, test_faulty_range_never_nacked);
    tcase_add_test(tc, test_adopted_log_reach_survives_restart);
    tcase_add_test(tc, test_stale_faulty_mark_cleared);
    tcase_add_test(tc, test_nack_quorum_truncates);
    tcase_add_test(tc, test_lost_disk_rebuild);
    tcase_add_test(tc, test_two_replicas);
    tcase_add_test(tc, test_faulty_op_requires_recovering);
    tcase_add_test(tc, test_faulty_parts_after_restart);
    suite_add_tcase(su, tc);
    TCase *tr = tcase_create("random");
    tcase_set_timeout(tr, 300);
    tcase_add_test(tr, test_random_seeds);
    suite_add_tcase(su, tr);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
