/*
 * shard/serve/login.c - Register (operation 1) on a data shard: the body
 * forms, the protocol window, the login rate limit, credential checks
 * against the published state with argon2 verification off the loop,
 * then the Register proposed to shard 0 with the verified user id
 * (iggy-client-protocol §5.1, -2 §4 and §8).
 *
 * Order (protocol-2 §4): the ClientVersionInfo prefix (fails -> Eviction
 * 15); the window (-> Eviction 14 with 11264/11264 @144/@148); the rate
 * limit (login_attempts_per_sec per data shard, over it -> H 58, which
 * the SDK retries); the failed-login back-off of the user name and the
 * source address, node-wide (throttle.h: inside it -> H 58; failures
 * with Eviction 9 or 10 are recorded there); the password shape (lengths 3..50
 * / 3..100, known active user, argon2 verify on the hasher thread); on failure
 * the PAT shape (unknown or expired token -> Eviction 10, inactive owner ->
 * Eviction 11); neither -> Eviction 9 if the password shape had failed
 * on credentials, else 15. A header with client 0, or session/request
 * != 0, is refused with H 3.
 * Read sections are short: the user's PHC string is copied out before
 * hashing starts, and re-checked unchanged after.
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/mem.h"
#include "shard/meta/lookup.h"
#include "shard/meta/secrets.h"
#include "shard/serve/server.h"
#include "shard/serve/sessend.h"
#include "shard/serve/throttle.h"

/* The user name of the login in flight (password shape), or NULL. */
static const char *
login_user(const struct serve_conn *c, size_t *ulen)
{
    struct serve_login l;
    *ulen = 0;
    if (c->body == NULL || serve_login_decode(c->body, c->body_len, &l) != 0 ||
        !l.pw_shape)
        return NULL;
    *ulen = l.ulen;
    return l.username;
}

static void
login_fail(struct serve_conn *c, uint8_t reason)
{
    if (reason == VS_EVICT_INVALID_CREDENTIALS ||
        reason == VS_EVICT_INVALID_TOKEN) {
        size_t ulen;
        const char *user = login_user(c, &ulen);
        serve_throttle_failed(c, user, ulen, reason);
    }
    serve_conn_evict(c, c->req.client, reason);
    serve_conn_unbind(c);
    serve_conn_request_done(c);
}

static void
login_propose(struct serve_conn *c, uint32_t user_id)
{
    size_t ulen;
    const char *user = login_user(c, &ulen);
    if (!c->login_pw_failed) /* the password shape succeeded */
        serve_throttle_succeeded(c, user, ulen);
    struct meta_op *op = vs_xmalloc(sizeof(*op));
    meta_op_init(op, VS_OP_REGISTER);
    op->user_id = user_id;
    c->req.user_id = user_id;
    serve_propose_send(c, op);
    free(op);
}

/* Step 3: the PAT shape. Finishes the request. */
static void
login_try_pat(struct serve_conn *c)
{
    struct serve_login l;
    if (serve_login_decode(c->body, c->body_len, &l) != 0 || !l.pat_shape) {
        login_fail(c, c->login_pw_failed ? VS_EVICT_INVALID_CREDENTIALS
                                         : VS_EVICT_MALFORMED_LOGIN);
        return;
    }
    uint8_t digest[META_DIGEST_LEN];
    meta_pat_digest(l.token, l.tlen, digest);
    uint64_t now = vs_realtime_us();
    uint8_t reason = 0;
    uint32_t uid = META_NONE;
    const void *st = lr_read_begin(c->srv->lr, NULL);
    const struct meta_pat *p = meta_pat_by_digest(st, digest);
    if (p == NULL || (p->expiry_at != 0 && p->expiry_at <= now)) {
        reason = VS_EVICT_INVALID_TOKEN;
    } else {
        const struct meta_user *u = meta_user_by_id(st, p->user_id);
        if (u == NULL)
            reason = VS_EVICT_INVALID_TOKEN;
        else if (u->status != 1)
            reason = VS_EVICT_USER_INACTIVE;
        else {
            uid = u->id;
            serve_cred_login(c, u->created_op, 1, digest);
        }
    }
    lr_read_end(c->srv->lr);
    if (reason != 0) {
        login_fail(c, reason);
        return;
    }
    login_propose(c, uid);
}

/* 1 if this attempt is within login_attempts_per_sec. */
static int
login_rate_ok(struct serve *s)
{
    uint64_t sec = vs_monotonic_ns() / UINT64_C(1000000000);
    if (sec != s->login_window) {
        s->login_window = sec;
        s->login_count = 0;
    }
    if (s->login_count >= s->cfg->login_attempts_per_sec)
        return 0;
    s->login_count++;
    return 1;
}

void
serve_login_start(struct serve_conn *c, const struct vs_hdr_request *req,
                  const uint8_t *body, size_t len)
{
    struct serve *s = c->srv;
    if (vs_u128_is_zero(req->client) || req->session != 0 ||
        req->request != 0) {
        serve_conn_reply(c, req, VS_E_INVALID_COMMAND, NULL, 0);
        return;
    }
    struct serve_login l;
    if (serve_login_decode(body, len, &l) != 0) {
        serve_conn_evict(c, req->client, VS_EVICT_MALFORMED_LOGIN);
        serve_conn_unbind(c);
        return;
    }
    if (!serve_version_ok(l.protocol_version)) {
        serve_conn_evict(c, req->client, VS_EVICT_INCOMPATIBLE_PROTOCOL);
        serve_conn_unbind(c);
        return;
    }
    if (!login_rate_ok(s)) {
        serve_conn_reply(c, req, VS_E_NOT_ACCEPTED, NULL, 0);
        return;
    }
    /* the name's or the address's back-off after failed logins (all
     * data shards): 58 before any hashing, counting nothing */
    if (serve_throttle_check(c, l.pw_shape ? l.username : NULL,
                             l.pw_shape ? l.ulen : 0) > 0) {
        serve_conn_reply(c, req, VS_E_NOT_ACCEPTED, NULL, 0);
        return;
    }
    /* the request is now in flight until shard 0 answers or it fails */
    c->in_flight = 1;
    c->req = *req;
    if (vs_u128_is_zero(c->req.request_checksum))
        c->req.request_checksum = vs_checksum(body, len);
    c->body = vs_xmalloc(len > 0 ? len : 1);
    memcpy(c->body, body, len);
    c->body_len = len;
    c->login_pw_failed = 0;

    if (l.pw_shape) {
        if (l.ulen >= META_USERNAME_MIN && l.ulen <= META_USERNAME_MAX &&
            l.plen >= 3 && l.plen <= 100) {
            struct serve_hash_job *j = serve_hash_job_new(SERVE_HASH_VERIFY);
            int found = 0;
            const void *st = lr_read_begin(s->lr, NULL);
            const struct meta_user *u =
                meta_user_by_name(st, l.username, l.ulen);
            if (u != NULL && u->pw_hash[0] != '\0') {
                found = 1;
                j->tag = u->id;
                memcpy(j->phc, u->pw_hash, sizeof(j->phc));
                j->phc[sizeof(j->phc) - 1] = '\0';
            }
            lr_read_end(s->lr);
            if (found) {
                j->conn_id = c->id;
                memcpy(j->pw, l.password, l.plen);
                j->pw_len = l.plen;
                serve_hasher_submit(s->hasher, j);
                return;
            }
            serve_hash_job_free(j);
        }
        c->login_pw_failed = 1;
    }
    login_try_pat(c);
}

void
serve_login_hash_done(struct serve_conn *c, struct serve_hash_job *j)
{
    if (j->result == 0) {
        uint32_t uid = (uint32_t)j->tag;
        const void *st = lr_read_begin(c->srv->lr, NULL);
        const struct meta_user *u = meta_user_by_id(st, uid);
        int ok = u != NULL && u->status == 1 &&
                 strncmp(u->pw_hash, j->phc, META_PWHASH_MAX) == 0;
        if (ok)
            serve_cred_login(c, u->created_op, 0, NULL);
        lr_read_end(c->srv->lr);
        if (ok) {
            login_propose(c, uid);
            return;
        }
    }
    c->login_pw_failed = 1;
    login_try_pat(c);
}
