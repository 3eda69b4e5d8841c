"""YAML -> Python -> YAML is lossless, and the Python API builds the same spec as YAML."""
from __future__ import annotations

import pathlib

import pytest

import dataflow
from dataflow.dsl.parse import load_pipeline
from dataflow.dsl.yaml_io import load

PIPELINES = sorted((pathlib.Path(__file__).parents[3] / "pipelines").glob("*.yaml"))
ENV = {"DATAFLOW_DATA": "/data/in", "DATAFLOW_OUT": "/data/out"}


@pytest.mark.parametrize("path", PIPELINES, ids=[p.name for p in PIPELINES])
def test_every_shipped_pipeline_round_trips(path, monkeypatch):
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    spec = load_pipeline(str(path))
    pipeline = dataflow.Pipeline.from_spec(spec)
    again = dataflow.Pipeline.from_yaml_text(pipeline.to_yaml())
    assert again.spec == spec
    assert again.to_yaml() == pipeline.to_yaml()


def test_python_api_builds_the_yaml_spec():
    yaml_text = """
version: 1
name: thumbs
source: {uri: /data/images, format: image, options: {recursive: false}}
steps:
  - op: image.decode
  - op: image.resize
    params: {max_side: 128}
    resources: {batch_size: 32}
sink: {uri: /out, format: jsonl, mode: overwrite, rows_per_file: 100}
errors: {max_error_ratio: 0.1}
"""
    from_yaml = dataflow.Pipeline.from_yaml_text(yaml_text).spec
    from_python = (
        dataflow.read("/data/images", format="image", name="thumbs", recursive=False)
        .apply("image.decode")
        .apply("image.resize", max_side=128, resources={"batch_size": 32})
        .write("/out", format="jsonl", mode="overwrite", rows_per_file=100)
        .with_errors(max_error_ratio=0.1)
        .spec
    )
    assert from_python == from_yaml


def test_pipeline_is_immutable():
    base = dataflow.read("/d", format="image")
    longer = base.apply("image.decode")
    assert "steps" not in base._data
    assert len(longer._data["steps"]) == 1


def test_to_yaml_output_loads_with_line_numbers():
    p = dataflow.read("/d", format="text", split="line").apply("text.filter_length", min_chars=3).write("/o")
    data, lines = load(p.to_yaml())
    assert data["steps"][0]["params"] == {"min_chars": 3}
    assert lines[("steps", 0, "op")][0] > 1
