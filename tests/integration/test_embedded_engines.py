"""The embedded defaults, in fresh processes: with no cluster named, ``dataflow run`` starts its own.

Each test runs a subprocess with ``RAY_ADDRESS`` / ``SPARK_MASTER`` unset, so it cannot join the
test session's Ray or Spark: Ray comes up on 127.0.0.1 with its files under a temporary
``RAY_TMPDIR`` (and ``HOME``, for its auth token); Spark starts ``local[*]`` with its scratch
folder under a temporary ``TMPDIR``.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pyarrow.parquet as pq
import pytest

ROOT = pathlib.Path(__file__).parents[2]


@pytest.fixture
def fresh_env(tmp_path):
    """The environment of a process that names no cluster; temporary HOME, RAY_TMPDIR and TMPDIR."""
    # NOTE: Ray's socket paths must stay short, so its folder is not under pytest's long tmp_path.
    ray_tmp = tempfile.mkdtemp(prefix="dfray-", dir="/tmp")
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "SPARK_MASTER", "PYSPARK_SUBMIT_ARGS")}
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir()
    env.update({
        "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"), "RAY_TMPDIR": ray_tmp,
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
        "DATAFLOW_RAY_OBJECT_STORE_MEMORY": str(200 * 1024 * 1024), "PYTHONPATH": str(ROOT),
    })
    yield env, pathlib.Path(ray_tmp)
    shutil.rmtree(ray_tmp, ignore_errors=True)


def test_quickstart_starts_its_own_ray_and_prints_the_summary(fresh_env, tmp_path):
    env, ray_tmp = fresh_env
    work = tmp_path / "qs"
    # 40 images: i=7 is truncated (a row error), i=5 and i=38 are tiny (dropped by image.filter_size).
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py"), "--images", "40", "--workdir", str(work)],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=420)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith(f"generated 40 images in {work / 'images'}: {{'good': 37, 'tiny': 2, 'corrupt': 1}}")
    assert f"thumbnails on ray: published -> {work / 'thumbs'}" in out.stdout
    assert "quickstart finished in " in out.stdout and "(exit 0)" in out.stdout
    summary = {k.strip(): v.strip() for k, v in (line.strip().split("  ", 1) for line in out.stdout.splitlines() if line.startswith("  ") and "  " in line.strip())}
    assert (summary["rows read"], summary["rows written"]) == ("40", "37")
    report = json.loads((work / "report.json").read_text())
    assert (report["engine"], report["rows_in"], report["rows_out"], report["rows_errored"]) == ("ray", 40, 37, 1)
    rows = [r for f in json.loads((work / "thumbs" / "_manifest.json").read_text())["files"] for r in pq.read_table(work / "thumbs" / f["path"]).to_pylist()]
    assert len(rows) == 37 and all(max(r["width"], r["height"]) <= 256 and r["bytes"][:4] == b"RIFF" for r in rows)
    # The run's own local Ray lived under this RAY_TMPDIR: it joined no other cluster.
    assert list((ray_tmp / "ray").glob("session_2*")), sorted(p.name for p in ray_tmp.rglob("*"))[:20]


def test_a_table_pipeline_starts_its_own_local_spark(fresh_env, tmp_path):
    env, _ = fresh_env
    (tmp_path / "t.jsonl").write_text('{"link": "a", "rx": -3.0}\n{"link": "b", "rx": -9.5}\nnot json\n')
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        f"name: weak\nsource: {{uri: '{tmp_path / 't.jsonl'}', format: jsonl}}\n"
        "steps:\n  - op: table.filter_rows\n    params: {where: 'rx < -5'}\n"
        f"sink: {{uri: '{tmp_path / 'out'}', format: parquet}}\n"
    )
    out = subprocess.run([sys.executable, "-m", "dataflow", "run", str(pipeline), "--quiet", "--json"],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (report["engine"], report["rows_in"], report["rows_out"], report["rows_errored"]) == ("spark", 3, 1, 1)
    # dataflow's own local[*] session keeps its scratch under TMPDIR (a given master would not).
    assert list((tmp_path / "tmp").glob("dataflow-spark-*"))
