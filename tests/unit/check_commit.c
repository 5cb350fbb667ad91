/*
 * tests/unit/check_commit.c - shard 0's commit path (shard/zero/commit.h)
 * driven in-process: real files in a temp data dir, a left-right region
 * in anonymous shared memory, replies captured instead of sent.
 * Covers: genesis (root user with a verifiable hash), byte-exact and
 * deterministic replies, cached duplicates, every client-table eviction,
 * Logout, restart continuity (op numbers, hash chain, cached replies),
 * checkpoint (snapshot + superblock + drain) and restart from snapshot +
 * tail, ENOSPC on the journal append.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errors.h"
#include "common/layout.h"
#include "shard/zero/commit_frames.h"
#include "shard/meta/lookup.h"
#include "shard/meta/secrets.h"
#include "shard/storage/io.h"
#include "shard/storage/journal.h"
#include "shard/storage/superblock.h"
#include "shard/storage/vsr_state.h"
#include "tests/unit/commit_fixture.h"

static const struct vs_u128 CLIENT_A = {0x1111, 0xaaaa};
static const struct vs_u128 CLIENT_B = {0x2222, 0xbbbb};

/* Boots a fresh node, runs genesis (iggy/iggy). */
static void
boot_genesis(struct fx *f, struct vs_sio *io)
{
    char err[512];
    fx_init(f);
    f->io = io;
    ck_assert_msg(fx_boot(f, err, sizeof(err)) == 0, "boot: %s", err);
    ck_assert_int_eq(commit_genesis_needed(f->c), 1);
    ck_assert_msg(commit_genesis(f->c, err, sizeof(err)) == 0, "genesis: %s",
                  err);
}

static void
reboot(struct fx *f)
{
    char err[512];
    fx_stop(f);
    ck_assert_msg(fx_boot(f, err, sizeof(err)) == 0, "reboot: %s", err);
}

/* Registers `client` as root; returns the session (= the op). */
static uint64_t
register_root(struct fx *f, struct vs_u128 client)
{
    fx_clear_sent(f);
    ck_assert_int_eq(fx_register(f, client, 0), 0);
    ck_assert_uint_eq(f->nsent, 1);
    const struct fx_sent *s = fx_last(f);
    ck_assert_uint_eq(s->h.kind, FWD_REPLY);
    ck_assert_uint_eq(s->h.flags, FWD_F_BIND);
    ck_assert_uint_eq(s->h.user_id, 0);
    ck_assert_uint_eq(s->h.session, vsr_op(commit_engine(f->c)));
    return s->h.session;
}

static const struct vs_hdr_reply *
reply_of(const struct fx_sent *s)
{
    ck_assert_uint_ge(s->len, VS_HEADER_SIZE);
    return (const struct vs_hdr_reply *)s->frame;
}

/* ------------------------------------------------------------ genesis */

START_TEST(test_genesis_default_root)
{
    struct fx f;
    boot_genesis(&f, NULL);
    const void *st = commit_state(f.c);
    const struct meta_user *u = meta_user_by_id(st, 0);
    ck_assert_ptr_nonnull(u);
    ck_assert_str_eq(u->username, "iggy");
    ck_assert_int_eq(u->status, 1);
    ck_assert_int_eq(meta_secrets_init(), 0);
    ck_assert_int_eq(meta_password_verify(u->pw_hash, "iggy", 4), 0);
    ck_assert_int_eq(meta_password_verify(u->pw_hash, "iggx", 4), -EACCES);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), 1);
    ck_assert_int_eq(commit_genesis_needed(f.c), 0);
    char err[256];
    ck_assert_int_eq(commit_genesis(f.c, err, sizeof(err)), -EALREADY);
    /* The journal holds the hash, never the password. */
    const struct vs_hdr_prepare *h = wal_header(commit_journal(f.c), 1);
    ck_assert_ptr_nonnull(h);
    ck_assert_uint_eq(h->operation, VS_OP_GENESIS);
    ck_assert_uint_eq(h->client.lo | h->client.hi, 0);
    /* genesis answers nobody */
    ck_assert_uint_eq(f.nsent, 0);
    /* after a restart the root user is still there, genesis not needed */
    reboot(&f);
    ck_assert_int_eq(commit_genesis_needed(f.c), 0);
    ck_assert_ptr_nonnull(meta_user_by_id(commit_state(f.c), 0));
    fx_fini(&f);
}
END_TEST

START_TEST(test_genesis_configured_and_generated)
{
    char err[512];
    struct fx f;
    fx_init(&f);
    fx_config(&f, "with_default_root_credentials", "false");
    fx_config(&f, "root_username", "admin");
    fx_config(&f, "root_password", "s3cret-pass");
    ck_assert_msg(fx_boot(&f, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(commit_genesis(f.c, err, sizeof(err)), 0);
    const struct meta_user *u = meta_user_by_id(commit_state(f.c), 0);
    ck_assert_ptr_nonnull(u);
    ck_assert_str_eq(u->username, "admin");
    ck_assert_int_eq(meta_password_verify(u->pw_hash, "s3cret-pass", 11), 0);
    ck_assert_int_eq(meta_password_verify(u->pw_hash, "iggy", 4), -EACCES);
    fx_fini(&f);

    /* No password configured: a random one (never "" nor "iggy"). */
    fx_init(&f);
    fx_config(&f, "with_default_root_credentials", "false");
    ck_assert_msg(fx_boot(&f, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(commit_genesis(f.c, err, sizeof(err)), 0);
    u = meta_user_by_id(commit_state(f.c), 0);
    ck_assert_ptr_nonnull(u);
    ck_assert_str_eq(u->username, "iggy");
    ck_assert_int_eq(strncmp(u->pw_hash, "$argon2id$", 10), 0);
    ck_assert_int_eq(meta_password_verify(u->pw_hash, "iggy", 4), -EACCES);
    ck_assert_int_eq(meta_password_verify(u->pw_hash, "", 0), -EACCES);
    fx_fini(&f);

    fx_fini(&f);
}
END_TEST

/* ------------------------------------------------------------ replies */

START_TEST(test_register_and_create_reply_bytes)
{
    struct fx f;
    boot_genesis(&f, NULL);
    uint64_t session = register_root(&f, CLIENT_A);
    ck_assert_uint_eq(session, 2);

    /* Register reply: result-framed, user 0, session = op, protocol,
     * server version; header as iggy-client-protocol.md §3. */
    const struct fx_sent *s = fx_last(&f);
    ck_assert_uint_eq(s->dst, FX_WORKER_SLOT);
    ck_assert_uint_eq(s->h.worker_slot, FX_WORKER_SLOT);
    ck_assert_uint_eq(s->h.worker_incarnation, FX_INCARNATION);
    ck_assert_uint_eq(s->h.conn_id, f.conn);
    ck_assert(vs_u128_eq(s->h.client, CLIENT_A));
    ck_assert_uint_eq(s->h.payload_len, s->len);
    const char *ver = META_SERVER_VERSION;
    size_t vlen = strlen(ver);
    ck_assert_uint_eq(s->len, VS_HEADER_SIZE + 4 + 4 + 8 + 4 + 1 + vlen);
    const uint8_t *b = s->frame + VS_HEADER_SIZE;
    ck_assert_uint_eq(vs_load_u32(b), 0);
    ck_assert_uint_eq(vs_load_u32(b + 4), 0);
    ck_assert_uint_eq(vs_load_u64(b + 8), 2);
    ck_assert_uint_eq(vs_load_u32(b + 16), META_PROTOCOL_VERSION);
    ck_assert_uint_eq(b[20], vlen);
    ck_assert_int_eq(memcmp(b + 21, ver, vlen), 0);

    /* Expected header, field by field, from the prepare in the WAL. */
    const struct vs_hdr_prepare *p = wal_header(commit_journal(f.c), 2);
    ck_assert_ptr_nonnull(p);
    struct vs_hdr_reply want;
    memset(&want, 0, sizeof(want));
    vs_config_cluster_id(&f.cfg, &want.f.cluster.lo, &want.f.cluster.hi);
    want.f.size = s->len;
    want.f.command = VS_CMD_REPLY;
    want.client = CLIENT_A;
    want.request_checksum = p->request_checksum;
    want.op = 2;
    want.commit = 2;
    want.timestamp = p->timestamp;
    want.request = 0;
    want.operation = VS_OP_REGISTER;
    ck_assert_int_eq(memcmp(s->frame, &want, sizeof(want)), 0);

    /* CreateStream: [0 u32] + the stream record; operation 128 echoed. */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, session, 1, "orders"), 0);
    ck_assert_uint_eq(f.nsent, 1);
    s = fx_last(&f);
    ck_assert_uint_eq(s->h.flags, 0);
    const struct vs_hdr_reply *r = reply_of(s);
    ck_assert_uint_eq(r->f.command, VS_CMD_REPLY);
    ck_assert_uint_eq(r->f.size, s->len);
    ck_assert_uint_eq(r->f.release, 0);
    ck_assert_uint_eq(r->op, 3);
    ck_assert_uint_eq(r->commit, 3);
    ck_assert_uint_eq(r->request, 1);
    ck_assert_uint_eq(r->operation, VS_OP_CREATE_STREAM);
    ck_assert_uint_eq(r->status, 0);
    ck_assert(vs_u128_eq(r->client, CLIENT_A));
    ck_assert(vs_u128_is_zero(r->f.checksum));
    p = wal_header(commit_journal(f.c), 3);
    ck_assert(vs_u128_eq(r->request_checksum, p->request_checksum));
    ck_assert(!vs_u128_is_zero(r->request_checksum));
    ck_assert_uint_eq(r->timestamp, p->timestamp);
    ck_assert_uint_gt(s->len, VS_HEADER_SIZE + 4);
    ck_assert_uint_eq(vs_load_u32(s->frame + VS_HEADER_SIZE), 0);
    /* read your writes: published before answered */
    ck_assert_uint_eq(lr_published_op(&f.lr), 3);
    ck_assert_ptr_nonnull(meta_stream_by_name(commit_state(f.c), "orders", 6));

    /* An apply-time refusal: [1][0][1012], still a committed op. */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, session, 2, "orders"), 0);
    s = fx_last(&f);
    ck_assert_uint_eq(s->len, VS_HEADER_SIZE + 12);
    ck_assert_uint_eq(vs_load_u32(s->frame + VS_HEADER_SIZE), 1);
    ck_assert_uint_eq(vs_load_u32(s->frame + VS_HEADER_SIZE + 4), 0);
    ck_assert_uint_eq(vs_load_u32(s->frame + VS_HEADER_SIZE + 8),
                      VS_E_STREAM_NAME_ALREADY_EXISTS);
    ck_assert_uint_eq(reply_of(s)->op, 4);
    fx_fini(&f);
}
END_TEST

/* Two nodes fed the same inputs answer with the same bytes. */
START_TEST(test_replies_deterministic)
{
    struct fx a, b;
    boot_genesis(&a, NULL);
    boot_genesis(&b, NULL);
    /* same cluster name, same fake clock, different dirs */
    uint64_t sa = register_root(&a, CLIENT_A);
    uint64_t sb = register_root(&b, CLIENT_A);
    ck_assert_uint_eq(sa, sb);
    ck_assert_uint_eq(a.sent[0].len, b.sent[0].len);
    ck_assert_int_eq(memcmp(a.sent[0].frame, b.sent[0].frame, a.sent[0].len),
                     0);
    for (uint64_t req = 1; req <= 4; req++) {
        char name[16];
        snprintf(name, sizeof(name), "s%llu", (unsigned long long)req);
        fx_clear_sent(&a);
        fx_clear_sent(&b);
        ck_assert_int_eq(fx_create_stream(&a, CLIENT_A, sa, req, name), 0);
        ck_assert_int_eq(fx_create_stream(&b, CLIENT_A, sb, req, name), 0);
        ck_assert_uint_eq(a.nsent, 1);
        ck_assert_uint_eq(b.nsent, 1);
        ck_assert_uint_eq(a.sent[0].len, b.sent[0].len);
        ck_assert_int_eq(
            memcmp(a.sent[0].frame, b.sent[0].frame, a.sent[0].len), 0);
    }
    fx_fini(&a);
    fx_fini(&b);
}
END_TEST

/* ------------------------------------------------------ client table */

START_TEST(test_duplicate_cached)
{
    struct fx f;
    boot_genesis(&f, NULL);
    uint64_t session = register_root(&f, CLIENT_A);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, session, 1, "dup"), 0);
    uint32_t len = fx_last(&f)->len;
    uint8_t *first = vs_xmalloc(len);
    memcpy(first, fx_last(&f)->frame, len);
    uint64_t head = vsr_op(commit_engine(f.c));

    for (int i = 0; i < 3; i++) {
        fx_clear_sent(&f);
        ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, session, 1, "dup"), 0);
        ck_assert_uint_eq(f.nsent, 1);
        ck_assert_uint_eq(fx_last(&f)->len, len);
        ck_assert_int_eq(memcmp(fx_last(&f)->frame, first, len), 0);
    }
    /* never executed twice */
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head);
    ck_assert_uint_eq(commit_stats(f.c)->duplicates, 3);
    ck_assert_uint_eq(meta_hdr_c(commit_state(f.c))->count[META_TAB_STREAM], 1);
    free(first);
    fx_fini(&f);
}
END_TEST

static void
assert_eviction(struct fx *f, struct vs_u128 client, uint8_t reason)
{
    ck_assert_uint_eq(f->nsent, 1);
    const struct fx_sent *s = fx_last(f);
    ck_assert_uint_eq(s->h.kind, FWD_REPLY);
    ck_assert_uint_eq(s->h.flags, FWD_F_UNBIND);
    ck_assert_uint_eq(s->len, VS_HEADER_SIZE);
    const struct vs_hdr_eviction *e = (const struct vs_hdr_eviction *)s->frame;
    ck_assert_uint_eq(e->f.command, VS_CMD_EVICTION);
    ck_assert_uint_eq(e->f.size, VS_HEADER_SIZE);
    ck_assert(vs_u128_eq(e->client, client));
    ck_assert_uint_eq(e->server_protocol_version, META_PROTOCOL_VERSION);
    ck_assert_uint_eq(e->server_protocol_version_min, META_PROTOCOL_VERSION);
    ck_assert_uint_eq(e->reason, reason);
}

START_TEST(test_evictions)
{
    struct fx f;
    boot_genesis(&f, NULL);
    uint64_t head0 = vsr_op(commit_engine(f.c));

    /* NoSession: a client that never registered -> Eviction 1 */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_B, 5, 1, "x"), 0);
    assert_eviction(&f, CLIENT_B, VS_EVICT_NO_SESSION);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head0);

    uint64_t s1 = register_root(&f, CLIENT_A);
    uint64_t s2 = register_root(&f, CLIENT_A); /* rebind: new epoch */
    ck_assert_uint_gt(s2, s1);

    /* SessionTooLow: the old epoch -> Eviction 7 */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s1, 1, "x"), 0);
    assert_eviction(&f, CLIENT_A, VS_EVICT_SESSION_TOO_LOW);
    /* EpochAhead -> Eviction 12 */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s2 + 50, 1, "x"), 0);
    assert_eviction(&f, CLIENT_A, VS_EVICT_SESSION_ERROR);
    uint64_t head = vsr_op(commit_engine(f.c));

    /* requests 1..6 commit; the ring keeps the last 5 */
    for (uint64_t req = 1; req <= 6; req++) {
        char name[16];
        snprintf(name, sizeof(name), "e%llu", (unsigned long long)req);
        fx_clear_sent(&f);
        ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s2, req, name), 0);
        ck_assert_uint_eq(reply_of(fx_last(&f))->op, head + req);
    }
    head = vsr_op(commit_engine(f.c));

    /* ChecksumMismatch: request 6 again with another body -> Eviction 5 */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s2, 6, "other"), 0);
    assert_eviction(&f, CLIENT_A, VS_EVICT_INVALID_REQUEST_BODY);
    /* AlreadyApplied: request 1 aged out of the ring -> Eviction 12 */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s2, 1, "e1"), 0);
    assert_eviction(&f, CLIENT_A, VS_EVICT_SESSION_ERROR);
    /* request 2 is still cached */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s2, 2, "e2"), 0);
    ck_assert_uint_eq(fx_last(&f)->h.flags, 0);
    ck_assert_uint_eq(reply_of(fx_last(&f))->request, 2);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head); /* nothing ran */
    ck_assert_uint_eq(commit_stats(f.c)->evictions, 5);
    ck_assert_uint_eq(commit_stats(f.c)->duplicates, 1);

    /* A forwarded non-replicated operation or client 0 -> status 3 */
    fx_clear_sent(&f);
    uint8_t junk[4] = {1, 2, 3, 4};
    struct vs_u128 zero = {0, 0};
    ck_assert_int_eq(fx_propose_raw(&f, CLIENT_A, VS_OP_NON_REPLICATED, s2, 9,
                                    0, junk, 4, zero),
                     0);
    ck_assert_uint_eq(f.nsent, 1);
    ck_assert_uint_eq(reply_of(fx_last(&f))->status, VS_E_INVALID_COMMAND);
    ck_assert_uint_eq(fx_last(&f)->len, VS_HEADER_SIZE);
    fx_clear_sent(&f);
    ck_assert_int_eq(
        fx_propose_raw(&f, CLIENT_A, VS_OP_GENESIS, s2, 9, 0, junk, 4, zero),
        0);
    ck_assert_uint_eq(reply_of(fx_last(&f))->status, VS_E_INVALID_COMMAND);
    fx_clear_sent(&f);
    ck_assert_int_eq(
        fx_propose_raw(&f, zero, VS_OP_CREATE_STREAM, s2, 9, 0, junk, 4, zero),
        0);
    ck_assert_uint_eq(reply_of(fx_last(&f))->status, VS_E_INVALID_COMMAND);
    /* A body that does not decode is executed as a refusal [1][0][3] */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_propose_raw(&f, CLIENT_A, VS_OP_CREATE_STREAM, s2, 7, 0,
                                    junk, 4, zero),
                     0);
    ck_assert_uint_eq(fx_last(&f)->len, VS_HEADER_SIZE + 12);
    ck_assert_uint_eq(vs_load_u32(fx_last(&f)->frame + VS_HEADER_SIZE + 8),
                      VS_E_INVALID_COMMAND);
    /* session 0 on a non-Register -> Eviction 1; request 0 -> status 3 */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, 0, 8, "s0"), 0);
    assert_eviction(&f, CLIENT_A, VS_EVICT_NO_SESSION);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s2, 0, "r0"), 0);
    ck_assert_uint_eq(reply_of(fx_last(&f))->status, VS_E_INVALID_COMMAND);
    ck_assert_ptr_null(meta_stream_by_name(commit_state(f.c), "s0", 2));
    ck_assert_ptr_null(meta_stream_by_name(commit_state(f.c), "r0", 2));
    /* malformed IPC frames are dropped, not answered */
    uint64_t dropped = commit_stats(f.c)->dropped;
    fx_clear_sent(&f);
    ck_assert_int_eq(commit_on_frame(f.c, FX_WORKER_SLOT, junk, 4), 0);
    struct fwd_hdr h;
    memset(&h, 0, sizeof(h));
    h.kind = FWD_PROPOSE;
    h.worker_slot = 2; /* not the sender */
    ck_assert_int_eq(commit_on_frame(f.c, FX_WORKER_SLOT, &h, sizeof(h)), 0);
    h.worker_slot = FX_WORKER_SLOT;
    h.payload_len = 10; /* more than sent */
    ck_assert_int_eq(commit_on_frame(f.c, FX_WORKER_SLOT, &h, sizeof(h)), 0);
    h.payload_len = 0; /* no request header */
    ck_assert_int_eq(commit_on_frame(f.c, FX_WORKER_SLOT, &h, sizeof(h)), 0);
    h.kind = 99;
    ck_assert_int_eq(commit_on_frame(f.c, FX_WORKER_SLOT, &h, sizeof(h)), 0);
    ck_assert_uint_eq(f.nsent, 0);
    ck_assert_uint_eq(commit_stats(f.c)->dropped, dropped + 5);
    fx_fini(&f);
}
END_TEST

START_TEST(test_logout)
{
    struct fx f;
    boot_genesis(&f, NULL);
    uint64_t s = register_root(&f, CLIENT_A);
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    meta_op_init(op, VS_OP_LOGOUT);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_propose(&f, CLIENT_A, s, 1, 0, op), 0);
    free(op);
    ck_assert_uint_eq(f.nsent, 1);
    ck_assert_uint_eq(fx_last(&f)->h.flags, FWD_F_UNBIND);
    ck_assert_uint_eq(fx_last(&f)->len, VS_HEADER_SIZE); /* empty body */
    ck_assert_uint_eq(reply_of(fx_last(&f))->operation, VS_OP_LOGOUT);
    ck_assert_uint_eq(reply_of(fx_last(&f))->status, 0);
    ck_assert_ptr_null(meta_session_by_client(commit_state(f.c), CLIENT_A));
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 2, "after"), 0);
    assert_eviction(&f, CLIENT_A, VS_EVICT_NO_SESSION);
    fx_fini(&f);
}
END_TEST

/* ----------------------------------------------------------- restart */

START_TEST(test_restart_continues)
{
    struct fx f;
    boot_genesis(&f, NULL);
    uint64_t s = register_root(&f, CLIENT_A);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 1, "r1"), 0);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 2, "r2"), 0);
    ck_assert_uint_eq(f.nsent, 2);
    uint32_t len = f.sent[1].len;
    uint8_t *cached = vs_xmalloc(len);
    memcpy(cached, f.sent[1].frame, len);
    uint64_t head = vsr_op(commit_engine(f.c));
    struct vs_hdr_prepare last = *wal_header(commit_journal(f.c), head);

    reboot(&f);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head);
    ck_assert_uint_eq(vsr_commit_min(commit_engine(f.c)), head);
    ck_assert_uint_eq(lr_published_op(&f.lr), head);
    ck_assert_ptr_nonnull(meta_stream_by_name(commit_state(f.c), "r2", 2));

    /* the retried request gets the identical cached frame */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 2, "r2"), 0);
    ck_assert_uint_eq(f.nsent, 1);
    ck_assert_uint_eq(fx_last(&f)->len, len);
    ck_assert_int_eq(memcmp(fx_last(&f)->frame, cached, len), 0);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head);

    /* a new request continues the op numbers and the hash chain */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 3, "r3"), 0);
    ck_assert_uint_eq(reply_of(fx_last(&f))->op, head + 1);
    const struct vs_hdr_prepare *p = wal_header(commit_journal(f.c), head + 1);
    ck_assert_ptr_nonnull(p);
    ck_assert(vs_u128_eq(p->parent, last.f.checksum));
    ck_assert_uint_gt(p->timestamp, last.timestamp);

    /* and the journal on disk scans clean across the restart */
    reboot(&f);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head + 1);
    free(cached);
    fx_fini(&f);
}
END_TEST

/* -------------------------------------------------------- checkpoint */

START_TEST(test_checkpoint_and_restart)
{
    struct sio_fault flt;
    sio_fault_init(&flt, 1); /* fsync stubbed: keeps 70 ops fast */
    struct fx f;
    boot_genesis(&f, &flt.io);
    ck_assert_uint_eq(f.cfg.wal_slots, 64);
    ck_assert_uint_eq(f.cfg.checkpoint_margin, 8);
    uint64_t sa = register_root(&f, CLIENT_A);
    uint64_t sb = register_root(&f, CLIENT_B);

    /* B's only request, long before the checkpoint */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_B, sb, 1, "b-only"), 0);
    uint32_t blen = fx_last(&f)->len;
    uint8_t *bframe = vs_xmalloc(blen);
    memcpy(bframe, fx_last(&f)->frame, blen);

    uint64_t req = 0;
    while (commit_stats(f.c)->checkpoints == 0 && req < 200) {
        char name[16];
        snprintf(name, sizeof(name), "c%llu", (unsigned long long)++req);
        fx_clear_sent(&f);
        ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, sa, req, name), 0);
        ck_assert_uint_eq(f.nsent, 1);
        ck_assert_uint_eq(reply_of(fx_last(&f))->status, 0);
    }
    ck_assert_uint_eq(commit_stats(f.c)->checkpoints, 1);
    struct vs_vsr_persist d;
    vsr_durable(commit_engine(f.c), &d);
    uint64_t ck = d.checkpoint_op;
    /* triggered when fewer than 8 of 64 slots were free */
    ck_assert_uint_eq(ck, 64 - 8 + 1);
    ck_assert_uint_eq(wal_first_op(commit_journal(f.c)), ck);

    /* the superblock on disk holds the pairing with the snapshot */
    char meta[600];
    snprintf(meta, sizeof(meta), "%s/%s", f.dir, VS_METADATA_DIR);
    struct vs_sio real;
    sio_init_real(&real);
    struct sb_read sbr;
    ck_assert_int_eq(sb_read_latest(&real, meta, &sbr), 0);
    ck_assert_int_eq(sbr.verdict, SB_PRESENT);
    struct vs_vsr_state vst;
    ck_assert_int_eq(vsr_state_decode(sbr.version, sbr.payload, sbr.payload_len,
                                      &vst, NULL, 0),
                     VSR_STATE_OK);
    ck_assert_uint_eq(vst.checkpoint_op, ck);
    struct snapfile sf;
    ck_assert_int_eq(snapfile_read(&real, meta, &sf), 0);
    ck_assert_int_eq(sf.status, SNAPFILE_OK);
    ck_assert_uint_eq(sf.prefix.op, ck);
    ck_assert(vs_u128_eq(sf.checksum, vst.checkpoint_checksum));
    snapfile_fini(&sf);

    /* a few ops past the checkpoint, then restart: snapshot + tail */
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "t%d", i);
        ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, sa, ++req, name), 0);
    }
    uint64_t head = vsr_op(commit_engine(f.c));
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, sa, req, "t2"), 0);
    uint32_t alen = fx_last(&f)->len;
    uint8_t *aframe = vs_xmalloc(alen);
    memcpy(aframe, fx_last(&f)->frame, alen);

    reboot(&f);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head);
    ck_assert_ptr_nonnull(meta_stream_by_name(commit_state(f.c), "t2", 2));
    ck_assert_ptr_nonnull(meta_stream_by_name(commit_state(f.c), "b-only", 6));
    /* B's reply came from the snapshot's client table */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_B, sb, 1, "b-only"), 0);
    ck_assert_uint_eq(fx_last(&f)->len, blen);
    ck_assert_int_eq(memcmp(fx_last(&f)->frame, bframe, blen), 0);
    /* A's latest from the replayed tail */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, sa, req, "t2"), 0);
    ck_assert_uint_eq(fx_last(&f)->len, alen);
    ck_assert_int_eq(memcmp(fx_last(&f)->frame, aframe, alen), 0);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head);
    /* and keeps going through a second checkpoint */
    while (commit_stats(f.c)->checkpoints == 0 && req < 400) {
        char name[16];
        snprintf(name, sizeof(name), "d%llu", (unsigned long long)++req);
        ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, sa, req, name), 0);
    }
    ck_assert_uint_eq(commit_stats(f.c)->checkpoints, 1);
    vsr_durable(commit_engine(f.c), &d);
    ck_assert_uint_gt(d.checkpoint_op, ck);
    free(aframe);
    free(bframe);
    fx_fini(&f);
}
END_TEST

/* At-most-once across re-register + checkpoint + restart, exactly the
 * documented reconnect flow: request 1 commits and its reply is lost,
 * the client registers again (new session), a checkpoint runs, shard 0
 * restarts, the client resends request 1 with the same body: it gets
 * the cached reply, never Eviction 12, and nothing runs twice. */
START_TEST(test_reregister_checkpoint_restart)
{
    struct fx f;
    boot_genesis(&f, NULL);
    uint64_t s1 = register_root(&f, CLIENT_B);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_B, s1, 1, "once"), 0);
    ck_assert_uint_eq(f.nsent, 1);
    uint32_t len = fx_last(&f)->len;
    uint8_t *lost = vs_xmalloc(len);
    memcpy(lost, fx_last(&f)->frame, len); /* never reached the client */

    uint64_t s2 = register_root(&f, CLIENT_B);
    ck_assert_uint_gt(s2, s1);
    ck_assert_int_eq(commit_checkpoint_now(f.c), 0);
    ck_assert_uint_eq(commit_stats(f.c)->checkpoints, 1);
    struct vs_vsr_persist d;
    vsr_durable(commit_engine(f.c), &d);
    ck_assert_uint_eq(d.checkpoint_op, s2);
    uint64_t head = vsr_op(commit_engine(f.c));

    reboot(&f);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_B, s2, 1, "once"), 0);
    ck_assert_uint_eq(f.nsent, 1);
    ck_assert_uint_eq(fx_last(&f)->h.kind, FWD_REPLY);
    ck_assert_uint_eq(fx_last(&f)->len, len);
    ck_assert_int_eq(memcmp(fx_last(&f)->frame, lost, len), 0);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head);
    ck_assert_uint_eq(meta_hdr_c(commit_state(f.c))->count[META_TAB_STREAM], 1);
    /* and again after a second re-register without a checkpoint */
    uint64_t s3 = register_root(&f, CLIENT_B);
    reboot(&f);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_B, s3, 1, "once"), 0);
    ck_assert_uint_eq(fx_last(&f)->len, len);
    ck_assert_int_eq(memcmp(fx_last(&f)->frame, lost, len), 0);
    free(lost);
    fx_fini(&f);
}
END_TEST

/* Right after a checkpoint the WAL may hold only the checkpoint op. If
 * that entry is damaged and cut (one replica, --cut-damaged-tail), the
 * superblock's record of its header restarts the hash chain: boot
 * succeeds, the state is the snapshot's, and new ops chain on. The same
 * when the WAL is wholly behind the snapshot (deleted here). */
START_TEST(test_boot_without_checkpoint_entry)
{
    struct fx f;
    boot_genesis(&f, NULL);
    uint64_t sa = register_root(&f, CLIENT_A);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, sa, 1, "kept"), 0);
    ck_assert_int_eq(commit_checkpoint_now(f.c), 0);
    struct vs_vsr_persist d;
    vsr_durable(commit_engine(f.c), &d);
    uint64_t ck = d.checkpoint_op;
    ck_assert_uint_eq(wal_first_op(commit_journal(f.c)), ck);
    ck_assert_uint_eq(wal_last_op(commit_journal(f.c)), ck);
    fx_stop(&f);

    char meta[600];
    snprintf(meta, sizeof(meta), "%s/%s", f.dir, VS_METADATA_DIR);
    struct vs_sio real;
    sio_init_real(&real);
    struct sb_read sbr;
    ck_assert_int_eq(sb_read_latest(&real, meta, &sbr), 0);
    struct vs_vsr_state vst;
    ck_assert_int_eq(vsr_state_decode(sbr.version, sbr.payload, sbr.payload_len,
                                      &vst, NULL, 0),
                     VSR_STATE_OK);
    ck_assert_uint_eq(sbr.version, VSR_STATE_VERSION);
    ck_assert(vsr_state_has_checkpoint_prepare(&vst));
    ck_assert_uint_eq(vst.checkpoint_prepare.op, ck);

    /* damage the only entry's body */
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", meta, VS_JOURNAL_FILE);
    FILE *fp = fopen(path, "r+b");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, -1, SEEK_END);
    int ch = fgetc(fp);
    fseek(fp, -1, SEEK_END);
    fputc(ch ^ 0x10, fp);
    fclose(fp);
    char err[512];
    ck_assert_int_ne(fx_boot(&f, err, sizeof(err)), 0); /* refused */
    ck_assert_ptr_nonnull(strstr(err, "damaged"));
    fx_config(&f, "cut_damaged_tail", "true");
    ck_assert_msg(fx_boot(&f, err, sizeof(err)) == 0, "boot: %s", err);
    ck_assert(wal_empty(commit_journal(f.c)));
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), ck);
    ck_assert_ptr_nonnull(meta_stream_by_name(commit_state(f.c), "kept", 4));
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, sa, 2, "after"), 0);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), ck + 1);
    ck_assert_uint_eq(wal_header(commit_journal(f.c), ck + 1)->parent.lo,
                      vst.checkpoint_prepare.f.checksum.lo);
    reboot(&f);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), ck + 1);
    /* a checkpoint at ck + 1, then the WAL removed: behind the snapshot */
    ck_assert_int_eq(commit_checkpoint_now(f.c), 0);
    fx_stop(&f);
    ck_assert_int_eq(remove(path), 0);
    ck_assert_msg(fx_boot(&f, err, sizeof(err)) == 0, "boot: %s", err);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), ck + 1);
    ck_assert_ptr_nonnull(meta_stream_by_name(commit_state(f.c), "after", 5));
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, sa, 3, "more"), 0);
    reboot(&f);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), ck + 2);
    fx_fini(&f);
}
END_TEST

/* A failed snapshot write skips the later phases; the next try works. */
START_TEST(test_checkpoint_phase_failure)
{
    struct sio_fault flt;
    sio_fault_init(&flt, 1);
    struct fx f;
    boot_genesis(&f, &flt.io);
    uint64_t s = register_root(&f, CLIENT_A);
    for (uint64_t req = 1; req <= 5; req++) {
        char name[16];
        snprintf(name, sizeof(name), "p%llu", (unsigned long long)req);
        ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, req, name), 0);
    }
    uint64_t first = wal_first_op(commit_journal(f.c));
    sio_fault_arm(&flt, SIO_WRITE, 1, ENOSPC, -1);
    ck_assert_int_eq(commit_checkpoint_now(f.c), 0);
    ck_assert_uint_eq(commit_stats(f.c)->checkpoint_failures, 1);
    ck_assert_uint_eq(commit_stats(f.c)->checkpoints, 0);
    struct vs_vsr_persist d;
    vsr_durable(commit_engine(f.c), &d);
    ck_assert_uint_eq(d.checkpoint_op, 0); /* phase 2 skipped */
    ck_assert_uint_eq(wal_first_op(commit_journal(f.c)), first); /* 3 too */
    sio_fault_reset(&flt);
    ck_assert_int_eq(commit_checkpoint_now(f.c), 0);
    ck_assert_uint_eq(commit_stats(f.c)->checkpoints, 1);
    vsr_durable(commit_engine(f.c), &d);
    ck_assert_uint_eq(d.checkpoint_op, vsr_op(commit_engine(f.c)));
    reboot(&f);
    ck_assert_ptr_nonnull(meta_stream_by_name(commit_state(f.c), "p5", 2));
    fx_fini(&f);
}
END_TEST

/* ------------------------------------------------------------ ENOSPC */

START_TEST(test_enospc_append)
{
    struct sio_fault flt;
    sio_fault_init(&flt, 1);
    struct fx f;
    boot_genesis(&f, &flt.io);
    uint64_t s = register_root(&f, CLIENT_A);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 1, "before"), 0);
    uint64_t head = vsr_op(commit_engine(f.c));

    /* the append tears after 100 bytes, then ENOSPC */
    sio_fault_arm(&flt, SIO_WRITE, 1, ENOSPC, 100);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 2, "full"), 0);
    ck_assert_uint_eq(f.nsent, 1);
    const struct fx_sent *r = fx_last(&f);
    ck_assert_uint_eq(r->len, VS_HEADER_SIZE);
    ck_assert_uint_eq(reply_of(r)->status, VS_E_DISK_FULL); /* specific */
    ck_assert_uint_eq(reply_of(r)->request, 2);
    ck_assert_uint_eq(commit_stats(f.c)->enospc, 1);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head);
    ck_assert_uint_eq(wal_last_op(commit_journal(f.c)), head);
    ck_assert_ptr_null(meta_stream_by_name(commit_state(f.c), "full", 4));
    sio_fault_reset(&flt);

    /* the journal on disk scans clean: nothing half-written stayed */
    char meta[600];
    snprintf(meta, sizeof(meta), "%s/%s", f.dir, VS_METADATA_DIR);
    struct vs_sio real;
    sio_init_real(&real);
    struct wal_options wo = {.read_only = 1};
    struct wal_scan scan;
    ck_assert_int_eq(wal_scan_file(&real, meta, &wo, &scan), 0);
    ck_assert_int_eq(scan.verdict, WAL_CLEAN);
    ck_assert_uint_eq(scan.last_op, head);

    /* the same request again (never executed) now succeeds */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 2, "full"), 0);
    ck_assert_uint_eq(reply_of(fx_last(&f))->status, 0);
    ck_assert_uint_eq(reply_of(fx_last(&f))->op, head + 1);
    ck_assert_uint_eq(vs_load_u32(fx_last(&f)->frame + VS_HEADER_SIZE), 0);
    reboot(&f);
    ck_assert_ptr_nonnull(meta_stream_by_name(commit_state(f.c), "full", 4));
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head + 1);
    fx_fini(&f);
}
END_TEST

/* A fatal error (fsync EIO) is reported, never carried on. */
START_TEST(test_fatal_fsync)
{
    struct sio_fault flt;
    sio_fault_init(&flt, 0);
    struct fx f;
    boot_genesis(&f, &flt.io);
    uint64_t s = register_root(&f, CLIENT_A);
    sio_fault_arm(&flt, SIO_FSYNC, 1, EIO, -1);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 1, "x"), -VS_EFATAL);
    ck_assert_uint_eq(f.nsent, 0); /* not answered */
    char msg[512];
    commit_fatal_msg(f.c, msg, sizeof(msg));
    ck_assert_ptr_nonnull(strstr(msg, "fsync"));
    ck_assert_ptr_nonnull(strstr(msg, "journal.wal"));
    fx_fini(&f);
}
END_TEST

START_TEST(test_refuses_published_ahead)
{
    struct fx f;
    boot_genesis(&f, NULL);
    uint64_t s = register_root(&f, CLIENT_A);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 1, "x"), 0);
    fx_stop(&f);
    /* lose the journal: the published op is now ahead of the disk */
    char path[600];
    snprintf(path, sizeof(path), "%s/%s/journal.wal", f.dir, VS_METADATA_DIR);
    ck_assert_int_eq(truncate(path, 0), 0);
    char err[512];
    ck_assert_int_eq(fx_boot(&f, err, sizeof(err)), -ESTALE);
    ck_assert_ptr_nonnull(strstr(err, "already published"));
    fx_fini(&f);
}
END_TEST

/* A CreatePAT success is answered live but cached as the refusal
 * [1][0][51]: the token never sits in the client table. */
START_TEST(test_create_pat_not_cached)
{
    struct fx f;
    boot_genesis(&f, NULL);
    uint64_t s = register_root(&f, CLIENT_A);
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    meta_op_init(op, VS_OP_CREATE_PAT);
    meta_op_set_name(op, "tok", 3);
    uint8_t digest[META_DIGEST_LEN];
    memset(digest, 0x5a, sizeof(digest));
    meta_op_set_secret(op, digest, sizeof(digest));
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_propose(&f, CLIENT_A, s, 1, 0, op), 0);
    ck_assert_uint_eq(f.nsent, 1);
    ck_assert_uint_eq(reply_of(fx_last(&f))->operation, VS_OP_CREATE_PAT);
    ck_assert_uint_eq(fx_last(&f)->len, VS_HEADER_SIZE + 4);
    ck_assert_uint_eq(vs_load_u32(fx_last(&f)->frame + VS_HEADER_SIZE), 0);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_propose(&f, CLIENT_A, s, 1, 0, op), 0);
    ck_assert_uint_eq(f.nsent, 1);
    const uint8_t *b = fx_last(&f)->frame + VS_HEADER_SIZE;
    ck_assert_uint_eq(fx_last(&f)->len, VS_HEADER_SIZE + 12);
    ck_assert_uint_eq(vs_load_u32(b), 1);
    ck_assert_uint_eq(vs_load_u32(b + 8), VS_E_PAT_ALREADY_EXISTS);
    ck_assert_uint_eq(reply_of(fx_last(&f))->request, 1);
    free(op);
    fx_fini(&f);
}
END_TEST

/* Replica 0 of a (not yet connected) 3-node cluster is the first primary:
 * it proposes genesis as op 1 and prepares but cannot commit; the same
 * client again, or a full pipeline, gets status 57. */
START_TEST(test_transient_not_committed)
{
    struct fx f;
    char err[512];
    fx_init(&f);
    fx_config(&f, "replica_addrs", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3");
    fx_region(&f);
    ck_assert_int_eq(shard0_format(&f.cfg, err, sizeof(err)), 0);
    ck_assert_msg(fx_boot(&f, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(commit_genesis_needed(f.c), 1);
    ck_assert_msg(commit_genesis(f.c, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), 1);
    ck_assert_uint_eq(vsr_commit_min(commit_engine(f.c)), 0);
    ck_assert_int_eq(commit_genesis_needed(f.c), 0); /* in flight */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_register(&f, CLIENT_A, 0), 0);
    ck_assert_uint_eq(f.nsent, 0); /* prepared, awaiting a quorum */
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), 2);
    ck_assert_int_eq(fx_register(&f, CLIENT_A, 0), 0);
    ck_assert_uint_eq(f.nsent, 1);
    ck_assert_uint_eq(reply_of(fx_last(&f))->status,
                      VS_E_TRANSIENT_NOT_COMMITTED);
    ck_assert_uint_eq(reply_of(fx_last(&f))->operation, VS_OP_REGISTER);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), 2);
    /* other clients fill the pipeline (32), then 57 */
    unsigned transient = 0;
    for (uint64_t i = 0; i < 40; i++) {
        struct vs_u128 c = {100 + i, 7};
        fx_clear_sent(&f);
        ck_assert_int_eq(fx_register(&f, c, 0), 0);
        if (f.nsent == 1) {
            ck_assert_uint_eq(reply_of(fx_last(&f))->status,
                              VS_E_TRANSIENT_NOT_COMMITTED);
            transient++;
        }
    }
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), VSR_PIPELINE_MAX);
    ck_assert_uint_eq(transient, 40 - (VSR_PIPELINE_MAX - 2));
    ck_assert_uint_eq(commit_stats(f.c)->transient, transient + 1);
    fx_fini(&f);
}
END_TEST

static int
fx_delete_stream(struct fx *f, struct vs_u128 client, uint64_t session,
                 uint64_t request, const char *name)
{
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    meta_op_init(op, VS_OP_DELETE_STREAM);
    meta_ident_name(&op->stream, name, strlen(name));
    int rc = fx_propose(f, client, session, request, 0, op);
    free(op);
    return rc;
}

/* Below the disk watermark metadata growth is refused with the specific
 * DiskFull code, while login (Register), deletes and logout still work:
 * the operator is never locked out. */
START_TEST(test_disk_watermark_metadata)
{
    struct fx f;
    boot_genesis(&f, NULL);
    uint64_t s = register_root(&f, CLIENT_A);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 1, "big"), 0);
    fx_stop(&f);
    /* every filesystem is "below" this watermark */
    fx_config(&f, "disk_watermark_bytes", "9000000000000000000");
    char err[512];
    ck_assert_msg(fx_boot(&f, err, sizeof(err)) == 0, "boot: %s", err);
    uint64_t head = vsr_op(commit_engine(f.c));
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 2, "more"), 0);
    ck_assert_uint_eq(f.nsent, 1);
    ck_assert_uint_eq(reply_of(fx_last(&f))->status, VS_E_DISK_FULL);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head); /* not proposed */
    ck_assert_str_eq(vs_iggy_error_name(VS_E_DISK_FULL), "DiskFull");
    /* log in again (a new session) and free space */
    uint64_t s2 = register_root(&f, CLIENT_A);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_delete_stream(&f, CLIENT_A, s2, 3, "big"), 0);
    ck_assert_uint_eq(reply_of(fx_last(&f))->status, 0);
    ck_assert_ptr_null(meta_stream_by_name(commit_state(f.c), "big", 3));
    /* above the watermark again: growth works */
    fx_stop(&f);
    fx_config(&f, "disk_watermark_bytes", "0");
    ck_assert_msg(fx_boot(&f, err, sizeof(err)) == 0, "boot: %s", err);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s2, 4, "more"), 0);
    ck_assert_uint_eq(reply_of(fx_last(&f))->status, 0);
    fx_fini(&f);
}
END_TEST

/* The checkpoint's superblock write gets ENOSPC (retried later), then a
 * journal append gets ENOSPC too (the engine is rebuilt): the retry's
 * later success must not trip the engine, the checkpoint completes, and
 * nothing acknowledged is lost across a restart. */
START_TEST(test_enospc_superblock_then_append)
{
    struct sio_fault flt;
    sio_fault_init(&flt, 1);
    struct fx f;
    boot_genesis(&f, &flt.io);
    uint64_t s = register_root(&f, CLIENT_A);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 1, "a1"), 0);
    ck_assert_int_eq(commit_checkpoint_now(f.c), 0);
    ck_assert_uint_eq(commit_stats(f.c)->checkpoints, 1);
    /* a checkpoint writes the snapshot (payload, trailer), then the
     * superblock record: the third write */
    const uint64_t per_ckpt = 3;

    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 2, "a2"), 0);
    uint64_t ck_op = vsr_op(commit_engine(f.c));
    sio_fault_arm(&flt, SIO_WRITE, per_ckpt, ENOSPC, -1);
    ck_assert_int_eq(commit_checkpoint_now(f.c), 0);
    ck_assert_uint_eq(commit_stats(f.c)->checkpoint_failures, 1);
    struct vs_vsr_persist d;
    vsr_durable(commit_engine(f.c), &d);
    ck_assert_uint_lt(d.checkpoint_op, ck_op); /* the retry is pending */

    sio_fault_reset(&flt);
    sio_fault_arm(&flt, SIO_WRITE, 1, ENOSPC, 10); /* the next append */
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 3, "a3"), 0);
    ck_assert_uint_eq(reply_of(fx_last(&f))->status, VS_E_DISK_FULL);
    ck_assert_uint_eq(commit_stats(f.c)->enospc, 1);
    sio_fault_reset(&flt);

    /* the retry (on ticks) succeeds on the rebuilt engine */
    for (int i = 0; i < 1000 && commit_stats(f.c)->checkpoints < 2; i++)
        ck_assert_int_eq(commit_tick(f.c), 0);
    ck_assert_uint_eq(commit_stats(f.c)->checkpoints, 2);
    vsr_durable(commit_engine(f.c), &d);
    ck_assert_uint_eq(d.checkpoint_op, ck_op);
    fx_clear_sent(&f);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 3, "a3"), 0);
    ck_assert_uint_eq(reply_of(fx_last(&f))->status, 0);
    reboot(&f);
    ck_assert_ptr_nonnull(meta_stream_by_name(commit_state(f.c), "a1", 2));
    ck_assert_ptr_nonnull(meta_stream_by_name(commit_state(f.c), "a2", 2));
    ck_assert_ptr_nonnull(meta_stream_by_name(commit_state(f.c), "a3", 2));
    fx_fini(&f);
}
END_TEST

/* While a checkpoint's superblock retry is pending the journal fills: the
 * request that finds it full runs the retry at once (space is back), the
 * checkpoint completes and the request is accepted -- no stall until a
 * tick, no refusal. */
START_TEST(test_stalled_checkpoint_journal_full)
{
    struct sio_fault flt;
    sio_fault_init(&flt, 1);
    struct fx f;
    boot_genesis(&f, &flt.io);
    uint64_t s = register_root(&f, CLIENT_A);
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 1, "x0"), 0);
    ck_assert_int_eq(commit_checkpoint_now(f.c), 0);
    const uint64_t per_ckpt = 3; /* snapshot payload, trailer, superblock */
    ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, 2, "x1"), 0);
    sio_fault_arm(&flt, SIO_WRITE, per_ckpt, ENOSPC, -1);
    ck_assert_int_eq(commit_checkpoint_now(f.c), 0);
    ck_assert_uint_eq(commit_stats(f.c)->checkpoints, 1);
    struct vs_vsr_persist d;
    vsr_durable(commit_engine(f.c), &d);
    ck_assert_uint_lt(d.checkpoint_op, vsr_op(commit_engine(f.c)));
    sio_fault_reset(&flt);
    /* fill the journal without ticking (the retry tick never comes) */
    uint64_t req = 2, refused = 0;
    while (commit_stats(f.c)->checkpoints < 2 && req < 200) {
        char name[16];
        snprintf(name, sizeof(name), "y%llu", (unsigned long long)++req);
        fx_clear_sent(&f);
        ck_assert_int_eq(fx_create_stream(&f, CLIENT_A, s, req, name), 0);
        if (reply_of(fx_last(&f))->status != 0)
            refused++;
    }
    ck_assert_uint_eq(refused, 0);
    ck_assert_uint_ge(commit_stats(f.c)->checkpoints, 2);
    uint64_t head = vsr_op(commit_engine(f.c));
    reboot(&f);
    ck_assert_uint_eq(vsr_op(commit_engine(f.c)), head);
    fx_fini(&f);
}
END_TEST

static Suite *
commit_suite(void)
{
    Suite *s = suite_create("commit");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_genesis_default_root);
    tcase_add_test(tc, test_genesis_configured_and_generated);
    tcase_add_test(tc, test_register_and_create_reply_bytes);
    tcase_add_test(tc, test_replies_deterministic);
    tcase_add_test(tc, test_duplicate_cached);
    tcase_add_test(tc, test_evictions);
    tcase_add_test(tc, test_logout);
    tcase_add_test(tc, test_create_pat_not_cached);
    tcase_add_test(tc, test_transient_not_committed);
    tcase_add_test(tc, test_restart_continues);
    tcase_add_test(tc, test_checkpoint_and_restart);
    tcase_add_test(tc, test_reregister_checkpoint_restart);
    tcase_add_test(tc, test_boot_without_checkpoint_entry);
    tcase_add_test(tc, test_checkpoint_phase_failure);
    tcase_add_test(tc, test_enospc_append);
    tcase_add_test(tc, test_disk_watermark_metadata);
    tcase_add_test(tc, test_enospc_superblock_then_append);
    tcase_add_test(tc, test_stalled_checkpoint_journal_full);
    tcase_add_test(tc, test_fatal_fsync);
    tcase_add_test(tc, test_refuses_published_ahead);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(commit_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
