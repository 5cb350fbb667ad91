/*
 * common/wire.c - names and classification of wire enums.
 *
 * Role: human-readable names for commands, operations and eviction reasons,
 * and the small predicates every decoder shares (declared operation,
 * result-framed reply, known format version, structural header check).
 * Pure functions; any process may call them.
 */
#include "config.h"

#include <errno.h>

#include "common/wire.h"

static const char *const command_names[] = {
    "Reserved",
    "Ping",
    "Pong",
    "PingClient",
    "PongClient",
    "Request",
    "Prepare",
    "PrepareOk",
    "Reply",
    "Commit",
    "StartViewChange",
    "DoViewChange",
    "StartView",
    "Eviction",
    "ReplicaHello",
    "ReplicaChallenge",
    "ReplicaFinish",
    "RequestStartView",
    "RequestPrepares",
    "RepairPrepare",
    "RepairDone",
    "RangeEvicted",
    "RequestStateTransfer",
    "StateTransferTarget",
    "RequestStateChunk",
    "StateChunk",
    "ForwardRegister",
    "ForwardRegisterResult",
    "ForwardLogout",
    "ForwardLogoutResult",
    "ForwardRequest",
    "ForwardResult",
};
_Static_assert(sizeof(command_names) / sizeof(command_names[0]) ==
                   VS_CMD_MAX + 1,
               "one name per command");

const char *
vs_command_name(unsigned command)
{
    if (command > VS_CMD_MAX)
        return "unknown";
    return command_names[command];
}

static const char *const metadata_op_names[] = {
    "CreateStream",
    "UpdateStream",
    "DeleteStream",
    "PurgeStream",
    "CreateTopic",
    "UpdateTopic",
    "DeleteTopic",
    "PurgeTopic",
    "CreatePartitions",
    "DeletePartitions",
    "DeleteSegments",
    "CreateConsumerGroup",
    "DeleteConsumerGroup",
    "CreateUser",
    "UpdateUser",
    "DeleteUser",
    "ChangePassword",
    "UpdatePermissions",
    "CreatePersonalAccessToken",
    "DeletePersonalAccessToken",
    "JoinConsumerGroup",
    "LeaveConsumerGroup",
};
_Static_assert(sizeof(metadata_op_names) / sizeof(metadata_op_names[0]) ==
                   VS_OP_LEAVE_CONSUMER_GROUP - VS_OP_CREATE_STREAM + 1,
               "one name per metadata operation");

const char *
vs_operation_name(unsigned op)
{
    switch (op) {
    case VS_OP_RESERVED:
        return "Reserved";
    case VS_OP_REGISTER:
        return "Register";
    case VS_OP_NON_REPLICATED:
        return "NonReplicated";
    case VS_OP_LOGOUT:
        return "Logout";
    case VS_OP_CREATE_TOPIC_WITH_ASSIGNMENTS:
        return "CreateTopicWithAssignments";
    case VS_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS:
        return "CreatePartitionsWithAssignments";
    case VS_OP_REMOVE_CONSUMER_GROUP_MEMBER:
        return "RemoveConsumerGroupMember";
    case VS_OP_COMPLETE_CONSUMER_GROUP_REVOCATION:
        return "CompleteConsumerGroupRevocation";
    case VS_OP_TRUNCATE_PARTITION:
        return "TruncatePartition";
    case VS_OP_SEND_MESSAGES:
        return "SendMessages";
    case VS_OP_STORE_CONSUMER_OFFSET:
        return "StoreConsumerOffset";
    case VS_OP_DELETE_CONSUMER_OFFSET:
        return "DeleteConsumerOffset";
    case VS_OP_GENESIS:
        return "Genesis";
    default:
        break;
    }
    if (op >= VS_OP_CREATE_STREAM && op <= VS_OP_LEAVE_CONSUMER_GROUP)
        return metadata_op_names[op - VS_OP_CREATE_STREAM];
    return "unknown";
}

static const char *const eviction_names[] = {
    "Reserved",
    "NoSession",
    "ClientReleaseTooLow",
    "ClientReleaseTooHigh",
    "InvalidRequestOperation",
    "InvalidRequestBody",
    "InvalidRequestBodySize",
    "SessionTooLow",
    "SessionReleaseMismatch",
    "InvalidCredentials",
    "InvalidToken",
    "UserInactive",
    "SessionError",
    "StaleClient",
    "IncompatibleProtocol",
    "MalformedLogin",
};

const char *
vs_eviction_reason_name(unsigned reason)
{
    if (reason >= sizeof(eviction_names) / sizeof(eviction_names[0]))
        return "unknown";
    return eviction_names[reason];
}

int
vs_operation_is_declared(unsigned op)
{
    return op <= VS_OP_LOGOUT ||
           (op >= VS_OP_CREATE_TOPIC_WITH_ASSIGNMENTS &&
            op <= VS_OP_TRUNCATE_PARTITION) ||
           (op >= VS_OP_CREATE_STREAM && op <= VS_OP_LEAVE_CONSUMER_GROUP) ||
           (op >= VS_OP_SEND_MESSAGES && op <= VS_OP_DELETE_CONSUMER_OFFSET);
}

int
vs_operation_is_result_framed(unsigned op)
{
    if (op == VS_OP_REGISTER)
        return 1;
    if (op >= VS_OP_CREATE_TOPIC_WITH_ASSIGNMENTS &&
        op <= VS_OP_TRUNCATE_PARTITION)
        return 1;
    if (op >= VS_OP_CREATE_STREAM && op <= VS_OP_LEAVE_CONSUMER_GROUP)
        return op != VS_OP_DELETE_SEGMENTS;
    return op == VS_OP_STORE_CONSUMER_OFFSET ||
           op == VS_OP_DELETE_CONSUMER_OFFSET;
}

int
vs_wire_format_known(uint32_t release)
{
    return release == VS_WIRE_FORMAT_V1 || release == VS_WIRE_FORMAT_V2;
}

int
vs_header_check_structure(const struct vs_header *h, uint32_t size_max)
{
    if (h->f.size < VS_HEADER_SIZE || h->f.size > size_max)
        return -EPROTO;
    if (h->f.command > VS_CMD_MAX)
        return -EPROTO;
    return 0;
}
