/*
 * common/metrics.c - metric names, label tables and the histogram and
 * request writers; see metrics.h. Any process (writes its own block).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "common/metrics.h"
#include "common/wire.h"

/* Until ipc/metrics.c binds the segment's block. */
static struct vs_metrics_block_shm metrics_private;
struct vs_metrics_block_shm *vs_metrics_me = &metrics_private;

static const uint64_t bounds_us[VS_MH_BOUNDS] = {
    50,    100,    250,    500,    1000,    2500,    5000,    10000,    25000,
    50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
};

/* Result codes with their own label value; the rest are "other". */
static const uint32_t codes[VS_MR_COUNT - 1] = {
    VS_E_OK,
    VS_E_ERROR,
    VS_E_INVALID_COMMAND,
    VS_E_INVALID_FORMAT,
    VS_E_FEATURE_UNAVAILABLE,
    VS_E_RESOURCE_NOT_FOUND,
    VS_E_STALE_CLIENT,
    VS_E_UNAUTHENTICATED,
    VS_E_UNAUTHORIZED,
    VS_E_INVALID_CREDENTIALS,
    VS_E_INVALID_USERNAME,
    VS_E_USER_INACTIVE,
    VS_E_INVALID_PAT,
    VS_E_TRANSIENT_NOT_COMMITTED,
    VS_E_NOT_ACCEPTED,
    VS_E_STREAM_ID_NOT_FOUND,
    VS_E_STREAM_NAME_ALREADY_EXISTS,
    VS_E_TOPIC_ID_NOT_FOUND,
    VS_E_PARTITION_NOT_FOUND,
    VS_E_CANNOT_SAVE_MESSAGES,
};
static char code_names[VS_MR_COUNT][12];

static const char *
code_name(uint32_t i)
{
    if (code_names[i][0] == '\0') /* idempotent: racing threads agree */
        snprintf(code_names[i], sizeof code_names[i], "%u", codes[i]);
    return code_names[i];
}

static const struct vs_metric_desc scalars[] = {
#define VS_M_DESC(id, name, labels, kind, help) {name, labels, help, kind},
    VS_METRICS_SCALARS(VS_M_DESC)
#undef VS_M_DESC
};
_Static_assert(sizeof(scalars) / sizeof(scalars[0]) == VS_M_SCALARS_END,
               "scalar table");

const struct vs_metric_desc *
vs_metrics_scalars(uint32_t *count)
{
    *count = VS_M_SCALARS_END;
    return scalars;
}

uint64_t
vs_metrics_bound_us(uint32_t i)
{
    return i < VS_MH_BOUNDS ? bounds_us[i] : UINT64_MAX;
}

void
vs_metrics_observe_us(uint32_t base, uint64_t us)
{
    uint32_t i = 0;
    while (i < VS_MH_BOUNDS && us > bounds_us[i])
        i++;
    vs_metrics_add(base + i, 1);
    vs_metrics_add(base + VS_MH_BOUNDS + 1, us);
    vs_metrics_add(base + VS_MH_BOUNDS + 2, 1);
}

static uint32_t
code_index(uint32_t code)
{
    for (uint32_t i = 0; i < VS_MR_COUNT - 1; i++)
        if (codes[i] == code)
            return i;
    return VS_MR_COUNT - 1;
}

void
vs_metrics_request(uint32_t op_index, uint32_t code, uint64_t us)
{
    if (op_index >= VS_MO_COUNT)
        op_index = VS_MO_OTHER;
    vs_metrics_add(VS_M_REQ + op_index * VS_MR_COUNT + code_index(code), 1);
    vs_metrics_observe_us(
        VS_M_HIST_REQ + (uint32_t)vs_metrics_op_class(op_index) * VS_MH_SLOTS,
        us);
}

uint32_t
vs_metrics_op_index(uint8_t operation, uint32_t command_code)
{
    switch (operation) {
    case VS_OP_REGISTER:
        return VS_MO_REGISTER;
    case VS_OP_LOGOUT:
        return VS_MO_LOGOUT;
    case VS_OP_SEND_MESSAGES:
        return VS_MO_SEND;
    case VS_OP_STORE_CONSUMER_OFFSET:
        return VS_MO_STORE_OFFSET;
    case VS_OP_DELETE_CONSUMER_OFFSET:
        return VS_MO_DELETE_OFFSET;
    case VS_OP_NON_REPLICATED:
        switch (command_code) { /* Iggy's legacy command codes */
        case 1:                 /* Ping */
            return VS_MO_PING;
        case 100: /* PollMessages */
            return VS_MO_POLL;
        case 102: /* FlushUnsavedBuffer */
            return VS_MO_FLUSH;
        case 120: /* GetConsumerOffset */
            return VS_MO_GET_OFFSET;
        default:
            return VS_MO_READ;
        }
    default:
        break;
    }
    if (operation >= VS_OP_CREATE_STREAM &&
        operation <= VS_OP_LEAVE_CONSUMER_GROUP)
        return VS_MO_META_FIRST + (uint32_t)(operation - VS_OP_CREATE_STREAM);
    return VS_MO_OTHER;
}

enum vs_metric_class
vs_metrics_op_class(uint32_t op_index)
{
    switch (op_index) {
    case VS_MO_REGISTER:
        return VS_MC_LOGIN;
    case VS_MO_SEND:
        return VS_MC_SEND;
    case VS_MO_POLL:
        return VS_MC_POLL;
    case VS_MO_STORE_OFFSET:
    case VS_MO_DELETE_OFFSET:
    case VS_MO_GET_OFFSET:
        return VS_MC_OFFSETS;
    case VS_MO_PING:
    case VS_MO_FLUSH:
    case VS_MO_READ:
    case VS_MO_OTHER:
        return VS_MC_READ;
    default:
        return VS_MC_METADATA;
    }
}

const char *
vs_metrics_op_name(uint32_t i)
{
    switch (i) {
    case VS_MO_REGISTER:
        return "Register";
    case VS_MO_LOGOUT:
        return "Logout";
    case VS_MO_SEND:
        return "SendMessages";
    case VS_MO_STORE_OFFSET:
        return "StoreConsumerOffset";
    case VS_MO_DELETE_OFFSET:
        return "DeleteConsumerOffset";
    case VS_MO_PING:
        return "Ping";
    case VS_MO_POLL:
        return "PollMessages";
    case VS_MO_GET_OFFSET:
        return "GetConsumerOffset";
    case VS_MO_FLUSH:
        return "FlushUnsavedBuffer";
    case VS_MO_READ:
        return "Read";
    case VS_MO_OTHER:
        return "Other";
    default:
        break;
    }
    if (i >= VS_MO_META_FIRST && i < VS_MO_SEND)
        return vs_operation_name(VS_OP_CREATE_STREAM + (i - VS_MO_META_FIRST));
    return "Other";
}

const char *
vs_metrics_class_name(enum vs_metric_class c)
{
    static const char *const names[VS_MC_COUNT] = {
        "login", "metadata", "send", "poll", "offsets", "read",
    };
    return (unsigned)c < VS_MC_COUNT ? names[c] : "read";
}

const char *
vs_metrics_code_name(uint32_t i)
{
    return i < VS_MR_COUNT - 1 ? code_name(i) : "other";
}

void
vs_metrics_clear_gauges(struct vs_metrics_block_shm *b)
{
    for (uint32_t i = 0; i < VS_M_SCALARS_END; i++)
        if (scalars[i].kind == VS_MK_GAUGE)
            atomic_store_explicit(&b->v[i], 0, memory_order_relaxed);
    for (uint32_t p = 0; p < VS_M_LINKS; p++)
        atomic_store_explicit(&b->v[VS_M_LINK_STATE(p)], 0,
                              memory_order_relaxed);
}
