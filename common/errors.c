/*
 * common/errors.c - names and one-line strings of Iggy error codes.
 * Pure lookups; any process.
 */
#include "config.h"

#include <stddef.h>

#include "common/errors.h"

struct error_row {
    uint32_t code;
    const char *name;
    const char *text;
};

static const struct error_row error_rows[] = {
    {0, "Ok", "success"},
    {1, "Error", "unexpected server error"},
    {2, "InvalidConfiguration", "invalid configuration"},
    {3, "InvalidCommand", "invalid command"},
    {4, "InvalidFormat", "invalid format"},
    {5, "FeatureUnavailable", "feature unavailable"},
    {6, "InvalidIdentifier", "invalid identifier"},
    {20, "ResourceNotFound", "resource not found"},
    {30, "StaleClient", "stale client"},
    {40, "Unauthenticated", "unauthenticated"},
    {41, "Unauthorized", "permission denied"},
    {42, "InvalidCredentials", "invalid credentials"},
    {43, "InvalidUsername", "invalid username"},
    {44, "InvalidPassword", "invalid password"},
    {45, "InvalidUserStatus", "invalid user status"},
    {46, "UserAlreadyExists", "user already exists"},
    {47, "UserInactive", "user inactive"},
    {48, "CannotDeleteUser", "cannot delete user"},
    {49, "CannotChangePermissions", "cannot change permissions"},
    {50, "InvalidPersonalAccessTokenName",
     "invalid personal access token name"},
    {51, "PersonalAccessTokenAlreadyExists",
     "personal access token already exists"},
    {52, "PersonalAccessTokensLimitReached",
     "personal access tokens limit reached"},
    {53, "InvalidPersonalAccessToken", "invalid personal access token"},
    {54, "PersonalAccessTokenExpired", "personal access token expired"},
    {55, "UsersLimitReached", "users limit reached"},
    {56, "InvalidPersonalAccessTokenExpiry",
     "invalid personal access token expiry"},
    {57, "TransientNotCommitted", "not committed yet, retry"},
    {58, "NotAccepted", "not accepted, retry"},
    {304, "EmptyResponse", "empty response"},
    {1009, "StreamIdNotFound", "stream not found"},
    {1012, "StreamNameAlreadyExists", "stream name already exists"},
    {1019, "InvalidTopicSize", "max topic size below segment size"},
    {1020, "TooManyStreams", "too many streams"},
    {2010, "TopicIdNotFound", "topic not found"},
    {2013, "TopicNameAlreadyExists", "topic name already exists"},
    {2015, "TooManyPartitions", "too many partitions"},
    {2018, "InvalidReplicationFactor",
     "invalid replication factor (at most the cluster's node count)"},
    {2019, "InvalidPartitionsCount", "invalid partitions count"},
    {2021, "TooManyTopics", "too many topics"},
    {3007, "PartitionNotFound", "partition not found"},
    {3013, "PartitionIdSpaceExhausted", "partition id space exhausted"},
    {3020, "CannotReadConsumerOffsets", "consumer offsets damaged on disk"},
    {3021, "ConsumerOffsetNotFound", "consumer offset not found"},
    {4000, "SegmentNotFound", "segment not found"},
    {4006, "CannotSaveMessagesToSegment",
     "cannot save messages (disk space below the watermark or out of space)"},
    {4009, "InvalidMessagesCount", "invalid messages count"},
    {4017, "TooBigUserHeaders", "user headers too big"},
    {4022, "TooBigMessagePayload", "message payload too big"},
    {4023, "TooManyMessages", "too many messages"},
    {4027, "InvalidMessageChecksum", "invalid message checksum"},
    {4031, "NonZeroOffset", "non-zero offset in a client batch"},
    {4032, "NonZeroTimestamp", "non-zero timestamp in a client batch"},
    {4036, "InvalidMessagesSize", "invalid messages size"},
    {4037, "TooSmallMessage", "message too small"},
    {4039, "InvalidBatchChecksum", "invalid batch checksum"},
    {4041, "UnsupportedOptionKey", "unsupported option key"},
    {4042, "InvalidOptionValue", "invalid option value"},
    {4100, "InvalidOffset", "invalid offset"},
    {4101, "InvalidReservedField", "non-zero reserved field"},
    {5000, "ConsumerGroupIdNotFound", "consumer group not found"},
    {5004, "ConsumerGroupNameAlreadyExists",
     "consumer group name already exists"},
    {5006, "ConsumerGroupMemberNotFound", "consumer group member not found"},
    {5009, "ConsumerGroupPartitionNotOwned",
     "consumer group partition not owned"},
    {9000, "SnapshotFileCompletionFailed", "snapshot file completion failed"},
    {10005, "CannotAppendToFile", "cannot append to file"},
    {14003, "IncompatibleProtocolVersion", "incompatible protocol version"},
    {60000, "DiskFull",
     "no space left for metadata on the data dir's filesystem (deletes, "
     "purges and logins still work)"},
};

static const struct error_row *
find_row(uint32_t code)
{
    for (size_t i = 0; i < sizeof(error_rows) / sizeof(error_rows[0]); i++)
        if (error_rows[i].code == code)
            return &error_rows[i];
    return NULL;
}

const char *
vs_iggy_error_name(uint32_t code)
{
    const struct error_row *r = find_row(code);
    return r ? r->name : "Unknown";
}

const char *
vs_iggy_error_str(uint32_t code)
{
    const struct error_row *r = find_row(code);
    return r ? r->text : "unknown error";
}
