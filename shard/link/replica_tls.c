/*
 * shard/link/replica_tls.c - the replica links' TLS contexts; see
 * replica_tls.h.
 * Process: shard 0 and the data shards, at start.
 */
#include "config.h"

#include <errno.h>

#include "common/tls.h"
#include "shard/link/replica_tls.h"

int
link_tls_load(const struct vs_config *cfg, SSL_CTX **server, SSL_CTX **client,
              char *err, size_t errlen)
{
    *server = *client = NULL;
    if (!cfg->replica_tls_enabled)
        return 0;
    struct vs_tls_opts t = {.cert_file = cfg->replica_tls_cert_file,
                            .key_file = cfg->replica_tls_key_file,
                            .ca_file = cfg->replica_tls_ca_file,
                            .cert_what = "replica_tls_cert_file",
                            .key_what = "replica_tls_key_file",
                            .ca_what = "replica_tls_ca_file"};
    *server = vs_tls_server_ctx(&t, err, errlen);
    if (*server == NULL)
        return -EINVAL;
    *client = vs_tls_client_ctx(&t, err, errlen);
    if (*client == NULL) {
        SSL_CTX_free(*server);
        *server = NULL;
        return -EINVAL;
    }
    return 0;
}
