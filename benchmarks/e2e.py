"""Whole-process image benchmark: `dataflow run` against a plain Ray Data script and a Daft script.

Each contender is a fresh process, timed from spawn to exit (imports, engine start, the work, the
write and shutdown all count), on the same generated 1024x768 JPEGs:
  dataflow   ``python -m dataflow run`` of image.decode -> image.resize(max_side 256) -> Parquet
  ray data   read_binary_files + map_batches(Pillow decode, thumbnail 256) + write_parquet
  daft       download, decode_image, resize(256, 192), write_parquet on Daft's native runner
             (runs only where Daft is installed: ``pip install daft 'pyarrow>=26'``)
Contenders alternate within each round (3 rounds); medians and min/max are printed, and ratios
(dataflow's time / the contender's). Cold means no Ray running before the process starts. When
``dataflow up`` exists, a second series runs dataflow against a warm local Ray it started. The
quickstart (``examples/quickstart.py``, 300 images) is timed whole.

Targets: cold dataflow <= 0.6x the Ray Data script and <= 1.2x Daft; warm dataflow <= 0.8x Daft;
quickstart under 20 s on 2 cores.

Usage: python benchmarks/e2e.py [--images 800] [--rounds 3] [--workdir DIR] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from examples.generate_images import generate_jpegs  # noqa: E402

PIPELINE = """\
version: 1
name: e2e_thumbnails
source: {{uri: {images}, format: image}}
steps:
  - op: image.decode
  - op: image.resize
    params: {{max_side: 256}}
sink: {{uri: {out}, format: parquet, mode: overwrite}}
"""

RAY_SCRIPT = """\
import io, sys
import numpy as np
import ray
from PIL import Image

def thumb(batch):
    out = []
    for data in batch["bytes"]:
        im = Image.open(io.BytesIO(data)).convert("RGB")
        im.thumbnail((256, 256))
        out.append(np.asarray(im))
    return {"path": batch["path"], "image": np.array(out)}

ray.data.read_binary_files(sys.argv[1], include_paths=True).map_batches(thumb, batch_size=64, batch_format="numpy").write_parquet(sys.argv[2])
"""

DAFT_SCRIPT = """\
import sys
import daft
from daft import functions as F

daft.set_runner_native()
df = daft.from_glob_path(sys.argv[1] + "/*.jpg").select("path")
df = df.with_column("image", F.resize(F.decode_image(F.download(df["path"]), mode="RGB"), 256, 192))
df.write_parquet(sys.argv[2], write_mode="overwrite")
"""


def timed(cmd: list[str], env: dict | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds


def summary(times: list[float]) -> dict:
    return {"median_s": round(statistics.median(times), 2), "min_s": round(min(times), 2), "max_s": round(max(times), 2)}


def ratios(ours: list[float], theirs: list[float]) -> dict:
    """dataflow / contender, per round (same round, so the same machine state)."""
    per_round = sorted(o / t for o, t in zip(ours, theirs))
    return {"median": round(statistics.median(per_round), 2), "min": round(per_round[0], 2), "max": round(per_round[-1], 2)}


def has_up() -> bool:
    return subprocess.run([sys.executable, "-m", "dataflow", "up", "--help"], capture_output=True).returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="dataflow-e2e-"))
    images = work / "images"
    if not images.exists():
        generate_jpegs(images, args.images, (1024, 768))
    (work / "pipeline.yaml").write_text(PIPELINE.format(images=images, out=work / "out_dataflow"))
    (work / "ray_script.py").write_text(RAY_SCRIPT)
    (work / "daft_script.py").write_text(DAFT_SCRIPT)
    env = {"PYTHONPATH": str(ROOT), "RAY_ADDRESS": ""}
    contenders = {
        "dataflow": [sys.executable, "-m", "dataflow", "run", str(work / "pipeline.yaml")],
        "ray_data": [sys.executable, str(work / "ray_script.py"), str(images), str(work / "out_ray_data")],
    }
    if importlib.util.find_spec("daft") is not None:
        contenders["daft"] = [sys.executable, str(work / "daft_script.py"), str(images), str(work / "out_daft")]
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, cmd in contenders.items():
            shutil.rmtree(work / f"out_{name}", ignore_errors=True)
            times[name].append(timed(cmd, env))
    result: dict = {"images": args.images, "rounds": args.rounds, "cold": {name: summary(t) for name, t in times.items()}}
    result["cold_ratios"] = {f"dataflow/{name}": ratios(times["dataflow"], t) for name, t in times.items() if name != "dataflow"}
    result["output_bytes"] = {name: sum(f.stat().st_size for f in (work / f"out_{name}").rglob("*") if f.is_file()) for name in contenders}
    if has_up():
        timed([sys.executable, "-m", "dataflow", "up"], env)
        try:
            warm = [timed(contenders["dataflow"], env) for _ in range(args.rounds)]
        finally:
            timed([sys.executable, "-m", "dataflow", "down"], env)
        result["warm_dataflow"] = summary(warm)
        if "daft" in times:
            result["warm_ratio_dataflow/daft"] = ratios(warm, times["daft"])
    else:
        result["warm_dataflow"] = "dataflow up is not available"
    quick = work / "quickstart"
    shutil.rmtree(quick, ignore_errors=True)
    result["quickstart_s"] = round(timed([sys.executable, str(ROOT / "examples" / "quickstart.py"), "--workdir", str(quick)], env), 2)
    print(json.dumps(result, indent=2))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
