/*
 * tests/unit/link_fixture.h - helpers of the replica-link suites
 * (check_links, check_dlinks): a non-blocking listener on a 127.0.0.1
 * ephemeral port and one bounded turn of a libevent loop.
 * Callers: those suites' test processes (Check-forked).
 */
#ifndef VS_TESTS_UNIT_LINK_FIXTURE_H
#define VS_TESTS_UNIT_LINK_FIXTURE_H

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

#include <event2/event.h>

/* Listens on 127.0.0.1:0; writes "127.0.0.1:PORT" into addr. */
static inline int
link_listen_any(char *addr, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ck_assert_int_ge(fd, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 16), 0);
    socklen_t sl = sizeof(sa);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    snprintf(addr, len, "127.0.0.1:%u", ntohs(sa.sin_port));
    return fd;
}

/* Runs the loop of b for 10 ms. */
static inline void
link_spin(struct event_base *b)
{
    struct timeval tv = {0, 10000};
    event_base_loopexit(b, &tv);
    event_base_dispatch(b);
}

#endif /* VS_TESTS_UNIT_LINK_FIXTURE_H */
