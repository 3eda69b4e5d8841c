"""dataflow's overhead on 100M files at 1-100 nodes: a model fed by measured costs, listing overlapped vs serial.

The costs come from an ``overhead.py --json`` file (``stream`` and ``ray-data`` runs on the largest
measured cluster) and from timing the listing here, apart, on a generated tree of ``--files``
files (alternated rounds, medians):

- ``w``: work per file per CPU: the Ray Data script's wall, less its own start-up (its first
  execution, as long as dataflow's first shard), times the CPUs, per file;
- ``l0``: a plain sorted ``os.scandir`` walk with a stat per file: the listing any framework pays
  (the Ray Data script lists before its timer starts, so it is charged here);
- ``l``: dataflow's listing and shard cutting per file (filters, URIs, ids, fingerprint);
- ``s``: driver seconds per shard commit; ``o``: task-side seconds per file per CPU (routing,
  counters); ``fixed``: per run outside the stream (plan, commit, report), beyond the listing;
- ``wave``: start-up of each wave's Dataset after the first (a warm execution).

On ``N`` nodes of ``C`` CPUs each (``--cpus-per-node``, 16), ``F`` files, shards of
``runtime.shards.shard_size(N C)`` files and ``W = w F / (N C)``:

    baseline     = l0 F + W                              (list, then run)
    serial       = fixed + l F + W + o F/(N C) + s S     (list, then run, commits in line)
    overlapped   = fixed + l P + max(W + o F/(N C), l F, s S) + s + waves * wave
                   (the first page P = 1000 files, then listing, work and commits at once)

and the overhead is ``(dataflow - baseline) / dataflow``. The first shard's cold start (Ray Data's
first execution in a new driver: the job's worker processes and their imports) is paid by the
baseline too and cancels out.

Usage: python benchmarks/overhead_model.py --json overhead.json [--bench-files 2000] [--files 20000] [--rounds 3]
       [--model-files 100000000] [--cpus-per-node 16] [--wave 0.3]
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

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
NODES = (1, 10, 50, 100)


def plain_listing(root: str) -> int:
    """A sorted walk with a stat per file: what listing costs before any framework."""
    count = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in reversed(entries):
            if e.is_dir():
                stack.append(e.path)
            else:
                e.stat()
                count += 1
    return count


def dataflow_listing(root: str) -> int:
    """dataflow's listing of a jsonl source, cut into shards as a run does (ids, fingerprint)."""
    from dataflow.dsl.spec import SourceSpec
    from dataflow.runtime.shards import ShardCutter, ShardFeed

    cutter = ShardCutter(4096)
    shards = [s for wave in ShardFeed.of_source(SourceSpec(uri=root, format="jsonl"), {}).waves(cutter) for s in wave]
    return sum(len(s.inputs) for s in shards)


def time_listings(files: int, rounds: int) -> tuple[list[float], list[float]]:
    """Seconds per file of the plain and of dataflow's listing, alternated, ``rounds`` each."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="dataflow-model-"))
    per_dir = 1000
    for d in range(-(-files // per_dir)):
        folder = root / f"d{d:04d}"
        folder.mkdir()
        for i in range(min(per_dir, files - d * per_dir)):
            (folder / f"f{i:05d}.jsonl").write_bytes(b"{}\n")
    plain, ours = [], []
    dataflow_listing(str(root))  # imports, caches: not per-file costs
    for r in range(rounds):
        for name in (("plain", "ours") if r % 2 == 0 else ("ours", "plain")):
            t = time.perf_counter()
            n = plain_listing(str(root)) if name == "plain" else dataflow_listing(str(root))
            (plain if name == "plain" else ours).append((time.perf_counter() - t) / n)
    return plain, ours


def fitted(results: dict, files: int) -> dict[str, float]:
    """The per-file, per-shard and fixed costs from an ``overhead.py --json`` file of ``files`` inputs, on its largest cluster."""
    runs = results[str(max(int(n) for n in results))]
    stream, base = runs["stream"], runs["ray-data"]
    cpus = statistics.median(r["cpus"] for r in stream)
    cold = statistics.median(r["first"] for r in stream)  # the first execution's start-up, paid by both
    ray_wall = statistics.median(r["wall"] for r in base)
    in_stream = statistics.median(r["wall"] - r["outside_stream"] for r in stream)
    return {
        "cpus": cpus,
        "w": max(1e-6, ray_wall - cold) * cpus / files,
        "s": statistics.median(x for r in stream for x in r["stage_s"]),
        "o": max(0.0, in_stream - ray_wall) * cpus / files,
        "fixed": statistics.median(r["outside_stream"] - r["listing_warm"] for r in stream),
    }


def table(c: dict[str, float], l0: float, l: float, model_files: int, cpus_per_node: int, wave: float) -> list[str]:
    from dataflow.runtime.shards import shard_size

    lines = [f"{model_files:,} files, {cpus_per_node} CPUs/node; w={c['w'] * 1e3:.2f} ms/file/CPU, o={c['o'] * 1e3:.2f} ms/file/CPU, "
             f"s={c['s'] * 1e3:.2f} ms/shard, fixed={c['fixed']:.2f} s, listing plain l0={l0 * 1e6:.2f} us/file, dataflow l={l * 1e6:.2f} us/file",
             "  nodes  shards  waves  work(s)  listing(s)  baseline(s)  serial(s)  overlapped(s)  overhead serial  overhead overlapped"]
    for n in NODES:
        cpus = n * cpus_per_node
        size = shard_size(cpus)
        shards = -(-model_files // size)
        work = c["w"] * model_files / cpus + c["o"] * model_files / cpus
        listing = l * model_files
        waves = min(shards, max(1, round(listing / max(work, 1e-9) * 4)))  # a wave per slice of the listing the work keeps pace with (estimate)
        baseline = l0 * model_files + c["w"] * model_files / cpus
        serial = c["fixed"] + listing + work + c["s"] * shards
        overlapped = c["fixed"] + l * 1000 + max(work, listing, c["s"] * shards) + c["s"] + (waves - 1) * wave
        lines.append(f"  {n:5d} {shards:7d} {waves:6d} {work:8.0f} {listing:11.0f} {baseline:12.0f} {serial:10.0f} {overlapped:14.0f}"
                     f" {100 * (serial - baseline) / serial:15.2f}% {100 * (overlapped - baseline) / overlapped:18.2f}%")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", required=True, help="an overhead.py --json file (stream and ray-data runs)")
    parser.add_argument("--bench-files", type=int, default=2000, help="the --files of the overhead.py run in --json")
    parser.add_argument("--files", type=int, default=20_000, help="files of the tree the listing is timed on")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model-files", type=int, default=100_000_000)
    parser.add_argument("--cpus-per-node", type=int, default=16)
    parser.add_argument("--wave", type=float, default=0.3, help="seconds to start a later wave's Dataset")
    args = parser.parse_args()
    costs = fitted(json.loads(pathlib.Path(args.json).read_text()), args.bench_files)
    plain, ours = time_listings(args.files, args.rounds)
    print(f"listing {args.files} local files, {args.rounds} alternated rounds: plain {statistics.median(plain) * 1e6:.2f} us/file "
          f"({min(plain) * 1e6:.2f}-{max(plain) * 1e6:.2f}), dataflow list + cut {statistics.median(ours) * 1e6:.2f} us/file "
          f"({min(ours) * 1e6:.2f}-{max(ours) * 1e6:.2f}); load {os.getloadavg()[0]:.1f}")
    print("\n".join(table(costs, statistics.median(plain), statistics.median(ours), args.model_files, args.cpus_per_node, args.wave)))


if __name__ == "__main__":
    main()
