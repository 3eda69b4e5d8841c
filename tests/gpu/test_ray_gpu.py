"""On a local Ray with the machine's GPU: steps given ``num_gpus`` run their GPU code and keep the CPU result."""
from __future__ import annotations

import json
import os
import pathlib
import random
import tempfile

import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline
from examples.generate_images import generate_jpegs
from examples.generate_text import ENGLISH, document
from tests.datagen import write_jsonl

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def ray_gpu():
    import ray

    os.environ["HOME"] = tempfile.mkdtemp(prefix="dataflow-ray-home-")
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray.init(num_cpus=4, num_gpus=1, include_dashboard=False, logging_level="WARNING")
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


def _rows(sink: pathlib.Path) -> list[dict]:
    manifest = json.loads((sink / "_manifest.json").read_text())
    return sorted((r for f in manifest["files"] for r in pq.read_table(sink / f["path"]).to_pylist()), key=lambda r: r["__source__"])


def _run(steps: list[dict], source: dict, sink: pathlib.Path) -> list[dict]:
    spec = parse_pipeline({"name": "gpu", "engine": "ray", "source": source, "steps": steps, "sink": {"uri": str(sink), "format": "parquet"}})
    run_pipeline(spec, RunOptions(progress=False))
    return _rows(sink)


def test_image_steps_with_num_gpus_give_the_cpu_hashes(ray_gpu, tmp_path):
    generate_jpegs(tmp_path / "jpegs", 12, size=(640, 480))
    source = {"uri": str(tmp_path / "jpegs"), "format": "image"}
    select = {"op": "table.select", "params": {"columns": ["phash", "width", "height"]}}
    gpu = {"num_gpus": 0.25}
    on_gpu = _run([{"op": "image.decode", "params": {"auto_draft": False}, "resources": gpu}, {"op": "image.resize", "params": {"max_side": 128}, "resources": gpu},
                   {"op": "image.phash", "resources": gpu}, select], source, tmp_path / "gpu")
    on_cpu = _run([{"op": "image.decode", "params": {"auto_draft": False, "device": "cpu"}}, {"op": "image.resize", "params": {"max_side": 128, "device": "cpu"}},
                   {"op": "image.phash", "params": {"device": "cpu"}}, select], source, tmp_path / "cpu")
    assert [(r["width"], r["height"]) for r in on_gpu] == [(r["width"], r["height"]) for r in on_cpu]
    # nvJPEG and libjpeg round the IDCT differently, so hashes may differ in a near-median bit
    assert sum(bin((a["phash"] ^ b["phash"]) & (2**64 - 1)).count("1") for a, b in zip(on_gpu, on_cpu)) <= 2 * len(on_cpu)


def test_minhash_dedup_with_num_gpus_keeps_the_cpu_rows(ray_gpu, tmp_path):
    rng = random.Random(5)
    texts = [document(rng, ENGLISH, 150) for _ in range(200)]
    write_jsonl(tmp_path / "docs" / "part.jsonl", [{"text": t} for t in texts + [t + " again" for t in texts[:20]]])
    source = {"uri": str(tmp_path / "docs"), "format": "jsonl"}
    on_gpu = _run([{"op": "text.dedup_minhash", "resources": {"num_gpus": 0.5}}], source, tmp_path / "gpu")
    on_cpu = _run([{"op": "text.dedup_minhash", "params": {"device": "cpu"}}], source, tmp_path / "cpu")
    assert [r["__source__"] for r in on_gpu] == [r["__source__"] for r in on_cpu] and len(on_cpu) < 220
