/*
 * common/secret.h - the cluster secret file (DESIGN §3): the 32-byte key
 * of the replica links' challenge-response MAC.
 *
 * The file holds exactly 32 raw bytes, or 64 hex digits (optionally
 * followed by one newline, as `openssl rand -hex 32 > FILE` writes it). It
 * must be a regular file readable by nobody but its owner (mode & 077 ==
 * 0): a secret others can read is refused, never used.
 * Callers: the supervisor (to refuse a bad file at start with one line)
 * and shard 0 (which reads it again for the links). Pure file I/O.
 */
#ifndef VS_COMMON_SECRET_H
#define VS_COMMON_SECRET_H

#include <stddef.h>
#include <stdint.h>

#define VS_SECRET_BYTES 32u

/* Reads the secret at `path` into key. Returns 0, or -errno with a
 * one-line reason in err naming the file (missing, not a regular file,
 * mode too open, wrong length, not hex). */
int vs_secret_load(const char *path, uint8_t key[VS_SECRET_BYTES], char *err,
                   size_t errlen);

#endif /* VS_COMMON_SECRET_H */
