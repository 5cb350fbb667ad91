# tests/fuzz: libFuzzer targets, one per decoder of bytes from outside.
# Built only in a --enable-fuzz tree (CC=clang; tools/fuzz makes one in
# build-fuzz/). Each target's committed seed corpus is
# tests/fuzz/corpus/<target>/ and its crash regressions
# tests/fuzz/regressions/<target>/ (both distributed).
FUZZ_TARGETS = \
	tests/fuzz/fuzz_config \
	tests/fuzz/fuzz_superblock \
	tests/fuzz/fuzz_batch \
	tests/fuzz/fuzz_wal \
	tests/fuzz/fuzz_snapshot \
	tests/fuzz/fuzz_client_table \
	tests/fuzz/fuzz_client_reply \
	tests/fuzz/fuzz_partition \
	tests/fuzz/fuzz_request \
	tests/fuzz/fuzz_frames \
	tests/fuzz/fuzz_replica \
	tests/fuzz/fuzz_beat \
	tests/fuzz/fuzz_handoff

if ENABLE_FUZZ
noinst_PROGRAMS += $(FUZZ_TARGETS) tests/fuzz/fuzz_seeds
endif

FUZZ_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
FUZZ_LINK = $(AM_LDFLAGS) $(FUZZ_LDFLAGS)
FUZZ_UTIL = tests/fuzz/fuzz_util.c tests/fuzz/fuzz_util.h

tests_fuzz_fuzz_config_SOURCES = tests/fuzz/fuzz_config.c $(FUZZ_UTIL)
tests_fuzz_fuzz_config_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_config_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_config_LDADD = libvs_common.a $(VS_DEP_LIBS)

tests_fuzz_fuzz_superblock_SOURCES = tests/fuzz/fuzz_superblock.c $(FUZZ_UTIL)
tests_fuzz_fuzz_superblock_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_superblock_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_superblock_LDADD = libvs_storage.a libvs_common.a $(VS_DEP_LIBS)

tests_fuzz_fuzz_batch_SOURCES = tests/fuzz/fuzz_batch.c $(FUZZ_UTIL)
tests_fuzz_fuzz_batch_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_batch_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_batch_LDADD = libvs_data.a libvs_storage.a libvs_common.a \
	$(VS_DEP_LIBS)

tests_fuzz_fuzz_wal_SOURCES = tests/fuzz/fuzz_wal.c $(FUZZ_UTIL)
tests_fuzz_fuzz_wal_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_wal_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_wal_LDADD = libvs_storage.a libvs_common.a $(VS_DEP_LIBS)

tests_fuzz_fuzz_snapshot_SOURCES = tests/fuzz/fuzz_snapshot.c $(FUZZ_UTIL) \
	tests/unit/meta_helpers.h
tests_fuzz_fuzz_snapshot_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_snapshot_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_snapshot_LDADD = libvs_meta.a libvs_storage.a libvs_common.a \
	$(VS_DEP_LIBS)

tests_fuzz_fuzz_client_table_SOURCES = tests/fuzz/fuzz_client_table.c \
	$(FUZZ_UTIL) tests/unit/meta_helpers.h
tests_fuzz_fuzz_client_table_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_client_table_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_client_table_LDADD = libvs_meta.a libvs_common.a \
	$(VS_DEP_LIBS)

tests_fuzz_fuzz_client_reply_SOURCES = tests/fuzz/fuzz_client_reply.c \
	$(FUZZ_UTIL)
tests_fuzz_fuzz_client_reply_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_client_reply_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_client_reply_LDADD = libvs_client.a libvs_data.a \
	libvs_storage.a libvs_common.a $(VS_DEP_LIBS)

tests_fuzz_fuzz_partition_SOURCES = tests/fuzz/fuzz_partition.c $(FUZZ_UTIL)
tests_fuzz_fuzz_partition_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_partition_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_partition_LDADD = libvs_data.a libvs_storage.a \
	libvs_common.a $(VS_DEP_LIBS)

tests_fuzz_fuzz_request_SOURCES = tests/fuzz/fuzz_request.c $(FUZZ_UTIL)
tests_fuzz_fuzz_request_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_request_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_request_LDADD = libvs_server.a libvs_meta.a libvs_data.a \
	libvs_storage.a libvs_common.a $(VS_DEP_LIBS)

tests_fuzz_fuzz_frames_SOURCES = tests/fuzz/fuzz_frames.c $(FUZZ_UTIL)
tests_fuzz_fuzz_frames_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_frames_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_frames_LDADD = libvs_server.a libvs_client.a libvs_meta.a \
	libvs_data.a libvs_storage.a libvs_common.a $(VS_DEP_LIBS)

# The seed corpus generator (a plain program, not a fuzz target).
tests_fuzz_fuzz_seeds_SOURCES = tests/fuzz/fuzz_seeds.c \
	tests/unit/meta_helpers.h tests/unit/meta_fixture.h
tests_fuzz_fuzz_seeds_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_seeds_LDADD = libvs_server.a libvs_client.a libvs_meta.a libvs_data.a libvs_storage.a \
	libvs_common.a $(VS_DEP_LIBS)

EXTRA_DIST += tests/fuzz/corpus tests/fuzz/regressions tools/fuzz

tests_fuzz_fuzz_handoff_SOURCES = tests/fuzz/fuzz_handoff.c $(FUZZ_UTIL)
tests_fuzz_fuzz_handoff_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_handoff_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_handoff_LDADD = libvs_ipc.a libvs_common.a $(VS_DEP_LIBS)

tests_fuzz_fuzz_replica_SOURCES = tests/fuzz/fuzz_replica.c $(FUZZ_UTIL)
tests_fuzz_fuzz_replica_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_replica_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_replica_LDADD = libvs_vsr.a libvs_common.a $(VS_DEP_LIBS)

tests_fuzz_fuzz_beat_SOURCES = tests/fuzz/fuzz_beat.c $(FUZZ_UTIL)
tests_fuzz_fuzz_beat_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_beat_LDFLAGS = $(FUZZ_LINK)
tests_fuzz_fuzz_beat_LDADD = libvs_server.a libvs_common.a $(VS_DEP_LIBS)
