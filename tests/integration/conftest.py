"""Session fixtures: one real local Ray, one local Spark and one S3 server (moto) per test run, loopback only."""
from __future__ import annotations

import os
import tempfile

import pytest


@pytest.fixture(scope="session")
def ray_local():
    """A real local Ray on 127.0.0.1 with 2 CPUs; the engine reuses it (no second cluster)."""
    import ray

    home = tempfile.mkdtemp(prefix="dataflow-ray-home-")
    os.environ["HOME"] = home  # Ray writes its auth token under $HOME/.ray
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=512 * 1024 * 1024, logging_level="WARNING")
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real S3 API over HTTP: moto's server on 127.0.0.1 (a free port), for the whole session.

    Dummy credentials are set in the environment for the session; tests also pass them in
    ``storage.options.s3`` so Ray workers need no environment. Yields the endpoint URL.
    """
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def spark_local():
    """A real local Spark (``local[2]``, UI off, 4 shuffle partitions) on 127.0.0.1; the engine reuses it.

    Its start-up time is printed once (``-s`` shows it): about 12-20 s on a 2-core machine.
    """
    import time

    from pyspark.sql import SparkSession

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    start = time.monotonic()
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("dataflow-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")  # as dataflow's own sessions (engines/spark/session.py)
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.local.dir", tempfile.mkdtemp(prefix="dataflow-spark-tests-"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    print(f"\nspark_local: SparkSession {spark.version} started in {time.monotonic() - start:.1f} s")
    yield spark
    spark.stop()
