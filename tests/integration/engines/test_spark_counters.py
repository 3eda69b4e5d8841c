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
