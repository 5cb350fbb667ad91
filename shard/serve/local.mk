# shard/serve: the client protocol on the data shards (issue 6).
# Sources are appended to libvs_server.a (listed in server/local.mk).
