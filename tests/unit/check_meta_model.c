/*
 * tests/unit/check_meta_model.c - model-based test of the metadata state
 * machine. Thousands of random op sequences (fixed seeds) run against
 * meta_apply on two independent instances and against a deliberately
 * simple reference model (tests/model/meta_model.h: its own arrays and
 * rules, nothing from shard/meta/): the SUT is only driven through the op
 * encoder and observed through lookups.
 * After every op: equal result codes, the snapshot round-trips
 * (encode(decode(encode(s))) == encode(s)), both instances encode to the
 * same bytes, and every group with members has each partition owned by
 * exactly one member. After every sequence: equal observable state.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "shard/meta/lookup.h"
#include "shard/meta/snapshot_codec.h"
#include "meta_helpers.h"
#include "tests/model/meta_model.h"

/* --------------------------------------------------------- generation */

static uint64_t rs;

static uint32_t
rnd(uint32_t n)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs % n);
}

static const char *snames[] = {
    "a", "b", "c", "d", "e", "f", "g", "h", "i", "", "\xc3\xa9t\xc3\xa9"};
static const char *unames[] = {"ann", "bob", "cyd", "dee", "eve", "fay",
                               "gus", "hal", "ab",  "ivy", "jon"};

static void
gen(struct gen_op *o, const struct model *m)
{
    memset(o, 0, sizeof(*o));
    static const int weights[K_COUNT] = {6, 1, 1, 1, 6, 1, 2, 2,
                                         3, 1, 2, 3, 1, 4, 2};
    int total = 0;
    for (int k = 0; k < K_COUNT; k++)
        total += weights[k];
    int pick = (int)rnd((uint32_t)total);
    o->kind = 0;
    while (pick >= weights[o->kind])
        pick -= weights[o->kind++];
    o->actor = rnd(5) < 3 ? 0 : rnd(M_USERS);
    (void)m;
    o->s = rnd(5) ? (int)rnd(3) : (int)rnd(M_STREAMS + 1);
    o->t = rnd(4) ? (int)rnd(2) : (int)rnd(4);
    o->g = (int)rnd(2);
    o->by_name = rnd(3) == 0;
    o->client = 1 + rnd(M_CLIENTS);
    o->count = rnd(4);
    const char *n = snames[rnd(sizeof(snames) / sizeof(snames[0]))];
    if (o->kind == K_CREATE_USER)
        n = unames[rnd(sizeof(unames) / sizeof(unames[0]))];
    strcpy(o->name, n);
    if (o->kind == K_UPDATE_STREAM)
        strcpy(o->name + 8, snames[rnd(sizeof(snames) / sizeof(snames[0]))]);
    if (o->kind == K_CREATE_TOPIC)
        o->count = rnd(6);
    o->has_perms = rnd(5) != 0;
    o->global = 0;
    for (int b = 0; b < 10; b++)
        if (rnd(10) < 3)
            o->global |= (uint16_t)(1u << b);
    o->ps = rnd(2) ? (int)rnd(M_STREAMS) : -1;
    o->psb = (int)rnd(64);
    o->pt = rnd(2) ? (int)rnd(4) : -1;
    o->ptb = (int)rnd(16);
}

static size_t
perms_of(const struct gen_op *o, uint8_t *b)
{
    size_t n = 0;
    for (int i = 0; i < 10; i++)
        b[n++] = (o->global >> i) & 1;
    b[n++] = o->ps >= 0;
    if (o->ps >= 0) {
        vs_store_u32(b + n, (uint32_t)o->ps);
        n += 4;
        for (int i = 0; i < 6; i++)
            b[n++] = (o->psb >> i) & 1;
        b[n++] = o->pt >= 0;
        if (o->pt >= 0) {
            vs_store_u32(b + n, (uint32_t)o->pt);
            n += 4;
            for (int i = 0; i < 4; i++)
                b[n++] = (o->ptb >> i) & 1;
            b[n++] = 0;
        }
        b[n++] = 0;
    }
    return n;
}

/* Translates a generated op into the SUT's op encoding. */
static void
to_meta(const struct gen_op *o, struct meta_op *op, uint8_t *pb)
{
    static const unsigned opc[K_COUNT] = {
        VS_OP_CREATE_STREAM,         VS_OP_DELETE_STREAM,
        VS_OP_UPDATE_STREAM,         VS_OP_PURGE_STREAM,
        VS_OP_CREATE_TOPIC,          VS_OP_DELETE_TOPIC,
        VS_OP_CREATE_PARTITIONS,     VS_OP_DELETE_PARTITIONS,
        VS_OP_CREATE_USER,           VS_OP_DELETE_USER,
        VS_OP_UPDATE_PERMISSIONS,    VS_OP_CREATE_CONSUMER_GROUP,
        VS_OP_DELETE_CONSUMER_GROUP, VS_OP_JOIN_CONSUMER_GROUP,
        VS_OP_LEAVE_CONSUMER_GROUP,
    };
    meta_op_init(op, opc[o->kind]);
    if (o->by_name && o->name[0] &&
        (o->kind == K_DELETE_STREAM || o->kind == K_UPDATE_STREAM ||
         o->kind == K_PURGE_STREAM))
        meta_ident_name(&op->stream, o->name, strlen(o->name));
    else
        meta_ident_id(&op->stream, (uint32_t)o->s);
    meta_ident_id(&op->topic, (uint32_t)o->t);
    meta_ident_id(&op->group, (uint32_t)o->g);
    meta_ident_id(&op->user, (uint32_t)o->s);
    op->count = o->count;
    th_default_opts(&op->opts);
    const char *nm = o->kind == K_UPDATE_STREAM ? o->name + 8 : o->name;
    meta_op_set_name(op, nm, strlen(nm));
    if (o->kind == K_CREATE_USER) {
        meta_op_set_secret(op, "$argon2id$v=19$m=8,t=1,p=1$x$y", 30);
        op->has_status = 1;
        op->status = 1;
    }
    if (o->kind == K_CREATE_USER || o->kind == K_UPDATE_PERMS) {
        op->has_perms = (uint8_t)o->has_perms;
        if (o->has_perms) {
            op->perms_len = (uint32_t)perms_of(o, pb);
            op->perms = pb;
        }
    }
}

/* m_apply on a by-name stream op: the model finds the stream by name only
 * when the op addresses it by name (same rule as to_meta). */
static void
fix_by_name(struct gen_op *o)
{
    if (!(o->by_name && o->name[0] &&
          (o->kind == K_DELETE_STREAM || o->kind == K_UPDATE_STREAM ||
           o->kind == K_PURGE_STREAM)))
        o->by_name = 0;
}

/* ----------------------------------------------------------- compare */

static void
compare(const struct model *m, const void *st)
{
    for (int s = 0; s < M_STREAMS; s++) {
        const struct meta_stream *ss = meta_stream_by_id(st, (uint32_t)s);
        ck_assert_int_eq(ss != NULL, m->s[s].live);
        if (!ss)
            continue;
        ck_assert_uint_eq(ss->name_len, strlen(m->s[s].name));
        ck_assert_int_eq(memcmp(ss->name, m->s[s].name, ss->name_len), 0);
        uint32_t nt = 0;
        for (int t = 0; t < M_TPS; t++) {
            const struct m_topic *mt = &m->s[s].t[t];
            const struct meta_topic *tt =
                meta_topic_by_id(st, (uint32_t)s, (uint32_t)t);
            ck_assert_int_eq(tt != NULL, mt->live);
            if (!tt)
                continue;
            nt++;
            ck_assert_str_eq(tt->name, mt->name);
            ck_assert_uint_eq(tt->partitions_count, mt->parts);
            for (int g = 0; g < M_GPT; g++) {
                const struct meta_group *gg =
                    meta_group_by_id(st, (uint32_t)s, (uint32_t)t, (uint32_t)g);
                ck_assert_int_eq(gg != NULL, mt->g[g].live);
                if (!gg)
                    continue;
                ck_assert_str_eq(gg->name, mt->g[g].name);
                ck_assert_uint_eq(gg->members_count,
                                  (uint32_t)mt->g[g].nmembers);
                ck_assert_uint_eq(gg->generation, mt->g[g].gen);
                for (uint64_t c = 1; c <= M_CLIENTS; c++)
                    ck_assert_int_eq(meta_member_by_client(
                                         st, (uint32_t)s, (uint32_t)t,
                                         (uint32_t)g, th_client(c)) != NULL,
                                     mt->g[g].members[c]);
            }
        }
        ck_assert_uint_eq(ss->topics_count, nt);
    }
    for (int u = 0; u < M_USERS; u++) {
        const struct meta_user *uu = meta_user_by_id(st, (uint32_t)u);
        ck_assert_int_eq(uu != NULL, m->u[u].live);
        if (!uu)
            continue;
        ck_assert_str_eq(uu->username, m->u[u].name);
        ck_assert_uint_eq(uu->has_perms, (uint8_t)m->u[u].has_perms);
        ck_assert_uint_eq(uu->global, m->u[u].global);
        for (int s = 0; s < M_STREAMS; s++) {
            const struct meta_sgrant *g =
                meta_sgrant_get(st, (uint32_t)u, (uint32_t)s);
            ck_assert_int_eq(g != NULL, m->u[u].sg[s] >= 0);
            if (g)
                ck_assert_int_eq(g->bits, m->u[u].sg[s]);
            for (int t = 0; t < 4; t++) {
                const struct meta_tgrant *tg =
                    meta_tgrant_get(st, (uint32_t)u, (uint32_t)s, (uint32_t)t);
                ck_assert_int_eq(tg != NULL, m->u[u].tg[s][t] >= 0);
            }
        }
    }
}

/* Every group with members owns each partition exactly once. */
static void
check_assignments(const void *st)
{
    for (uint32_t s = 0; s < M_STREAMS; s++)
        for (uint32_t t = 0; t < M_TPS; t++) {
            const struct meta_topic *tp = meta_topic_by_id(st, s, t);
            if (!tp)
                continue;
            for (uint32_t g = 0; g < tp->next_group_id; g++) {
                const struct meta_group *gg = meta_group_by_id(st, s, t, g);
                if (!gg)
                    continue;
                for (uint32_t p = 0; p < tp->partitions_count; p++) {
                    const struct meta_assign *a =
                        meta_assign_get(st, s, t, g, p);
                    ck_assert_int_eq(a != NULL, gg->members_count > 0);
                    if (a)
                        ck_assert_ptr_nonnull(
                            meta_member_by_id(st, s, t, g, a->owner));
                }
            }
        }
}

static void
assert_same(const struct vs_wbuf *a, const struct vs_wbuf *b)
{
    ck_assert_uint_eq(a->len, b->len);
    ck_assert_int_eq(memcmp(a->data, b->data, a->len), 0);
}

START_TEST(test_model)
{
    struct meta_caps caps;
    th_caps(&caps);
    struct mm_caps mcaps = {
        .streams = caps.streams,
        .topics = caps.topics,
        .partitions = caps.partitions,
        .groups = caps.groups,
        .members = caps.members,
        .users = caps.users,
        .assignments = caps.assignments,
    };
    void *a = th_state(&caps);
    void *b = th_state(&caps);
    void *d = th_state(&caps);
    struct vs_wbuf ea, eb, ed;
    vs_wbuf_init(&ea);
    vs_wbuf_init(&eb);
    vs_wbuf_init(&ed);
    struct model *m = calloc(1, sizeof(*m));
    struct meta_op *op = malloc(sizeof(*op));
    uint8_t pb[64];
    int seeds = 1000, ops = 60;
    uint64_t nonzero = 0;
    for (int seed = 0; seed < seeds; seed++) {
        rs = 0x9e3779b97f4a7c15ull ^ ((uint64_t)(seed + 1) * 0x100000001b3ull);
        meta_state_reset(a, &caps);
        meta_state_reset(b, &caps);
        mm_init(m, &mcaps);
        struct th_run ra, rb;
        th_run_init(&ra);
        th_run_init(&rb);
        ck_assert_uint_eq(th_genesis(a, &ra), 0);
        ck_assert_uint_eq(th_genesis(b, &rb), 0);
        for (int i = 0; i < ops; i++) {
            struct gen_op o;
            gen(&o, m);
            fix_by_name(&o);
            to_meta(&o, op, pb);
            uint64_t client =
                (o.kind == K_JOIN || o.kind == K_LEAVE) ? o.client : 0;
            uint32_t want = mm_apply(m, &o);
            uint32_t got =
                th_apply_full(a, &ra, o.actor, th_client(client), 0, op);
            uint32_t got_b =
                th_apply_full(b, &rb, o.actor, th_client(client), 0, op);
            ck_assert_msg(got == want,
                          "seed %d op %d kind %d actor %u: sut %u model %u",
                          seed, i, o.kind, o.actor, got, want);
            ck_assert_uint_eq(got_b, got);
            nonzero += got != 0;
            vs_wbuf_reset(&ea);
            vs_wbuf_reset(&eb);
            vs_wbuf_reset(&ed);
            meta_snapshot_encode(a, NULL, &ea);
            meta_snapshot_encode(b, NULL, &eb);
            assert_same(&ea, &eb);
            ck_assert_int_eq(meta_snapshot_decode(ea.data, ea.len, d, NULL),
                             META_SNAP_OK);
            meta_snapshot_encode(d, NULL, &ed);
            assert_same(&ea, &ed);
            check_assignments(a);
        }
        compare(m, a);
        compare(m, d);
        meta_result_fini(&ra.res);
        meta_result_fini(&rb.res);
    }
    /* the sequences exercised both successes and refusals */
    ck_assert_uint_gt(nonzero, (uint64_t)seeds * ops / 10);
    ck_assert_uint_lt(nonzero, (uint64_t)seeds * ops * 9 / 10);
    free(op);
    free(m);
    vs_wbuf_fini(&ea);
    vs_wbuf_fini(&eb);
    vs_wbuf_fini(&ed);
    free(a);
    free(b);
    free(d);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("meta_model");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_model);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
