/*
 * tests/sim/vsr_sim.c - the deterministic simulator's command line:
 * swarm seeds, named regression scenarios, coverage marks.
 *
 *   vsr-sim --seed S [--replicas N] [--ticks T] [--trace]   one seed
 *   vsr-sim --seeds FIRST COUNT [--replicas N]              a range
 *   ... --partitions P     P replicated partition groups beside the
 *                          metadata group (sim_parts.h), 0 by default
 *   vsr-sim --scenario NAME [--trace] | --scenarios | --list
 *   vsr-sim --beyond-model FIRST COUNT                      must halt
 *   ... --refused-bootable  the refused-votes waiver's counterfactual:
 *                          replicas refusing to boot get their disks
 *                          restored when the faults stop (no waiver)
 *   ... --torn-lost M LO HI MASK  the torn-copies waiver's counterfactual
 *                          (M 1: appends of ops LO..HI on replicas MASK
 *                          that a crash would tear are lost whole; M 2:
 *                          nothing lost, its mutation); no such waiver
 *   ... --torn-synced MASK  its mutation: those replicas' torn writes are
 *                          recorded as fsynced before the crash
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
#include "common/checksum.h"
#include "common/layout.h"
#include "common/log.h"
#include "shard/meta/lookup.h"
#include "shard/meta/ops.h"
#include "shard/meta/snapshot_codec.h"
#include "shard/zero/transfer.h"
#include "tests/sim/sim_parts.h"
#include "tests/sim/sim_world.h"

/* Fault profiles. `gate` (make check, and the default) holds the faults
 * the engine and storage survive today: every fault of the model but
 * latent read errors and disk wipe; `full` adds those two (and any fault
 * with an open finding, sim-findings.md) so the soak keeps finding them;
 * --faults names an exact set. A replica that falls behind its peers'
 * checkpoints catches up by state transfer (sim_xfer.h); the liveness
 * checker waives only a view whose primary itself is behind every peer's
 * journal (`waived_transfer`). Interior WAL corruption makes a replica
 * refuse to boot (a lost disk until `recover`): a run whose stall is
 * undecidable without it is waived too (`waived_refused`), and proven
 * by a second run of the seed with that replica made bootable, which
 * must converge (run_seed_opts). Wipe + recover (one replica
 * at a time, only when it is the only fault) is in `full`. */
static const char PROFILE_GATE[] =
    "loss,dup,delay,torn,restart,sb_corrupt,crash_backup,crash_primary,"
    "partitions,cluster_restart,bitrot";
static const char PROFILE_FULL[] =
    "loss,dup,delay,torn,restart,sb_corrupt,crash_backup,crash_primary,"
    "partitions,cluster_restart,bitrot,latent,wipe";
static const char *faults_spec = NULL; /* --faults / --full */
/* Replicated partition groups beside the metadata group (sim_parts.h):
 * --partitions N (0: none); --no-offsets-fsync leaves the consumer-offset
 * directories as part_open creates them. */
static unsigned g_partitions = 0;
static int g_no_offsets_fsync = 0;
static int g_parts_local = 0;  /* --parts-local: the sim-local binding */
static int g_bad_offsets = 0;  /* --parts-bad-offsets */
static int g_dup_requests = 0; /* --parts-dup-requests */
/* --group-commit: metadata journal appends stay unsynced until their
 * completion, as shard 0's group commit leaves them (sim_node.h) */
static int g_group_commit = 0;

/* Attaches the partition groups to a built world (if asked). 0 or -errno
 * with w->failure set. */
static int
attach_parts(struct sim_world *w, unsigned partitions)
{
    if (partitions == 0)
        return 0;
    struct sim_parts_opts o = {
        .partitions = partitions,
        .clients = partitions + 1 > 8 ? 8 : partitions + 1,
        .no_offsets_fsync = g_no_offsets_fsync,
        .local_binding = g_parts_local,
        .bad_offsets = g_bad_offsets || g_parts_local,
        .dup_requests = g_dup_requests,
    };
    int rc = sim_parts_attach(w, &o);
    if (rc != 0 && w->failure[0] == '\0')
        snprintf(w->failure, sizeof(w->failure),
                 "cannot attach the partition groups: %s", strerror(-rc));
    return rc;
}

/* The replay options of the partition groups ("" without). */
static const char *
parts_args(void)
{
    static char b[128];
    snprintf(b, sizeof(b), g_partitions ? " --partitions %u%s%s%s%s" : "",
             g_partitions, g_no_offsets_fsync ? " --no-offsets-fsync" : "",
             g_parts_local ? " --parts-local" : "",
             g_bad_offsets ? " --parts-bad-offsets" : "",
             g_dup_requests ? " --parts-dup-requests" : "");
    if (g_group_commit)
        strncat(b, " --group-commit", sizeof(b) - strlen(b) - 1);
    return b;
}

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
        {"group_tails", m->group_tails},
        {"mark_cuts", m->mark_cuts},
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
        {"xfer_begun", m->xfer_begun},
        {"xfer_installs", m->xfer_installs},
        {"xfer_table_only", m->xfer_table_only},
        {"xfer_retargets", m->xfer_retargets},
        {"xfer_abandoned", m->xfer_abandoned},
        {"xfer_served", m->xfer_served},
        {"xfer_tables", m->xfer_tables},
        {"waived_refused", m->waived_refused},
        {"waived_torn", m->waived_torn},
        {"lost_whole", m->lost_whole},
        {"view_changes", m->view_changes},
        {"sv_adopted", m->sv_adopted},
        {"probe_elections", m->probe_elections},
        {"nack_truncations", m->nack_truncations},
        {"older_adopted", m->older_adopted},
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
    if (w->parts != NULL) {
        struct sim_parts_marks pm;
        sim_parts_get_marks(w, &pm);
        const struct {
            const char *name;
            uint64_t v;
        } q[] = {
            {"p_commits", pm.commits},
            {"p_acked", pm.acked},
            {"p_sends", pm.sends},
            {"p_stores", pm.stores},
            {"p_polls", pm.polls},
            {"p_polled_batches", pm.polled_batches},
            {"p_forwards", pm.forwards},
            {"p_not_ready", pm.not_ready},
            {"p_dedup_hits", pm.dedup_hits},
            {"p_reconnects", pm.reconnects},
            {"p_side_crashes", pm.side_crashes},
            {"p_side_fatal", pm.side_fatal},
            {"p_boots", pm.boots},
            {"p_torn_cut", pm.torn_cut},
            {"p_faulty_cut", pm.faulty_cut},
            {"p_interior_cut", pm.interior_cut},
            {"p_part_rebuilt", pm.part_rebuilt},
            {"p_part_refused", pm.part_refused},
            {"p_flips", pm.flips},
            {"p_latent", pm.latent},
            {"p_damaged_reads", pm.damaged_reads},
            {"p_view_changes", pm.view_changes},
            {"p_repairs", pm.repairs},
            {"p_truncations", pm.truncations},
            {"p_faulty_repaired", pm.faulty_repaired},
            {"p_state_transfer", pm.state_transfer},
            {"p_waived_refused", pm.waived_refused},
            {"p_waived_crash", pm.waived_crash},
            {"p_unobserved", pm.unobserved},
            {"p_offset_gaps", pm.offset_gaps},
            {"p_pg_refused", pm.pg_refused},
            {"p_pg_duplicates", pm.pg_duplicates},
            {"p_stale", pm.stale},
        };
        for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++)
            printf(" %s=%llu", q[i].name, (unsigned long long)q[i].v);
    }
    printf("\n");
}

struct seed_opts {
    const char *faults;      /* a fault set (NULL: the profile in force) */
    int strict_sessionless;  /* finding F3 fails the run */
    int strict_lost_session; /* finding F2 fails the run */
    int own_reply_bytes;     /* cache replies as shard 0 did (finding F1) */
    unsigned partitions;     /* partition groups (0: --partitions) */
    int group_commit;        /* unsynced appends (also --group-commit) */
    /* a test of the refused-votes waiver: the seed must pass through it,
     * and fail (a liveness failure, no waiver) once the refused replicas
     * are made bootable but the waived op rots on them too */
    int waiver_mutation;
    /* a partition group refusing to open after a crash alone fails the
     * run instead of being waived as a named product finding */
    int strict_crash_refusal;
    /* a test of the torn-copies waiver: the seed must pass through it,
     * and then 1: fail (liveness, unwaived) with the torn copies'
     * writes recorded as fsynced; 2: its proof must fail with a
     * counterfactual that loses nothing */
    int torn_mutation;
};

/* A counterfactual of one run (all zero: the seed as drawn). */
struct cf {
    int bootable;    /* sim_params.refused_bootable */
    uint64_t rot_op; /* ... and bootable_rot_op */
    int mute_parts;  /* ... and bootable_mute_parts */
    int torn_lost;   /* sim_params.torn_lost, torn_lo..torn_hi, torn_mask */
    uint64_t torn_lo, torn_hi;
    unsigned torn_mask;
    unsigned torn_synced_mask; /* sim_params.torn_synced_mask */
};

/* --refused-bootable, --torn-lost, --torn-synced: replays of a
 * counterfactual */
static struct cf g_cf;

/* What one run of a seed ended with. */
struct run_out {
    int rc;
    uint64_t waived;    /* refused-votes waivers (both checkers) */
    char why[256];      /* what the waiver found */
    uint64_t waived_op; /* the op it found undecidable */
    int waived_part;    /* 1: a partition group's waiver */
    int waived_crash;   /* ... resting on a refusal after a crash alone */
    char crash_why[320];
    uint64_t torn_waived; /* torn-copies waivers */
    uint64_t torn_lo, torn_hi;
    unsigned torn_mask;
    uint64_t transfer_waived; /* waived_transfer */
    uint64_t lost_whole;      /* torn appends lost whole (torn_lost 1) */
    char failure[600];        /* the failure (rc != 0) */
    char replay[600];         /* the command that replays the run */
    unsigned n;
};

/* One run of a seed under counterfactual `cf`; quiet: no FAIL, replay
 * or marks lines (a counterfactual). */
static void
run_world(uint64_t seed, unsigned n, uint64_t ticks, int trace,
          const struct seed_opts *so, const struct cf *cf, int quiet,
          struct run_out *out)
{
    memset(out, 0, sizeof(*out));
    struct sim_params p;
    sim_world_params(seed, n, &p);
    if (ticks)
        p.ticks = ticks;
    p.group_commit = g_group_commit || (so != NULL && so->group_commit);
    if (so != NULL) {
        p.allow_sessionless = !so->strict_sessionless;
        p.allow_lost_session = !so->strict_lost_session;
        p.own_reply_bytes = so->own_reply_bytes;
    }
    p.refused_bootable = cf->bootable;
    p.bootable_rot_op = cf->rot_op;
    p.bootable_mute_parts = cf->mute_parts;
    p.torn_lost = cf->torn_lost;
    p.torn_lo = cf->torn_lo;
    p.torn_hi = cf->torn_hi;
    p.torn_mask = cf->torn_mask;
    p.torn_synced_mask = cf->torn_synced_mask;
    p.strict_crash_refusal = so != NULL && so->strict_crash_refusal;
    out->n = p.n;
    struct sim_faults f;
    const char *saved = faults_spec;
    if (so != NULL && so->faults != NULL)
        faults_spec = so->faults;
    default_faults(&f, p.n);
    const char *spec = faults_spec;
    faults_spec = saved;
    unsigned saved_parts = g_partitions; /* parts_args() of this run */
    if (so != NULL && so->partitions)
        g_partitions = so->partitions;
    char cfa[128] = "";
    if (cf->torn_lost)
        snprintf(cfa, sizeof(cfa), " --torn-lost %d %llu %llu %u",
                 cf->torn_lost, (unsigned long long)cf->torn_lo,
                 (unsigned long long)cf->torn_hi, cf->torn_mask);
    if (cf->torn_synced_mask)
        snprintf(cfa + strlen(cfa), sizeof(cfa) - strlen(cfa),
                 " --torn-synced %u", cf->torn_synced_mask);
    snprintf(out->replay, sizeof(out->replay),
             "tests/sim/vsr-sim%s%s%s%s%s --seed %llu --replicas %u --ticks "
             "%llu --trace",
             spec == NULL           ? ""
             : spec == PROFILE_FULL ? " --full"
                                    : " --faults ",
             spec == NULL || spec == PROFILE_FULL ? "" : spec, parts_args(),
             cf->bootable ? " --refused-bootable" : "", cfa,
             (unsigned long long)seed, p.n, (unsigned long long)p.ticks);
    g_partitions = saved_parts;
    struct sim_world *w = calloc(1, sizeof(*w));
    int rc = sim_world_init(w, seed, &p, &f, trace);
    if (rc == 0)
        rc = attach_parts(w, so != NULL && so->partitions ? so->partitions
                                                          : g_partitions);
    if (rc != 0) {
        fprintf(stderr, "vsr-sim: seed %llu: cannot build the world: %s\n",
                (unsigned long long)seed, w->failure);
        snprintf(out->failure, sizeof(out->failure), "cannot build: %s",
                 w->failure);
        sim_world_fini(w);
        free(w);
        out->rc = 1;
        return;
    }
    out->rc = sim_world_run(w);
    snprintf(out->failure, sizeof(out->failure), "%s", w->failure);
    snprintf(out->why, sizeof(out->why), "%s", w->waived_why);
    out->waived_op = w->waived_op;
    out->waived_part = w->waived_part;
    out->waived_crash = w->waived_crash;
    snprintf(out->crash_why, sizeof(out->crash_why), "%s", w->waived_crash_why);
    out->waived = w->m.waived_refused;
    out->torn_waived = w->m.waived_torn;
    out->torn_lo = w->torn_lo;
    out->torn_hi = w->torn_hi;
    out->torn_mask = w->torn_mask;
    out->transfer_waived = w->m.waived_transfer;
    out->lost_whole = w->m.lost_whole;
    if (w->parts != NULL) {
        struct sim_parts_marks pm;
        sim_parts_get_marks(w, &pm);
        out->waived += pm.waived_refused;
    }
    if (out->rc && !quiet) {
        printf("FAIL seed %llu (n=%u): %s\n", (unsigned long long)seed, p.n,
               w->failure);
        printf("replay: %s\n", out->replay);
    }
    if (!quiet)
        print_marks(w);
    sim_world_fini(w);
    free(w);
}

/* The torn-copies waiver's proof of run r: the counterfactual (cf:
 * torn_lost 1 for the proof, 2 for its mutation that loses nothing)
 * must converge with no waiver of any kind and must have lost a torn
 * append whole. 1 proven, 0 not (c holds the run). */
static int
torn_proven(uint64_t seed, unsigned n, uint64_t ticks,
            const struct seed_opts *so, const struct run_out *r, int mode,
            struct run_out *c)
{
    struct cf cf = {.torn_lost = mode,
                    .torn_lo = r->torn_lo,
                    .torn_hi = r->torn_hi,
                    .torn_mask = r->torn_mask};
    run_world(seed, n, ticks, 0, so, &cf, 1, c);
    if (c->rc == 0 && (c->waived || c->torn_waived || c->transfer_waived))
        snprintf(c->failure, sizeof(c->failure),
                 "it passed only through a waiver");
    else if (c->rc == 0 && c->lost_whole == 0)
        snprintf(c->failure, sizeof(c->failure),
                 "no torn append of op %llu was lost whole (the stall came "
                 "another way)",
                 (unsigned long long)r->torn_lo);
    else if (c->rc == 0)
        return 1;
    return 0;
}

/* A run that passed through the torn-copies waiver: proven by its
 * counterfactual, else the seed fails; so->torn_mutation tests the
 * waiver instead (1: with those replicas' torn writes recorded as
 * fsynced the seed must fail, unwaived; 2: a counterfactual that loses
 * nothing must not prove it). Returns the seed's exit status. */
static int
torn_judge(uint64_t seed, unsigned n, uint64_t ticks,
           const struct seed_opts *so, const struct run_out *r)
{
    struct run_out c;
    int mut = so != NULL ? so->torn_mutation : 0;
    printf("waived seed %llu (n=%u): %s\n", (unsigned long long)seed, r->n,
           r->why);
    if (mut == 1) {
        /* one copy is enough: the lowest replica holding one */
        unsigned one = r->torn_mask & (0u - r->torn_mask);
        struct cf cf = {.torn_synced_mask = one};
        run_world(seed, n, ticks, 0, so, &cf, 1, &c);
        int ok = c.rc && c.torn_waived == 0 && strstr(c.failure, "liveness");
        printf("%s: with replica mask 0x%x's torn writes recorded as fsynced "
               "(then damaged), the seed %s%s\n",
               ok ? "torn waiver mutation caught" : "FAIL torn waiver mutation",
               one, c.rc ? "fails: " : "passes", c.rc ? c.failure : "");
        return ok ? 0 : 1;
    }
    int proven = torn_proven(seed, n, ticks, so, r, mut == 2 ? 2 : 1, &c);
    if (mut == 2) {
        printf("%s: with nothing lost in the counterfactual, the proof %s%s\n",
               proven ? "FAIL torn waiver mutation"
                      : "torn waiver mutation caught",
               proven ? "holds" : "fails: ", proven ? "" : c.failure);
        return proven ? 1 : 0;
    }
    if (!proven) {
        printf("FAIL seed %llu (n=%u): the torn-copies waiver does not hold: "
               "with the torn appends of op %llu lost whole: %s\n",
               (unsigned long long)seed, r->n, (unsigned long long)r->torn_lo,
               c.failure);
        printf("replay: %s\n", c.replay);
        return 1;
    }
    char ops[48];
    if (r->torn_hi != r->torn_lo)
        snprintf(ops, sizeof(ops), "ops %llu..%llu",
                 (unsigned long long)r->torn_lo,
                 (unsigned long long)r->torn_hi);
    else
        snprintf(ops, sizeof(ops), "op %llu", (unsigned long long)r->torn_lo);
    printf("torn-copies waiver proven: seed %llu converges with the torn "
           "appends of %s lost whole (%llu writes lost)\n",
           (unsigned long long)seed, ops, (unsigned long long)c.lost_whole);
    return 0;
}

/* Runs a seed. A run that passed through a refused-votes waiver says so
 * and is checked against its counterfactual: the same seed with the
 * replicas that refused to boot made bootable (their disks restored
 * when the faults stop) must converge with no waiver, which proves the
 * missing copies or votes were theirs; if it does not, the seed fails
 * (the waiver hid a stall). A run through the torn-copies waiver is
 * checked the same way (torn_judge). */
static int
run_seed_opts(uint64_t seed, unsigned n, uint64_t ticks, int trace,
              const struct seed_opts *so)
{
    struct run_out r, c;
    run_world(seed, n, ticks, trace, so, &g_cf, 0, &r);
    int mutation = so != NULL && (so->waiver_mutation || so->torn_mutation);
    if (r.rc == 0 && r.torn_waived && (so == NULL || !so->waiver_mutation))
        return torn_judge(seed, n, ticks, so, &r);
    if (r.rc == 0 && r.waived == 0 && mutation)
        printf("FAIL seed %llu: the waiver under test no longer applies\n",
               (unsigned long long)seed);
    if (r.rc || r.waived == 0)
        return r.rc || mutation;
    printf("waived seed %llu (n=%u): %s\n", (unsigned long long)seed, r.n,
           r.why);
    if (so != NULL && so->waiver_mutation) {
        struct cf cf = {
            .bootable = 2, .rot_op = r.waived_op, .mute_parts = r.waived_part};
        run_world(seed, n, ticks, 0, so, &cf, 1, &c);
        int ok = c.rc && c.waived == 0 && strstr(c.failure, "liveness");
        printf("%s: with the refused replicas made bootable and %s, the "
               "seed %s%s\n",
               ok ? "waiver mutation caught" : "FAIL waiver mutation",
               r.waived_part ? "their partition frames dropped"
                             : "the waived op rotted on them too",
               c.rc ? "fails: " : "passes", c.rc ? c.failure : "");
        return ok ? 0 : 1;
    }
    if (r.waived_crash) {
        /* crash damage no counterfactual restores: waived by name, the
         * product finding its scenario (part-crash-refusal-*) tracks */
        printf("waived seed %llu: product finding, not provable: %s\n",
               (unsigned long long)seed, r.crash_why);
        return 0;
    }
    struct cf cf = {.bootable = 1};
    run_world(seed, n, ticks, 0, so, &cf, 1, &c);
    if (c.rc) {
        printf("FAIL seed %llu (n=%u): the refused-votes waiver does not "
               "hold: with the refused replicas made bootable: %s\n",
               (unsigned long long)seed, r.n, c.failure);
        printf("replay: %s\n", c.replay);
        return 1;
    }
    printf("waiver proven: seed %llu converges with the refused replicas "
           "made bootable\n",
           (unsigned long long)seed);
    return 0;
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

/* One replica's interior WAL entry above its snapshot op rots while it
 * is down (entries at or below it are dropped instead: the checkpoint's
 * repair margin, rot-below-snapshot). */
static int
sc_bitrot_interior(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 500);
    const struct sim_node *n2 = &w->node[2];
    const struct wal *j = &n2->journal;
    uint64_t hi = n2->snap_op > n2->sb_durable.checkpoint_op
                      ? n2->snap_op
                      : n2->sb_durable.checkpoint_op;
    if (wal_empty(j) || wal_first_op(j) > hi + 1 || wal_last_op(j) < hi + 2) {
        sim_world_failf(w,
                        "scenario: replica 2's journal holds no interior "
                        "entry above op %llu",
                        (unsigned long long)hi);
        return 1;
    }
    uint64_t op = hi + 1 + (wal_last_op(j) - hi - 1) / 2;
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
    if (sim_world_recover(w, 2) != 0)
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
    /* its own last entry (it may hold prepares above the history) */
    const struct sim_node *b = &w->node[1];
    uint64_t last = b->up && b->journal_open && !wal_empty(&b->journal)
                        ? wal_last_op(&b->journal)
                        : w->hist_max;
    sim_world_crash(w, 1);
    sim_world_rot_op(w, 1, last, 0);
    sim_world_restart(w, 1);
    steps(w, 600);
    return finish(w);
}

/* The last entry of a backup is damaged (full length, bad body: its
 * header verifies), cut at boot; the backup crashes again before the
 * repair. Its second boot finds no entry for the op (the first boot cut
 * it): the superblock's copy of the header keeps the op known (faulty,
 * never nacked, repaired against that header), not a blank. */
static int
sc_damaged_cut_header_kept(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 500);
    const struct sim_node *b = &w->node[1];
    if (!b->up || !b->journal_open || wal_empty(&b->journal)) {
        sim_world_failf(w, "scenario: replica 1 holds no journal entry");
        return 1;
    }
    uint64_t last = wal_last_op(&b->journal);
    struct vs_hdr_prepare want = *wal_header(&b->journal, last);
    sim_world_crash(w, 1);
    if (!sim_world_rot_op(w, 1, last, 0))
        sim_world_failf(w, "scenario: op %llu not in replica 1's journal",
                        (unsigned long long)last);
    for (int boot = 0; boot < 2 && !w->failed; boot++) {
        if (sim_world_restart(w, 1) != 0) {
            sim_world_failf(w, "scenario: replica 1 refused boot %d: %s",
                            boot + 1, w->node[1].refuse);
            return 1;
        }
        struct vs_hdr_prepare h;
        if (!vsr_header(b->eng, last, &h) ||
            !vs_u128_eq(h.f.checksum, want.f.checksum))
            sim_world_failf(w,
                            "scenario: boot %d of replica 1 does not know "
                            "the header of its cut op %llu",
                            boot + 1, (unsigned long long)last);
        struct vs_vsr_info info;
        vsr_info(b->eng, &info);
        if (info.faulty_op < last || info.nonack_top < last)
            sim_world_failf(w,
                            "scenario: boot %d of replica 1 does not keep "
                            "op %llu never nacked (faulty %llu, nonack "
                            "%llu)",
                            boot + 1, (unsigned long long)last,
                            (unsigned long long)info.faulty_op,
                            (unsigned long long)info.nonack_top);
        if (boot == 0)
            sim_world_crash(w, 1); /* before any repair */
    }
    if (w->m.damaged_cut == 0)
        sim_world_failf(w, "scenario: no damaged tail was cut");
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
    if (sim_world_recover(w, 2) != 0)
        sim_world_failf(w, "scenario: replica 2 does not boot after recover");
    steps(w, 800);
    return finish(w);
}

/* ------------------------------------------- state transfer scenarios */

/* Each asserts: the replica installed a transfer (snapshot or table),
 * within a bound of ticks after it came back; then the liveness phase
 * (every replica Normal at one commit, every acknowledged op kept, the
 * history, at-most-once and checkpoint checkers all along); then equal
 * state: every replica's state machine and client table encode to the
 * same snapshot bytes. */
#define XFER_TICK_BOUND 4000u /* ticks from the restart to the install */

struct xfer_watch {
    unsigned i;
    uint64_t installs0, t0;
};

static uint64_t
xfer_done(const struct sim_node *n)
{
    return n->m_xfer_installs + n->m_xfer_table_only;
}

static void
xfer_watch(struct sim_world *w, struct xfer_watch *x, unsigned i)
{
    x->i = i;
    x->installs0 = xfer_done(&w->node[i]);
    x->t0 = w->now;
}

static int
xfer_fetching(const struct sim_world *w, unsigned i)
{
    const struct sim_node *n = &w->node[i];
    if (!n->up || n->zt == NULL)
        return 0;
    struct zt_info info;
    zt_info(n->zt, &info);
    return info.stage == XFER_FETCHING;
}

/* Steps until replica i fetches (1) or `k` ticks pass (0). */
static int
until_fetching(struct sim_world *w, unsigned i, uint64_t k)
{
    for (uint64_t t = 0; t < k && !w->failed; t++) {
        if (xfer_fetching(w, i))
            return 1;
        sim_world_step(w);
    }
    return xfer_fetching(w, i);
}

/* Steps until replica i installed once more than at the watch. */
static int
until_installed(struct sim_world *w, const struct xfer_watch *x, uint64_t k)
{
    for (uint64_t t = 0; t < k && !w->failed; t++) {
        if (xfer_done(&w->node[x->i]) > x->installs0)
            return 1;
        sim_world_step(w);
    }
    return xfer_done(&w->node[x->i]) > x->installs0;
}

static uint64_t
min_peer_ckpt(const struct sim_world *w, unsigned skip)
{
    uint64_t m = UINT64_MAX;
    for (unsigned k = 0; k < w->p.n; k++)
        if (k != skip && w->node[k].up && w->node[k].last_ckpt_op < m)
            m = w->node[k].last_ckpt_op;
    return m == UINT64_MAX ? 0 : m;
}

/* Drives traffic until every other live replica checkpointed `gens`
 * generations past replica i's commit (their journals drained past what
 * it needs). */
static void
generations(struct sim_world *w, unsigned i, unsigned gens)
{
    uint64_t base = w->hist_max > 0 ? w->hist_max : 1;
    (void)i;
    uint64_t want = base + (uint64_t)gens * w->p.ckpt_every;
    for (uint64_t t = 0; t < 40000 && !w->failed; t++) {
        if (min_peer_ckpt(w, i) >= want)
            return;
        sim_world_step(w);
    }
    sim_world_failf(w,
                    "scenario: the peers did not checkpoint past op %llu "
                    "(at %llu)",
                    (unsigned long long)want,
                    (unsigned long long)min_peer_ckpt(w, i));
}

static unsigned
primary_now(const struct sim_world *w)
{
    for (unsigned k = 0; k < w->p.n; k++)
        if (w->node[k].up && vsr_is_primary(w->node[k].eng))
            return k;
    return 0;
}

/* Every replica's state encodes to the bytes of replica 0's. */
static void
check_equal_state(struct sim_world *w)
{
    struct vs_wbuf a, b;
    vs_wbuf_init(&a);
    vs_wbuf_init(&b);
    meta_snapshot_encode(w->node[0].state, &w->node[0].ct, &a);
    for (unsigned k = 1; k < w->p.n && !w->failed; k++) {
        vs_wbuf_reset(&b);
        meta_snapshot_encode(w->node[k].state, &w->node[k].ct, &b);
        if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
            sim_world_failf(w,
                            "equal state: replica %u's state at op %llu "
                            "encodes to other bytes than replica 0's at op "
                            "%llu",
                            k,
                            (unsigned long long)vsr_commit_min(w->node[k].eng),
                            (unsigned long long)vsr_commit_min(w->node[0].eng));
    }
    vs_wbuf_fini(&a);
    vs_wbuf_fini(&b);
}

static int
xfer_finish(struct sim_world *w, const struct xfer_watch *x)
{
    if (!w->failed && !until_installed(w, x, XFER_TICK_BOUND))
        sim_world_failf(w,
                        "scenario: replica %u installed no transfer within "
                        "%u ticks",
                        x->i, XFER_TICK_BOUND);
    if (finish(w))
        return 1;
    check_equal_state(w);
    return w->failed;
}

/* A backup crashes right after a checkpoint drained its journal (it
 * holds the checkpoint op and the repair margin below it, nothing above);
 * the others checkpoint past it. */
static int
sc_xfer_drained_journal(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 300);
    const struct sim_node *n = &w->node[2];
    uint64_t t;
    /* bounded: the moment depends on the schedule (a faster pipeline
     * drains it later) */
    for (t = 0; t < 20000 && !w->failed; t++) {
        if (n->up && !n->ckpt_pending && n->last_ckpt_op > 0 &&
            n->last_ckpt_op == vsr_commit_min(n->eng) &&
            !wal_empty(&n->journal) &&
            wal_first_op(&n->journal) >=
                vsr_drain_keep_from(n->eng, n->last_ckpt_op) &&
            wal_last_op(&n->journal) == n->last_ckpt_op)
            break;
        sim_world_step(w);
    }
    if (t == 20000)
        sim_world_failf(w, "scenario: replica 2 never sat at a drained "
                           "journal");
    sim_world_crash(w, 2);
    generations(w, 2, 3);
    struct xfer_watch x;
    xfer_watch(w, &x, 2);
    sim_world_restart(w, 2);
    return xfer_finish(w, &x);
}

/* A backup is down while the others take many checkpoints. */
static int
sc_xfer_down_generations(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 250);
    sim_world_crash(w, 1);
    generations(w, 1, 6);
    struct xfer_watch x;
    xfer_watch(w, &x, 1);
    sim_world_restart(w, 1);
    return xfer_finish(w, &x);
}

/* The fetching replica crashes and restarts twice mid-transfer. */
static int
sc_xfer_double_restart(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 250);
    sim_world_crash(w, 2);
    generations(w, 2, 3);
    sim_world_restart(w, 2);
    for (int round = 0; round < 2 && !w->failed; round++) {
        if (!until_fetching(w, 2, 3000))
            sim_world_failf(w, "scenario: replica 2 never fetched (round %d)",
                            round);
        steps(w, 1 + sim_world_rand(w) % 5);
        sim_world_crash(w, 2);
        sim_world_restart(w, 2);
    }
    struct xfer_watch x;
    xfer_watch(w, &x, 2);
    return xfer_finish(w, &x);
}

/* The primary serving the transfer crashes mid-transfer: the receiver
 * (which still votes) helps elect a new primary and fetches from it. */
static int
sc_xfer_primary_dies(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 250);
    sim_world_crash(w, 2);
    generations(w, 2, 3);
    struct xfer_watch x;
    xfer_watch(w, &x, 2);
    sim_world_restart(w, 2);
    if (!until_fetching(w, 2, 3000))
        sim_world_failf(w, "scenario: replica 2 never fetched");
    struct zt_info info;
    zt_info(w->node[2].zt, &info);
    unsigned p = info.peer >= 0 ? (unsigned)info.peer : primary_now(w);
    uint64_t begun = w->node[2].m_xfer_begun;
    uint64_t retargets = w->node[2].m_xfer_retargets;
    sim_world_crash(w, p);
    until_installed(w, &x, XFER_TICK_BOUND);
    if (!w->failed && w->node[2].m_xfer_begun == begun &&
        w->node[2].m_xfer_retargets == retargets)
        sim_world_failf(w, "scenario: replica 2 neither retargeted nor "
                           "started another session");
    sim_world_restart(w, p);
    return xfer_finish(w, &x);
}

/* A StartView of a new view reaches the receiver while it fetches (its
 * serving primary is cut off from everyone, then comes back). */
static int
sc_xfer_start_view_fetching(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 250);
    sim_world_crash(w, 2);
    generations(w, 2, 3);
    struct xfer_watch x;
    xfer_watch(w, &x, 2);
    sim_world_restart(w, 2);
    if (!until_fetching(w, 2, 3000))
        sim_world_failf(w, "scenario: replica 2 never fetched");
    unsigned p = primary_now(w);
    uint64_t sv = vsr_stats(w->node[2].eng)->sv_adopted;
    for (unsigned j = 0; j < w->p.n; j++)
        w->part[p][j] = w->part[j][p] = j != p;
    w->partitioned = 1;
    for (uint64_t t = 0; t < 3000 && !w->failed; t++) {
        if (vsr_stats(w->node[2].eng)->sv_adopted > sv)
            break;
        sim_world_step(w);
    }
    if (!w->failed && vsr_stats(w->node[2].eng)->sv_adopted == sv)
        sim_world_failf(w, "scenario: no StartView reached replica 2");
    memset(w->part, 0, sizeof(w->part));
    w->partitioned = 0;
    return xfer_finish(w, &x);
}

/* The serving primary's snapshot is older than the receiver's commit:
 * the receiver keeps its state machine (table-only install). The primary
 * checkpoints rarely (only when its journal is full); a backup is down
 * while the other drains past it (its checkpoint less the repair margin)
 * and, back, repairs from that backup only (its requests to the primary
 * are dropped): RangeEvicted, and the primary then offers a checkpoint
 * below that replica's commit. */
static uint64_t
table_only_sum(const struct sim_world *w)
{
    uint64_t t = 0;
    for (unsigned k = 0; k < w->p.n; k++)
        t += w->node[k].m_xfer_table_only;
    return t;
}

/* Drops r's repair requests to the primary p (tamper hook): r repairs
 * from the other backup only. */
struct repair_cut {
    unsigned r, p;
};

static int
tamper_repair_cut(struct sim_world *w, unsigned from, unsigned to,
                  uint8_t *frame, uint32_t len)
{
    const struct repair_cut *c = w->tamper_ctx;
    const struct vs_header *h = (const struct vs_header *)frame;
    (void)len;
    return from == c->r && to == c->p &&
           h->f.command == VS_CMD_REQUEST_PREPARES;
}

static int
sc_xfer_table_only(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 300);
    unsigned p = primary_now(w);
    unsigned r = p == 2 ? 1 : 2, b = 3 - p - r;
    w->node[p].cfg.ckpt_every = 100000;
    /* r goes down above the primary's checkpoint and stays down until
     * the other backup drained past it (checkpoint less the repair
     * margin); a primary that checkpointed past r meanwhile (its journal
     * filled) starts another round */
    int ready = 0;
    for (int round = 0; round < 12 && !w->failed && !ready; round++) {
        for (uint64_t t = 0; t < 3000 && !w->failed; t++) {
            const struct sim_node *nr = &w->node[r];
            if (nr->up && vsr_commit_min(nr->eng) > w->node[p].last_ckpt_op &&
                vsr_is_primary(w->node[p].eng))
                break;
            sim_world_step(w);
        }
        uint64_t c = vsr_commit_min(w->node[r].eng);
        uint64_t m = vsr_repair_margin(w->node[b].eng);
        sim_world_crash(w, r);
        for (uint64_t t = 0; t < 3000 && !w->failed; t++) {
            if (w->node[p].last_ckpt_op >= c)
                break;
            if (w->node[b].last_ckpt_op > c + m + 1) {
                ready = 1;
                break;
            }
            sim_world_step(w);
        }
        if (!ready)
            sim_world_restart(w, r);
    }
    if (!w->failed && !ready)
        sim_world_failf(w,
                        "scenario: never a backup drained past replica "
                        "%u while the primary's checkpoint stayed below it",
                        r);
    struct repair_cut cut = {.r = r, .p = p};
    w->tamper = tamper_repair_cut;
    w->tamper_ctx = &cut;
    uint64_t t0 = table_only_sum(w);
    sim_world_restart(w, r);
    for (uint64_t t = 0; t < XFER_TICK_BOUND && !w->failed; t++) {
        if (table_only_sum(w) > t0)
            break;
        sim_world_step(w);
    }
    if (!w->failed && table_only_sum(w) == t0)
        sim_world_failf(w, "scenario: no table-only install within %u ticks",
                        XFER_TICK_BOUND);
    w->tamper = NULL;
    w->tamper_ctx = NULL;
    w->node[p].cfg.ckpt_every = w->p.ckpt_every;
    if (finish(w))
        return 1;
    check_equal_state(w);
    return w->failed;
}

/* A backup loses its disk and rejoins through recover: it boots empty,
 * rebuilding, and catches up by transfer + repair. */
static int
sc_xfer_wipe_recover(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 300);
    generations(w, 3, 2);
    sim_world_crash(w, 1);
    struct xfer_watch x;
    xfer_watch(w, &x, 1);
    if (sim_world_recover(w, 1) != 0)
        sim_world_failf(w, "scenario: replica 1 does not boot after recover");
    if (!w->failed && !w->node[1].rebuilt)
        sim_world_failf(w, "scenario: replica 1 is not rebuilding");
    int rc = xfer_finish(w, &x);
    if (!rc && w->node[1].rebuilt)
        sim_world_failf(w, "scenario: replica 1 never caught up");
    return w->failed;
}

/* A crash at every storage call of the install: each leaves a bootable
 * replica (the old state or the snapshot), which then catches up. After
 * a crash inside it the replica reboots, runs cut off from its peers (no
 * op reaches its journal: a checkpoint it takes can pair only the
 * snapshot's op, whose header a lost pairing left it without), crashes
 * and must boot again. */
static int
sc_xfer_crash_each_step(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 250);
    unsigned hits = 0;
    for (uint64_t k = 1; k <= 24 && !w->failed; k++) {
        sim_world_crash(w, 2);
        generations(w, 2, 3);
        w->node[2].xfer_crash_at = 0;
        if (sim_world_restart(w, 2) != 0) {
            sim_world_failf(w,
                            "scenario: replica 2 refused to boot before "
                            "step %llu: %s",
                            (unsigned long long)k, w->node[2].refuse);
            break;
        }
        w->node[2].xfer_crash_at = k;
        struct xfer_watch x;
        xfer_watch(w, &x, 2);
        for (uint64_t t = 0; t < XFER_TICK_BOUND && !w->failed; t++) {
            if (!w->node[2].up || xfer_done(&w->node[2]) > x.installs0)
                break;
            sim_world_step(w);
        }
        if (w->node[2].up) {
            steps(w, 20); /* the pairing's superblock write */
            if (!w->node[2].up)
                hits++;
            continue; /* the install took fewer calls: done */
        }
        hits++;
        /* crashed inside the install: it must boot */
        if (sim_world_restart(w, 2) != 0) {
            sim_world_failf(w,
                            "install: replica 2 does not boot after a crash "
                            "at storage call %llu of the install: %s",
                            (unsigned long long)k, w->node[2].refuse);
            break;
        }
        for (unsigned j = 0; j < w->p.n; j++)
            w->part[2][j] = w->part[j][2] = j != 2;
        w->partitioned = 1;
        steps(w, 40);
        sim_world_crash(w, 2);
        if (sim_world_restart(w, 2) != 0)
            sim_world_failf(w,
                            "install: replica 2 does not boot after a crash "
                            "at storage call %llu of the install, a reboot "
                            "and a crash cut off from its peers: %s",
                            (unsigned long long)k, w->node[2].refuse);
        memset(w->part, 0, sizeof(w->part));
        w->partitioned = 0;
    }
    if (!w->failed && hits < 4)
        sim_world_failf(w, "scenario: only %u crashes landed in an install",
                        hits);
    steps(w, 300);
    struct xfer_watch x;
    xfer_watch(w, &x, 2);
    x.installs0 = 0;
    if (finish(w))
        return 1;
    check_equal_state(w);
    return w->failed;
}

/* The primary's snapshot.bin rots at rest (a byte inside the payload,
 * as the page cache serves it): it is never served; the receiver waits
 * (or asks another primary) and installs only a verified snapshot. */
static int
sc_xfer_corrupt_snapshot(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 250);
    sim_world_crash(w, 2);
    generations(w, 2, 3);
    unsigned p = primary_now(w);
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", w->disk[p].dir, VS_SNAPSHOT_FILE);
    FILE *f = fopen(path, "r+b");
    long len = -1;
    if (f != NULL && fseek(f, 0, SEEK_END) == 0)
        len = ftell(f);
    if (f == NULL || len < 64) {
        sim_world_failf(w, "scenario: no snapshot on the primary");
        if (f != NULL)
            fclose(f);
        return finish(w);
    }
    long off = 12 + (len - 12 - 20) / 2; /* inside the body */
    int c;
    fseek(f, off, SEEK_SET);
    c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
    uint64_t bad_op = w->node[p].snap_op;
    /* it checkpoints again only when its journal is full */
    w->node[p].cfg.ckpt_every = 100000;
    struct xfer_watch x;
    xfer_watch(w, &x, 2);
    uint64_t ab = w->node[2].m_xfer_abandoned;
    sim_world_restart(w, 2);
    for (uint64_t t = 0; t < 3000 && !w->failed; t++) {
        if (w->node[2].m_xfer_abandoned > ab)
            break;
        sim_world_step(w);
    }
    if (!w->failed && w->node[2].m_xfer_abandoned == ab)
        sim_world_failf(w, "scenario: the corrupt snapshot was not refused");
    if (!w->failed && xfer_done(&w->node[2]) > x.installs0 &&
        w->node[2].snap_op == bad_op && w->node[p].snap_op == bad_op)
        sim_world_failf(w, "scenario: replica 2 installed the corrupt "
                           "generation");
    w->node[p].cfg.ckpt_every = w->p.ckpt_every;
    return xfer_finish(w, &x);
}

/* Transfer frames altered in flight (sim_world.h's tamper hook): chunks
 * to the receiver `to` flipped in their body, without resealing (the
 * frame check drops them) or resealed (the link accepts them; only the
 * artifact checksum can refuse them); the first available Target to
 * `to` kept for a late delivery. */
struct xfer_tamper {
    unsigned to;
    unsigned bad_seal, resealed; /* chunks still to alter, in that order */
    uint64_t flipped_seal, flipped_body;
    int ended_before_body; /* a session ended on a checksum before it */
    uint8_t *target;       /* a copy of the first available Target */
    uint32_t target_len;
};

static int
last_is_checksum(const struct sim_node *n)
{
    if (n->zt == NULL)
        return 0;
    struct zt_info info;
    zt_info(n->zt, &info);
    return strstr(info.last, "checksum") != NULL;
}

static int
tamper_xfer(struct sim_world *w, unsigned from, unsigned to, uint8_t *frame,
            uint32_t len)
{
    struct xfer_tamper *t = w->tamper_ctx;
    struct vs_header *h = (struct vs_header *)frame;
    (void)from;
    if (to != t->to || len <= VS_HEADER_SIZE)
        return 0;
    if (h->f.command == VS_CMD_STATE_TRANSFER_TARGET && t->target == NULL) {
        t->target = malloc(len);
        VS_ASSERT(t->target != NULL);
        memcpy(t->target, frame, len);
        t->target_len = len;
        return 0;
    }
    if (h->f.command != VS_CMD_STATE_CHUNK)
        return 0;
    uint8_t *body = frame + VS_HEADER_SIZE;
    size_t blen = len - VS_HEADER_SIZE;
    if (t->bad_seal > 0) {
        t->bad_seal--;
        body[blen / 2] ^= 0x40;
        t->flipped_seal++;
    } else if (t->resealed > 0) {
        t->resealed--;
        body[blen / 2] ^= 0x40;
        h->f.checksum_body = vs_body_checksum(body, blen);
        vs_frame_seal(h);
        t->flipped_body++;
        if (last_is_checksum(&w->node[to]))
            t->ended_before_body = 1;
    }
    return 0;
}

static void
tamper_end(struct sim_world *w, struct xfer_tamper *t)
{
    w->tamper = NULL;
    w->tamper_ctx = NULL;
    free(t->target);
    t->target = NULL;
}

/* One chunk fails its seal in flight (dropped, re-requested), a later
 * one is altered with its checksums recomputed (accepted by the link):
 * the receiver refuses the artifact by its checksum, installs nothing
 * from that session, fetches again and converges. */
static int
sc_xfer_corrupt_chunk(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 250);
    sim_world_crash(w, 2);
    generations(w, 2, 3);
    struct xfer_tamper t = {.to = 2, .bad_seal = 1, .resealed = 1};
    w->tamper = tamper_xfer;
    w->tamper_ctx = &t;
    struct xfer_watch x;
    xfer_watch(w, &x, 2);
    const struct sim_node *n = &w->node[2];
    uint64_t ab = n->m_xfer_abandoned;
    int refused = 0;
    sim_world_restart(w, 2);
    for (uint64_t k = 0; k < XFER_TICK_BOUND && !w->failed; k++) {
        if (xfer_done(n) > x.installs0)
            break;
        if (n->m_xfer_abandoned > ab && t.flipped_body > 0 &&
            last_is_checksum(n)) {
            refused = 1;
            break;
        }
        sim_world_step(w);
    }
    if (!w->failed && (t.flipped_seal == 0 || t.flipped_body == 0))
        sim_world_failf(w, "scenario: no chunk was altered in flight");
    if (!w->failed && t.ended_before_body)
        sim_world_failf(w, "scenario: the frame failing its seal ended the "
                           "session (it reached the receiver)");
    if (!w->failed && !refused)
        sim_world_failf(w, "scenario: replica 2 did not refuse the altered "
                           "chunk by its artifact checksum before installing");
    tamper_end(w, &t);
    x.installs0 = xfer_done(n);
    return xfer_finish(w, &x);
}

/* The serving primary answers every chunk with zero bytes (the faulty
 * server of sim_xfer.c): the receiver never counts one as progress,
 * stalls, gives up on that peer, and converges once the primary serves
 * properly. */
static int
sc_xfer_empty_chunks(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 250);
    sim_world_crash(w, 2);
    generations(w, 2, 3);
    unsigned p = primary_now(w);
    w->node[p].xfer_serve_empty = 1;
    struct xfer_watch x;
    xfer_watch(w, &x, 2);
    const struct sim_node *n = &w->node[2];
    uint64_t ab = n->m_xfer_abandoned, emptied = w->node[p].m_xfer_emptied;
    sim_world_restart(w, 2);
    for (uint64_t k = 0; k < XFER_TICK_BOUND && !w->failed; k++) {
        if (n->m_xfer_abandoned > ab || xfer_done(n) > x.installs0)
            break;
        if (n->up && n->zt != NULL) {
            struct zt_info info;
            zt_info(n->zt, &info);
            if (info.peer == (int)p && info.fetched > 0)
                sim_world_failf(w,
                                "scenario: replica 2 counted %llu bytes of "
                                "zero-byte chunks as progress",
                                (unsigned long long)info.fetched);
        }
        sim_world_step(w);
    }
    if (!w->failed && w->node[p].m_xfer_emptied == emptied)
        sim_world_failf(w, "scenario: no zero-byte chunk was served");
    if (!w->failed && xfer_done(n) > x.installs0)
        sim_world_failf(w, "scenario: replica 2 installed while its only "
                           "server sent zero-byte chunks");
    if (!w->failed && n->m_xfer_abandoned == ab)
        sim_world_failf(w,
                        "scenario: replica 2 never gave up on the peer "
                        "sending zero-byte chunks within %u ticks",
                        XFER_TICK_BOUND);
    w->node[p].xfer_serve_empty = 0;
    return xfer_finish(w, &x);
}

/* Delivers the kept Target of an earlier session to replica i now: it
 * must leave the stage (and the peer and bytes) as they were. */
static void
stale_target(struct sim_world *w, const struct xfer_tamper *t, unsigned i)
{
    struct zt_info a, b;
    zt_info(w->node[i].zt, &a);
    sim_node_message(&w->node[i], t->target, t->target_len);
    if (!w->node[i].up || w->node[i].zt == NULL) {
        sim_world_failf(w, "scenario: replica %u stopped on a stale Target", i);
        return;
    }
    zt_info(w->node[i].zt, &b);
    if (b.stage != a.stage || b.peer != a.peer || b.total != a.total ||
        b.fetched != a.fetched || b.completed != a.completed)
        sim_world_failf(w,
                        "scenario: replica %u took the Target of an earlier "
                        "session in stage %s (now %s, %llu/%llu bytes)",
                        i, xfer_stage_name(a.stage), xfer_stage_name(b.stage),
                        (unsigned long long)b.fetched,
                        (unsigned long long)b.total);
}

/* A Target of an earlier session (its manifest describing that session's
 * snapshot and table) is delivered late, after the receiver restarted
 * and armed a new session: dropped by its nonce while awaiting a Target
 * and by the stage while fetching, never installed. */
static int
sc_xfer_stale_target(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 250);
    sim_world_crash(w, 2);
    generations(w, 2, 3);
    struct xfer_tamper t = {.to = 2};
    w->tamper = tamper_xfer;
    w->tamper_ctx = &t;
    sim_world_restart(w, 2);
    if (!until_fetching(w, 2, 3000) || t.target == NULL) {
        sim_world_failf(w, "scenario: replica 2 never fetched");
        tamper_end(w, &t);
        return finish(w);
    }
    /* the session ends with the node; more traffic meanwhile */
    sim_world_crash(w, 2);
    steps(w, 200);
    struct xfer_watch x;
    xfer_watch(w, &x, 2);
    sim_world_restart(w, 2);
    int awaiting = 0, fetching = 0;
    for (uint64_t k = 0; k < 3000 && !w->failed && !fetching; k++) {
        const struct sim_node *n = &w->node[2];
        if (n->up && n->zt != NULL) {
            struct zt_info info;
            zt_info(n->zt, &info);
            if (info.stage == XFER_AWAITING_TARGET && !awaiting) {
                stale_target(w, &t, 2);
                awaiting = 1;
            } else if (info.stage == XFER_FETCHING && awaiting) {
                stale_target(w, &t, 2);
                fetching = 1;
            }
        }
        if (!fetching)
            sim_world_step(w);
    }
    if (!w->failed && (!awaiting || !fetching))
        sim_world_failf(w,
                        "scenario: replica 2 was never %s in its new "
                        "session",
                        awaiting ? "fetching" : "awaiting a Target");
    tamper_end(w, &t);
    return xfer_finish(w, &x);
}

/* ---- state transfer: the repair margin and a shrinking client table */

/* Drops every repair request of replica `r` while `on` (tamper hook). */
struct repair_hold {
    unsigned r;
    int on;
};

static int
tamper_repair_hold(struct sim_world *w, unsigned from, unsigned to,
                   uint8_t *frame, uint32_t len)
{
    const struct repair_hold *hd = w->tamper_ctx;
    const struct vs_header *h = (const struct vs_header *)frame;
    (void)to;
    (void)len;
    return hd->on && from == hd->r && h->f.command == VS_CMD_REQUEST_PREPARES;
}

/* The re-transfer loop under sustained load: a replica that installed
 * snapshot S repairs its suffix only after the primary checkpointed (and
 * drained) past S again -- a transfer slower than a checkpoint interval,
 * held here by dropping its repair requests until then, after every
 * install. The drain's repair margin (vsr_drain_keep_from) keeps S + 1
 * in the primary's journal: one install, then repair, convergence.
 * Without it every install is followed by RangeEvicted and another
 * transfer, for as long as the load lasts. */
static int
sc_xfer_retransfer_margin(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 250);
    sim_world_crash(w, 2);
    generations(w, 2, 3);
    struct repair_hold hold = {.r = 2, .on = 0};
    w->tamper = tamper_repair_hold;
    w->tamper_ctx = &hold;
    const struct sim_node *n = &w->node[2];
    uint64_t done0 = xfer_done(n), seen = done0, held_at = 0, holds = 0;
    sim_world_restart(w, 2);
    uint64_t t;
    for (t = 0; t < 3 * XFER_TICK_BOUND && !w->failed; t++) {
        if (!n->up)
            break;
        if (xfer_done(n) > seen && holds < 4) {
            /* an install: its suffix waits for the next checkpoint */
            seen = xfer_done(n);
            held_at = vsr_commit_min(n->eng);
            hold.on = 1;
            holds++;
        }
        unsigned p = primary_now(w);
        if (hold.on && p != 2 && w->node[p].last_ckpt_op > held_at + 1 &&
            !w->node[p].ckpt_pending)
            hold.on = 0;
        if (!hold.on && holds > 0 && !xfer_fetching(w, 2) &&
            vsr_commit_min(n->eng) >= w->node[p].last_ckpt_op &&
            vsr_commit_min(n->eng) > held_at)
            break; /* repaired past the primary's checkpoint */
        sim_world_step(w);
    }
    uint64_t installs = xfer_done(n) - done0;
    if (!w->failed && holds == 0)
        sim_world_failf(w, "scenario: replica 2 installed no transfer");
    if (!w->failed && t == 3 * XFER_TICK_BOUND)
        sim_world_failf(w,
                        "scenario: replica 2 did not repair past the "
                        "primary's checkpoint within %u ticks (%llu "
                        "installs)",
                        3 * XFER_TICK_BOUND, (unsigned long long)installs);
    if (!w->failed && installs > 1)
        sim_world_failf(w,
                        "scenario: replica 2 transferred again after its "
                        "install (%llu installs): the suffix was drained "
                        "(re-transfer loop)",
                        (unsigned long long)installs);
    hold.on = 0;
    w->tamper = NULL;
    w->tamper_ctx = NULL;
    if (finish(w))
        return 1;
    check_equal_state(w);
    return w->failed;
}

/* A client outside the simulated ones (its replies go nowhere): the
 * scenario registers it and logs it out at the primary, so the primary's
 * client table grows, then shrinks. */
static const struct vs_u128 EXTRA_CLIENT = {0x5ce0a11, 0x10};

/* Hands request (operation, session, request) of EXTRA_CLIENT to the
 * settled primary. 0, or -1 when there is none. */
static int
extra_request(struct sim_world *w, uint8_t operation, uint64_t session,
              uint64_t request)
{
    unsigned p = primary_now(w);
    struct sim_node *n = &w->node[p];
    if (!n->up || !vsr_is_settled_primary(n->eng))
        return -1;
    struct meta_op op;
    meta_op_init(&op, operation);
    struct vs_wbuf b;
    vs_wbuf_init(&b);
    VS_ASSERT(meta_op_encode(&op, &b) == 0);
    struct vs_hdr_request r;
    memset(&r, 0, sizeof(r));
    r.f.cluster = w->cluster;
    r.f.size = (uint32_t)(VS_HEADER_SIZE + b.len);
    r.f.command = VS_CMD_REQUEST;
    r.client = EXTRA_CLIENT;
    r.request = request;
    r.operation = operation;
    r.session = session;
    r.request_checksum = vs_checksum(b.data, b.len);
    sim_node_request(n, &r, b.data, (uint32_t)b.len);
    vs_wbuf_fini(&b);
    return 0;
}

static uint32_t
sessions_of(const struct sim_node *n)
{
    return n->up ? meta_hdr_c(n->state)->count[META_TAB_SESSION] : 0;
}

/* Steps until the primary's state holds (want = 1) or lacks (0) the
 * extra client's session, resending the request now and then. Returns
 * its epoch (1 when it lacks it), 0 on timeout. */
static uint64_t
extra_until(struct sim_world *w, uint8_t operation, uint64_t session,
            uint64_t request, int want)
{
    for (uint64_t t = 0; t < 3000 && !w->failed; t++) {
        const struct sim_node *n = &w->node[primary_now(w)];
        if (n->up) {
            const struct meta_session *s =
                meta_session_by_client(n->state, EXTRA_CLIENT);
            if (want && s != NULL)
                return s->epoch;
            if (!want && s == NULL)
                return 1;
        }
        if (t % 200 == 0)
            (void)extra_request(w, operation, session, request);
        sim_world_step(w);
    }
    return 0;
}

/* Holds every available Target to replica `to` (dropped, the first kept
 * in t.target) while `hold`; counts the later ones of the same session
 * and whether their manifests equal the first's. */
struct target_hold {
    struct xfer_tamper t; /* first: tamper_xfer's context */
    int hold;
    unsigned held, later, later_same;
};

static int
tamper_target_hold(struct sim_world *w, unsigned from, unsigned to,
                   uint8_t *frame, uint32_t len)
{
    struct target_hold *th = w->tamper_ctx;
    const struct vs_header *h = (const struct vs_header *)frame;
    if (to != th->t.to || h->f.command != VS_CMD_STATE_TRANSFER_TARGET ||
        len <= VS_HEADER_SIZE)
        return 0;
    if (th->t.target != NULL) {
        const struct vs_hdr_state_transfer_target *a =
            (const void *)th->t.target;
        const struct vs_hdr_state_transfer_target *b = (const void *)frame;
        if (vs_u128_eq(a->nonce, b->nonce)) {
            th->later++;
            if (len == th->t.target_len &&
                memcmp(frame + VS_HEADER_SIZE, th->t.target + VS_HEADER_SIZE,
                       len - VS_HEADER_SIZE) == 0)
                th->later_same++;
        }
    }
    (void)tamper_xfer(w, from, to, frame, len); /* keeps the first */
    if (th->hold) {
        th->held++;
        return 1;
    }
    return 0;
}

/* The primary's client table shrinks between the offer a receiver holds
 * and its retry, and a delayed duplicate of that offer's manifest (the
 * larger table) arrives late: the retry with the same nonce gets the
 * same manifest (first wins: the table artifact of the offer, never a
 * rebuild of the smaller live table), the duplicate is dropped by the
 * stage while fetching and once idle, nothing of the fetch moves, and
 * the receiver installs the offer's table, then applies the Logout that
 * shrank it. Later a second offer (the smaller table) goes to a new
 * session and the old manifest arrives in it again: dropped by its nonce
 * and by the stage. Every replica ends in the same state. */
static int
sc_xfer_shrunk_table_manifest(struct sim_world *w)
{
    w->faults_on = 1;
    steps(w, 250);
    sim_world_crash(w, 2);
    generations(w, 2, 3);
    uint64_t epoch = extra_until(w, VS_OP_REGISTER, 0, 0, 1);
    if (!w->failed && epoch == 0)
        sim_world_failf(w, "scenario: the extra client never registered");
    uint32_t before = sessions_of(&w->node[primary_now(w)]);
    struct target_hold th;
    memset(&th, 0, sizeof(th));
    th.t.to = 2;
    th.hold = 1;
    w->tamper = tamper_target_hold;
    w->tamper_ctx = &th;
    struct xfer_watch x;
    xfer_watch(w, &x, 2);
    sim_world_restart(w, 2);
    for (uint64_t t = 0; t < 3000 && !w->failed && th.t.target == NULL; t++)
        sim_world_step(w);
    if (!w->failed && th.t.target == NULL)
        sim_world_failf(w, "scenario: no offer reached replica 2");
    /* the table shrinks after the offer was built */
    if (!w->failed && extra_until(w, VS_OP_LOGOUT, epoch, 1, 0) == 0)
        sim_world_failf(w, "scenario: the extra client never logged out");
    uint32_t after = sessions_of(&w->node[primary_now(w)]);
    if (!w->failed && after >= before)
        sim_world_failf(w,
                        "scenario: the primary's table did not shrink (%u "
                        "then %u sessions)",
                        before, after);
    th.hold = 0; /* the receiver's retry (same nonce) is answered */
    if (!w->failed && !until_fetching(w, 2, 3000))
        sim_world_failf(w, "scenario: replica 2 never fetched");
    if (!w->failed && (th.held == 0 || th.later == 0))
        sim_world_failf(w, "scenario: no retry of the held offer (%u held)",
                        th.held);
    if (!w->failed && th.later_same != th.later)
        sim_world_failf(w,
                        "scenario: a retry with the same nonce got another "
                        "manifest after the table shrank (%u of %u the same)",
                        th.later_same, th.later);
    /* the delayed duplicate of the old manifest, while fetching */
    if (!w->failed)
        stale_target(w, &th.t, 2);
    if (!w->failed && !until_installed(w, &x, XFER_TICK_BOUND))
        sim_world_failf(w,
                        "scenario: replica 2 installed no transfer within "
                        "%u ticks",
                        XFER_TICK_BOUND);
    /* and once idle again */
    if (!w->failed && w->node[2].up)
        stale_target(w, &th.t, 2);
    /* a second offer, built from the smaller table, to a new session:
     * the old manifest (larger table, old nonce) arrives in it while
     * awaiting the Target and while fetching */
    w->tamper = NULL;
    w->tamper_ctx = NULL;
    sim_world_crash(w, 2);
    generations(w, 2, 3);
    xfer_watch(w, &x, 2);
    sim_world_restart(w, 2);
    int awaiting = 0, fetching = 0;
    for (uint64_t k = 0; k < 3000 && !w->failed && !fetching; k++) {
        const struct sim_node *n = &w->node[2];
        if (n->up && n->zt != NULL) {
            struct zt_info info;
            zt_info(n->zt, &info);
            if (info.stage == XFER_AWAITING_TARGET && !awaiting) {
                stale_target(w, &th.t, 2);
                awaiting = 1;
            } else if (info.stage == XFER_FETCHING) {
                stale_target(w, &th.t, 2);
                fetching = 1;
            }
        }
        if (!fetching)
            sim_world_step(w);
    }
    if (!w->failed && (!awaiting || !fetching))
        sim_world_failf(w,
                        "scenario: replica 2 was never %s in its second "
                        "session",
                        awaiting ? "fetching" : "awaiting a Target");
    if (!w->failed && !until_installed(w, &x, XFER_TICK_BOUND))
        sim_world_failf(w,
                        "scenario: replica 2 installed no second transfer "
                        "within %u ticks",
                        XFER_TICK_BOUND);
    tamper_end(w, &th.t);
    if (finish(w))
        return 1;
    check_equal_state(w);
    if (!w->failed &&
        meta_session_by_client(w->node[2].state, EXTRA_CLIENT) != NULL)
        sim_world_failf(w, "scenario: replica 2 still holds the session "
                           "that logged out");
    return w->failed;
}

/* ------------------------------------ replicated partitions (sim_parts) */

/* Attaches two partition groups to a scenario's world (faults on). */
static int
parts_begin(struct sim_world *w)
{
    if (w->parts == NULL && attach_parts(w, 2) != 0)
        return 1;
    w->faults_on = 1;
    return w->failed;
}

/* The same scenario over the sim-local binding (sim_parts.h). */
static int sc_part_reconnect_dedup(struct sim_world *w);
static int
sc_part_local_reconnect_dedup(struct sim_world *w)
{
    g_parts_local = 1;
    int rc = sc_part_reconnect_dedup(w);
    g_parts_local = 0;
    return rc;
}

static int
parts_mark(const struct sim_world *w, const char *what, uint64_t v)
{
    if (v == 0 && !w->failed)
        sim_world_failf((struct sim_world *)w, "scenario: no %s", what);
    return w->failed;
}

/* The primary of group 0 crashes (inside its storage, then the node)
 * while producers send: a new primary takes over, nothing acknowledged
 * is lost, the old one rejoins. */
static int
sc_part_primary_crash(struct sim_world *w)
{
    if (parts_begin(w) || steps(w, 500))
        return 1;
    int p = sim_parts_primary(w, 0);
    if (p < 0) {
        sim_world_failf(w, "scenario: group 0 has no primary");
        return 1;
    }
    uint64_t acked = sim_parts_acked(w);
    sim_parts_arm_crash(w, (unsigned)p, 3);
    steps(w, 100);
    sim_world_crash(w, (unsigned)p);
    steps(w, 1200);
    int q = sim_parts_primary(w, 0);
    if (!w->failed && (q < 0 || q == p))
        sim_world_failf(w, "scenario: no new primary of group 0 (%d)", q);
    if (!w->failed && sim_parts_acked(w) <= acked)
        sim_world_failf(w, "scenario: no send acknowledged after the crash");
    sim_world_restart(w, (unsigned)p);
    steps(w, 400);
    struct sim_parts_marks m;
    sim_parts_get_marks(w, &m);
    if (parts_mark(w, "partition view change", m.view_changes))
        return 1;
    return finish(w);
}

/* A backup's last journal record is damaged while it is down: it cuts
 * it, marks it faulty (never nacked) and repairs it from its peers. */
static int
sc_part_damaged_tail(struct sim_world *w)
{
    if (parts_begin(w) || steps(w, 600))
        return 1;
    int p = sim_parts_primary(w, 0);
    if (p < 0) {
        sim_world_failf(w, "scenario: group 0 has no primary");
        return 1;
    }
    unsigned b = ((unsigned)p + 1) % w->p.n;
    sim_world_crash(w, b);
    steps(w, 1);
    if (!sim_parts_rot_tail(w, b, 0, 0))
        sim_world_failf(w, "scenario: no journal record to damage");
    sim_world_restart(w, b);
    steps(w, 1);
    uint64_t faulty = sim_parts_faulty(w, b, 0);
    steps(w, 1000);
    struct sim_parts_marks m;
    sim_parts_get_marks(w, &m);
    if (parts_mark(w, "damaged tail marked faulty at the boot", faulty) ||
        parts_mark(w, "faulty op repaired", m.faulty_repaired))
        return 1;
    return finish(w);
}

/* DeleteSegments / retention of a replicated partition is an op of its
 * group: the primary proposes a trim of sealed segments every replica
 * holds, right as a backup is cut off; every replica (the cut-off one
 * after it repairs the trim op, then a restart of another) deletes the
 * same sealed segments, and the finish checks find the logs
 * byte-identical at convergence. The trim takes every sealed segment
 * when no more are sealed (its watermark the active segment's start, as
 * retention by expiry leaves it): polls of a backup that appended past
 * the trim's commit then read the active segment alone, below their
 * commit cap. (A backup missing the deleted ops themselves needs a
 * partition state transfer.) */
static int
sc_part_trim_same_segments(struct sim_world *w)
{
    if (parts_begin(w) || steps(w, 900))
        return 1;
    int p = sim_parts_primary(w, 0);
    if (p < 0) {
        sim_world_failf(w, "scenario: group 0 has no primary");
        return 1;
    }
    int rc = 0;
    for (int t = 0; t < 400 && rc == 0 && !w->failed; t++) {
        rc = sim_parts_trim(w, 0, 2);
        if (rc == 0)
            steps(w, 5);
    }
    unsigned b = ((unsigned)p + 1) % w->p.n;
    for (unsigned i = 0; i < w->p.n; i++)
        w->part[i][b] = w->part[b][i] = i != b;
    if (rc != 1) {
        sim_world_failf(w, "scenario: no trim proposed (%d)", rc);
        return 1;
    }
    steps(w, 300);
    memset(w->part, 0, sizeof(w->part));
    steps(w, 500);
    unsigned c = ((unsigned)p + 2) % w->p.n;
    sim_world_crash(w, c);
    steps(w, 50);
    sim_world_restart(w, c);
    steps(w, 600);
    if (finish(w))
        return 1;
    uint64_t first = UINT64_MAX, trims = 0;
    for (unsigned i = 0; i < w->p.n; i++) {
        uint64_t t = 0, f = sim_parts_first_offset(w, i, 0, &t);
        if (f == UINT64_MAX)
            continue;
        if (first == UINT64_MAX)
            first = f;
        if (f != first)
            sim_world_failf(w,
                            "scenario: node %u's log starts at %llu, "
                            "another's at %llu",
                            i, (unsigned long long)f,
                            (unsigned long long)first);
        trims += t;
    }
    if (!w->failed && (first == 0 || first == UINT64_MAX))
        sim_world_failf(w, "scenario: no segment deleted (first %llu)",
                        (unsigned long long)first);
    return parts_mark(w, "trim applied", trims);
}

/* Repaired prepares keep the hash chain (upstream #3978: repairs
 * rewound the journal's parent and nodes could not restart): a backup
 * cut off misses ops, repairs them after the heal, then restarts twice
 * and recovers its whole journal each time, nothing cut. */
static int
sc_part_repaired_chain(struct sim_world *w)
{
    if (parts_begin(w) || steps(w, 300))
        return 1;
    int p = sim_parts_primary(w, 0);
    if (p < 0) {
        sim_world_failf(w, "scenario: group 0 has no primary");
        return 1;
    }
    unsigned b = ((unsigned)p + 1) % w->p.n;
    for (unsigned i = 0; i < w->p.n; i++)
        w->part[i][b] = w->part[b][i] = i != b;
    steps(w, 700);
    memset(w->part, 0, sizeof(w->part));
    steps(w, 900);
    struct sim_parts_marks m;
    sim_parts_get_marks(w, &m);
    if (parts_mark(w, "partition repair", m.repairs))
        return 1;
    for (int round = 0; round < 2 && !w->failed; round++) {
        /* what is durable before the crash is recovered after it (an
         * append still waiting for its fsync may be cut) */
        int64_t dur = sim_parts_durable(w, b, 0);
        sim_world_crash(w, b);
        steps(w, 1);
        sim_world_restart(w, b);
        steps(w, 1);
        if (!w->failed && sim_parts_head(w, b, 0) < dur)
            sim_world_failf(w,
                            "scenario: the repaired journal of node %u did not "
                            "survive a restart (head %lld, durable before "
                            "%lld)",
                            b, (long long)sim_parts_head(w, b, 0),
                            (long long)dur);
        steps(w, 300);
    }
    return finish(w);
}

/* A leader restarts with nothing to repair (upstream #4230 panicked on
 * an empty repair range): it rejoins, and no replica ever sends or takes
 * an empty, inverted or oversized repair range. */
static int
sc_part_leader_restart_empty_repair(struct sim_world *w)
{
    if (parts_begin(w) || steps(w, 600))
        return 1;
    for (int round = 0; round < 3 && !w->failed; round++) {
        int p = sim_parts_primary(w, round % 2);
        if (p < 0)
            break;
        sim_world_crash(w, (unsigned)p);
        steps(w, 1);
        sim_world_restart(w, (unsigned)p);
        steps(w, 700);
    }
    if (!w->failed && sim_parts_verdicts(w, VSR_DROP_RANGE) > 0)
        sim_world_failf(
            w,
            "scenario: %llu repair requests with an invalid "
            "range",
            (unsigned long long)sim_parts_verdicts(w, VSR_DROP_RANGE));
    return finish(w);
}

struct part_drop {
    unsigned from, to; /* frames of group `group` from -> to */
    int on;
    uint64_t group;
};

static int
drop_group0(void *ctx, unsigned from, unsigned to, uint8_t *frame, uint32_t len)
{
    struct part_drop *d = ctx;
    return d->on && sim_parts_frame_group(frame, len) == d->group &&
           ((from == d->from && to == d->to) ||
            (from == d->to && to == d->from));
}

/* A commit on a suffix no live replica can repair is bounded (upstream
 * #4075 stalled forever): the primary's prepares reach one backup only,
 * whose acknowledgements are lost; primary and that backup die, the
 * backup's copy of the newest op is damaged; the survivors cannot
 * decide it until a holder is back, commit nothing else meanwhile, and
 * once the old primary returns the group commits within the bound. */
static int
sc_part_unrepairable_suffix(struct sim_world *w)
{
    if (parts_begin(w) || steps(w, 500))
        return 1;
    int p = sim_parts_primary(w, 0);
    if (p < 0) {
        sim_world_failf(w, "scenario: group 0 has no primary");
        return 1;
    }
    unsigned b1 = ((unsigned)p + 1) % w->p.n, b2 = ((unsigned)p + 2) % w->p.n;
    struct part_drop d = {(unsigned)p, b2, 1, sim_parts_group_id(w, 0)};
    sim_parts_set_tamper(w, drop_group0, &d);
    steps(w, 200);
    uint64_t before = sim_parts_commit(w, 0);
    sim_world_crash(w, (unsigned)p);
    sim_world_crash(w, b1);
    steps(w, 1);
    d.on = 0;
    (void)sim_parts_rot_tail(w, b1, 0, 0);
    sim_world_restart(w, b1);
    steps(w, 1500);
    sim_world_restart(w, (unsigned)p);
    uint64_t t0 = w->now;
    while (!w->failed && w->now < t0 + 3000 && sim_parts_commit(w, 0) <= before)
        steps(w, 10);
    if (!w->failed && sim_parts_commit(w, 0) <= before)
        sim_world_failf(w,
                        "scenario: group 0 committed nothing within 3000 "
                        "ticks of a holder's return (commit %llu)",
                        (unsigned long long)before);
    sim_parts_set_tamper(w, NULL, NULL);
    return finish(w);
}

/* A replica is down while its peers commit and checkpoint far past the
 * partition journal's window: restarted, repair cannot reach the ops it
 * lacks (RangeEvicted), so it fetches the primary's partition by state
 * transfer, installs it atomically and repairs above it; the checkers
 * then find its log byte-identical to its peers' up to the commit. */
static int
sc_part_state_transfer(struct sim_world *w)
{
    if (parts_begin(w) || steps(w, 300))
        return 1;
    int p = sim_parts_primary(w, 0);
    if (p < 0) {
        sim_world_failf(w, "scenario: group 0 has no primary");
        return 1;
    }
    unsigned b = ((unsigned)p + 1) % w->p.n;
    uint64_t before = sim_parts_commit(w, 0);
    /* no other fault while it is down: the peers must make progress (the
     * clients keep sending until p.ticks) */
    w->faults_on = 0;
    w->p.ticks = w->now + 90000;
    sim_world_crash(w, b);
    uint64_t t0 = w->now;
    while (!w->failed && w->now < t0 + 60000 &&
           sim_parts_commit(w, 0) < before + 3 * 256)
        steps(w, 50);
    if (!w->failed && sim_parts_commit(w, 0) < before + 3 * 256) {
        sim_world_failf(w,
                        "scenario: the peers committed only %llu ops while "
                        "replica %u was down",
                        (unsigned long long)(sim_parts_commit(w, 0) - before),
                        b);
        return 1;
    }
    sim_world_restart(w, b);
    struct sim_parts_marks m;
    memset(&m, 0, sizeof(m));
    t0 = w->now;
    while (!w->failed && w->now < t0 + 20000 && m.pg_installs == 0) {
        steps(w, 50);
        sim_parts_get_marks(w, &m);
    }
    if (parts_mark(w, "partition state transfer installed", m.pg_installs))
        return 1;
    w->faults_on = 1;
    return finish(w);
}

/* Clients reconnect again and again with new transport ids and resend
 * their outstanding requests (upstream #3958 keyed deduplication by the
 * transport): every request executes at most once, duplicates get the
 * committed answer. */
static int
sc_part_reconnect_dedup(struct sim_world *w)
{
    if (parts_begin(w) || steps(w, 300))
        return 1;
    for (int round = 0; round < 40 && !w->failed; round++) {
        steps(w, 25);
        sim_parts_reconnect_all(w);
    }
    struct sim_parts_marks m;
    sim_parts_get_marks(w, &m);
    if (parts_mark(w, "duplicate recognised by the group",
                   m.dedup_hits + m.pg_duplicates))
        return 1;
    return finish(w);
}

/* The checkpoint drain keeps a repair margin of entries at or below the
 * checkpoint op; one of them rots while its replica is down. The snapshot
 * covers it (it only served repair), so the boot drops it with the older
 * entries instead of refusing it as interior corruption; the replica
 * rejoins and converges. Rot above the snapshot op still refuses
 * (bitrot-interior-one-replica). */
static int
sc_rot_below_snapshot(struct sim_world *w)
{
    w->faults_on = 1;
    const struct sim_node *n = &w->node[2];
    uint64_t base = 0;
    for (uint64_t t = 0; t < 20000 && !w->failed; t++) {
        /* the op the boot will recover from: the older of the snapshot
         * and the durable checkpoint (a crash may lose a newer one) */
        base = n->snap_op < n->sb_durable.checkpoint_op
                   ? n->snap_op
                   : n->sb_durable.checkpoint_op;
        if (n->up && n->journal_open && !wal_empty(&n->journal) && base > 2 &&
            wal_first_op(&n->journal) + 1 < base &&
            wal_last_op(&n->journal) > base)
            break;
        base = 0;
        sim_world_step(w);
    }
    if (w->failed)
        return 1;
    if (base == 0) {
        sim_world_failf(w, "scenario: replica 2 never held margin entries "
                           "below a checkpoint");
        return 1;
    }
    uint64_t first = wal_first_op(&n->journal);
    uint64_t op = first + (base - first) / 2; /* first < op < base */
    sim_world_crash(w, 2);
    if (!sim_world_rot_op(w, 2, op, 1)) {
        sim_world_failf(w, "scenario: op %llu not in replica 2's journal",
                        (unsigned long long)op);
        return 1;
    }
    uint64_t dropped0 = n->m_wal_dropped;
    if (sim_world_restart(w, 2) != 0) {
        sim_world_failf(w,
                        "scenario: replica 2 refused rot of op %llu below "
                        "its checkpoint op %llu: %s",
                        (unsigned long long)op, (unsigned long long)base,
                        n->refuse);
        return 1;
    }
    if (n->m_wal_dropped != dropped0 + 1 || n->wal_dropped_last < op ||
        (!wal_empty(&n->journal) && wal_first_op(&n->journal) <= op))
        sim_world_failf(w,
                        "scenario: replica 2 booted without dropping the "
                        "rotten op %llu (dropped up to %llu)",
                        (unsigned long long)op,
                        (unsigned long long)n->wal_dropped_last);
    steps(w, 300);
    if (finish(w))
        return 1;
    check_equal_state(w);
    return w->failed;
}

static const struct scenario SCENARIOS[] = {
    {"single-torn-tail", 1, NULL, sc_single_torn_tail},
    {"single-cluster-restart", 1, NULL, sc_cluster_restart},
    {"backup-torn-tail", 3, NULL, sc_backup_torn_tail},
    {"primary-crash-mid-commit", 3, NULL, sc_primary_crash_mid_commit},
    {"duelling-candidates", 3, NULL, sc_duelling_candidates},
    {"whole-cluster-restart", 3, NULL, sc_cluster_restart},
    {"damaged-last-entry-repaired", 3, NULL, sc_damaged_last_entry},
    /* a damaged cut's header outlives a second restart before the repair
     * (VsrState v4 faulty_prepare) */
    {"damaged-cut-header-kept", 3, NULL, sc_damaged_cut_header_kept},
    {"bitrot-interior-one-replica", 3, NULL, sc_bitrot_interior},
    {"restart-voter", 3, NULL, sc_restart_voter},
    {"recover-lost-disk", 3, NULL, sc_recover_lost_disk},
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
    /* A new primary started its view with committed ops it had not
     * journaled yet (only ops above commit_max had to be durable) and
     * crashed: its DVC of that newest log_view lacked their headers and
     * every later merge waited. It now starts only once every op above
     * its applied op is durable. (Gate profile, seed of the lead's
     * integration run with state transfer.) */
    {"engine-primary-starts-with-whole-log", 3, NULL, NULL, 1016, 0, {0}},
    /* After a restart one persisted mark cannot tell the ops of an adopted
     * log never journaled (nackable) from a damaged cut (never nacked):
     * both survivors wait on an op no one acknowledged. */
    {"engine-reach-vs-cut-after-restart",
     3,
     NULL,
     NULL,
     203099,
     0,
     {.faults = PROFILE_FULL}},
    /* Liveness stalls found by the final soaks of the merged tree: a
     * view-change quorum up after the faults stopped, no op committed
     * for the liveness bound. 500643: after a restart the one persisted
     * mark made an adopted log's reach never-nacked (VsrState v3 keeps
     * the damaged cut's top apart). 600755: a backup refused the new
     * primary's retransmits of ops an earlier view's primary built. */
    {"stall-gate-500643", 3, NULL, NULL, 500643, 0, {0}},
    {"stall-full-600755", 3, NULL, NULL, 600755, 0, {.faults = PROFILE_FULL}},
    {"cached-reply-replica-bytes",
     3,
     "F1: cached replies carry the replica id and view (shard/zero/commit.c)",
     NULL,
     2,
     0,
     {.own_reply_bytes = 1}},
    /* state transfer */
    {"xfer-restart-at-drained-journal", 3, NULL, sc_xfer_drained_journal},
    {"xfer-down-several-generations", 3, NULL, sc_xfer_down_generations},
    {"xfer-double-restart", 3, NULL, sc_xfer_double_restart},
    {"xfer-serving-primary-dies", 3, NULL, sc_xfer_primary_dies},
    {"xfer-start-view-while-fetching", 3, NULL, sc_xfer_start_view_fetching},
    {"xfer-table-only-install", 3, NULL, sc_xfer_table_only},
    {"xfer-wipe-recover", 3, NULL, sc_xfer_wipe_recover},
    {"xfer-crash-at-each-install-step", 3, NULL, sc_xfer_crash_each_step},
    {"xfer-corrupt-snapshot-at-rest", 3, NULL, sc_xfer_corrupt_snapshot},
    {"xfer-corrupt-chunk-in-flight", 3, NULL, sc_xfer_corrupt_chunk},
    {"xfer-zero-byte-chunks", 3, NULL, sc_xfer_empty_chunks},
    {"xfer-stale-target-after-restart", 3, NULL, sc_xfer_stale_target},
    /* the repair margin and a shrinking client table (state transfer) */
    {"xfer-retransfer-under-load", 3, NULL, sc_xfer_retransfer_margin},
    {"xfer-shrunk-table-manifest", 3, NULL, sc_xfer_shrunk_table_manifest},
    /* Liveness stalls of the gate soak 700000-705000, each fixed in the
     * engine (one replica refusing to boot in most):
     *  - reach-vs-cut: after a (whole-cluster) restart both survivors
     *    kept an adopted log's reach they never journaled as never
     *    nacked (one VsrState field for the cut and the reach) and every
     *    merge waited on an op no live replica acknowledged; VsrState v3
     *    persists the cut's top (nonack_op) apart from the reach;
     *  - reack-applied: the new primary's pipeline held an op its only
     *    live backup had already applied; the backup dropped each
     *    retransmit as late and never acknowledged it again;
     *  - old-builder: a backup that skipped ops of the StartView (its
     *    journal window was full) refused the primary's retransmits of
     *    them because an earlier view's primary built them.
     * Some seeds pass by more than one of the fixes (each one changes
     * the schedule); the name gives the stall each showed first. The
     * gated three pass today only because the fixes changed their
     * schedule: the stall they showed first is still open. */
    /* Safety (found by the soak of these fixes): a lagging replica
     * adopted a StartView whose top lay beyond its journal window and
     * lowered the reach mark to its head at once; its next DVC, of the
     * newest log_view, claimed a shorter log and a view change cut
     * committed op 92. The mark is lowered only to the log's top. */
    {"safety-702275-reach-lowered-to-head", 3, NULL, NULL, 702275, 0, {0}},
    {"stall-gate-700600-old-builder", 3, NULL, NULL, 700600, 0, {0}},
    {"stall-gate-700614-reach-vs-cut", 3, NULL, NULL, 700614, 0, {0}},
    {"stall-gate-700834-reach-vs-cut", 3, NULL, NULL, 700834, 0, {0}},
    {"stall-gate-700975-reack-applied", 3, NULL, NULL, 700975, 0, {0}},
    {"stall-gate-701063-reach-vs-cut", 5, NULL, NULL, 701063, 0, {0}},
    /* both survivors cut op 6 as a damaged tail, the third (the only
     * intact copy) refuses to boot: undecidable, passed through the
     * refused-votes waiver, proven by its counterfactual. With the
     * journal's durable mark (shard/storage/wal_mark.h) both cuts lie
     * above the mark: torn, nackable; the seed converges unwaived. */
    {"stall-gate-701701", 3, NULL, NULL, 701701, 0, {0}},
    /* the waiver itself: with op 6 damaged on the third replica too no
     * replica can decide it, the waiver must not apply */
    {"waiver-refused-must-not-apply-701701",
     3,
     "a seed that still passes through the waiver: the durable mark cuts its "
     "torn copies as never acknowledged",
     NULL,
     701701,
     0,
     {.waiver_mutation = 1}},
    /* first stall old-builder (fixed); then: a backup whose head lagged
     * (op 57, after an install) learned no op above it while the
     * primary's commit of 58.. waited for its PrepareOk: no heartbeat
     * named one, the retransmits of 58 and 59 (bodies not in the
     * restarted primary's memory) came as RepairPrepares it could not
     * verify, and it dropped the Prepares of 60.. as a gap. Fixed: a
     * backup takes its view's Prepare above a gap and repairs the ops
     * below it by the hash chain (engine.c prepare_over_gap). */
    {"stall-gate-702511-prepare-over-gap", 3, NULL, NULL, 702511, 0, {0}},
    /* n=4: a faulty op of the newest log_view above the log that view
     * started with, nacked by 2 of the 3 needed; the lower-log_view DVC
     * holding another op there now counts as a nack (it acknowledged
     * nothing of that view), so the merge cuts it instead of waiting
     * (the schedule that showed it first changed; check_vsr_merge
     * replays the DVCs) */
    {"stall-gate-703946", 4, NULL, NULL, 703946, 0, {0}},
    /* Group commit (unsynced appends): with the wide group-tail rule
     * (damage followed by valid entries was a damaged tail through the
     * last op) two of three replicas held the same op as faulty (never
     * nacked) and the third ended below it: undecidable, the merge waited
     * forever. Non-zero damage followed by valid entries refuses again;
     * they must pass. */
    {"stall-gate-3700003-group-tail",
     3,
     NULL,
     NULL,
     3700003,
     0,
     {.group_commit = 1}},
    {"stall-gate-3700150-group-tail",
     3,
     NULL,
     NULL,
     3700150,
     0,
     {.group_commit = 1}},
    /* the only copy of op 24 (a header the survivors know, its body
     * faulty) is on a replica refusing to boot: waived, proven */
    {"stall-gate-704532", 3, NULL, NULL, 704532, 0, {0}},
    /* Two of three replicas crashed mid-append of op 131; each came back
     * with its header valid and its body failing (a torn sector kept its
     * old bytes), cut it as a damaged tail and marks it faulty (never
     * nacked); the third never had it. No replica may decide it, though
     * nothing acknowledged it (the WAL format keeps no proof of that):
     * waived as torn copies, proven by the counterfactual (those torn
     * appends lost whole converge). The journal's durable mark now keeps
     * that proof: both copies lie above it, are cut as torn and nacked;
     * the seed converges unwaived. */
    {"stall-gate-5003740-torn-copies", 3, NULL, NULL, 5003740, 0, {0}},
    /* the waiver itself: with one of the torn copies recorded as fsynced
     * (an entry fsynced, then damaged) it must not apply */
    {"waiver-torn-must-not-apply-fsynced-5003740",
     3,
     "a seed that still passes through the waiver: the durable mark cuts its "
     "torn copies as never acknowledged",
     NULL,
     5003740,
     0,
     {.torn_mutation = 1}},
    /* ... and a counterfactual that loses nothing must not prove it */
    {"waiver-torn-counterfactual-must-converge-5003740",
     3,
     "a seed that still passes through the waiver: the durable mark cuts its "
     "torn copies as never acknowledged",
     NULL,
     5003740,
     0,
     {.torn_mutation = 2}},
    /* --group-commit: the same class (op 17 faulty on two replicas
     * from crash-torn appends, the third below it) stalled this seed
     * once; it converges now, and a stall of that class must pass only
     * through the proven torn-copies waiver */
    {"stall-gate-3710389-group-torn",
     3,
     NULL,
     NULL,
     3710389,
     0,
     {.group_commit = 1}},
    /* --group-commit, decided by the journal's durable mark
     * (shard/storage/wal_mark.h): a header torn across two sectors with
     * whole entries of the same never-fsynced write after it refused the
     * boot as interior corruption (the one-replica seed 3710013, and
     * 8100246); two replicas holding the same torn op as faulty waited
     * forever (76). Above the mark each is a torn tail, cut, nackable. */
    {"gc-torn-header-valid-after-3710013",
     1,
     NULL,
     NULL,
     3710013,
     0,
     {.group_commit = 1}},
    {"gc-torn-header-valid-after-8100246",
     3,
     NULL,
     NULL,
     8100246,
     0,
     {.group_commit = 1}},
    {"gc-same-torn-op-two-replicas-76",
     3,
     NULL,
     NULL,
     76,
     0,
     {.group_commit = 1}},

    /* Replicated partitions: two partition groups beside the metadata
     * group (sim_parts.h); the upstream bugs vstream must not have. */
    {"part-primary-crash-mid-sends", 3, NULL, sc_part_primary_crash},
    {"part-trim-same-segments", 3, NULL, sc_part_trim_same_segments},
    {"part-backup-damaged-tail", 3, NULL, sc_part_damaged_tail},
    {"part-repaired-chain-restarts", 3, NULL, sc_part_repaired_chain},
    {"part-leader-restart-empty-repair", 3, NULL,
     sc_part_leader_restart_empty_repair},
    {"part-unrepairable-suffix-bounded", 3, NULL, sc_part_unrepairable_suffix},
    {"part-reconnect-keeps-dedup", 3, NULL, sc_part_reconnect_dedup},
    {"part-state-transfer", 3, NULL, sc_part_state_transfer},
    {"part-local-reconnect-keeps-dedup", 3, NULL,
     sc_part_local_reconnect_dedup},
    /* Safety (soak of the merged tree, --partitions 2): a partition
     * replica's damaged cut was remembered as faulty but not as never
     * nacked across a restart (the partition superblock did not persist
     * the engine's nonack_op), so a merge nacked an acknowledged op and
     * another op 4 was committed. */
    {"part-safety-1001254-nonack-persisted",
     3,
     NULL,
     NULL,
     1001254,
     0,
     {NULL, 0, 0, 0, 2}},
    /* Partition liveness (soak, --partitions 2): a node's metadata
     * replica, or its partition group, refuses to boot for good and the
     * survivors' canonical partition log names an op only that node
     * journaled: undecidable, waived, and proven by the counterfactual
     * (the same seed with that node made bootable converges). */
    {"part-waiver-refused-2001376",
     3,
     NULL,
     NULL,
     2001376,
     0,
     {.partitions = 2}},
    /* The same class, n = 4 (soak): the waiver rests on group 0 (nodes 0
     * and 3 refused); in the counterfactual node 0's metadata replica is
     * made bootable but a flip made in its group 1's log while it was
     * down stayed, so group 1 refused there at the boot, and with node
     * 2's group 1 refused after a crash alone, group 1 stalled with two
     * of four replicas: the heal now restores every group's files on a
     * node made bootable (sim_parts_heal). */
    {"part-waiver-bootable-node-6003377",
     4,
     NULL,
     NULL,
     6003377,
     0,
     {.partitions = 2}},
    /* Partition liveness (a session-4 soak, --partitions 2): a group
     * stalled with every node up; the engine's repair and merge fixes
     * since converge it, unwaived: kept as a must-pass seed. */
    {"part-liveness-2002164", 3, NULL, NULL, 2002164, 0, {.partitions = 2}},
    /* Gate seed 135 (n = 1): a crash alone (torn, reordered unsynced
     * writes, no injected fault) left a torn batch followed by a whole
     * one in a segment; part_open refused it as interior damage, so the
     * group stayed unserved for good (gate seeds 189, 201, 239, 261,
     * 341, 344, 392, 426, 444 and 484 too; some a torn .vsr record
     * followed by others: pgroup_open). Fixed: the unsynced group tail
     * rule of the segment and .vsr scans (segment.h, pjournal.h) cuts
     * never-written damage followed by whole writes within the window
     * the writer can leave unsynced; a refusal after a crash alone
     * fails the run. */
    {"part-crash-refusal-135",
     1,
     NULL,
     NULL,
     135,
     0,
     {.partitions = 2, .strict_crash_refusal = 1}},
    /* the .vsr side of it: gate seed 484 (n = 1), a record cut short
     * with whole ones after it; gate seed 444 (n = 3), a record cut short
     * and the next one's prefix cut by the end of the file */
    {"part-crash-refusal-vsr-484",
     1,
     NULL,
     NULL,
     484,
     0,
     {.partitions = 2, .strict_crash_refusal = 1}},
    {"part-crash-refusal-vsr-444",
     3,
     NULL,
     NULL,
     444,
     0,
     {.partitions = 2, .strict_crash_refusal = 1}},
    /* the partition waiver itself: the refused node made bootable but
     * its partition frames dropped, the group must fail, unwaived (seed
     * 1000238: 2001376 no longer needs the waiver since the engine's
     * repair and merge fixes changed its schedule) */
    {"part-waiver-must-not-apply-1000238",
     3,
     NULL,
     NULL,
     1000238,
     0,
     {.partitions = 2, .waiver_mutation = 1}},
    {"part-waiver-refused-1000238",
     3,
     NULL,
     NULL,
     1000238,
     0,
     {.partitions = 2}},
    /* At-most-once (soak, --partitions 2, n = 1): a client's send
     * (request 61) commits at op 127, its reply is lost in a crash; op
     * 128 moves the checkpoint (journal_slots / 2) and the restart
     * rebuilds the client table from the window above it only, so the
     * client's retry of request 61 commits again at op 132. Fixed: the
     * client table is saved before every checkpoint and loaded at open
     * (shard/serve/pgclients.c). */
    {"part-dedup-late-copy-2002019",
     1,
     NULL,
     NULL,
     2002019,
     0,
     {.partitions = 2}},
    /* the same at op 255 / 260 across the checkpoint at op 256 (soak
     * seed 3400559, n = 1, request 120) */
    {"part-dedup-late-copy-3400559",
     1,
     NULL,
     NULL,
     3400559,
     0,
     {.partitions = 2}},
    /* rot among the journal entries the checkpoint's repair margin keeps
     * at or below the snapshot op: dropped at boot, not refused */
    {"rot-below-snapshot", 3, NULL, sc_rot_below_snapshot},
    {"rot-below-snapshot-800221", 3, NULL, NULL, 800221, 0, {0}},
    /* Gate soak seed 800573: the rot is at op 18, above replica 0's
     * snapshot op 16 (a refusal, as the rules say); the other two then
     * stalled Normal in view 2 (a backup at op 32 kept dropping the
     * primary's prepares as "gap before op", never repairing 33..36).
     * Fixed by the same rule: the Prepare above the gap is taken and
     * 33..36 are repaired below it. */
    {"stall-gate-800573-prepare-over-gap", 3, NULL, NULL, 800573, 0, {0}},
    /* Soak stalls where the newest log_view's DVCs held op x only faulty
     * (no header), an older log_view's DVC held a header at x and a third
     * nacked x: the merge waited for good. 3000495 (gate profile): log 1
     * ended at 25 on one DVC, so op 26 above it is cut (canon_floor);
     * with that rule off the older header decides instead (older_pick);
     * with both off the seed stalls. 3100795 (--partitions 2, a partition
     * group): op 5 committed, the one DVC of log_view 1 nacking it, the
     * older DVC's op 5 is the committed one (older_pick); on this tree
     * its schedule no longer reaches that merge. check_vsr_merge replays
     * both DVC sets and their near cases. */
    {.name = "stall-gate-3000495", .n = 3, .seed = 3000495},
    {.name = "stall-parts-3100795",
     .n = 3,
     .seed = 3100795,
     .opts = {.partitions = 2}},
    /* The same in a partition group (soak seed 7500764): op 20 committed,
     * both DVCs of log_view 2 without its header (one faulty, one
     * nacking), the log_view 1 DVC that applied it holds it; it fails
     * without older_pick. */
    {.name = "stall-parts-7500764",
     .n = 3,
     .seed = 7500764,
     .opts = {.partitions = 2}},
    /* A replica unbootable for good after a crash around a state
     * transfer (soak seeds 9000636 --partitions 2, 7500003): the install
     * of op S (93; 193) crashed after snapshot.bin's rename (inside the
     * pairing's superblock write; emptying the journal), so the replica
     * rebooted on the snapshot knowing only op S's checksum; its next
     * checkpoint paired op S without op S's header, and with nothing
     * journaled at or above S (cut off, or a torn append) the next boot
     * refused (refuse-wal-chain-start). Fixed: a checkpoint starts only
     * at an op whose header is held (shard/storage/checkpoint_header.h);
     * xfer-crash-at-each-install-step covers every crash point. */
    {.name = "xfer-lost-pairing-9000636",
     .n = 3,
     .seed = 9000636,
     .opts = {.partitions = 2}},
    {.name = "xfer-lost-pairing-7500003", .n = 3, .seed = 7500003},
    /* Soak seed 7300615: after a whole-cluster restart the primary of
     * view 3 holds ops 137..140 in its journal only; a backup that had
     * adopted the view's StartView beyond its window, then caught up by
     * state transfer to op 136, never knew their headers and dropped the
     * primary's retransmits (RepairPrepares) as unwanted: the pipeline
     * waited for good. Fixed: such a retransmit leaves as a Prepare of
     * the primary's view (engine.h VSR_ACT_SEND_PREPARE). */
    {.name = "stall-retransmit-7300615", .n = 3, .seed = 7300615},
    /* Safety of reads (soak seed 9001084, five replicas): a bit flip in
     * the message count of a committed batch in a sealed segment; the
     * boot kept that op with its offsets running past the log and cut
     * only the ops after it, so the visible frontier covered batches
     * above the journal's head and a poll returned one the node had not
     * applied. The open now cuts from the rotted batch (faulty, repaired
     * from the peers). */
    {.name = "part-rotted-count-9001084",
     .n = 5,
     .seed = 9001084,
     .opts = {.partitions = 2}},
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
    p.group_commit = g_group_commit;
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
    printf("replay: tests/sim/vsr-sim%s%s %s %llu --replicas %u --ticks %llu "
           "--trace\n",
           faults_spec == PROFILE_FULL ? " --full" : "", parts_args(),
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
            "       (any run: [--partitions P] partition groups beside the\n"
            "        metadata group, [--no-offsets-fsync] [--parts-local]\n"
            "        [--parts-bad-offsets] [--parts-dup-requests]\n"
            "        [--refused-bootable] [--group-commit] unsynced\n"
            "        journal appends as shard 0's group commit leaves them,\n"
            "        [--torn-lost 1|2 LO HI MASK] [--torn-synced MASK])\n"
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
        if (strcmp(argv[i], "--trace") == 0)
            trace = 1;
    }
    /* errors too are expected when crashes are injected inside storage
     * (a failed install, a snapshot refused at rest): without --trace
     * the product's log goes nowhere; with it, its state-transfer lines
     * (stage, peer, bytes, rate) join the trace */
    if (trace)
        vs_log_set_level(VS_LOG_INFO);
    else
        (void)vs_log_open_file("/dev/null");
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
        } else if (strcmp(a, "--partitions") == 0 && i + 1 < argc) {
            uint64_t v;
            if (parse_u64(argv[++i], &v) != 0 || v > SIM_PARTS_MAX)
                goto bad;
            g_partitions = (unsigned)v;
        } else if (strcmp(a, "--no-offsets-fsync") == 0) {
            g_no_offsets_fsync = 1;
        } else if (strcmp(a, "--parts-local") == 0) {
            g_parts_local = 1;
        } else if (strcmp(a, "--parts-bad-offsets") == 0) {
            g_bad_offsets = 1;
        } else if (strcmp(a, "--parts-dup-requests") == 0) {
            g_dup_requests = 1;
        } else if (strcmp(a, "--group-commit") == 0) {
            g_group_commit = 1;
        } else if (strcmp(a, "--refused-bootable") == 0) {
            g_cf.bootable = 1;
        } else if (strcmp(a, "--torn-lost") == 0 && i + 4 < argc) {
            uint64_t mode, mask;
            if (parse_u64(argv[i + 1], &mode) != 0 || mode < 1 || mode > 2 ||
                parse_u64(argv[i + 2], &g_cf.torn_lo) != 0 ||
                parse_u64(argv[i + 3], &g_cf.torn_hi) != 0 ||
                parse_u64(argv[i + 4], &mask) != 0 ||
                g_cf.torn_lo > g_cf.torn_hi || mask >= 1u << SIM_N_MAX)
                goto bad;
            g_cf.torn_lost = (int)mode;
            g_cf.torn_mask = (unsigned)mask;
            i += 4;
        } else if (strcmp(a, "--torn-synced") == 0 && i + 1 < argc) {
            uint64_t mask;
            if (parse_u64(argv[++i], &mask) != 0 || mask >= 1u << SIM_N_MAX)
                goto bad;
            g_cf.torn_synced_mask = (unsigned)mask;
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
