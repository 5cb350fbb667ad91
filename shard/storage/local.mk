# shard/storage: superblock, WAL, snapshot file, atomic files, recovery
# verdicts, data-dir lock; the vstream-inspect tool; their tests and bench.
noinst_LIBRARIES += libvs_storage.a
libvs_storage_a_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
libvs_storage_a_SOURCES = \
	shard/storage/io.c shard/storage/io.h \
	shard/storage/io_dir.c \
	shard/storage/atomic_file.c shard/storage/atomic_file.h \
	shard/storage/vsr_state.c shard/storage/vsr_state.h \
	shard/storage/superblock.c shard/storage/superblock.h \
	shard/storage/journal.c shard/storage/journal.h \
	shard/storage/wal_mark.c shard/storage/wal_mark.h \
	shard/storage/snapshot_file.c shard/storage/snapshot_file.h \
	shard/storage/recovery.c shard/storage/recovery.h \
	shard/storage/datadir.c shard/storage/datadir.h

# vstream-inspect: the recovery verdict of a data dir, read-only.
bin_PROGRAMS += vstream-inspect
vstream_inspect_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
vstream_inspect_SOURCES = tools/vstream-inspect.c
vstream_inspect_LDADD = libvs_data.a libvs_storage.a libvs_common.a \
	$(VS_DEP_LIBS) $(JEMALLOC_LIBS)

# WAL micro-benchmark (not run by make check).
noinst_PROGRAMS += tests/bench/bench_wal
tests_bench_bench_wal_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_wal_SOURCES = tests/bench/bench_wal.c
tests_bench_bench_wal_LDADD = libvs_storage.a libvs_common.a $(VS_DEP_LIBS)

if HAVE_CHECK
STORAGE_UNIT = tests/unit/check_storage_io tests/unit/check_storage_sb \
	tests/unit/check_storage_wal tests/unit/check_storage_snap \
	tests/unit/check_storage_recovery
UNIT_TESTS += $(STORAGE_UNIT)
check_PROGRAMS += $(STORAGE_UNIT) tests/integration/check_inspect
INTEG_TESTS += tests/integration/check_inspect
INTEG_FAST_TESTS += tests/integration/check_inspect

STORAGE_TEST_LDADD = libvs_storage.a libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)

# directory operations through the I/O layer, with the fault injector
UNIT_TESTS += tests/unit/check_storage_dirops
check_PROGRAMS += tests/unit/check_storage_dirops
tests_unit_check_storage_dirops_SOURCES = tests/unit/check_storage_dirops.c
tests_unit_check_storage_dirops_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_storage_dirops_LDADD = libvs_data.a libvs_storage.a \
	libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_storage_io_SOURCES = tests/unit/check_storage_io.c \
	tests/unit/storage_testutil.h
tests_unit_check_storage_io_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_storage_io_LDADD = $(STORAGE_TEST_LDADD)

tests_unit_check_storage_sb_SOURCES = tests/unit/check_storage_sb.c \
	tests/unit/storage_testutil.h
tests_unit_check_storage_sb_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_storage_sb_LDADD = $(STORAGE_TEST_LDADD)

tests_unit_check_storage_wal_SOURCES = tests/unit/check_storage_wal.c \
	tests/unit/storage_testutil.h
tests_unit_check_storage_wal_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_storage_wal_LDADD = $(STORAGE_TEST_LDADD)

tests_unit_check_storage_snap_SOURCES = tests/unit/check_storage_snap.c \
	tests/unit/storage_testutil.h
tests_unit_check_storage_snap_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_storage_snap_LDADD = $(STORAGE_TEST_LDADD)

tests_unit_check_storage_recovery_SOURCES = \
	tests/unit/check_storage_recovery.c tests/unit/storage_testutil.h
tests_unit_check_storage_recovery_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_storage_recovery_LDADD = $(STORAGE_TEST_LDADD)

tests_integration_check_inspect_SOURCES = \
	tests/integration/check_inspect.c tests/unit/storage_testutil.h
tests_integration_check_inspect_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_inspect_LDADD = $(STORAGE_TEST_LDADD)
endif

# Bounded, verifying reads of snapshot.bin for state transfer.
libvs_storage_a_SOURCES += shard/storage/snapshot_reader.c \
	shard/storage/snapshot_reader.h
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_storage_snapreader
check_PROGRAMS += tests/unit/check_storage_snapreader
tests_unit_check_storage_snapreader_SOURCES = \
	tests/unit/check_storage_snapreader.c
tests_unit_check_storage_snapreader_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_storage_snapreader_LDADD = $(STORAGE_TEST_LDADD)
endif

# The storage half of a state-transfer install (journal cut, snapshot,
# journal emptied), the header a checkpoint pairing records, and the
# crash sweep over them.
libvs_storage_a_SOURCES += shard/storage/snapshot_install.c \
	shard/storage/snapshot_install.h \
	shard/storage/checkpoint_header.c shard/storage/checkpoint_header.h
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_storage_snapinst
check_PROGRAMS += tests/unit/check_storage_snapinst
tests_unit_check_storage_snapinst_SOURCES = \
	tests/unit/check_storage_snapinst.c tests/unit/storage_testutil.h
tests_unit_check_storage_snapinst_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_storage_snapinst_LDADD = libvs_storage.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)
endif
