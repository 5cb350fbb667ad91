/*
 * tests/unit/check_vsr_transfer.c - the engine's side of state transfer
 * (vsr_transfer_begin / vsr_transfer_end / vsr_on_state_installed),
 * driven through the deterministic harness (tests/sim), whose checkers
 * run on every action (persist before send, R2, R3, one committed
 * history, WAL without holes, and: no PrepareOk and no commit walk while
 * a transfer is armed).
 *
 * Scenarios, each bounded in ticks, each ending with every replica at
 * the same applied op with the same state, no committed op lost (the
 * harness's single history) and equal snapshot bytes (checksum) when all
 * checkpoint at that op:
 *  - a restart whose StartView gap is wider than any peer's journal
 *    arms from the StartView; one inside it arms from RangeEvicted,
 *    restarting exactly at the peers' drained journal;
 *  - a replica down across several checkpoint generations, with load
 *    during the transfer;
 *  - double restart during a transfer, and a crash right after the
 *    install (restart with an empty journal above the snapshot);
 *  - the serving primary dies mid-transfer: the replica votes in the
 *    view change and retargets to the new primary;
 *  - a StartView arriving during the fetch: adopted, no walk, no ack;
 *  - a snapshot behind the receiver's commit_min: table-only install;
 *  - an install without the snapshot op's checksum (learned from the
 *    first canonical header above it);
 *  - API refusals (not armed, twice, n = 1, bad op / commit_max);
 *  - a seeded swarm (40 runs of n = 3, 10 of n = 5): loss, duplication,
 *    reordering, crashes of any replica (the primary too) long enough to
 *    fall past the peers' checkpoints, crashes mid-transfer, random
 *    checkpoint timing (a pairing lost in a crash at a full window).
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
sim_new(unsigned n, uint64_t seed, unsigned xfer_ticks)
{
    struct sim *s = vs_xcalloc(1, sizeof(*s));
    struct vs_vsr_options o;
    sim_default_options(&o, n);
    ck_assert_int_eq(sim_init(s, n, seed, &o), 0);
    s->xfer_ticks = xfer_ticks;
    return s;
}

static void
sim_free(struct sim *s)
{
    sim_fini(s);
    free(s);
}

static int
settled(struct sim *s)
{
    int found = -1;
    for (unsigned i = 0; i < s->n; i++)
        if (s->r[i].eng != NULL && vsr_is_settled_primary(s->r[i].eng))
            if (found < 0 || vsr_view(s->r[i].eng) > vsr_view(s->r[found].eng))
                found = (int)i;
    return found;
}

static uint64_t next_client = 1;

/* Submits count requests to the settled primary, retrying refusals;
 * bounded by max_ticks. Returns the number accepted. */
static unsigned
submit(struct sim *s, unsigned count, uint64_t max_ticks)
{
    unsigned done = 0;
    uint64_t ticks = 0;
    while (done < count && ticks < max_ticks) {
        int p = settled(s);
        if (p >= 0) {
            uint8_t body[16];
            memset(body, (int)(next_client & 0xff), sizeof(body));
            int rc = sim_request(s, (unsigned)p, next_client, 1,
                                 VS_OP_CREATE_STREAM, body, sizeof(body));
            if (rc == 0) {
                next_client++;
                done++;
                continue;
            }
            ck_assert_msg(rc == -EBUSY || rc == -EAGAIN || rc == -EALREADY ||
                              rc == -ENOSPC,
                          "request refused with %d", rc);
        }
        sim_step(s);
        ticks++;
    }
    return done;
}

/* The highest applied op among live replicas. */
static uint64_t
top_applied(const struct sim *s)
{
    uint64_t top = 0;
    for (unsigned i = 0; i < s->n; i++)
        if (s->r[i].eng != NULL && s->r[i].applied > top)
            top = s->r[i].applied;
    return top;
}

/* Every live replica applied the same op with the same state. */
static int
equal_state(const struct sim *s)
{
    uint64_t top = top_applied(s);
    int ref = -1;
    for (unsigned i = 0; i < s->n; i++) {
        if (s->r[i].eng == NULL)
            continue;
        if (s->r[i].applied != top)
            return 0;
        if (ref >= 0 && s->r[i].sm_hash != s->r[ref].sm_hash)
            return 0;
        ref = (int)i;
    }
    return 1;
}

/* Steps until equal_state holds with an empty pipeline; returns ticks
 * taken or -1 after max_ticks. */
static int
converge(struct sim *s, uint64_t max_ticks)
{
    for (uint64_t t = 0; t < max_ticks; t++) {
        int p = settled(s);
        if (p >= 0 && equal_state(s) &&
            vsr_commit_max(s->r[p].eng) == top_applied(s) &&
            vsr_op(s->r[p].eng) == top_applied(s))
            return (int)t;
        sim_step(s);
    }
    return -1;
}

/* Commits `batches` batches of `per` ops on the live replicas, each
 * followed by a checkpoint of every live replica (the journal drains). */
static void
advance(struct sim *s, unsigned batches, unsigned per)
{
    for (unsigned b = 0; b < batches; b++) {
        ck_assert_uint_eq(submit(s, per, 2000), per);
        ck_assert_int_ge(converge(s, 2000), 0);
        for (unsigned i = 0; i < s->n; i++)
            if (s->r[i].eng != NULL && !s->r[i].xfer &&
                s->r[i].applied > s->r[i].sb.checkpoint_op)
                ck_assert_int_eq(sim_checkpoint(s, i), 0);
        for (int t = 0; t < 20; t++)
            sim_step(s);
    }
}

/* Everyone checkpoints at the same op: equal snapshot bytes. */
static void
assert_equal_snapshots(struct sim *s)
{
    ck_assert_int_ge(converge(s, 3000), 0);
    int ref = -1;
    for (unsigned i = 0; i < s->n; i++) {
        if (s->r[i].eng == NULL)
            continue;
        /* a pairing still in flight (queued behind another superblock
         * write) completes first: bounded */
        for (int t = 0; t < 1000; t++) {
            if (s->r[i].applied <= s->r[i].sb.checkpoint_op ||
                s->r[i].applied <= s->r[i].snap_op)
                break;
            int rc = sim_checkpoint(s, i);
            if (rc != -EBUSY) {
                ck_assert_int_eq(rc, 0);
                break;
            }
            ck_assert_int_lt(t, 999);
            sim_step(s);
        }
        if (ref >= 0) {
            ck_assert_uint_eq(s->r[i].snap_op, s->r[ref].snap_op);
            struct vs_u128 a =
                vs_checksum(&s->r[i].snap_hash, sizeof(s->r[i].snap_hash));
            struct vs_u128 b =
                vs_checksum(&s->r[ref].snap_hash, sizeof(s->r[ref].snap_hash));
            ck_assert(vs_u128_eq(a, b));
        }
        ref = (int)i;
    }
}

static void
restart(struct sim *s, unsigned i)
{
    char why[160];
    uint64_t first = s->r[i].journal_first;
    ck_assert_msg(sim_restart(s, i, why, sizeof(why)) == 0,
                  "%s (first %llu ckpt %llu snap %llu installs %llu)", why,
                  (unsigned long long)first,
                  (unsigned long long)s->r[i].sb.checkpoint_op,
                  (unsigned long long)s->r[i].snap_op,
                  (unsigned long long)s->r[i].installs);
}

static void
await_armed(struct sim *s, unsigned i, uint64_t max_ticks)
{
    for (uint64_t t = 0; t < max_ticks && !s->r[i].xfer; t++)
        sim_step(s);
    ck_assert_msg(s->r[i].xfer, "replica %u never armed a transfer", i);
}

/* Down while the others commit 3 x 30 ops (gap 90 > 64 slots + 1): the
 * adopted StartView arms the transfer itself; the snapshot is the
 * peers' drained journal's op exactly. */
START_TEST(test_sv_gap_arms)
{
    struct sim *s = sim_new(3, 301, 30);
    advance(s, 1, 5);
    sim_crash(s, 2);
    advance(s, 3, 30);
    ck_assert_uint_eq(s->r[0].sb.checkpoint_op, 95);
    restart(s, 2);
    int t = converge(s, 3000);
    ck_assert_int_ge(t, 0);
    ck_assert_uint_ge(vsr_stats(s->r[2].eng)->transfer_triggers, 1);
    ck_assert_uint_eq(s->r[2].installs, 1);
    ck_assert_uint_eq(s->r[2].snap_op, 95);
    for (int k = 0; k < 20; k++)
        sim_step(s); /* the pairing write completes */
    ck_assert_uint_eq(s->r[2].sb.checkpoint_op, 95);
    struct vs_vsr_info info;
    vsr_info(s->r[2].eng, &info);
    ck_assert(!info.state_transfer && !info.transferring);
    advance(s, 1, 10);
    assert_equal_snapshots(s);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* A gap inside the journal's span (40 ops) but below the peers' drained
 * floor: repair's RangeEvicted arms it; the restart lands exactly at the
 * drained journal (checkpoint op == head), so nothing above remains to
 * repair until new ops arrive. */
START_TEST(test_range_evicted_arms_drained)
{
    struct sim *s = sim_new(3, 302, 20);
    advance(s, 1, 5);
    sim_crash(s, 2);
    advance(s, 1, 40);
    ck_assert_uint_eq(s->r[0].sb.checkpoint_op, 45);
    restart(s, 2);
    ck_assert_int_ge(converge(s, 3000), 0);
    ck_assert_uint_eq(vsr_stats(s->r[2].eng)->transfer_triggers, 0);
    ck_assert_uint_ge(vsr_stats(s->r[2].eng)->range_evicted, 1);
    ck_assert_uint_eq(s->r[2].installs, 1);
    ck_assert_uint_eq(s->r[2].snap_op, 45);
    advance(s, 2, 12);
    assert_equal_snapshots(s);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Down across six checkpoint generations, with load while it fetches:
 * the suffix above the snapshot is repaired, the state converges. */
START_TEST(test_several_generations)
{
    struct sim *s = sim_new(3, 303, 40);
    advance(s, 1, 3);
    sim_crash(s, 2);
    advance(s, 6, 30);
    restart(s, 2);
    await_armed(s, 2, 2000);
    ck_assert_uint_eq(submit(s, 10, 2000), 10); /* during the fetch */
    int t = converge(s, 4000);
    ck_assert_int_ge(t, 0);
    ck_assert_uint_ge(s->r[2].installs, 1);
    ck_assert_uint_gt(vsr_stats(s->r[2].eng)->repairs, 0);
    advance(s, 1, 10);
    assert_equal_snapshots(s);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Crash while fetching, restart, crash again right after the install
 * (the journal is empty above the snapshot), restart: it converges. */
START_TEST(test_double_restart)
{
    struct sim *s = sim_new(3, 304, 60);
    advance(s, 1, 5);
    sim_crash(s, 2);
    advance(s, 4, 30);
    restart(s, 2);
    await_armed(s, 2, 2000);
    sim_crash(s, 2);
    for (int t = 0; t < 30; t++)
        sim_step(s);
    restart(s, 2);
    for (uint64_t t = 0; t < 3000 && s->r[2].installs == 0; t++)
        sim_step(s);
    ck_assert_uint_eq(s->r[2].installs, 1);
    sim_crash(s, 2); /* before anything above the snapshot is durable */
    ck_assert_uint_eq(s->r[2].journal_first, 0);
    advance(s, 1, 10);
    restart(s, 2);
    ck_assert_int_ge(converge(s, 4000), 0);
    advance(s, 1, 10);
    assert_equal_snapshots(s);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* The serving primary dies mid-transfer: the transferring replica votes
 * the new view in and fetches from its primary instead. */
START_TEST(test_primary_dies_mid_transfer)
{
    struct sim *s = sim_new(3, 305, 300);
    advance(s, 1, 5);
    sim_crash(s, 2);
    advance(s, 4, 30);
    restart(s, 2);
    await_armed(s, 2, 2000);
    ck_assert_uint_eq(s->r[2].xfer_src, 0);
    sim_crash(s, 0);
    int t = converge(s, 6000);
    ck_assert_int_ge(t, 0);
    ck_assert_int_eq(settled(s), 1);
    ck_assert_uint_ge(s->r[2].retargets, 1);
    ck_assert_uint_eq(s->r[2].installs, 1);
    restart(s, 0);
    advance(s, 1, 10);
    assert_equal_snapshots(s);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* A StartView of a new view arrives while the replica fetches: it is
 * adopted but walks nothing and acknowledges nothing (the harness
 * checks), and the replica still installs and converges. */
START_TEST(test_start_view_during_fetch)
{
    struct sim *s = sim_new(3, 306, 1500);
    advance(s, 1, 5);
    sim_crash(s, 2);
    advance(s, 4, 30);
    restart(s, 2);
    await_armed(s, 2, 2000);
    uint64_t applied = s->r[2].applied;
    uint64_t adopted = vsr_stats(s->r[2].eng)->sv_adopted;
    sim_isolate(s, 0, 1);
    for (uint64_t t = 0; t < 1400 && vsr_view(s->r[2].eng) == 0; t++)
        sim_step(s);
    for (uint64_t t = 0;
         t < 400 && vsr_stats(s->r[2].eng)->sv_adopted == adopted; t++)
        sim_step(s);
    ck_assert_uint_gt(vsr_stats(s->r[2].eng)->sv_adopted, adopted);
    ck_assert(s->r[2].xfer);
    ck_assert_uint_eq(s->r[2].applied, applied);
    sim_isolate(s, 0, 0);
    ck_assert_int_ge(converge(s, 6000), 0);
    ck_assert_uint_eq(s->r[2].installs, 1);
    advance(s, 1, 10);
    assert_equal_snapshots(s);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* The seed's case: an armed replica whose journal holds committed ops
 * it has not applied; a view change (it may not lead, so the election
 * passes it) and the new primary's StartView, whose commit covers those
 * ops, walk nothing while armed. */
START_TEST(test_start_view_walk_gated)
{
    struct sim *s = sim_new(3, 311, 0);
    ck_assert_uint_eq(submit(s, 4, 500), 4);
    ck_assert_int_ge(converge(s, 500), 0);
    ck_assert_int_eq(sim_transfer_start(s, 1, 0), 0);
    ck_assert_uint_eq(submit(s, 3, 500), 3);
    for (int t = 0; t < 60; t++)
        sim_step(s);
    ck_assert_uint_eq(s->r[0].applied, 7);
    ck_assert_uint_eq(s->r[1].applied, 4);
    sim_isolate(s, 0, 1);
    for (uint64_t t = 0; t < 4000 && settled(s) != 2; t++)
        sim_step(s);
    ck_assert_int_eq(settled(s), 2);
    for (int t = 0; t < 50; t++)
        sim_step(s);
    ck_assert_uint_ge(vsr_stats(s->r[1].eng)->sv_adopted, 1);
    ck_assert_uint_ge(vsr_commit_max(s->r[1].eng), 7);
    ck_assert_uint_eq(s->r[1].applied, 4);
    ck_assert_uint_eq(s->r[2].applied, 7);
    s->r[1].xfer = 0;
    ck_assert_int_eq(vsr_transfer_end(s->r[1].eng), 0);
    sim_isolate(s, 0, 0);
    ck_assert_int_ge(converge(s, 3000), 0);
    assert_equal_snapshots(s);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* The primary's snapshot (op 10) is behind the receiver's commit_min
 * (30): the receiver keeps its state (table-only install) and goes on. */
START_TEST(test_snapshot_behind_table_only)
{
    struct sim *s = sim_new(3, 307, 10);
    ck_assert_uint_eq(submit(s, 10, 500), 10);
    ck_assert_int_ge(converge(s, 500), 0);
    ck_assert_int_eq(sim_checkpoint(s, 0), 0);
    ck_assert_uint_eq(submit(s, 20, 1000), 20);
    ck_assert_int_ge(converge(s, 1000), 0);
    uint64_t hash = s->r[2].sm_hash;
    ck_assert_int_eq(sim_transfer_start(s, 2, 0), 0);
    ck_assert_int_eq(sim_transfer_start(s, 2, 0), -EALREADY);
    for (int t = 0; t < 50 && s->r[2].xfer; t++)
        sim_step(s);
    ck_assert(!s->r[2].xfer);
    ck_assert_uint_eq(s->r[2].installs_table, 1);
    ck_assert_uint_eq(s->r[2].installs, 0);
    ck_assert_uint_eq(s->r[2].applied, 30);
    ck_assert_uint_eq(s->r[2].sm_hash, hash);
    ck_assert_uint_eq(vsr_stats(s->r[2].eng)->installs_table, 1);
    advance(s, 1, 10);
    assert_equal_snapshots(s);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* The binding does not know the snapshot op's prepare checksum: the
 * engine takes it from the first canonical header above the snapshot. */
START_TEST(test_install_without_op_checksum)
{
    struct sim *s = sim_new(3, 308, 20);
    s->xfer_no_op_checksum = 1;
    advance(s, 1, 5);
    sim_crash(s, 2);
    advance(s, 3, 30);
    restart(s, 2);
    await_armed(s, 2, 2000);
    ck_assert_uint_eq(submit(s, 5, 2000), 5);
    ck_assert_int_ge(converge(s, 4000), 0);
    ck_assert_uint_eq(s->r[2].installs, 1);
    advance(s, 1, 10);
    assert_equal_snapshots(s);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

START_TEST(test_api_refusals)
{
    struct sim *one = sim_new(1, 309, 0);
    ck_assert_int_eq(vsr_transfer_begin(one->r[0].eng), -EINVAL);
    sim_free(one);

    struct sim *s = sim_new(3, 310, 0);
    ck_assert_uint_eq(submit(s, 4, 500), 4);
    ck_assert_int_ge(converge(s, 500), 0);
    struct vs_vsr *e = s->r[1].eng;
    struct vs_u128 z = {0, 0};
    ck_assert_int_eq(vsr_on_state_installed(e, 2, z, z, 4), -EINVAL);
    ck_assert_int_eq(vsr_transfer_end(e), -EINVAL);
    ck_assert_int_eq(vsr_transfer_begin(e), 0);
    ck_assert_int_eq(vsr_transfer_begin(e), -EALREADY);
    struct vs_vsr_info info;
    vsr_info(e, &info);
    ck_assert(info.transferring);
    ck_assert_int_eq(vsr_on_state_installed(e, 0, z, z, 4), -EINVAL);
    ck_assert_int_eq(vsr_on_state_installed(e, 5, z, z, 4), -EINVAL);
    /* Armed: commits pile up on the others, none is walked here. */
    s->r[1].xfer = 1;
    s->r[1].xfer_applied = s->r[1].applied;
    ck_assert_uint_eq(submit(s, 3, 500), 3);
    for (int t = 0; t < 100; t++)
        sim_step(s);
    ck_assert_uint_eq(s->r[1].applied, 4);
    ck_assert_uint_eq(s->r[0].applied, 7);
    ck_assert_int_eq(vsr_transfer_end(e), 0);
    s->r[1].xfer = 0;
    vsr_info(e, &info);
    ck_assert(!info.transferring);
    ck_assert_int_ge(converge(s, 1000), 0);
    ck_assert_uint_eq(s->r[1].applied, 7);
    ck_assert_uint_eq(vsr_stats(e)->transfers_ended, 1);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

static void
dump(struct sim *s)
{
    for (unsigned i = 0; i < s->n; i++) {
        if (s->r[i].eng == NULL) {
            fprintf(stderr, "r%u down\n", i);
            continue;
        }
        struct vs_vsr_info in;
        vsr_info(s->r[i].eng, &in);
        fprintf(stderr,
                "r%u st=%d view=%u lv=%u op=%llu jop=%llu cmin=%llu "
                "cmax=%llu ckpt=%llu applied=%llu miss=%llu xfer=%d/%d "
                "st_t=%d first=%llu snap=%llu inst=%llu src=%u\n",
                i, in.status, in.view, in.log_view, (unsigned long long)in.op,
                (unsigned long long)in.journal_op,
                (unsigned long long)in.commit_min,
                (unsigned long long)in.commit_max,
                (unsigned long long)in.checkpoint_op,
                (unsigned long long)s->r[i].applied,
                (unsigned long long)in.missing, s->r[i].xfer, in.transferring,
                in.state_transfer, (unsigned long long)s->r[i].journal_first,
                (unsigned long long)s->r[i].snap_op,
                (unsigned long long)s->r[i].installs, s->r[i].xfer_src);
    }
}

struct swarm_cov {
    uint64_t installs, table_only, retargets, triggers, evicted;
};

/* One seeded run: loss, duplication, reordering; replicas crash for long
 * enough to fall past the peers' checkpoints (the primary too), restart,
 * transfer while load continues; at the end everyone converges to one
 * state with equal snapshots. */
static void
swarm_run(unsigned n, uint64_t seed, struct swarm_cov *cov)
{
    struct sim *s = sim_new(n, seed, 0);
    s->xfer_ticks = 5 + (unsigned)(sim_rand(s) % 120);
    s->loss_per_mille = 20;
    s->dup_per_mille = 10;
    s->delay_max = 3;
    int down = -1;
    uint64_t down_at = 0;
    for (unsigned round = 0; round < 14; round++) {
        unsigned per = 8 + (unsigned)(sim_rand(s) % 12);
        submit(s, per, 3000);
        for (int t = 0; t < 40; t++)
            sim_step(s);
        for (unsigned i = 0; i < n; i++) {
            struct sim_replica *r = &s->r[i];
            if (r->eng != NULL && !r->xfer &&
                r->applied > r->sb.checkpoint_op && r->applied > r->snap_op &&
                sim_rand(s) % 2 == 0)
                sim_checkpoint(s, i); /* -EBUSY: a pairing in flight */
        }
        uint64_t dice = sim_rand(s) % 10;
        if (down < 0 && dice < 3) {
            /* the primary now and then, else a random replica */
            int p = settled(s);
            down = dice == 0 && p >= 0 ? p : (int)(sim_rand(s) % n);
            sim_crash(s, (unsigned)down);
            down_at = round;
        } else if (down >= 0 && (round - down_at >= 3 || dice == 9)) {
            restart(s, (unsigned)down);
            down = -1;
        } else if (down < 0 && dice == 4) {
            /* a replica mid-transfer (if any) crashes and restarts */
            for (unsigned i = 0; i < n; i++) {
                if (s->r[i].eng != NULL && s->r[i].xfer) {
                    sim_crash(s, i);
                    restart(s, i);
                    break;
                }
            }
        }
        ck_assert_msg(s->violations == 0, "seed %llu: %s",
                      (unsigned long long)seed, s->violation);
    }
    if (down >= 0)
        restart(s, (unsigned)down);
    s->loss_per_mille = 0;
    s->dup_per_mille = 0;
    submit(s, 3, 5000);
    /* As a binding does, replicas checkpoint on their own meanwhile (a
     * pairing lost in a crash is written again). */
    int ok = 0;
    for (int k = 0; k < 100 && !ok; k++) {
        ok = converge(s, 200) >= 0;
        for (unsigned i = 0; i < n && !ok; i++) {
            struct sim_replica *r = &s->r[i];
            if (r->eng != NULL && !r->xfer &&
                r->applied > r->sb.checkpoint_op + 8)
                sim_checkpoint(s, i);
        }
    }
    if (!ok)
        dump(s);
    ck_assert_msg(ok, "seed %llu: no convergence", (unsigned long long)seed);
    assert_equal_snapshots(s);
    ck_assert_msg(s->violations == 0, "seed %llu: %s", (unsigned long long)seed,
                  s->violation);
    for (unsigned i = 0; i < n; i++) {
        cov->installs += s->r[i].installs;
        cov->table_only += s->r[i].installs_table;
        cov->retargets += s->r[i].retargets;
        cov->triggers += vsr_stats(s->r[i].eng)->transfer_triggers;
        cov->evicted += vsr_stats(s->r[i].eng)->range_evicted;
    }
    sim_free(s);
}

START_TEST(test_swarm)
{
    struct swarm_cov cov;
    memset(&cov, 0, sizeof(cov));
    for (uint64_t seed = 1; seed <= 40; seed++)
        swarm_run(3, 41000 + seed, &cov);
    for (uint64_t seed = 1; seed <= 10; seed++)
        swarm_run(5, 51000 + seed, &cov);
    fprintf(stderr,
            "transfer swarm: installs=%llu table_only=%llu retargets=%llu "
            "sv_triggers=%llu range_evicted=%llu\n",
            (unsigned long long)cov.installs,
            (unsigned long long)cov.table_only,
            (unsigned long long)cov.retargets, (unsigned long long)cov.triggers,
            (unsigned long long)cov.evicted);
    ck_assert_uint_gt(cov.installs, 10);
}
END_TEST

static Suite *
transfer_suite(void)
{
    Suite *su = suite_create("vsr_transfer");
    TCase *tc = tcase_create("scenarios");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sv_gap_arms);
    tcase_add_test(tc, test_range_evicted_arms_drained);
    tcase_add_test(tc, test_several_generations);
    tcase_add_test(tc, test_double_restart);
    tcase_add_test(tc, test_primary_dies_mid_transfer);
    tcase_add_test(tc, test_start_view_during_fetch);
    tcase_add_test(tc, test_start_view_walk_gated);
    tcase_add_test(tc, test_snapshot_behind_table_only);
    tcase_add_test(tc, test_install_without_op_checksum);
    tcase_add_test(tc, test_api_refusals);
    suite_add_tcase(su, tc);
    TCase *tr = tcase_create("swarm");
    tcase_set_timeout(tr, 300);
    tcase_add_test(tr, test_swarm);
    suite_add_tcase(su, tr);
    return su;
}

int
main(void)
{
    SRunner *sr = srunner_create(transfer_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
