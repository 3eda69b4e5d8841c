"""Cache-tier benchmark on a loopback S3 server (moto, in its own process), all figures from one run.

  direct     s3fs ``cat_file`` of every object, no cache (the faster of a plain and a ranged GET)
  cold       the same reads through DiskCache into an empty cache directory
  warm       the same reads again (every entry cached)
  raw local  ``open().read()`` of the same bytes from files on the cache's disk
  pipeline   pipelines/thumbnails.yaml over S3 input on local Ray, run twice with the cache, then
             once over the same images on local disk (the floor a fully cached run can reach)

Prints the four read figures, the ratios, and the pipeline's two wall times. Targets: cold <= 1.15x
direct time; warm >= 0.8x raw-local throughput; the second pipeline run >= 3x faster.

Usage: python benchmarks/cache.py [--objects 220] [--object-mb 1] [--rounds 5] [--images 200] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import io
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CREDENTIALS = {"key": "testing", "secret": "testing"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto() -> tuple[subprocess.Popen, str]:
    """moto's S3 server in a separate process (so it does not share the reader's GIL)."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, url
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("moto server did not start")


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def read_benchmark(s3, objects: int, size: int, work: pathlib.Path, rounds: int = 5) -> dict[str, float]:
    from connectors.storage.disk_cache import DiskCache

    rng = np.random.default_rng(0)
    s3.mkdir("bench")
    local = work / "local"
    local.mkdir()
    for i in range(objects):
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        s3.pipe_file(f"bench/obj-{i:04d}.bin", data)
        (local / f"obj-{i:04d}.bin").write_bytes(data)
    listing = s3.find("bench", detail=True)
    paths = sorted(listing)
    total = sum(int(listing[p]["size"]) for p in paths)
    caches: list[DiskCache] = []

    def cached():
        for p in paths:
            caches[-1].cat_file(p, info=listing[p])

    def cold():
        if caches:  # start empty, without the previous round's unwritten pages to flush
            shutil.rmtree(caches[-1].cache_dir)
        caches.append(DiskCache(inner=s3, dir=str(work / f"cache-{len(caches)}"), max_bytes=4 * total, skip_instance_cache=True))
        cached()

    def direct():
        for p in paths:
            s3.cat_file(p)

    def direct_ranged():  # a GET with a Range header: moto serves it faster than a plain GET
        for p in paths:
            s3.cat_file(p, start=0, end=int(listing[p]["size"]))

    def raw():
        for name in sorted(os.listdir(local)):
            with open(local / name, "rb") as f:
                f.read()

    direct()  # warm moto's own state and the HTTP connection pool, as every later pass has them
    os.sync()  # the setup's writes are on disk before anything is timed
    # Interleaved rounds (direct, ranged, cold into a new directory), best of each: the machine is
    # shared, so passes side by side see the same load.
    plain, ranged, colds = [], [], []
    for _ in range(rounds):
        plain.append(_timed(direct))
        ranged.append(_timed(direct_ranged))
        colds.append(_timed(cold))
    out = {"objects": objects, "bytes": total, "rounds": rounds, "direct_plain_s": min(plain), "direct_ranged_s": min(ranged), "cold_s": min(colds)}
    out["direct_s"] = min(out["direct_plain_s"], out["direct_ranged_s"])  # the faster direct read is the baseline
    warm, raw_local = [], []
    for _ in range(5):
        warm.append(_timed(cached))
        raw_local.append(_timed(raw))
    out["warm_s"], out["raw_local_s"] = min(warm), min(raw_local)
    out["counters"] = caches[-1].counters.snapshot()
    return out


def pipeline_benchmark(s3, endpoint: str, images: int, work: pathlib.Path) -> dict[str, float]:
    from PIL import Image

    from dataflow.dsl.parse import load_pipeline
    from dataflow.engines.base import RunOptions
    from dataflow.engines.ray.session import ensure_ray
    from dataflow.runner import run_pipeline

    s3.mkdir("images")
    rng = np.random.default_rng(1)
    for i in range(images):
        y, x = np.mgrid[0:768, 0:1024]
        noise = rng.integers(0, 64, (768, 1024, 3))
        pixels = (np.stack([x * 255 // 1024, y * 255 // 768, (x + y) % 256], axis=-1) + noise).clip(0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(pixels).save(buf, format="JPEG", quality=95)
        s3.pipe_file(f"images/raw/img_{i:04d}.jpg", buf.getvalue())
        (work / "images").mkdir(exist_ok=True)
        (work / "images" / f"img_{i:04d}.jpg").write_bytes(buf.getvalue())
    image_bytes = sum(i["size"] for i in s3.find("images/raw", detail=True).values())
    ensure_ray()
    # The sink is local in every run: the runs differ only in where the input comes from.
    sets = ["source.uri=s3://images/raw/", f"sink.uri={work / 'thumbs'}", f"storage.options.s3.endpoint_url={endpoint}"]
    sets += [f"storage.options.s3.{k}={v}" for k, v in CREDENTIALS.items()]
    spec = load_pipeline(str(ROOT / "pipelines/thumbnails.yaml"), overrides=tuple(sets))
    options = RunOptions(progress=False, cache_dir=str(work / "pipeline-cache"))
    reports = []
    for _ in range(2):
        start = time.perf_counter()
        report = run_pipeline(spec, options)
        reports.append((time.perf_counter() - start, report))
    (first, r1), (second, r2) = reports
    local_spec = load_pipeline(str(ROOT / "pipelines/thumbnails.yaml"), overrides=(f"source.uri={work / 'images'}", f"sink.uri={work / 'thumbs'}"))
    start = time.perf_counter()
    run_pipeline(local_spec, RunOptions(progress=False))
    local = time.perf_counter() - start
    return {
        "images": images,
        "image_bytes": image_bytes,
        "first_s": first,
        "second_s": second,
        "local_input_s": local,
        "first_cache": vars(r1.cache) if r1.cache else None,
        "second_cache": vars(r2.cache) if r2.cache else None,
        "rows_out": r2.rows_out,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=220)
    parser.add_argument("--object-mb", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=5, help="Interleaved direct/cold rounds (best of each).")
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", dest="json_path")
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="dataflow-bench-cache-"))
    work.mkdir(parents=True, exist_ok=True)
    server, endpoint = start_moto()
    try:
        from connectors.storage.s3 import S3Storage

        s3 = S3Storage(endpoint_url=endpoint, **CREDENTIALS)
        r = read_benchmark(s3, args.objects, int(args.object_mb * 1024 * 1024), work, args.rounds)
        mb = r["bytes"] / 1e6
        print(f"reads of {r['objects']} objects, {mb:.0f} MB, loopback S3 (moto), one process:")
        print(f"  (direct = faster of s3fs cat_file {r['direct_plain_s']:.3f} s and ranged cat_file {r['direct_ranged_s']:.3f} s)")
        for name, key in (("direct s3fs", "direct_s"), ("cold cached", "cold_s"), ("warm cached", "warm_s"), ("raw local disk", "raw_local_s")):
            print(f"  {name:<15} {r[key]:8.3f} s  {mb / r[key]:9.1f} MB/s")
        cold_ratio = r["cold_s"] / r["direct_s"]
        warm_ratio = (mb / r["warm_s"]) / (mb / r["raw_local_s"])
        print(f"  cold / direct time          {cold_ratio:5.2f}x  (target <= 1.15x)")
        print(f"  warm / raw-local throughput {warm_ratio:5.2f}x  (target >= 0.80x)")
        p = pipeline_benchmark(s3, endpoint, args.images, work)
        speedup = p["first_s"] / p["second_s"]
        print(f"thumbnails.yaml over {p['images']} S3 JPEGs ({p['image_bytes'] / 1e6:.0f} MB) on local Ray, local sink, with the cache:")
        print(f"  first run  {p['first_s']:6.2f} s  (cache misses {p['first_cache']['misses'] if p['first_cache'] else 0})")
        print(f"  second run {p['second_s']:6.2f} s  (cache hits {p['second_cache']['hits'] if p['second_cache'] else 0})")
        print(f"  speedup    {speedup:5.2f}x  (target >= 3x)")
        print(f"  the same pipeline on local-disk input: {p['local_input_s']:6.2f} s (the floor the second run can reach)")
        if args.json_path:
            result = {"reads": r, "pipeline": p, "cold_ratio": cold_ratio, "warm_ratio": warm_ratio, "pipeline_speedup": speedup}
            pathlib.Path(args.json_path).write_text(json.dumps(result, indent=2))
    finally:
        server.kill()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
