/*
 * tests/unit/check_pgroup.c - three replicas of one partition group in
 * one process (shard/serve/pgroup.c): each on its own partition in its
 * own temp dir, wired by an in-memory message queue (env->send), fsyncs
 * done synchronously after each step (env->sync). Sends commit on a
 * quorum, every replica's .log/.vsr bytes agree up to the commit, polls
 * never see uncommitted batches, a killed primary is replaced and rejoins
 * by repair, duplicates are answered by client id and request, and the
 * two upstream failures (an empty repair range after a leader restart, a
 * commit stalled on an adopted suffix nobody can repair) do not happen.
 * Every loop is bounded in steps.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/errors.h"
#include "common/wire.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/data/pdir.h"
#include "shard/data/pjournal.h"
#include "shard/serve/pgclients.h"
#include "shard/serve/pgroup.h"
#include "shard/storage/io.h"
#include "tests/unit/data_testutil.h"
#include "tests/unit/pgroup_net.h"

/* A power loss before any fsync of the node's appends: every segment
 * and journal record file is emptied (what was written since the
 * partition was created never reached the disk). */
static void
node_lose_unsynced_appends(struct pn_node *n)
{
    DIR *top = opendir(n->parts);
    ck_assert_ptr_nonnull(top);
    struct dirent *pd;
    while ((pd = readdir(top)) != NULL) {
        if (pd->d_name[0] == '.')
            continue;
        char dir[700];
        snprintf(dir, sizeof dir, "%s/%s", n->parts, pd->d_name);
        DIR *d = opendir(dir);
        if (d == NULL)
            continue;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            size_t l = strlen(e->d_name);
            if (l > 4 && (strcmp(e->d_name + l - 4, ".log") == 0 ||
                          strcmp(e->d_name + l - 4, ".vsr") == 0)) {
                char f[1000];
                snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
                ck_assert_int_eq(truncate(f, 0), 0);
            }
        }
        closedir(d);
    }
    closedir(top);
}

static void
setup(void)
{
    pn_setup(NULL);
}

START_TEST(test_three_replicas_commit)
{
    int p = pn_wait_primary(-1);
    ck_assert_int_eq(p, 0);
    /* a backup refuses and names the primary */
    ck_assert_int_eq(pn_send_on(1, 9, 1, 1), -EREMOTE);
    ck_assert_int_eq(pgroup_primary(pn_nodes[1].g), 0);
    ck_assert_uint_ne(pgroup_id(pn_nodes[0].g), VS_METADATA_GROUP);
    ck_assert_uint_eq(pgroup_id(pn_nodes[0].g), pgroup_group_id(&pn_id));

    /* a send is invisible everywhere until it commits */
    ck_assert_int_eq(pn_send_on(0, 1, 1, 3), 0);
    for (int i = 0; i < PN_N; i++)
        ck_assert_uint_eq(pn_polled(i, NULL), 0);
    ck_assert(pn_find_reply(1, 1, 0) == NULL);
    pn_wait_reply(1, 1);
    ck_assert_uint_eq(pn_polled(0, NULL), 3);

    pn_produce(4, 2, 12);
    uint64_t top = pgroup_commit(pn_nodes[0].g);
    ck_assert_uint_eq(top, 1 + 4 * 11);
    pn_wait_commit_all(top);
    uint64_t last0 = 0, last = 0;
    uint32_t c0 = pn_polled(0, &last0);
    for (int i = 1; i < PN_N; i++) {
        ck_assert_uint_eq(pn_polled(i, &last), c0);
        ck_assert_uint_eq(last, last0);
    }
    ck_assert_uint_eq(last0 + 1, c0); /* offsets 0..c0-1, no hole */
    pn_files_identical();

    /* a retry of a committed request (the client reconnected: another
     * transport, same client id) is answered again, with no new op */
    size_t before = pn_count_replies(3, 12);
    ck_assert_int_eq(pn_send_on(0, 3, 12, 2), 0);
    ck_assert_uint_eq(pn_count_replies(3, 12), before + 1);
    ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[0].g)), top);
    /* a retry while the first is still uncommitted: one op, one reply */
    ck_assert_int_eq(pn_send_on(0, 5, 1, 1), 0);
    ck_assert_int_eq(pn_send_on(0, 5, 1, 1), 0);
    pn_wait_reply(5, 1);
    for (int s = 0; s < 50; s++)
        pn_step();
    ck_assert_uint_eq(pn_count_replies(5, 1), 1);
    ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[0].g)), top + 1);
    /* sends do not advance the request number: the request checksum
     * tells two batches of one (client, request) apart */
    {
        uint64_t op0 = vsr_op(pgroup_engine(pn_nodes[0].g));
        uint64_t cks[2] = {0x1234, 0x5678};
        uint64_t base[2];
        for (int k = 0; k < 2; k++) {
            size_t len;
            uint8_t *b = pn_client_batch(900 + (uint64_t)k, 2, &len);
            struct vs_hdr_request r = pn_request(20, 1);
            r.request_checksum.lo = cks[k];
            int rc = -EAGAIN;
            for (int s = 0; s < PN_MAX_STEPS && rc != 0; s++) {
                rc = pgroup_on_send(pn_nodes[0].g, &r, b, len, pn_wall, NULL);
                if (rc != 0) {
                    ck_assert_int_eq(rc, -EALREADY);
                    pn_step();
                }
            }
            free(b);
            for (int s = 0; s < PN_MAX_STEPS; s++) {
                int got = 0;
                for (size_t i = 0; i < pn_nrep; i++)
                    if (pn_rep[i].client.lo == 20 &&
                        pn_rep[i].request_checksum.lo == cks[k]) {
                        got = 1;
                        base[k] = pn_rep[i].base_offset;
                    }
                if (got)
                    break;
                pn_step();
            }
        }
        ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[0].g)), op0 + 2);
        ck_assert_uint_eq(base[1], base[0] + 2);
        /* a retry of the first one: answered with its own offset */
        size_t len;
        uint8_t *b = pn_client_batch(900, 2, &len);
        struct vs_hdr_request r = pn_request(20, 1);
        r.request_checksum.lo = cks[0];
        size_t n0 = pn_nrep;
        ck_assert_int_eq(
            pgroup_on_send(pn_nodes[0].g, &r, b, len, pn_wall, NULL), 0);
        free(b);
        ck_assert_uint_eq(pn_nrep, n0 + 1);
        ck_assert_uint_eq(pn_rep[n0].base_offset, base[0]);
        ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[0].g)), op0 + 2);
    }
    /* another request of a client with one in flight */
    ck_assert_int_eq(pn_send_on(0, 6, 1, 1), 0);
    ck_assert_int_eq(pn_send_on(0, 6, 2, 1), -EALREADY);
    pn_wait_reply(6, 1);
    /* a refused batch is not proposed */
    {
        uint8_t junk[300] = {0};
        struct vs_hdr_request r = pn_request(7, 1);
        enum batch_err be = BATCH_OK;
        ck_assert_int_eq(
            pgroup_on_send(pn_nodes[0].g, &r, junk, sizeof(junk), pn_wall, &be),
            -EINVAL);
        ck_assert_int_ne(be, BATCH_OK);
    }
    /* a consumer-offset op is replicated and applied everywhere */
    {
        struct pgroup_offset_op o = {
            .kind = PART_CONSUMER, .id = 11, .offset = 5};
        struct vs_hdr_request r = pn_request(8, 1);
        ck_assert_int_eq(pgroup_on_offset(pn_nodes[0].g, &r,
                                          VS_OP_STORE_CONSUMER_OFFSET, &o,
                                          pn_wall),
                         0);
        pn_wait_reply(8, 1);
        uint64_t op = pgroup_commit(pn_nodes[0].g);
        pn_wait_commit_all(op);
        struct part_consumer pc = {.kind = PART_CONSUMER, .id = 11};
        for (int i = 0; i < PN_N; i++) {
            uint64_t off = 0;
            ck_assert_int_eq(
                part_offset_get(pgroup_part(pn_nodes[i].g), &pc, &off), 0);
            ck_assert_uint_eq(off, 5);
        }
        /* an offset past the log is refused by the apply (4100) */
        o.offset = 1u << 30;
        r = pn_request(8, 2);
        ck_assert_int_eq(pgroup_on_offset(pn_nodes[0].g, &r,
                                          VS_OP_STORE_CONSUMER_OFFSET, &o,
                                          pn_wall),
                         0);
        for (int s = 0;
             s < PN_MAX_STEPS && !pn_find_reply(8, 2, VS_E_INVALID_OFFSET); s++)
            pn_step();
        ck_assert(pn_find_reply(8, 2, VS_E_INVALID_OFFSET) != NULL);
    }
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    pn_files_identical();
}
END_TEST

START_TEST(test_primary_killed_view_change_rejoin)
{
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_produce(3, 1, 6);
    uint64_t top = pgroup_commit(pn_nodes[0].g);
    pn_node_kill(&pn_nodes[0]);
    int p = pn_wait_primary(0);
    ck_assert_int_ne(p, 0);
    /* the new primary continues, offsets after the old ones */
    uint64_t last_before = 0;
    pn_polled(p, &last_before);
    pn_produce(3, 7, 14);
    ck_assert_uint_gt(pgroup_commit(pn_nodes[p].g), top);
    uint64_t last_after = 0;
    pn_polled(p, &last_after);
    ck_assert_uint_gt(last_after, last_before);
    /* the old primary restarts, rejoins as a backup and repairs */
    pn_node_start(&pn_nodes[0]);
    pn_produce(3, 15, 16);
    ck_assert_uint_gt(pn_repair_requests, 0);
    uint64_t now = pgroup_commit(pn_nodes[p].g);
    pn_wait_commit_all(now);
    ck_assert(!pgroup_is_settled_primary(pn_nodes[0].g));
    uint64_t l0 = 0, lp = 0;
    ck_assert_uint_eq(pn_polled(0, &l0), pn_polled(p, &lp));
    ck_assert_uint_eq(l0, lp);
    pn_files_identical();
}
END_TEST

/* Upstream #4230: after a leader restart with nothing to repair the
 * repair range is empty; it must never be asked for (or assert). */
START_TEST(test_leader_restart_empty_repair)
{
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_produce(2, 1, 5);
    uint64_t top = pgroup_commit(pn_nodes[0].g);
    pn_wait_commit_all(top);
    for (int s = 0; s < 30; s++)
        pn_step(); /* every commit heartbeat delivered: nothing missing */
    pn_node_kill(&pn_nodes[0]);
    pn_node_start(&pn_nodes[0]); /* back before anyone noticed */
    int p = pn_wait_primary(-1);
    pn_produce(2, 6, 8);
    pn_wait_commit_all(pgroup_commit(pn_nodes[p].g));
    ck_assert_uint_gt(pgroup_commit(pn_nodes[0].g), top);
    /* the whole cluster restarts at once: every replica recovers */
    for (int i = 0; i < PN_N; i++)
        pn_node_kill(&pn_nodes[i]);
    for (int i = 0; i < PN_N; i++)
        pn_node_start(&pn_nodes[i]);
    p = pn_wait_primary(-1);
    pn_produce(2, 9, 10);
    pn_wait_commit_all(pgroup_commit(pn_nodes[p].g));
    pn_files_identical();
}
END_TEST

/* Upstream #4075: a candidate adopts an uncommitted suffix whose body
 * only a replica that then dies holds. The commit must not stall
 * forever: the view change times out (view_change_status ticks, with
 * jitter and doubling) and the next view's merge, without the dead
 * replica's log, nacks the op; the group commits new sends again. */
START_TEST(test_unrepairable_adopted_suffix_bounded)
{
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_produce(2, 1, 3);
    uint64_t top = pgroup_commit(pn_nodes[0].g);
    pn_wait_commit_all(top);
    /* op top+1 reaches only node 0's journal, and node 0 never serves it
     * to a repair */
    pn_drop[0][1] = pn_drop[0][2] = 1;
    pn_drop_cmd[0][1][VS_CMD_REPAIR_PREPARE] = 1;
    pn_drop_cmd[0][1][VS_CMD_PREPARE] = 1; /* nor its retransmits */
    pn_drop_cmd[0][2][VS_CMD_REPAIR_PREPARE] = 1;
    ck_assert_int_eq(pn_send_on(0, 1, 4, 2), 0);
    for (int s = 0; s < 3; s++)
        pn_step();
    ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[0].g)), top + 1);
    /* node 2's view-change messages to node 1 are lost, so node 1 merges
     * with node 0's DoViewChange, which holds the op */
    pn_drop[2][1] = 1;
    pn_drop[0][1] = 0; /* node 0 hears the view change and answers */
    int adopted = 0;
    for (int s = 0; s < PN_MAX_STEPS && !adopted; s++) {
        pn_step();
        struct vs_hdr_prepare h;
        adopted = vsr_header(pgroup_engine(pn_nodes[1].g), top + 1, &h) == 1;
    }
    ck_assert_msg(adopted, "node 1 never learned op %llu",
                  (unsigned long long)(top + 1));
    pn_node_kill(&pn_nodes[0]); /* the only holder of the body dies */
    pn_drop[2][1] = 0;
    int p = -1;
    int steps = 0;
    for (; steps < PN_MAX_STEPS && p < 0; steps++) {
        pn_step();
        p = pn_settled_primary();
    }
    ck_assert_msg(p >= 0, "stalled: no settled primary within %d steps",
                  PN_MAX_STEPS);
    /* the op nobody could repair was cut by the next view's merge */
    ck_assert_uint_ge(
        vsr_stats(pgroup_engine(pn_nodes[p].g))->nack_truncations +
            vsr_stats(pgroup_engine(pn_nodes[1].g))->nack_truncations,
        1);
    ck_assert_uint_ge(vsr_view(pgroup_engine(pn_nodes[p].g)), 2);
    /* bounded by a few view-change status timeouts (60 ticks, x16 at
     * most with the doubling) */
    ck_assert_int_le(steps, 60 * 16 * 4);
    pn_produce(2, 5, 6);
    uint64_t now = pgroup_commit(pn_nodes[p].g);
    ck_assert_uint_gt(now, top);
    pn_wait_commit_all(now);
    /* the proposal of the lost op was answered "not committed" or never;
     * never acknowledged */
    ck_assert(pn_find_reply(1, 4, 0) == NULL);
    struct vs_hdr_prepare h;
    ck_assert_int_eq(vsr_header(pgroup_engine(pn_nodes[p].g), top + 1, &h), 1);
    ck_assert(!(h.client.lo == 1 && h.request == 4));
    pn_files_identical();
}
END_TEST

/* No PrepareOk before the append is durable: with both backups' fsyncs
 * held, the primary's own fsync is not a quorum and nothing commits. */
START_TEST(test_prepare_ok_after_durable)
{
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_produce(1, 1, 2);
    uint64_t top = pgroup_commit(pn_nodes[0].g);
    pn_hold_sync[1] = pn_hold_sync[2] = 1;
    ck_assert_int_eq(pn_send_on(0, 1, 3, 2), 0);
    for (int s = 0; s < 40; s++)
        pn_step();
    ck_assert_uint_eq(pgroup_commit(pn_nodes[0].g), top);
    ck_assert(pn_find_reply(1, 3, 0) == NULL);
    ck_assert_uint_eq(pn_polled(0, NULL), pn_polled(1, NULL));
    pn_hold_sync[2] = 0; /* one backup's disk catches up: a quorum */
    pn_wait_reply(1, 3);
    ck_assert_uint_eq(pgroup_commit(pn_nodes[0].g), top + 1);
    pn_hold_sync[1] = 0;
    pn_wait_commit_all(top + 1);
    pn_files_identical();
}
END_TEST

/* A backup out of space stops its group; the other two go on; once it is
 * reopened it rejoins and repairs what it missed. */
START_TEST(test_backup_enospc_stops_then_rejoins)
{
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_produce(2, 1, 2);
    sio_fault_arm(&pn_nodes[2].f, SIO_WRITE, 1, ENOSPC, 7);
    pn_produce(2, 3, 6);
    ck_assert(pgroup_fatal(pn_nodes[2].g));
    struct pgroup_stats st;
    pgroup_stats(pn_nodes[2].g, &st);
    ck_assert_uint_eq(st.enospc, 1);
    ck_assert(pgroup_is_settled_primary(pn_nodes[0].g));
    sio_fault_reset(&pn_nodes[2].f);
    pn_node_kill(&pn_nodes[2]);
    pn_node_start(&pn_nodes[2]);
    pn_produce(2, 7, 8);
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    pn_files_identical();
}
END_TEST

/* A backup whose last batch was damaged on disk cuts it, marks it faulty
 * and gets it repaired: it never nacks it, and its log ends identical. */
START_TEST(test_damaged_tail_repaired)
{
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_produce(2, 1, 4);
    uint64_t top = pgroup_commit(pn_nodes[0].g);
    pn_wait_commit_all(top);
    char log[900];
    snprintf(log, sizeof(log), "%s/%020llu.log", part_dir(pn_nodes[2].p),
             (unsigned long long)part_active_start(pn_nodes[2].p));
    pn_node_kill(&pn_nodes[2]);
    {
        int fd = open(log, O_RDWR);
        ck_assert_int_ge(fd, 0);
        off_t at = dt_file_size(log) - 5;
        uint8_t b;
        ck_assert_int_eq(pread(fd, &b, 1, at), 1);
        b ^= 1;
        ck_assert_int_eq(pwrite(fd, &b, 1, at), 1);
        close(fd);
    }
    pn_node_start(&pn_nodes[2]);
    struct vs_vsr_info in;
    vsr_info(pgroup_engine(pn_nodes[2].g), &in);
    ck_assert_uint_eq(in.faulty_op, top);
    ck_assert_uint_eq(in.journal_op, top - 1);
    pn_produce(2, 5, 6);
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    vsr_info(pgroup_engine(pn_nodes[2].g), &in);
    ck_assert_uint_eq(in.faulty_op, 0);
    pn_files_identical();
}
END_TEST

/* More ops than the journal window: checkpoints move it, the journal's
 * in-memory window is trimmed, a whole-cluster restart recovers from the
 * checkpoint, and a replica that missed a stretch inside the window
 * repairs it. */
START_TEST(test_long_run_checkpoints)
{
    for (int i = 0; i < PN_N; i++) {
        pn_node_kill(&pn_nodes[i]);
        pn_node_wipe(&pn_nodes[i]); /* a fresh cluster with other options */
    }
    pn_slots = 64;
    for (int i = 0; i < PN_N; i++)
        pn_node_start(&pn_nodes[i]);
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_produce(4, 1, 40); /* 160 ops */
    uint64_t top = pgroup_commit(pn_nodes[0].g);
    pn_wait_commit_all(top);
    struct vs_vsr_persist d;
    vsr_durable(pgroup_engine(pn_nodes[1].g), &d);
    ck_assert_uint_gt(d.checkpoint_op, 64);
    /* a backup misses a stretch shorter than the window */
    pn_drop[0][2] = 1;
    pn_produce(4, 41, 45);
    pn_drop[0][2] = 0;
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    pn_files_identical();
    for (int i = 0; i < PN_N; i++)
        pn_node_kill(&pn_nodes[i]);
    for (int i = 0; i < PN_N; i++)
        pn_node_start(&pn_nodes[i]);
    int p = pn_wait_primary(-1);
    uint64_t c0 = 0, c = 0;
    c0 = pn_polled(p, NULL);
    pn_produce(4, 46, 48);
    pn_wait_commit_all(pgroup_commit(pn_nodes[p].g));
    for (int i = 0; i < PN_N; i++) {
        c = pn_polled(i, NULL);
        ck_assert_uint_gt(c, c0);
        ck_assert_uint_eq(c, pn_polled(p, NULL));
    }
    pn_files_identical();
}
END_TEST

/* Interval policy: a replica acknowledges once written; the fsync
 * follows within PG_INTERVAL_TICKS. */
START_TEST(test_interval_policy)
{
    for (int i = 0; i < PN_N; i++) {
        pn_node_kill(&pn_nodes[i]);
        pn_node_wipe(&pn_nodes[i]); /* a fresh cluster with other options */
    }
    pn_durability = PART_FSYNC_INTERVAL;
    for (int i = 0; i < PN_N; i++)
        pn_node_start(&pn_nodes[i]);
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_hold_sync[1] = pn_hold_sync[2] = 1; /* acks do not wait for fsyncs */
    pn_produce(2, 1, 5);
    pn_hold_sync[1] = pn_hold_sync[2] = 0;
    for (int s = 0; s < 30; s++)
        pn_step();
    for (int i = 0; i < PN_N; i++) {
        struct pgroup_stats st;
        pgroup_stats(pn_nodes[i].g, &st);
        ck_assert_uint_gt(st.syncs, 0);
        ck_assert_uint_eq(pj_durable(pgroup_journal(pn_nodes[i].g)),
                          pj_head(pgroup_journal(pn_nodes[i].g)));
    }
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    pn_files_identical();
}
END_TEST

/* The result of an offset op is a function of the committed log up to
 * it: a store refused at its commit stays refused when a restart replays
 * it over a partition that meanwhile holds later batches; an applied op
 * is not applied again; every replica ends with the same offsets. */
START_TEST(test_offset_ops_replay_deterministic)
{
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_produce(1, 1, 2); /* a few messages */
    ck_assert_int_eq(pn_offset_op(0, 40, 1, VS_OP_STORE_CONSUMER_OFFSET, 1, 50),
                     0);
    pn_wait_status(40, 1, VS_E_INVALID_OFFSET);
    ck_assert_int_eq(pn_offset_op(0, 40, 2, VS_OP_STORE_CONSUMER_OFFSET, 2, 1),
                     0);
    pn_wait_status(40, 2, 0);
    ck_assert_int_eq(pn_offset_op(0, 40, 3, VS_OP_STORE_CONSUMER_OFFSET, 3, 1),
                     0);
    pn_wait_status(40, 3, 0);
    ck_assert_int_eq(pn_offset_op(0, 40, 4, VS_OP_DELETE_CONSUMER_OFFSET, 3, 0),
                     0);
    pn_wait_status(40, 4, 0);
    ck_assert_int_eq(pn_offset_op(0, 40, 5, VS_OP_DELETE_CONSUMER_OFFSET, 3, 0),
                     0);
    pn_wait_status(40, 5, VS_E_CONSUMER_OFFSET_NOT_FOUND);
    pn_produce(2, 3, 30); /* now far more than 50 messages */
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    for (int i = 0; i < PN_N; i++)
        pn_node_kill(&pn_nodes[i]);
    for (int i = 0; i < PN_N; i++)
        pn_node_start(&pn_nodes[i]);
    int p = pn_wait_primary(-1);
    pn_produce(2, 31, 32);
    pn_wait_commit_all(pgroup_commit(pn_nodes[p].g));
    for (int i = 0; i < PN_N; i++) {
        struct vs_part *pp = pgroup_part(pn_nodes[i].g);
        struct part_consumer c1 = {.kind = PART_CONSUMER, .id = 1};
        struct part_consumer c2 = {.kind = PART_CONSUMER, .id = 2};
        struct part_consumer c3 = {.kind = PART_CONSUMER, .id = 3};
        uint64_t off = 0;
        ck_assert_int_eq(part_offset_get(pp, &c1, &off), -ENOENT);
        ck_assert_int_eq(part_offset_get(pp, &c2, &off), 0);
        ck_assert_uint_eq(off, 1);
        ck_assert_int_eq(part_offset_get(pp, &c3, &off), -ENOENT);
        ck_assert_int_eq(pgroup_fatal(pn_nodes[i].g), 0);
    }
    /* retries after the restart: the table (rebuilt by the replay)
     * answers a cached one, an older one is never proposed again */
    uint64_t op = vsr_op(pgroup_engine(pn_nodes[p].g));
    size_t n0 = pn_nrep;
    ck_assert_int_eq(pn_offset_op(p, 40, 2, VS_OP_STORE_CONSUMER_OFFSET, 2, 1),
                     0);
    ck_assert_uint_eq(pn_nrep, n0 + 1);
    ck_assert_uint_eq(pn_rep[n0].status, 0);
    ck_assert_int_eq(pn_offset_op(p, 40, 1, VS_OP_STORE_CONSUMER_OFFSET, 1, 50),
                     -ESTALE);
    ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[p].g)), op);
}
END_TEST

/* A late copy of an old request number is never proposed again. */
START_TEST(test_stale_request_never_reproposed)
{
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    for (uint64_t r = 1; r <= 6; r++) {
        ck_assert_int_eq(pn_send_on(0, 30, r, 1), 0);
        pn_wait_reply(30, r);
    }
    uint64_t op = vsr_op(pgroup_engine(pn_nodes[0].g));
    /* request 1 with another checksum (another batch): refused */
    size_t len;
    uint8_t *b = pn_client_batch(77, 1, &len);
    struct vs_hdr_request r = pn_request(30, 1);
    r.request_checksum.lo = 0xDEAD;
    ck_assert_int_eq(pgroup_on_send(pn_nodes[0].g, &r, b, len, pn_wall, NULL),
                     -ESTALE);
    free(b);
    /* request 1 as it was, after more than four newer ones: still never
     * proposed again (refused: it is no longer cached) */
    ck_assert_int_eq(pn_send_on(0, 30, 1, 1), -ESTALE);
    /* the newest one as it was: answered from the table */
    size_t n0 = pn_nrep;
    ck_assert_int_eq(pn_send_on(0, 30, 6, 1), 0);
    ck_assert_uint_eq(pn_nrep, n0 + 1);
    ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[0].g)), op);
    struct pgroup_stats st;
    pgroup_stats(pn_nodes[0].g, &st);
    ck_assert_uint_eq(st.stale, 2);
    /* the current request number with a new checksum: a new batch */
    b = pn_client_batch(78, 1, &len);
    r = pn_request(30, 6);
    r.request_checksum.lo = 0xBEEF;
    ck_assert_int_eq(pgroup_on_send(pn_nodes[0].g, &r, b, len, pn_wall, NULL),
                     0);
    free(b);
    for (int s = 0; s < 50; s++)
        pn_step();
    ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[0].g)), op + 1);
}
END_TEST

/* A primary that dies before anything of its group was durable on its
 * disk (its fsync never ran) restarts Recovering, never as a fresh member
 * of view 0 (whose primary it is: it would propose another op 1 over the
 * one its backups acknowledged); the group keeps one op 1. */
START_TEST(test_restart_before_anything_durable)
{
    pn_hold_sync[0] = 1; /* the primary's own appends never become durable */
    int rc = -EAGAIN;
    for (int s = 0; s < PN_MAX_STEPS && rc != 0; s++) {
        rc = pn_send_on(0, 1, 1, 2);
        if (rc != 0)
            pn_step();
    }
    ck_assert_int_eq(rc, 0);
    for (int s = 0; s < 20; s++)
        pn_step();
    struct vs_vsr_info in;
    vsr_info(pgroup_engine(pn_nodes[1].g), &in);
    ck_assert_uint_ge(in.journal_op, 1); /* the backups hold op 1 */
    pn_node_kill(&pn_nodes[0]);
    node_lose_unsynced_appends(&pn_nodes[0]);
    pn_hold_sync[0] = 0;
    pn_node_start(&pn_nodes[0]);
    vsr_info(pgroup_engine(pn_nodes[0].g), &in);
    ck_assert_int_eq(in.status, VSR_STATUS_RECOVERING);
    pn_wait_primary(-1);
    pn_produce(2, 2, 4);
    pn_wait_commit_all(pgroup_commit(pn_nodes[1].g));
    pn_files_identical();
}
END_TEST

static int
state_file_present(const struct pn_node *n)
{
    char name[128], path[1000];
    ck_assert_int_eq(pdir_name(name, sizeof(name), &pn_id), 0);
    snprintf(path, sizeof(path), "%s/%s/vsr_state", n->parts, name);
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* A replicated member's partition is created with its group's first
 * superblock (part_opts.replicated): the group's first run starts as a
 * fresh member of view 0 without writing one; any later open - the
 * group reopened on the same handle, or a restart - recovers, and a
 * primary that died before anything of it was durable still restarts
 * Recovering (the mark was durable at create). */
START_TEST(test_superblock_made_at_create)
{
    for (int i = 0; i < PN_N; i++) {
        pn_node_kill(&pn_nodes[i]);
        pn_node_wipe(&pn_nodes[i]);
    }
    pn_replicated = 1;
    struct vs_vsr_info in;
    for (int i = 0; i < PN_N; i++) {
        pn_node_start(&pn_nodes[i]);
        ck_assert(state_file_present(&pn_nodes[i]));
        vsr_info(pgroup_engine(pn_nodes[i].g), &in);
        ck_assert_int_eq(in.status, VSR_STATUS_NORMAL);
        struct pgroup_stats ps;
        pgroup_stats(pn_nodes[i].g, &ps);
        ck_assert_uint_eq(ps.superblock_writes, 0);
    }
    /* the created mark is taken once: node 2's group reopened on the
     * same partition handle recovers */
    ck_assert_int_eq(part_take_created(pn_nodes[2].p), 0);
    pgroup_close(pn_nodes[2].g);
    pn_nodes[2].want_sync = 0;
    struct pgroup_opts po = pn_group_opts(&pn_nodes[2]);
    struct pgroup_env env = pn_env(&pn_nodes[2]);
    char why[512];
    ck_assert_int_eq(
        pgroup_open(&po, pn_nodes[2].p, &env, &pn_nodes[2].g, why, sizeof(why)),
        0);
    vsr_info(pgroup_engine(pn_nodes[2].g), &in);
    ck_assert_int_eq(in.status, VSR_STATUS_RECOVERING);
    /* the primary's appends never durable, then it dies */
    pn_hold_sync[0] = 1;
    int rc = -EAGAIN;
    for (int s = 0; s < PN_MAX_STEPS && rc != 0; s++) {
        rc = pn_send_on(0, 1, 1, 2);
        if (rc != 0)
            pn_step();
    }
    ck_assert_int_eq(rc, 0);
    for (int s = 0; s < 40; s++)
        pn_step();
    pn_node_kill(&pn_nodes[0]);
    node_lose_unsynced_appends(&pn_nodes[0]);
    pn_hold_sync[0] = 0;
    pn_node_start(&pn_nodes[0]);
    vsr_info(pgroup_engine(pn_nodes[0].g), &in);
    ck_assert_int_eq(in.status, VSR_STATUS_RECOVERING);
    pn_wait_primary(-1);
    pn_produce(2, 2, 4);
    pn_wait_commit_all(pgroup_commit(pn_nodes[1].g));
    pn_files_identical();
}
END_TEST

/* Superblock fsyncs off the loop (env->state_sync): a backup's view
 * change writes its superblock, and its StartViewChange - and every
 * view change message after it - waits until the runtime reports that
 * write fsynced (persist before send); then the view change completes
 * and the group commits again. */
START_TEST(test_superblock_fsync_off_loop_withholds_sends)
{
    for (int i = 0; i < PN_N; i++) {
        pn_node_kill(&pn_nodes[i]);
        pn_node_wipe(&pn_nodes[i]);
    }
    pn_async_state = 1;
    for (int i = 0; i < PN_N; i++)
        pn_node_start(&pn_nodes[i]);
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_produce(2, 1, 3);
    pn_hold_state[1] = pn_hold_state[2] = 1;
    uint64_t vc1 = pn_vc_sent[1], vc2 = pn_vc_sent[2];
    pn_node_kill(&pn_nodes[0]);
    /* well past the backups' timeout: both wrote view 1, unsynced */
    for (int s = 0; s < 400; s++)
        pn_step();
    ck_assert_int_ge(pn_nodes[1].state_fd, 0);
    ck_assert_int_ge(pn_nodes[2].state_fd, 0);
    ck_assert_uint_eq(pn_vc_sent[1], vc1);
    ck_assert_uint_eq(pn_vc_sent[2], vc2);
    ck_assert_int_eq(pn_settled_primary(), -1);
    /* one node's fsync completes: it speaks, the other still may not */
    pn_hold_state[1] = 0;
    for (int s = 0; s < 5; s++)
        pn_step();
    ck_assert_uint_gt(pn_vc_sent[1], vc1);
    ck_assert_uint_eq(pn_vc_sent[2], vc2);
    pn_hold_state[2] = 0;
    int p = pn_wait_primary(0);
    ck_assert(p == 1 || p == 2);
    pn_produce(2, 4, 5);
    pn_node_start(&pn_nodes[0]);
    pn_wait_commit_all(pgroup_commit(pn_nodes[p].g));
    pn_files_identical();
}
END_TEST

/* The create-time superblock's error path: it is never written over. */
START_TEST(test_state_format_refuses_existing)
{
    char name[128], dir[1000];
    ck_assert_int_eq(pdir_name(name, sizeof(name), &pn_id), 0);
    snprintf(dir, sizeof(dir), "%s/%s", pn_nodes[1].parts, name);
    ck_assert(state_file_present(&pn_nodes[1])); /* the group's first open */
    ck_assert_int_eq(pj_state_format(&pn_nodes[1].f.io, dir), -EEXIST);
    ck_assert_int_eq(pj_state_format(&pn_nodes[1].f.io, "/nonexistent/dir"),
                     -ENOENT);
}
END_TEST

/* The client table outlives the journal window: after a restart whose
 * recovered window no longer holds a client's proposals (many checkpoints
 * later), a late copy of its last one is answered from the saved table,
 * an older one refused, and neither is committed again. */
START_TEST(test_client_table_survives_restart)
{
    for (int i = 0; i < PN_N; i++) {
        pn_node_kill(&pn_nodes[i]);
        pn_node_wipe(&pn_nodes[i]);
    }
    pn_slots = 16; /* a checkpoint every 8 applied ops */
    for (int i = 0; i < PN_N; i++)
        pn_node_start(&pn_nodes[i]);
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    for (uint64_t r = 1; r <= 6; r++) {
        ck_assert_int_eq(pn_send_on(0, 60, r, 1), 0);
        pn_wait_reply(60, r);
    }
    const struct pn_reply *last = pn_find_reply(60, 6, 0);
    uint64_t base3 = last->base_offset, op3 = last->op;
    pn_produce(3, 1, 12); /* 36 ops of other clients: the window moves on */
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    struct vs_vsr_persist d;
    vsr_durable(pgroup_engine(pn_nodes[0].g), &d);
    ck_assert_uint_gt(d.checkpoint_op, op3 + pn_slots);
    for (int i = 0; i < PN_N; i++)
        pn_node_kill(&pn_nodes[i]);
    for (int i = 0; i < PN_N; i++)
        pn_node_start(&pn_nodes[i]);
    int p = pn_wait_primary(-1);
    uint64_t op = vsr_op(pgroup_engine(pn_nodes[p].g));
    size_t n0 = pn_nrep;
    ck_assert_int_eq(pn_send_on(p, 60, 6, 1), 0); /* the late copy */
    ck_assert_uint_eq(pn_nrep, n0 + 1);
    ck_assert_uint_eq(pn_rep[n0].status, 0);
    ck_assert_uint_eq(pn_rep[n0].op, op3);
    ck_assert_uint_eq(pn_rep[n0].base_offset, base3);
    ck_assert_int_eq(pn_send_on(p, 60, 1, 1), -ESTALE);
    for (int s = 0; s < 30; s++)
        pn_step();
    ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[p].g)), op);
    /* a damaged table file: the group still opens (from the window) */
    char path[900];
    snprintf(path, sizeof(path), "%s/%s", part_dir(pgroup_part(pn_nodes[p].g)),
             PGC_FILE);
    pn_node_kill(&pn_nodes[p]);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 30, SEEK_SET), 0);
    fputc(0x5A, f);
    fclose(f);
    pn_node_start(&pn_nodes[p]);
    pn_produce(1, 13, 14);
    pn_wait_commit_all(pgroup_commit(pn_nodes[(p + 1) % PN_N].g));
    pn_files_identical();
}
END_TEST

static void
hdr_of(struct vs_hdr_prepare *h, uint64_t client, uint64_t request,
       uint64_t checksum, uint64_t op)
{
    memset(h, 0, sizeof(*h));
    h->client.lo = client;
    h->client.hi = client ? 1 : 0;
    h->request = request;
    h->request_checksum.lo = checksum;
    h->op = op;
    h->operation = VS_OP_SEND_MESSAGES;
}

/* The "VSPC" form round-trips and every damage is refused. */
START_TEST(test_client_table_codec)
{
    struct pgc_table t, u;
    pgc_init(&t, 3);
    pgc_init(&u, 3);
    struct vs_hdr_prepare h;
    uint64_t op = 0;
    for (uint64_t i = 1; i <= 9; i++) {
        hdr_of(&h, 1 + i % 2, i, 100 + i, i);
        pgc_record(&t, &h, i * 10, 0);
    }
    hdr_of(&h, 1, 9, 109, 9); /* the same op again: not recorded twice */
    pgc_record(&t, &h, 90, 0);
    hdr_of(&h, 0, 1, 1, 10); /* no client: not recorded */
    pgc_record(&t, &h, 0, 0);
    ck_assert_uint_eq(t.n, 2);
    /* a fourth client evicts the least recently committed one */
    hdr_of(&h, 7, 1, 700, 11);
    pgc_record(&t, &h, 0, 4100);
    hdr_of(&h, 8, 1, 800, 12);
    pgc_record(&t, &h, 0, 0);
    ck_assert_uint_eq(t.n, 3);
    struct vs_u128 c2 = {2, 1}, c1 = {1, 1}, c7 = {7, 1};
    ck_assert_ptr_null(pgc_find(&t, c2)); /* last committed at op 8 */
    ck_assert_uint_eq(pgc_find(&t, c1)->max_request, 9);
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    pgc_encode(&t, 12, &w);
    ck_assert_int_eq(pgc_decode(&u, w.data, w.len, &op), 0);
    ck_assert_uint_eq(op, 12);
    ck_assert_uint_eq(u.n, 3);
    struct vs_u128 k = {109, 0};
    const struct pgc_done *d = pgc_done_find(&u, c1, 9, k);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(d->op, 9);
    ck_assert_uint_eq(d->base_offset, 90);
    k.lo = 700;
    ck_assert_uint_eq(pgc_done_find(&u, c7, 1, k)->code, 4100);
    k.lo = 101; /* evicted from client 1's ring of four */
    ck_assert_ptr_null(pgc_done_find(&u, c1, 1, k));
    /* re-encoding the decoded table gives the same bytes */
    struct vs_wbuf w2;
    vs_wbuf_init(&w2);
    pgc_encode(&u, 12, &w2);
    ck_assert_uint_eq(w.len, w2.len);
    ck_assert_int_eq(memcmp(w.data, w2.data, w.len), 0);
    /* damage: a flipped byte, trailing bytes, a short file, too many
     * clients for the capacity, a duplicate client id (re-sealed) */
    w.data[40] ^= 1;
    ck_assert_int_eq(pgc_decode(&u, w.data, w.len, &op), -EBADMSG);
    w.data[40] ^= 1;
    ck_assert_int_eq(pgc_decode(&u, w.data, w.len - 1, &op), -EBADMSG);
    ck_assert_int_eq(pgc_decode(&u, w.data, 20, &op), -EBADMSG);
    struct pgc_table small;
    pgc_init(&small, 2);
    ck_assert_int_eq(pgc_decode(&small, w.data, w.len, &op), -EBADMSG);
    pgc_fini(&small);
    memcpy(w.data + 28 + PGC_CLIENT_LEN, w.data + 28, 16);
    vs_store_u64(w.data + w.len - 8, vs_xxh3_64(w.data, w.len - 8));
    ck_assert_int_eq(pgc_decode(&u, w.data, w.len, &op), -EBADMSG);
    ck_assert_uint_eq(u.n, 3); /* unchanged by the refusals */
    vs_wbuf_fini(&w);
    vs_wbuf_fini(&w2);
    pgc_fini(&t);
    pgc_fini(&u);
}
END_TEST

static uint64_t
offset_on(int node, uint32_t consumer)
{
    struct part_consumer c = {.kind = PART_CONSUMER, .id = consumer};
    uint64_t off = UINT64_MAX;
    if (part_offset_get(pgroup_part(pn_nodes[node].g), &c, &off) != 0)
        return UINT64_MAX;
    return off;
}

/* A poll's auto-commit is an op of the group proposed by the primary
 * only; it raises the offset on every replica, never lowers it (an
 * explicit store does), and needs no client. */
START_TEST(test_autocommit_group_op)
{
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_produce(1, 1, 4); /* at least 4 messages */
    struct pgroup_offset_op o = {.kind = PART_CONSUMER, .id = 9, .offset = 3};
    ck_assert_int_eq(pgroup_on_autocommit(pn_nodes[1].g, &o, pn_wall),
                     -EREMOTE);
    uint64_t op = vsr_op(pgroup_engine(pn_nodes[0].g));
    ck_assert_int_eq(pgroup_on_autocommit(pn_nodes[0].g, &o, pn_wall), 0);
    /* the same one in flight: not proposed twice */
    ck_assert_int_eq(pgroup_on_autocommit(pn_nodes[0].g, &o, pn_wall), 0);
    ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[0].g)), op + 1);
    pn_wait_commit_all(op + 1);
    for (int i = 0; i < PN_N; i++)
        ck_assert_uint_eq(offset_on(i, 9), 3);
    /* lower: nothing proposed (the applied offset is above) */
    o.offset = 1;
    ck_assert_int_eq(pgroup_on_autocommit(pn_nodes[0].g, &o, pn_wall), 0);
    ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[0].g)), op + 1);
    /* beyond the committed frontier: committed, refused at its apply */
    o.offset = 1000000;
    ck_assert_int_eq(pgroup_on_autocommit(pn_nodes[0].g, &o, pn_wall), 0);
    pn_wait_commit_all(op + 2);
    for (int i = 0; i < PN_N; i++)
        ck_assert_uint_eq(offset_on(i, 9), 3);
    /* an explicit store lowers it */
    ck_assert_int_eq(pn_offset_op(0, 41, 1, VS_OP_STORE_CONSUMER_OFFSET, 9, 1),
                     0);
    pn_wait_status(41, 1, 0);
    pn_wait_commit_all(op + 3);
    for (int i = 0; i < PN_N; i++)
        ck_assert_uint_eq(offset_on(i, 9), 1);
    /* a raising store proposed while a lower one is applied: raised */
    o.offset = 2;
    ck_assert_int_eq(pgroup_on_autocommit(pn_nodes[0].g, &o, pn_wall), 0);
    pn_wait_commit_all(op + 4);
    for (int i = 0; i < PN_N; i++)
        ck_assert_uint_eq(offset_on(i, 9), 2);
    /* the body's raise flag: 0 and 1 only */
    uint8_t b[PGROUP_OFFSET_BODY];
    struct pgroup_offset_op x;
    o.raise = 1;
    pgroup_offset_encode(&o, b);
    ck_assert_uint_eq(b[1], 1);
    ck_assert_int_eq(pgroup_offset_decode(b, sizeof(b), &x), 0);
    ck_assert_uint_eq(x.raise, 1);
    b[1] = 2;
    ck_assert_int_eq(pgroup_offset_decode(b, sizeof(b), &x), -EINVAL);
    /* every replica kept the same files */
    pn_files_identical();
}
END_TEST

static size_t
segments_of(int node, uint64_t *starts, size_t max)
{
    uint64_t start, size;
    size_t n = 0;
    struct vs_part *pp = pgroup_part(pn_nodes[node].g);
    while (n < max && part_segment_at(pp, n, &start, &size) == 0)
        starts[n++] = start;
    return n;
}

static int
vsr_file_exists(int node, uint64_t start)
{
    char path[900];
    snprintf(path, sizeof(path), "%s/%020llu.vsr",
             part_dir(pgroup_part(pn_nodes[node].g)),
             (unsigned long long)start);
    return access(path, F_OK) == 0;
}

/* Retention / DeleteSegments of a replicated partition is an op of its
 * group: only the primary proposes it, every replica (one of them cut
 * off while it commits, repaired after) deletes the same sealed segments
 * and their .vsr records, the logs stay byte-identical, and the group
 * restarts over the trimmed log. */
START_TEST(test_trim_same_segments_everywhere)
{
    for (int i = 0; i < PN_N; i++) {
        pn_node_kill(&pn_nodes[i]);
        pn_node_wipe(&pn_nodes[i]);
    }
    /* no checkpoint during the run: the restart below recovers a journal
     * whose first ops were trimmed away */
    pn_slots = 1024;
    for (int i = 0; i < PN_N; i++)
        pn_node_start(&pn_nodes[i]);
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_produce(4, 1, 40);
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    uint64_t st[64];
    size_t n = segments_of(0, st, 64);
    ck_assert_uint_ge(n, 4);
    /* a backup never proposes one; bad kinds are refused */
    ck_assert_int_eq(
        pgroup_on_trim(pn_nodes[1].g, PGROUP_TRIM_RETENTION, st[2], pn_wall),
        -EREMOTE);
    ck_assert_int_eq(pgroup_on_trim(pn_nodes[0].g, 9, st[2], pn_wall), -EINVAL);
    /* nothing to delete: not proposed */
    uint64_t op = vsr_op(pgroup_engine(pn_nodes[0].g));
    ck_assert_int_eq(
        pgroup_on_trim(pn_nodes[0].g, PGROUP_TRIM_RETENTION, st[0], pn_wall),
        0);
    ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[0].g)), op);
    /* the same watermark from the pure planner (the size cap) */
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a, sz;
        ck_assert_int_eq(
            part_segment_at(pgroup_part(pn_nodes[0].g), i, &a, &sz), 0);
        total += sz;
    }
    uint64_t s0, sz0, s1, sz1;
    part_segment_at(pgroup_part(pn_nodes[0].g), 0, &s0, &sz0);
    part_segment_at(pgroup_part(pn_nodes[0].g), 1, &s1, &sz1);
    ck_assert_uint_eq(part_retention_watermark(pgroup_part(pn_nodes[0].g), 0, 0,
                                               total - sz0 - sz1, 0),
                      st[2]);
    ck_assert_uint_eq(
        part_retention_watermark(pgroup_part(pn_nodes[0].g), 0, 0, 0, st[2]),
        st[2]);
    ck_assert_uint_eq(
        part_retention_watermark(pgroup_part(pn_nodes[0].g), 0, 0, 0, 0), 0);
    pn_drop[0][2] = 1; /* replica 2 misses the trim's prepare */
    ck_assert_int_eq(
        pgroup_on_trim(pn_nodes[0].g, PGROUP_TRIM_RETENTION, st[2], pn_wall),
        0);
    /* one trim at a time */
    ck_assert_int_eq(pgroup_on_trim(pn_nodes[0].g, PGROUP_TRIM_DELETE_SEGMENTS,
                                    st[3], pn_wall),
                     0);
    ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[0].g)), op + 1);
    for (int s = 0; s < 30; s++)
        pn_step();
    ck_assert_uint_eq(segments_of(2, st + 32, 32), n); /* not yet */
    pn_drop[0][2] = 0;
    pn_produce(4, 41, 42);
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    for (int i = 0; i < PN_N; i++) {
        uint64_t mine[64];
        size_t m = segments_of(i, mine, 64);
        ck_assert_uint_ge(m, n - 2);
        ck_assert_uint_eq(mine[0], st[2]);
        ck_assert_int_eq(vsr_file_exists(i, st[0]), 0);
        ck_assert_int_eq(vsr_file_exists(i, st[1]), 0);
        ck_assert_int_eq(vsr_file_exists(i, st[2]), 1);
        struct pgroup_stats ps;
        pgroup_stats(pn_nodes[i].g, &ps);
        ck_assert_uint_eq(ps.trims, 1);
        ck_assert_uint_eq(ps.segments_trimmed, 2);
        ck_assert_int_eq(pgroup_fatal(pn_nodes[i].g), 0);
    }
    pn_files_identical();
    /* a poll from offset 0 starts at the first kept segment everywhere */
    uint64_t c0 = pn_polled(0, NULL);
    for (int i = 1; i < PN_N; i++)
        ck_assert_uint_eq(pn_polled(i, NULL), c0);
    /* the group restarts over the trimmed log and keeps going */
    for (int i = 0; i < PN_N; i++)
        pn_node_kill(&pn_nodes[i]);
    for (int i = 0; i < PN_N; i++)
        pn_node_start(&pn_nodes[i]);
    int p = pn_wait_primary(-1);
    pn_produce(4, 43, 45);
    pn_wait_commit_all(pgroup_commit(pn_nodes[p].g));
    pn_files_identical();
    /* the trim body's refusals */
    uint8_t b[PGROUP_TRIM_BODY];
    struct pgroup_trim_op t = {.kind = PGROUP_TRIM_RETENTION,
                               .first = 10,
                               .watermark = 20},
                          x;
    pgroup_trim_encode(&t, b);
    ck_assert_int_eq(pgroup_trim_decode(b, sizeof(b), &x), 0);
    ck_assert_uint_eq(x.watermark, 20);
    ck_assert_int_eq(pgroup_trim_decode(b, sizeof(b) - 1, &x), -EINVAL);
    b[3] = 1;
    ck_assert_int_eq(pgroup_trim_decode(b, sizeof(b), &x), -EINVAL);
    t.watermark = 10;
    pgroup_trim_encode(&t, b);
    ck_assert_int_eq(pgroup_trim_decode(b, sizeof(b), &x), -EINVAL);
}
END_TEST

/* A purge is an op of the group: every replica seals its active segment
 * at the purge's offset when it appends it, and at its commit deletes
 * every segment below it and every consumer offset, records the
 * generation; offsets continue; a repeat of the generation is nothing. */
START_TEST(test_purge_group_op)
{
    ck_assert_int_eq(pn_wait_primary(-1), 0);
    pn_produce(4, 1, 30);
    ck_assert_int_eq(pn_offset_op(0, 42, 1, VS_OP_STORE_CONSUMER_OFFSET, 3, 5),
                     0);
    pn_wait_status(42, 1, 0);
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    uint64_t last = 0;
    uint32_t before = pn_polled(0, &last);
    ck_assert_uint_gt(before, 0);
    uint64_t w = last + 1;
    ck_assert_int_eq(pgroup_on_purge(pn_nodes[1].g, 1, pn_wall), -EREMOTE);
    ck_assert_int_eq(pgroup_on_purge(pn_nodes[0].g, 0, pn_wall), -EINVAL);
    ck_assert_int_eq(pgroup_on_purge(pn_nodes[0].g, 1, pn_wall), 0);
    pn_produce(4, 31, 33); /* sends right behind it */
    pn_wait_commit_all(pgroup_commit(pn_nodes[0].g));
    for (int i = 0; i < PN_N; i++) {
        struct vs_part *pp = pgroup_part(pn_nodes[i].g);
        ck_assert_uint_eq(part_purge_generation(pp), 1);
        uint64_t st[64];
        ck_assert_uint_ge(segments_of(i, st, 64), 1);
        ck_assert_uint_eq(st[0], w);
        ck_assert_uint_eq(offset_on(i, 3), UINT64_MAX);
        uint64_t l = 0;
        /* 4 clients x (2 + 3 + 1) messages (rounds 31..33) */
        ck_assert_uint_eq(pn_polled(i, &l), 24);
        ck_assert_uint_eq(l, w + 24 - 1);
        ck_assert_int_eq(pgroup_fatal(pn_nodes[i].g), 0);
    }
    pn_files_identical();
    /* the same generation again: nothing proposed */
    uint64_t op = vsr_op(pgroup_engine(pn_nodes[0].g));
    ck_assert_int_eq(pgroup_on_purge(pn_nodes[0].g, 1, pn_wall), 0);
    ck_assert_uint_eq(vsr_op(pgroup_engine(pn_nodes[0].g)), op);
    /* a restart keeps it; the next generation purges again */
    for (int i = 0; i < PN_N; i++)
        pn_node_kill(&pn_nodes[i]);
    for (int i = 0; i < PN_N; i++)
        pn_node_start(&pn_nodes[i]);
    int p = pn_wait_primary(-1);
    /* a replica serves what it knows committed: after the restart, once
     * the new view commits the old head again */
    pn_wait_commit_all(op);
    for (int i = 0; i < PN_N; i++)
        ck_assert_uint_eq(pn_polled(i, NULL), 24);
    ck_assert_int_eq(pgroup_on_purge(pn_nodes[p].g, 2, pn_wall), 0);
    pn_produce(2, 34, 35);
    pn_wait_commit_all(pgroup_commit(pn_nodes[p].g));
    for (int i = 0; i < PN_N; i++) {
        ck_assert_uint_eq(part_purge_generation(pgroup_part(pn_nodes[i].g)), 2);
        ck_assert_uint_eq(pn_polled(i, NULL), 2 * (2 + 3)); /* rounds 34, 35 */
    }
    pn_files_identical();
}
END_TEST

static Suite *
pgroup_suite(void)
{
    Suite *s = suite_create("pgroup");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, pn_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_three_replicas_commit);
    tcase_add_test(tc, test_primary_killed_view_change_rejoin);
    tcase_add_test(tc, test_leader_restart_empty_repair);
    tcase_add_test(tc, test_unrepairable_adopted_suffix_bounded);
    tcase_add_test(tc, test_prepare_ok_after_durable);
    tcase_add_test(tc, test_backup_enospc_stops_then_rejoins);
    tcase_add_test(tc, test_damaged_tail_repaired);
    tcase_add_test(tc, test_long_run_checkpoints);
    tcase_add_test(tc, test_interval_policy);
    tcase_add_test(tc, test_offset_ops_replay_deterministic);
    tcase_add_test(tc, test_stale_request_never_reproposed);
    tcase_add_test(tc, test_restart_before_anything_durable);
    tcase_add_test(tc, test_superblock_made_at_create);
    tcase_add_test(tc, test_state_format_refuses_existing);
    tcase_add_test(tc, test_superblock_fsync_off_loop_withholds_sends);
    tcase_add_test(tc, test_client_table_survives_restart);
    tcase_add_test(tc, test_client_table_codec);
    tcase_add_test(tc, test_autocommit_group_op);
    tcase_add_test(tc, test_trim_same_segments_everywhere);
    tcase_add_test(tc, test_purge_group_op);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(pgroup_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
