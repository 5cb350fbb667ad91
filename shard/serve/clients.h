/*
 * shard/serve/clients.h - a data shard's side of the node's client
 * connection table (ipc/conntab.h): every accepted connection holds an
 * entry for its life, so max_connections is enforced node-wide (a
 * connection that finds no free entry is refused) and GetClients /
 * GetClient list the connections of every data shard.
 *
 * Rules: the entry is claimed at accept (after the peer address is
 * known), updated at bind and unbind (user id, registered client id) and
 * released when the connection is freed, or adopted by the data shard
 * the connection is handed to (handoff.h). A starting data shard first
 * releases what its slot's previous incarnation left (the supervisor
 * does too, after reaping it). Without a table in the segment (tests
 * that build one without it) the shard falls back to its own
 * connections and a per-shard share of the limit.
 * Callers: the data shard's loop thread (conn.c, serve.c).
 */
#ifndef VS_SHARD_SERVE_CLIENTS_H
#define VS_SHARD_SERVE_CLIENTS_H

#include "shard/serve/reads.h"

struct serve;
struct serve_conn;

struct vs_conntab;
/* The node's table (attached on first use), or NULL without one. */
struct vs_conntab *serve_clients_table(struct serve *s);
/* 1 if no connection can be admitted now (the node is full). */
int serve_clients_full(struct serve *s);
/* Claims c's entry. 0, or -EMFILE (node full: refuse c). */
int serve_clients_admit(struct serve_conn *c);
/* c was bound or unbound: republish its session. */
void serve_clients_session(struct serve_conn *c);
/* c is being freed. */
void serve_clients_gone(struct serve_conn *c);
/* Read env callbacks (reads.h) over the node's connections. */
int serve_clients_by_id(void *srv, uint32_t id, struct serve_client_info *out);
void serve_clients_each(void *srv, serve_client_visit_fn *fn, void *fnarg);

#endif /* VS_SHARD_SERVE_CLIENTS_H */
