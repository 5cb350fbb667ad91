/*
 * shard/serve/hasher.h - argon2id work off a data shard's event loop.
 *
 * Role: one worker thread per data shard runs password verifications
 * and hashes (argon2 is slow by design, DESIGN §5) from a FIFO of jobs;
 * finished jobs go back to the loop through an eventfd that is an event
 * on the loop's base, where `done` is called once per job, on the loop
 * thread, in completion order. Plaintext passwords are wiped
 * (sodium_memzero) as soon as the thread used them and again when a job
 * is freed.
 *
 * Invariants: the loop thread owns a job before submit and after done;
 * the worker owns it in between; the queue lock is never held while
 * hashing. serve_hasher_destroy stops the thread (the job being hashed
 * finishes first) and frees unfinished jobs without calling done.
 *
 * Callers: the data shard's loop thread (create, submit, destroy).
 */
#ifndef VS_SHARD_SERVE_HASHER_H
#define VS_SHARD_SERVE_HASHER_H

#include <stddef.h>
#include <stdint.h>

#include "shard/meta/state.h"

struct event_base;
struct serve_hasher;

enum serve_hash_kind {
    SERVE_HASH_VERIFY = 1, /* pw against phc -> result 0 / -EACCES */
    SERVE_HASH_MAKE,       /* hash pw -> out */
    SERVE_HASH_VERIFY_MAKE /* verify pw against phc, then hash pw2 */
};

struct serve_hash_job {
    enum serve_hash_kind kind;
    uint64_t conn_id; /* the caller's correlation */
    uint64_t tag;
    char phc[META_PWHASH_MAX];
    char pw[256];
    size_t pw_len;
    char pw2[256];
    size_t pw2_len;
    int result; /* 0, -EACCES (verify failed), -ENOMEM/-EIO */
    char out[META_PWHASH_MAX];
    struct serve_hash_job *next;
};

typedef void serve_hash_done_fn(void *ctx, struct serve_hash_job *job);

/* Starts the worker thread. NULL + errno on failure. */
struct serve_hasher *serve_hasher_create(struct event_base *base,
                                         uint64_t opslimit, uint64_t memlimit,
                                         serve_hash_done_fn *done, void *ctx);
/* A zeroed job (heap). */
struct serve_hash_job *serve_hash_job_new(enum serve_hash_kind kind);
/* Wipes and frees a job (accepts NULL). */
void serve_hash_job_free(struct serve_hash_job *job);
/* Queues a job; the hasher owns it until done. */
void serve_hasher_submit(struct serve_hasher *h, struct serve_hash_job *job);
/* Jobs queued or running. */
size_t serve_hasher_pending(const struct serve_hasher *h);
/* Stops and joins the thread, frees what is left. Accepts NULL. */
void serve_hasher_destroy(struct serve_hasher *h);

#endif /* VS_SHARD_SERVE_HASHER_H */
