"""dataflow's overhead on 100M files at 1-100 nodes: a model fed by measured costs, the listing overlapped with the work.

The costs come from an ``overhead.py --json`` file (``stream`` and ``ray-data`` runs on the largest
measured cluster) and from timing listings here, apart, on a generated tree of ``--files`` files in
folders of 1000 (contenders alternated, ``--rounds`` each, medians):

- ``w``: work per file per CPU: the Ray Data script's wall, less its own start-up (its first
  execution, as long as dataflow's first shard), times the CPUs, per file;
- ``l0``: a plain sorted ``os.scandir`` walk with a stat per file: the listing any framework pays
  (the Ray Data script lists before its timer starts, so it is charged here);
- ``before``: dataflow's listing and shard cutting per file (filters, URIs, ids, fingerprint) as
  it was at ``--before`` (the code of that commit, read with ``git show``);
- ``serial``: the same with this checkout's listing, folders scanned one after another;
- ``parallel``: this checkout's listing as a run does it: worker processes scan the folders once
  the walk has met ``connectors.walk.PARALLEL_AFTER`` files, kept if they prove faster than the
  walk alone (use a tree of several times that: ``--files``);
- ``driver``: what stays on the driver whoever scans the folders: the per-file work after the
  scan (reading the scan's answer, batches, filters, pages, shard ids, fingerprint), timed with
  every folder scanned before and kept as the worker processes send it (marshal);
- ``s``: driver seconds per shard commit; ``o``: task-side seconds per file per CPU (routing,
  counters); ``fixed``: per run outside the stream (plan, commit, report), beyond the listing;
- ``wave``: start-up of each wave's Dataset after the first (a warm execution).

On ``N`` nodes of ``C`` CPUs each (``--cpus-per-node``, 16), ``F`` files, shards of
``runtime.shards.shard_size(N C)`` files, ``W = (w + o) F / (N C)`` and a listing of ``L`` seconds:

    baseline    = l0 F + w F / (N C)                                      (list, then run)
    dataflow    = fixed + l P + max(W, L, s S) + s + waves * wave          (the first page P = 1000
                  files, then listing, work and commits at once)

and the overhead is ``(dataflow - baseline) / dataflow`` (negative where the baseline's own
serial listing costs more than dataflow's overlapped one); "beyond work" is ``(dataflow - W) /
dataflow``, the share of the wall the cluster is not working. Both for four listings: ``L = l F`` with ``l``
each of ``before``, ``serial`` and ``parallel`` (one driver, as measured on this machine), and
``L = max(scan F / (N C), driver F)`` with ``scan = serial - driver``: folders scanned by tasks on
the nodes, the driver doing only its share (a model: dataflow does not farm folder scans out to
the cluster). Where ``L`` exceeds ``W`` the run is listing-bound and the table says so. The first
shard's cold start (Ray Data's first execution in a new driver) is paid by the baseline too and
cancels out.

Usage: python benchmarks/overhead_model.py --json overhead.json [--bench-files 2000] [--files 200000] [--rounds 3]
       [--before 027dd14] [--model-files 100000000] [--cpus-per-node 16] [--wave 0.3] [--work-ms MS ...]
"""
from __future__ import annotations

import argparse
import json
import marshal
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from typing import Any

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


def list_and_cut(pages, shards) -> int:
    """Cut a listing's pages into shards as a run does (ids, fingerprint), the listing on its thread; return the files."""
    cutter = shards.ShardCutter(4096)
    return sum(len(s.inputs) for wave in shards.ShardFeed(pages).waves(cutter) for s in wave)


def code_at(rev: str, path: str) -> types.ModuleType:
    """The module at ``path`` as it was at commit ``rev`` (its imports resolve to this checkout)."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], capture_output=True, text=True, check=True).stdout
    module = types.ModuleType(f"_before_{pathlib.Path(path).stem}")
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)  # noqa: S102 - the project's own code at an older commit
    return module


def contenders(root: str, before: str) -> dict[str, Callable[[], int]]:
    """The listings timed: each returns the files it listed."""
    import fsspec

    import connectors.listing as listing
    import connectors.walk as walk
    from dataflow.runtime import shards

    fs, old_listing, old_shards = fsspec.filesystem("file"), code_at(before, "connectors/listing.py"), code_at(before, "dataflow/runtime/shards.py")
    folders = [str(p) for p in sorted(pathlib.Path(root).rglob("*")) if p.is_dir()] + [root]
    scanned = {f: marshal.dumps(walk.scan(f)) for f in folders}  # as the worker processes send them

    def ours(workers: int, scan: Callable[[str], Any] = walk.scan) -> Callable[[], int]:
        def run() -> int:
            saved = listing.LOCAL_WORKERS, walk.scan
            listing.LOCAL_WORKERS, walk.scan = workers, scan
            try:
                return list_and_cut(lambda: listing.list_pages(fs, root, root, "jsonl", {}), shards)
            finally:
                listing.LOCAL_WORKERS, walk.scan = saved

        return run

    return {
        "plain": lambda: plain_listing(root),
        "before": lambda: list_and_cut(lambda: old_listing.list_pages(fs, root, root, "jsonl", {}), old_shards),
        "serial": ours(1),
        "parallel": ours(listing.LOCAL_WORKERS),
        "driver": ours(1, lambda folder: marshal.loads(scanned[folder])),
    }


def time_listings(files: int, rounds: int, before: str) -> dict[str, list[float]]:
    """Seconds per file of each listing (:func:`contenders`) on one generated tree, alternated, ``rounds`` each."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="dataflow-model-"))
    per_dir = 1000
    for d in range(-(-files // per_dir)):
        folder = root / f"d{d:04d}"
        folder.mkdir()
        for i in range(min(per_dir, files - d * per_dir)):
            (folder / f"f{i:05d}.jsonl").write_bytes(b"{}\n")
    runs = contenders(str(root), before)
    for run in runs.values():  # imports, caches: not per-file costs
        run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for r in range(rounds):
        for name in list(runs)[:: 1 if r % 2 == 0 else -1]:
            t = time.perf_counter()
            n = runs[name]()
            times[name].append((time.perf_counter() - t) / n)
    shutil.rmtree(root)
    return times


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


def table(c: dict[str, float], l: dict[str, float], model_files: int, cpus_per_node: int, wave: float) -> list[str]:
    """The model's rows: per listing, per node count, its seconds and the overhead it gives (see the module docstring)."""
    from dataflow.runtime.shards import shard_size

    lines = [f"{model_files:,} files, {cpus_per_node} CPUs/node; w={c['w'] * 1e3:.2f} ms/file/CPU, o={c['o'] * 1e3:.2f} ms/file/CPU, "
             f"s={c['s'] * 1e3:.2f} ms/shard, fixed={c['fixed']:.2f} s; us/file: plain l0={l['plain'] * 1e6:.2f}, "
             + ", ".join(f"{k}={l[k] * 1e6:.2f}" for k in ("before", "serial", "parallel", "driver"))]
    titles = {
        "before": "the listing at --before, one driver",
        "serial": "this listing, folders one after another, one driver",
        "parallel": "this listing as a run does it (worker processes), one driver of this machine",
        "spread": "folders scanned on the nodes, the driver's share on the driver (a model: not implemented)",
    }
    for kind, title in titles.items():
        lines += [f"{kind}: {title}", "  nodes   work(s)  baseline(s)  listing(s)  dataflow(s)  overhead  beyond work  bound"]
        for n in NODES:
            cpus = n * cpus_per_node
            shards = -(-model_files // shard_size(cpus))
            work = (c["w"] + c["o"]) * model_files / cpus
            baseline = l["plain"] * model_files + c["w"] * model_files / cpus
            if kind == "spread":
                listing, first = max((l["serial"] - l["driver"]) * model_files / cpus, l["driver"] * model_files), l["driver"] * 1000
            else:
                listing, first = l[kind] * model_files, l[kind] * 1000
            waves = min(shards, max(1, round(listing / max(work, 1e-9) * 4)))  # a wave per slice of the listing the work keeps pace with (estimate)
            ours = c["fixed"] + first + max(work, listing, c["s"] * shards) + c["s"] + (waves - 1) * wave
            lines.append(f"  {n:5d} {work:9.0f} {baseline:12.0f} {listing:11.0f} {ours:12.0f} {100 * (ours - baseline) / ours:8.1f}%"
                         f" {100 * (ours - work) / ours:11.1f}%  {'listing' if listing > work else 'work'}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", required=True, help="an overhead.py --json file (stream and ray-data runs)")
    parser.add_argument("--bench-files", type=int, default=2000, help="the --files of the overhead.py run in --json")
    parser.add_argument("--files", type=int, default=200_000, help="files of the tree the listing is timed on")
    parser.add_argument("--before", default="027dd14", help="the commit whose listing is timed as 'before' (the one before issue 18's listing change)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model-files", type=int, default=100_000_000)
    parser.add_argument("--cpus-per-node", type=int, default=16)
    parser.add_argument("--wave", type=float, default=0.3, help="seconds to start a later wave's Dataset")
    parser.add_argument("--work-ms", type=float, nargs="*", default=[],
                        help="also model these works per file per CPU (ms) in place of the fitted w, e.g. image.py's: ours_draft_s x CPUs / images")
    args = parser.parse_args()
    costs = fitted(json.loads(pathlib.Path(args.json).read_text()), args.bench_files)
    times = time_listings(args.files, args.rounds, args.before)
    load = os.getloadavg()
    print(f"listing {args.files:,} local files in folders of 1000, {args.rounds} alternated rounds, us/file median (min-max); "
          f"load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, {os.cpu_count()} CPUs:")
    for name, values in times.items():
        print(f"  {name:9s} {statistics.median(values) * 1e6:6.2f} ({min(values) * 1e6:.2f}-{max(values) * 1e6:.2f})")
    listings = {k: statistics.median(v) for k, v in times.items()}
    for work in [None, *args.work_ms]:
        print("\n".join(table(costs if work is None else {**costs, "w": work / 1e3}, listings, args.model_files, args.cpus_per_node, args.wave)))

if __name__ == "__main__":
    main()
