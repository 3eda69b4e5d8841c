"""needed_after: the columns later steps read, from which an engine may leave the rest out (no engine)."""
from __future__ import annotations

import dataflow
from dataflow.plan import build_plan
from dataflow.plan.columns import needed_after
from dataflow.plan.nodes import Step


def _needed(*steps):
    p = dataflow.read("/d", format="text", name="t", split="line")
    for name, params in steps:
        p = p.apply(name, **params)
    plan = build_plan(p.write("/o").with_engine("spark").spec)
    return needed_after([n for n in plan.nodes if isinstance(n, Step)])


PARSE = ("table.parse_json", {"fields": {"ts": "long", "link": "string", "rx": "double", "tx": "double"}})


def test_columns_fall_out_only_at_a_step_that_keeps_just_the_columns_it_names():
    window = ("table.window_aggregate", {"keys": ["link"], "time_column": "ts", "size": 3600, "aggregations": {"n": "count(*)", "s": "slope(rx)"}})
    filt = ("table.filter_rows", {"where": "link IS NOT NULL"})
    after_parse, after_filter, after_window = _needed(PARSE, filt, window)
    # Not text, not tx; the window's outputs are listed too (an over-approximation is safe).
    assert after_parse == after_filter == {"link", "ts", "rx", "__source__", "window_start", "window_end", "n", "s"}
    assert after_window is None  # the sink writes every column


def test_every_column_is_needed_when_nothing_later_narrows_or_a_dedup_keys_on_all():
    assert _needed(PARSE, ("table.filter_rows", {"where": "rx < 0"})) == [None, None]
    dedup_all = _needed(PARSE, ("table.dedup", {}), ("table.select", {"columns": ["link"]}))
    assert dedup_all[0] is None and dedup_all[1] == {"link", "__source__"}


def test_expressions_and_named_columns_keep_what_they_read():
    steps = [PARSE, ("table.with_columns", {"columns": {"db": "rx * 2", "twice": "db + tx"}}), ("table.select", {"columns": ["twice"]})]
    after_parse, after_with, _ = _needed(*steps)
    assert after_parse == {"rx", "tx", "__source__", "twice"} and after_with == {"twice", "__source__"}
    assert _needed(PARSE, ("table.select", {"columns": ["link", "rx"]}))[0] == {"link", "rx", "__source__"}


def test_the_global_phase_checkpoint_holds_what_the_rest_of_the_run_reads():
    from dataflow.plan.phases import split_at_global

    p = dataflow.read("/d", format="text", name="t", split="line")
    p = p.apply(PARSE[0], **PARSE[1]).apply("table.aggregate", keys=["link"], aggregations={"n": "count(*)", "hi": "max(rx)"})
    plan = build_plan(p.write("/o").with_engine("ray").spec)
    head, tail = split_at_global(plan, "/o/_staged")
    checkpoint = head.nodes[-1]
    assert {"link", "rx", "__source__"} <= checkpoint.reads and not checkpoint.reads & {"text", "ts", "tx"}
    assert checkpoint.feeds is tail.nodes[1] and checkpoint.feeds.op.name == "table.aggregate"
    assert needed_after([n for n in head.nodes if isinstance(n, Step)], checkpoint.reads) == [checkpoint.reads]
