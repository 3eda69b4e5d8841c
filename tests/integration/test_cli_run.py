"""The installed ``dataflow`` command, run as a subprocess against the session's Ray."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).parents[2]


def _env(ray_local, **extra):
    return {**os.environ, "RAY_ADDRESS": ray_local.get_runtime_context().gcs_address, **extra}


def test_installed_cli_runs_thumbnails_and_prints_a_summary(ray_local, image_dir, tmp_path):
    report = tmp_path / "report.json"
    env = _env(ray_local, DATAFLOW_DATA=str(image_dir), DATAFLOW_OUT=str(tmp_path / "thumbs"))
    cmd = ["dataflow", "run", str(ROOT / "pipelines" / "thumbnails.yaml"), "--set", "errors.max_error_ratio=0.5", "--report", str(report)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    assert "rows read" in out.stdout and "rows written" in out.stdout and "rows errored" in out.stdout
    data = json.loads(report.read_text())
    assert set(data) >= {"pipeline", "engine", "rows_in", "rows_out", "rows_errored", "wall_seconds", "output", "errors", "steps"}
    assert (data["rows_in"], data["rows_out"], data["rows_errored"]) == (15, 12, 3)
    assert [s["op"] for s in data["steps"]] == ["read", "image.decode", "image.filter_size", "image.resize", "image.encode", "table.select"]
    assert set(data["steps"][1]) >= {"op", "rows_in", "rows_out", "rows_errored", "seconds"}


def test_cli_exit_codes_for_budget_and_existing_sink(ray_local, image_dir, tmp_path):
    env = _env(ray_local, DATAFLOW_DATA=str(image_dir), DATAFLOW_OUT=str(tmp_path / "thumbs"))
    pipeline = str(ROOT / "pipelines" / "thumbnails.yaml")
    over = subprocess.run(["python", "-m", "dataflow", "run", pipeline, "--quiet"], env=env, capture_output=True, text=True, timeout=240)
    assert over.returncode == 1
    assert "error budget exceeded" in over.stderr and "nothing was published" in over.stderr
    ok = subprocess.run(["dataflow", "run", pipeline, "--quiet", "--set", "errors.max_error_ratio=0.5", "--set", "sink.mode=error"], env=env, capture_output=True, text=True, timeout=240)
    assert ok.returncode == 0, ok.stderr
    again = subprocess.run(["dataflow", "run", pipeline, "--quiet", "--set", "sink.mode=error"], env=env, capture_output=True, text=True, timeout=240)
    assert again.returncode == 2
    assert "already holds committed output" in again.stderr
