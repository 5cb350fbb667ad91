/*
 * tests/integration/proxy.c - see proxy.h.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/integration/proxy.h"

#define PROXY_PAIRS 16
#define PROXY_BUF   65536

struct proxy_pair {
    int fd[2]; /* accepted, upstream; -1 when free */
};

struct vs_proxy {
    int lfd;
    struct sockaddr_in target;
    pthread_t thread;
    atomic_int cut;
    atomic_int drop; /* discard what the target sends */
    atomic_int stop;
    struct proxy_pair pair[PROXY_PAIRS];
};

static void
pair_close(struct proxy_pair *p)
{
    for (int k = 0; k < 2; k++)
        if (p->fd[k] >= 0) {
            close(p->fd[k]);
            p->fd[k] = -1;
        }
}

/* Moves what is readable from a to b (blocking write of a bounded
 * chunk: loopback, small frames), or discards it. 0, or -1 when the pair
 * must close. */
static int
pump(int a, int b, int discard)
{
    static __thread char buf[PROXY_BUF];
    ssize_t n = read(a, buf, sizeof(buf));
    if (n <= 0)
        return -1;
    if (discard)
        return 0;
    for (ssize_t off = 0; off < n;) {
        ssize_t w = send(b, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        off += w;
    }
    return 0;
}

static void *
proxy_main(void *arg)
{
    struct vs_proxy *p = arg;
    while (!atomic_load(&p->stop)) {
        struct pollfd pf[1 + 2 * PROXY_PAIRS];
        int idx[1 + 2 * PROXY_PAIRS];
        int n = 0;
        pf[n].fd = p->lfd;
        pf[n].events = POLLIN;
        idx[n++] = -1;
        int cut = atomic_load(&p->cut);
        for (int i = 0; i < PROXY_PAIRS; i++) {
            if (p->pair[i].fd[0] < 0)
                continue;
            if (cut) {
                pair_close(&p->pair[i]);
                continue;
            }
            for (int k = 0; k < 2; k++) {
                pf[n].fd = p->pair[i].fd[k];
                pf[n].events = POLLIN;
                idx[n++] = i * 2 + k;
            }
        }
        if (poll(pf, (nfds_t)n, 10) <= 0)
            continue;
        for (int j = 1; j < n; j++) {
            if (!(pf[j].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            struct proxy_pair *pp = &p->pair[idx[j] / 2];
            int k = idx[j] % 2;
            if (pp->fd[0] < 0)
                continue;
            int discard = k == 1 && atomic_load(&p->drop);
            if (pump(pp->fd[k], pp->fd[1 - k], discard) != 0)
                pair_close(pp);
        }
        if (pf[0].revents & POLLIN) {
            int c = accept(p->lfd, NULL, NULL);
            if (c < 0)
                continue;
            struct proxy_pair *free_pair = NULL;
            for (int i = 0; i < PROXY_PAIRS && free_pair == NULL; i++)
                if (p->pair[i].fd[0] < 0)
                    free_pair = &p->pair[i];
            int u = -1;
            if (!atomic_load(&p->cut) && free_pair != NULL) {
                u = socket(AF_INET, SOCK_STREAM, 0);
                if (u >= 0 && connect(u, (struct sockaddr *)&p->target,
                                      sizeof(p->target)) != 0) {
                    close(u);
                    u = -1;
                }
            }
            if (u < 0) {
                close(c);
                continue;
            }
            free_pair->fd[0] = c;
            free_pair->fd[1] = u;
        }
    }
    for (int i = 0; i < PROXY_PAIRS; i++)
        pair_close(&p->pair[i]);
    return NULL;
}

struct vs_proxy *
vs_proxy_start(const char *target, char *addr)
{
    const char *colon = strrchr(target, ':');
    if (colon == NULL)
        return NULL;
    struct vs_proxy *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    for (int i = 0; i < PROXY_PAIRS; i++)
        p->pair[i].fd[0] = p->pair[i].fd[1] = -1;
    p->target.sin_family = AF_INET;
    p->target.sin_port = htons((uint16_t)atoi(colon + 1));
    p->target.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    p->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof(a);
    if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(p->lfd, 16) != 0 ||
        getsockname(p->lfd, (struct sockaddr *)&a, &sl) != 0 ||
        pthread_create(&p->thread, NULL, proxy_main, p) != 0) {
        if (p->lfd >= 0)
            close(p->lfd);
        free(p);
        return NULL;
    }
    snprintf(addr, 32, "127.0.0.1:%u", ntohs(a.sin_port));
    return p;
}

void
vs_proxy_drop_replies(struct vs_proxy *p, int on)
{
    atomic_store(&p->drop, on != 0);
}

void
vs_proxy_cut(struct vs_proxy *p)
{
    atomic_store(&p->cut, 1);
}

void
vs_proxy_heal(struct vs_proxy *p)
{
    atomic_store(&p->cut, 0);
}

void
vs_proxy_stop(struct vs_proxy *p)
{
    if (p == NULL)
        return;
    atomic_store(&p->stop, 1);
    pthread_join(p->thread, NULL);
    close(p->lfd);
    free(p);
}
