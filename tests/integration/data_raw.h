/*
 * tests/integration/data_raw.h - raw-frame helpers of the data-plane
 * integration tests (check_data_*): a logged-in raw session, stream and
 * topic creation, SendMessages / PollMessages / offset frames built byte
 * by byte, and a decoder of poll replies that walks records by
 * batch_length exactly as an Iggy SDK does (iggy-client-protocol §5.7).
 * Every wait is bounded (rawclient.h). Asserts with Check.
 * Callers: the Check-forked test process of check_data_* tests.
 */
#ifndef VS_TESTS_DATA_RAW_H
#define VS_TESTS_DATA_RAW_H

#include <stddef.h>
#include <stdint.h>

#include "tests/integration/harness.h"
#include "tests/integration/rawclient.h"

#define DR_READ_MS 15000u

struct dr_sess {
    int fd;
    uint64_t client;
    uint64_t session;
    uint64_t request; /* last metadata request number used */
};

/* Connects to n and logs in as iggy/iggy (asserts). */
void dr_login(struct dr_sess *s, const struct vs_node *n, uint64_t client);
void dr_close(struct dr_sess *s);
/* The data shard slot serving this connection (GetMe client id low bits). */
uint32_t dr_my_shard(struct dr_sess *s);
/* Metadata op (result-framed): returns the result code (0 = ok). */
uint32_t dr_meta(struct dr_sess *s, uint8_t op, const void *body, size_t len);
/* Metadata op: the header status if non-zero (a refusal before
 * replication, e.g. DiskFull), else the result code. */
uint32_t dr_meta_status(struct dr_sess *s, uint8_t op, const void *body,
                        size_t len);
/* CreateStream name; CreateTopic in stream 0 with `parts` partitions and
 * an options block (may be NULL/0). Assert success. */
void dr_create_stream(struct dr_sess *s, const char *name);
void dr_create_topic(struct dr_sess *s, uint32_t stream, const char *name,
                     uint32_t parts, const uint8_t *opts, size_t olen);
/* Appends one option [2][len][key][kind][len][value] to buf at *len. */
void dr_opt_u64(uint8_t *buf, size_t *len, const char *key, uint64_t v);

/* Builds a SendMessages body: stream/topic by id, partitioning kind
 * (1 balanced, 2 partition id, 3 key) and the batch. Heap; *len. */
uint8_t *dr_send_body(uint32_t stream, uint32_t topic, uint8_t pkind,
                      const void *pval, uint8_t plen, const uint8_t *batch,
                      size_t blen, uint32_t msgs, size_t *len);
/* A batch of `count` messages whose payloads are "tag-i" (i = 0..).
 * Heap; *len. */
uint8_t *dr_batch(const char *tag, uint32_t count, size_t *len);
/* The same with every payload padded with 'x' to `size` bytes (>= the
 * tag's length). */
uint8_t *dr_batch_sized(const char *tag, uint32_t count, uint32_t size,
                        size_t *len);

/* Sends (op 160) and reads the reply; returns the status; on success
 * *partition / *base from the single confirmation (asserted exact). */
uint32_t dr_send(struct dr_sess *s, const uint8_t *body, size_t len,
                 uint32_t *partition, uint64_t *base);

/* One polled message. */
struct dr_msg {
    uint64_t offset;
    uint64_t timestamp;
    uint32_t len;
    char payload[256]; /* NUL-terminated, truncated */
};
struct dr_poll {
    uint32_t status;
    uint32_t partition;
    uint64_t current;
    uint32_t count;
    uint32_t n;
    struct dr_msg m[512];
};
/* PollMessages (NR 100): consumer kind/id numeric, partition (has = 1),
 * strategy, value, count, autocommit. Decodes into *out (asserts the
 * layout: records walked by batch_length, reserved 0, count == n). */
void dr_poll(struct dr_sess *s, uint8_t ckind, uint32_t cid, uint32_t stream,
             uint32_t topic, int has_part, uint32_t part, uint8_t strategy,
             uint64_t value, uint32_t count, uint8_t autocommit,
             struct dr_poll *out);
/* Consumer offsets: get (NR 120) returns 1 + *stored when present, 0 when
 * empty, or -status; store (161) / delete (162) return the header status
 * (result section asserted 00000000 on success). */
int dr_offset_get(struct dr_sess *s, uint8_t ckind, uint32_t cid,
                  uint32_t stream, uint32_t topic, uint32_t part,
                  uint64_t *stored);
uint32_t dr_offset_store(struct dr_sess *s, uint8_t ckind, uint32_t cid,
                         uint32_t stream, uint32_t topic, uint32_t part,
                         uint64_t offset);
uint32_t dr_offset_delete(struct dr_sess *s, uint8_t ckind, uint32_t cid,
                          uint32_t stream, uint32_t topic, uint32_t part);
/* Owner data shard (1..k) of a partition (DESIGN §1). */
uint32_t dr_owner(uint32_t stream, uint32_t topic, uint32_t part, uint32_t k);
/* SIGKILL the supervisor and every shard of n, reap, wait gone. */
void dr_kill_node(struct vs_node *n);

#endif /* VS_TESTS_DATA_RAW_H */
