/*
 * tests/sim/sim_parts.h - replicated partitions in the simulator: P
 * partition consensus groups on every simulated node beside the metadata
 * group, their clients (sends, polls, consumer offsets) and their
 * checkers.
 *
 * Binding: each replica of a group is the production binding
 * shard/serve/pgroup.c (the VSR engine over the replicated partition
 * journal shard/data/pjournal.c and the real partition storage) on the
 * node's sim_sio file system: env->send is the simulated network,
 * env->sync a deterministic completion `disk_delay` ticks later (the
 * target taken when asked, both files fsynced through the sim_sio),
 * env->reply the partition client. The runtime's duties are the sim's:
 * routing by the group id, the request checksum stamp, forwarding a
 * send that reached a backup to the group's primary, reopening a group
 * after its node restarts. Commits are observed after every input
 * (pgroup_commit, the committed prepare read back with pj_read).
 * --parts-local keeps the earlier sim-local binding (the engine bound
 * here over part_append, a journal file of its own and a two-slot state
 * file) for comparison; it dedups by (client, request) and stamps at
 * commit.
 * Deduplication is by the client id and request number (and the request
 * checksum) of the request header; the header's session field carries a
 * transport id that changes at every reconnect and is never used.
 *
 * Faults: a partition frame crosses the same faulty network model as the
 * metadata group (loss, duplication, delay, the world's partitions);
 * a group replica is down whenever its node is (a node crash crashes its
 * sim_sio: unsynced writes lost or torn); crashes armed inside storage
 * calls, flips and latent sectors in the journal and segments while a
 * node is down (at most f replicas of a group). Every draw comes from
 * this module's own stream, so the metadata group's runs are unchanged.
 *
 * Checkers (a failure stops the run through sim_world_failf):
 *  - one committed history per partition: no op committed with two
 *    checksums, commits in op order on every replica;
 *  - no acknowledged batch lost: an acked send stays at its op and its
 *    offsets forever, and after the faults stop every replica converges
 *    past it;
 *  - offsets never handed out twice: no two different committed batches
 *    (stamped bytes) at one offset, on any replica, in any life;
 *  - equal outputs: every replica's apply output of an op is equal, and
 *    equal to the committed-log model's (offsets, stores' results);
 *  - polls never return an uncommitted or foreign batch;
 *  - no PrepareOk above the durable journal op (both bindings), and
 *    persist-before-send (the sim-local one: pgroup.c's superblock is
 *    its own);
 *  - after convergence the replicas' partitions are byte-identical up to
 *    their commit and their consumer offsets equal.
 *
 * Callers: tests/sim/sim_world.c (step, liveness) and vsr_sim.c (one
 * thread).
 */
#ifndef VS_TESTS_SIM_PARTS_H
#define VS_TESTS_SIM_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/vsr/engine.h"

struct sim_world;

#define SIM_PARTS_MAX 8
/* group id of partition 0 under the sim-local binding */
#define SIM_PARTS_GROUP0 ((uint64_t)1 << 40)

struct sim_parts_opts {
    unsigned partitions; /* 1..SIM_PARTS_MAX */
    unsigned clients;    /* partition clients */
    /* 0: leave the partition's offsets/ subdirectories as part_open
     * created them (their entries are never fsynced: a crash may lose
     * them); 1: the binding fsyncs offsets/ after every open */
    int no_offsets_fsync;
    int local_binding; /* 1: the sim-local binding instead of pgroup.c */
    /* 1: clients also store offsets beyond the committed log (refused
     * with InvalidOffset), and the network duplicates requests too (late
     * copies of answered ones). Off by default: with them, seed 426
     * shows a replica that crashed before anything was durable rejoin
     * as fresh (reported to pj); the replay and dedup findings they were
     * added for are fixed (pj 7dd8611). */
    int bad_offsets;
    int dup_requests;
};

struct sim_parts_marks {
    uint64_t commits, acked, sends, stores, polls, polled_batches, forwards,
        not_ready, dedup_hits, reconnects, side_crashes, side_fatal, boots,
        torn_cut, faulty_cut, interior_cut, part_rebuilt, part_refused, flips,
        latent, damaged_reads, view_changes, repairs, truncations,
        faulty_repaired, state_transfer, waived_refused,
        waived_crash, /* of them: a group refused after a crash alone */
        unobserved, offset_gaps, pg_refused, pg_duplicates, stale,
        pg_installs; /* partition state transfers installed */
};

struct sim_parts;

/* Attaches P partition groups to every node of `w` (after
 * sim_world_init); the world steps them, and its liveness phase waits for
 * them. 0 or -errno. */
int sim_parts_attach(struct sim_world *w, const struct sim_parts_opts *o);
/* Called by the world (sim_world.c). */
void sim_parts_step(struct sim_world *w);
void sim_parts_heal(struct sim_world *w);
int sim_parts_converged(struct sim_world *w);
/* After the liveness phase: the convergence checks, or the reason the
 * groups did not converge. */
void sim_parts_finish(struct sim_world *w);
void sim_parts_detach(struct sim_world *w);
void sim_parts_get_marks(const struct sim_world *w, struct sim_parts_marks *m);

/* ---- scenario building blocks ---- */
/* The node hosting replica index `replica` of partition k. */
unsigned sim_parts_node_of(const struct sim_world *w, unsigned k,
                           unsigned replica);
/* The node of partition k's current primary, or -1. */
int sim_parts_primary(const struct sim_world *w, unsigned k);
/* Acked sends so far, and the highest committed op of partition k on
 * any replica. */
uint64_t sim_parts_acked(const struct sim_world *w);
uint64_t sim_parts_commit(const struct sim_world *w, unsigned k);
/* Arms a crash of node i's partition storage at its nth next mutating
 * call (the side then stops and restarts like a crashed data shard). */
void sim_parts_arm_crash(struct sim_world *w, unsigned node, uint64_t nth);
/* Damages the last journal record of partition k on node i (down): its
 * body (in_header 0) or its header. 1 done, 0 nothing to damage. */
int sim_parts_rot_tail(struct sim_world *w, unsigned node, unsigned k,
                       int in_header);
/* Production binding: the primary of partition k proposes a trim of its
 * oldest sealed segments, `segments` of them or as many as are sealed
 * (then the watermark is the active segment's start; pgroup_on_trim). 1
 * proposed, 0 no primary or no sealed segment, -1 refused. */
int sim_parts_trim(struct sim_world *w, unsigned k, unsigned segments);
/* Start offset of partition k's first segment on node i (up), or
 * UINT64_MAX; and the trims its group applied there. */
uint64_t sim_parts_first_offset(const struct sim_world *w, unsigned node,
                                unsigned k, uint64_t *trims);
/* The group id of partition k. */
uint64_t sim_parts_group_id(const struct sim_world *w, unsigned k);
/* The group id a replica frame carries (by command), 0 if none. */
uint64_t sim_parts_frame_group(const uint8_t *frame, uint32_t len);
/* Scenarios: sees every partition frame before the network takes it
 * (1: drop it). */
void sim_parts_set_tamper(struct sim_world *w,
                          int (*fn)(void *ctx, unsigned from, unsigned to,
                                    uint8_t *frame, uint32_t len),
                          void *ctx);
/* Every partition client changes its transport id (a reconnect) and
 * resends its outstanding request. */
void sim_parts_reconnect_all(struct sim_world *w);
/* The journal head of partition k's replica on node i (-1: down). */
int64_t sim_parts_head(const struct sim_world *w, unsigned node, unsigned k);
/* The highest durable journal op of that replica (-1: down). */
int64_t sim_parts_durable(const struct sim_world *w, unsigned node, unsigned k);
/* The engine's faulty-range top of that replica (0: none or down). */
uint64_t sim_parts_faulty(const struct sim_world *w, unsigned node, unsigned k);
/* Verdict `v` counted by every replica of every group (all lives). */
uint64_t sim_parts_verdicts(const struct sim_world *w, enum vsr_verdict v);
/* Engine counters of partition k's replica on node i (this life). */
const struct vs_vsr_stats *sim_parts_stats(const struct sim_world *w,
                                           unsigned node, unsigned k);

#endif /* VS_TESTS_SIM_PARTS_H */
