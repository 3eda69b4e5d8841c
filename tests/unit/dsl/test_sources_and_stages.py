"""Named sources and stages in the YAML: parsing, overrides and errors with line numbers."""
from __future__ import annotations

import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.dsl.yaml_io import load
from dataflow.errors import PipelineSpecError

DOC = """\
name: t
sources:
  tele: {uri: /a, format: text, options: {split: line}}
  syslog:
    uri: /b
    format: text
    steps:
      - op: table.parse_regex
        params: {pattern: "(?P<port>Eth\\\\S+)"}
stages:
  - name: s1
    engine: spark
    steps:
      - op: table.join
        params: {right: syslog, keys: [port]}
sink: {uri: /o}
"""


def _parse(text: str, **kw):
    data, lines = load(text, file="p.yaml")
    return parse_pipeline(data, file="p.yaml", lines=lines, **kw)


def test_first_named_source_is_the_main_input_and_steps_are_indexed_in_order():
    spec = _parse(DOC)
    assert spec.source.uri == "/a" and spec.source.options == {"split": "line"}
    assert [p for p, _ in spec.indexed_steps()] == [("stages", 0, "steps", 0), ("sources", "syslog", "steps", 0)]
    assert [s.op for s in spec.all_steps] == ["table.join", "table.parse_regex"]


def test_set_reaches_named_sources():
    spec = _parse(DOC, overrides=["sources.syslog.uri=/elsewhere", "stages[0].engine=ray"])
    assert spec.sources["syslog"].uri == "/elsewhere" and spec.stages[0].engine == "ray"


def test_unknown_source_name_is_reported_at_its_line_with_a_suggestion():
    with pytest.raises(PipelineSpecError) as info:
        _parse(DOC.replace("right: syslog", "right: syslgo"))
    issue = info.value.issues[0]
    assert (issue.key, issue.line) == ("stages[0].steps[0].params.right", 15)
    assert "'syslgo' is not a named source (expected one of: syslog, tele)" in issue.message and issue.hint == "did you mean 'syslog'?"


def test_steps_inside_stages_are_validated_with_their_path():
    with pytest.raises(PipelineSpecError) as info:
        _parse(DOC.replace("op: table.join", "op: table.jion"))
    assert info.value.issues[0].key == "stages[0].steps[0].op" and info.value.issues[0].line == 14


def test_yaml_booleans_as_param_names_are_explained():
    with pytest.raises(PipelineSpecError, match="YAML reads on/off/yes/no as booleans"):
        _parse(DOC.replace("keys: [port]", "on: [port]"))


def test_steps_and_stages_together_are_refused():
    with pytest.raises(PipelineSpecError, match="use either steps: or stages:, not both"):
        _parse(DOC.replace("stages:", "steps: [{op: table.select, params: {columns: [a]}}]\nstages:"))
