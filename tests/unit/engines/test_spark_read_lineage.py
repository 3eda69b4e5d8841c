"""``SparkRead.lineage``: whether anything downstream of a Spark read reads ``__source__``."""
from __future__ import annotations

import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.registry import engine_caps
from dataflow.engines.spark.compile import compile_plan
from dataflow.plan.planner import plan_pipeline

FILTER = {"op": "table.filter_rows", "params": {"where": "level <> 'DEBUG'"}}
AGGREGATE = {"op": "table.aggregate", "params": {"keys": ["level"], "aggregations": {"n": "count(*)"}}}
DEDUP = {"op": "table.dedup", "params": {"keys": ["level"]}}
NAMES_IT = {"op": "table.with_columns", "params": {"columns": {"origin": "__source__"}}}


def _read(steps: list[dict], lineage: bool):
    doc = {"name": "lineage", "engine": "spark", "source": {"uri": "/data/in", "format": "jsonl", "options": {"schema": {"level": "string"}}},
           "steps": steps, "sink": {"uri": "/data/out", "format": "parquet", "lineage": lineage}}
    _, optimized = plan_pipeline(parse_pipeline(doc), engine_caps(installed_only=False))
    return compile_plan(optimized).read


@pytest.mark.parametrize(("steps", "sink_lineage", "expected"), [
    ([FILTER, AGGREGATE], True, True),
    ([FILTER, AGGREGATE], False, False),
    ([FILTER, DEDUP], False, True),
    ([NAMES_IT], False, True),
], ids=["sink-writes-it", "nothing-reads-it", "dedup-orders-by-it", "a-step-names-it"])
def test_a_read_makes_lineage_only_when_something_reads_it(steps, sink_lineage, expected):
    assert _read(steps, sink_lineage).lineage is expected


SETS_IT = {"op": "table.with_columns", "params": {"columns": {"__source__": "level"}}}
COLUMNS = {"op": "table.with_columns", "params": {"columns": {"x": "level"}}}
MIN_IT = {"op": "table.aggregate", "params": {"keys": ["level"], "aggregations": {"first": "min(__source__)"}}}


@pytest.mark.parametrize(("steps", "expected"), [
    ([FILTER, COLUMNS, AGGREGATE], 2),
    ([AGGREGATE, FILTER], 0),
    ([FILTER], None),
    ([DEDUP, AGGREGATE], None),
    ([NAMES_IT, AGGREGATE], None),
    ([SETS_IT, AGGREGATE], None),
    ([MIN_IT], None),
], ids=["carried-to-the-aggregate", "aggregate-first", "no-aggregate", "dedup-orders-by-it", "a-step-names-it", "a-step-sets-it", "the-aggregate-names-it"])
def test_lineage_may_be_a_key_until_an_aggregate_takes_its_minimum(steps, expected):
    assert _read(steps, True).lineage_key_until == expected
