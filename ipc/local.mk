# ipc: sources of this module (see the root Makefile.am).
