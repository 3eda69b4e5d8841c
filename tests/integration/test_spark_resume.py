"""Spark runs are sharded and resumable: kill -9 the ``dataflow run`` process, run it again, compare.

Real processes and signals. Each ``dataflow run`` subprocess starts its own local Spark (15-30 s
on 2 cores), so the data is tiny (4 shards) and one test kills a run, then kills the resumed run
again, before the last resume; ``DATAFLOW_KILL_ROUNDS`` repeats each test.
"""
from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from dataflow import Pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline
from tests.datagen import write_jsonl

KILL_ROUNDS = int(os.environ.get("DATAFLOW_KILL_ROUNDS", "1"))
FILES = 8
SHARDS = 4  # files_per_shard: 2
MAP_ONLY = """\
version: 1
name: spark_resumable
engine: spark
source: {{uri: "{src}", format: text, options: {{split: line, files_per_shard: 2}}}}
steps:
  - op: table.parse_json
    params: {{fields: {{device: string, reading: double, n: long}}}}
  - op: table.filter_rows
    params: {{where: "reading >= 0"}}
  - op: table.with_columns
    params: {{columns: {{scaled: "reading * 10", tag: "device || '-' || cast(n AS string)"}}}}
sink: {{uri: "{out}", format: parquet}}
"""
GLOBAL = """\
version: 1
name: spark_resumable_global
engine: spark
source: {{uri: "{src}", format: jsonl, options: {{files_per_shard: 2}}}}
steps:
  - op: table.filter_rows
    params: {{where: "reading >= 0"}}
  - op: table.with_columns
    params: {{columns: {{scaled: "reading * 10"}}}}
  - op: table.aggregate
    params: {{keys: [device], aggregations: {{rows: "count(*)", total: "sum(scaled)", top: "max(n)"}}}}
sink: {{uri: "{out}", format: parquet}}
"""


def _files(folder: pathlib.Path) -> pathlib.Path:
    for i in range(FILES):
        rows = [{"device": f"d{(i + j) % 5}", "reading": float((i * 7 + j) % 11 - 2), "n": i * 100 + j} for j in range(15)]
        bad = [b'{"device": "broken"'] if i % 4 == 0 else []
        write_jsonl(folder / f"part-{i:02d}.jsonl", rows, bad)
    return folder


def _digest(sink: pathlib.Path) -> tuple[list[str], list[str]]:
    """Every output row and every error record, sorted; a lost or duplicated one shows."""
    manifest = json.loads((sink / "_manifest.json").read_text())
    rows = sorted(json.dumps(r, sort_keys=True) for f in manifest["files"] for r in pq.read_table(sink / f["path"]).to_pylist())
    errors = sorted(line for rel in manifest["errors"] for line in (sink / rel).read_text().splitlines())
    return rows, errors


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return _files(tmp_path_factory.mktemp("spark_resume") / "in")


@pytest.fixture(scope="module")
def clean(spark_local, inputs, tmp_path_factory):
    """The digest of an uninterrupted in-process run of each pipeline."""
    out = {}
    for name, text in (("map", MAP_ONLY), ("global", GLOBAL)):
        sink = tmp_path_factory.mktemp("clean") / name
        run_pipeline(Pipeline.from_yaml_text(text.format(src=inputs, out=sink)).spec, RunOptions(progress=False))
        out[name] = _digest(sink)
    return out


def _cli(pipeline: pathlib.Path, *extra) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dataflow", "run", str(pipeline), "--quiet", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _markers(out: pathlib.Path) -> dict[str, dict]:
    folder = out / "_dataflow" / "progress"
    found = {}
    for p in folder.glob("*.json") if folder.exists() else []:
        try:
            found[p.stem] = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):  # being renamed into place this instant
            continue
    return found


def _kill_after(out: pathlib.Path, n: int, proc: subprocess.Popen, timeout: float = 180) -> dict[str, dict]:
    """SIGKILL the run (and then its Spark JVM) once ``n`` shard markers exist; return the markers."""
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if len(_markers(out)) >= n:
            children = psutil.Process(proc.pid).children(recursive=True)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            # The JVM exits when its Python driver's pipe closes; make sure, by its pid.
            _, alive = psutil.wait_procs(children, timeout=30)
            for child in alive:
                child.kill()
            return _markers(out)
        time.sleep(0.05)
    raise AssertionError(f"run ended or timed out before {n} shards committed: {proc.communicate()}")


@pytest.mark.parametrize(
    ("pipeline", "kills"),
    [("map", (1, 3)), ("global", (SHARDS,))],
    ids=["map-killed-after-1-then-after-3-shards", "global-killed-after-the-map-phase"],
)
@pytest.mark.timeout(300 * KILL_ROUNDS)
def test_spark_kill_9_then_resume_equals_a_clean_run(inputs, clean, tmp_path, pipeline, kills):
    """Kill, resume, (kill the resumed run again, resume,) and compare with a clean run."""
    pytest.importorskip("psutil")
    text = MAP_ONLY if pipeline == "map" else GLOBAL
    for round_ in range(KILL_ROUNDS):
        out = tmp_path / f"out{round_}"
        path = tmp_path / "p.yaml"
        path.write_text(text.format(src=inputs, out=out))
        kept: dict[str, str] = {}
        for n in kills:
            before = _kill_after(out, n, _cli(path))
            assert len(before) >= n and not (out / "_SUCCESS").exists()
            assert {s: before[s]["run_id"] for s in kept} == kept, "a resumed run redid a committed shard"
            kept = {s: m["run_id"] for s, m in before.items()}
        resumed = _cli(path)
        _, stderr = resumed.communicate(timeout=300)
        assert resumed.returncode == 0, stderr
        assert _digest(out) == clean[pipeline], f"killed after {sorted(kept)}"
        manifest = json.loads((out / "_manifest.json").read_text())
        assert {s["shard"]: s["run_id"] for s in manifest["shards"] if s["shard"] in kept} == kept
        assert sum(s["phase"] == "map" for s in manifest["shards"]) == SHARDS
        assert not (out / "_dataflow" / "progress").exists() and not (out / "_tmp").exists()


def test_a_sharded_spark_run_writes_one_schema_inferred_from_the_whole_input(spark_local, tmp_path):
    """An undeclared JSON schema is inferred once (first files of the sorted input), not per shard."""
    src = tmp_path / "in"
    for i in range(10):
        extra = {"late": "x"} if i >= 8 else {}  # a field only files past the sample have
        write_jsonl(src / f"f{i:02d}.jsonl", [{"k": i, "v": 1.5, **extra}])
    out = tmp_path / "out"
    text = f"""\
version: 1
name: inferred
engine: spark
source: {{uri: "{src}", format: jsonl, options: {{files_per_shard: 2}}}}
steps: [{{op: table.with_columns, params: {{columns: {{w: "v * 2"}}}}}}]
sink: {{uri: "{out}", format: parquet}}
"""
    report = run_pipeline(Pipeline.from_yaml_text(text).spec, RunOptions(progress=False))
    manifest = json.loads((out / "_manifest.json").read_text())
    assert len(manifest["shards"]) == 5 and report.rows_out == 10
    schemas = {tuple(pq.read_schema(out / f["path"]).names) for f in manifest["files"]}
    assert schemas == {("__source__", "k", "v", "w")}
