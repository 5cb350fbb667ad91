# shard/commit: shard 0's commit path (issue 6): VSR engine binding,
# client table, replies, checkpoints. Sources append to libvs_server.a.
