# shard/storage: superblock, WAL, snapshot file, atomic files, recovery
# verdicts, data-dir lock; the vstream-inspect tool; their tests and bench.
noinst_LIBRARIES += libvs_storage.a
libvs_storage_a_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
libvs_storage_a_SOURCES = \
	shard/storage/io.c shard/storage/io.h \
	shard/storage/atomic_file.c shard/storage/atomic_file.h \
	shard/storage/vsr_state.c shard/storage/vsr_state.h \
	shard/storage/superblock.c shard/storage/superblock.h \
	shard/storage/journal.c shard/storage/journal.h \
	shard/storage/snapshot_file.c shard/storage/snapshot_file.h \
	shard/storage/recovery.c shard/storage/recovery.h \
	shard/storage/datadir.c shard/storage/datadir.h
