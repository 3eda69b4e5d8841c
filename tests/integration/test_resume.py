"""Fault injection with real processes and real signals: kill -9 and resume, kill a Ray worker."""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import threading
import time

import pyarrow.parquet as pq
import pytest

import dataflow
from dataflow.engines.base import RunOptions
from tests.datagen import write_images

KILL_ROUNDS = int(os.environ.get("DATAFLOW_KILL_ROUNDS", "1"))
PIPELINE = """\
version: 1
name: resumable
source:
  uri: "{src}"
  format: image
  options: {{files_per_shard: 3}}
steps:
  - op: image.decode
  - op: image.resize
    params: {{max_side: 48}}
  - op: image.encode
    params: {{format: png}}
sink: {{uri: "{out}", format: parquet, rows_per_file: 2}}
"""


def _digest(sink: pathlib.Path) -> list[tuple[str, str]]:
    """Every output row as (source, hash of its bytes), sorted; duplicates would show twice."""
    manifest = json.loads((sink / "_manifest.json").read_text())
    rows = []
    for f in manifest["files"]:
        for r in pq.read_table(sink / f["path"], columns=["__source__", "bytes"]).to_pylist():
            rows.append((r["__source__"], hashlib.sha1(r["bytes"]).hexdigest()))
    return sorted(rows)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("resume") / "images"
    write_images(folder, 24, size=(200, 150))
    return folder


@pytest.fixture(scope="module")
def clean_digest(ray_local, images, tmp_path_factory):
    out = tmp_path_factory.mktemp("clean") / "out"
    dataflow.Pipeline.from_yaml_text(PIPELINE.format(src=images, out=out)).run(progress=False)
    return _digest(out)


def _cli(ray_local, pipeline: pathlib.Path, *extra, stall_after: int | None = None, env: dict[str, str] | None = None) -> subprocess.Popen:
    """``dataflow run``; with ``stall_after``, one that stalls once that many shards are committed (``tests.stall``)."""
    env = {**os.environ, "RAY_ADDRESS": ray_local.get_runtime_context().gcs_address, "DATAFLOW_SHARD_CONCURRENCY": "1", **(env or {})}
    entry = ["-m", "dataflow"] if stall_after is None else ["-m", "tests.stall", str(stall_after)]
    return subprocess.Popen([sys.executable, *entry, "run", str(pipeline), "--quiet", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_markers(out: pathlib.Path, n: int, proc: subprocess.Popen, timeout: float = 120) -> int:
    """Wait until the stalling run (``_cli(stall_after=n)``) has committed ``n`` shards; return how many are committed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if (out / "_dataflow" / "stalled").exists():
            return len(list((out / "_dataflow" / "progress").glob("*.json")))
        time.sleep(0.05)
    raise AssertionError(f"run ended or timed out before {n} shards committed: {proc.communicate()}")


@pytest.mark.parametrize(("kill_after", "flags"), [(1, ("--no-stream-shards",)), (3, ("--no-stream-shards",)), (6, ("--no-stream-shards",)), (3, ())],
                         ids=["after-1-shard", "after-3-shards", "after-6-shards", "streamed-after-3-shards"])
@pytest.mark.timeout(300 * KILL_ROUNDS)
def test_kill_9_then_resume_equals_a_clean_run(ray_local, images, clean_digest, tmp_path, kill_after, flags):
    for round_ in range(KILL_ROUNDS):
        out = tmp_path / f"out{round_}"
        pipeline = tmp_path / "p.yaml"
        pipeline.write_text(PIPELINE.format(src=images, out=out))
        n = kill_after + random.randint(0, 1)
        proc = _cli(ray_local, pipeline, *flags, stall_after=n)
        committed = _wait_for_markers(out, n, proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert not (out / "_SUCCESS").exists()
        resumed = _cli(ray_local, pipeline, *flags)
        stdout, stderr = resumed.communicate(timeout=240)
        assert resumed.returncode == 0, stderr
        assert _digest(out) == clean_digest, f"killed after {committed} shards"
        assert not (out / "_dataflow" / "progress").exists() and not (out / "_tmp").exists()
        assert (out / "_dataflow" / "report.json").exists()


@pytest.mark.parametrize("flags", [("--no-stream-shards",), ()], ids=["per-shard", "streamed"])
def test_kill_9_while_listing_then_resume_keeps_the_committed_shards(ray_local, images, clean_digest, tmp_path, flags):
    """Killed before its listing ended (no input fingerprint yet): the resume lists everything first and keeps the shards whose files did not change."""
    out = tmp_path / "out"
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(PIPELINE.format(src=images, out=out))
    # pages of 3 files, shards of 3: the listing stops after 2 pages (2 shards) and never ends
    proc = _cli(ray_local, pipeline, *flags, stall_after=2, env={"DATAFLOW_LISTING_PAGE": "3", "DATAFLOW_STALL_LISTING_PAGES": "2"})
    assert _wait_for_markers(out, 2, proc) == 2
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert json.loads((out / "_dataflow" / "state.json").read_text())["input_fingerprint"] is None
    killed = {json.loads(p.read_text())["shard"]: json.loads(p.read_text())["run_id"] for p in (out / "_dataflow" / "progress").glob("*.json")}
    resumed = _cli(ray_local, pipeline, *flags, env={"DATAFLOW_LISTING_PAGE": "5"})  # another page size: the same shards
    _, stderr = resumed.communicate(timeout=240)
    assert resumed.returncode == 0, stderr
    assert _digest(out) == clean_digest
    ids = _run_ids(out)
    assert len(ids) == 8 and {s: ids[s] for s in killed} == killed, "the shards committed before the kill were run again"


def _kill_after(ray_local, pipeline: pathlib.Path, out: pathlib.Path, n: int) -> dict[str, str]:
    """Start ``dataflow run``, SIGKILL it once ``n`` shards are committed; return their run ids by shard."""
    proc = _cli(ray_local, pipeline, stall_after=n)
    assert _wait_for_markers(out, n, proc) == n
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "_SUCCESS").exists()
    markers = [json.loads(p.read_text()) for p in (out / "_dataflow" / "progress").glob("*.json")]
    return {m["shard"]: m["run_id"] for m in markers}


def _run_ids(sink: pathlib.Path) -> dict[str, str]:
    return {s["shard"]: s["run_id"] for s in json.loads((sink / "_manifest.json").read_text())["shards"]}


def test_changed_pipeline_starts_over(ray_local, images, tmp_path):
    out = tmp_path / "out"
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(PIPELINE.format(src=images, out=out))
    killed = _kill_after(ray_local, pipeline, out, 2)
    changed = _cli(ray_local, pipeline, "--set", "steps[1].params.max_side=40")
    _, stderr = changed.communicate(timeout=240)
    assert changed.returncode == 0, stderr
    manifest = json.loads((out / "_manifest.json").read_text())
    rows = [r for f in manifest["files"] for r in pq.read_table(out / f["path"], columns=["width", "height"]).to_pylist()]
    assert len(rows) == manifest["rows_out"] == 24
    assert {max(r["width"], r["height"]) for r in rows} == {40}, "rows staged under max_side 48 were kept"
    assert not set(_run_ids(out).values()) & set(killed.values())


def test_restart_discards_progress(ray_local, images, clean_digest, tmp_path):
    out = tmp_path / "out"
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(PIPELINE.format(src=images, out=out))
    killed = _kill_after(ray_local, pipeline, out, 2)
    restarted = _cli(ray_local, pipeline, "--restart")
    _, stderr = restarted.communicate(timeout=240)
    assert restarted.returncode == 0, stderr
    assert _digest(out) == clean_digest
    ids = _run_ids(out)
    assert len(ids) == 8 and len(set(ids.values())) == 1 and not set(ids.values()) & set(killed.values())


GLOBAL_PIPELINE = PIPELINE.replace("  - op: image.encode", "  - op: image.phash\n  - op: image.dedup_phash\n    params: {{max_distance: 6}}\n  - op: image.encode")


@pytest.fixture(scope="module")
def clean_global_digest(ray_local, images, tmp_path_factory):
    out = tmp_path_factory.mktemp("clean_global") / "out"
    dataflow.Pipeline.from_yaml_text(GLOBAL_PIPELINE.format(src=images, out=out)).run(progress=False)
    return _digest(out)


def test_kill_after_the_map_phase_resumes_without_redoing_map_shards(ray_local, images, clean_global_digest, tmp_path):
    """A global step reads the checkpoint the map shards staged; a resume runs only the global step."""
    out = tmp_path / "out"
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(GLOBAL_PIPELINE.format(src=images, out=out))
    killed = _kill_after(ray_local, pipeline, out, 8)  # 24 images, 3 per shard
    resumed = _cli(ray_local, pipeline)
    _, stderr = resumed.communicate(timeout=240)
    assert resumed.returncode == 0, stderr
    assert _digest(out) == clean_global_digest
    shards = json.loads((out / "_manifest.json").read_text())["shards"]
    maps = {s["shard"]: s["run_id"] for s in shards if s["phase"] == "map"}
    assert len(maps) == 8 and maps == {k: v for k, v in killed.items() if k in maps}, "map shards were computed again"
    [final] = [s for s in shards if s["phase"] == "global"]
    assert final["run_id"] not in killed.values()


def test_killing_a_ray_worker_mid_run_still_completes_the_output(ray_local, images, clean_digest, tmp_path):
    psutil = pytest.importorskip("psutil")
    out = tmp_path / "out"
    killed = []

    def kill_one_worker():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            for proc in psutil.process_iter(["cmdline"]):
                cmd = " ".join(proc.info["cmdline"] or [])
                if cmd.startswith("ray::") and "MapBatches" in cmd:
                    proc.kill()
                    killed.append(cmd)
                    return
            time.sleep(0.02)

    thread = threading.Thread(target=kill_one_worker)
    thread.start()
    dataflow.Pipeline.from_yaml_text(PIPELINE.format(src=images, out=out)).run(progress=False)
    thread.join()
    assert killed, "no Ray worker was running a map task"
    assert _digest(out) == clean_digest


def test_shard_runs_then_commit_publish_once_all_markers_exist(ray_local, images, clean_digest, tmp_path):
    from dataflow.errors import RunError
    from dataflow.runner import commit_shards, run_pipeline

    out = tmp_path / "out"
    spec = dataflow.Pipeline.from_yaml_text(PIPELINE.format(src=images, out=out)).spec
    for i in (0, 2):
        run_pipeline(spec, RunOptions(progress=False), shard=(i, 3))
    with pytest.raises(RunError, match="shard\\(s\\) 1 of 3 have no completion marker"):
        commit_shards(str(out), 3)
    run_pipeline(spec, RunOptions(progress=False), shard=(1, 3))
    report = commit_shards(str(out), 3)
    assert report.published and _digest(out) == clean_digest


def test_shard_runs_of_a_global_pipeline_commit_with_the_global_step_run_once(ray_local, images, clean_global_digest, tmp_path):
    from dataflow.runner import commit_shards, run_pipeline

    out = tmp_path / "out"
    spec = dataflow.Pipeline.from_yaml_text(GLOBAL_PIPELINE.format(src=images, out=out)).spec
    for i in range(3):
        run_pipeline(spec, RunOptions(progress=False), shard=(i, 3))
    report = commit_shards(str(out), 3)
    assert report.published and _digest(out) == clean_global_digest
    phases = [s["phase"] for s in json.loads((out / "_manifest.json").read_text())["shards"]]
    assert sorted(phases) == ["global", "map", "map", "map"]
