# server/: vstreamd, the supervisor.
sbin_PROGRAMS += vstreamd
vstreamd_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
vstreamd_SOURCES = server/vstreamd.c
vstreamd_LDADD = libvs_common.a $(VS_DEP_LIBS) $(JEMALLOC_LIBS)
