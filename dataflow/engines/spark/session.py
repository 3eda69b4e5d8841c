"""Start or join a Spark session: an active one, the given master, or a local ``local[*]`` on 127.0.0.1."""
from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
import warnings

__all__ = ["LOCAL_CONF", "WRITE_CONFS", "ensure_spark", "session_confs", "startup_seconds"]

#: Settings of the session dataflow starts itself (no master given).
LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": str(max(4, 2 * (os.cpu_count() or 2))),
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Spark SQL expressions read and format times in UTC, as DuckDB does on Ray.
    "spark.sql.session.timeZone": "UTC",
    # Off: PySpark would record the Python call site of every Column call (several JVM round
    # trips each) for error messages, and those call sites are dataflow's own lines.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # A read of more than 32 paths (a shard names its files) lists them with a Spark job; in one
    # local JVM that job only adds ~0.2 s per read to a listing the driver does at once.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
}
#: Settings of dataflow's writes in any session: timestamps as Parquet's TIMESTAMP(MICROS) (what Arrow and Ray
#: write, read back as the same type), not Spark's legacy INT96 (read elsewhere as a timestamp[ns] without its zone).
WRITE_CONFS = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}
_STARTUP: dict[str, float] = {}
_log = logging.getLogger(__name__)


def startup_seconds() -> float | None:
    """Seconds the session this process started took to come up (None if it joined one)."""
    return _STARTUP.get("seconds")


def ensure_spark(master: str | None = None):
    """Return the active SparkSession, or start one.

    Args:
        master: A Spark master URL; default ``SPARK_MASTER``, else a local ``local[*]`` session bound
            to 127.0.0.1 with the UI off and scratch space in a temporary folder. When a session is
            already active it is joined, with a ``RuntimeWarning`` if it runs on another master.
    """
    from pyspark.sql import SparkSession

    # NOTE: PySpark 4.3 warns on every Arrow UDF that it "does not yet fully support pandas >= 3";
    # dataflow's Spark path hands Arrow batches, not pandas, to Python.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    master = master or os.environ.get("SPARK_MASTER")
    active = SparkSession.getActiveSession()
    if active is not None:
        running = active.sparkContext.master
        if master and master != running:
            # NOTE: a process holds one SparkContext; its master cannot change until it stops.
            warnings.warn(
                f"Spark master {master!r} (--spark-master / SPARK_MASTER) is ignored: this process already runs a Spark "
                f"session on {running!r}, which dataflow joins (stop it first to use {master!r})",
                RuntimeWarning,
                stacklevel=2,
            )
        return active
    builder = SparkSession.builder.appName("dataflow")
    if not master or master.startswith("local"):
        # NOTE: keeps a local Spark on loopback instead of the machine's network interface.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.master(master or "local[*]")
        for key, value in LOCAL_CONF.items():
            builder = builder.config(key, value)
        builder = builder.config("spark.local.dir", tempfile.mkdtemp(prefix="dataflow-spark-"))
        builder = builder.config("spark.driver.memory", os.environ.get("DATAFLOW_SPARK_DRIVER_MEMORY", "2g"))
    else:
        builder = builder.master(master)
    start = time.monotonic()
    spark = builder.getOrCreate()
    _STARTUP["seconds"] = time.monotonic() - start
    spark.sparkContext.setLogLevel("ERROR")
    _log.info("started Spark %s (%s) in %.1f s", spark.version, spark.sparkContext.master, _STARTUP["seconds"])
    return spark


@contextlib.contextmanager
def session_confs(spark, confs: dict[str, str]):
    """Set ``confs`` on the session while dataflow's actions run; its own settings are restored afterwards."""
    before = {k: spark.conf.get(k, None) for k in confs}
    for k, v in confs.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
