/*
 * shard/serve/hasher.c - the argon2 worker thread; see hasher.h.
 * Threads: the loop thread (create/submit/destroy and the eventfd
 * callback) and one worker thread (serve_hasher_thread).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>
#include <sodium.h>

#include "common/log.h"
#include "common/mem.h"
#include "shard/meta/secrets.h"
#include "shard/serve/hasher.h"

struct serve_hasher {
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    struct serve_hash_job *pending_head, *pending_tail; /* loop -> worker */
    struct serve_hash_job *done_head, *done_tail;       /* worker -> loop */
    size_t pending;
    int efd;
    struct event *ev;
    uint64_t opslimit, memlimit;
    serve_hash_done_fn *done;
    void *ctx;
};

static void
push(struct serve_hash_job **head, struct serve_hash_job **tail,
     struct serve_hash_job *j)
{
    j->next = NULL;
    if (*tail)
        (*tail)->next = j;
    else
        *head = j;
    *tail = j;
}

struct serve_hash_job *
serve_hash_job_new(enum serve_hash_kind kind)
{
    struct serve_hash_job *j = vs_xcalloc(1, sizeof(*j));
    j->kind = kind;
    return j;
}

void
serve_hash_job_free(struct serve_hash_job *job)
{
    if (job == NULL)
        return;
    sodium_memzero(job, sizeof(*job));
    free(job);
}

static void
run_job(struct serve_hasher *h, struct serve_hash_job *j)
{
    j->result = 0;
    if (j->kind == SERVE_HASH_VERIFY || j->kind == SERVE_HASH_VERIFY_MAKE)
        j->result = meta_password_verify(j->phc, j->pw, j->pw_len);
    if (j->result == 0 && j->kind == SERVE_HASH_MAKE)
        j->result = meta_password_hash(j->pw, j->pw_len, h->opslimit,
                                       h->memlimit, j->out);
    if (j->result == 0 && j->kind == SERVE_HASH_VERIFY_MAKE)
        j->result = meta_password_hash(j->pw2, j->pw2_len, h->opslimit,
                                       h->memlimit, j->out);
    sodium_memzero(j->pw, sizeof(j->pw));
    sodium_memzero(j->pw2, sizeof(j->pw2));
}

static void *
serve_hasher_thread(void *arg)
{
    struct serve_hasher *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->stop && h->pending_head == NULL)
            pthread_cond_wait(&h->cv, &h->mu);
        if (h->stop)
            break;
        struct serve_hash_job *j = h->pending_head;
        h->pending_head = j->next;
        if (h->pending_head == NULL)
            h->pending_tail = NULL;
        pthread_mutex_unlock(&h->mu);
        run_job(h, j);
        pthread_mutex_lock(&h->mu);
        push(&h->done_head, &h->done_tail, j);
        uint64_t one = 1;
        ssize_t n;
        do
            n = write(h->efd, &one, sizeof(one));
        while (n == -1 && errno == EINTR);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static void
serve_hasher_on_event(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct serve_hasher *h = arg;
    uint64_t v;
    ssize_t n;
    do
        n = read(fd, &v, sizeof(v));
    while (n == -1 && errno == EINTR);
    pthread_mutex_lock(&h->mu);
    struct serve_hash_job *list = h->done_head;
    h->done_head = h->done_tail = NULL;
    pthread_mutex_unlock(&h->mu);
    while (list != NULL) {
        struct serve_hash_job *j = list;
        list = j->next;
        j->next = NULL;
        pthread_mutex_lock(&h->mu);
        h->pending--;
        pthread_mutex_unlock(&h->mu);
        h->done(h->ctx, j);
    }
}

struct serve_hasher *
serve_hasher_create(struct event_base *base, uint64_t opslimit,
                    uint64_t memlimit, serve_hash_done_fn *done, void *ctx)
{
    if (meta_secrets_init() != 0) {
        errno = EIO;
        return NULL;
    }
    struct serve_hasher *h = vs_xcalloc(1, sizeof(*h));
    h->opslimit = opslimit;
    h->memlimit = memlimit;
    h->done = done;
    h->ctx = ctx;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    int err = 0;
    h->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (h->efd == -1) {
        err = errno;
        goto fail;
    }
    h->ev =
        event_new(base, h->efd, EV_READ | EV_PERSIST, serve_hasher_on_event, h);
    if (h->ev == NULL || event_add(h->ev, NULL) != 0) {
        err = ENOMEM;
        goto fail;
    }
    err = pthread_create(&h->thread, NULL, serve_hasher_thread, h);
    if (err != 0)
        goto fail;
    h->started = 1;
    return h;
fail:
    serve_hasher_destroy(h);
    errno = err;
    return NULL;
}

void
serve_hasher_submit(struct serve_hasher *h, struct serve_hash_job *job)
{
    pthread_mutex_lock(&h->mu);
    push(&h->pending_head, &h->pending_tail, job);
    h->pending++;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

size_t
serve_hasher_pending(const struct serve_hasher *h)
{
    pthread_mutex_lock((pthread_mutex_t *)&h->mu);
    size_t n = h->pending;
    pthread_mutex_unlock((pthread_mutex_t *)&h->mu);
    return n;
}

static void
free_list(struct serve_hash_job *j)
{
    while (j != NULL) {
        struct serve_hash_job *n = j->next;
        serve_hash_job_free(j);
        j = n;
    }
}

void
serve_hasher_destroy(struct serve_hasher *h)
{
    if (h == NULL)
        return;
    if (h->started) {
        pthread_mutex_lock(&h->mu);
        h->stop = 1;
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->thread, NULL);
    }
    free_list(h->pending_head);
    free_list(h->done_head);
    if (h->ev != NULL)
        event_free(h->ev);
    if (h->efd >= 0)
        close(h->efd);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h);
}
