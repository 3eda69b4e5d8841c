"""Every registered op is documented and listed by ``dataflow ops``; missing extras fail validation."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from dataflow.cli.main import cli
from dataflow.dsl.parse import parse_pipeline
from dataflow.errors import PipelineSpecError
from dataflow.ops import all_ops, op

CURATION_OPS = {
    "image.decode", "image.resize", "image.filter_size", "image.filter_aspect_ratio", "image.filter_blur", "image.phash",
    "image.dedup_phash", "image.encode", "image.filter_nsfw", "image.embed",
    "audio.decode", "audio.to_mono", "audio.resample", "audio.filter_duration", "audio.filter_loudness", "audio.segment_vad", "audio.encode",
    "text.normalize", "text.filter_length", "text.filter_quality", "text.detect_language", "text.redact_pii", "text.dedup_exact",
    "text.dedup_minhash", "text.embed", "text.dedup_semantic",
}


@op(name="text.needs_missing_module", modality="text", inputs=("text",), outputs=("text",), extra="nowhere", requires=("dataflow_no_such_module",))
def _needs_missing(batch: dict) -> dict:
    """An op whose requirement is not installed (for the validation test)."""
    return batch


def test_every_curation_op_is_registered():
    assert CURATION_OPS <= {s.name for s in all_ops()}


@pytest.mark.parametrize("spec", all_ops(), ids=lambda s: s.name)
def test_every_op_has_a_summary_and_documents_each_param(spec):
    assert spec.summary and spec.summary[0].isupper()
    for name, field in spec.params.model_fields.items():
        assert field.description, f"{spec.name}: param '{name}' has no Args: entry"


def test_dataflow_ops_lists_every_op_with_its_params():
    result = CliRunner().invoke(cli, ["ops"])
    assert result.exit_code == 0, result.output
    for spec in all_ops():
        line = next((ln for ln in result.output.splitlines() if ln.startswith(spec.name + " ")), None)
        assert line is not None, f"{spec.name} missing from 'dataflow ops'"
    assert "params: ngram, num_perm, threshold, bands, rows" in result.output


@pytest.mark.parametrize("name", sorted(CURATION_OPS), ids=str)
def test_dataflow_ops_name_shows_the_docs(name):
    result = CliRunner().invoke(cli, ["ops", name])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(name) and "params:" in result.output


def test_missing_requirement_is_a_spec_issue_with_the_install_line():
    data = {"name": "p", "source": {"uri": "/in", "format": "text"}, "steps": [{"op": "text.needs_missing_module"}], "sink": {"uri": "/out"}}
    with pytest.raises(PipelineSpecError) as info:
        parse_pipeline(data, file="p.yaml", lines={("steps", 0, "op"): (5, 7)})
    issue = info.value.issues[0]
    assert (issue.key, issue.line) == ("steps[0].op", 5)
    assert "needs dataflow_no_such_module" in issue.message
    assert issue.hint == "run: pip install 'dataflow[nowhere]'"
    assert "not installed: pip install 'dataflow[nowhere]'" in CliRunner().invoke(cli, ["ops"]).output


GPU_OPS = {"image.decode", "image.resize", "image.phash", "image.embed", "image.filter_nsfw", "text.embed", "text.dedup_minhash"}


def test_dataflow_ops_marks_every_op_with_a_gpu_path():
    listing = CliRunner().invoke(cli, ["ops"]).output.splitlines()
    marked = {ln.split()[0] for ln in listing if "[GPU path]" in ln}
    assert marked == GPU_OPS
    for name in sorted(GPU_OPS):
        assert "GPU path" in CliRunner().invoke(cli, ["ops", name]).output.splitlines()[0], name


def test_the_built_in_table_lists_exactly_the_ops_the_family_modules_declare():
    import importlib
    import pkgutil

    import dataflow.ops as ops_pkg
    from dataflow.ops.registry import BUILTIN_OPS, _REGISTRY

    assert list(BUILTIN_OPS) == sorted(BUILTIN_OPS)
    for info in pkgutil.walk_packages(ops_pkg.__path__, "dataflow.ops."):
        importlib.import_module(info.name)
    declared = {name for name, spec in _REGISTRY.items() if spec.target.__module__.startswith("dataflow.ops.")}
    assert declared == set(BUILTIN_OPS)
