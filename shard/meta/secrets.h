/*
 * shard/meta/secrets.h - password hashes and personal access tokens, with
 * libsodium: argon2id PHC strings (crypto_pwhash_str), BLAKE2b-256 token
 * digests (crypto_generichash), secure random bytes, constant-time
 * compares.
 *
 * Called BEFORE an op is proposed (hash a new password, make a PAT) and
 * when logging in (verify), never inside meta_apply. Argon2 is slow on
 * purpose: data shards call verify off their event loop.
 *
 * Callers: any process. meta_secrets_init() first (idempotent).
 */
#ifndef VS_SHARD_META_SECRETS_H
#define VS_SHARD_META_SECRETS_H

#include <stddef.h>
#include <stdint.h>

#include "shard/meta/state.h"

#define META_PAT_RAW_LEN   50u
#define META_PAT_TOKEN_LEN 68u /* base64 with padding of 50 bytes */

/* sodium_init(); 0 or -EIO. */
int meta_secrets_init(void);

/* Hashes a password into a NUL-terminated PHC string. 0 or -ENOMEM/-EIO. */
int meta_password_hash(const char *pw, size_t len, uint64_t opslimit,
                       uint64_t memlimit, char out[META_PWHASH_MAX]);
/* 0 if pw matches the PHC string, -EACCES if not (or malformed hash). */
int meta_password_verify(const char *phc, const char *pw, size_t len);

/* A new token: 50 random bytes, standard base64 with padding (68 chars +
 * NUL) and its digest. */
void meta_pat_make(char token[META_PAT_TOKEN_LEN + 1],
                   uint8_t digest[META_DIGEST_LEN]);
/* BLAKE2b-256 of the token's ASCII bytes. */
void meta_pat_digest(const char *token, size_t len,
                     uint8_t digest[META_DIGEST_LEN]);
/* Constant-time equality of n bytes: 1 equal, 0 not. */
int meta_secret_eq(const void *a, const void *b, size_t n);

#endif /* VS_SHARD_META_SECRETS_H */
