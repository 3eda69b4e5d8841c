"""Engine selection (with reasons), engine capability errors, stages and visible handoffs, on plans only."""
from __future__ import annotations

import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import EngineCaps
from dataflow.errors import EngineCapabilityError, PlanError
from dataflow.plan import build_plan, optimize, render_optimized, validate_plan
from dataflow.plan.handoff import MixedJob, split_at_handoffs
from dataflow.plan.nodes import Handoff, Read, Write
from dataflow.plan.rules import AssignEngines, FuseAdjacentMaps, InsertHandoffs

SPARK_LOWERS = {"table.select", "table.filter_rows", "table.join", "table.with_columns"}
CAPS = {"ray": EngineCaps("ray"), "spark": EngineCaps("spark", ops=frozenset(SPARK_LOWERS), source_formats=frozenset({"csv", "jsonl", "parquet", "text"}))}


def _plan(doc: dict, spark: bool = True):
    doc = {"name": "t", "sink": {"uri": "/o"}, **doc}
    rules = (AssignEngines(CAPS if spark else {"ray": CAPS["ray"]}), FuseAdjacentMaps(), InsertHandoffs())
    return optimize(validate_plan(build_plan(parse_pipeline(doc))), rules)


TABLE_STEPS = [{"op": "table.filter_rows", "params": {"where": "a > 1"}}]


def test_auto_picks_spark_for_table_steps_over_line_sources_and_says_why():
    plan = _plan({"source": {"uri": "/d", "format": "jsonl"}, "steps": TABLE_STEPS})
    assert plan.engine == "spark"
    assert "engine: spark (auto: every step is a table op over a 'jsonl' source" in render_optimized(plan)


@pytest.mark.parametrize(
    "doc, spark, reason",
    [
        ({"source": {"uri": "/d", "format": "image"}, "steps": [{"op": "image.decode"}]}, True, "auto: image steps run on Ray Data"),
        ({"source": {"uri": "/d", "format": "image"}, "steps": []}, True, "auto: a 'image' source is unstructured media"),
        ({"source": {"uri": "/d", "format": "jsonl"}, "steps": TABLE_STEPS}, False, "the Spark engine is not installed"),
        ({"source": {"uri": "/d", "format": "jsonl"}, "steps": [{"op": "table.dedup"}]}, True, "Spark has no lowering for table.dedup"),
    ],
    ids=["media-steps", "media-source", "no-spark", "spark-lacks-an-op"],
)
def test_auto_picks_ray_otherwise(doc, spark, reason):
    plan = _plan(doc, spark)
    assert plan.engine == "ray" and reason in plan.engine_reason


def test_a_forced_engine_that_lacks_a_step_names_the_step_and_who_has_it():
    with pytest.raises(EngineCapabilityError) as info:
        _plan({"engine": "spark", "source": {"uri": "/d", "format": "image"}, "steps": [{"op": "image.decode"}]})
    source, issue = info.value.issues
    assert source.key == "source.format"
    assert source.message == "engine 'spark' cannot read a 'image' source (engine: spark set in the pipeline); engines that can: ray"
    assert issue.key == "steps[0]"
    assert issue.message == "engine 'spark' cannot run image.decode (engine: spark set in the pipeline); engines that can: ray"
    assert isinstance(info.value, PlanError)


def test_column_flow_and_engine_problems_come_in_one_error():
    doc = {"engine": "spark", "source": {"uri": "/d", "format": "image"},
           "steps": [{"op": "image.resize"}, {"op": "table.select", "params": {"columns": ["__source__"]}}]}
    with pytest.raises(PlanError) as info:
        validate_plan(build_plan(parse_pipeline({"name": "t", "sink": {"uri": "/o"}, **doc})), AssignEngines(CAPS))
    assert [(i.key, i.message.split(" (")[0]) for i in info.value.issues] == [
        ("steps[0]", "image.resize needs column 'image', which no earlier step or the 'image' source provides"),
        ("source.format", "engine 'spark' cannot read a 'image' source"),
        ("steps[0]", "engine 'spark' cannot run image.resize"),
    ]


def test_stages_on_two_engines_get_a_visible_handoff():
    plan = _plan({
        "source": {"uri": "/meta", "format": "parquet"},
        "sources": {"labels": {"uri": "/labels", "format": "csv"}},
        "stages": [
            {"name": "select", "steps": [{"op": "table.join", "params": {"right": "labels", "keys": ["id"]}}, *TABLE_STEPS]},
            {"name": "thumbs", "steps": [{"op": "image.decode"}, {"op": "image.resize", "params": {"max_side": 64}}]},
        ],
    })
    kinds = [type(n).__name__ for n in plan.nodes]
    assert kinds == ["Read", "Shuffle", "FusedMap", "Handoff", "FusedMap", "Write"]
    handoff = plan.nodes[3]
    assert (handoff.from_engine, handoff.to_engine, plan.engine, plan.engines) == ("spark", "ray", None, ("spark", "ray"))
    assert "stage 'select' on spark" in plan.engine_reason and "stage 'thumbs' on ray" in plan.engine_reason
    assert "Handoff[spark -> ray] parquet in <sink>/_tmp/<run_id>/<shard>/handoff-1/" in render_optimized(plan)
    first, second = split_at_handoffs(plan)
    assert isinstance(first.nodes[-1], Write) and first.nodes[-1].sink.format == "parquet" and [i.name for i in first.inputs] == ["labels"]
    assert isinstance(second.nodes[0], Read) and second.nodes[0].source.uri == first.nodes[-1].sink.uri and second.inputs == ()
    job = MixedJob(plan=plan, segments=(first, second), jobs=(None, None))
    bound = job.bind(1, ["/s/_tmp/r/x/handoff-1"])
    assert bound.nodes[0].source.uri == bound.spec.source.uri == "/s/_tmp/r/x/handoff-1"
    assert not any(isinstance(n, Handoff) for n in first.nodes + second.nodes)


def test_expression_columns_and_vars_are_checked_against_the_column_flow():
    doc = {"source": {"uri": "/d", "format": "text"}, "steps": [
        {"op": "table.parse_json", "params": {"fields": {"ts": "long", "rx": "double"}}},
        {"op": "table.with_columns", "params": {"columns": {"h": "rx * 2", "g": "h + rxx"}}},
        {"op": "table.filter_rows", "params": {"where": "ts > :since"}},
    ]}
    with pytest.raises(PlanError) as info:
        _plan(doc)
    text = str(info.value)
    assert "steps[1]: table.with_columns needs column 'rxx'" in text and "'h'" not in text.split("needs column")[1].split(",")[0]
    assert "steps[2]: table.filter_rows uses :since but vars gives no value for it" in text


def test_column_names_in_params_are_checked():
    doc = {"source": {"uri": "/d", "format": "text"}, "steps": [{"op": "table.dedup", "params": {"keys": ["link"]}}]}
    with pytest.raises(PlanError, match=r"steps\[0\]: table.dedup needs column 'link'.*have: __source__, text"):
        _plan(doc)
