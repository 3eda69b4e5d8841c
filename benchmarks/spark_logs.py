"""The logs workload of ``benchmarks/spark_table.py`` (``--workload logs``): JSON log lines -> filter -> columns -> aggregate.

It generates ``--lines`` JSON log lines (switch and application logs: ts, host, level, service,
latency_ms, msg, a nested ``ctx`` object) in 32 files, then times, in alternated rounds, four jobs
over the same files that give the same groups: dataflow's pipeline (``PIPELINE``: a ``jsonl`` source
with the declared schema the hand-written jobs use, ``filter_rows``, struct field access and
``regexp_extract`` in ``with_columns``, ``aggregate`` with count, avg and ``percentile_approx``) on Spark and on Ray (DuckDB scanning each read task's files inside the fused query, ``dataflow.engines.ray.fused_read``), a hand-written
PySpark job and a hand-written DuckDB query. It prints each job's median with min and max, and
the ratios dataflow-on-Spark / PySpark (target <= 1.05) and dataflow-on-Ray / DuckDB (target <= 1.3).
``--gzip`` writes the files gzipped (``logs-000.jsonl.gz``), read so by all four jobs. ``--untyped``
declares no schema: dataflow's source has none (Ray types each batch of lines, Spark infers from a
sample), PySpark's reader infers it (a pass over all lines first), DuckDB's ``read_ndjson`` detects it.
There is no target for it; the ratios are printed for reference.
"""
from __future__ import annotations

import glob
import gzip
import json
import os
import pathlib
import random
import shutil
import statistics
import time

FILES = 32
SERVICES = ["auth", "billing", "search", "gateway", "inventory", "lldp", "bgp", "stp"]
LEVELS = ["DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR"]
MSGS = ["request served code={code} path=/api/v1/{svc}", "upstream timeout after {lat} ms code={code}",
        "%LINK-3-UPDOWN: Interface Eth1/{port}, changed state to down", "neighbor 10.0.{port}.1 Down code={code}"]

SCHEMA = {"ts": "string", "host": "string", "level": "string", "service": "string", "latency_ms": "double", "msg": "string",
          "ctx": "struct<region: string, pod: string, attempt: int>"}

PIPELINE = {  # the declared schema is the one the hand-written jobs give their JSON readers
    "name": "logs", "source": {"uri": "", "format": "jsonl", "options": {"schema": SCHEMA}},
    "steps": [
        {"op": "table.filter_rows", "params": {"where": "level <> 'DEBUG' AND service IS NOT NULL"}},
        {"op": "table.with_columns", "params": {"columns": {
            "region": "ctx.region", "code": r"regexp_extract(msg, 'code=(\\d+)', 1)"}}},
        {"op": "table.aggregate", "params": {"keys": ["service", "level"], "aggregations": {
            "n": "count(*)", "avg_latency_ms": "avg(latency_ms)", "p95_latency_ms": "percentile_approx(latency_ms, 0.95)",
            "server_errors": "count_if(code LIKE '5%')", "eu": "count_if(region = 'eu-west')"}}},
        {"op": "table.select", "params": {"columns": ["service", "level", "n", "avg_latency_ms", "p95_latency_ms", "server_errors", "eu"]}},
    ],
    "sink": {"uri": "", "format": "parquet", "mode": "overwrite"},
}

DUCKDB_QUERY = r"""
COPY (
  SELECT service, level, count(*) AS n, avg(latency_ms) AS avg_latency_ms, quantile_disc(latency_ms, 0.95) AS p95_latency_ms,
         count_if(regexp_extract(msg, 'code=(\d+)', 1) LIKE '5%') AS server_errors, count_if(ctx.region = 'eu-west') AS eu
  FROM read_ndjson('{data}/*.jsonl*', columns = {{ts: 'VARCHAR', host: 'VARCHAR', level: 'VARCHAR', service: 'VARCHAR',
       latency_ms: 'DOUBLE', msg: 'VARCHAR', ctx: 'STRUCT(region VARCHAR, pod VARCHAR, attempt INTEGER)'}})
  WHERE level <> 'DEBUG' AND service IS NOT NULL
  GROUP BY service, level
) TO '{out}/result.parquet' (FORMAT parquet)
"""


def generate(data: pathlib.Path, lines: int, seed: int = 7, packed: bool = False) -> int:
    """Write ``lines`` JSON log lines in ``FILES`` files (``packed``: gzipped); returns the bytes of the lines."""
    rng = random.Random(seed)
    data.mkdir(parents=True, exist_ok=True)
    total, per_file = 0, -(-lines // FILES)
    for k in range(FILES):
        out = []
        for i in range(min(per_file, lines - k * per_file)):
            svc, lat, port = rng.choice(SERVICES), round(rng.lognormvariate(3.5, 0.8), 2), rng.randrange(1, 48)
            code = rng.choice([200, 200, 200, 201, 404, 500, 503])
            out.append(json.dumps({"ts": f"2026-12-04T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z", "host": f"sw{rng.randrange(1, 64)}",
                                   "level": rng.choice(LEVELS), "service": svc, "latency_ms": lat,
                                   "msg": rng.choice(MSGS).format(code=code, svc=svc, lat=lat, port=port),
                                   "ctx": {"region": rng.choice(["eu-west", "us-east", "ap-south"]), "pod": f"{svc}-{rng.randrange(9)}", "attempt": rng.randrange(3)}}))
        body = ("\n".join(out) + "\n").encode()
        if packed:
            (data / f"logs-{k:03d}.jsonl.gz").write_bytes(gzip.compress(body, compresslevel=6))
        else:
            (data / f"logs-{k:03d}.jsonl").write_bytes(body)
        total += len(body)
    return total


def _groups(folder: pathlib.Path) -> dict[tuple[str, str], int]:
    import pyarrow.parquet as pq

    rows = [r for f in sorted(glob.glob(str(folder / "*.parquet"))) for r in pq.read_table(f, columns=["service", "level", "n"]).to_pylist()]
    return {(r["service"], r["level"]): r["n"] for r in rows}


def dataflow_job(data: pathlib.Path, out: pathlib.Path, engine: str, untyped: bool = False) -> dict:
    from dataflow.dsl.parse import parse_pipeline
    from dataflow.engines.base import RunOptions
    from dataflow.runner import run_pipeline

    doc = json.loads(json.dumps(PIPELINE))
    doc["engine"], doc["source"]["uri"], doc["sink"]["uri"] = engine, str(data), str(out)
    if untyped:
        del doc["source"]["options"]
    run_pipeline(parse_pipeline(doc), RunOptions(progress=False))
    return _groups(out)


def pyspark_job(spark, data: pathlib.Path, out: pathlib.Path, untyped: bool = False) -> dict:
    from pyspark.sql import functions as F

    schema = "ts STRING, host STRING, level STRING, service STRING, latency_ms DOUBLE, msg STRING, ctx STRUCT<region: STRING, pod: STRING, attempt: INT>"
    logs = spark.read.json(str(data)) if untyped else spark.read.schema(schema).json(str(data))
    result = (logs.where((F.col("level") != "DEBUG") & F.col("service").isNotNull())
              .withColumn("code", F.regexp_extract("msg", r"code=(\d+)", 1))
              .groupBy("service", "level")
              .agg(F.count(F.lit(1)).alias("n"), F.avg("latency_ms").alias("avg_latency_ms"),
                   F.percentile_approx("latency_ms", 0.95).alias("p95_latency_ms"),
                   F.count_if(F.col("code").like("5%")).alias("server_errors"), F.count_if(F.col("ctx.region") == "eu-west").alias("eu")))
    result.write.mode("overwrite").parquet(str(out))
    return _groups(out)


def duckdb_job(data: pathlib.Path, out: pathlib.Path, untyped: bool = False) -> dict:
    import re

    import duckdb

    out.mkdir(parents=True, exist_ok=True)
    query = re.sub(r", columns = \{\{.*?\}\}\)", ")", DUCKDB_QUERY, flags=re.S) if untyped else DUCKDB_QUERY
    with duckdb.connect() as con:
        con.execute(query.format(data=data, out=out))
    return _groups(out)


def _timed(fn, *args) -> tuple[float, dict]:
    start = time.monotonic()
    groups = fn(*args)
    return time.monotonic() - start, groups


def run(work: pathlib.Path, lines: int, rounds: int, skip_ray: bool = False, skip_spark: bool = False, packed: bool = False, untyped: bool = False) -> int:
    """Generate, time the four jobs in alternated rounds (after one untimed run each), print the table and ratios."""
    data = work / ("logs-gz" if packed else "logs")
    start = time.monotonic()
    size = generate(data, lines, packed=packed)
    print(f"data: {lines:,} JSON log lines ({size / 1e6:.0f} MB in {FILES} {'gzipped ' if packed else ''}files), generated in {time.monotonic() - start:.1f} s under {data}")
    jobs = {"duckdb": lambda out: duckdb_job(data, out, untyped)}
    if not skip_ray:
        from dataflow.engines.ray.session import ensure_ray

        start = time.monotonic()
        ensure_ray()  # on the main thread
        print(f"ray: started in {time.monotonic() - start:.1f} s (not timed)")
        jobs["dataflow-ray"] = lambda out: dataflow_job(data, out, "ray", untyped)
    if not skip_spark:
        from dataflow.engines.spark.session import ensure_spark

        spark = ensure_spark()
        print(f"spark: started ({spark.sparkContext.master})")
        jobs["pyspark"] = lambda out: pyspark_job(spark, data, out, untyped)
        jobs["dataflow-spark"] = lambda out: dataflow_job(data, out, "spark", untyped)
    times: dict[str, list[float]] = {k: [] for k in jobs}
    expected = None
    for r in range(rounds + 1):  # round 0 warms each job up (imports, JIT, first Ray tasks); alternated order after it
        order = list(jobs) if r % 2 == 0 else list(reversed(jobs))
        for name in order:
            out = work / f"out-{name}"
            shutil.rmtree(out, ignore_errors=True)
            seconds, groups = _timed(jobs[name], out)
            expected = expected or groups
            assert groups == expected, f"{name} gave other group counts than the first job"
            if r:
                times[name].append(seconds)
            print(f"  round {r} {name:15s} {seconds:6.2f} s{' (warm-up)' if r == 0 else ''}", flush=True)
    stats = {k: {"median_s": round(statistics.median(v), 3), "min_s": round(min(v), 3), "max_s": round(max(v), 3)} for k, v in times.items()}
    print(f"{'job':15s} {'median':>8s} {'min':>8s} {'max':>8s}")
    for k, s in stats.items():
        print(f"{k:15s} {s['median_s']:8.2f} {s['min_s']:8.2f} {s['max_s']:8.2f}")
    ratios = {}
    if "dataflow-spark" in stats:
        ratios["spark_vs_pyspark"] = round(stats["dataflow-spark"]["median_s"] / stats["pyspark"]["median_s"], 3)
    if "dataflow-ray" in stats:
        ratios["ray_vs_duckdb"] = round(stats["dataflow-ray"]["median_s"] / stats["duckdb"]["median_s"], 3)
    print(json.dumps({"lines": lines, "untyped": untyped, "groups": len(expected or {}), "load_avg": os.getloadavg(), "jobs": stats, "ratios": ratios}))
    return 0
