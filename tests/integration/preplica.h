/*
 * tests/integration/preplica.h - what the integration tests of replicated
 * partitions share (check_cluster_preplica, check_cluster_pxfer,
 * check_cluster_ptrim): a logged-in handle that stays on one node, a
 * replicated topic of one partition created and waited for on every
 * node, batches of PREP_BATCH tagged messages ("tag-k-j"), a node's
 * history of partition 0 polled from offset 0, and the checks on it.
 * Every wait is bounded; a failure is a Check assertion.
 * Callers: those tests only (the cluster of tests/integration/cluster.h).
 */
#ifndef VS_TESTS_INTEGRATION_PREPLICA_H
#define VS_TESTS_INTEGRATION_PREPLICA_H

#include <stddef.h>
#include <stdint.h>

#include "tests/integration/cluster.h"
#include "tools/client/vsc.h"

#define PREP_BATCH      10u   /* messages per sent batch */
#define PREP_MAX_MSGS   8192u /* the most a history holds */
#define PREP_POLL_COUNT 1000u /* messages per poll */

/* A partition's history as one node polls it: payloads by offset. */
struct prep_history {
    size_t n;
    char text[PREP_MAX_MSGS][48];
};

uint64_t prep_now_ms(void);
/* A logged-in handle on node i of cl that stays there (no leader
 * following) and resends 57/58 for up to io_ms. */
struct vsc *prep_login_on(struct vs_cluster *cl, unsigned i, uint32_t io_ms);
/* Creates stream s and topic t (1 partition, replication factor rf) on c,
 * waits until every node lists its replica set; returns the primary of
 * view 0 (the set's first member). */
unsigned prep_make_topic(struct vs_cluster *cl, struct vsc *c, const char *s,
                         const char *t, uint8_t rf);
/* Sends batch k of `tag` to partition 0: 0 and its base offset, or the
 * call's error. */
int prep_send_batch(struct vsc *c, const char *s, const char *t,
                    const char *tag, unsigned k, uint64_t *base);
/* Poll arguments for partition 0: `count` messages from `offset` for the
 * single consumer *cid (which must outlive *a). */
void prep_poll_args(struct vsc_poll_args *a, const struct vsc_id *cid,
                    uint64_t offset, uint32_t count);
/* One poll of partition 0 at `offset` (up to PREP_BATCH messages): the
 * count returned; the first message's payload in first (48 bytes). */
size_t prep_poll_at(struct vsc *c, const char *s, const char *t,
                    uint64_t offset, char first[48]);
/* Polls partition 0 from offset 0 until `want` messages (or the end);
 * the count read. Asserts consecutive offsets from 0. */
size_t prep_read_history(struct vsc *c, const char *s, const char *t,
                         size_t want, struct prep_history *h);
/* Waits (bounded by ms) until node i's history has `want` messages. */
void prep_wait_history(struct vs_cluster *cl, unsigned i, const char *s,
                       const char *t, size_t want, struct prep_history *h,
                       uint32_t ms);
/* Asserts the histories of nodes na and nb are equal. */
void prep_same_history(const struct prep_history *a,
                       const struct prep_history *b, unsigned na, unsigned nb);
/* Asserts every acknowledged batch k (base[k] != UINT64_MAX) of `tag` is
 * in h exactly once, at base[k] + j. */
void prep_acked_once(const struct prep_history *h, const char *tag,
                     const uint64_t *base, unsigned batches);

#endif
