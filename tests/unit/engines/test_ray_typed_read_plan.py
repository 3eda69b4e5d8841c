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


@pytest.mark.parametrize(("schema", "source", "cache", "scans"), [
    (SCHEMA, "/in", None, True),
    ({**SCHEMA, "ctx": "struct<region: string, w: float>"}, "/in", None, False),  # a FLOAT: the Arrow read (no scan of it is tested)
    ({**SCHEMA, "ctx": "struct<region: string, tags: array<string>>"}, "/in", None, False),
    (SCHEMA, "s3://bucket/in", None, False),  # DuckDB reads local files only
    (SCHEMA, "/in", "cache", False),  # the cache tier serves the Arrow read
], ids=["local", "float", "array", "s3", "cache"])
def test_the_read_and_the_first_stage_run_as_one_scan_where_duckdb_can_read_the_files(schema, source, cache, scans):
    from dataflow.engines.ray.fused_read import ReadFusedStage
    from dataflow.engines.ray.read import ReadStream
    from dataflow.engines.ray.run import _scanned_stage
    from dataflow.runtime.settings import CacheSettings
    from dataflow.runtime.stats import SideOutputs

    job = _map_job(schema)
    side = SideOutputs("/out", {}, "/out/_stats", "/out/_errors")
    settings = CacheSettings(dir="/tmp/cache") if cache else None
    stream = ReadStream(source, "jsonl", job.read.options, {}, settings, side)
    assert isinstance(_scanned_stage(job, stream, side), ReadFusedStage) is scans
    assert "scanned by DuckDB inside that query" in job.describe()  # where the files allow it: the explain says so either way
