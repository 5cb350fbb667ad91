/*
 * tests/unit/check_vsr_engine.c - the VSR engine's one-replica form and its
 * unit-level rules: quorum table, prepare construction and hash chain,
 * durability before commit, commit order, per-client and pipeline
 * refusals, restart continuing the chain, recovery refusals, checkpoints,
 * hostile frames, action lifetimes.
 *
 * Quorum values come from shared/reference/iggy-server-ng.md §2, written
 * out as a table here (not computed by the code under test). Runs are
 * deterministic: fixed seeds, every loop bounded in ticks and count.
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

static struct sim *
sim_new(unsigned n, uint64_t seed, const struct vs_vsr_options *o)
{
    struct sim *s = vs_xcalloc(1, sizeof(*s));
    struct vs_vsr_options def;
    if (o == NULL) {
        sim_default_options(&def, n);
        o = &def;
    }
    ck_assert_int_eq(sim_init(s, n, seed, o), 0);
    return s;
}

static void
sim_free(struct sim *s)
{
    sim_fini(s);
    free(s);
}

#define ck_assert_clean(s)                                                     \
    ck_assert_msg((s)->violations == 0, "violation: %s", (s)->violation)

/* ---- quorums ---- */

START_TEST(test_quorum_table)
{
    /* n:                       1  2  3  4  5  6 */
    static const unsigned repl[] = {1, 2, 2, 2, 3, 3};
    static const unsigned vc[] = {1, 2, 2, 3, 3, 4};
    static const unsigned nack[] = {1, 1, 2, 3, 3, 4};
    for (unsigned n = 1; n <= 6; n++) {
        ck_assert_uint_eq(vsr_quorum_replication(n), repl[n - 1]);
        ck_assert_uint_eq(vsr_quorum_view_change(n), vc[n - 1]);
        ck_assert_uint_eq(vsr_quorum_nack(n), nack[n - 1]);
        /* Any replication quorum meets any view-change quorum. */
        ck_assert_uint_gt(vsr_quorum_replication(n) + vsr_quorum_view_change(n),
                          n);
    }
    ck_assert_uint_eq(vsr_quorum_replication(32), 3);
    ck_assert_uint_eq(vsr_quorum_view_change(32), 30);
    ck_assert_uint_eq(vsr_primary_index(7, 3), 1);
    ck_assert_uint_eq(vsr_primary_index(0, 1), 0);
}
END_TEST

/* ---- the one-replica commit path, action by action ---- */

static struct vs_vsr *
solo_engine(uint32_t pipeline_max)
{
    struct vs_vsr_options o;
    sim_default_options(&o, 1);
    o.pipeline_max = pipeline_max;
    o.seed = 7;
    struct vs_vsr *v = NULL;
    char why[128];
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), 0);
    return v;
}

static struct vs_hdr_request
mk_request(uint64_t client, uint64_t request, uint32_t body_len)
{
    struct vs_hdr_request r;
    memset(&r, 0, sizeof(r));
    r.f.command = VS_CMD_REQUEST;
    r.f.size = VS_HEADER_SIZE + body_len;
    r.client.lo = client;
    r.request = request;
    r.operation = VS_OP_CREATE_STREAM;
    r.user_id = 42;
    r.request_checksum.lo = 0xabcdef;
    return r;
}

START_TEST(test_solo_commit_path)
{
    struct vs_vsr *v = solo_engine(4);
    struct vs_vsr_action a;
    ck_assert_int_eq(vsr_pop(v, &a), 0); /* nothing to replay */
    ck_assert(vsr_is_primary(v));

    static const char body[] = "stream-one";
    struct vs_hdr_request req = mk_request(9, 1, sizeof(body));
    ck_assert_int_eq(vsr_on_request(v, &req, body, sizeof(body), 5000), 0);

    /* Only the journal append: no commit, no reply, no send. */
    ck_assert_int_eq(vsr_pop(v, &a), 1);
    ck_assert_int_eq(a.kind, VSR_ACT_JOURNAL_APPEND);
    ck_assert_uint_eq(a.op, 1);
    const struct vs_hdr_prepare *p = (const struct vs_hdr_prepare *)a.frame;
    ck_assert_uint_eq(p->f.command, VS_CMD_PREPARE);
    ck_assert_uint_eq(p->f.size, VS_HEADER_SIZE + sizeof(body));
    ck_assert_uint_eq(a.size, p->f.size);
    ck_assert_uint_eq(p->f.release, VS_WIRE_FORMAT_VERSION);
    ck_assert_uint_eq(p->group, VS_METADATA_GROUP);
    ck_assert_uint_eq(p->user_id, 42);
    ck_assert_uint_eq(p->client.lo, 9);
    ck_assert_uint_eq(p->request, 1);
    ck_assert_uint_eq(p->op, 1);
    ck_assert_uint_eq(p->commit, 0);
    ck_assert_uint_eq(p->timestamp, 5000);
    ck_assert_uint_eq(p->request_checksum.lo, 0xabcdef);
    ck_assert(vs_u128_is_zero(p->parent)); /* op 1 chains to the empty log */
    ck_assert(vs_prepare_verify_identity(p));
    ck_assert(vs_u128_eq(p->f.checksum_body, vs_checksum(body, sizeof(body))));
    ck_assert_mem_eq(a.body, body, sizeof(body));
    struct vs_u128 sum = p->f.checksum;
    ck_assert_int_eq(vsr_pop(v, &a), 0);
    ck_assert_uint_eq(vsr_commit_max(v), 0);

    /* A wrong completion is refused; the right one commits. */
    struct vs_u128 bad = sum;
    bad.lo ^= 1;
    ck_assert_int_eq(vsr_on_journal_durable(v, 1, bad), -EINVAL);
    ck_assert_int_eq(vsr_on_journal_durable(v, 2, sum), -EINVAL);
    ck_assert_int_eq(vsr_pop(v, &a), 0);
    ck_assert_int_eq(vsr_on_journal_durable(v, 1, sum), 0);
    ck_assert_int_eq(vsr_on_journal_durable(v, 1, sum), -EINVAL);
    ck_assert_uint_eq(vsr_commit_max(v), 1);
    ck_assert_int_eq(vsr_pop(v, &a), 1);
    ck_assert_int_eq(a.kind, VSR_ACT_COMMIT);
    ck_assert_uint_eq(a.op, 1);
    ck_assert_ptr_nonnull(a.body);
    ck_assert_mem_eq(a.body, body, sizeof(body));
    ck_assert_int_eq(vsr_pop(v, &a), 0);

    /* No reply before the apply completion; then exactly one. */
    ck_assert_int_eq(vsr_on_commit_applied(v, 2, "x", 1), -EINVAL);
    ck_assert_int_eq(vsr_on_commit_applied(v, 1, "ok!", 3), 0);
    ck_assert_int_eq(vsr_on_commit_applied(v, 1, "ok!", 3), -EINVAL);
    ck_assert_uint_eq(vsr_commit_min(v), 1);
    ck_assert_int_eq(vsr_pop(v, &a), 1);
    ck_assert_int_eq(a.kind, VSR_ACT_REPLY);
    const struct vs_hdr_reply *r = (const struct vs_hdr_reply *)a.frame;
    ck_assert_uint_eq(r->f.command, VS_CMD_REPLY);
    ck_assert_uint_eq(r->f.size, VS_HEADER_SIZE + 3);
    ck_assert_uint_eq(r->op, 1);
    ck_assert_uint_eq(r->commit, 1);
    ck_assert_uint_eq(r->client.lo, 9);
    ck_assert_uint_eq(a.client.lo, 9);
    ck_assert_uint_eq(r->request, 1);
    ck_assert_uint_eq(r->operation, VS_OP_CREATE_STREAM);
    ck_assert_uint_eq(r->timestamp, 5000);
    ck_assert_uint_eq(r->request_checksum.lo, 0xabcdef);
    ck_assert_uint_eq(r->status, 0);
    ck_assert_mem_eq(a.body, "ok!", 3);
    ck_assert_int_eq(vsr_pop(v, &a), 0);
    ck_assert_uint_eq(vsr_stats(v)->commits, 1);
    vsr_destroy(v);
}
END_TEST

/* Action pointers survive inputs that free the engine's own references
 * (ASan would catch a use after free). */
START_TEST(test_action_lifetime)
{
    struct vs_vsr *v = solo_engine(4);
    struct vs_vsr_action a, c;
    uint8_t body[300];
    memset(body, 0x5a, sizeof(body));
    struct vs_hdr_request req = mk_request(3, 1, sizeof(body));
    ck_assert_int_eq(vsr_on_request(v, &req, body, sizeof(body), 1), 0);
    ck_assert_int_eq(vsr_pop(v, &a), 1);
    struct vs_u128 sum = a.frame->f.checksum;
    /* The whole life of the op while `a` is still held. */
    ck_assert_int_eq(vsr_on_journal_durable(v, 1, sum), 0);
    ck_assert_uint_eq(a.frame->f.size, VS_HEADER_SIZE + sizeof(body));
    ck_assert_mem_eq(a.body, body, sizeof(body));
    ck_assert_int_eq(vsr_pop(v, &c), 1); /* releases a */
    ck_assert_int_eq(c.kind, VSR_ACT_COMMIT);
    ck_assert_int_eq(vsr_on_commit_applied(v, 1, NULL, 0), 0);
    ck_assert_mem_eq(c.body, body, sizeof(body));
    ck_assert_int_eq(vsr_pop(v, &c), 1);
    ck_assert_int_eq(c.kind, VSR_ACT_REPLY);
    ck_assert_uint_eq(c.body_len, 0);
    vsr_destroy(v); /* with `c` still popped */
}
END_TEST

/* Pipelined prepares complete durably out of order; commits are still
 * strictly in op order and each op chains to the previous one. */
START_TEST(test_solo_pipeline_order)
{
    struct sim *s = sim_new(1, 11, NULL);
    s->r[0].hold_journal = 1;
    for (uint64_t c = 1; c <= 4; c++)
        ck_assert_int_eq(sim_request(s, 0, c, 1, VS_OP_CREATE_STREAM, &c, 8),
                         0);
    ck_assert_uint_eq(vsr_op(s->r[0].eng), 4);
    ck_assert_int_eq(sim_complete_journal(s, 0, 3), 0);
    ck_assert_int_eq(sim_complete_journal(s, 0, 2), 0);
    ck_assert_uint_eq(s->r[0].applied, 0); /* op 1 not durable yet */
    ck_assert_uint_eq(vsr_commit_max(s->r[0].eng), 0);
    ck_assert_uint_eq(s->replies_len, 0);
    ck_assert_int_eq(sim_complete_journal(s, 0, 1), 0);
    ck_assert_uint_eq(s->r[0].applied, 3);
    ck_assert_int_eq(sim_complete_journal(s, 0, 4), 0);
    ck_assert_uint_eq(s->r[0].applied, 4);
    ck_assert_uint_eq(s->replies_len, 4);
    for (size_t k = 0; k < 4; k++) {
        ck_assert_uint_eq(s->replies[k].op, k + 1);
        ck_assert_uint_eq(s->replies[k].client.lo, k + 1);
    }
    struct vs_u128 prev = {0, 0};
    uint64_t ts = 0;
    for (uint64_t op = 1; op <= 4; op++) {
        struct vs_hdr_prepare h;
        ck_assert(vsr_header(s->r[0].eng, op, &h));
        ck_assert(vs_u128_eq(h.parent, prev));
        ck_assert(vs_prepare_verify_identity(&h));
        ck_assert_uint_gt(h.timestamp, ts);
        ck_assert_uint_eq(h.commit, 0); /* commit_max when prepared */
        prev = h.f.checksum;
        ts = h.timestamp;
    }
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

START_TEST(test_solo_refusals)
{
    struct sim *s = sim_new(1, 12, NULL);
    s->r[0].hold_journal = 1;
    char b = 'x';
    ck_assert_int_eq(sim_request(s, 0, 1, 1, VS_OP_CREATE_STREAM, &b, 1), 0);
    /* One request per client until it is applied. */
    ck_assert_int_eq(sim_request(s, 0, 1, 2, VS_OP_CREATE_STREAM, &b, 1),
                     -EALREADY);
    ck_assert_int_eq(sim_request(s, 0, 2, 1, VS_OP_CREATE_STREAM, &b, 1), 0);
    ck_assert_int_eq(sim_request(s, 0, 3, 1, VS_OP_CREATE_STREAM, &b, 1), 0);
    ck_assert_int_eq(sim_request(s, 0, 4, 1, VS_OP_CREATE_STREAM, &b, 1), 0);
    /* pipeline_max = 4 */
    ck_assert_int_eq(sim_request(s, 0, 5, 1, VS_OP_CREATE_STREAM, &b, 1),
                     -EBUSY);
    ck_assert_uint_eq(vsr_op(s->r[0].eng), 4);

    /* Bad request shapes. */
    struct vs_hdr_request req = mk_request(6, 1, 10);
    ck_assert_int_eq(vsr_on_request(s->r[0].eng, &req, "0123456789", 9, 1),
                     -EMSGSIZE);
    static uint8_t big[4097];
    req = mk_request(6, 1, sizeof(big));
    ck_assert_int_eq(vsr_on_request(s->r[0].eng, &req, big, sizeof(big), 1),
                     -EINVAL);
    req = mk_request(6, 1, 0);
    req.operation = VS_OP_RESERVED;
    ck_assert_int_eq(vsr_on_request(s->r[0].eng, &req, NULL, 0, 1), -EINVAL);

    for (uint64_t op = 1; op <= 4; op++)
        ck_assert_int_eq(sim_complete_journal(s, 0, op), 0);
    ck_assert_uint_eq(s->r[0].applied, 4);
    ck_assert_int_eq(sim_request(s, 0, 1, 2, VS_OP_CREATE_STREAM, &b, 1), 0);
    ck_assert_int_eq(sim_request(s, 0, 5, 1, VS_OP_CREATE_STREAM, &b, 1), 0);
    ck_assert_uint_eq(vsr_op(s->r[0].eng), 6);
    /* The internal client 0 is never deduplicated. */
    ck_assert_int_eq(sim_request(s, 0, 0, 0, VS_OP_GENESIS, NULL, 0), 0);
    ck_assert_int_eq(sim_request(s, 0, 0, 0, VS_OP_GENESIS, NULL, 0), 0);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

START_TEST(test_solo_timestamps_monotonic)
{
    struct vs_vsr *v = solo_engine(8);
    static const uint64_t wall[] = {100, 50, 50, 400, 399};
    static const uint64_t want[] = {100, 101, 102, 400, 401};
    struct vs_vsr_action a;
    for (unsigned k = 0; k < 5; k++) {
        struct vs_hdr_request req = mk_request(k + 1, 1, 0);
        ck_assert_int_eq(vsr_on_request(v, &req, NULL, 0, wall[k]), 0);
        ck_assert_int_eq(vsr_pop(v, &a), 1);
        ck_assert_uint_eq(((const struct vs_hdr_prepare *)a.frame)->timestamp,
                          want[k]);
    }
    vsr_destroy(v);
}
END_TEST

/* Restart: committed ops are replayed through COMMIT actions whose bodies
 * the binding reads from its journal; the next prepare continues the
 * chain; a lost (never durable) op is gone; no reply is replayed. */
START_TEST(test_solo_restart_continues_chain)
{
    struct sim *s = sim_new(1, 13, NULL);
    for (uint64_t c = 1; c <= 6; c++) {
        char body[16];
        memset(body, (int)c, sizeof(body));
        ck_assert_int_eq(
            sim_request(s, 0, c, 1, VS_OP_CREATE_STREAM, body, sizeof(body)),
            0);
        ck_assert_int_eq(sim_run_until_applied(s, c, 10), 0);
    }
    s->r[0].hold_journal = 1;
    ck_assert_int_eq(sim_request(s, 0, 7, 1, VS_OP_CREATE_STREAM, "g", 1), 0);
    ck_assert_int_eq(sim_request(s, 0, 8, 1, VS_OP_CREATE_STREAM, "h", 1), 0);
    ck_assert_int_eq(sim_complete_journal(s, 0, 7), 0);
    ck_assert_uint_eq(s->r[0].applied, 7);
    uint64_t hash7 = s->r[0].sm_hash;
    struct vs_hdr_prepare h7;
    ck_assert(vsr_header(s->r[0].eng, 7, &h7));
    size_t replies = s->replies_len;

    sim_crash(s, 0); /* op 8 was never durable */
    s->r[0].hold_journal = 0;
    char why[160];
    ck_assert_int_eq(sim_restart(s, 0, why, sizeof(why)), 0);
    ck_assert_uint_eq(s->r[0].applied, 7);
    ck_assert_uint_eq(s->r[0].commits_replayed, 7);
    ck_assert_uint_eq(s->r[0].sm_hash, hash7);
    ck_assert_uint_eq(s->replies_len, replies); /* replay never replies */
    struct vs_vsr *v = s->r[0].eng;
    ck_assert_uint_eq(vsr_op(v), 7);
    ck_assert_uint_eq(vsr_commit_min(v), 7);

    ck_assert_int_eq(sim_request(s, 0, 8, 1, VS_OP_CREATE_STREAM, "H", 1), 0);
    struct vs_hdr_prepare h8;
    ck_assert(vsr_header(v, 8, &h8));
    ck_assert_uint_eq(h8.op, 8);
    ck_assert(vs_u128_eq(h8.parent, h7.f.checksum));
    ck_assert_uint_gt(h8.timestamp, h7.timestamp);
    ck_assert_uint_eq(h8.commit, 7);
    ck_assert_int_eq(sim_run_until_applied(s, 8, 10), 0);
    ck_assert_uint_eq(s->replies[s->replies_len - 1].op, 8);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* While recovered ops are being replayed the engine refuses new requests
 * (the caller's client table is not caught up yet). */
START_TEST(test_solo_refuses_during_replay)
{
    struct sim *s = sim_new(1, 14, NULL);
    for (uint64_t c = 1; c <= 3; c++)
        ck_assert_int_eq(sim_request(s, 0, c, 1, VS_OP_CREATE_STREAM, "a", 1),
                         0);
    ck_assert_int_eq(sim_run_until_applied(s, 3, 10), 0);
    struct vs_hdr_prepare h[3];
    for (uint64_t op = 1; op <= 3; op++)
        h[op - 1] = s->r[0].journal[op].h;

    struct vs_vsr_options o = s->opt;
    o.headers = h;
    o.header_count = 3;
    o.commit_min = 1; /* a snapshot at op 1 */
    struct vs_vsr *v = NULL;
    ck_assert_int_eq(vsr_create(&o, &v, NULL, 0), 0);
    struct vs_hdr_request req = mk_request(9, 1, 0);
    ck_assert_int_eq(vsr_on_request(v, &req, NULL, 0, 1), -EAGAIN);
    struct vs_vsr_action a;
    ck_assert_int_eq(vsr_pop(v, &a), 1);
    ck_assert_int_eq(a.kind, VSR_ACT_COMMIT);
    ck_assert_uint_eq(a.op, 2);
    ck_assert_ptr_null(a.body); /* read it from the journal */
    ck_assert_uint_eq(a.body_len, 1);
    ck_assert_int_eq(vsr_pop(v, &a), 0); /* one at a time */
    ck_assert_int_eq(vsr_on_commit_applied(v, 2, NULL, 0), 0);
    ck_assert_int_eq(vsr_on_request(v, &req, NULL, 0, 1), -EAGAIN);
    ck_assert_int_eq(vsr_pop(v, &a), 1);
    ck_assert_uint_eq(a.op, 3);
    ck_assert_int_eq(vsr_on_commit_applied(v, 3, NULL, 0), 0);
    ck_assert_int_eq(vsr_pop(v, &a), 0); /* no replies for replays */
    ck_assert_int_eq(vsr_on_request(v, &req, NULL, 0, 1), 0);
    vsr_destroy(v);
    sim_free(s);
}
END_TEST

START_TEST(test_create_refuses_bad_recovery)
{
    struct sim *s = sim_new(1, 15, NULL);
    for (uint64_t c = 1; c <= 4; c++)
        ck_assert_int_eq(sim_request(s, 0, c, 1, VS_OP_CREATE_STREAM, "q", 1),
                         0);
    ck_assert_int_eq(sim_run_until_applied(s, 4, 10), 0);
    struct vs_hdr_prepare good[4], h[4];
    for (uint64_t op = 1; op <= 4; op++)
        good[op - 1] = s->r[0].journal[op].h;
    struct vs_vsr_options o = s->opt;
    o.headers = h;
    o.header_count = 4;
    struct vs_vsr *v = NULL;
    char why[160];

    memcpy(h, good, sizeof(h));
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), 0);
    vsr_destroy(v);
    v = NULL;

    /* identity */
    memcpy(h, good, sizeof(h));
    h[2].request ^= 1;
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_null(v);
    ck_assert_ptr_nonnull(strstr(why, "identity"));
    /* broken chain, re-sealed so the identity is valid */
    memcpy(h, good, sizeof(h));
    h[2].parent.lo ^= 1;
    h[2].f.checksum = vs_prepare_identity(&h[2]);
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "chain"));
    /* gap between state and journal */
    memcpy(h, good, sizeof(h));
    o.headers = &h[2];
    o.header_count = 2;
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "gap"));
    o.headers = h;
    o.header_count = 4;
    /* another group */
    memcpy(h, good, sizeof(h));
    h[0].group = 5;
    h[0].f.checksum = vs_prepare_identity(&h[0]);
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "group"));
    /* unknown release */
    memcpy(h, good, sizeof(h));
    h[3].f.release = 99;
    h[3].f.checksum = vs_prepare_identity(&h[3]);
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "release"));
    /* superblock commit_max ahead of a one-replica journal */
    memcpy(h, good, sizeof(h));
    o.durable.commit_max = 9;
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), -EINVAL);
    o.durable.commit_max = 0;
    /* log_view > view */
    o.durable.log_view = 1;
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), -EINVAL);
    o.durable.log_view = 0;
    /* one replica never recovers through peers */
    o.recovering = 1;
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), -EINVAL);
    o.recovering = 0;
    /* empty journal beside a checkpoint */
    o.header_count = 0;
    o.durable.checkpoint_op = 3;
    o.commit_min = 3;
    ck_assert_int_eq(vsr_create(&o, &v, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_null(v);
    sim_free(s);
}
END_TEST

/* The journal never runs past checkpoint_op + slots; a checkpoint's
 * superblock pairing frees room only once it is durable; a restart after
 * it replays only ops above the snapshot. */
START_TEST(test_checkpoint_journal_full)
{
    struct vs_vsr_options o;
    sim_default_options(&o, 1);
    o.journal_slots = 8;
    struct sim *s = sim_new(1, 16, &o);
    for (uint64_t c = 1; c <= 8; c++) {
        ck_assert_int_eq(sim_request(s, 0, c, 1, VS_OP_CREATE_STREAM, &c, 8),
                         0);
        ck_assert_int_eq(sim_run_until_applied(s, c, 10), 0);
    }
    ck_assert_int_eq(sim_request(s, 0, 9, 1, VS_OP_CREATE_STREAM, "z", 1),
                     -ENOSPC);
    s->r[0].hold_superblock = 1;
    ck_assert_int_eq(vsr_checkpoint(s->r[0].eng, 9, vs_checksum("", 0)),
                     -EINVAL); /* beyond what is applied */
    ck_assert_int_eq(sim_checkpoint(s, 0), 0);
    ck_assert_int_eq(sim_checkpoint(s, 0), -EBUSY);
    ck_assert(s->r[0].sb_pending);
    ck_assert_uint_eq(s->r[0].sb_writing.checkpoint_op, 8);
    ck_assert_uint_eq(s->r[0].sb_writing.commit_max, 8);
    ck_assert_int_eq(sim_request(s, 0, 9, 1, VS_OP_CREATE_STREAM, "z", 1),
                     -ENOSPC); /* not durable yet */
    struct vs_vsr_persist d;
    vsr_durable(s->r[0].eng, &d);
    ck_assert_uint_eq(d.checkpoint_op, 0);
    ck_assert_int_eq(sim_complete_superblock(s, 0), 0);
    vsr_durable(s->r[0].eng, &d);
    ck_assert_uint_eq(d.checkpoint_op, 8);
    ck_assert_uint_eq(s->r[0].journal_first, 8); /* drained below 8 */
    for (uint64_t c = 9; c <= 12; c++) {
        ck_assert_int_eq(sim_request(s, 0, c, 1, VS_OP_CREATE_STREAM, &c, 8),
                         0);
        ck_assert_int_eq(sim_run_until_applied(s, c, 10), 0);
    }
    uint64_t hash = s->r[0].sm_hash;
    sim_crash(s, 0);
    s->r[0].hold_superblock = 0;
    ck_assert_int_eq(sim_restart(s, 0, NULL, 0), 0);
    ck_assert_uint_eq(s->r[0].applied, 12);
    ck_assert_uint_eq(s->r[0].commits_replayed, 4); /* 9..12 */
    ck_assert_uint_eq(s->r[0].sm_hash, hash);
    ck_assert_int_eq(sim_request(s, 0, 13, 1, VS_OP_CREATE_STREAM, "n", 1), 0);
    ck_assert_int_eq(sim_run_until_applied(s, 13, 10), 0);
    ck_assert_clean(s);
    sim_free(s);
}
END_TEST

/* Hostile frames: every length and garbage get a typed verdict. */
START_TEST(test_hostile_frames)
{
    struct vs_vsr *v = solo_engine(4);
    uint8_t buf[600];
    uint64_t x = 0x1234567;
    for (unsigned round = 0; round < 2000; round++) {
        for (size_t k = 0; k < sizeof(buf); k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[k] = (uint8_t)x;
        }
        size_t len = (size_t)(x % sizeof(buf));
        struct vs_header *h = (struct vs_header *)buf;
        if (round % 2 && len >= VS_HEADER_SIZE) {
            h->f.size = (uint32_t)len; /* get past the length check */
            h->f.command = (uint8_t)(round % 32);
        }
        enum vsr_verdict r = vsr_on_message(v, buf, len);
        ck_assert_int_ne(r, VSR_ACCEPTED);
        ck_assert_int_lt(r, VSR_VERDICT_COUNT);
        ck_assert_str_ne(vsr_verdict_name(r), "unknown");
    }
    ck_assert_int_eq(vsr_on_message(v, buf, 10), VSR_DROP_SHORT);
    ck_assert_uint_gt(vsr_stats(v)->verdicts[VSR_DROP_SHORT], 0);
    struct vs_vsr_action a;
    ck_assert_int_eq(vsr_pop(v, &a), 0);
    ck_assert_uint_eq(vsr_op(v), 0);
    vsr_destroy(v);
}
END_TEST

static Suite *
vsr_engine_suite(void)
{
    Suite *s = suite_create("vsr_engine");
    TCase *tc = tcase_create("solo");
    tcase_add_test(tc, test_quorum_table);
    tcase_add_test(tc, test_solo_commit_path);
    tcase_add_test(tc, test_action_lifetime);
    tcase_add_test(tc, test_solo_pipeline_order);
    tcase_add_test(tc, test_solo_refusals);
    tcase_add_test(tc, test_solo_timestamps_monotonic);
    tcase_add_test(tc, test_solo_restart_continues_chain);
    tcase_add_test(tc, test_solo_refuses_during_replay);
    tcase_add_test(tc, test_create_refuses_bad_recovery);
    tcase_add_test(tc, test_checkpoint_journal_full);
    tcase_add_test(tc, test_hostile_frames);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(vsr_engine_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
