/*
 * shard/meta/grants.h - internal: sorted views of the permission grant
 * tables (for encoding permissions and snapshots) and grant removal.
 * Callers: shard/meta only.
 */
#ifndef VS_SHARD_META_GRANTS_H
#define VS_SHARD_META_GRANTS_H

#include <stdint.h>

#include "shard/meta/state.h"

/* Slots of the live grants, sorted by (user, stream[, topic]). If user !=
 * META_NONE only that user's grants. Heap arrays: free() them. */
struct meta_grant_view {
    uint32_t ns, nt;
    uint32_t *s; /* sgrant slots */
    uint32_t *t; /* tgrant slots */
};
void meta_grants_collect(const void *st, uint32_t user,
                         struct meta_grant_view *v);
void meta_grants_view_fini(struct meta_grant_view *v);

/* Removes grants: of a user (stream == META_NONE), naming a stream, or
 * naming (stream, topic). only_dangling: only those with dangling = 1. */
void meta_grants_remove(void *st, uint32_t user, uint32_t stream,
                        uint32_t topic, int only_dangling);

#endif /* VS_SHARD_META_GRANTS_H */
