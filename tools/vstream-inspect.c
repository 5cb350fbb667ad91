/*
 * tools/vstream-inspect.c - offline inspection of a node's data dir.
 *
 * Role: prints the superblock verdict and both slots, the snapshot
 * verdict, the WAL verdict and the overall recovery verdict -- the same
 * recovery_open() vstreamd runs at boot, but read-only: nothing is
 * modified (a torn tail is reported as "would cut"). --json prints the
 * same as one JSON object.
 *
 * Exit: 0 the node would boot, 3 it would refuse, 1 usage error.
 * On the dir of a running node (DATA/vstream.lock held) it says so and
 * reads anyway. Without a config the identity (cluster, replica id and
 * count) is not checked; the replica count recorded in the superblock
 * decides whether a damaged WAL tail would be cut (cluster) or refused.
 * Callers: operators, tests (tests/integration/check_inspect.c).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/layout.h"
#include "shard/storage/datadir.h"
#include "shard/storage/io.h"
#include "shard/storage/recovery.h"

static void
usage(FILE *f)
{
    fprintf(f, "usage: vstream-inspect DATA_DIR [--json] "
               "[--cut-damaged-tail]\n"
               "exit status: 0 would boot, 3 would refuse, 1 usage\n");
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
                           "(op %llu, checksum %s) replica %u/%u",
                           st.view, st.log_view,
                           (unsigned long long)st.commit_max,
                           (unsigned long long)st.checkpoint_op, cs,
                           (unsigned)st.replica_id, (unsigned)st.replica_count);
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
                           "\"%s\",\"replica_id\":%u,\"replica_count\":%u",
                           st.view, st.log_view,
                           (unsigned long long)st.commit_max,
                           (unsigned long long)st.checkpoint_op, cs,
                           (unsigned)st.replica_id, (unsigned)st.replica_count);
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
        printf(",\"would_cut\":%s,\"reason\":",
               r->wal_tail_cut ? "true" : "false");
        json_str(w->reason);
        printf("}");
    }
    printf(",\"verdict\":\"%s\",\"boots\":%s,\"reason\":",
           recovery_verdict_name(r->verdict),
           recovery_verdict_boots(r->verdict) ? "true" : "false");
    json_str(r->reason);
    printf("}\n");
}

int
main(int argc, char **argv)
{
    const char *dir = NULL;
    int json = 0, cut = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--cut-damaged-tail") == 0)
            cut = 1;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
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
    struct recovery_expect e = {.read_only = 1, .cut_damaged_tail = cut};
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
    if (json)
        print_json(dir, lock, pid, &r);
    else
        print_text(dir, lock, pid, &r);
    int boots = recovery_verdict_boots(r.verdict);
    recovery_result_fini(&r);
    return boots ? 0 : VS_EXIT_INSPECT_REFUSE;
}
