/*
 * common/metrics.h - the counters and gauges a vstream process writes
 * for the Prometheus endpoint: their identities (slot numbers), names,
 * labels and the wait-free writers.
 *
 * Each process owns one block of VS_METRICS_SLOTS 64-bit slots in the
 * node's shared segment (ipc/metrics.h maps the blocks and binds this
 * process's); until it is bound (tools, unit tests) the writers update a
 * private block. Rules:
 *  - single writer per block: only the owning process writes its slots,
 *    as a relaxed load + relaxed store (no read-modify-write, no lock,
 *    never blocks); a reader in another process loads each slot with a
 *    relaxed atomic load, so a value is never torn (aligned 64-bit
 *    atomics are lock-free: _Static_assert in ipc/segment.h);
 *  - a histogram is read slot by slot, so a scrape may see a bucket and
 *    its count one observation apart (Prometheus tolerates this);
 *  - counters survive a restart of their process (the block stays in the
 *    segment and the new incarnation keeps adding), so node-wide sums
 *    never go backwards; gauges are cleared when a process is reaped and
 *    when a new incarnation binds the block;
 *  - labels are bounded by construction: transport, operation (a fixed
 *    table), result code (a fixed table + "other"), operation class;
 *  - a request answered by an eviction is counted with the Iggy code the
 *    eviction stands for (a refused login: 42 InvalidCredentials).
 * Callers: any process, from its own thread(s); the writers are not
 * async-signal-safe only in that they touch memory (they are lock-free).
 */
#ifndef VS_COMMON_METRICS_H
#define VS_COMMON_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#define VS_METRICS_SLOTS 1536u

/* Slots of one process, one block per process slot in the segment. */
struct vs_metrics_block_shm {
    _Alignas(64) _Atomic uint64_t v[VS_METRICS_SLOTS];
};
_Static_assert(sizeof(struct vs_metrics_block_shm) == VS_METRICS_SLOTS * 8,
               "metrics block layout");

enum vs_metric_kind {
    VS_MK_COUNTER = 0,
    VS_MK_GAUGE = 1,
};

/* Scalar metrics: X(ID, family name, label set ("" = none), kind, help).
 * Entries of one family are adjacent (the renderer writes its HELP and
 * TYPE once). */
#define VS_METRICS_SCALARS(X)                                                  \
    X(CONN_ACCEPTED_TCP, "vstream_connections_accepted_total",                 \
      "transport=\"tcp\"", VS_MK_COUNTER, "Client connections accepted")       \
    X(CONN_ACCEPTED_TLS, "vstream_connections_accepted_total",                 \
      "transport=\"tls\"", VS_MK_COUNTER, "")                                  \
    X(CONN_REFUSED_TCP, "vstream_connections_refused_total",                   \
      "transport=\"tcp\"", VS_MK_COUNTER,                                      \
      "Client connections refused at the connection limit")                    \
    X(CONN_REFUSED_TLS, "vstream_connections_refused_total",                   \
      "transport=\"tls\"", VS_MK_COUNTER, "")                                  \
    X(CONN_CLOSED_TCP, "vstream_connections_closed_total",                     \
      "transport=\"tcp\"", VS_MK_COUNTER, "Client connections closed")         \
    X(CONN_CLOSED_TLS, "vstream_connections_closed_total",                     \
      "transport=\"tls\"", VS_MK_COUNTER, "")                                  \
    X(CONN_OPEN_TCP, "vstream_connections_open", "transport=\"tcp\"",          \
      VS_MK_GAUGE, "Client connections open now")                              \
    X(CONN_OPEN_TLS, "vstream_connections_open", "transport=\"tls\"",          \
      VS_MK_GAUGE, "")                                                         \
    X(TLS_HANDSHAKE_FAILURES, "vstream_tls_handshake_failures_total", "",      \
      VS_MK_COUNTER, "TLS connections closed before or during the handshake")  \
    X(FRAMING_ERRORS, "vstream_framing_errors_total", "", VS_MK_COUNTER,       \
      "Client connections closed for a malformed frame")                       \
    X(EVICTIONS, "vstream_evictions_total", "", VS_MK_COUNTER,                 \
      "Eviction frames sent to clients")                                       \
    X(CLIENT_BYTES_RECEIVED, "vstream_client_received_bytes_total", "",        \
      VS_MK_COUNTER, "Request bytes read from clients (framed)")               \
    X(CLIENT_BYTES_SENT, "vstream_client_sent_bytes_total", "", VS_MK_COUNTER, \
      "Reply and eviction bytes queued to clients")                            \
    X(MESSAGES_SENT, "vstream_messages_sent_total", "", VS_MK_COUNTER,         \
      "Messages appended by SendMessages")                                     \
    X(MESSAGES_SENT_BYTES, "vstream_messages_sent_bytes_total", "",            \
      VS_MK_COUNTER, "Batch bytes appended by SendMessages")                   \
    X(MESSAGES_POLLED, "vstream_messages_polled_total", "", VS_MK_COUNTER,     \
      "Messages returned by PollMessages")                                     \
    X(MESSAGES_POLLED_BYTES, "vstream_messages_polled_bytes_total", "",        \
      VS_MK_COUNTER, "Bytes of messages returned by PollMessages")             \
    X(DISK_WATERMARK, "vstream_disk_watermark_reached", "", VS_MK_GAUGE,       \
      "Data shards refusing sends: free space below disk_watermark_bytes")     \
    X(WAL_APPENDS, "vstream_wal_appends_total", "", VS_MK_COUNTER,             \
      "Prepares appended to the metadata WAL")                                 \
    X(WAL_BYTES, "vstream_wal_appended_bytes_total", "", VS_MK_COUNTER,        \
      "Bytes appended to the metadata WAL")                                    \
    X(CHECKPOINTS, "vstream_checkpoints_total", "", VS_MK_COUNTER,             \
      "Metadata checkpoints completed")                                        \
    X(XFER_STAGE, "vstream_state_transfer_stage", "", VS_MK_GAUGE,             \
      "Metadata state transfer stage: 0 idle, 1 awaiting target, 2 "           \
      "fetching, 3 installing")                                                \
    X(XFER_PEER, "vstream_state_transfer_peer", "", VS_MK_GAUGE,               \
      "Replica the running state transfer fetches from, plus one (0: none)")   \
    X(XFER_FETCHED, "vstream_state_transfer_fetched_bytes", "", VS_MK_GAUGE,   \
      "Bytes fetched by the running state transfer")                           \
    X(XFER_TOTAL, "vstream_state_transfer_total_bytes", "", VS_MK_GAUGE,       \
      "Bytes the running state transfer fetches in all")                       \
    X(XFER_INSTALLED, "vstream_state_transfers_total", "result=\"installed\"", \
      VS_MK_COUNTER, "Metadata state transfers ended")                         \
    X(XFER_ABANDONED, "vstream_state_transfers_total", "result=\"abandoned\"", \
      VS_MK_COUNTER, "")                                                       \
    X(XFER_SERVED, "vstream_state_transfer_served_bytes_total", "",            \
      VS_MK_COUNTER, "Snapshot and client-table bytes served to replicas")     \
    X(LR_PUBLISHES, "vstream_leftright_publishes_total", "", VS_MK_COUNTER,    \
      "Metadata left-right publishes (flips)")                                 \
    X(LR_READER_WAITS, "vstream_leftright_reader_waits_total", "",             \
      VS_MK_COUNTER, "Publishes that had to wait for readers to drain")        \
    X(LR_SLOW_READERS, "vstream_leftright_slow_readers_total", "",             \
      VS_MK_COUNTER, "Reader drain waits that passed their deadline")          \
    X(RING_FRAMES, "vstream_ipc_forwarded_frames_total", "", VS_MK_COUNTER,    \
      "Frames sent over inter-shard IPC rings")                                \
    X(RING_BYTES, "vstream_ipc_forwarded_bytes_total", "", VS_MK_COUNTER,      \
      "Bytes sent over inter-shard IPC rings")                                 \
    X(RING_BLOCKED, "vstream_ipc_ring_full_total", "", VS_MK_COUNTER,          \
      "Sends that found an IPC ring full and were queued")                     \
    X(VSR_VIEW, "vstream_vsr_view", "", VS_MK_GAUGE,                           \
      "Metadata group: current view")                                          \
    X(VSR_LOG_VIEW, "vstream_vsr_log_view", "", VS_MK_GAUGE,                   \
      "Metadata group: view of the last normal log")                           \
    X(VSR_OP, "vstream_vsr_op", "", VS_MK_GAUGE,                               \
      "Metadata group: highest prepared op")                                   \
    X(VSR_COMMIT, "vstream_vsr_commit", "", VS_MK_GAUGE,                       \
      "Metadata group: highest committed op")                                  \
    X(VSR_ROLE, "vstream_vsr_role", "", VS_MK_GAUGE,                           \
      "Metadata group: 0 unknown, 1 primary, 2 backup")                        \
    X(VSR_STATUS, "vstream_vsr_status", "", VS_MK_GAUGE,                       \
      "Metadata group: 0 booting, 1 normal, 2 view change, 3 recovering")      \
    X(VSR_LINKS_UP, "vstream_vsr_links_connected", "", VS_MK_GAUGE,            \
      "Replica links connected and authenticated")                             \
    X(VSR_VIEW_CHANGES, "vstream_vsr_view_changes_total", "", VS_MK_COUNTER,   \
      "View changes this replica took part in")                                \
    X(VSR_REPAIRS, "vstream_vsr_repairs_total", "", VS_MK_COUNTER,             \
      "Prepares repaired from peers")                                          \
    X(VSR_STATE_TRANSFERS, "vstream_vsr_state_transfers_total", "",            \
      VS_MK_COUNTER, "State transfers completed")

enum vs_metric_scalar {
#define VS_M_ENUM(id, name, labels, kind, help) VS_M_##id,
    VS_METRICS_SCALARS(VS_M_ENUM)
#undef VS_M_ENUM
        VS_M_SCALARS_END
};

/* Histograms: upper bounds in microseconds, then +Inf; each histogram
 * takes VS_MH_SLOTS slots: the buckets (not cumulative), sum (us), count. */
#define VS_MH_BOUNDS 17u
#define VS_MH_SLOTS  (VS_MH_BOUNDS + 3u)

/* Request operation classes (label class="..."). */
enum vs_metric_class {
    VS_MC_LOGIN = 0,
    VS_MC_METADATA,
    VS_MC_SEND,
    VS_MC_POLL,
    VS_MC_OFFSETS,
    VS_MC_READ,
    VS_MC_COUNT
};

/* Operations (label operation="..."): Register, Logout, the metadata
 * operations 128..149, the partition plane 160..162, and NonReplicated
 * Ping / Poll / GetConsumerOffset / Flush / other reads / anything else. */
#define VS_MO_META_FIRST 2u /* index of operation 128 */
enum {
    VS_MO_REGISTER = 0,
    VS_MO_LOGOUT = 1,
    VS_MO_SEND = VS_MO_META_FIRST + 22u,
    VS_MO_STORE_OFFSET,
    VS_MO_DELETE_OFFSET,
    VS_MO_PING,
    VS_MO_POLL,
    VS_MO_GET_OFFSET,
    VS_MO_FLUSH,
    VS_MO_READ,
    VS_MO_OTHER,
    VS_MO_COUNT
};
/* Result codes (label code="..."): a fixed set, then "other". */
#define VS_MR_COUNT 21u

/* Slot map. */
#define VS_M_HIST_REQ   VS_M_SCALARS_END /* VS_MC_COUNT histograms */
#define VS_M_HIST_FSYNC (VS_M_HIST_REQ + VS_MC_COUNT * VS_MH_SLOTS)
#define VS_M_REQ        (VS_M_HIST_FSYNC + VS_MH_SLOTS) /* op x code */
/* Replica links, per peer replica id (< VS_M_LINKS): state (gauge: 0
 * down, 1 connecting, 2 authenticated), bytes sent, bytes received. The
 * replica-link code of shard 0 writes them; rendered for the peers of
 * replica_addrs. */
#define VS_M_LINKS         32u
#define VS_M_LINK_STATE(p) (VS_M_REQ + VS_MO_COUNT * VS_MR_COUNT + (p)*3u)
#define VS_M_LINK_SENT(p)  (VS_M_LINK_STATE(p) + 1u)
#define VS_M_LINK_RECV(p)  (VS_M_LINK_STATE(p) + 2u)
#define VS_M_END           (VS_M_LINK_STATE(VS_M_LINKS))
_Static_assert(VS_M_END <= VS_METRICS_SLOTS, "metrics slots");

/* This process's block: bound to the segment by metrics_bind, else a
 * private block. */
extern struct vs_metrics_block_shm *vs_metrics_me;

static inline void
vs_metrics_add(uint32_t slot, uint64_t n)
{
    _Atomic uint64_t *p = &vs_metrics_me->v[slot];
    /* single writer: relaxed load + store; readers load relaxed */
    atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline void
vs_metrics_sub(uint32_t slot, uint64_t n)
{
    _Atomic uint64_t *p = &vs_metrics_me->v[slot];
    atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) - n,
                          memory_order_relaxed);
}

static inline void
vs_metrics_set(uint32_t slot, uint64_t v)
{
    atomic_store_explicit(&vs_metrics_me->v[slot], v, memory_order_relaxed);
}

/* Records one observation of `us` microseconds in the histogram at
 * `base` (VS_M_HIST_REQ + class * VS_MH_SLOTS, or VS_M_HIST_FSYNC). */
void vs_metrics_observe_us(uint32_t base, uint64_t us);

/* One answered request: operation index, result code, latency. */
void vs_metrics_request(uint32_t op_index, uint32_t code, uint64_t us);

/* Maps a request header's operation (and NonReplicated command code). */
uint32_t vs_metrics_op_index(uint8_t operation, uint32_t command_code);
/* The latency class of an operation index. */
enum vs_metric_class vs_metrics_op_class(uint32_t op_index);

/* Names for the renderer. */
const char *vs_metrics_op_name(uint32_t op_index);
const char *vs_metrics_class_name(enum vs_metric_class c);
/* Code label of result index i ("0", "40", ..., "other"). */
const char *vs_metrics_code_name(uint32_t i);
/* Upper bound (us) of histogram bucket i < VS_MH_BOUNDS. */
uint64_t vs_metrics_bound_us(uint32_t i);

/* The scalar table. */
struct vs_metric_desc {
    const char *name, *labels, *help;
    enum vs_metric_kind kind;
};
const struct vs_metric_desc *vs_metrics_scalars(uint32_t *count);

/* Zeroes the gauges of a block (new incarnation, or reaped process). */
void vs_metrics_clear_gauges(struct vs_metrics_block_shm *b);

#endif /* VS_COMMON_METRICS_H */
