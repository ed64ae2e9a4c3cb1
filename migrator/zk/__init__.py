"""ZooKeeper adapters: the legacy layout (paths, codecs) and thin I/O around kazoo."""
