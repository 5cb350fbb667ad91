/*
 * shard/zero/gauges.c - shard 0's consensus gauges; see gauges.h.
 * Shard 0 only.
 */
#include "config.h"

#include "common/metrics.h"
#include "shard/vsr/engine.h"
#include "shard/zero/commit.h"
#include "shard/zero/gauges.h"
#include "shard/link/links.h"

void
shard0_gauges_publish(const struct commit *c, const struct links *l)
{
    const struct vs_vsr *v = commit_engine(c);
    if (v == NULL)
        return;
    uint64_t status;
    switch (vsr_status(v)) {
    case VSR_STATUS_NORMAL:
        status = 1;
        break;
    case VSR_STATUS_VIEW_CHANGE:
        status = 2;
        break;
    default:
        status = 3;
        break;
    }
    vs_metrics_set(VS_M_VSR_VIEW, vsr_view(v));
    vs_metrics_set(VS_M_VSR_LOG_VIEW, vsr_log_view(v));
    vs_metrics_set(VS_M_VSR_OP, vsr_op(v));
    /* commit_min: what this node executed, as `vstream cluster` COMMIT */
    vs_metrics_set(VS_M_VSR_COMMIT, vsr_commit_min(v));
    vs_metrics_set(VS_M_VSR_ROLE, vsr_is_primary(v) ? 1 : 2);
    vs_metrics_set(VS_M_VSR_STATUS, status);
    const struct vs_vsr_stats *st = vsr_stats(v);
    vs_metrics_set(VS_M_VSR_VIEW_CHANGES, st->view_changes);
    vs_metrics_set(VS_M_VSR_REPAIRS, st->repairs);
    vs_metrics_set(VS_M_VSR_STATE_TRANSFERS, st->installs);
    if (l == NULL)
        return;
    uint64_t up = 0;
    for (unsigned p = 0; p < VS_M_LINKS; p++) {
        struct links_peer_info in;
        links_peer(l, (uint8_t)p, &in);
        uint64_t state = in.state == LINKS_UP     ? 2
                         : in.state == LINKS_DOWN ? 0
                                                  : 1;
        up += state == 2;
        vs_metrics_set(VS_M_LINK_STATE(p), state);
        vs_metrics_set(VS_M_LINK_SENT(p), in.bytes_out);
        vs_metrics_set(VS_M_LINK_RECV(p), in.bytes_in);
    }
    vs_metrics_set(VS_M_VSR_LINKS_UP, up);
}
