/*
 * shard/link/replica_tls.h - the mutual-TLS contexts of the replica
 * links (every mesh: shard 0's and the data shards'), from the
 * replica_tls_* keys of the configuration.
 *
 * Role: the server side requires a peer certificate signed by
 * replica_tls_ca_file; the client side presents this node's certificate
 * and verifies the peer's against the same CA (links.h). One loader so
 * every mesh of a node runs under the same TLS policy.
 * Callers: shard 0's main and the data shards' link set-up, once at
 * start.
 */
#ifndef VS_SHARD_LINK_REPLICA_TLS_H
#define VS_SHARD_LINK_REPLICA_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "common/config.h"

/* With replica_tls_enabled: both contexts (the caller frees them with
 * SSL_CTX_free); off: both NULL. 0, or -EINVAL with the reason in err
 * and nothing to free. */
int link_tls_load(const struct vs_config *cfg, SSL_CTX **server,
                  SSL_CTX **client, char *err, size_t errlen);

#endif /* VS_SHARD_LINK_REPLICA_TLS_H */
