/*
 * shard/serve/prom.h - the node's figures in Prometheus text format
 * (version 0.0.4) and its readiness verdict, computed from the shared
 * segment alone: every process's metrics block (common/metrics.h), the
 * process slots (ready flags, incarnations), the IPC ring headers, the
 * per-partition stats table and, for partition labels, the published
 * metadata (one short left-right read section that copies ids).
 * Callers: a data shard's loop thread (the HTTP endpoint, http.h).
 */
#ifndef VS_SHARD_SERVE_PROM_H
#define VS_SHARD_SERVE_PROM_H

#include <stddef.h>

#include "ipc/lr.h"
#include "shard/shard.h"

struct evbuffer;

/* 1 when this node serves clients: not stopping, shard 0 recovered and
 * serving, every data shard serving, and on a cluster the metadata group
 * in a normal view. Else 0 with the first reason in why. */
int serve_node_ready(const struct vs_shard_ctx *ctx, char *why, size_t len);

/* Appends the whole exposition to out. lr: a started reader. */
void serve_prom_render(const struct vs_shard_ctx *ctx, struct vs_lr *lr,
                       struct evbuffer *out);

#endif /* VS_SHARD_SERVE_PROM_H */
