/*
 * shard/vsr/engine.h - the I/O-free, deterministic VSR engine (DESIGN §3).
 *
 * Role: one Viewstamped Replication replica of ONE consensus group (the
 * 256-byte header's `group` field; metadata is VS_METADATA_GROUP, each
 * partition will be its own group). The engine consumes inputs (client
 * requests already admitted by the caller, replica messages, 10 ms ticks,
 * storage completions) and produces actions in a FIFO queue that the
 * binding drains with vsr_pop(). Shard 0 binds it to libevent sockets and
 * real files; tests/sim binds the same code to an in-memory network and
 * disk. Facts: shared/reference/iggy-server-ng.md §2, vsr-safety.md §0/§5.
 *
 * What the engine never does: read a clock (time = ticks; the wall time of
 * a prepare comes with the request), touch a file or a socket, or draw
 * randomness from anywhere but the seed in its options. Equal inputs in
 * equal order give equal actions, byte for byte.
 *
 * Invariants (asserted or enforced; the tests check each):
 *  - Prepare construction (primary): op = head + 1; parent = identity
 *    checksum of op head (op 0 is the empty log, checksum zero, so op 1's
 *    parent is zero); commit = commit_max; timestamp = max(previous + 1,
 *    the wall time passed with the request); release =
 *    VS_WIRE_FORMAT_VERSION; group, cluster, replica stamped; user_id and
 *    request_checksum copied from the admitted request (the caller stamps
 *    them); body checksum then identity via vs_prepare_seal().
 *  - A replica trusts no field before its checksum. It checks, in this
 *    order: frame length and structure; integrity (the seal of a sealed
 *    frame; for a prepare its identity checksum, then its body checksum);
 *    release; cluster; group; sender; then, for a prepare, status, view,
 *    op == head + 1 and parent == checksum of head (the hash chain), or
 *    a Prepare of its view above head + 1 (see Journal repair).
 *    Anything else is dropped with a typed reason (enum vsr_verdict).
 *  - R3: PrepareOk for op N is sent only after the binding reported the
 *    journal append of N durable (vsr_on_journal_durable).
 *  - R1 persist before send: PrepareOk, Commit, Pong, StartViewChange,
 *    DoViewChange and StartView are withheld (queued inside the engine)
 *    until the view and log_view they carry are durable in the superblock,
 *    i.e. <= the values last confirmed by vsr_on_superblock_durable() (or
 *    given at construction, which came from the superblock). A
 *    DoViewChange also waits until the faulty-op marks (faulty_op and
 *    nonack_op) are durable.
 *    RequestStartView, RequestPrepares, RepairPrepare, RepairDone and
 *    RangeEvicted are exempt (they claim nothing about the view).
 *  - R2: one DoViewChange per view: it is built once and every
 *    retransmit sends the same bytes.
 *  - A present-but-faulty op (in the range a damaged tail cut at boot may
 *    have held: above the recovered head up to options.faulty_op, or
 *    after a restart up to the persisted durable.nonack_op) is never
 *    nacked in a
 *    DoViewChange until it is journaled again; it is repaired only with
 *    the header the view's canonical log names. The range shrinks only
 *    when a canonical log (StartView or the merge) ends below it.
 *  - Adopting a log (StartView, merge) over a gap of unknown canonical
 *    headers cuts our uncommitted ops of that gap when the first known
 *    canonical header above it does not chain to ours.
 *  - JOURNAL_APPEND ops are strictly consecutive: each is the last op
 *    appended + 1 (after construction: the recovered head; after a
 *    JOURNAL_TRUNCATE of op t: t - 1), so the binding's WAL never has a
 *    hole and every acknowledged op survives a restart.
 *  - JOURNAL_TRUNCATE never removes an applied op (op > commit_min).
 *  - A Recovering replica counts in no quorum: it sends no PrepareOk,
 *    StartViewChange or DoViewChange until it adopted a StartView.
 *
 * View change, in order (iggy-server-ng.md §2, vsr-safety.md §5):
 *  1. A backup that heard nothing from its primary for normal_heartbeat
 *     ticks (plus seeded jitter), or a Normal backup whose primary-by-
 *     index probes its own view after a restart, moves to view + 1,
 *     status ViewChange, persists the view and broadcasts
 *     StartViewChange. A higher-view SVC or DVC pulls a replica in.
 *  2. With quorum_view_change - 1 SVCs from others (f for n = 3 and 5),
 *     it sends one DoViewChange {log_view, op, commit, suffix} to the new
 *     primary (view % n). The suffix is the headers of ops op, op - 1,
 *     ... (high to low, contiguous, at most VSR_DVC_HEADERS_MAX); an op
 *     it knows no header for is a blank header (256 zero bytes). Bit i
 *     of present_bitset / nack_bitset is op - i: present = the sender's
 *     journal holds that op durably and valid (the header is it); nack =
 *     the sender never durably prepared it (neither present nor faulty).
 *     op = max(head, top of the faulty range) so a faulty tail is in
 *     range (an op above a DVC's op counts as nacked).
 *  3. The candidate, with quorum_view_change DVCs for its view, merges:
 *     canonical = the DVCs of the highest log_view (their logs agree);
 *     commit = max of every DVC's commit and the canonical head's commit;
 *     from the canonical top op down to commit + 1, an op is truncated
 *     while a nack quorum of DVCs nacks it (a DVC nacks op x when x is
 *     above its op, or its nack bit is set with a blank or equal header,
 *     or it holds another header at x); an op kept but without a known
 *     header (only faulty holders) makes the candidate wait for more
 *     DVCs (all n in: counted as a deadlock, the status timeout moves
 *     on). Its own divergent uncommitted suffix is cut (JOURNAL_TRUNCATE)
 *     and missing bodies are repaired from DVC senders whose present bit
 *     is set; when every op above commit_min (its applied op; committed
 *     ones included, so a restart finds the whole log of the new
 *     log_view in its journal) is durable it persists
 *     log_view = view, goes Normal, rebuilds the pipeline (ops above
 *     commit_max, its own PrepareOk counted) and broadcasts StartView.
 *  4. A replica takes a StartView from primary_index(view) with view >=
 *     its own (and, Normal in that view, log_view < view): it cuts its
 *     divergent uncommitted suffix, installs the suffix headers, goes
 *     Normal with log_view = view (persisted before any PrepareOk),
 *     sends PrepareOk for the ops above commit it holds durably, and
 *     repairs the rest (then acknowledges them too).
 *  SVC/DVC are retransmitted every view_change_message ticks; a view
 *  change that has not completed after view_change_status ticks (plus
 *  seeded jitter, doubling up to 16x) escalates to view + 1.
 *
 * Journal repair: a replica whose journal lacks ops it knows of (a gap
 * below a header it holds, a faulty op, the ops of an adopted StartView,
 * ops below a Commit's commit) sends RequestPrepares{nonce, from, to}
 * (to - from < VSR_REPAIR_MAX, never an empty range) to one peer (the
 * primary in Normal status, a present-bit holder in a view change) and
 * re-requests a stalled window after `repair` ticks, rotating peers. The
 * peer answers a SEND_PREPARE action per op it holds, then RepairDone;
 * if `from` is below its oldest retained op (drained by a checkpoint) it
 * answers RangeEvicted{oldest retained op} instead, which the requester
 * surfaces as a STATE_TRANSFER action. A repaired prepare is accepted
 * only if its identity matches the header the requester knows for that
 * op, or (no header known) it chains to the op below; the head op and
 * its checksum are re-anchored together. A backup in Normal status that
 * gets a Prepare of its view above head + 1 (only the view's primary
 * sends those; it may no longer hold the bodies between as Prepares)
 * takes it, moving its head there: the ops between become a hole
 * repaired from any peer top down, each checked against the parent the
 * op above names. The journal (so every PrepareOk) stays below the hole
 * until it is filled; a view change that begins first drops the ops
 * held above the hole (never journaled, never acknowledged), so the
 * DoViewChange's log ends below it, as if they never arrived. A
 * fresh gap waits `prepare` ticks before its first round (a reordered
 * prepare may be on its way), and a Prepare of the view filling a hole
 * is taken where no checksum is expected yet.
 *
 * Restart (options.recovering): status Recovering; every rsv ticks it
 * sends RequestStartView{view = durable view, incarnation} to every
 * peer. Only a settled primary answers, with a StartView sent to that
 * replica alone, echoing the incarnation. A Recovering replica adopts
 * only a StartView echoing its own incarnation with view >= its durable
 * view. After probe_attempts unanswered probes (the whole cluster
 * restarted) it starts a view change from its durable view (to view + 1)
 * on its recovered log; so a restarted primary-by-index of its durable
 * view never acts as primary of that view again.
 *  - Commits are emitted strictly in op order, one at a time: COMMIT op N
 *    is emitted only after op N-1 was reported applied, only for an op
 *    whose journal append is durable locally, and only over a verified
 *    hash chain.
 *  - view, log_view, commit_max never decrease; checkpoint_op only rises.
 *  - An op never overwrites a journal slot whose op is above the durable
 *    checkpoint: op <= checkpoint_op + journal_slots.
 *
 * Callers: one thread of one process (shard 0 for the metadata group; a
 * data shard for a partition group later). Not thread-safe; no globals.
 */
#ifndef VS_SHARD_VSR_ENGINE_H
#define VS_SHARD_VSR_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

/* Compile-time ceilings (the options choose values at or below them). */
#define VSR_PIPELINE_MAX      32u /* prepares in flight, iggy prepare queue */
#define VSR_JOURNAL_SLOTS_MAX 65536u
#define VSR_WITHHELD_MAX      256u /* messages waiting for a durable view */
/* Headers in a DoViewChange / StartView body (the bitsets are u128). The
 * pipeline ceiling stays below it so the suffix always reaches commit. */
#define VSR_DVC_HEADERS_MAX 128u
#define VSR_REPAIR_MAX      128u /* prepares per RequestPrepares round */
_Static_assert(VSR_PIPELINE_MAX < VSR_DVC_HEADERS_MAX,
               "suffix covers pipeline");

/* Replica status. Normal: primary or backup of `view`. ViewChange:
 * electing the primary of `view`. Recovering: a restarted replica of a
 * multi-replica group (it must learn the view from a StartView before it
 * acknowledges anything; see the restart paragraph above). */
enum vsr_status {
    VSR_STATUS_NORMAL = 0,
    VSR_STATUS_VIEW_CHANGE = 1,
    VSR_STATUS_RECOVERING = 2,
};

/* Role in the current view (introspection; GetClusterMetadata reports
 * `Leader` only for a settled primary, see vsr_is_settled_primary). */
enum vsr_role {
    VSR_ROLE_PRIMARY = 0,    /* Normal, primary_index(view) == replica */
    VSR_ROLE_BACKUP = 1,     /* Normal, another replica is primary */
    VSR_ROLE_CANDIDATE = 2,  /* ViewChange, primary-to-be of view */
    VSR_ROLE_ELECTOR = 3,    /* ViewChange, another replica's view */
    VSR_ROLE_RECOVERING = 4, /* Recovering */
};

/* The VsrState values the engine owns (what the superblock persists,
 * beside cluster/replica identity which the binding writes unchanged). */
struct vs_vsr_persist {
    uint32_t view;
    uint32_t log_view;
    uint64_t commit_max;
    uint64_t checkpoint_op;
    struct vs_u128 checkpoint_checksum; /* of the snapshot payload */
    /* Top of the faulty range (0 = none): the ops above the journal's
     * head up to this one may belong to this replica's log without being
     * in its journal: a damaged tail cut at boot may have held them (so
     * they may have been acknowledged: never nacked while lacked), or an
     * adopted StartView reaches them (the mark is written with its
     * log_view, so a restart before the repair never claims a shorter
     * log in that log_view). A DoViewChange claims op >= it. The
     * superblock (VsrState v2) persists it; the engine lowers it when a
     * canonical log ends below it and writes 0 once every op of the range
     * is durable again (or no longer in the log). */
    uint64_t faulty_op;
    /* Top of the never-nacked part of that range (0 = none, <=
     * faulty_op): the ops a damaged tail cut at this or an earlier boot
     * may have held (possibly acknowledged). After a restart the lacked
     * ops above it up to faulty_op are an adopted log's reach this
     * replica never journaled: nacked. Persisted apart from faulty_op
     * (VsrState v3; a v2 mark reads as wholly never-nacked), lowered and
     * cleared with it. */
    uint64_t nonack_op;
};

/* Timeouts, in ticks of 10 ms. Zero fields take the defaults below (from
 * iggy-server-ng.md §2). */
struct vs_vsr_timeouts {
    uint32_t prepare;             /* primary: retransmit unacked, 25 */
    uint32_t commit;              /* primary: Commit heartbeat, 50 */
    uint32_t normal_heartbeat;    /* backup: primary presumed dead, 500 */
    uint32_t view_change_message; /* SVC / DVC retransmit, 50 */
    uint32_t view_change_status;  /* view change gives up: view + 1, 500 */
    uint32_t rsv;                 /* RequestStartView probe interval, 100 */
    uint32_t probe_attempts;      /* unanswered probes before electing, 5 */
    uint32_t repair;              /* re-request a stalled repair, 100 */
};

/* Everything the engine needs at construction: identity and durable state
 * from the superblock, the recovered journal, and tunables. */
struct vs_vsr_options {
    struct vs_u128 cluster;
    uint64_t group;
    uint8_t replica;       /* this replica's index, < replica_count */
    uint8_t replica_count; /* 1..VS_REPLICAS_MAX */
    /* Superblock values (view, log_view, commit_max, checkpoint). */
    struct vs_vsr_persist durable;
    /* Recovered journal: the headers of ops first..head, ascending,
     * contiguous, each with a valid identity and chained by parent
     * (headers[i].parent == headers[i-1].checksum). The engine copies
     * them. Empty (count 0) means an empty log: head 0, which is only
     * valid with checkpoint_op 0 (the journal keeps the checkpoint op's
     * entry when it drains, so the chain can continue). At most
     * journal_slots + 1 headers, at most journal_slots of them above
     * commit_min (a snapshot whose pairing was lost in a crash sits at
     * the top of a full window); headers[0].op <= commit_min + 1 (no gap
     * between the applied state and the journal). */
    const struct vs_hdr_prepare *headers;
    size_t header_count;
    /* Op the binding's state machine already holds (the snapshot op;
     * 0 for an empty state). The engine replays commit_min+1.. through
     * COMMIT actions (n=1: up to the journal head, since every durable
     * prepare of a one-replica group is committed; n>1: only ops
     * provably committed, up to max(durable.commit_max, the highest
     * header.commit recovered) - never the uncommitted suffix, which
     * waits for the view and may be truncated by it). */
    uint64_t commit_min;
    /* The identity checksum of op commit_min's prepare when the journal
     * does not hold that op or the one above it (a restart after a state
     * transfer installed a snapshot and nothing above it was appended
     * yet); zero = unknown: the first canonical header above it (a
     * StartView suffix, the primary's prepare) supplies it. Ignored with
     * a non-empty journal. An empty journal beside commit_min > 0 is
     * accepted only for a recovering replica of a multi-replica group. */
    struct vs_u128 commit_min_checksum;
    /* 1 if this replica of a multi-replica group had a prior life
     * (superblock written by a run, or a non-empty journal): it starts
     * Recovering and probes (see "Restart" above). Must be 0 when
     * replica_count == 1; a multi-replica replica started with 0 must be
     * freshly formatted (empty journal, state op 0, view 0), else
     * vsr_create refuses. A fresh cluster replica starts Normal in view
     * 0 (replica 0 is its primary). */
    int recovering;
    /* Fresh per-boot nonce (the binding draws it; the engine draws no
     * randomness). Required non-zero when recovering; echoed by the
     * StartView that answers this life's RequestStartView. */
    struct vs_u128 incarnation;
    /* The highest op a damaged journal tail cut at this boot may have
     * held (0 = none; recovery_result.damaged_cut_last): the faulty
     * range is (recovered head, faulty_op]. It must lie above the
     * recovered head (commit_min with an empty journal), and only a
     * multi-replica group may have one (a single replica has no peer to
     * repair from: its binding refuses or keeps today's cut). The engine
     * takes the union with durable.faulty_op (the range persisted by an
     * earlier boot; at or below the head it is stale and cleared),
     * clamped to the journal window; when that differs from the durable
     * mark, it first writes the superblock with the new mark and
     * withholds every DoViewChange until that write is durable. */
    uint64_t faulty_op;
    /* The damaged entry's own header when it verified (only its body
     * failed; wal_scan.bad_header), or NULL. Used only as the first op of
     * the faulty range (recovered head + 1, chained to the head, of this
     * cluster and group, faulty_op >= its op): the header becomes known
     * (not durable), so a DoViewChange still names it and the body is
     * repaired against it; anything else is ignored. */
    const struct vs_hdr_prepare *faulty_header;
    /* 1 if the binding rebuilt this replica after a lost disk (`vstreamd
     * recover`, R8). Implies recovering with a formatted (empty) journal.
     * It adopts an echoed StartView but sends no PrepareOk, SVC or DVC
     * until its journal holds every op of that StartView; it never votes
     * in a view below (adopted view + 2) and never elects after
     * unanswered probes. vsr_info().rebuilding tells the binding when it
     * has caught up (the binding then clears its own "recovering" mark). */
    int rebuilt;
    uint32_t journal_slots; /* WAL capacity in ops, 1..VSR_JOURNAL_SLOTS_MAX */
    uint32_t pipeline_max;  /* 1..VSR_PIPELINE_MAX; also bounds op-commit_min */
    uint32_t body_max;      /* largest prepare body accepted, bytes */
    uint64_t seed;          /* the only source of randomness (jitter) */
    struct vs_vsr_timeouts timeouts;
};

/* Actions the binding performs, in queue order. */
enum vsr_action_kind {
    /* Send `frame` (header + body, header->f.size bytes) to replica
     * `replica`. Best effort: the engine retransmits what matters. */
    VSR_ACT_SEND = 1,
    /* Append the prepare `frame` (header + body) to the journal and make
     * it durable (fsync), then call vsr_on_journal_durable(op, checksum).
     * Appends are issued in op order, each op = the previous append + 1
     * (see the invariant above); a repaired prepare arrives with the
     * command byte of a Prepare (6), as it is stored. Journal actions
     * (APPEND, TRUNCATE) are performed in queue order. */
    VSR_ACT_JOURNAL_APPEND = 2,
    /* Write `persist` (with the unchanged identity fields) to the
     * superblock, make it durable, then call vsr_on_superblock_durable()
     * with exactly the values written. One write is in flight at a time. */
    VSR_ACT_SUPERBLOCK_WRITE = 3,
    /* Apply op `op` (prepare header in `frame`) to the state machine and
     * the client table, then call vsr_on_commit_applied(op, output). The
     * body is `body` when the engine holds it; `body` is NULL for ops
     * recovered at construction: the binding reads op's body from its
     * journal (it passed that header). One COMMIT is outstanding at a
     * time. */
    VSR_ACT_COMMIT = 4,
    /* Send the reply `frame` (a struct vs_hdr_reply + the apply output) to
     * the client `client`. Only the primary that prepared the op in this
     * life replies; recovered ops never reply (a retried request gets the
     * client table's cached reply). The reply header's checksum fields are
     * zero and release is 0 (Iggy client framing); the binding may seal. */
    VSR_ACT_REPLY = 5,
    /* Remove every journal entry with op >= `op` (an uncommitted divergent
     * suffix cut by a view change), including appends issued but not yet
     * durable, and make the removal durable before performing any later
     * action (no completion call; a vsr_on_journal_durable for a removed
     * append returns -ESTALE and is ignored). Never at or below
     * commit_min. The next JOURNAL_APPEND is op `op`. */
    VSR_ACT_JOURNAL_TRUNCATE = 6,
    /* Repair: read the stored prepare of `op` from the journal; if its
     * identity checksum equals `checksum` and its body verifies, send it
     * to replica `replica` with the command byte set to
     * VS_CMD_REPAIR_PREPARE (19; the identity checksum is computed with
     * the command byte of a Prepare, so the receiver restores 6 before
     * verifying). If the entry is gone, differs or cannot be read, send
     * nothing (the requester re-requests elsewhere). No completion.
     * With `retransmit` set it is the primary's retransmit of a pipeline
     * op whose body is not in memory (prepared before a restart or a view
     * change): send it as a Prepare (command 6) with its view byte set to
     * `view`, as a retransmit held in memory leaves, so a backup that
     * never learnt the op's header takes it above its head. */
    VSR_ACT_SEND_PREPARE = 7,
    /* Repair is impossible from replica `replica`: its journal starts at
     * op `op` (it answered RangeEvicted), above the first op this replica
     * needs (`checksum` is zero); or this restarted replica adopted a
     * StartView from primary `replica` whose gap no peer's journal can
     * cover (`op` = the lowest op a peer may still hold; issued once per
     * adopted StartView, never for a refused one). The binding arms a
     * transfer (vsr_transfer_begin); unarmed, the engine keeps asking
     * other peers. Issued once per (peer, op) until a transfer ends. */
    VSR_ACT_STATE_TRANSFER = 8,
};

/* One popped action. Pointers stay valid until the next vsr_pop() or
 * vsr_destroy() (inputs called meanwhile do not invalidate them), so a
 * binding that finishes an action asynchronously copies what it needs. */
struct vs_vsr_action {
    enum vsr_action_kind kind;
    uint8_t replica;               /* SEND: destination replica index */
    uint64_t op;                   /* JOURNAL_APPEND, COMMIT, REPLY */
    struct vs_u128 client;         /* REPLY */
    const struct vs_header *frame; /* header; the body follows it when
                                      held (SEND, JOURNAL_APPEND, REPLY,
                                      COMMIT with body != NULL) */
    uint32_t size;                 /* bytes at frame: 256 + held body */
    const uint8_t *body;           /* NULL if not held (COMMIT replay) */
    uint32_t body_len;             /* header->f.size - 256 (even if NULL) */
    struct vs_vsr_persist persist; /* SUPERBLOCK_WRITE */
    struct vs_u128 checksum;       /* SEND_PREPARE: identity of op */
    uint8_t retransmit;            /* SEND_PREPARE: as a Prepare of view */
    uint32_t view;                 /* SEND_PREPARE with retransmit */
};

/* Why a replica message was not taken (vsr_on_message's return value). */
enum vsr_verdict {
    VSR_ACCEPTED = 0,
    VSR_DROP_SHORT,        /* fewer than 256 bytes, or size != length */
    VSR_DROP_STRUCTURE,    /* size out of range, unknown command */
    VSR_DROP_RELEASE,      /* unknown wire/WAL format version */
    VSR_DROP_CLUSTER,      /* another cluster */
    VSR_DROP_SEAL,         /* sealed frame: checksum mismatch */
    VSR_DROP_GROUP,        /* another consensus group */
    VSR_DROP_REPLICA,      /* sender index out of range or self */
    VSR_DROP_IDENTITY,     /* prepare: identity checksum mismatch */
    VSR_DROP_BODY,         /* prepare: body checksum mismatch */
    VSR_DROP_CHAIN,        /* prepare: parent != checksum of op - 1 */
    VSR_DROP_GAP,          /* prepare: op further above the journal
                              than the bodies held in memory allow */
    VSR_DROP_CONFLICT,     /* prepare: op held with another checksum */
    VSR_DROP_JOURNAL_FULL, /* prepare: op beyond checkpoint + slots */
    VSR_DROP_BODY_MAX,     /* prepare: body larger than body_max */
    VSR_DROP_STATUS,       /* not in Normal status */
    VSR_DROP_VIEW_OLD,     /* message from an older view */
    VSR_DROP_VIEW_NEW,     /* newer view: needs the view change */
    VSR_DROP_NOT_PRIMARY,  /* sender/receiver role does not fit */
    VSR_DROP_DUPLICATE,    /* already counted (PrepareOk) / held */
    VSR_DROP_LATE,         /* op already committed or not in pipeline */
    VSR_DROP_MISMATCH,     /* PrepareOk for another prepare checksum */
    VSR_DROP_STALE,        /* Commit heartbeat not newer */
    VSR_DROP_UNSUPPORTED,  /* command this version does not handle */
    /* exact frame sizes: a header-only command (PrepareOk, Commit, SVC,
     * RequestStartView, RequestPrepares, RepairDone, RangeEvicted)
     * carrying a body, or a DVC/SV body that is not a whole number of
     * headers or holds more than VSR_DVC_HEADERS_MAX */
    VSR_DROP_SIZE,
    VSR_DROP_SUFFIX,      /* DVC/SV headers not a valid descending chain */
    VSR_DROP_INCARNATION, /* Recovering: SV not echoing this life's
                             incarnation, or below the durable view */
    VSR_DROP_RANGE,       /* RequestPrepares: from > to, from 0, or more
                             than VSR_REPAIR_MAX ops */
    VSR_DROP_NONCE,       /* RepairDone/RangeEvicted for no request of
                             ours */
    VSR_DROP_UNWANTED,    /* RepairPrepare for an op we do not need or
                             whose header does not match ours */
    VSR_DROP_DIVERGENT,   /* SV/merge disagrees with an applied op (R10:
                             counted, never adopted) */
    VSR_DROP_REBUILDING,  /* a rebuilt (lost-disk) replica may not vote
                             in this view */
    VSR_VERDICT_COUNT
};
const char *vsr_verdict_name(enum vsr_verdict v);

/* Result codes of vsr_on_request (a refused request is the caller's to
 * answer; nothing was queued):
 *   0          accepted: a prepare was built and its actions queued
 *   -EREMOTE   not the primary, forward it: this replica is a Normal
 *              backup of its view; vsr_primary() names the primary
 *   -EAGAIN    not ready: no settled primary here (view change,
 *              Recovering, log_view < view, or ops committed before this
 *              view / recovered at boot are still being applied;
 *              transient; iggy NotReady)
 *   -EALREADY  this client already has a request prepared and not yet
 *              applied (one in flight per client)
 *   -EBUSY     the pipeline is full (op - commit_min == pipeline_max)
 *   -ENOSPC    the journal is full until the next checkpoint is durable
 *   -EINVAL    body larger than body_max, or a malformed request header
 *   -EMSGSIZE  body_len does not match the header's size */

struct vs_vsr;

/* Quorums (iggy-server-ng.md §2): replication = 2 if n == 2 else
 * min(ceil(n/2), 3); view change = 2 if n == 2 else n - repl + 1;
 * nack = n - repl + 1. n in 1..VS_REPLICAS_MAX. */
unsigned vsr_quorum_replication(unsigned n);
unsigned vsr_quorum_view_change(unsigned n);
unsigned vsr_quorum_nack(unsigned n);
/* Primary of a view: view % n. */
unsigned vsr_primary_index(uint32_t view, unsigned n);

/* Builds an engine from its options. Checks every recovered header
 * (identity, cluster, group, release, contiguity, parent chain) and the
 * options' ranges. Returns 0 and *out, or -EINVAL with one line in
 * `reason` (may be NULL). The engine queues the replay COMMITs at once. */
int vsr_create(const struct vs_vsr_options *o, struct vs_vsr **out,
               char *reason, size_t reason_len);
/* Frees the engine and every message it holds. NULL is accepted. */
void vsr_destroy(struct vs_vsr *v);

/* ---- inputs ---- */

/* A client request the caller already admitted (session valid, request
 * new per its client table, user_id and request_checksum stamped in
 * `req`). `wall` is the binding's wall clock for the prepare timestamp
 * (the engine makes it monotonic). Returns 0 or a code listed above. */
int vsr_on_request(struct vs_vsr *v, const struct vs_hdr_request *req,
                   const void *body, uint32_t body_len, uint64_t wall);
/* A frame from a replica link (header + body, `len` bytes). Never trusts
 * a field before its checksum; returns the verdict (also counted). */
enum vsr_verdict vsr_on_message(struct vs_vsr *v, const void *frame,
                                size_t len);
/* The group a replica frame's header names (shard/vsr/frame_group.c):
 * VSR_FRAME_ENGINE (a command vsr_on_message takes), VSR_FRAME_TRANSFER
 * (a state transfer frame: the binding's, xfer_frames.h) with *group
 * set, or VSR_FRAME_NONE (no group field: *group untouched). Reads the
 * header only; the group is trusted only after the frame's seal. */
enum vsr_frame_kind {
    VSR_FRAME_NONE = 0,
    VSR_FRAME_ENGINE = 1,
    VSR_FRAME_TRANSFER = 2,
};
enum vsr_frame_kind vsr_frame_group(const struct vs_header *h, uint64_t *group);
/* A settled primary whose commit_max moved past its last Commit
 * heartbeat sends one now (SEND actions), so its backups learn the
 * commit before the next heartbeat or prepare; otherwise nothing. The
 * partition runtime asks for it when it answers a request another node
 * forwarded: that node answers its client once it applied the op. */
void vsr_heartbeat_now(struct vs_vsr *v);

/* One 10 ms tick: retransmits, heartbeats, timeouts. */
void vsr_tick(struct vs_vsr *v);
/* The journal append of `op` with identity `checksum` is durable.
 * Returns 0, -ESTALE if a later JOURNAL_TRUNCATE removed that append
 * (ignored), or -EINVAL if no such append was issued (binding bug). */
int vsr_on_journal_durable(struct vs_vsr *v, uint64_t op,
                           struct vs_u128 checksum);
/* The superblock write issued with these values is durable. Returns 0,
 * or -EINVAL if they are not the values of the write in flight. */
int vsr_on_superblock_durable(struct vs_vsr *v,
                              const struct vs_vsr_persist *written);
/* The outstanding COMMIT of `op` was applied; `output` (the apply result,
 * copied) becomes the reply body when this replica replies. Returns 0, or
 * -EINVAL if op is not the outstanding commit. */
int vsr_on_commit_applied(struct vs_vsr *v, uint64_t op, const void *output,
                          uint32_t output_len);
/* The binding wrote a snapshot of the state at `op` (<= commit_min, >
 * checkpoint_op) whose payload checksum is `checksum`: the engine queues
 * the superblock pairing write. Once it is durable the binding may drain
 * the journal below op, and the journal window moves. Returns 0, -EINVAL
 * (op out of range) or -EBUSY (a checkpoint is already pending). */
int vsr_checkpoint(struct vs_vsr *v, uint64_t op, struct vs_u128 checksum);
/* The repair margin: a drain at checkpoint op C keeps the journal's ops
 * from vsr_drain_keep_from(v, C) = C - max(pipeline_max, journal_slots /
 * 2) (at least op 1; the margin is 0 for a single replica) on, so a replica
 * that installed the previous checkpoint (or lags by less than the margin)
 * still repairs its suffix instead of transferring again. The binding drains to
 * exactly this op (wal_drain_margin); repair serves ops below C only while the
 * journal window still holds them (never below head - journal_slots + 1) and
 * answers RangeEvicted below that. Pure: no state changes. */
uint64_t vsr_repair_margin(const struct vs_vsr *v);
uint64_t vsr_drain_keep_from(const struct vs_vsr *v, uint64_t checkpoint_op);

/* ---- state transfer (iggy-server-ng.md §5, vsr-safety.md §4) ----
 *
 * The engine only reports that repair cannot reach the ops it needs
 * (VSR_ACT_STATE_TRANSFER: a RangeEvicted answer, or a restarted replica
 * adopting a StartView whose gap is wider than any peer's journal); the
 * binding fetches the primary's snapshot and client table (xfer_*.h) and
 * drives these inputs:
 *
 *  vsr_transfer_begin arms the transfer. While armed the replica still
 *  takes StartViewChange/DoViewChange/StartView (it votes and adopts
 *  views, so a primary dying mid-transfer is replaced and the binding
 *  retargets to the new one), but it sends no PrepareOk, counts in no
 *  replication quorum, claims no nack in its DoViewChange, never merges
 *  as a candidate, is never a settled primary, issues no repair, and the
 *  commit walk is deferred on every path (Commit, StartView, DoViewChange,
 *  repair, durable appends): commit_min moves only for a COMMIT already
 *  queued before it was armed. */

/* Arms a transfer. Returns 0, -EALREADY (armed) or -EINVAL (n == 1). */
int vsr_transfer_begin(struct vs_vsr *v);
/* Abandons an armed transfer without installing (the binding gave up on
 * every peer): repair and the walk resume and a later RangeEvicted is
 * reported again. Returns 0 or -EINVAL (not armed). */
int vsr_transfer_end(struct vs_vsr *v);
/* The binding installed the fetched state of op `op` (the snapshot's op;
 * `op_checksum` the identity checksum of op's prepare, zero if unknown;
 * `snapshot_checksum` the payload checksum the pairing records) and the
 * serving primary's commit_max `commit_max` (>= op). Disarms.
 *  - op > commit_min (the binding removed every journal entry above op,
 *    including appends not yet durable, wrote the snapshot and restored
 *    the state machine and client table): commit_min = op, the journal
 *    window restarts above op (headers <= op dropped, known headers above
 *    it that chain to op kept for repair, their bodies re-appended: the
 *    next JOURNAL_APPEND is op + 1; appends in flight complete -ESTALE),
 *    commit_max raised, the superblock pairing {checkpoint_op = op,
 *    checkpoint_checksum} queued (SUPERBLOCK_WRITE), then (op, commit_max]
 *    is repaired from peers. Returns 0.
 *  - op <= commit_min (the snapshot is not ahead: the binding kept its
 *    state machine and installed only the client table): commit_max
 *    raised, nothing else changes. Returns 1.
 * Refused with nothing changed: -EINVAL (not armed, op 0, commit_max <
 * op), -EBUSY (a COMMIT is outstanding: apply it, then call again; the
 * binding checks this before it cuts anything). A local checkpoint
 * pairing still pending is superseded by the installed one. */
int vsr_on_state_installed(struct vs_vsr *v, uint64_t op,
                           struct vs_u128 op_checksum,
                           struct vs_u128 snapshot_checksum,
                           uint64_t commit_max);
/* 1 while a COMMIT action was issued and not yet reported applied (the
 * binding checks it before it cuts anything for an install). */
int vsr_commit_outstanding(const struct vs_vsr *v);

/* ---- outputs ---- */

/* Pops the oldest action into *a. Returns 1, or 0 when the queue is
 * empty. Releases the previously popped action's references. */
int vsr_pop(struct vs_vsr *v, struct vs_vsr_action *a);

/* ---- introspection (tests, logs, the binding's gates) ---- */

struct vs_vsr_stats {
    uint64_t prepares;    /* built (primary) or accepted (backup) */
    uint64_t commits;     /* applied */
    uint64_t retransmits; /* prepare resends */
    uint64_t heartbeats;  /* Commit messages sent */
    uint64_t withheld;    /* messages queued for a durable view */
    uint64_t divergences; /* commit checksum disagreed with our log */
    uint64_t verdicts[VSR_VERDICT_COUNT];
    /* view change and repair (coverage marks for the simulator) */
    uint64_t view_changes;      /* views entered in ViewChange status */
    uint64_t svc_sent;          /* StartViewChange broadcasts (+resends) */
    uint64_t dvc_sent;          /* DoViewChange sends (+resends) */
    uint64_t views_started;     /* StartView broadcasts as new primary */
    uint64_t sv_adopted;        /* StartViews installed as backup */
    uint64_t merge_waits;       /* merges undecided: waiting for DVCs */
    uint64_t merge_deadlocks;   /* undecided with every replica's DVC */
    uint64_t merge_step_asides; /* candidate lags: its window < the top */
    uint64_t nack_truncations;  /* ops cut by a nack quorum in a merge */
    uint64_t older_adopted;     /* merge: an older log_view's header kept
                                   where the newest ones were faulty */
    uint64_t faulty_not_nacked; /* DVCs that held a faulty op unnacked */
    uint64_t truncations;       /* JOURNAL_TRUNCATE actions */
    uint64_t repair_requests;   /* RequestPrepares sent */
    uint64_t repairs;           /* prepares accepted from RepairPrepare */
    uint64_t gap_jumps;         /* backup: the primary's Prepare taken
                                   above a gap (the ops between repaired) */
    uint64_t gap_drops;         /* backup: those ops dropped unjournaled
                                   when a view change began */
    uint64_t repair_served;     /* SEND_PREPARE actions issued */
    uint64_t range_evicted;     /* RangeEvicted received (ours) */
    uint64_t probes;            /* RequestStartView sent */
    uint64_t probe_answers;     /* targeted StartViews sent as primary */
    uint64_t probe_elections;   /* elections after unanswered probes */
    uint64_t transfer_triggers; /* STATE_TRANSFER from an adopted SV */
    uint64_t transfers_begun;   /* vsr_transfer_begin accepted */
    uint64_t transfers_ended;   /* vsr_transfer_end (abandoned) */
    uint64_t installs;          /* snapshots installed (state + table) */
    uint64_t installs_table;    /* table-only installs (snapshot behind) */
    uint64_t faulty_repaired;   /* faulty-op marks cleared: repaired, or
                                   the view's log does not contain it */
};

/* A consistent snapshot of the engine's state for the binding (cluster
 * metadata, `vstream cluster`, logs) and the simulator. */
struct vs_vsr_info {
    enum vsr_status status;
    enum vsr_role role;
    uint32_t view;
    uint32_t log_view;
    uint64_t op;            /* head: highest op with a known header */
    uint64_t journal_op;    /* highest op appended contiguously */
    uint64_t commit_min;    /* applied */
    uint64_t commit_max;    /* known committed */
    uint64_t checkpoint_op; /* durable checkpoint */
    int settled;            /* vsr_is_settled_primary() */
    int primary;            /* vsr_primary() */
    uint64_t faulty_op;     /* top of the faulty range, 0 = none */
    uint64_t nonack_top;    /* lacked ops up to it are never nacked */
    uint64_t missing;       /* ops known but not yet durable here */
    int rebuilding;         /* a rebuilt replica not yet caught up */
    int state_transfer;     /* a peer answered RangeEvicted: repair
                               cannot reach transfer_op by itself */
    uint64_t transfer_op;   /* that peer's oldest retained op */
    int transferring;       /* armed by vsr_transfer_begin */
};

enum vsr_status vsr_status(const struct vs_vsr *v);
/* 1 when Normal and primary_index(view) == replica (it prepares). */
int vsr_is_primary(const struct vs_vsr *v);
/* 1 when this replica is the settled primary: Normal, primary of view,
 * log_view == view, not Recovering, it applied every op committed
 * before it took the view, and it holds its lease: a replication quorum
 * (itself included) heard from it in this view within normal_heartbeat
 * ticks (backups answer each Commit heartbeat with a Pong; a PrepareOk
 * counts too; a view just taken starts fresh). An isolated old primary
 * so stops accepting requests and stops claiming `Leader` within
 * normal_heartbeat ticks, though it cannot know the view moved on.
 * vsr_on_request accepts only here. The binding names only a settled
 * primary `Leader`. */
int vsr_is_settled_primary(const struct vs_vsr *v);
/* The primary of the current view if this replica is Normal (itself
 * included), else -1 (view change or Recovering: unknown). */
int vsr_primary(const struct vs_vsr *v);
void vsr_info(const struct vs_vsr *v, struct vs_vsr_info *out);
uint32_t vsr_view(const struct vs_vsr *v);
uint32_t vsr_log_view(const struct vs_vsr *v);
uint64_t vsr_op(const struct vs_vsr *v);         /* journal head */
uint64_t vsr_commit_min(const struct vs_vsr *v); /* applied */
uint64_t vsr_commit_max(const struct vs_vsr *v); /* known committed */
/* The persisted values as last confirmed durable. */
void vsr_durable(const struct vs_vsr *v, struct vs_vsr_persist *out);
/* The header of op if it is in the engine's window; 1 found, 0 not. */
int vsr_header(const struct vs_vsr *v, uint64_t op, struct vs_hdr_prepare *out);
const struct vs_vsr_stats *vsr_stats(const struct vs_vsr *v);

#endif /* VS_SHARD_VSR_ENGINE_H */
