"""The Ray job of a jsonl source with a declared schema: the fields it parses, the fused stage, a refused type (plan only, no Ray)."""
from __future__ import annotations

import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.registry import compile_pipeline
from dataflow.errors import PlanError
from dataflow.plan.phases import split_at_global

SCHEMA = {"ts": "string", "level": "string", "lat": "double", "msg": "string", "ctx": "struct<region: string>"}


def _map_job(schema: dict):
    doc = {"name": "t", "engine": "ray", "source": {"uri": "/in", "format": "jsonl", "options": {"schema": schema}},
           "steps": [{"op": "table.filter_rows", "params": {"where": "level <> 'DEBUG'"}},
                     {"op": "table.with_columns", "params": {"columns": {"region": "ctx.region"}}},
                     {"op": "table.aggregate", "params": {"keys": ["level"], "aggregations": {"n": "count(*)", "eu": "count_if(region = 'eu')"}}}],
           "sink": {"uri": "/out", "format": "parquet"}}
    _, optimized, engine, _ = compile_pipeline(parse_pipeline(doc))
    head, _ = split_at_global(optimized, "/out/_checkpoint")
    return engine.compile(head)


def test_only_the_fields_a_step_reads_are_parsed_and_the_stage_fuses_with_the_partial_states():
    job = _map_job(SCHEMA)
    assert list(job.read.options["schema"]) == ["level", "ctx"]
    text = job.describe()
    assert "fields read: level, ctx" in text and "stage-1 and the partial states: one DuckDB query per block" in text


def test_a_type_the_ray_read_does_not_take_is_a_plan_error_naming_the_field():
    with pytest.raises(PlanError, match="field 'ts' has type 'timestamp'"):
        _map_job({**SCHEMA, "ts": "timestamp"})


def test_a_run_in_one_phase_fuses_the_stage_with_the_global_stage_partial_states():
    doc = {"name": "t", "engine": "ray", "source": {"uri": "/in", "format": "jsonl", "options": {"schema": SCHEMA}},
           "steps": [{"op": "table.filter_rows", "params": {"where": "level <> 'DEBUG'"}},
                     {"op": "table.aggregate", "params": {"keys": ["level"], "aggregations": {"n": "count(*)"}}}],
           "sink": {"uri": "/out", "format": "parquet"}}
    _, _, _, job = compile_pipeline(parse_pipeline(doc))
    assert "stage-1 and stage-2's partial states: one DuckDB query per block" in job.describe()
