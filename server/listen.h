/*
 * server/listen.h - the node's listening sockets.
 *
 * Role: the supervisor binds the client address and (clustered) this
 * replica's address before forking; the sockets are non-blocking and
 * inherited by the children (no SOCK_CLOEXEC; there is no exec). All
 * data shards watch the one inherited client listener and accept from
 * it directly (the kernel wakes the waiting processes; a shard that loses
 * the race gets EAGAIN; shard/serve/balance.h makes the shards take turns
 * so connections spread evenly, the TLS listener too), so accepting needs
 * no SO_REUSEPORT and no fd passing; an accepted plain-TCP connection may
 * later be passed to the data shard that owns its partitions
 * (shard/serve/handoff.h);
 * shard 0 owns the replica listener.
 * Callers: supervisor (bind), shards (use the inherited fd).
 */
#ifndef VS_SERVER_LISTEN_H
#define VS_SERVER_LISTEN_H

#include <stddef.h>
#include <stdint.h>

/* Binds and listens on "HOST:PORT" ("[v6]:PORT" for IPv6; port 0 picks
 * one). Returns the fd and writes the bound "HOST:PORT" into bound, or
 * -errno with a reason in err. */
int sup_listen(const char *addr, char *bound, size_t boundlen, char *err,
               size_t errlen);

/* Copies entry `index` of the comma-separated list `addrs` into out.
 * 0, or -ENOENT if there are fewer entries, -ENAMETOOLONG. */
int sup_addr_list_get(const char *addrs, uint32_t index, char *out,
                      size_t outlen);
/* Number of entries of a comma-separated list ("" = 0). */
uint32_t sup_addr_list_count(const char *addrs);

#endif /* VS_SERVER_LISTEN_H */
