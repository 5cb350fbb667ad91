# shard/link: authenticated replica links between the nodes of a cluster
# (shard 0's metadata mesh and the data shards' meshes). Sources append to
# libvs_server.a.
libvs_server_a_SOURCES += shard/link/links.c shard/link/links.h \
	shard/link/beat.c shard/link/beat.h \
	shard/link/coalesce.c shard/link/coalesce.h \
	shard/link/mesh.c shard/link/mesh.h \
	shard/link/plan.c shard/link/plan.h
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_links
check_PROGRAMS += tests/unit/check_links
tests_unit_check_links_SOURCES = tests/unit/check_links.c
tests_unit_check_links_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_links_LDADD = libvs_server.a libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif


# The coalesced beat frame codec, the pending tables, the address plan
# and a data-shard mesh (10,000 groups per tick, back-pressure).
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_dlinks
check_PROGRAMS += tests/unit/check_dlinks
tests_unit_check_dlinks_SOURCES = tests/unit/check_dlinks.c
tests_unit_check_dlinks_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_dlinks_LDADD = libvs_server.a libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif
