"""Global steps at scale: aggregate, join and dedups on Ray and on Spark, wall time and driver peak RSS.

For each row count, a Parquet input of rows with a ~150-byte payload (``key``: 1 in 10 distinct,
``text``: 1 in 5 a duplicate) and a join side of one row per key; each (engine, step, size) runs in
a fresh Python process, which reports the run's wall time and its own peak RSS (the driver: for
Spark the Python driver, not the JVM). ``minhash`` (Ray) runs at the ``--fuzzy-rows`` sizes only,
over short documents (20 words of a 20,000-word vocabulary, 1 in 5 a copy of another one with
its last word changed). Targets (issue 15): on Ray the driver's peak RSS at 4M rows within 150 MB of
its peak at 1M rows; Ray's time within 1.5x Spark's on the same step; MinHash over 1M documents
with the driver under 1 GB.

Usage: python benchmarks/global_ops.py [--rows 1000000 2000000 4000000] [--engines ray spark]
       [--steps aggregate join table_dedup dedup minhash] [--fuzzy-rows 1000000] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STEPS = {
    "aggregate": {"op": "table.aggregate", "params": {"keys": ["key"], "aggregations": {"n": "count(*)", "s": "sum(num)"}}},
    "join": {"op": "table.join", "params": {"right": "keys", "keys": ["key"], "how": "inner"}},
    "table_dedup": {"op": "table.dedup", "params": {"keys": ["text"]}},
    "dedup": {"op": "text.dedup_exact", "params": {"column": "text"}},  # Ray only: Spark lowers table ops only
    "minhash": {"op": "text.dedup_minhash", "params": {"column": "text"}},
}
RAY_ONLY = {"dedup", "minhash"}


def write_input(folder: pathlib.Path, rows: int, docs: bool) -> tuple[str, str]:
    """The rows (in 8 files), the join side and, with ``docs``, the short documents; return the first two paths."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = folder / f"rows-{rows}"
    data.mkdir(parents=True, exist_ok=True)
    per = -(-rows // 8)
    for f in range(8):
        ids = np.arange(f * per, min(rows, (f + 1) * per))
        text = [f"document {i % (rows * 4 // 5)} " + "x" * 120 for i in ids]  # 1 in 5 repeats an earlier one
        pq.write_table(pa.table({"key": (ids % max(1, rows // 10)).astype(str), "num": ids, "text": text}), data / f"part-{f}.parquet", row_group_size=65536)
    rng = np.random.default_rng(rows)
    words = np.array([f"w{i}" for i in range(20_000)], dtype=object)
    for f in range(8 if docs else 0):
        n = min(rows, (f + 1) * per) - f * per
        picks = rng.integers(0, len(words), size=(n, 20))
        copy = rng.random(n) < 0.2
        picks[copy] = picks[rng.integers(0, n, size=int(copy.sum()))]  # a copy of another document
        picks[copy, 19] = rng.integers(0, len(words), size=int(copy.sum()))  # one 5-gram of 16 changes: Jaccard ~0.88
        (folder / f"docs-{rows}").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"text": [" ".join(w) for w in words[picks]]}), folder / f"docs-{rows}" / f"part-{f}.parquet", row_group_size=65536)
    side = folder / f"keys-{rows}.parquet"
    keys = np.arange(max(1, rows // 10))
    pq.write_table(pa.table({"key": keys.astype(str), "label": [f"label-{k}" for k in keys]}), side)
    return str(data), str(side)


def run_one(engine: str, step: str, data: str, side: str, out: str) -> dict:
    """Run one pipeline in this process; return its wall seconds, rows out and this process's peak RSS."""
    from dataflow.dsl.parse import parse_pipeline
    from dataflow.engines.base import RunOptions
    from dataflow.runner import run_pipeline

    if step == "minhash":
        data = str(pathlib.Path(data).parent / pathlib.Path(data).name.replace("rows-", "docs-"))
    doc = {"name": f"bench-{step}", "engine": engine, "source": {"uri": data, "format": "parquet"}, "steps": [STEPS[step]],
           "sink": {"uri": out, "format": "parquet"}}
    if step == "join":
        doc["sources"] = {"keys": {"uri": side, "format": "parquet"}}
    start = time.perf_counter()
    report = run_pipeline(parse_pipeline(doc), RunOptions(progress=False))
    wall = time.perf_counter() - start
    return {"wall_s": round(wall, 2), "rows_out": report.rows_out, "driver_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 2_000_000, 4_000_000])
    parser.add_argument("--engines", nargs="+", default=["ray", "spark"])
    parser.add_argument("--steps", nargs="+", default=list(STEPS))
    parser.add_argument("--fuzzy-rows", type=int, nargs="*", default=[1_000_000], help="the sizes the minhash step runs at")
    parser.add_argument("--json")
    parser.add_argument("--write", nargs=3, metavar=("ROWS", "FOLDER", "DOCS"), help=argparse.SUPPRESS)
    parser.add_argument("--one", nargs=5, metavar=("ENGINE", "STEP", "DATA", "SIDE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(*args.one)))
        return
    if args.write:
        print(json.dumps(write_input(pathlib.Path(args.write[1]), int(args.write[0]), args.write[2] == "1")))
        return
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for rows in args.rows:
            # In a child: Linux keeps a process's peak RSS across exec, so this one stays small for the runs it starts.
            docs = "1" if "minhash" in args.steps and rows in args.fuzzy_rows else "0"
            made = subprocess.run([sys.executable, __file__, "--write", str(rows), tmp, docs], capture_output=True, text=True, check=True)
            data, side = json.loads(made.stdout.strip().splitlines()[-1])
            for step in [s for s in args.steps if s != "minhash" or rows in args.fuzzy_rows]:
                for engine in [e for e in args.engines if e == "ray" or step not in RAY_ONLY]:
                    out = str(pathlib.Path(tmp) / f"out-{engine}-{step}-{rows}")
                    proc = subprocess.run([sys.executable, __file__, "--one", engine, step, data, side, out], capture_output=True, text=True)
                    if proc.returncode:
                        print(f"{rows:>9} {step:<10} {engine:<6} failed: {proc.stderr.strip().splitlines()[-1:]}", flush=True)
                        continue
                    result = {"rows": rows, "step": step, "engine": engine, **json.loads(proc.stdout.strip().splitlines()[-1])}
                    results.append(result)
                    print(f"{rows:>9} {step:<10} {engine:<6} {result['wall_s']:>8.1f}s  driver peak RSS {result['driver_peak_rss_mb']:>8.1f} MB", flush=True)
    ray = {(r["step"], r["rows"]): r["driver_peak_rss_mb"] for r in results if r["engine"] == "ray"}
    lo, hi = min(args.rows), max(args.rows)
    for step in args.steps:
        if (step, lo) in ray and (step, hi) in ray:
            print(f"ray {step}: driver peak RSS grows {ray[(step, hi)] - ray[(step, lo)]:+.1f} MB from {lo} to {hi} rows")
    times = {(r["engine"], r["step"], r["rows"]): r["wall_s"] for r in results}
    for (engine, step, rows), wall in sorted(times.items()):
        if engine == "ray" and ("spark", step, rows) in times:
            print(f"{step} at {rows} rows: Ray {wall:.1f} s / Spark {times[('spark', step, rows)]:.1f} s = {wall / times[('spark', step, rows)]:.2f}x")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
