"""Plan building, column-flow checks, rules (on hand-built plans) and explain, with no engine."""
from __future__ import annotations

import pytest

import dataflow
from dataflow.errors import PlanError
from dataflow.ops import Resources, get_op
from dataflow.engines.base import EngineCaps
from dataflow.engines.registry import engine_caps
from dataflow.plan import build_plan, optimize, render_logical, render_optimized, validate_plan
from dataflow.plan.nodes import FusedMap, LogicalPlan, Map, Read, Write
from dataflow.plan.rules import AssignEngines, FuseAdjacentMaps

RAY = EngineCaps("ray")


def _spec(*steps, fmt="image", engine="auto"):
    p = dataflow.read("/d", format=fmt, name="t")
    for name, params in steps:
        p = p.apply(name, **params)
    return p.write("/o").with_engine(engine).spec


def test_build_plan_has_one_node_per_step_between_read_and_write():
    plan = build_plan(_spec(("image.decode", {}), ("image.resize", {"max_side": 8})))
    assert [type(n).__name__ for n in plan.nodes] == ["Read", "Map", "Map", "Write"]
    assert plan.nodes[2].params.max_side == 8


def test_missing_column_names_the_step_and_the_fix():
    with pytest.raises(PlanError) as info:
        validate_plan(build_plan(_spec(("image.resize", {"max_side": 8}))))
    (issue,) = info.value.issues
    assert (issue.key, issue.hint) == ("steps[0]", "add image.decode before it")
    assert issue.message.startswith("image.resize needs column 'image', which no earlier step or the 'image' source provides")


def test_an_expression_reading_a_misspelt_column_suggests_the_nearest():
    parse = ("table.parse_json", {"fields": {"rx_power": "double", "link": "string"}})
    with pytest.raises(PlanError) as info:
        validate_plan(build_plan(_spec(parse, ("table.filter_rows", {"where": "rx_powr < -3 AND meta.lang = 'en'"}), fmt="text")))
    assert [(i.key, i.hint) for i in info.value.issues] == [("steps[1]", None), ("steps[1]", "did you mean 'rx_power'?")]
    assert "needs column 'meta'" in info.value.issues[0].message


def test_configurable_columns_flow_between_ops():
    spec = _spec(("image.decode", {"output": "pixels"}), ("image.resize", {"column": "pixels"}))
    validate_plan(build_plan(spec))
    with pytest.raises(PlanError, match="needs column 'image'"):
        validate_plan(build_plan(_spec(("image.decode", {"output": "pixels"}), ("image.resize", {}))))


def test_text_op_on_image_source_fails_column_flow():
    with pytest.raises(PlanError, match="needs column 'text'"):
        validate_plan(build_plan(_spec(("text.filter_length", {"min_chars": 1}))))


def test_tabular_sources_have_open_schemas():
    validate_plan(build_plan(_spec(("text.filter_length", {"min_chars": 1}), fmt="jsonl")))


def _step(i, name, **res):
    op = get_op(name)
    return Map(index=i, op=op, params=op.params(), resources=op.resources.merged(Resources(**res)), engine="ray")


def _hand_plan(*steps):
    spec = _spec(("image.decode", {}))
    return LogicalPlan(spec=spec, nodes=(Read(spec.source, engine="ray"), *steps, Write(spec.sink, engine="ray")))


def test_fuse_adjacent_cpu_maps_into_one_stage():
    plan = FuseAdjacentMaps().apply(_hand_plan(_step(0, "image.decode"), _step(1, "image.resize"), _step(2, "image.encode")))
    (stage,) = [n for n in plan.nodes if isinstance(n, FusedMap)]
    assert [s.op.name for s in stage.steps] == ["image.decode", "image.resize", "image.encode"]


def _stages(plan):
    return [[s.op.name for s in n.steps] for n in plan.nodes if isinstance(n, FusedMap)]


def test_cpu_steps_with_different_batch_sizes_fuse_so_no_pixels_cross_stages():
    plan = FuseAdjacentMaps().apply(_hand_plan(
        _step(0, "image.decode", batch_size=64), _step(1, "image.resize", batch_size=8, memory=2 << 20),
        _step(2, "image.encode", batch_size=16, memory=1 << 20, concurrency=4), _step(3, "image.phash", concurrency=2),
    ))
    (stage,) = [n for n in plan.nodes if isinstance(n, FusedMap)]
    assert [s.op.name for s in stage.steps] == ["image.decode", "image.resize", "image.encode", "image.phash"]
    assert (stage.resources.batch_size, stage.resources.memory, stage.resources.concurrency) == (8, 2 << 20, 2)


def test_gpu_steps_and_actor_pools_of_different_sizes_are_not_fused():
    plan = FuseAdjacentMaps().apply(_hand_plan(
        _step(0, "image.decode"), _step(1, "image.resize", num_gpus=1), _step(2, "image.encode", batch_size=8),
        _step(3, "image.decode", concurrency=3), _step(4, "image.embed", concurrency=2), _step(5, "image.phash", concurrency=2),
    ))
    assert _stages(plan) == [["image.decode"], ["image.resize"], ["image.encode", "image.decode"], ["image.embed", "image.phash"]]
    assert [n.resources.batch_size for n in plan.nodes if isinstance(n, FusedMap)][2] == 8


def test_fused_stage_takes_the_largest_cpu_request():
    plan = FuseAdjacentMaps().apply(_hand_plan(_step(0, "image.decode", num_cpus=1), _step(1, "image.resize", num_cpus=2, batch_size=32)))
    (stage,) = [n for n in plan.nodes if isinstance(n, FusedMap)]
    assert (stage.resources.num_cpus, stage.resources.batch_size) == (2, 32)


@pytest.mark.parametrize(
    "fmt,steps,engine,expected",
    [
        ("image", [("image.decode", {})], "auto", "ray"),
        ("jsonl", [("text.filter_length", {})], "auto", "ray"),
        ("image", [("image.decode", {})], "ray", "ray"),
    ],
    ids=["media-auto", "text-op-on-jsonl", "explicit"],
)
def test_assign_engines(fmt, steps, engine, expected):
    plan = AssignEngines({"ray": RAY}).apply(build_plan(_spec(*steps, fmt=fmt, engine=engine)))
    assert {n.engine for n in plan.nodes} == {expected}
    assert plan.engine_reason


def test_table_only_pipeline_goes_to_spark_when_available():
    spec = _spec(("table.select", {"columns": ["a"]}), fmt="parquet")
    assert AssignEngines(engine_caps(installed_only=False)).apply(build_plan(spec)).engine == "spark"
    assert "Spark engine is not installed" in AssignEngines({"ray": RAY}).apply(build_plan(spec)).engine_reason


def test_explain_sections_show_the_fused_stage():
    plan = build_plan(_spec(("image.decode", {}), ("image.resize", {"max_side": 16})))
    optimized = optimize(plan, (AssignEngines({"ray": RAY}), FuseAdjacentMaps()))
    logical, opt = render_logical(plan), render_optimized(optimized)
    assert logical.startswith("== Logical plan ==")
    assert "Map[image.resize](max_side=16" in logical
    assert opt.startswith("== Optimized plan (engine per step) ==")
    assert "FusedMap[image.decode -> image.resize]" in opt
    assert "engine: ray (auto: image steps run on Ray Data)" in opt


def test_image_and_text_steps_on_the_same_rows_plan_as_one_ray_stage():
    spec = _spec(("image.decode", {}), ("image.resize", {"max_side": 64}), ("text.filter_length", {"column": "caption", "min_chars": 3}), fmt="parquet")
    validate_plan(build_plan(spec))  # a table's columns come from the data: caption may be there
    plan = optimize(build_plan(spec), (AssignEngines(engine_caps(installed_only=False)), FuseAdjacentMaps()))
    (stage,) = [n for n in plan.nodes if isinstance(n, FusedMap)]
    assert [s.op.name for s in stage.steps] == ["image.decode", "image.resize", "text.filter_length"]
    assert plan.engine == "ray" and plan.engine_reason == "auto: image, text steps run on Ray Data"
    with pytest.raises(PlanError, match="text.filter_length needs column 'caption'.*have: __source__, bytes, height, image, width"):
        validate_plan(build_plan(_spec(("image.decode", {}), ("text.filter_length", {"column": "caption"}))))


def test_a_declared_input_column_spelled_like_a_working_column_is_a_plan_error_naming_it():
    from dataflow.dsl.parse import parse_pipeline

    doc = {"name": "w", "source": {"uri": "/d", "format": "jsonl", "options": {"schema": {"k": "long", "__df_row__": "long", "__df_part": "string"}}},
           "steps": [{"op": "table.filter_rows", "params": {"where": "k > 0"}}], "sink": {"uri": "/o", "format": "parquet"}}
    with pytest.raises(PlanError) as info:
        validate_plan(build_plan(parse_pipeline(doc)))
    (issue,) = info.value.issues  # __df_part is not the working columns' spelling: the user's
    assert issue.key == "source.options.schema.__df_row__"
    assert "column '__df_row__'" in issue.message and "reserved namespace __df_<name>__" in issue.message
