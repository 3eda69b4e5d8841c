"""Image benchmark: our pipeline (decode -> resize 256 -> phash) against the same work in plain Ray Data.

Runs, in one Ray session, on the same generated 1024x768 JPEGs:
  ours (draft)    the dataflow pipeline as a user writes it; the planner (DraftJpegDecodes) makes
                  image.decode read the JPEGs at reduced DCT scale because an image.resize follows
  ours (no draft) the same pipeline with auto_draft: false: full decode, as the baselines do
  ray binary      read_binary_files + map_batches(Pillow decode, Lanczos thumbnail, phash)
  ray images      read_images + map_batches(Lanczos resize, phash)
  floor           the decode floor: one process, no framework, Pillow's draft() decode of the
                  same files in memory, the same Lanczos resize and phash; its images/s is what one
                  core can do at best, and "ours per core / floor" (our images/s after engine
                  start divided by the Ray session's CPUs, over the floor's) is issue 18's point 4
                  (target >= 0.6)
  daft            optional: runs only when Daft is installed (``pip install daft``, not a dataflow
                  dependency); Daft's native download + decode + resize, phash as a Daft UDF, on
                  Daft's native (in-process, multithreaded) runner, not on the Ray session
and prints each time after engine start (every engine warmed up first on 8 other files), and
ratios (baseline time / our time). Targets: >= 1.5x with draft, >= 0.95x (<= 1.05x slower)
without. ``--ops-only`` times resize+phash in memory on CPU and on ``--device`` (for GPU boxes).

Usage: python benchmarks/image.py [--images 400] [--workdir DIR] [--json OUT.json] [--ops-only --device cuda]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from examples.generate_images import generate_jpegs, picture  # noqa: E402

SIDE = 256


def _pillow_thumb_phash(batch: dict) -> dict:
    import io

    from PIL import Image

    from dataflow.ops.image.phash import phash_pixels

    hashes, widths, heights = [], [], []
    for data in batch["bytes"]:
        im = Image.open(io.BytesIO(data)).convert("RGB")
        im.thumbnail((SIDE, SIDE), Image.Resampling.LANCZOS, reducing_gap=None)
        px = np.asarray(im)
        hashes.append(phash_pixels(px))
        widths.append(im.width)
        heights.append(im.height)
    return {"phash": np.array(hashes, dtype=np.int64), "width": np.array(widths), "height": np.array(heights)}


def _resize_phash(batch: dict) -> dict:
    from PIL import Image

    from dataflow.ops.image.phash import phash_pixels
    from dataflow.ops.image.resize import fit_within

    hashes, widths, heights = [], [], []
    for px in batch["image"]:
        w, h = fit_within(px.shape[1], px.shape[0], SIDE)
        small = np.asarray(Image.fromarray(px).resize((w, h), Image.Resampling.LANCZOS))
        hashes.append(phash_pixels(small))
        widths.append(w)
        heights.append(h)
    return {"phash": np.array(hashes, dtype=np.int64), "width": np.array(widths), "height": np.array(heights)}


def run_ours(folder: pathlib.Path, out: pathlib.Path, draft: bool) -> float:
    from dataflow.dsl.parse import parse_pipeline
    from dataflow.engines.base import RunOptions
    from dataflow.runner import run_pipeline
    from dataflow.engines.registry import engine_caps
    from dataflow.plan.planner import plan_pipeline

    decode = {"op": "image.decode", "params": {"device": "cpu"} if draft else {"auto_draft": False, "device": "cpu"}}
    spec = parse_pipeline({
        "name": "bench_image",
        "source": {"uri": str(folder), "format": "image"},
        "steps": [decode, {"op": "image.resize", "params": {"max_side": SIDE, "device": "cpu"}}, {"op": "image.phash", "params": {"device": "cpu"}},
                  {"op": "table.select", "params": {"columns": ["phash", "width", "height"]}}],
        "sink": {"uri": str(out), "format": "parquet", "mode": "overwrite"},
    })
    _, optimized = plan_pipeline(spec, engine_caps())
    decode_step = next(s for n in optimized.nodes for s in getattr(n, "steps", (n,)) if getattr(s, "op", None) and s.op.name == "image.decode")
    assert decode_step.params.draft_max_side == (SIDE if draft else None), decode_step.params  # the planner's choice
    start = time.perf_counter()
    report = run_pipeline(spec, RunOptions(progress=False))
    assert report.rows_out == len(list(folder.glob("*.jpg"))), report
    return time.perf_counter() - start


def run_floor(paths: list[str]) -> float:
    """The decode floor: the same decode (draft), resize and phash in this process, files read into memory first."""
    import io

    from PIL import Image

    from dataflow.ops.image.phash import phash_pixels

    datas = [pathlib.Path(p).read_bytes() for p in paths]
    start = time.perf_counter()
    for data in datas:
        im = Image.open(io.BytesIO(data))
        im.draft("RGB", (SIDE, SIDE))
        im = im.convert("RGB")
        im.thumbnail((SIDE, SIDE), Image.Resampling.LANCZOS, reducing_gap=None)
        phash_pixels(np.asarray(im))
    return time.perf_counter() - start


def run_ray_binary(paths: list[str], out: pathlib.Path) -> float:
    import ray

    start = time.perf_counter()
    ray.data.read_binary_files(paths).map_batches(_pillow_thumb_phash, batch_size=64, batch_format="numpy").write_parquet(str(out))
    return time.perf_counter() - start


def run_ray_images(paths: list[str], out: pathlib.Path) -> float:
    import ray

    start = time.perf_counter()
    ray.data.read_images(paths, mode="RGB").map_batches(_resize_phash, batch_size=64, batch_format="numpy").write_parquet(str(out))
    return time.perf_counter() - start


def run_daft(paths: list[str], out: pathlib.Path) -> float | None:
    try:
        import daft
    except ImportError:
        return None
    if daft.runners.get_or_infer_runner_type() != "native":
        daft.set_runner_native()  # Daft would otherwise pick the Ray session up and run on it
    from dataflow.ops.image.phash import phash_pixels

    @daft.func(return_dtype=daft.DataType.int64())
    def phash(img: np.ndarray) -> int:
        return phash_pixels(np.asarray(img))

    from daft import functions as F

    start = time.perf_counter()
    df = daft.from_pydict({"path": paths})
    df = df.with_column("image", F.resize(F.decode_image(F.download(df["path"]), mode="RGB"), SIDE, SIDE * 3 // 4))
    df.select(phash(df["image"]).alias("phash")).write_parquet(str(out), write_mode="overwrite")
    return time.perf_counter() - start


def ops_only(device: str, count: int) -> dict:
    """Time resize(256)+phash on in-memory 1024x768 pictures on CPU and on ``device``."""
    from dataflow.ops.image.phash import phash_image
    from dataflow.ops.image.resize import resize_image

    images = np.empty(count, dtype=object)
    for i in range(count):
        images[i] = picture(1024, 768, seed=i)
    result = {}
    for where in ("cpu", device):
        resize_image({"image": images[:2].copy()}, max_side=SIDE, device=where)  # warm up (CUDA context, caches)
        start = time.perf_counter()
        batch = resize_image({"image": images.copy()}, max_side=SIDE, device=where)
        phash_image(batch, device=where)
        result[f"resize_phash_{where}_images_per_s"] = round(count / (time.perf_counter() - start), 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", default=None, help="also write the results here")
    parser.add_argument("--ops-only", action="store_true")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    if args.ops_only:
        result = ops_only(args.device, min(args.images, 64))
    else:
        import ray

        work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="bench-image-"))
        folder = work / "jpegs"
        if len(list(folder.glob("*.jpg"))) != args.images:
            generate_jpegs(folder, args.images)
        paths = sorted(str(p) for p in folder.glob("*.jpg"))
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        start = time.perf_counter()
        ray.init(include_dashboard=False, logging_level="ERROR")
        ray.data.DataContext.get_current().enable_progress_bars = False
        result = {"images": args.images, "ray_init_s": round(time.perf_counter() - start, 2)}
        warm = work / "warm"
        if not warm.exists():
            generate_jpegs(warm, 8, seed=1)
        warm_paths = sorted(str(p) for p in warm.glob("*.jpg"))
        run_ray_binary(warm_paths, work / "out_warm_ray")  # worker start-up and imports
        run_ray_images(warm_paths, work / "out_warm_images")
        run_ours(warm, work / "out_warm_ours", draft=False)
        run_daft(warm_paths, work / "out_warm_daft")
        result["ray_binary_s"] = run_ray_binary(paths, work / "out_binary")
        result["ray_images_s"] = run_ray_images(paths, work / "out_images")
        result["ours_draft_s"] = run_ours(folder, work / "out_ours_draft", draft=True)
        result["ours_nodraft_s"] = run_ours(folder, work / "out_ours_full", draft=False)
        result["floor_s"] = run_floor(paths)
        cpus = ray.cluster_resources().get("CPU", 1)
        result["ours_per_core_over_floor"] = round(result["floor_s"] / (result["ours_draft_s"] * cpus), 2)
        daft_s = run_daft(paths, work / "out_daft")
        result["daft_s"] = daft_s if daft_s is not None else "not installed (pip install daft)"
        for base in ("ray_binary", "ray_images"):
            result[f"{base}_over_ours_draft"] = round(result[f"{base}_s"] / result["ours_draft_s"], 2)
            result[f"{base}_over_ours_nodraft"] = round(result[f"{base}_s"] / result["ours_nodraft_s"], 2)
        if daft_s is not None:
            result["daft_over_ours_draft"] = round(daft_s / result["ours_draft_s"], 2)
        result = {k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}
    print(json.dumps(result, indent=2))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
