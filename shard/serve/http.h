/*
 * shard/serve/http.h - the node's HTTP endpoint (http_addr): GET
 * /metrics (Prometheus text), /health/live, /health/ready, /ping.
 *
 * Which process serves it: every data shard, on the HTTP listener the
 * supervisor bound before fork (the kernel hands each connection to one
 * of them, as for the client port). Not the supervisor: it stays out of
 * every data path. Not shard 0: /health/ready must answer 503 while
 * shard 0 is still recovering or restarting, which shard 0 itself cannot
 * do. Not a dedicated child: every figure is already readable from the
 * shared segment by any process, and a data shard is up exactly when
 * clients can be served; with K >= 2 a crashed data shard leaves the
 * endpoint served by the others. Each scrape costs one loop callback on
 * one shard, proportional to the number of series (partitions dominate).
 *
 * Limits: GET and HEAD only (others 405), 8 KiB of headers, no body,
 * 5 s timeout; malformed requests get evhttp's 400 and cost only their
 * connection. Callers: data shards, loop thread.
 */
#ifndef VS_SHARD_SERVE_HTTP_H
#define VS_SHARD_SERVE_HTTP_H

#include "ipc/lr.h"
#include "shard/shard.h"

struct event_base;
struct serve_http;

/* Serves on listen_fd (taken over). NULL + errno. */
struct serve_http *serve_http_create(struct event_base *base,
                                     const struct vs_shard_ctx *ctx,
                                     struct vs_lr *lr, int listen_fd);
/* Closes the listener and open HTTP connections. Accepts NULL. */
void serve_http_destroy(struct serve_http *h);

#endif /* VS_SHARD_SERVE_HTTP_H */
