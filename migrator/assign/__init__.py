"""Pure assignment functions: the legacy range and roundrobin assignors, and the thread-level subdivision
of a Kafka assignment. No I/O here; every function is deterministic over immutable inputs."""
