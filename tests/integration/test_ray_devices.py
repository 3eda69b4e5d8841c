"""GPU requests on Ray: the dedup key map gets the step's GPUs, and each worker picks CPU or GPU code.

The machines running this have no GPU, so the requests are checked in the lowered job and the
``map_batches`` arguments, the choice with a patched ``cuda_visible``, the results on the CPU path
against the op called directly, and the GPU test pipelines on a Ray that declares an absent GPU.
"""
from __future__ import annotations

import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile

import numpy as np
import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.engines.ray import devices
from dataflow.engines.ray.compile import RayGlobal, RayStage
from dataflow.engines.ray.global_ops import key_map_kwargs
from dataflow.ops.text.dedup_minhash import dedup_text_minhash
from dataflow.runner import run_pipeline
from dataflow.engines.registry import compile_pipeline
from dataflow.runtime.stage import StepCall
from examples.generate_text import ENGLISH, document
from tests.datagen import write_images, write_jsonl


def _minhash_spec(src: pathlib.Path, sink: pathlib.Path, resources: dict | None, device: str = "auto"):
    step = {"op": "text.dedup_minhash", "params": {"device": device}}
    if resources:
        step["resources"] = resources
    return parse_pipeline({
        "name": "minhash_gpu", "engine": "ray",
        "source": {"uri": str(src), "format": "jsonl"},
        "steps": [step], "sink": {"uri": str(sink), "format": "parquet"},
    })


def _docs(tmp_path: pathlib.Path) -> tuple[pathlib.Path, list[str]]:
    rng = random.Random(3)
    texts = [document(rng, ENGLISH, 120) for _ in range(30)]
    texts += [t.replace(" the ", " a ", 1) for t in texts[:6]]
    write_jsonl(tmp_path / "docs" / "part.jsonl", [{"text": t} for t in texts])
    return tmp_path / "docs", texts


def test_dedup_key_map_gets_the_steps_gpus(tmp_path):
    _, _, _, job = compile_pipeline(_minhash_spec(tmp_path, tmp_path / "out", {"num_gpus": 0.5, "num_cpus": 1}))
    (stage,) = [s for s in job.stages if isinstance(s, RayGlobal)]
    assert (stage.num_gpus, stage.num_cpus) == (0.5, 1)
    assert key_map_kwargs(stage) == {"batch_format": "numpy", "zero_copy_batch": False, "num_cpus": 1, "num_gpus": 0.5, "batch_size": 4096}
    assert "global[text.dedup_minhash] via distributed Ray lowering, num_cpus=1.0, num_gpus=0.5, batch_size=4096" in job.describe()
    _, _, _, plain = compile_pipeline(_minhash_spec(tmp_path, tmp_path / "out", None))
    assert "num_gpus" not in key_map_kwargs(plain.stages[0])


def test_workers_pick_the_gpu_variant_only_with_a_gpu_request_and_cuda(monkeypatch):
    calls = [StepCall(0, "image.decode", {"device": "auto"}), StepCall(1, "image.resize", {"device": "auto"}), StepCall(2, "image.filter_size", {})]
    monkeypatch.setattr(devices, "cuda_visible", lambda: True)
    chosen, impls = devices.worker_calls(calls, 0.25)
    assert impls == ["gpu", "gpu", "cpu"] and [c.params for c in chosen] == [c.params for c in calls]
    chosen, impls = devices.worker_calls(calls, None)
    assert impls == ["cpu", "cpu", "cpu"] and [getattr(c.params, "device", None) for c in chosen] == ["cpu", "cpu", None]
    monkeypatch.setattr(devices, "cuda_visible", lambda: False)
    assert devices.worker_calls(calls, 0.25)[1] == ["cpu", "cpu", "cpu"]


@pytest.mark.parametrize("device", ["auto", "cuda"], ids=str)
def test_minhash_on_ray_keeps_the_rows_the_op_keeps(ray_local, tmp_path, device):
    src, texts = _docs(tmp_path)
    sink = tmp_path / f"out-{device}"
    spec = _minhash_spec(src, sink, None, device)
    if device == "cuda":
        # The driver no longer resolves the device: the failure comes from the worker, naming the fix.
        with pytest.raises(Exception, match="num_gpus"):
            run_pipeline(spec, RunOptions(progress=False))
        return
    report = run_pipeline(spec, RunOptions(progress=False))
    manifest = json.loads((sink / "_manifest.json").read_text())
    kept = sorted(r["__source__"] for f in manifest["files"] for r in pq.read_table(sink / f["path"]).to_pylist())
    sources = np.array([f"{src / 'part.jsonl'}#line={i + 1}" for i in range(len(texts))], dtype=object)
    direct = dedup_text_minhash({"text": np.array(texts, dtype=object), "__source__": sources}, device="cpu")
    assert kept == sorted(direct["__source__"]) and report.rows_out == len(direct["__source__"]) < len(texts) - 4


def test_image_stage_on_ray_runs_the_cpu_code_without_a_gpu_request(ray_local, tmp_path):
    write_images(tmp_path / "img", 4, size=(96, 64), formats=("JPEG", "PNG"))
    spec = parse_pipeline({
        "name": "img_gpu", "engine": "ray",
        "source": {"uri": str(tmp_path / "img"), "format": "image"},
        "steps": [{"op": "image.decode"}, {"op": "image.resize", "params": {"max_side": 32}}, {"op": "image.phash"}, {"op": "table.select", "params": {"columns": ["phash", "width"]}}],
        "sink": {"uri": str(tmp_path / "out"), "format": "parquet"},
    })
    _, _, _, job = compile_pipeline(spec)
    assert all(s.num_gpus is None for s in job.stages if isinstance(s, RayStage))
    report = run_pipeline(spec, RunOptions(progress=False))
    assert report.rows_out == 4


_FAKE_GPU_RUN = """
import pathlib, sys, tempfile
import ray
ray.init(num_cpus=4, num_gpus=1, include_dashboard=False, logging_level="ERROR")
ray.data.DataContext.get_current().enable_progress_bars = False
import tests.gpu.test_ray_gpu as t
for name in ("test_minhash_dedup_with_num_gpus_keeps_the_cpu_rows", "test_image_steps_with_num_gpus_give_the_cpu_hashes"):
    getattr(t, name)(ray, pathlib.Path(tempfile.mkdtemp(dir=sys.argv[1])))
    print("passed", name, flush=True)
"""


def test_gpu_requests_schedule_and_keep_results_on_a_ray_declaring_a_gpu(tmp_path):
    """tests/gpu/test_ray_gpu.py's pipelines on a separate local Ray that declares one (absent) GPU.

    Ray then schedules the ``num_gpus`` requests (and checks them: a GPU map needs a batch size)
    while the workers, seeing no CUDA device, run the CPU code.
    """
    root = pathlib.Path(__file__).parents[2]
    with tempfile.TemporaryDirectory(prefix="df-ray-") as ray_tmp:  # short: Ray's socket paths must stay under 108 bytes
        env = {**os.environ, "PYTHONPATH": str(root), "HOME": str(tmp_path), "RAY_TMPDIR": ray_tmp,
               "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
        done = subprocess.run([sys.executable, "-c", _FAKE_GPU_RUN, str(tmp_path)], cwd=root, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("passed ") == 2, done.stdout
