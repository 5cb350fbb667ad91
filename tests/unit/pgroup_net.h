/*
 * tests/unit/pgroup_net.h - three replicas of one partition group in one
 * process, the harness of the pgroup and pxfer unit tests: each replica
 * on its own partition in its own temp dir, wired by an in-memory queue
 * (env->send; a step delivers what was queued before it, then ticks),
 * fsyncs done synchronously after each delivery (env->sync; superblock
 * fsyncs too when pn_async_state sets env->state_sync), links and
 * commands droppable, replies recorded. Every wait is bounded in steps.
 * Invariants: one test at a time (the state is global); pn_setup before
 * and pn_teardown after each test. Callers: check_pgroup, check_pxfer.
 */
#ifndef VS_TESTS_UNIT_PGROUP_NET_H
#define VS_TESTS_UNIT_PGROUP_NET_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/data/partition.h"
#include "shard/serve/pgroup.h"
#include "shard/storage/io.h"

#define PN_N         3
#define PN_QMAX      20000
#define PN_MAX_STEPS 20000

struct pn_msg {
    uint8_t from, to;
    uint32_t len;
    uint8_t *data;
};

struct pn_reply {
    struct vs_u128 client;
    uint64_t request;
    struct vs_u128 request_checksum;
    uint64_t base_offset; /* from a send's confirmation */
    uint32_t body_len;
    uint64_t op;
    uint32_t status;
    int node;
};

struct pn_node {
    int idx;
    char root[256], parts[300];
    struct sio_fault f;
    struct vs_part *p;
    struct vs_pgroup *g;
    int up;
    int want_sync;
    uint64_t boots;
    int state_fd; /* env->state_sync asked for this fd's fsync (or -1) */
    /* env->files_sync's request waiting in pn_do_syncs (dup'd fds) */
    int *files;
    size_t n_files;
    struct pxfer_sync *files_tok;
    uint64_t files_synced; /* fds fsynced for it so far */
};

/* What a test adds to the harness (either may be NULL). */
struct pn_hooks {
    /* Node n sent `frame`; m is its queued copy (NULL: the queue was
     * full, the send failed) which the hook may alter. */
    void (*sent)(struct pn_node *n, const void *frame, size_t len,
                 struct pn_msg *m);
    /* The end of each step (after its ticks and syncs). */
    void (*stepped)(void);
};

extern const struct part_id pn_id;
extern const struct vs_u128 pn_cluster;
extern struct pn_node pn_nodes[PN_N];
extern struct pn_msg pn_q[PN_QMAX];
extern size_t pn_nq;
/* drop[from][to]: messages on that link are lost */
extern int pn_drop[PN_N][PN_N];
/* drop_cmd[from][to][command]: only that command is lost */
extern int pn_drop_cmd[PN_N][PN_N][256];
extern struct pn_reply pn_rep[8192];
extern size_t pn_nrep;
/* hold_sync[node]: its fsyncs do not complete (a slow disk) */
extern int pn_hold_sync[PN_N];
extern uint64_t pn_wall;
extern uint64_t pn_repair_requests;
/* the next starts' journal slots, durability and part_opts.replicated
 * (the group's superblock made at create); reset by pn_setup */
extern uint32_t pn_slots;
extern enum part_durability pn_durability;
extern int pn_replicated;
/* env->state_sync set: superblock fsyncs complete in pn_do_syncs,
 * unless held (hold_state[node]) */
extern int pn_async_state;
extern int pn_hold_state[PN_N];
/* env->files_sync set (read at each start): a state transfer's install
 * fsyncs complete in pn_do_syncs, unless held (hold_files[node]) */
extern int pn_async_files;
extern int pn_hold_files[PN_N];
/* every start's pgroup_opts.fetch_budget (NULL: none); reset by pn_setup */
extern struct pxfer_budget *pn_fetch_budget;
/* view change messages each node sent (StartViewChange, DoViewChange,
 * StartView) */
extern uint64_t pn_vc_sent[PN_N];

/* Resets the state, keeps the hooks, starts the three replicas. */
void pn_setup(const struct pn_hooks *h);
void pn_teardown(void);

struct pgroup_opts pn_group_opts(struct pn_node *n);
/* The harness's callbacks for node n (state_sync per pn_async_state). */
struct pgroup_env pn_env(struct pn_node *n);
void pn_node_start(struct pn_node *n);
/* A crash: nothing more is synced or written. */
void pn_node_kill(struct pn_node *n);
/* A lost disk: the node's partition directory is gone (a fresh member
 * again at its next start). */
void pn_node_wipe(struct pn_node *n);

void pn_do_syncs(void);
/* Delivers what is queued now (new messages wait for the next step),
 * syncs, then ticks every live node. */
void pn_step(void);
int pn_settled_primary(void);
/* Steps until a settled primary other than `not_this` exists. */
int pn_wait_primary(int not_this);

struct vs_hdr_request pn_request(uint64_t client, uint64_t req);
/* A batch of n (1..4) messages of 20..219 payload bytes from seed. */
uint8_t *pn_client_batch(uint64_t seed, uint32_t n, size_t *len);
/* A send of `msgs` messages at `node`: pgroup_on_send's result. */
int pn_send_on(int node, uint64_t client, uint64_t req, uint32_t msgs);
int pn_offset_op(int node, uint64_t client, uint64_t req, uint8_t operation,
                 uint32_t consumer, uint64_t offset);
const struct pn_reply *pn_find_reply(uint64_t client, uint64_t req,
                                     uint32_t status);
size_t pn_count_replies(uint64_t client, uint64_t req);
void pn_wait_reply(uint64_t client, uint64_t req);
void pn_wait_status(uint64_t client, uint64_t req, uint32_t status);
/* Sends requests first..last of `clients` clients through the primary
 * (one in flight per client), waiting for each round's replies. */
void pn_produce(uint64_t clients, uint64_t first, uint64_t last);
void pn_wait_commit_all(uint64_t op);
/* Messages node's partition serves from offset 0; *last (may be NULL)
 * the last offset. */
uint32_t pn_polled(int node, uint64_t *last);
/* Every segment's .log and .vsr are byte-identical on the live nodes. */
void pn_files_identical(void);

#endif /* VS_TESTS_UNIT_PGROUP_NET_H */
