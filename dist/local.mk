# dist/: systemd unit and example configuration.
systemdsystemunitdir = $(prefix)/lib/systemd/system
systemdsystemunit_DATA = dist/vstreamd.service
vstreamconfdir = $(sysconfdir)/vstream
vstreamconf_DATA = dist/vstreamd.conf.example
EXTRA_DIST += dist/vstreamd.service.in dist/vstreamd.conf.example
CLEANFILES += dist/vstreamd.service
dist/vstreamd.service: $(srcdir)/dist/vstreamd.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) dist && sed -e 's|@sbindir[@]|$(sbindir)|g' \
	  -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
	  $(srcdir)/dist/vstreamd.service.in > $@
