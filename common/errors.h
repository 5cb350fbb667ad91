/*
 * common/errors.h - error conventions and Iggy's numeric error codes.
 *
 * Two kinds of errors cross vstream's interfaces:
 *  - Internal calls return 0 on success or a negative errno (-EINVAL,
 *    -ENOSPC, ...) and clean up in one `goto fail` block, in reverse order
 *    of acquisition. Functions returning pointers use NULL + errno.
 *  - Errors a client sees carry Iggy's numeric IggyError codes
 *    (enum vs_iggy_error), either in the reply header's `status` (checks made
 *    before replication) or in the result section (decided by apply).
 * The exit codes of processes are VS_EXIT_* (DESIGN §1).
 * Callers: any process.
 */
#ifndef VS_COMMON_ERRORS_H
#define VS_COMMON_ERRORS_H

#include <stdint.h>

/* Process exit codes (DESIGN §1). */
enum vs_exit {
    VS_EXIT_OK = 0,      /* clean stop */
    VS_EXIT_RESTART = 1, /* unexpected failure worth a restart */
    VS_EXIT_FATAL = 2,   /* do not restart: config, lock, refused boot */
};
/* vstream-inspect: the node would refuse to boot. */
#define VS_EXIT_INSPECT_REFUSE 3

/* Iggy's IggyError codes used by vstream (shared/reference/
 * iggy-client-protocol*.md). The values are the wire values. */
enum vs_iggy_error {
    VS_E_OK = 0,
    VS_E_ERROR = 1,
    VS_E_INVALID_CONFIGURATION = 2,
    VS_E_INVALID_COMMAND = 3,
    VS_E_INVALID_FORMAT = 4,
    VS_E_FEATURE_UNAVAILABLE = 5,
    VS_E_INVALID_IDENTIFIER = 6,
    VS_E_RESOURCE_NOT_FOUND = 20,
    VS_E_STALE_CLIENT = 30,
    VS_E_UNAUTHENTICATED = 40,
    VS_E_UNAUTHORIZED = 41,
    VS_E_INVALID_CREDENTIALS = 42,
    VS_E_INVALID_USERNAME = 43,
    VS_E_INVALID_PASSWORD = 44,
    VS_E_INVALID_USER_STATUS = 45,
    VS_E_USER_ALREADY_EXISTS = 46,
    VS_E_USER_INACTIVE = 47,
    VS_E_CANNOT_DELETE_USER = 48,
    VS_E_CANNOT_CHANGE_PERMISSIONS = 49,
    VS_E_INVALID_PAT_NAME = 50,
    VS_E_PAT_ALREADY_EXISTS = 51,
    VS_E_PAT_LIMIT_REACHED = 52,
    VS_E_INVALID_PAT = 53,
    VS_E_PAT_EXPIRED = 54,
    VS_E_USERS_LIMIT_REACHED = 55,
    VS_E_INVALID_PAT_EXPIRY = 56,
    VS_E_TRANSIENT_NOT_COMMITTED = 57,
    VS_E_NOT_ACCEPTED = 58,
    VS_E_EMPTY_RESPONSE = 304,
    VS_E_STREAM_ID_NOT_FOUND = 1009,
    VS_E_STREAM_NAME_ALREADY_EXISTS = 1012,
    VS_E_INVALID_TOPIC_SIZE = 1019,
    VS_E_TOO_MANY_STREAMS = 1020,
    VS_E_TOPIC_ID_NOT_FOUND = 2010,
    VS_E_TOPIC_NAME_ALREADY_EXISTS = 2013,
    VS_E_TOO_MANY_PARTITIONS = 2015,
    VS_E_INVALID_REPLICATION_FACTOR = 2018,
    VS_E_INVALID_PARTITIONS_COUNT = 2019,
    VS_E_TOO_MANY_TOPICS = 2021,
    VS_E_PARTITION_NOT_FOUND = 3007,
    VS_E_PARTITION_ID_SPACE_EXHAUSTED = 3013,
    VS_E_CANNOT_READ_CONSUMER_OFFSETS = 3020,
    VS_E_CONSUMER_OFFSET_NOT_FOUND = 3021,
    VS_E_UNSUPPORTED_OPTION_KEY = 4041,
    VS_E_INVALID_OPTION_VALUE = 4042,
    VS_E_SEGMENT_NOT_FOUND = 4000,
    VS_E_CANNOT_SAVE_MESSAGES = 4006,
    VS_E_INVALID_MESSAGES_COUNT = 4009,
    VS_E_TOO_BIG_USER_HEADERS = 4017,
    VS_E_TOO_BIG_MESSAGE_PAYLOAD = 4022,
    VS_E_TOO_MANY_MESSAGES = 4023,
    VS_E_INVALID_MESSAGE_CHECKSUM = 4027,
    VS_E_NON_ZERO_OFFSET = 4031,
    VS_E_NON_ZERO_TIMESTAMP = 4032,
    VS_E_INVALID_MESSAGES_SIZE = 4036,
    VS_E_TOO_SMALL_MESSAGE = 4037,
    VS_E_INVALID_BATCH_CHECKSUM = 4039,
    VS_E_INVALID_OFFSET = 4100,
    VS_E_INVALID_RESERVED_FIELD = 4101,
    VS_E_CONSUMER_GROUP_ID_NOT_FOUND = 5000,
    VS_E_CONSUMER_GROUP_NAME_ALREADY_EXISTS = 5004,
    VS_E_CONSUMER_GROUP_MEMBER_NOT_FOUND = 5006,
    VS_E_CONSUMER_GROUP_PARTITION_NOT_OWNED = 5009,
    VS_E_SNAPSHOT_FILE_COMPLETION_FAILED = 9000,
    VS_E_CANNOT_APPEND_TO_FILE = 10005,
    VS_E_INCOMPATIBLE_PROTOCOL_VERSION = 14003,
    /* vstream's own codes (no Iggy equivalent), from 60000 up; an Iggy
     * SDK reports them as Error carrying the code. */
    /* A metadata change refused for space: the data dir's filesystem is
     * below disk_watermark_bytes (changes that free space -- login,
     * logout, deletes, purges, DeleteSegments -- are still accepted), or
     * a metadata write got ENOSPC (nothing was kept). Sends refused for
     * space answer Iggy's 4006 CannotSaveMessagesToSegment. */
    VS_E_DISK_FULL = 60000,
};

/* The error's name, e.g. "StreamNameAlreadyExists"; "Unknown" otherwise. */
const char *vs_iggy_error_name(uint32_t code);
/* A one-line description, e.g. "stream name already exists". */
const char *vs_iggy_error_str(uint32_t code);

#endif /* VS_COMMON_ERRORS_H */
