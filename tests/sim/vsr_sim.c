/*
 * tests/sim/vsr_sim.c - the deterministic simulator's command line:
 * swarm seeds, named regression scenarios, coverage marks.
 *
 *   vsr-sim --seed S [--replicas N] [--ticks T] [--trace]   one seed
 *   vsr-sim --seeds FIRST COUNT [--replicas N]              a range
 *   vsr-sim --scenario NAME [--trace] | --scenarios | --list
 *   vsr-sim --beyond-model FIRST COUNT                      must halt
 * Every run prints one `marks` line (summed by tests/sim/soak); a failing
 * seed prints the failure and the one command that replays it.
 *
 * Fault profiles (--list prints them): `gate` (the default, make check)
 * holds the faults the product survives today; `full` (--full) adds the
 * ones with open findings; --faults names a set. Scenarios with a
 * `gated` reason wait for that work and do not run in make check
 * (--scenarios runs the others; --scenario runs any).
 * Exit: 0 pass, 1 a failure, 2 usage.
 * Callers: make check (tests/sim/check_sim.sh), tests/sim/soak, people.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/assert.h"
#include "common/layout.h"
#include "common/log.h"
#include "tests/sim/sim_world.h"

/* Fault profiles. `gate` (make check, and the default) holds the faults
 * the engine and storage survive today: every fault of the model but
 * disk wipe; `full` adds the ones with open findings (sim-findings.md) so
 * the soak keeps finding them (today latent sector errors); --faults
 * names an exact set. State transfer is not built into the binding: a
 * replica that falls behind a peer's checkpoint cannot catch up, and the
 * liveness checker waives such runs (mark `waived_transfer`); wipe +
 * recover always needs it and is left out of both profiles. Interior WAL
 * corruption makes a replica refuse to boot (a lost disk until `recover`):
 * a run whose stall needs its votes is waived too (`waived_refused`). */
static const char PROFILE_GATE[] =
    "loss,dup,delay,torn,restart,sb_corrupt,crash_backup,crash_primary,"
    "partitions,cluster_restart,bitrot";
static const char PROFILE_FULL[] =
    "loss,dup,delay,torn,restart,sb_corrupt,crash_backup,crash_primary,"
    "partitions,cluster_restart,bitrot,latent";
static const char *faults_spec = NULL; /* --faults / --full */

static int
set_faults(struct sim_faults *f, const char *spec)
{
    memset(f, 0, sizeof(*f));
    static const struct {
        const char *name;
        size_t off;
    } names[] = {
        {"loss", offsetof(struct sim_faults, loss)},
        {"dup", offsetof(struct sim_faults, dup)},
        {"delay", offsetof(struct sim_faults, delay)},
        {"partitions", offsetof(struct sim_faults, partitions)},
        {"crash_backup", offsetof(struct sim_faults, crash_backup)},
        {"crash_primary", offsetof(struct sim_faults, crash_primary)},
        {"restart", offsetof(struct sim_faults, restart)},
        {"torn", offsetof(struct sim_faults, torn)},
        {"bitrot", offsetof(struct sim_faults, bitrot)},
        {"latent", offsetof(struct sim_faults, latent)},
        {"sb_corrupt", offsetof(struct sim_faults, sb_corrupt)},
        {"cluster_restart", offsetof(struct sim_faults, cluster_restart)},
        {"wipe", offsetof(struct sim_faults, wipe)},
    };
    const char *p = spec;
    while (*p) {
        size_t len = strcspn(p, ",");
        size_t k = 0;
        while (k < sizeof(names) / sizeof(names[0]) &&
               (strlen(names[k].name) != len ||
                strncmp(names[k].name, p, len) != 0))
            k++;
        if (k == sizeof(names) / sizeof(names[0]))
            return -1;
        *(int *)((char *)f + names[k].off) = 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

static void
default_faults(struct sim_faults *f, unsigned n)
{
    (void)n; /* one profile for every replica count */
    VS_ASSERT(set_faults(f, faults_spec ? faults_spec : PROFILE_GATE) == 0);
}

static void
print_marks(const struct sim_world *w)
{
    const struct sim_marks *m = &w->m;
    const struct {
        const char *name;
        uint64_t v;
    } k[] = {
        {"crashes", m->crashes},
        {"crash_in_io", m->crashes_in_io},
        {"restarts", m->restarts},
        {"refusals", m->refusals},
        {"torn_cut", m->torn_cut},
        {"damaged_cut", m->damaged_cut},
        {"checkpoints", m->checkpoints},
        {"replays", m->replays},
        {"evictions", m->evictions},
        {"reregisters", m->reregisters},
        {"retries", m->retries},
        {"lost_sessions", m->lost_sessions},
        {"sessionless", m->sessionless},
        {"bitrot", m->bitrot},
        {"latent", m->latent},
        {"sb_corrupt", m->sb_corrupt},
        {"partitions", m->partitions},
        {"cluster_restarts", m->cluster_restarts},
        {"wipes", m->wipes},
        {"waived_transfer", m->waived_transfer},
        {"waived_refused", m->waived_refused},
        {"view_changes", m->view_changes},
        {"sv_adopted", m->sv_adopted},
        {"probe_elections", m->probe_elections},
        {"nack_truncations", m->nack_truncations},
        {"faulty_not_nacked", m->faulty_not_nacked},
        {"truncations", m->truncations},
        {"repairs", m->repairs},
        {"faulty_repaired", m->faulty_repaired},
        {"range_evicted", m->range_evicted},
        {"divergences", m->divergences},
        {"commits", m->commits},
        {"acked", m->acked},
        {"modelled", m->modelled},
    };
    printf("marks n=%u", w->p.n);
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
        printf(" %s=%llu", k[i].name, (unsigned long long)k[i].v);
    printf("\n");
}

struct seed_opts {
    const char *faults;      /* a fault set (NULL: the profile in force) */
    int strict_sessionless;  /* finding F3 fails the run */
    int strict_lost_session; /* finding F2 fails the run */
    int own_reply_bytes;     /* cache replies as shard 0 did (finding F1) */
};

static int
run_seed_opts(uint64_t seed, unsigned n, uint64_t ticks, int trace,
              const struct seed_opts *so)
{
    struct sim_params p;
    sim_world_params(seed, n, &p);
    if (ticks)
        p.ticks = ticks;
    if (so != NULL) {
        p.allow_sessionless = !so->strict_sessionless;
        p.allow_lost_session = !so->strict_lost_session;
        p.own_reply_bytes = so->own_reply_bytes;
    }
    struct sim_faults f;
    const char *saved = faults_spec;
    if (so != NULL && so->faults != NULL)
        faults_spec = so->faults;
    default_faults(&f, p.n);
    const char *spec = faults_spec;
    faults_spec = saved;
    struct sim_world *w = calloc(1, sizeof(*w));
    int rc = sim_world_init(w, seed, &p, &f, trace);
    if (rc != 0) {
        fprintf(stderr, "vsr-sim: seed %llu: cannot build the world: %s\n",
                (unsigned long long)seed, w->failure);
        sim_world_fini(w);
        free(w);
        return 1;
    }
    rc = sim_world_run(w);
    if (rc) {
        printf("FAIL seed %llu (n=%u): %s\n", (unsigned long long)seed, p.n,
               w->failure);
        printf("replay: tests/sim/vsr-sim%s%s --seed %llu --replicas %u "
               "--ticks %llu --trace\n",
               spec == NULL           ? ""
               : spec == PROFILE_FULL ? " --full"
                                      : " --faults ",
               spec == NULL || spec == PROFILE_FULL ? "" : spec,
               (unsigned long long)seed, p.n, (unsigned long long)p.ticks);
    }
    print_marks(w);
    sim_world_fini(w);
    free(w);
    return rc;
}

static int
run_seed(uint64_t seed, unsigned n, uint64_t ticks, int trace)
{
    return run_seed_opts(seed, n, ticks, trace, NULL);
}

/* ------------------------------------------------------- scenarios */

struct scenario {
    const char *name;
    unsigned n;
    const char *gated; /* NULL: runs in make check; else what it waits for */
    int (*fn)(struct sim_world *w);
    /* or a swarm seed replayed with strict switches (fn == NULL) */
    uint64_t seed;
    uint64_t ticks;
    struct seed_opts opts;
};

static int
steps(struct sim_world *w, uint64_t k)
{
    for (uint64_t i = 0; i < k && !w->failed; i++)
        sim_world_step(w);
    return w->failed;
}

/* Drives clients for `k` ticks with faults on (the fault switches of the
 * scenario decide which), then checks liveness. */
static int
finish(struct sim_world *w)
{
    w->p.ticks = w->now;
    return sim_world_run(w);
}

/* n = 1: crash inside the journal append again and again; every boot
 * cuts the torn tail and nothing acknowledged is lost. */
static int
sc_single_torn_tail(struct sim_world *w)
{
    w->faults_on = 1;
    for (int round = 0; round < 12 && !w->failed; round++) {
        steps(w, 150);
        sim_disk_arm_crash(&w->disk[0], 1 + sim_world_rand(w) % 3);
        steps(w, 40);
        if (!w->node[0].up)
            sim_world_crash(w, 0);
        sim_world_restart(w, 0);
    }
    if (w->m.torn_cut == 0 && w->m.damaged_cut == 0)
        sim_world_failf(w, "scenario: no torn tail was cut");
    return finish(w);
}

/* A whole-cluster crash and restart. */
static int
sc_cluster_restart(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 600);
    for (unsigned i = 0; i < w->p.n; i++)
        sim_world_crash(w, i);
    for (unsigned i = 0; i < w->p.n; i++)
        sim_world_restart(w, i);
    steps(w, 600);
    return finish(w);
}

/* A backup crashes inside an append (torn WAL tail), restarts. */
static int
sc_backup_torn_tail(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 400);
    sim_disk_arm_crash(&w->disk[1], 1);
    steps(w, 100);
    sim_world_crash(w, 1);
    sim_world_restart(w, 1);
    steps(w, 600);
    return finish(w);
}

/* The primary crashes between its append and the commit. */
static int
sc_primary_crash_mid_commit(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 400);
    sim_disk_arm_crash(&w->disk[0], 2);
    steps(w, 200);
    sim_world_crash(w, 0);
    steps(w, 600);
    sim_world_restart(w, 0);
    steps(w, 400);
    return finish(w);
}

/* One replica's interior WAL entry rots while it is down. */
static int
sc_bitrot_interior(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 500);
    const struct wal *j = &w->node[2].journal;
    uint64_t op =
        wal_empty(j) ? 1
                     : wal_first_op(j) + (wal_last_op(j) - wal_first_op(j)) / 2;
    sim_world_crash(w, 2);
    if (!sim_world_rot_op(w, 2, op, 0))
        sim_world_failf(w, "scenario: op %llu not in replica 2's journal",
                        (unsigned long long)op);
    /* DESIGN §4: damage before the last entry refuses the boot */
    if (sim_world_restart(w, 2) != 1 ||
        strstr(w->node[2].refuse, "interior") == NULL)
        sim_world_failf(w,
                        "scenario: replica 2 did not refuse an interior "
                        "corruption (%s)",
                        w->node[2].refuse);
    steps(w, 300);
    /* the operator rebuilds it */
    if (sim_node_recover(&w->node[2]) != 0)
        sim_world_failf(w, "scenario: replica 2 does not boot after recover");
    steps(w, 600);
    return finish(w);
}

/* The last entry of a backup is damaged (full length, bad body): it
 * must be cut and repaired, never nacked. */
static int
sc_damaged_last_entry(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 500);
    sim_world_crash(w, 1);
    sim_world_rot_op(w, 1, w->hist_max, 0);
    sim_world_restart(w, 1);
    steps(w, 600);
    return finish(w);
}

/* A replica that voted in a view restarts (its view from the superblock). */
static int
sc_restart_voter(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 300);
    sim_world_crash(w, 0); /* the primary: the others elect view 1 */
    steps(w, 800);
    sim_world_crash(w, 1);
    sim_world_restart(w, 1);
    sim_world_restart(w, 0);
    steps(w, 800);
    return finish(w);
}

/* Two candidates: the primary is isolated while both backups time out. */
static int
sc_duelling_candidates(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 300);
    for (unsigned j = 0; j < w->p.n; j++)
        w->part[0][j] = w->part[j][0] = j != 0;
    w->partitioned = 1;
    steps(w, 900);
    memset(w->part, 0, sizeof(w->part));
    w->partitioned = 0;
    steps(w, 600);
    return finish(w);
}

/* A replica loses its disk and rejoins through recover. */
static int
sc_recover_lost_disk(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 500);
    sim_world_crash(w, 2);
    if (sim_node_recover(&w->node[2]) != 0)
        sim_world_failf(w, "scenario: replica 2 does not boot after recover");
    steps(w, 800);
    return finish(w);
}

static const struct scenario SCENARIOS[] = {
    {"single-torn-tail", 1, NULL, sc_single_torn_tail},
    {"single-cluster-restart", 1, NULL, sc_cluster_restart},
    {"backup-torn-tail", 3, NULL, sc_backup_torn_tail},
    {"primary-crash-mid-commit", 3, NULL, sc_primary_crash_mid_commit},
    {"duelling-candidates", 3, NULL, sc_duelling_candidates},
    {"whole-cluster-restart", 3, NULL, sc_cluster_restart},
    {"damaged-last-entry-repaired", 3, NULL, sc_damaged_last_entry},
    {"bitrot-interior-one-replica", 3,
     "state transfer (the refusing replica is rebuilt by recover)",
     sc_bitrot_interior},
    {"restart-voter", 3, "state transfer (the voter lags a checkpoint)",
     sc_restart_voter},
    {"recover-lost-disk", 3, "state transfer (a rebuilt replica starts empty)",
     sc_recover_lost_disk},
    /* findings of the swarm (tests/sim: sim-findings.md) */
    {"sessionless-reexecution",
     3,
     "F3: apply runs a request whose session was evicted in the pipeline",
     NULL,
     13,
     0,
     {.strict_sessionless = 1}},
    {"reexecution-after-eviction",
     1,
     "F2: a re-register after an eviction re-executes the request in flight",
     NULL,
     2,
     0,
     {.strict_lost_session = 1}},
    {"engine-slot-insert-assert",
     3,
     "E1': slot_insert assertion (shard/vsr/engine.c)",
     NULL,
     89,
     0,
     {.faults = PROFILE_FULL}},
    /* E2: a replica that cut a damaged first entry booted Normal (view
     * 0, empty journal) and, as view 0's primary, built a new op 1 over
     * the committed one; it now starts recovering with the faulty op. */
    {"engine-committed-op-replaced",
     5,
     NULL,
     NULL,
     243,
     0,
     {.faults = PROFILE_FULL}},
    {"engine-faulty-first-entry",
     3,
     NULL,
     NULL,
     300964,
     0,
     {.faults = PROFILE_FULL}},
    /* the faulty mark survives a second crash before the repair (the
     * binding persists VsrState.faulty_op and reads it back) */
    {"faulty-mark-outlives-crash",
     3,
     NULL,
     NULL,
     100650,
     0,
     {.faults = PROFILE_FULL}},
    /* E4: a candidate lagging a checkpoint merged a log whose top lay
     * beyond its journal window and started the view with its head
     * below commit_max; the others refused its StartView as divergent.
     * It now steps aside. */
    {"engine-divergence-counted",
     3,
     NULL,
     NULL,
     16,
     0,
     {.faults = PROFILE_FULL}},
    {"engine-candidate-window-lags",
     5,
     NULL,
     NULL,
     119,
     0,
     {.faults = PROFILE_FULL}},
    {"engine-divergence-partitions", 3, NULL, NULL, 501472, 0, {0}},
    {"engine-view-change-stalls",
     3,
     "E5: a view-change quorum up, the view change never completes",
     NULL,
     73,
     0,
     {.faults = PROFILE_FULL}},
    /* E6: a damaged tail several entries long was cut at boot and only
     * its first op marked faulty: the DVC nacked the committed ops above
     * it implicitly and a view change truncated one. The whole range the
     * cut bytes may have held is faulty now. */
    {"engine-faulty-range-cut",
     3,
     NULL,
     NULL,
     100746,
     0,
     {.faults = PROFILE_FULL}},
    {"engine-faulty-range-cut-2",
     3,
     NULL,
     NULL,
     101238,
     0,
     {.faults = PROFILE_FULL}},
    /* A log adopted over an unknown gap (the canonical headers below op
     * 17 blank): our op 16, superseded by a view, was kept because only
     * op 17 was compared; it is cut now (the gap's ops are checked
     * against the first known canonical parent). */
    {"engine-adopt-unverified-gap",
     5,
     NULL,
     NULL,
     101326,
     0,
     {.faults = PROFILE_FULL}},
    /* Ops of an adopted StartView we never journaled are nacked in this
     * life (they were never acknowledged): two survivors that lacked the
     * bodies truncate them instead of waiting on a refusing replica. */
    {"engine-adopted-ops-nacked",
     3,
     NULL,
     NULL,
     101134,
     0,
     {.faults = PROFILE_FULL}},
    /* The faulty range counts only whole entries the cut bytes may hold
     * (a torn header of one entry marked two ops and stalled the view
     * change with the third replica refusing to boot). */
    {"engine-faulty-range-precise",
     3,
     NULL,
     NULL,
     101034,
     0,
     {.faults = PROFILE_FULL}},
    /* A restarted replica's DVC claimed a log_view whose log it held only
     * a prefix of, and a view change lost committed op 8: the adopted
     * log's reach is persisted with its log_view now. (Its later stall,
     * op 10 of a DVC holder that was down, ended with the repair's
     * fallback beyond the DVC holders in a started view.) */
    {"engine-adopted-log-reach",
     3,
     NULL,
     NULL,
     100154,
     0,
     {.faults = PROFILE_FULL}},
    /* A started view's primary repaired a missing committed op only from
     * its DVC holders (dead); it now asks every peer on alternate rounds. */
    {"engine-repair-beyond-holders",
     3,
     NULL,
     NULL,
     202544,
     0,
     {.faults = PROFILE_FULL}},
    /* After a restart one persisted mark cannot tell the ops of an adopted
     * log never journaled (nackable) from a damaged cut (never nacked):
     * both survivors wait on an op no one acknowledged. */
    {"engine-reach-vs-cut-after-restart",
     3,
     "the damaged cut's top persisted apart from the adopted log's reach "
     "(VsrState v3)",
     NULL,
     203099,
     0,
     {.faults = PROFILE_FULL}},
    {"cached-reply-replica-bytes",
     3,
     "F1: cached replies carry the replica id and view (shard/zero/commit.c)",
     NULL,
     2,
     0,
     {.own_reply_bytes = 1}},
};
#define NSCEN (sizeof(SCENARIOS) / sizeof(SCENARIOS[0]))

static int run_scenario_here(const struct scenario *s, int trace);

/* A scenario in a child process: an abort in the product fails it with
 * its replay command instead of ending the run. */
static int
run_scenario(const struct scenario *s, int trace)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("vsr-sim: fork");
        return 1;
    }
    if (pid == 0) {
        int rc = run_scenario_here(s, trace);
        fflush(stdout);
        _exit(rc ? 1 : 0);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        ;
    if (WIFEXITED(st))
        return WEXITSTATUS(st) ? 1 : 0;
    printf("FAIL scenario %s (n=%u): the run died (signal %d): an assertion "
           "in the product\n",
           s->name, s->n, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    printf("replay: tests/sim/vsr-sim --scenario %s --trace\n", s->name);
    return 1;
}

static int
run_scenario_here(const struct scenario *s, int trace)
{
    if (s->fn == NULL) {
        int rc = run_seed_opts(s->seed, s->n, s->ticks, trace, &s->opts);
        printf("%s scenario %s (n=%u)\n", rc ? "FAIL" : "ok", s->name, s->n);
        if (rc)
            printf("replay: tests/sim/vsr-sim --scenario %s --trace\n",
                   s->name);
        return rc ? 1 : 0;
    }
    struct sim_params p;
    sim_world_params(0x5ce0 + s->n, s->n, &p);
    p.loss_pm = 20;
    p.dup_pm = 20;
    p.ticks = 0;
    p.converge_all = 1;
    struct sim_faults f;
    memset(&f, 0, sizeof(f));
    f.loss = f.dup = f.delay = 1;
    struct sim_world *w = calloc(1, sizeof(*w));
    int rc = sim_world_init(w, 0x5ce0, &p, &f, trace);
    if (rc == 0)
        rc = s->fn(w);
    else
        snprintf(w->failure, sizeof(w->failure), "cannot build: %s",
                 strerror(-rc));
    printf("%s scenario %s (n=%u)%s%s\n", rc ? "FAIL" : "ok", s->name, s->n,
           rc ? ": " : "", rc ? w->failure : "");
    if (rc)
        printf("replay: tests/sim/vsr-sim --scenario %s --trace\n", s->name);
    print_marks(w);
    sim_world_fini(w);
    free(w);
    return rc ? 1 : 0;
}

/* ----------------------------------------------------- beyond model */

/* The same op rots on every replica while all are down: the cluster
 * must refuse or stall; no replica may commit another checksum for it
 * (the history checker) and nothing acknowledged may change. */
static int
run_beyond_model(uint64_t seed)
{
    struct sim_params p;
    sim_world_params(seed, 0, &p);
    if (p.n == 2)
        p.n = 3;
    p.no_operator_cut = 1;
    struct sim_faults f;
    memset(&f, 0, sizeof(f));
    f.loss = f.dup = f.delay = 1;
    struct sim_world *w = calloc(1, sizeof(*w));
    int rc = sim_world_init(w, seed, &p, &f, 0);
    if (rc != 0) {
        free(w);
        return 1;
    }
    w->faults_on = 1;
    steps(w, 500);
    for (unsigned i = 0; i < p.n; i++)
        sim_world_crash(w, i);
    uint64_t op =
        w->hist_max > 2 ? 1 + sim_world_rand(w) % (w->hist_max - 1) : 1;
    for (unsigned i = 0; i < p.n; i++) {
        sim_world_rot_op(w, i, op, (int)(seed & 1));
        if (seed & 2)
            sim_disk_flip(&w->disk[i], VS_SUPERBLOCK_A, 30, 1);
    }
    unsigned booted = 0;
    for (unsigned i = 0; i < p.n; i++)
        booted += sim_world_restart(w, i) == 0;
    steps(w, 1000);
    int bad = w->failed && strncmp(w->failure, "tick", 4) == 0 &&
              strstr(w->failure, "liveness") == NULL &&
              strstr(w->failure, "stopped") == NULL;
    if (bad)
        printf("FAIL beyond-model seed %llu: %s\n", (unsigned long long)seed,
               w->failure);
    (void)booted;
    sim_world_fini(w);
    free(w);
    return bad;
}

/* Runs one seed in a child process, so an assertion in the product (an
 * abort) fails that seed with its replay command instead of ending the
 * whole range. Returns 0 pass, 1 failure. */
static int
run_isolated(uint64_t seed, unsigned n, uint64_t ticks, int beyond)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("vsr-sim: fork");
        return 1;
    }
    if (pid == 0) {
        int rc = beyond ? run_beyond_model(seed) : run_seed(seed, n, ticks, 0);
        fflush(stdout);
        _exit(rc ? 1 : 0);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        ;
    if (WIFEXITED(st))
        return WEXITSTATUS(st) ? 1 : 0;
    struct sim_params p;
    sim_world_params(seed, n, &p);
    printf("FAIL seed %llu (n=%u): the run died (signal %d): an assertion "
           "in the product\n",
           (unsigned long long)seed, p.n, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    printf("replay: tests/sim/vsr-sim%s %s %llu --replicas %u --ticks %llu "
           "--trace\n",
           faults_spec == PROFILE_FULL ? " --full" : "",
           beyond ? "--beyond-model" : "--seed", (unsigned long long)seed, p.n,
           (unsigned long long)(ticks ? ticks : p.ticks));
    return 1;
}

/* -------------------------------------------------------------- main */

static void
usage(void)
{
    fprintf(stderr,
            "usage: vsr-sim --seed S [--replicas N] [--ticks T] [--trace]\n"
            "               [--full | --faults loss,dup,delay,partitions,\n"
            "                crash_backup,crash_primary,restart,torn,bitrot,\n"
            "                latent,sb_corrupt,cluster_restart,wipe]\n"
            "       vsr-sim --seeds FIRST COUNT [--replicas N]\n"
            "       vsr-sim --scenario NAME [--trace] | --scenarios | --list\n"
            "       vsr-sim --beyond-model FIRST COUNT\n");
}

static int
parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

int
main(int argc, char **argv)
{
    uint64_t seed = 0, first = 0, count = 0, ticks = 0, n = 0;
    int have_seed = 0, have_range = 0, trace = 0, beyond = 0, all_sc = 0;
    const char *scenario = NULL;
    /* the product's warnings (a refused boot, an aged-out reply) are
     * expected under faults; --trace shows what happened instead */
    vs_log_set_level(VS_LOG_ERROR);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--seed") == 0 && i + 1 < argc) {
            if (parse_u64(argv[++i], &seed) != 0)
                goto bad;
            have_seed = 1;
        } else if ((strcmp(a, "--seeds") == 0 ||
                    strcmp(a, "--beyond-model") == 0) &&
                   i + 2 < argc) {
            beyond = strcmp(a, "--beyond-model") == 0;
            if (parse_u64(argv[i + 1], &first) != 0 ||
                parse_u64(argv[i + 2], &count) != 0)
                goto bad;
            i += 2;
            have_range = 1;
        } else if (strcmp(a, "--replicas") == 0 && i + 1 < argc) {
            if (parse_u64(argv[++i], &n) != 0 || n < 1 || n > SIM_N_MAX)
                goto bad;
        } else if (strcmp(a, "--ticks") == 0 && i + 1 < argc) {
            if (parse_u64(argv[++i], &ticks) != 0 || ticks == 0)
                goto bad;
        } else if (strcmp(a, "--full") == 0) {
            faults_spec = PROFILE_FULL;
        } else if (strcmp(a, "--faults") == 0 && i + 1 < argc) {
            struct sim_faults probe;
            faults_spec = argv[++i];
            if (set_faults(&probe, faults_spec) != 0) {
                fprintf(stderr, "vsr-sim: unknown fault in %s\n", faults_spec);
                return 2;
            }
        } else if (strcmp(a, "--trace") == 0) {
            trace = 1;
        } else if (strcmp(a, "--scenario") == 0 && i + 1 < argc) {
            scenario = argv[++i];
        } else if (strcmp(a, "--scenarios") == 0) {
            all_sc = 1;
        } else if (strcmp(a, "--list") == 0) {
            for (size_t k = 0; k < NSCEN; k++)
                printf("%s n=%u%s%s\n", SCENARIOS[k].name, SCENARIOS[k].n,
                       SCENARIOS[k].gated ? " gated: waits for " : "",
                       SCENARIOS[k].gated ? SCENARIOS[k].gated : "");
            printf("profile gate: %s (n = 1: the same)\nprofile full: %s\n",
                   PROFILE_GATE, PROFILE_FULL);
            return 0;
        } else {
            goto bad;
        }
    }
    if (scenario != NULL) {
        for (size_t k = 0; k < NSCEN; k++)
            if (strcmp(SCENARIOS[k].name, scenario) == 0)
                return run_scenario(&SCENARIOS[k], trace);
        fprintf(stderr, "vsr-sim: no scenario named %s (see --list)\n",
                scenario);
        return 2;
    }
    if (all_sc) {
        int fails = 0;
        for (size_t k = 0; k < NSCEN; k++)
            if (SCENARIOS[k].gated == NULL)
                fails += run_scenario(&SCENARIOS[k], trace);
        return fails ? 1 : 0;
    }
    if (have_seed)
        return run_seed(seed, (unsigned)n, ticks, trace);
    if (have_range) {
        uint64_t fails = 0;
        for (uint64_t s = first; s < first + count; s++)
            fails += run_isolated(s, (unsigned)n, ticks, beyond);
        printf("%s: %llu seeds from %llu, %llu failed\n",
               beyond ? "beyond-model" : "swarm", (unsigned long long)count,
               (unsigned long long)first, (unsigned long long)fails);
        return fails ? 1 : 0;
    }
bad:
    usage();
    return 2;
}
