# shard/serve data plane (issue 7): the owned partitions of a data shard
# and send / poll / offsets / flush with forwarding between data shards.
# Sources are appended to libvs_server.a (listed in server/local.mk); the
# partition engine is libvs_data.a (shard/data/local.mk).
libvs_server_a_SOURCES += \
	shard/serve/data.c shard/serve/data.h \
	shard/serve/parts.c shard/serve/parts.h
