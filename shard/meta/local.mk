# shard/meta: the metadata state machine, snapshot codec, client table,
# authorization and secrets (libvs_meta.a), its unit tests and its bench.
noinst_LIBRARIES += libvs_meta.a
libvs_meta_a_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
libvs_meta_a_SOURCES = \
	shard/meta/apply.c shard/meta/apply.h \
	shard/meta/authz.c shard/meta/authz.h \
	shard/meta/client_table.c shard/meta/client_table.h \
	shard/meta/grants.c shard/meta/grants.h \
	shard/meta/index.c shard/meta/index.h \
	shard/meta/lookup.c shard/meta/lookup.h \
	shard/meta/mpack.c shard/meta/mpack.h \
	shard/meta/ops.c shard/meta/ops.h \
	shard/meta/records.c shard/meta/records.h \
	shard/meta/secrets.c shard/meta/secrets.h \
	shard/meta/snapshot_codec.c shard/meta/snapshot_codec.h \
	shard/meta/state.c shard/meta/state.h

if HAVE_CHECK
META_TEST_LIBS = libvs_meta.a libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
UNIT_TESTS += tests/unit/check_meta_apply
check_PROGRAMS += tests/unit/check_meta_apply
tests_unit_check_meta_apply_SOURCES = tests/unit/check_meta_apply.c \
	tests/unit/meta_helpers.h
tests_unit_check_meta_apply_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_meta_apply_LDADD = $(META_TEST_LIBS)

UNIT_TESTS += tests/unit/check_meta_snapshot
check_PROGRAMS += tests/unit/check_meta_snapshot
tests_unit_check_meta_snapshot_SOURCES = tests/unit/check_meta_snapshot.c \
	tests/unit/meta_helpers.h tests/unit/meta_fixture.h
tests_unit_check_meta_snapshot_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_meta_snapshot_LDADD = $(META_TEST_LIBS)

UNIT_TESTS += tests/unit/check_meta_client_table
check_PROGRAMS += tests/unit/check_meta_client_table
tests_unit_check_meta_client_table_SOURCES = \
	tests/unit/check_meta_client_table.c tests/unit/meta_helpers.h \
	tests/unit/meta_fixture.h
tests_unit_check_meta_client_table_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_meta_client_table_LDADD = $(META_TEST_LIBS)

UNIT_TESTS += tests/unit/check_meta_model
check_PROGRAMS += tests/unit/check_meta_model
tests_unit_check_meta_model_SOURCES = tests/unit/check_meta_model.c \
	tests/unit/meta_helpers.h tests/model/meta_model.c tests/model/meta_model.h
tests_unit_check_meta_model_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_meta_model_LDADD = $(META_TEST_LIBS)
endif
EXTRA_DIST += tests/fixtures/meta_snapshot_v1.bin

# Micro-benchmark, not run by make check (results in the report).
noinst_PROGRAMS += tests/bench/bench_meta
tests_bench_bench_meta_SOURCES = tests/bench/bench_meta.c
tests_bench_bench_meta_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_meta_LDADD = libvs_meta.a libvs_common.a $(VS_DEP_LIBS)
