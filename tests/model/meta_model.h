/*
 * tests/model/meta_model.h - an independent reference model of the
 * metadata state machine (streams, topics, partitions, consumer groups,
 * users and permissions), written from the reference documents
 * (iggy-client-protocol-2 §1-§3, §6, §11, DESIGN §4). It uses its own
 * arrays and rules and calls nothing from shard/meta/, so a test can hold
 * meta_apply's result code for every op against mm_apply's.
 *
 * Ids are the model's array indexes (stream s, topic t of stream s, group
 * g of a topic, user u; user 0 is root "iggy" with every permission). The
 * capacities in struct mm_caps must not exceed the M_* array sizes.
 * Callers: tests only (tests/unit/check_meta_model.c, tests/sim/).
 */
#ifndef VS_TESTS_MODEL_META_MODEL_H
#define VS_TESTS_MODEL_META_MODEL_H

#include <stdint.h>

/* Array sizes; struct mm_caps may ask for less. */
#define M_STREAMS 8
#define M_USERS   8
#define M_TPS     24 /* topic ids per stream: at least caps.topics */
#define M_GPT     8  /* group ids tracked per topic */
#define M_CLIENTS 4  /* consumer-group members are clients 1..M_CLIENTS */
#define M_NAME    16

/* The state machine's table capacities the model enforces. */
struct mm_caps {
    uint32_t streams, topics, partitions, groups, members, users, assignments;
};

struct m_group {
    int live;
    char name[M_NAME];
    int members[M_CLIENTS + 1]; /* by client 1..4 */
    int nmembers;
    uint64_t gen;
};

struct m_topic {
    int live;
    char name[M_NAME];
    uint32_t parts;
    uint32_t next_gid;
    struct m_group g[M_GPT];
};

struct m_stream {
    int live;
    char name[M_NAME];
    struct m_topic t[M_TPS];
};

struct m_user {
    int live;
    char name[M_NAME];
    int has_perms;
    uint16_t global;
    int sg[M_STREAMS + 1]; /* -1 none, else bits */
    int tg[M_STREAMS + 1][4];
};

struct model {
    struct mm_caps caps;
    struct m_stream s[M_STREAMS];
    struct m_user u[M_USERS];
};

/* One operation in the model's terms. */
struct gen_op {
    int kind;
    uint32_t actor;
    int s, t, g; /* numeric ids; s may address by name if by_name */
    int by_name;
    char name[M_NAME];
    uint32_t count;
    uint64_t client;
    int has_perms;
    uint16_t global;
    int ps, psb, pt, ptb; /* one stream grant (ps >= 0), one topic grant */
};

enum {
    K_CREATE_STREAM,
    K_DELETE_STREAM,
    K_UPDATE_STREAM,
    K_PURGE_STREAM,
    K_CREATE_TOPIC,
    K_DELETE_TOPIC,
    K_CREATE_PARTS,
    K_DELETE_PARTS,
    K_CREATE_USER,
    K_DELETE_USER,
    K_UPDATE_PERMS,
    K_CREATE_GROUP,
    K_DELETE_GROUP,
    K_JOIN,
    K_LEAVE,
    K_COUNT
};

/* An empty model with root as user 0. */
void mm_init(struct model *m, const struct mm_caps *caps);
/* Applies o and returns the result code the state machine must answer
 * (0 = success, else a VS_E_* code); refusals change nothing. */
uint32_t mm_apply(struct model *m, const struct gen_op *o);

#endif /* VS_TESTS_MODEL_META_MODEL_H */
