/*
 * shard/meta/secrets.c - argon2id password hashes, PAT tokens and their
 * BLAKE2b-256 digests, constant-time compares (see secrets.h).
 * Invariants: plaintext secrets are never stored or logged here.
 * Callers: any process, never from meta_apply.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "shard/meta/secrets.h"

_Static_assert(crypto_pwhash_STRBYTES <= META_PWHASH_MAX,
               "PHC strings fit meta_user.pw_hash");

int
meta_secrets_init(void)
{
    return sodium_init() < 0 ? -EIO : 0;
}

int
meta_password_hash(const char *pw, size_t len, uint64_t opslimit,
                   uint64_t memlimit, char out[META_PWHASH_MAX])
{
    if (meta_secrets_init() != 0)
        return -EIO;
    memset(out, 0, META_PWHASH_MAX);
    if (crypto_pwhash_str_alg(out, pw, len, opslimit, (size_t)memlimit,
                              crypto_pwhash_ALG_ARGON2ID13) != 0)
        return -ENOMEM;
    return 0;
}

int
meta_password_verify(const char *phc, const char *pw, size_t len)
{
    if (meta_secrets_init() != 0)
        return -EIO;
    if (strnlen(phc, META_PWHASH_MAX) >= META_PWHASH_MAX)
        return -EACCES;
    return crypto_pwhash_str_verify(phc, pw, len) == 0 ? 0 : -EACCES;
}

void
meta_pat_digest(const char *token, size_t len, uint8_t digest[META_DIGEST_LEN])
{
    crypto_generichash(digest, META_DIGEST_LEN, (const unsigned char *)token,
                       len, NULL, 0);
}

void
meta_pat_make(char token[META_PAT_TOKEN_LEN + 1],
              uint8_t digest[META_DIGEST_LEN])
{
    unsigned char raw[META_PAT_RAW_LEN];
    (void)meta_secrets_init();
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(token, META_PAT_TOKEN_LEN + 1, raw, sizeof(raw),
                      sodium_base64_VARIANT_ORIGINAL);
    sodium_memzero(raw, sizeof(raw));
    meta_pat_digest(token, META_PAT_TOKEN_LEN, digest);
}

int
meta_secret_eq(const void *a, const void *b, size_t n)
{
    return sodium_memcmp(a, b, n) == 0;
}
