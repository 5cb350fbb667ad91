/*
 * shard/serve/sessend.c - ending sessions: with their credentials (user
 * deleted or deactivated, token deleted or expired) and on request of
 * the liveness check; see sessend.h.
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "shard/meta/lookup.h"
#include "shard/serve/server.h"
#include "shard/serve/sessend.h"

void
serve_session_end(struct serve_conn *c, uint8_t reason)
{
    serve_conn_evict(c, c->client, reason);
    serve_propose_closed(c->srv, c);
    serve_conn_unbind(c);
    c->srv->sessions_ended++;
}

void
serve_cred_login(struct serve_conn *c, uint64_t user_created_op, int pat,
                 const uint8_t *digest)
{
    c->login_cred.user_created_op = user_created_op;
    c->login_cred.pat = pat ? 1 : 0;
    if (pat)
        memcpy(c->login_cred.digest, digest, META_DIGEST_LEN);
    else
        memset(c->login_cred.digest, 0, META_DIGEST_LEN);
}

void
serve_cred_bound(struct serve_conn *c)
{
    c->cred = c->login_cred;
    c->cred_checked_op = 0;
    c->cred_expiry = 0;
    c->srv->cred_scan_op = UINT64_MAX; /* look at it on the next tick */
}

/* Read section: why c's credentials no longer hold (an eviction
 * reason), or 0; *expiry gets its token's expiry (0: none). */
static uint8_t
cred_reason(const void *st, const struct serve_conn *c, uint64_t now_us,
            uint64_t *expiry)
{
    *expiry = 0;
    const struct meta_user *u = meta_user_by_id(st, c->user_id);
    if (u == NULL || u->created_op != c->cred.user_created_op)
        return VS_EVICT_INVALID_CREDENTIALS;
    if (u->status != 1)
        return VS_EVICT_USER_INACTIVE;
    if (!c->cred.pat)
        return 0;
    const struct meta_pat *p = meta_pat_by_digest(st, c->cred.digest);
    if (p == NULL || p->user_id != c->user_id)
        return VS_EVICT_INVALID_TOKEN;
    if (p->expiry_at != 0 && p->expiry_at <= now_us)
        return VS_EVICT_INVALID_TOKEN;
    *expiry = p->expiry_at;
    return 0;
}

static const char *
cred_why(uint8_t r)
{
    return r == VS_EVICT_USER_INACTIVE   ? "the user was deactivated"
           : r == VS_EVICT_INVALID_TOKEN ? "its access token was deleted or "
                                           "expired"
                                         : "the user was deleted";
}

int
serve_cred_check(struct serve_conn *c)
{
    if (!c->bound)
        return 0;
    struct serve *s = c->srv;
    uint64_t op = lr_published_op(s->lr);
    uint64_t now = vs_realtime_us();
    if (op == c->cred_checked_op &&
        (c->cred_expiry == 0 || now < c->cred_expiry))
        return 0;
    uint64_t exp = 0;
    const void *st = lr_read_begin(s->lr, NULL);
    uint8_t r = cred_reason(st, c, now, &exp);
    lr_read_end(s->lr);
    c->cred_checked_op = op;
    c->cred_expiry = exp;
    if (r == 0)
        return 0;
    vs_log_info("client %s: session %llu of user %u ended: %s", c->peer,
                (unsigned long long)c->session, c->user_id, cred_why(r));
    serve_session_end(c, r);
    return 1;
}

void
serve_cred_tick(struct serve *s)
{
    uint64_t op = lr_published_op(s->lr);
    uint64_t now = vs_realtime_us();
    if (op == s->cred_scan_op &&
        (s->cred_next_expiry == 0 || now < s->cred_next_expiry))
        return;
    s->cred_scan_op = op;
    s->cred_next_expiry = 0;
    for (struct serve_conn *c = s->all; c != NULL; c = c->next) {
        if (!c->bound || c->closing)
            continue;
        if (c->in_flight) {
            /* an eviction now would be read as the answer to the request
             * in flight: look again on the next tick */
            s->cred_scan_op = UINT64_MAX;
            continue;
        }
        if (serve_cred_check(c) == 0 && c->cred_expiry != 0 &&
            (s->cred_next_expiry == 0 || c->cred_expiry < s->cred_next_expiry))
            s->cred_next_expiry = c->cred_expiry;
    }
}
