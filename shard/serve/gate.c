/*
 * shard/serve/gate.c - the readiness gate of a data shard: logins and
 * metadata requests wait (answered 58) until the published metadata has
 * reached the genesis or recovered op; see gate.h.
 * Process: data shards, loop thread.
 */
#include "config.h"

#include "common/log.h"
#include "ipc/lr.h"
#include "shard/meta/state.h"
#include "shard/serve/gate.h"
#include "shard/serve/server.h"

int
serve_gate_open(struct serve *s)
{
    if (s->gate_open)
        return 1;
    uint64_t op = 0;
    const void *st = lr_read_begin(s->lr, &op);
    int done = meta_hdr_c(st)->genesis_done != 0;
    lr_read_end(s->lr);
    if (!done) {
        s->gate_refused++;
        return 0;
    }
    s->gate_open = 1;
    vs_log_info("data shard %u: metadata published at op %llu: serving "
                "logins (%llu requests answered 58 before)",
                s->ctx->slot, (unsigned long long)op,
                (unsigned long long)s->gate_refused);
    return 1;
}
