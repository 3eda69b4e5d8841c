"""The ``dataflow`` command: the installed script as a subprocess against the session's Ray, and
``dataflow run`` in process (click's CliRunner, output captured, so not a terminal) on the session's Spark."""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess

import pyarrow.parquet as pq
from click.testing import CliRunner

from dataflow.cli.main import cli
from tests.datagen import write_images

ROOT = pathlib.Path(__file__).parents[2]
RAY_STATUS = re.compile(r"^dataflow: \d+ rows written in \d+ files, \d+s$", re.M)
SPARK_STATUS = re.compile(r"^dataflow: spark (\d+)/(\d+) tasks \(\d+%\), \d+s$", re.M)


def _env(ray_local, **extra):
    return {**os.environ, "RAY_ADDRESS": ray_local.get_runtime_context().gcs_address, **extra}


def test_installed_cli_runs_thumbnails_and_prints_a_summary(ray_local, image_dir, tmp_path):
    """Captured output is not a terminal: no colours on stdout, and Ray's one-line status on stderr."""
    write_images(image_dir / "small", 2, size=(32, 24))  # dropped by image.filter_size (min_side 64)
    report = tmp_path / "report.json"
    env = _env(ray_local, DATAFLOW_DATA=str(image_dir), DATAFLOW_OUT=str(tmp_path / "thumbs"))
    cmd = ["dataflow", "run", str(ROOT / "pipelines" / "thumbnails.yaml"), "--set", "errors.max_error_ratio=0.5", "--report", str(report)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"thumbnails on ray: published -> {tmp_path / 'thumbs'}")
    assert "\x1b[" not in out.stdout and "\x1b[" not in out.stderr
    summary = dict(line.strip().split("  ", 1) for line in out.stdout.splitlines()[1:])
    summary = {k: v.strip() for k, v in summary.items()}
    assert (summary["rows read"], summary["rows written"]) == ("17", "12")
    assert summary["dropped by image.filter_size"] == "2 (image.filter_size:min_side: 2)"
    assert summary["rows errored"].startswith("3 -> ")
    assert re.fullmatch(r"\d+\.\d s", summary["wall time"]) and re.fullmatch(r"[\d,]+\.\d", summary["rows/s"])
    assert RAY_STATUS.search(out.stderr), out.stderr
    data = json.loads(report.read_text())
    assert set(data) >= {"pipeline", "engine", "rows_in", "rows_out", "rows_errored", "wall_seconds", "output", "errors", "steps"}
    assert (data["rows_in"], data["rows_out"], data["rows_errored"]) == (17, 12, 3)
    assert [s["op"] for s in data["steps"]] == ["read", "image.decode", "image.filter_size", "image.resize", "image.encode", "table.select"]
    assert set(data["steps"][1]) >= {"op", "rows_in", "rows_out", "rows_errored", "seconds"}


def test_cli_exit_codes_for_budget_and_existing_sink(ray_local, image_dir, tmp_path):
    """--quiet prints neither progress nor a summary (errors still go to stderr)."""
    env = _env(ray_local, DATAFLOW_DATA=str(image_dir), DATAFLOW_OUT=str(tmp_path / "thumbs"))
    pipeline = str(ROOT / "pipelines" / "thumbnails.yaml")
    over = subprocess.run(["python", "-m", "dataflow", "run", pipeline, "--quiet"], env=env, capture_output=True, text=True, timeout=240)
    assert over.returncode == 1
    assert "error budget exceeded" in over.stderr and "nothing was published" in over.stderr
    ok = subprocess.run(["dataflow", "run", pipeline, "--quiet", "--set", "errors.max_error_ratio=0.5", "--set", "sink.mode=error"], env=env, capture_output=True, text=True, timeout=240)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == "" and not re.search(r"^dataflow: ", ok.stderr, re.M), ok.stderr
    again = subprocess.run(["dataflow", "run", pipeline, "--quiet", "--set", "sink.mode=error"], env=env, capture_output=True, text=True, timeout=240)
    assert again.returncode == 2
    assert "already holds committed output" in again.stderr


def _table_pipeline(tmp_path: pathlib.Path) -> pathlib.Path:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"a": i}) + "\n" for i in range(40)))
    path = tmp_path / "table.yaml"
    path.write_text(
        f"name: table\nengine: spark\nsource: {{uri: '{data}', format: jsonl}}\n"
        "steps: [{op: table.filter_rows, params: {where: 'a >= 10'}}]\n"
        f"sink: {{uri: '{tmp_path / 'out'}', format: parquet, mode: overwrite}}\n"
    )
    return path


def test_spark_run_prints_its_status_tracker_line_unless_quiet(spark_local, tmp_path):
    pipeline = _table_pipeline(tmp_path)
    result = CliRunner().invoke(cli, ["run", str(pipeline)])
    assert result.exit_code == 0, result.output
    lines = SPARK_STATUS.findall(result.stderr)
    assert lines, result.stderr
    done, total = map(int, lines[-1])
    assert done == total > 0  # the final count, printed when the run ends
    assert "\x1b[" not in result.stdout and "dropped by table.filter_rows  10" in result.stdout
    quiet = CliRunner().invoke(cli, ["run", str(pipeline), "--quiet"])
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stdout == "" and quiet.stderr == ""


def test_commit_refuses_until_every_shard_run_left_its_marker(spark_local, tmp_path):
    """``dataflow run --shard I/N`` stages one shard each; ``dataflow commit SINK --shards N`` publishes only when all N are there."""
    data = tmp_path / "rows"
    data.mkdir()
    for i in range(3):
        (data / f"part-{i}.jsonl").write_text("".join(json.dumps({"a": 10 * i + j}) + "\n" for j in range(10)))
    out = tmp_path / "out"
    pipeline = tmp_path / "table.yaml"
    pipeline.write_text(
        f"name: sharded\nengine: spark\nsource: {{uri: '{data}', format: jsonl}}\n"
        f"steps: [{{op: table.filter_rows, params: {{where: 'a % 2 = 0'}}}}]\nsink: {{uri: '{out}', format: parquet}}\n"
    )
    runner = CliRunner()
    for i in (0, 2):
        staged = runner.invoke(cli, ["run", str(pipeline), "--shard", f"{i}/3", "--quiet"])
        assert staged.exit_code == 0, staged.output
    early = runner.invoke(cli, ["commit", str(out), "--shards", "3"])
    assert early.exit_code == 1
    assert f"cannot commit {out}: shard(s) 1 of 3 have no completion marker yet" in early.stderr
    assert not (out / "_SUCCESS").exists()
    assert runner.invoke(cli, ["run", str(pipeline), "--shard", "1/3", "--quiet"]).exit_code == 0
    done = runner.invoke(cli, ["commit", str(out), "--shards", "3"])
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith(f"sharded on shards: published -> {out}") and (out / "_SUCCESS").exists()
    assert sorted(pq.read_table(out).column("a").to_pylist()) == list(range(0, 30, 2))


def test_hostile_images_go_to_errors_and_the_report_stays_bounded(ray_local, tmp_path):
    """Decompression bombs (PNG, GIF), an empty, a truncated and a sparse 80 MiB file among good images:
    exit 0, each bad file in ``_errors/`` with its reason, and the report is written without decoding them."""
    from tests.datagen import write_hostile_images

    data, out = tmp_path / "in", tmp_path / "out"
    write_images(data, 4, size=(64, 48))
    bad = write_hostile_images(data)
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        f"name: hostile\nsource: {{uri: '{data}', format: image}}\n"
        "steps: [{op: image.decode, params: {max_pixels: 50000000}}, {op: image.resize, params: {max_side: 32}}]\n"
        f"sink: {{uri: '{out}', format: parquet, mode: overwrite}}\nerrors: {{max_error_ratio: 0.9}}\n"
    )
    run = subprocess.run(["dataflow", "run", str(pipeline), "--quiet"], env=_env(ray_local), capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    assert pq.read_table(out).num_rows == 4
    errors = {pathlib.Path(r["source"].split("://", 1)[-1]).name: r["reason"] for f in (out / "_errors").rglob("*") if f.is_file()
              for r in map(json.loads, f.read_text().splitlines())}
    assert set(errors) == {p.name for p in bad.values()}
    assert errors["bad_png_bomb.png"] == "image of 12000x12000 pixels exceeds max_pixels=50000000"
    assert "exceeds limit" in errors["bad_gif_bomb.gif"] and errors["bad_empty.png"] == "empty image data"
    assert errors["bad_truncated.png"].startswith("undecodable image") and errors["bad_zeros.png"].startswith("undecodable image: cannot identify")
    report = json.loads((out / "_dataflow" / "report.json").read_text())
    assert (report["rows_in"], report["rows_out"], report["rows_errored"]) == (9, 4, 5)
    page = (out / "_dataflow" / "report.html").read_text()
    assert "not viewable: image of 12000x12000 pixels exceeds max_pixels=50000000" in page
    built = (out / "_dataflow" / "report.html").stat().st_mtime - (out / "_manifest.json").stat().st_mtime
    assert built < 10, f"the report took {built:.1f} s after the commit"
