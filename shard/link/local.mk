# shard/link: authenticated replica links between the nodes of a cluster
# (shard 0's metadata mesh and the data shards' meshes). Sources append to
# libvs_server.a.
libvs_server_a_SOURCES += shard/link/links.c shard/link/links.h
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_links
check_PROGRAMS += tests/unit/check_links
tests_unit_check_links_SOURCES = tests/unit/check_links.c
tests_unit_check_links_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_links_LDADD = libvs_server.a libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif

