"""Per-step counters of a Spark run when Spark prunes part of the plan it already ran.

Spark's adaptive execution replaces a join side that came out empty with an empty relation once
that side's stage has run; the observations inside that stage then leave the final plan, and
Spark (4.3) completes them with an empty row that PySpark's ``Observation.get`` cannot convert
(a Java ``AssertionError`` in ``toPyRow``). The side input's counters must still be recorded.
"""
from __future__ import annotations

import json

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline


def _doc(tmp_path) -> dict:
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "a.jsonl").write_text("".join(json.dumps({"link": f"l{i % 3}", "value": i}) + "\n" for i in range(12)))
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text("login ok\nlogin failed\nreboot\n")  # no line is about a link
    return {
        "name": "empty_side_input",
        "engine": "spark",
        "source": {"uri": str(tmp_path / "events"), "format": "jsonl"},
        "sources": {"logs": {"uri": str(tmp_path / "logs"), "format": "text", "options": {"split": "line"}, "steps": [
            {"op": "table.parse_regex", "params": {"pattern": r"^link (?P<link>\S+) (?P<event>\w+)$", "on_mismatch": "drop"}},
            {"op": "table.aggregate", "params": {"keys": ["link"], "aggregations": {"events": "count(*)"}}},
        ]}},
        "steps": [{"op": "table.join", "params": {"right": "logs", "keys": ["link"], "how": "left"}}],
        "sink": {"uri": str(tmp_path / "out"), "format": "parquet"},
    }


def test_an_empty_join_side_keeps_its_counters(spark_local, tmp_path, capfd):
    report = run_pipeline(parse_pipeline(_doc(tmp_path)), RunOptions(progress=False))
    assert report.published and report.rows_out == 12
    steps = {s["op"]: s for s in report.to_dict()["steps"]}
    # The side input read 3 lines and its regex dropped all of them; its aggregate saw none.
    assert steps["table.parse_regex"]["rows_in"] == 3
    assert steps["table.parse_regex"]["rows_out"] == 0
    assert steps["table.aggregate"]["rows_in"] == 0
    assert "AssertionError" not in capfd.readouterr().err


def test_the_rule_is_turned_off_only_while_the_job_runs(spark_local):
    from dataflow.engines.spark.counters import keep_observed

    key, rule = "spark.sql.adaptive.optimizer.excludedRules", "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation"
    spark_local.conf.set(key, "org.apache.spark.sql.catalyst.optimizer.CombineFilters")
    try:
        with keep_observed(spark_local):
            assert spark_local.conf.get(key) == f"org.apache.spark.sql.catalyst.optimizer.CombineFilters,{rule}"
        assert spark_local.conf.get(key) == "org.apache.spark.sql.catalyst.optimizer.CombineFilters"
    finally:
        spark_local.conf.unset(key)
    with keep_observed(spark_local):
        assert spark_local.conf.get(key) == rule
    assert spark_local.conf.get(key, None) is None


def _aggregate_doc(tmp_path, data) -> dict:
    return {
        "name": "counted_aggregate", "engine": "spark",
        "source": {"uri": str(data), "format": "jsonl", "options": {"schema": {"level": "string", "ms": "double"}}},
        "steps": [
            {"op": "table.filter_rows", "params": {"where": "level <> 'DEBUG'"}},
            {"op": "table.with_columns", "params": {"columns": {"slow": "ms > 5"}}},
            {"op": "table.aggregate", "params": {"keys": ["level"], "aggregations": {"n": "count(*)", "slow": "count_if(slow)"}}},
            {"op": "table.select", "params": {"columns": ["level", "n", "slow"]}},
        ],
        "sink": {"uri": str(tmp_path / "out"), "format": "parquet"},
    }


def test_an_aggregate_counts_the_rows_before_it_without_their_own_observation(spark_local, tmp_path):
    """The aggregate's hidden input count gives the counters of the steps before it: no observation runs over their rows."""
    from connectors.registry import list_files
    from dataflow.engines.registry import compile_pipeline
    from dataflow.engines.spark.run import build_frames
    from dataflow.runtime.stats import SideOutputs

    data = tmp_path / "in"
    data.mkdir()
    levels = ["INFO", "DEBUG", "WARN", "INFO"]
    (data / "a.jsonl").write_text("".join(json.dumps({"level": levels[i % 4], "ms": i}) + "\n" for i in range(20)) + '{"level": "INFO", "ms": "x"}\n')
    spec = parse_pipeline(_aggregate_doc(tmp_path, data))
    report = run_pipeline(spec, RunOptions(progress=False))
    steps = [(s["op"], s["rows_in"], s["rows_out"], s["rows_errored"], s["drops"]) for s in report.to_dict()["steps"]]
    assert steps == [
        ("read", 21, 20, 1, {}),
        ("table.filter_rows", 20, 15, 0, {"table.filter_rows": 5}),
        ("table.with_columns", 15, 15, 0, {}),
        ("table.aggregate", 15, 2, 0, {}),
        ("table.select", 2, 2, 0, {}),
    ]
    out = tmp_path / "plan"
    side = SideOutputs(uri=str(out), storage_options={}, stats_dir=str(out / "_stats"), errors_dir=str(out / "_errors"))
    frames = build_frames(spark_local, compile_pipeline(spec)[-1], list_files(str(data), "jsonl", {}), side, {}, fast_json=True)
    plan = frames.output._jdf.queryExecution().optimizedPlan().toString()
    assert plan.count("CollectMetrics") == 3  # the read's, the aggregate's (over its groups) and the select's
    assert "__df_rows_in__" not in frames.output.columns
