/*
 * shard/serve/sessend.h - sessions that end with their credentials.
 *
 * A session lives only as long as what it was opened with:
 *  - the user is deleted (or its id now names another user: ids are
 *    reused, so the user's created_op is compared) -> Eviction 9
 *    InvalidCredentials;
 *  - the user is deactivated -> Eviction 11 UserInactive;
 *  - it was opened with a personal access token and that token is
 *    deleted, or its expiry passes -> Eviction 10 InvalidToken.
 * Permission changes need nothing here: every request is authorised
 * against the published state at the time it arrives.
 * The check runs when a request arrives and on the watch tick (100 ms)
 * over the bound connections, in both cases only when the published op
 * changed, a session was bound, or a token's expiry has passed.
 *
 * Ending a session (serve_session_end, also used for StaleClient): the
 * eviction frame; FWD_CLOSED so shard 0 releases the client's
 * consumer-group memberships (ignored if the client is bound elsewhere);
 * the connection is unbound and stays open unauthenticated (the client
 * reads the eviction as the answer to its next request and may log in
 * again, else the unauthenticated-connection timer closes it).
 * Callers: the data shard's loop thread (serve.c tick, login.c,
 * propose.c at bind, liveness.c).
 */
#ifndef VS_SHARD_SERVE_SESSEND_H
#define VS_SHARD_SERVE_SESSEND_H

#include <stdint.h>

struct serve;
struct serve_conn;

/* Ends c's session with Eviction `reason` (see above). */
void serve_session_end(struct serve_conn *c, uint8_t reason);
/* The login in flight on c verified these credentials (pat: 0 password,
 * 1 token with `digest`); they become the session's at bind. */
void serve_cred_login(struct serve_conn *c, uint64_t user_created_op, int pat,
                      const uint8_t *digest);
/* c was just bound by a Register reply. */
void serve_cred_bound(struct serve_conn *c);
/* A request arrived on c: if its credentials no longer hold, ends the
 * session (the eviction is the request's answer) and returns 1. Checks
 * only when the published op changed or the token's expiry passed. */
int serve_cred_check(struct serve_conn *c);
/* The watch tick: serve_cred_check on every bound connection without a
 * request in flight (an eviction then would be taken as that request's
 * answer; those are looked at again on the next tick). */
void serve_cred_tick(struct serve *s);

#endif /* VS_SHARD_SERVE_SESSEND_H */
