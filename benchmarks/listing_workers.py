"""Threads or processes for a local listing's folder scans: the listing and shard cut of one tree, alternated.

Contenders: the folders scanned one after another, by 2 or 4 threads, and by 2 or 4 worker
processes (``connectors.folder_scan.ScanPool``, what a run uses), each from the first folder.

Usage: python benchmarks/listing_workers.py TREE [ROUNDS]   (a tree such as overhead_model.py generates)
"""
from __future__ import annotations

import os
import pathlib
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


class ThreadScans:
    """``ScanPool``'s interface on threads."""

    def __init__(self, workers: int):
        self._executor = ThreadPoolExecutor(workers)

    def submit(self, folder: str):
        import connectors.walk as walk

        return self._executor.submit(walk.scan, folder)

    def close(self) -> None:
        self._executor.shutdown(cancel_futures=True)


def main() -> None:
    import fsspec
    from overhead_model import list_and_cut

    import connectors.listing as listing
    import connectors.walk as walk
    from dataflow.runtime import shards

    root, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    fs, processes = fsspec.filesystem("file"), walk.ScanPool

    def contender(workers: int, pool):
        def run() -> int:
            listing.LOCAL_WORKERS, walk.ScanPool, walk.PARALLEL_AFTER = workers, pool, 0
            return list_and_cut(lambda: listing.list_pages(fs, root, root, "jsonl", {}), shards)

        return run

    runs = {"serial": contender(1, processes), "threads2": contender(2, ThreadScans), "processes2": contender(2, processes),
            "threads4": contender(4, ThreadScans), "processes4": contender(4, processes)}  # fmt: skip
    for run in runs.values():
        files = run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for r in range(rounds):
        for name in list(runs)[:: 1 if r % 2 == 0 else -1]:
            t = time.perf_counter()
            runs[name]()
            times[name].append((time.perf_counter() - t) / files)
    load = os.getloadavg()
    print(f"list + cut of {files:,} files, {rounds} alternated rounds, us/file median (min-max); load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, {os.cpu_count()} CPUs")
    for name, values in times.items():
        print(f"  {name:11s} {statistics.median(values) * 1e6:.2f} ({min(values) * 1e6:.2f}-{max(values) * 1e6:.2f})")


if __name__ == "__main__":
    main()
