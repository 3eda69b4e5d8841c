"""Credentials never reach artefacts or logs; writers refuse paths outside their root; unwritable sinks fail clearly."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from connectors.formats.files import FilesFormat
from connectors.registry import filesystem
from dataflow.errors import RunError
from dataflow.runtime.commit import SinkLayout, commit_output
from dataflow.runtime.progress import StagedFile
from tests.datagen import write_corrupt_images, write_images

SECRET_ENV = "sk-ENV-7f3a9c1e-do-not-leak"
SECRET_YAML = "sk-YAML-41b2d8e0-do-not-leak"


def test_planted_secrets_appear_in_no_artefact_or_log(ray_local, tmp_path):
    write_images(tmp_path / "img", 4)
    write_corrupt_images(tmp_path / "img")
    out, report = tmp_path / "out", tmp_path / "report.json"
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"""
version: 1
name: secrets
source: {{uri: "{tmp_path / 'img'}", format: image}}
steps:
  - op: image.decode
  - op: tests.opfixtures:tag_length
    params: {{column: __source__}}
sink: {{uri: "{out}"}}
storage: {{options: {{s3: {{key: AKIAEXAMPLE, secret: "{SECRET_YAML}"}}}}}}
""")
    env = {**os.environ, "RAY_ADDRESS": ray_local.get_runtime_context().gcs_address, "AWS_SECRET_ACCESS_KEY": SECRET_ENV}
    logs = []
    for args in (["run", str(pipeline), "--report", str(report)], ["explain", str(pipeline)], ["validate", str(pipeline)], ["errors", str(out)]):
        proc = subprocess.run([sys.executable, "-m", "dataflow", *args], env=env, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr
        logs.append(proc.stdout + proc.stderr)
    artefacts = [p for p in out.rglob("*") if p.is_file()] + [report]
    assert any(p.name == "_manifest.json" for p in artefacts) and any(p.suffix == ".jsonl" for p in artefacts)
    for text in [*logs, *(p.read_bytes().decode("utf-8", "replace") for p in artefacts)]:
        assert SECRET_ENV not in text and SECRET_YAML not in text


def test_files_writer_keeps_hostile_names_inside_its_folder(tmp_path):
    fs = filesystem(str(tmp_path))
    cols = {
        "__source__": np.array(["../../../etc/passwd", "/abs/path/x.png", "s3://b/..%2F..%2Fevil.jpg"], dtype=object),
        "bytes": np.array([b"a", b"b", b"c"], dtype=object),
    }
    written = FilesFormat.write(fs, str(tmp_path / "shard"), cols, {"extension": "../../bin"})
    for w in written:
        assert pathlib.Path(w.path).resolve().parent == (tmp_path / "shard").resolve()
    assert not (tmp_path.parent / "etc").exists()


@pytest.mark.parametrize("rel", ["../escape.parquet", "/etc/escape.parquet", "a/../../escape.parquet"], ids=["dotdot", "absolute", "nested-dotdot"])
def test_commit_refuses_names_outside_the_sink_root(tmp_path, rel):
    fs = filesystem(str(tmp_path))
    src = tmp_path / "staged.parquet"
    src.write_bytes(b"x")
    with pytest.raises(RunError, match="outside the sink root"):
        commit_output(fs, SinkLayout(str(tmp_path / "sink"), "r1"), "error", [StagedFile(str(src), rel, 1, 1)], [], {})
    assert not (tmp_path / "escape.parquet").exists()


def test_unwritable_sink_fails_with_a_clear_message_and_no_output(ray_local, tmp_path):
    import dataflow

    write_images(tmp_path / "img", 2)
    p = dataflow.read(str(tmp_path / "img"), format="image").apply("image.decode").write("/proc/dataflow-test-sink")
    with pytest.raises(RunError, match="cannot write to sink '/proc/dataflow-test-sink'.*nothing was written"):
        p.run(progress=False)
    assert not pathlib.Path("/proc/dataflow-test-sink/_SUCCESS").exists()
