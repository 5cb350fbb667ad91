/*
 * shard/serve/throttle.h - failed-login throttling per user name and per
 * source address, node-wide (the table is ipc/throttle.h, in the shared
 * segment: see there why it is shared memory and not one owner).
 *
 * Policy: a Register whose credentials fail (Eviction 9 or 10) counts one
 * failure for its source address and, with the password shape, for the
 * user name it tried (known or not, so guessing names is throttled too).
 * After n failures in a row the next attempt of that name or address
 * waits login_backoff_base_ms x 2^(n-1), at most login_backoff_max_ms;
 * an attempt inside the wait is answered 58 (NotAccepted: Iggy's SDKs
 * resend it every 50 ms) before any hashing, and counts nothing. A
 * success forgets the user name's failures (never the address's: one
 * good account must not reset a guesser's address); failures older than
 * login_backoff_max_ms are forgotten. Each name or address is logged at
 * its first failure and then at most once per
 * login_failure_log_interval_ms, with the failures in between counted.
 * The per-shard login_attempts_per_sec limit stays in front of this.
 * login_backoff_base_ms = 0 turns throttling off (the test profile's
 * default, so tests of other things can fail logins back to back).
 * Callers: the data shard's loop thread (login.c).
 */
#ifndef VS_SHARD_SERVE_THROTTLE_H
#define VS_SHARD_SERVE_THROTTLE_H

#include <stddef.h>
#include <stdint.h>

struct serve_conn;

/* 0 if a login by c (user: the password shape's name, or NULL) may go
 * on now, else the ms until it may. */
uint64_t serve_throttle_check(struct serve_conn *c, const char *user,
                              size_t ulen);
/* Records a failed login (reason: the eviction it got). */
void serve_throttle_failed(struct serve_conn *c, const char *user, size_t ulen,
                           uint8_t reason);
/* Records a successful login of user name `user` (NULL: token login). */
void serve_throttle_succeeded(struct serve_conn *c, const char *user,
                              size_t ulen);

#endif /* VS_SHARD_SERVE_THROTTLE_H */
