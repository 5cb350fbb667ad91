# shard/link: authenticated replica links between the nodes of a cluster
# (shard 0's metadata mesh and the data shards' meshes). Sources append to
# libvs_server.a.
libvs_server_a_SOURCES += shard/link/links.c shard/link/links.h \
	shard/link/beat.c shard/link/beat.h \
	shard/link/coalesce.c shard/link/coalesce.h \
	shard/link/mesh.c shard/link/mesh.h \
	shard/link/plan.c shard/link/plan.h \
	shard/link/replica_tls.c shard/link/replica_tls.h
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_links
check_PROGRAMS += tests/unit/check_links
tests_unit_check_links_SOURCES = tests/unit/check_links.c \
	tests/unit/link_fixture.h
tests_unit_check_links_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_links_LDADD = libvs_server.a libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif


# The coalesced beat frame codec, the pending tables, the address plan
# and a data-shard mesh (10,000 groups per tick, back-pressure).
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_dlinks
check_PROGRAMS += tests/unit/check_dlinks
tests_unit_check_dlinks_SOURCES = tests/unit/check_dlinks.c \
	tests/unit/link_fixture.h
tests_unit_check_dlinks_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_dlinks_LDADD = libvs_server.a libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif

# The data shards' links of a real 3-node cluster (2 shards a node): up,
# down with a SIGKILLed node and back, a wrong secret refused.
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_cluster_dlinks
INTEG_TESTS += tests/integration/check_cluster_dlinks
INTEG_FAST_TESTS += tests/integration/check_cluster_dlinks
tests_integration_check_cluster_dlinks_SOURCES = \
	tests/integration/check_cluster_dlinks.c $(CLUSTER_COMMON)
tests_integration_check_cluster_dlinks_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_dlinks_LDADD = $(CLUSTER_LDADD)
endif

# In-process bench of the coalesced beats (not run by make check).
noinst_PROGRAMS += tests/bench/bench_beat
tests_bench_bench_beat_SOURCES = tests/bench/bench_beat.c
tests_bench_bench_beat_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_beat_LDADD = libvs_server.a libvs_common.a $(VS_DEP_LIBS)
