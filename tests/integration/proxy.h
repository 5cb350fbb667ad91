/*
 * tests/integration/proxy.h - a small TCP fault proxy for the cluster
 * tests: it listens on a free loopback port and forwards every accepted
 * connection to a target address, both directions, until it is cut.
 *
 * Role: a cluster test points node i's replica address of node j at a
 * proxy (cluster.h vs_cluster_set_peer), so it can cut and heal the link
 * between them. vs_proxy_cut() closes every forwarded connection and
 * makes the proxy close new ones at once (a partition: the dialer keeps
 * retrying with its back-off); vs_proxy_heal() forwards again;
 * vs_proxy_drop_replies() loses what the target sends while the
 * connections stay up (a reply lost in flight). One thread
 * per proxy (poll loop, bounded buffers, 10 ms wake-ups to see cut/stop).
 * Callers: the Check-forked test process of the cluster tests.
 */
#ifndef VS_TESTS_PROXY_H
#define VS_TESTS_PROXY_H

struct vs_proxy;

/* Starts a proxy to `target` ("127.0.0.1:PORT"); its listening address
 * goes to addr (>= 32 bytes). NULL on failure. */
struct vs_proxy *vs_proxy_start(const char *target, char *addr);
void vs_proxy_cut(struct vs_proxy *p);
/* on: bytes from the target are read and discarded (replies lost, the
 * connections stay open); off: forwarded again. */
void vs_proxy_drop_replies(struct vs_proxy *p, int on);
void vs_proxy_heal(struct vs_proxy *p);
/* Stops the thread, closes everything, frees. NULL is accepted. */
void vs_proxy_stop(struct vs_proxy *p);

#endif /* VS_TESTS_PROXY_H */
