"""`migrator demo`: a live group migrated from ZooKeeper to Kafka coordination and rolled back, judged by the
independent observer. Also the workload pieces the benchmarks reuse (`migrator.demo.workload`)."""

from migrator.demo.run import DemoResult, run_demo

__all__ = ["DemoResult", "run_demo"]
