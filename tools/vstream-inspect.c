/*
 * tools/vstream-inspect.c - offline inspection of a node's data dir.
 *
 * Role: prints the superblock verdict and both slots, the snapshot
 * verdict, the WAL verdict and the overall recovery verdict -- the same
 * recovery_open() vstreamd runs at boot, but read-only: nothing is
 * modified (a torn tail is reported as "would cut"). Then the verdict of
 * every partition directory under DATA/partitions: the same part_open()
 * a data shard runs at boot, in its read-only mode (with the durability
 * policy of --fsync-policy, default every-batch, and --cut-damaged-tail).
 * --verify-data also reads every batch of every partition and re-checks
 * every message checksum (what a poll verifies), reporting the first
 * damaged batch. --json prints the same as one JSON object.
 *
 * Exit: 0 the node would boot (and --verify-data found no damage), 3 it
 * would refuse (metadata or a partition) or data is damaged, 1 usage.
 * On the dir of a running node (DATA/vstream.lock held) it says so and
 * reads anyway. Without a config the identity (cluster, replica id and
 * count) is not checked; the replica count recorded in the superblock
 * decides whether a damaged WAL tail would be cut (cluster) or refused.
 * Callers: operators, tests (tests/integration/check_inspect.c).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/layout.h"
#include "shard/data/partition.h"
#include "shard/data/pdir.h"
#include "shard/storage/datadir.h"
#include "shard/storage/io.h"
#include "shard/storage/recovery.h"

static void
usage(FILE *f)
{
    fprintf(f, "usage: vstream-inspect DATA_DIR [--json] "
               "[--cut-damaged-tail] [--verify-data]\n"
               "                      [--fsync-policy every-batch|interval]\n"
               "exit status: 0 would boot, 3 would refuse (or damaged data), "
               "1 usage\n");
}

static void
json_str(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void
hex128(char *out, size_t cap, struct vs_u128 v)
{
    snprintf(out, cap, "%016llx%016llx", (unsigned long long)v.hi,
             (unsigned long long)v.lo);
}

/* Decodes one slot for display; 1 if decoded. */
static int
slot_state(const struct sb_slot *sl, struct vs_vsr_state *st, char *why,
           size_t whylen)
{
    if (sl->state != SB_SLOT_VALID)
        return 0;
    return vsr_state_decode(sl->version, sl->payload, sl->payload_len, st, why,
                            whylen) == VSR_STATE_OK;
}

static void
print_text(const char *dir, enum datadir_lock_state lock, pid_t pid,
           const struct recovery_result *r)
{
    printf("data dir: %s\n", dir);
    if (lock == DATADIR_LOCKED)
        printf("lock: a node is running on this dir (pid %ld); reading "
               "anyway\n",
               (long)pid);
    else if (lock == DATADIR_LOCK_UNKNOWN)
        printf("lock: could not probe %s\n", VS_DATADIR_LOCK_FILE);
    else
        printf("lock: not held (no node running)\n");
    if (r->sb_read_done) {
        printf("superblock: %s", sb_verdict_name(r->sb.verdict));
        if (r->sb.verdict == SB_PRESENT)
            printf(" (sequence %llu, newest %s)",
                   (unsigned long long)r->sb.sequence,
                   sb_slot_name(r->sb.newest));
        else if (r->sb.verdict == SB_UNREADABLE)
            printf(": %s", r->sb.reason);
        printf("\n");
        for (int i = 0; i < 2; i++) {
            const struct sb_slot *sl = &r->sb.slot[i];
            struct vs_vsr_state st;
            char why[160] = "", cs[40];
            printf("  %s: %s", sb_slot_name(i), sb_slot_state_name(sl->state));
            if (sl->state == SB_SLOT_VALID) {
                printf(" sequence %llu", (unsigned long long)sl->sequence);
                if (slot_state(sl, &st, why, sizeof(why))) {
                    hex128(cs, sizeof(cs), st.checkpoint_checksum);
                    printf(" view %u log_view %u commit_max %llu checkpoint "
                           "(op %llu, checksum %s) replica %u/%u faulty_op "
                           "%llu nonack_op %llu",
                           st.view, st.log_view,
                           (unsigned long long)st.commit_max,
                           (unsigned long long)st.checkpoint_op, cs,
                           (unsigned)st.replica_id, (unsigned)st.replica_count,
                           (unsigned long long)st.faulty_op,
                           (unsigned long long)st.nonack_op);
                } else {
                    printf(" undecodable: %s", why);
                }
            } else if (sl->state != SB_SLOT_ABSENT) {
                printf(": %s", sl->reason);
            }
            printf("\n");
        }
    }
    const struct snapfile *sn = &r->snap;
    if (!sn->reason[0])
        printf("snapshot: not read\n");
    else if (sn->status == SNAPFILE_OK || sn->status == SNAPFILE_UNKNOWN_FORMAT)
        printf("snapshot: %s (size %zu bytes, format version %u, op %llu)%s%s"
               "\n",
               snapfile_status_name(sn->status), sn->file_len,
               sn->prefix.format_version, (unsigned long long)sn->prefix.op,
               sn->status == SNAPFILE_OK ? "" : ": ",
               sn->status == SNAPFILE_OK ? "" : sn->reason);
    else
        printf("snapshot: %s: %s\n", snapfile_status_name(sn->status),
               sn->reason);
    if (r->wal_scanned) {
        const struct wal_scan *w = &r->wal_scan;
        printf("wal: %s, %llu bytes, %llu entries",
               wal_verdict_name(w->verdict), (unsigned long long)w->file_size,
               (unsigned long long)w->entries);
        if (w->entries)
            printf(" (ops %llu..%llu)", (unsigned long long)w->first_op,
                   (unsigned long long)w->last_op);
        for (unsigned v = 0; v < WAL_VERSIONS_TRACKED; v++)
            if (w->per_version[v])
                printf(", format v%u: %llu", v,
                       (unsigned long long)w->per_version[v]);
        if (w->mark_status == WAL_MARK_OK)
            printf(", durable mark op %llu", (unsigned long long)w->mark_op);
        else
            printf(", durable mark %s", wal_mark_status_name(w->mark_status));
        printf("\n");
        if (w->verdict != WAL_CLEAN)
            printf("  %s (op %llu, offset %llu)%s\n", w->reason,
                   (unsigned long long)w->bad_op,
                   (unsigned long long)w->bad_offset,
                   r->wal_tail_cut ? "; boot would cut it" : "");
    } else {
        printf("wal: not scanned\n");
    }
    printf("verdict: %s: %s\n", recovery_verdict_name(r->verdict), r->reason);
}

static void
print_json(const char *dir, enum datadir_lock_state lock, pid_t pid,
           const struct recovery_result *r)
{
    printf("{\"data_dir\":");
    json_str(dir);
    printf(",\"running\":%s,\"lock_pid\":%ld",
           lock == DATADIR_LOCKED ? "true" : "false", (long)pid);
    printf(",\"superblock\":");
    if (!r->sb_read_done) {
        printf("null");
    } else {
        printf("{\"verdict\":\"%s\"", sb_verdict_name(r->sb.verdict));
        if (r->sb.verdict == SB_PRESENT)
            printf(",\"sequence\":%llu,\"newest\":\"%s\"",
                   (unsigned long long)r->sb.sequence,
                   sb_slot_name(r->sb.newest));
        printf(",\"reason\":");
        json_str(r->sb.reason);
        printf(",\"slots\":[");
        for (int i = 0; i < 2; i++) {
            const struct sb_slot *sl = &r->sb.slot[i];
            struct vs_vsr_state st;
            char why[160] = "", cs[40];
            printf("%s{\"name\":\"%s\",\"state\":\"%s\"", i ? "," : "",
                   sb_slot_name(i), sb_slot_state_name(sl->state));
            if (sl->state == SB_SLOT_VALID) {
                printf(",\"sequence\":%llu", (unsigned long long)sl->sequence);
                if (slot_state(sl, &st, why, sizeof(why))) {
                    hex128(cs, sizeof(cs), st.checkpoint_checksum);
                    printf(",\"view\":%u,\"log_view\":%u,\"commit_max\":%llu,"
                           "\"checkpoint_op\":%llu,\"checkpoint_checksum\":"
                           "\"%s\",\"replica_id\":%u,\"replica_count\":%u,"
                           "\"faulty_op\":%llu,\"nonack_op\":%llu",
                           st.view, st.log_view,
                           (unsigned long long)st.commit_max,
                           (unsigned long long)st.checkpoint_op, cs,
                           (unsigned)st.replica_id, (unsigned)st.replica_count,
                           (unsigned long long)st.faulty_op,
                           (unsigned long long)st.nonack_op);
                } else {
                    printf(",\"undecodable\":");
                    json_str(why);
                }
            } else if (sl->state != SB_SLOT_ABSENT) {
                printf(",\"reason\":");
                json_str(sl->reason);
            }
            printf("}");
        }
        printf("]}");
    }
    const struct snapfile *sn = &r->snap;
    if (!sn->reason[0]) {
        printf(",\"snapshot\":null");
    } else {
        printf(",\"snapshot\":{\"status\":\"%s\"",
               snapfile_status_name(sn->status));
        if (sn->status == SNAPFILE_OK || sn->status == SNAPFILE_UNKNOWN_FORMAT)
            printf(",\"size\":%zu,\"format_version\":%u,\"op\":%llu",
                   sn->file_len, sn->prefix.format_version,
                   (unsigned long long)sn->prefix.op);
        printf(",\"reason\":");
        json_str(sn->reason);
        printf("}");
    }
    printf(",\"wal\":");
    if (!r->wal_scanned) {
        printf("null");
    } else {
        const struct wal_scan *w = &r->wal_scan;
        printf("{\"verdict\":\"%s\",\"size\":%llu,\"entries\":%llu",
               wal_verdict_name(w->verdict), (unsigned long long)w->file_size,
               (unsigned long long)w->entries);
        if (w->entries)
            printf(",\"first_op\":%llu,\"last_op\":%llu",
                   (unsigned long long)w->first_op,
                   (unsigned long long)w->last_op);
        printf(",\"per_version\":{");
        int first = 1;
        for (unsigned v = 0; v < WAL_VERSIONS_TRACKED; v++)
            if (w->per_version[v]) {
                printf("%s\"%u\":%llu", first ? "" : ",", v,
                       (unsigned long long)w->per_version[v]);
                first = 0;
            }
        printf("}");
        if (w->verdict != WAL_CLEAN)
            printf(",\"bad_op\":%llu,\"bad_offset\":%llu",
                   (unsigned long long)w->bad_op,
                   (unsigned long long)w->bad_offset);
        printf(",\"mark\":\"%s\"", wal_mark_status_name(w->mark_status));
        if (w->mark_status == WAL_MARK_OK)
            printf(",\"mark_op\":%llu", (unsigned long long)w->mark_op);
        printf(",\"would_cut\":%s,\"reason\":",
               r->wal_tail_cut ? "true" : "false");
        json_str(w->reason);
        printf("}");
    }
    printf(",\"verdict\":\"%s\",\"boots\":%s,\"reason\":",
           recovery_verdict_name(r->verdict),
           recovery_verdict_boots(r->verdict) ? "true" : "false");
    json_str(r->reason);
}

/* One partition's verdict. */
struct part_report {
    char name[256];
    int refused;   /* the open refused: boot would stop the shard */
    int damaged;   /* --verify-data found a batch failing */
    int io_error;  /* the directory could not be read at all */
    char msg[600]; /* the refusal / damage / error, one line */
    uint64_t first, current, messages;
    int empty;
    uint32_t segments;
};

struct part_reports {
    struct part_report *r;
    size_t n, cap;
    int any_bad;
};

/* Reads every batch of p through part_poll (which verifies every message
 * checksum). 0, or -EBADMSG / -errno with msg set. */
static int
verify_all(struct vs_part *p, char *msg, size_t cap)
{
    struct part_stats st;
    part_stats(p, &st);
    if (st.empty)
        return 0;
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    uint64_t off = st.first_offset;
    int rc = 0;
    while (off <= st.current_offset) {
        struct part_poll_result r;
        vs_wbuf_reset(&w);
        rc = part_poll(p, PART_POLL_OFFSET, off, 100000, 8u << 20, &w, &r);
        if (rc != 0) {
            snprintf(msg, cap,
                     "reading from offset %" PRIu64 ": %s (a poll of it "
                     "would be refused)",
                     off,
                     rc == -EBADMSG ? "a batch fails its message checksums"
                                    : strerror(-rc));
            break;
        }
        if (r.count == 0)
            break;
        off = r.last_offset + 1;
    }
    vs_wbuf_fini(&w);
    return rc;
}

static void
inspect_partitions(struct vs_sio *io, const char *dir,
                   const struct part_opts *o, int verify,
                   struct part_reports *out)
{
    char parts[AFILE_PATH_MAX];
    snprintf(parts, sizeof(parts), "%s/%s", dir, VS_PARTITIONS_DIR);
    DIR *d = opendir(parts);
    if (!d)
        return; /* no partitions yet */
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct part_id id;
        if (!pdir_parse(de->d_name, &id))
            continue;
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 16;
            out->r = realloc(out->r, out->cap * sizeof(*out->r));
            if (!out->r)
                abort();
        }
        struct part_report *pr = &out->r[out->n++];
        memset(pr, 0, sizeof(*pr));
        snprintf(pr->name, sizeof(pr->name), "%s", de->d_name);
        struct vs_part *p = NULL;
        struct part_verdict v;
        int rc = part_open(io, parts, &id, o, 0, 0, &p, &v);
        if (rc == -EBADMSG) {
            pr->refused = 1;
            snprintf(pr->msg, sizeof(pr->msg), "%s", v.msg);
        } else if (rc != 0) {
            pr->io_error = 1;
            snprintf(pr->msg, sizeof(pr->msg), "cannot open: %s",
                     strerror(-rc));
        } else {
            struct part_stats st;
            part_stats(p, &st);
            pr->empty = st.empty;
            pr->first = st.first_offset;
            pr->current = st.current_offset;
            pr->messages =
                st.empty ? 0 : st.current_offset - st.first_offset + 1;
            pr->segments = st.segments;
            if (verify && verify_all(p, pr->msg, sizeof(pr->msg)) != 0)
                pr->damaged = 1;
            part_abandon(p); /* read-only: nothing to write */
        }
        if (pr->refused || pr->damaged || pr->io_error)
            out->any_bad = 1;
    }
    closedir(d);
}

static void
print_parts_text(const struct part_reports *ps, int verify)
{
    printf("partitions: %zu%s\n", ps->n,
           verify ? " (every message checksum verified)" : "");
    for (size_t i = 0; i < ps->n; i++) {
        const struct part_report *r = &ps->r[i];
        if (r->refused)
            printf("  %s: refuse: %s\n", r->name, r->msg);
        else if (r->io_error)
            printf("  %s: error: %s\n", r->name, r->msg);
        else if (r->damaged)
            printf("  %s: damaged: %s\n", r->name, r->msg);
        else if (r->empty)
            printf("  %s: ok, empty, %u segment(s)\n", r->name, r->segments);
        else
            printf("  %s: ok, offsets %" PRIu64 "..%" PRIu64
                   ", %u segment(s)\n",
                   r->name, r->first, r->current, r->segments);
    }
    printf("data verdict: %s\n",
           ps->any_bad ? (verify ? "refuse or damaged" : "refuse") : "boot");
}

static void
print_parts_json(const struct part_reports *ps, int verify)
{
    printf(",\"partitions\":[");
    for (size_t i = 0; i < ps->n; i++) {
        const struct part_report *r = &ps->r[i];
        printf("%s{\"name\":", i ? "," : "");
        json_str(r->name);
        printf(",\"verdict\":\"%s\"", r->refused    ? "refuse"
                                      : r->io_error ? "error"
                                      : r->damaged  ? "damaged"
                                                    : "ok");
        if (!r->refused && !r->io_error)
            printf(",\"empty\":%s,\"first_offset\":%" PRIu64
                   ",\"current_offset\":%" PRIu64 ",\"segments\":%u",
                   r->empty ? "true" : "false", r->first, r->current,
                   r->segments);
        if (r->msg[0]) {
            printf(",\"reason\":");
            json_str(r->msg);
        }
        printf("}");
    }
    printf("],\"verified\":%s,\"data_boots\":%s", verify ? "true" : "false",
           ps->any_bad ? "false" : "true");
}

int
main(int argc, char **argv)
{
    const char *dir = NULL;
    int json = 0, cut = 0, verify = 0;
    enum part_durability policy = PART_FSYNC_EVERY_BATCH;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--cut-damaged-tail") == 0)
            cut = 1;
        else if (strcmp(argv[i], "--verify-data") == 0)
            verify = 1;
        else if (strcmp(argv[i], "--fsync-policy") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "every-batch") == 0)
                policy = PART_FSYNC_EVERY_BATCH;
            else if (strcmp(v, "interval") == 0)
                policy = PART_FSYNC_INTERVAL;
            else {
                usage(stderr);
                return 1;
            }
        } else if (strcmp(argv[i], "-h") == 0 ||
                   strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || dir) {
            usage(stderr);
            return 1;
        } else
            dir = argv[i];
    }
    if (!dir) {
        usage(stderr);
        return 1;
    }
    if (access(dir, F_OK) == -1) {
        fprintf(stderr, "vstream-inspect: %s: no such data dir\n", dir);
        return 1;
    }
    pid_t pid = 0;
    enum datadir_lock_state lock = datadir_probe_lock(dir, &pid);

    struct vs_sio io;
    sio_init_real(&io);
    /* The replica count recorded in the superblock decides cluster-ness
     * (a damaged WAL tail is cut by a cluster replica, refused by one). */
    char meta[AFILE_PATH_MAX];
    snprintf(meta, sizeof(meta), "%s/%s", dir, VS_METADATA_DIR);
    struct recovery_expect e = {.read_only = 1,
                                .cut_damaged_tail = cut,
                                .wal_unsynced_max = WAL_GROUP_UNSYNCED_MAX};
    static struct sb_read pre;
    if (sb_read_latest(&io, meta, &pre) == 0 && pre.verdict == SB_PRESENT) {
        struct vs_vsr_state st;
        if (vsr_state_decode(pre.version, pre.payload, pre.payload_len, &st,
                             NULL, 0) == VSR_STATE_OK)
            e.is_cluster = st.replica_count > 1;
    }
    static struct recovery_result r;
    int rc = recovery_open(&io, dir, &e, &r);
    if (rc < 0) { /* read-only: cannot happen, but never claim a boot */
        fprintf(stderr, "vstream-inspect: %s\n", sio_strerror(rc));
        recovery_result_fini(&r);
        return VS_EXIT_INSPECT_REFUSE;
    }
    /* partitions: the data shards' boot verdict, read-only */
    struct part_opts po;
    part_opts_default(&po);
    po.read_only = 1;
    po.durability = policy;
    po.cut_damaged_tail = cut;
    struct part_reports ps = {0};
    inspect_partitions(&io, dir, &po, verify, &ps);
    if (json) {
        print_json(dir, lock, pid, &r);
        print_parts_json(&ps, verify);
        printf("}\n");
    } else {
        print_text(dir, lock, pid, &r);
        print_parts_text(&ps, verify);
    }
    int boots = recovery_verdict_boots(r.verdict) && !ps.any_bad;
    free(ps.r);
    recovery_result_fini(&r);
    return boots ? 0 : VS_EXIT_INSPECT_REFUSE;
}
