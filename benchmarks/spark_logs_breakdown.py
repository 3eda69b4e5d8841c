"""Where dataflow-on-Spark's time goes on the logs workload, against the hand-written PySpark query.

Builds the query of ``benchmarks/spark_logs.py`` six ways and runs each into Spark's ``noop``
sink (no write, no runner, no commit), in alternated rounds, reading each run's executor CPU from
the Spark UI's REST API (bound to 127.0.0.1 in this process only): the hand-written query, the
same with one task per file, and dataflow's frames (``run.build_frames``) with and without lineage
and observations. Executor CPU is steadier than wall time on a shared machine; the differences
between rows attribute the extra cost to one task per file, the corrupt-record check, lineage and
the read's observation. Driver-side time (alignment check, planning, commit) is not in these figures.

Usage: python benchmarks/spark_logs_breakdown.py [--lines 2000000] [--rounds 2] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import spark_logs  # noqa: E402


def _session():
    from pyspark.sql import SparkSession

    from dataflow.engines.spark.session import LOCAL_CONF

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName("dataflow-breakdown").master("local[*]")
    for key, value in {**LOCAL_CONF, "spark.ui.enabled": "true", "spark.ui.port": "0", "spark.driver.memory": "2g"}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()  # ensure_spark joins it: the frames below run on this session
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _hand(spark, data: pathlib.Path):
    from pyspark.sql import functions as F

    schema = "ts STRING, host STRING, level STRING, service STRING, latency_ms DOUBLE, msg STRING, ctx STRUCT<region: STRING, pod: STRING, attempt: INT>"
    logs = spark.read.schema(schema).json(str(data))
    return (logs.where((F.col("level") != "DEBUG") & F.col("service").isNotNull()).withColumn("code", F.regexp_extract("msg", r"code=(\d+)", 1))
            .groupBy("service", "level").agg(
                F.count(F.lit(1)).alias("n"), F.avg("latency_ms").alias("avg_latency_ms"), F.percentile_approx("latency_ms", 0.95).alias("p95_latency_ms"),
                F.count_if(F.col("code").like("5%")).alias("server_errors"), F.count_if(F.col("ctx.region") == "eu-west").alias("eu")))


def _ours(spark, data: pathlib.Path, scratch: pathlib.Path, lineage: bool, observe: bool):
    from connectors.registry import list_files
    from dataflow.dsl.parse import parse_pipeline
    from dataflow.engines.registry import compile_pipeline
    from dataflow.engines.spark.run import build_frames
    from dataflow.runtime.stats import SideOutputs

    doc = json.loads(json.dumps(spark_logs.PIPELINE))
    doc["engine"], doc["source"]["uri"], doc["sink"]["uri"], doc["sink"]["lineage"] = "spark", str(data), str(scratch), lineage
    job = compile_pipeline(parse_pipeline(doc))[-1]
    side = SideOutputs(uri=str(scratch), storage_options={}, stats_dir=str(scratch / "_stats"), errors_dir=str(scratch / "_errors"))
    return build_frames(spark, job, list_files(str(data), "jsonl", {}), side, {}, observe=observe, fast_json=True).output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=2, help="measured rounds after one warm-up round")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="dataflow-breakdown-"))
    data = work / "logs"
    if not data.exists():
        spark_logs.generate(data, args.lines)
    spark = _session()
    from dataflow.engines.spark.json_fast import one_task_per_file

    sc = spark.sparkContext
    api = f"http://127.0.0.1:{sc.uiWebUrl.rsplit(':', 1)[1]}/api/v1/applications/{sc.applicationId}/stages"
    variants = {  # name -> (frame, one task per file)
        "pyspark": (lambda: _hand(spark, data), False),
        "pyspark one task per file": (lambda: _hand(spark, data), True),
        "dataflow no lineage, no obs": (lambda: _ours(spark, data, work / "scratch", False, False), True),
        "dataflow no lineage": (lambda: _ours(spark, data, work / "scratch", False, True), True),
        "dataflow no observations": (lambda: _ours(spark, data, work / "scratch", True, False), True),
        "dataflow": (lambda: _ours(spark, data, work / "scratch", True, True), True),
    }
    seen: set[int] = set()
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
    for r in range(args.rounds + 1):
        for name in list(variants) if r % 2 == 0 else list(reversed(variants)):
            make, whole_files = variants[name]
            df = make()
            start = time.monotonic()
            if whole_files:
                with one_task_per_file(spark):
                    df.write.format("noop").mode("overwrite").save()
            else:
                df.write.format("noop").mode("overwrite").save()
            wall = time.monotonic() - start
            stages = json.load(urllib.request.urlopen(api))
            cpu = sum(s["executorCpuTime"] for s in stages if s["stageId"] not in seen and s["status"] == "COMPLETE") / 1e9
            seen.update(s["stageId"] for s in stages if s["status"] == "COMPLETE")
            if r:
                got[name].append((wall, cpu))
            print(f"  round {r} {name:28s} wall {wall:5.2f} s, executor CPU {cpu:5.2f} s{' (warm-up)' if r == 0 else ''}", flush=True)
    base = statistics.median(c for _, c in got["pyspark"])
    print(f"{'variant':28s} {'wall':>6s} {'CPU':>6s} {'CPU vs pyspark':>15s}")
    for name, runs in got.items():
        cpu = statistics.median(c for _, c in runs)
        print(f"{name:28s} {statistics.median(w for w, _ in runs):6.2f} {cpu:6.2f} {cpu - base:+15.2f}")
    print(json.dumps({"lines": args.lines, "load_avg": os.getloadavg()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
