"""Benchmark: the optical-module fault pipeline over a day of a 3,000-link fleet on local Spark.

Generates 1,500 fibres x 2 reporting ends = 3,000 links (``link`` values) x 24 h at one sample a
minute (~4.3 M DDM JSON lines, plus syslog), then times ``dataflow run
pipelines/optical_module_faults.yaml`` as its own process (interpreter start, Spark session, plan,
run, commit and report: what an operator waits for), and scores the flags against the generator's
ground truth. It prints rows/s and extrapolates to a 30,000-fibre fleet (60,000 links, 86.4 M rows
a day) on a stated cluster, assuming throughput scales with cores at a stated efficiency.

Usage: python benchmarks/optical.py [--fibres 1500] [--hours 24] [--workdir DIR]
       [--cluster-cores 64] [--efficiency 0.6]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from examples.optical_faults import format_score, generate, read_flags, score  # noqa: E402

FLEET_FIBRES = 30_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fibres", type=int, default=1500, help="fibres; each has two reporting ends (links)")
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--cluster-cores", type=int, default=64, help="cores of the cluster the extrapolation is for (e.g. 8 executors x 8 cores)")
    parser.add_argument("--efficiency", type=float, default=0.6, help="fraction of linear scaling the cluster keeps (shuffles, skew)")
    args = parser.parse_args()
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="dataflow-optical-"))
    data, out = work / "data", work / "out"
    shutil.rmtree(out, ignore_errors=True)
    if (data / "expected.json").exists() and json.loads((data / "expected.json").read_text())["ends"] == 2 * args.fibres:
        info = json.loads((data / "expected.json").read_text())
        print(f"data: reusing {data}")
    else:
        shutil.rmtree(data, ignore_errors=True)
        start = time.monotonic()
        info = generate(data, fibres=args.fibres, hours=args.hours)
        print(f"data: generated in {time.monotonic() - start:.1f} s under {data}")
    size = sum(p.stat().st_size for p in (data / "telemetry").iterdir())
    print(f"data: {info['ends']:,} links, {info['rows']:,} DDM rows ({size / 1e6:.0f} MB), {info['malformed']} malformed, "
          f"{sum(1 for _ in (data / 'syslog').iterdir())} syslog files")
    env = {**os.environ, "OPTICAL_DATA": str(data), "OPTICAL_OUT": str(out), "PYTHONPATH": str(ROOT)}
    cores = os.cpu_count() or 2
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "dataflow", "run", str(ROOT / "pipelines" / "optical_module_faults.yaml"), "--json", "--quiet"],
                          env=env, capture_output=True, text=True)
    whole_s = time.monotonic() - start
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        return proc.returncode
    report = json.loads(proc.stdout[proc.stdout.index("{"):])
    rows = info["rows"] + info["malformed"]
    run_s = report["wall_seconds"]
    print(format_score(score(info, read_flags(out))))
    fleet_rows = rows * FLEET_FIBRES / args.fibres * 24 / args.hours
    per_core = rows / whole_s / cores
    fleet_s = fleet_rows / (per_core * args.cluster_cores * args.efficiency)
    print(json.dumps({
        "links": info["ends"], "rows": rows, "cores": cores, "whole_process_s": round(whole_s, 1), "run_s": round(run_s, 1),
        "rows_per_s_whole_process": round(rows / whole_s), "rows_per_s_run": round(rows / run_s),
        "fleet": f"{FLEET_FIBRES:,} fibres = {2 * FLEET_FIBRES:,} links x 24 h = {fleet_rows / 1e6:.1f} M rows",
        "fleet_cluster": f"{args.cluster_cores} cores at {args.efficiency:.0%} of linear scaling",
        "fleet_extrapolated_s": round(fleet_s),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
