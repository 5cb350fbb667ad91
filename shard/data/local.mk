# shard/data: partitions, segments, indexes, offsets.
# The partition storage engine used by the data shards: batch validation
# and stamping, segments and sparse indexes, recovery, reads, consumer
# offsets, retention, partition directory lifecycle. Tests and a bench.
noinst_LIBRARIES += libvs_data.a
libvs_data_a_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
libvs_data_a_SOURCES = \
	shard/data/batch.c shard/data/batch.h \
	shard/data/segment.c shard/data/segment.h \
	shard/data/partition.c shard/data/partition.h \
	shard/data/pjournal.c shard/data/pjournal.h \
	shard/data/offsets.c \
	shard/data/pdir.c shard/data/pdir.h \
	shard/data/pimage.c shard/data/pimage.h \
	shard/data/pinstall.c shard/data/pinstall.h \
	shard/data/unwritten.c shard/data/unwritten.h

DATA_LDADD = libvs_data.a libvs_storage.a libvs_common.a $(VS_DEP_LIBS)

# Creating many partitions one by one or together (not run by make check).
noinst_PROGRAMS += tests/bench/bench_part_create
tests_bench_bench_part_create_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_part_create_SOURCES = tests/bench/bench_part_create.c
tests_bench_bench_part_create_LDADD = $(DATA_LDADD)

# Append / read micro-benchmark (not run by make check).
noinst_PROGRAMS += tests/bench/bench_data
tests_bench_bench_data_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_data_SOURCES = tests/bench/bench_data.c
tests_bench_bench_data_LDADD = $(DATA_LDADD)

if HAVE_CHECK
DATA_UNIT = tests/unit/check_data_batch tests/unit/check_data_part \
	tests/unit/check_data_pwrite tests/unit/check_data_unwritten
UNIT_TESTS += $(DATA_UNIT)
check_PROGRAMS += $(DATA_UNIT)

tests_unit_check_data_batch_SOURCES = tests/unit/check_data_batch.c
tests_unit_check_data_batch_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_data_batch_LDADD = $(DATA_LDADD) $(CHECK_LIBS)

tests_unit_check_data_unwritten_SOURCES = tests/unit/check_data_unwritten.c
tests_unit_check_data_unwritten_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_data_unwritten_LDADD = $(DATA_LDADD) $(CHECK_LIBS)

tests_unit_check_data_part_SOURCES = tests/unit/check_data_part.c \
	tests/unit/data_testutil.h
tests_unit_check_data_part_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_data_part_LDADD = $(DATA_LDADD) $(CHECK_LIBS)

tests_unit_check_data_pwrite_SOURCES = tests/unit/check_data_pwrite.c \
	tests/unit/data_testutil.h
tests_unit_check_data_pwrite_CFLAGS = $(TEST_CFLAGS) -pthread
tests_unit_check_data_pwrite_LDADD = $(DATA_LDADD) $(CHECK_LIBS) -lpthread
endif

# A real full filesystem (tmpfs mounted by the test; skips when it may
# not mount). Shares the data-plane integration sources of
# shard/serve/data.mk.
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_disk_full
INTEG_TESTS += tests/integration/check_disk_full
tests_integration_check_disk_full_SOURCES = \
	tests/integration/check_disk_full.c $(DATA_SERVE_ITEST_SRC)
tests_integration_check_disk_full_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_disk_full_LDADD = $(DATA_SERVE_ITEST_LDADD)
endif

# vstream-inspect and boot agree over every corruption fixture.
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_verdicts_agree
INTEG_TESTS += tests/integration/check_verdicts_agree
tests_integration_check_verdicts_agree_SOURCES = \
	tests/integration/check_verdicts_agree.c $(DATA_SERVE_ITEST_SRC)
tests_integration_check_verdicts_agree_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_verdicts_agree_LDADD = $(DATA_SERVE_ITEST_LDADD)
endif

# The group-commit API of the partition engine (nosync appends, targets).
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_data_nosync
check_PROGRAMS += tests/unit/check_data_nosync
tests_unit_check_data_nosync_SOURCES = tests/unit/check_data_nosync.c \
	tests/unit/data_testutil.h
tests_unit_check_data_nosync_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_data_nosync_LDADD = $(DATA_LDADD) $(CHECK_LIBS)
endif

# The journal of a replicated partition (.vsr records, vsr_state).
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_pjournal
check_PROGRAMS += tests/unit/check_pjournal
tests_unit_check_pjournal_SOURCES = tests/unit/check_pjournal.c \
	tests/unit/data_testutil.h
tests_unit_check_pjournal_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_pjournal_LDADD = $(DATA_LDADD) $(CHECK_LIBS)
endif

# Journal cost beside the unreplicated append (not run by make check).
noinst_PROGRAMS += tests/bench/bench_pjournal
tests_bench_bench_pjournal_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_pjournal_SOURCES = tests/bench/bench_pjournal.c
tests_bench_bench_pjournal_LDADD = $(DATA_LDADD)
