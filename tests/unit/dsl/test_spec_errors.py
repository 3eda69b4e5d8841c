"""Validation messages: every problem at once, with file:line:col, key path and did-you-mean."""
from __future__ import annotations

import pytest

from dataflow.dsl.parse import load_pipeline, parse_pipeline
from dataflow.dsl.yaml_io import load
from dataflow.errors import PipelineSpecError
from dataflow.ops import get_op

GOOD = """\
version: 1
name: thumbs
source: {uri: ./images, format: image}
steps:
  - op: image.decode
  - op: image.resize
    params: {max_side: 64}
sink: {uri: ./out, format: parquet}
"""


def _errors(text: str, **kw) -> PipelineSpecError:
    data, lines = load(text, file="p.yaml")
    with pytest.raises(PipelineSpecError) as info:
        parse_pipeline(data, file="p.yaml", lines=lines, **kw)
    return info.value


def test_valid_pipeline_parses_with_defaults():
    data, lines = load(GOOD)
    spec = parse_pipeline(data, lines=lines)
    assert spec.engine == "auto"
    assert spec.sink.mode == "error"
    assert [s.op for s in spec.steps] == ["image.decode", "image.resize"]


def test_misspelt_op_and_param_are_both_reported_with_lines_and_suggestions():
    text = GOOD.replace("op: image.resize", "op: image.resise").replace("max_side: 64", "max_sid: 1")
    text = text.replace("  - op: image.decode\n", "  - op: image.decode\n  - op: image.filter_size\n    params: {min_sid: 3}\n")
    err = _errors(text)
    by_key = {i.key: i for i in err.issues}
    assert by_key["steps[2].op"].line == 8
    assert "unknown op 'image.resise'" in by_key["steps[2].op"].message
    assert by_key["steps[2].op"].hint == "did you mean 'image.resize'?"
    assert by_key["steps[1].params.min_sid"].line == 7
    assert "did you mean 'min_side'?" in str(err)
    assert str(err).splitlines()[0].startswith("p.yaml:7:")


def test_params_of_a_misspelt_op_are_checked_against_the_op_it_suggests():
    err = _errors(GOOD.replace("op: image.resize", "op: image.resise").replace("max_side: 64", "max_sid: 1"))
    assert [(i.key, i.line, i.col) for i in err.issues] == [("steps[1].op", 6, 5), ("steps[1].params.max_sid", 7, 14)]
    assert err.issues[0].hint == "did you mean 'image.resize'?"
    assert "of op 'image.resize' params, assuming 'op: image.resize'" in err.issues[1].message
    assert err.issues[1].hint == "did you mean 'max_side'?"


def test_unknown_param_of_known_op_names_expected_params():
    err = _errors(GOOD.replace("max_side: 64", "max_sid: 1"))
    (issue,) = err.issues
    assert issue.key == "steps[1].params.max_sid"
    assert (issue.line, issue.col) == (7, 14)
    allowed = ", ".join(sorted(get_op("image.resize").params.model_fields))
    assert str(issue) == (
        f"p.yaml:7:14: steps[1].params.max_sid: unknown key of op 'image.resize' params "
        f"(expected one of: {allowed}); did you mean 'max_side'?"
    )


def test_misspelt_top_level_key_and_format_are_suggested():
    err = _errors(GOOD.replace("steps:", "stpes:").replace("format: image", "format: imag"))
    text = str(err)
    assert "p.yaml:4:1: stpes: unknown key of pipeline" in text
    assert "did you mean 'steps'?" in text
    assert "source.format: invalid value 'imag'" in text
    assert "did you mean 'image'?" in text


def test_missing_required_key_is_named():
    err = _errors(GOOD.replace("sink: {uri: ./out, format: parquet}\n", ""))
    assert [i.key for i in err.issues] == ["sink"]
    assert "required key is missing" in err.issues[0].message


def test_bad_param_type_names_the_value():
    err = _errors(GOOD.replace("max_side: 64", "max_side: big"))
    assert err.issues[0].key == "steps[1].params.max_side"
    assert "'big'" in err.issues[0].message


def test_yaml_syntax_error_has_a_line():
    with pytest.raises(PipelineSpecError) as info:
        load("name: x\nsource: {uri: [\n", file="bad.yaml")
    assert info.value.issues[0].file == "bad.yaml"
    assert info.value.issues[0].line is not None
    assert "invalid YAML" in str(info.value)


def test_env_substitution_with_default_and_missing_variable():
    text = GOOD.replace("./images", "\"${DATA_DIR}\"").replace("./out", "\"${OUT_DIR:-/tmp/o}\"")
    data, lines = load(text)
    spec = parse_pipeline(data, lines=lines, environ={"DATA_DIR": "/data"})
    assert (spec.source.uri, spec.sink.uri) == ("/data", "/tmp/o")
    err = _errors(text, environ={})
    assert err.issues[0].key == "source.uri"
    assert "environment variable 'DATA_DIR' is not set" in err.issues[0].message


def test_set_overrides_apply_before_validation():
    data, lines = load(GOOD)
    spec = parse_pipeline(data, lines=lines, overrides=["source.uri=/data", "steps[1].params.max_side=128", "sink.mode=overwrite"])
    assert spec.source.uri == "/data"
    assert spec.steps[1].params == {"max_side": 128}
    assert spec.sink.mode == "overwrite"


@pytest.mark.parametrize("override", ["steps[5].params.max_side=1", "no_equals_sign", "[0]=x"], ids=["past-end", "no-equals", "leading-index"])
def test_bad_overrides_are_spec_errors(override):
    data, lines = load(GOOD)
    with pytest.raises(PipelineSpecError) as info:
        parse_pipeline(data, lines=lines, overrides=[override])
    assert info.value.issues[0].file == "--set"


def test_load_pipeline_reports_unreadable_file(tmp_path):
    with pytest.raises(PipelineSpecError) as info:
        load_pipeline(str(tmp_path / "missing.yaml"))
    assert "cannot read pipeline file" in str(info.value)


def test_module_reference_that_does_not_import_is_a_spec_error():
    err = _errors(GOOD.replace("op: image.decode", "op: no_such_module.sub:fn"))
    assert "cannot import op reference 'no_such_module.sub:fn'" in err.issues[0].message
    assert err.issues[0].line == 5
