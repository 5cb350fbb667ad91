# tools/: vstream (CLI), vstream-inspect, vstream-bench, client library.
