"""What a real run publishes, read back: the manifest, ``dataflow errors`` and ``dataflow lineage``."""
from __future__ import annotations

import json
import os
import re

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import dataflow
from dataflow.cli.main import cli
from dataflow.runner import pipeline_hash
from tests.datagen import write_corrupt_images, write_images

PIPELINE = """\
version: 1
name: published
source:
  uri: "{src}"
  format: image
  options: {{files_per_shard: 3}}
steps:
  - op: image.decode
  - op: image.resize
    params: {{max_side: 32}}
  - op: image.encode
    params: {{format: png}}
sink: {{uri: "{out}", format: parquet, rows_per_file: 2}}
"""


@pytest.fixture(scope="module")
def run(ray_local, tmp_path_factory):
    """A 3-shard run over six good and three corrupt images: (sink, spec, inputs, corrupt files)."""
    root = tmp_path_factory.mktemp("sink_tools")
    good = write_images(root / "in", 6, size=(64, 48))
    bad = write_corrupt_images(root / "in")
    out = root / "out"
    pipeline = dataflow.Pipeline.from_yaml_text(PIPELINE.format(src=root / "in", out=out))
    pipeline.run(progress=False)
    return out, pipeline.spec, sorted(str(p) for p in [*good, *bad.values()]), sorted(str(p) for p in bad.values())


def test_manifest_records_hash_fingerprint_version_files_and_shards(run):
    out, spec, inputs, _ = run
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["pipeline_hash"] == pipeline_hash(spec)
    assert re.fullmatch(r"[0-9a-f]{16}", manifest["input_fingerprint"])
    assert manifest["dataflow_version"] == dataflow.__version__
    assert (manifest["rows_in"], manifest["rows_out"], manifest["rows_errored"]) == (9, 6, 3)
    for f in manifest["files"]:
        path = out / f["path"]
        assert (f["rows"], f["bytes"]) == (pq.read_metadata(path).num_rows, path.stat().st_size)
    assert sum(f["rows"] for f in manifest["files"]) == 6
    shards = manifest["shards"]
    assert len(shards) == 3 and sorted(i for s in shards for i in s["inputs"]) == inputs
    assert sorted(rel for s in shards for rel in s["files"]) == sorted(f["path"] for f in manifest["files"])
    # _SUCCESS is written after the manifest, and nothing of the run's scratch is left.
    assert os.stat(out / "_SUCCESS").st_mtime_ns >= os.stat(out / "_manifest.json").st_mtime_ns
    assert not (out / "_tmp").exists() and not (out / "_dataflow" / "progress").exists()


def test_errors_groups_by_op_and_reason_with_example_sources(run):
    out, _, _, bad = run
    result = CliRunner().invoke(cli, ["errors", str(out)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{out}: 3 row errors"
    groups = [line.split() for line in lines[1:] if not line.strip().startswith("e.g.")]
    assert groups and all(g[1] == "image.decode" for g in groups)
    assert sum(int(g[0]) for g in groups) == 3
    examples = sorted(line.split("e.g. ", 1)[1] for line in lines if "e.g. " in line)
    assert examples == bad
    limited = CliRunner().invoke(cli, ["errors", str(out), "--examples", "0"])
    assert "e.g." not in limited.output and limited.output.splitlines()[0] == f"{out}: 3 row errors"


def test_lineage_names_the_inputs_that_fed_an_output_file(run):
    out, _, _, _ = run
    manifest = json.loads((out / "_manifest.json").read_text())
    for f in manifest["files"]:
        result = CliRunner().invoke(cli, ["lineage", str(out), f["path"]])
        assert result.exit_code == 0, result.output
        named = [line.strip() for line in result.output.splitlines()[1:]]
        assert len(named) == 3, "one shard of three files fed each file"
        sources = {r["__source__"].split("#", 1)[0] for r in pq.read_table(out / f["path"], columns=["__source__"]).to_pylist()}
        assert sources <= set(named)
    missing = CliRunner().invoke(cli, ["lineage", str(out), "part-nope.parquet"])
    assert missing.exit_code == 1 and "'part-nope.parquet' is not an output file of" in missing.output
