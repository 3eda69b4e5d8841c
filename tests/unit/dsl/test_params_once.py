"""A step's params are validated once, into the op's model, and that model is what the plan and engines get."""
from __future__ import annotations

import pytest
from pydantic_core import core_schema

from dataflow.dsl.parse import load_pipeline, parse_pipeline
from dataflow.dsl.yaml_io import load
from dataflow.engines.registry import engine_caps
from dataflow.errors import PipelineSpecError
from dataflow.ops import op
from dataflow.plan.planner import plan_pipeline


class Counted(int):
    """An int whose validator counts its calls."""

    calls = 0

    @classmethod
    def _count(cls, value: int) -> int:
        cls.calls += 1
        return value

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.no_info_after_validator_function(cls._count, core_schema.int_schema())


@op(name="paramtest.scale", modality="table", inputs=("x",), outputs=("x",), batch_format="pyarrow")
def _scale(batch, *, factor: Counted = 2):
    """Multiply x.

    Args:
        factor: The multiplier.
    """
    return batch


PIPELINE = """\
version: 1
name: once
source: {uri: ./in, format: parquet}
steps:
  - op: paramtest.scale
    params:
      factor: {factor}
sink: {uri: ./out, format: parquet}
"""


def test_a_param_is_validated_once_from_yaml_to_the_optimized_plan(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE.replace("{factor}", "3"))
    Counted.calls = 0
    spec = load_pipeline(str(path))
    logical, optimized = plan_pipeline(spec, engine_caps())
    plan_pipeline(spec, engine_caps())  # planning again (explain, then run) reuses the model
    assert Counted.calls == 1
    step = optimized.steps()[0]
    assert step.params is spec.steps[0].params_of(step.op) and step.params.factor == 3


def test_a_spec_built_in_python_is_validated_once_at_plan_time():
    data, _ = load(PIPELINE.replace("{factor}", "4"))
    spec = parse_pipeline(data)
    fresh = spec.model_validate(spec.model_dump())  # no parse: the plan validates
    Counted.calls = 0
    plan_pipeline(fresh, engine_caps())
    plan_pipeline(fresh, engine_caps())
    assert Counted.calls == 1
    assert fresh == spec  # the kept model does not change equality


def test_a_bad_param_names_its_file_line_and_key(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE.replace("{factor}", "lots"))
    with pytest.raises(PipelineSpecError) as info:
        load_pipeline(str(path))
    (issue,) = info.value.issues
    assert (issue.file, issue.line, issue.key) == (str(path), 7, "steps[0].params.factor")
    assert f"{path}:7" in str(info.value)
