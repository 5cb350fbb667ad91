/*
 * shard/zero/boot.c - see boot.h. Shard 0 only.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/layout.h"
#include "common/log.h"
#include "common/mem.h"
#include "server/listen.h"
#include "shard/meta/snapshot_codec.h"
#include "shard/storage/atomic_file.h"
#include "shard/zero/boot.h"

uint32_t
shard0_replica_count(const struct vs_config *cfg)
{
    uint32_t n = sup_addr_list_count(cfg->replica_addrs);
    return n == 0 ? 1 : n;
}

static void
fill_expect(const struct vs_config *cfg, struct recovery_expect *e)
{
    memset(e, 0, sizeof(*e));
    e->check_identity = 1;
    vs_config_cluster_id(cfg, &e->cluster.lo, &e->cluster.hi);
    e->replica_id = (uint8_t)cfg->replica_id;
    e->replica_count = (uint8_t)shard0_replica_count(cfg);
    e->is_cluster = e->replica_count > 1;
    e->cut_damaged_tail = cfg->cut_damaged_tail != 0;
    e->wal_unsynced_max = WAL_GROUP_UNSYNCED_MAX; /* commit.c's group commit */
}

static int
fatal_line(struct shard0_recovered *rec, char *err, size_t errlen)
{
    char msg[512];
    sio_fatal_msg(&rec->io, msg, sizeof(msg));
    snprintf(err, errlen, "fatal storage error: %s", msg);
    return -VS_EFATAL;
}

static void
initial_state(const struct recovery_expect *e, struct vs_vsr_state *s)
{
    memset(s, 0, sizeof(*s));
    s->cluster = e->cluster;
    s->replica_id = e->replica_id;
    s->replica_count = e->replica_count;
}

int
shard0_format(const struct vs_config *cfg, char *msg, size_t msglen)
{
    struct vs_sio io;
    sio_init_real(&io);
    struct recovery_expect expect;
    fill_expect(cfg, &expect);
    struct vs_vsr_state initial;
    initial_state(&expect, &initial);
    int rc = recovery_format_fresh(&io, cfg->data_dir, &initial);
    if (rc == -VS_EFATAL) {
        char why[512];
        sio_fatal_msg(&io, why, sizeof(why));
        snprintf(msg, msglen, "fatal storage error: %s", why);
    } else if (rc == -EEXIST) {
        snprintf(msg, msglen,
                 "%s/%s already holds a superblock, journal or snapshot: "
                 "refusing to format over it",
                 cfg->data_dir, VS_METADATA_DIR);
    } else if (rc != 0) {
        snprintf(msg, msglen, "cannot format %s: %s", cfg->data_dir,
                 strerror(-rc));
    } else {
        snprintf(msg, msglen,
                 "formatted %s as replica %u of %u in cluster '%s'",
                 cfg->data_dir, (unsigned)expect.replica_id,
                 (unsigned)expect.replica_count, cfg->cluster_name);
    }
    return rc;
}

static int
rebuilt_path(const char *data_dir, char *out, size_t cap, char *dir,
             size_t dircap)
{
    int n = snprintf(dir, dircap, "%s/%s", data_dir, VS_METADATA_DIR);
    if (n < 0 || (size_t)n >= dircap)
        return -ENAMETOOLONG;
    return afile_join(out, cap, dir, SHARD0_REBUILT_FILE);
}

int
shard0_recover(const struct vs_config *cfg, char *msg, size_t msglen)
{
    if (shard0_replica_count(cfg) < 2) {
        snprintf(msg, msglen,
                 "recover rebuilds a replica of a cluster from its peers; a "
                 "one-replica node has none (replica_addrs names one node)");
        return -EINVAL;
    }
    char why[512];
    int rc = shard0_format(cfg, why, sizeof(why));
    if (rc != 0) {
        snprintf(msg, msglen, "%s", why);
        return rc;
    }
    struct vs_sio io;
    sio_init_real(&io);
    char dir[VS_CONFIG_PATH_MAX + 16], path[VS_CONFIG_PATH_MAX + 32];
    rc = rebuilt_path(cfg->data_dir, path, sizeof(path), dir, sizeof(dir));
    if (rc == 0) {
        static const char note[] = "rebuilt by vstreamd recover: no vote "
                                   "until caught up\n";
        rc = afile_replace(&io, dir, SHARD0_REBUILT_FILE, note,
                           sizeof(note) - 1);
    }
    if (rc != 0) {
        if (rc == -VS_EFATAL)
            sio_fatal_msg(&io, why, sizeof(why));
        else
            snprintf(why, sizeof(why), "%s", strerror(-rc));
        snprintf(msg, msglen, "cannot write the rebuilt marker in %s: %s", dir,
                 why);
        return rc;
    }
    snprintf(msg, msglen,
             "formatted %s as replica %u of %u in cluster '%s', rebuilt after "
             "a lost disk: it rejoins by repair and votes only once caught "
             "up",
             cfg->data_dir, cfg->replica_id, shard0_replica_count(cfg),
             cfg->cluster_name);
    return 0;
}

int
shard0_rebuilt_clear(struct vs_sio *io, const char *data_dir)
{
    char dir[VS_CONFIG_PATH_MAX + 16], path[VS_CONFIG_PATH_MAX + 32];
    int rc = rebuilt_path(data_dir, path, sizeof(path), dir, sizeof(dir));
    if (rc != 0)
        return rc;
    rc = sio_unlink(io, path);
    if (rc != 0 && rc != -ENOENT)
        return rc;
    return sio_dir_fsync(io, dir);
}

int
shard0_boot(const struct vs_config *cfg, struct shard0_recovered *out,
            char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    sio_init_real(&out->io);
    struct recovery_expect expect;
    fill_expect(cfg, &expect);

    int rc = recovery_open(&out->io, cfg->data_dir, &expect, &out->r);
    if (rc == -VS_EFATAL)
        return fatal_line(out, err, errlen);
    if (rc != 0) {
        snprintf(err, errlen, "recovery of %s/%s: %s", cfg->data_dir,
                 VS_METADATA_DIR, strerror(-rc));
        return rc;
    }
    if (out->r.verdict == RECOVERY_FRESH) {
        struct vs_vsr_state initial;
        initial_state(&expect, &initial);
        recovery_result_fini(&out->r);
        rc = recovery_format_fresh(&out->io, cfg->data_dir, &initial);
        if (rc == -VS_EFATAL)
            return fatal_line(out, err, errlen);
        if (rc != 0) {
            snprintf(err, errlen, "cannot format fresh data dir %s: %s",
                     cfg->data_dir, strerror(-rc));
            return rc;
        }
        out->formatted = 1;
        vs_log_info("formatted a fresh one-replica node in %s", cfg->data_dir);
        rc = recovery_open(&out->io, cfg->data_dir, &expect, &out->r);
        if (rc == -VS_EFATAL)
            return fatal_line(out, err, errlen);
        if (rc != 0) {
            snprintf(err, errlen, "recovery of %s after format: %s",
                     cfg->data_dir, strerror(-rc));
            return rc;
        }
    }
    if (out->r.verdict != RECOVERY_BOOT) {
        snprintf(err, errlen, "refusing to boot: %s", out->r.reason);
        return -EPERM;
    }
    if (out->r.have_snapshot)
        out->snapshot = snapfile_take_payload(&out->r.snap, &out->snapshot_len);
    char dir[VS_CONFIG_PATH_MAX + 16], path[VS_CONFIG_PATH_MAX + 32];
    if (shard0_replica_count(cfg) > 1 &&
        rebuilt_path(cfg->data_dir, path, sizeof(path), dir, sizeof(dir)) ==
            0 &&
        access(path, F_OK) == 0) {
        out->rebuilt = 1;
        vs_log_info("this replica was rebuilt after a lost disk (%s): it "
                    "rejoins without voting until caught up",
                    path);
    }
    vs_log_info("recovered: %s", out->r.reason);
    return 0;
}

void
shard0_recovered_fini(struct shard0_recovered *rec)
{
    recovery_result_fini(&rec->r);
    free(rec->snapshot);
    rec->snapshot = NULL;
}

int
shard0_rebuild_state(void *instance, const struct meta_caps *caps,
                     struct shard0_recovered *rec, struct meta_client_table *ct,
                     shard0_replay_fn *hook, void *hook_ctx, uint64_t *op_out,
                     char *err, size_t errlen)
{
    /* The instance is zero (lr_instance_zero): write the header only, so
     * capacity that is not used costs no memory. */
    int rc = meta_state_init(instance, caps);
    if (rc != 0) {
        snprintf(err, errlen, "metadata capacities are invalid");
        return rc;
    }
    uint64_t op = 0;
    if (rec->snapshot != NULL) {
        enum meta_snap_status st = meta_snapshot_decode(
            rec->snapshot, rec->snapshot_len, instance, ct);
        if (st != META_SNAP_OK) {
            snprintf(err, errlen, "snapshot of op %llu does not decode: %s",
                     (unsigned long long)rec->r.snapshot_op,
                     meta_snap_status_str(st));
            return -EBADMSG;
        }
        op = rec->r.snapshot_op;
    }
    if (!rec->r.journal_open || rec->r.replay_from > rec->r.replay_to) {
        *op_out = op;
        return 0;
    }
    size_t cap = 64 * 1024;
    uint8_t *body = vs_xmalloc(cap);
    struct meta_result res;
    meta_result_init(&res);
    for (uint64_t o = rec->r.replay_from; o <= rec->r.replay_to; o++) {
        const struct vs_hdr_prepare *h = wal_header(&rec->r.journal, o);
        if (h == NULL) {
            snprintf(err, errlen, "journal lost op %llu during replay",
                     (unsigned long long)o);
            rc = -EIO;
            goto out;
        }
        size_t need = h->f.size - VS_HEADER_SIZE;
        if (need > cap) {
            cap = need;
            body = vs_xrealloc(body, cap);
        }
        long n = wal_read_body(&rec->r.journal, o, body, cap);
        if (n < 0) {
            snprintf(err, errlen, "journal op %llu: cannot read its body: %s",
                     (unsigned long long)o, strerror((int)-n));
            rc = -EIO;
            goto out;
        }
        struct meta_op_ctx ctx = {
            .op = h->op,
            .timestamp = h->timestamp,
            .user_id = h->user_id,
            .operation = h->operation,
            .client = h->client,
            .request = h->request,
            .request_checksum = h->request_checksum,
        };
        meta_result_reset(&res);
        meta_apply(instance, &ctx, body, (size_t)n, &res);
        if (hook != NULL)
            hook(hook_ctx, h, &res);
        op = o;
    }
    rc = 0;
out:
    meta_result_fini(&res);
    free(body);
    *op_out = op;
    return rc;
}
