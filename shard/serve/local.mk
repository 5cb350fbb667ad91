# shard/serve: the client protocol on the data shards (issue 6).
# Sources are appended to libvs_server.a (listed in server/local.mk).
libvs_server_a_SOURCES += \
	shard/serve/conn.c \
	shard/serve/hasher.c shard/serve/hasher.h \
	shard/serve/login.c \
	shard/serve/options.c shard/serve/options.h \
	shard/serve/propose.c \
	shard/serve/proto.c shard/serve/proto.h \
	shard/serve/reads.c shard/serve/reads.h \
	shard/serve/serve.c shard/serve/serve.h \
	shard/serve/server.h
