# shard/storage: sources of this module (see the root Makefile.am).
