"""SQL table steps and an aggregation's partial states as one query: the same states and counters as step by step, or None."""
from __future__ import annotations

import pyarrow as pa
import pytest

from dataflow.ops.table.partial_aggregate import two_phase
from dataflow.ops.table.sql import parse_aggregation
from dataflow.runtime.fused_sql import FusedAggregate, fusable
from dataflow.runtime.stage import StageExecutor, StepCall

AGGS = {"n": "count(*)", "mu": "avg(lat)", "p": "percentile_approx(lat, 0.5)", "errs": "count_if(code LIKE '5%')", "eu": "count_if(region = 'eu')"}
KEYS = ["service"]


def _batch(n: int = 200) -> pa.Table:
    return pa.table({
        "__source__": [f"f#line={i + 1}" for i in range(n)],
        "service": [["a", "b", None][i % 3] for i in range(n)],
        "level": [["DEBUG", "INFO", "WARN"][i % 3 if i % 5 else 1] for i in range(n)],
        "lat": [None if i % 11 == 0 else float(i % 17) for i in range(n)],
        "msg": [f"code={[200, 500, 503][i % 3]}" for i in range(n)],
        "ctx": [{"region": ["eu", "us"][i % 2]} for i in range(n)],
    })


def _calls(*steps) -> list[StepCall]:
    return [StepCall(index=i, op=op, params=params) for i, (op, params) in enumerate(steps)]


STEPS = (("table.with_columns", {"columns": {"region": "ctx.region"}}),
         ("table.filter_rows", {"where": "level <> 'DEBUG' AND service IS NOT NULL"}),
         ("table.with_columns", {"columns": {"code": r"regexp_extract(msg, 'code=(\\d+)', 1)"}}),
         ("table.select", {"columns": ["service", "lat", "code", "region"]}))


def _both(calls, batch, keeps=None):
    keeps = keeps or [None] * len(calls)
    split = two_phase({k: parse_aggregation(v) for k, v in AGGS.items()})
    out, errors, stats = StageExecutor(calls, keeps=keeps).run(batch)
    slow = split.partial_rows(out, KEYS) if out.num_rows else pa.table({})
    return FusedAggregate(calls, keeps, split, KEYS).run(batch), (slow, errors, stats)


def _sorted(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: str(r.get("service")))


@pytest.mark.parametrize("keeps", [None, [None, None, frozenset({"__source__", "service", "lat", "code", "region", "msg"}), None]])
def test_fused_equals_step_by_step_states_and_counters(keeps):
    calls = _calls(*STEPS)
    fused, (slow, errors, stats) = _both(calls, _batch(), keeps)
    states, fstats, partial = fused
    assert errors == [] and states.schema == slow.schema and _sorted(states) == _sorted(slow)
    strip = lambda s: {k: {**v.as_dict(), "seconds": 0} for k, v in s.items()}  # noqa: E731
    assert strip(fstats) == strip(stats)
    assert fstats[1].drops == {"table.filter_rows": 200 - partial.rows_in} and partial.rows_in == stats[3].rows_out


def test_a_batch_the_filter_empties_gives_no_states():
    calls = _calls(STEPS[0], ("table.filter_rows", {"where": "level = 'none'"}), STEPS[2])
    fused, (slow, _, stats) = _both(calls, _batch())
    states, fstats, partial = fused
    assert states.num_rows == slow.num_rows == 0 and partial.rows_in == 0 and fstats[1].drops["table.filter_rows"] == 200


def test_a_computed_float_column_runs_step_by_step():
    calls = _calls(("table.with_columns", {"columns": {"lat": "lat * 2", "code": "'5'", "region": "'eu'"}}),)
    fused, (slow, _, _) = _both(calls, _batch())
    assert fused is None and slow.num_rows == 3  # a NaN it computed would read as null in the next step's query only


def test_a_failing_batch_and_an_empty_batch_run_step_by_step():
    calls = _calls(("table.with_columns", {"columns": {"code": "CAST(msg AS INT)", "region": "'eu'"}}),)
    split = two_phase({k: parse_aggregation(v) for k, v in AGGS.items()})
    fused = FusedAggregate(calls, [None], split, KEYS)
    assert fused.run(_batch()) is None
    assert FusedAggregate(_calls(*STEPS), [None] * 4, split, KEYS).run(_batch().slice(0, 0)) is None


def test_what_fuses():
    assert fusable(_calls(*STEPS))
    assert not fusable(_calls(STEPS[1], STEPS[1]))  # two filters: the rows after the first are not counted in one query
    assert not fusable(_calls(STEPS[0], ("table.parse_json", {"fields": {"a": "int"}, "column": "msg"})))
    assert not fusable([])


def test_the_fused_querys_percentile_states_are_cut_to_their_bound():
    calls = _calls(*STEPS)
    split = two_phase({"p": parse_aggregation("percentile_approx(lat, 0.5, 4)"), "n": parse_aggregation("count(lat)")})
    states, _, _ = FusedAggregate(calls, [None] * len(calls), split, KEYS).run(_batch(400))
    (state,) = split.quantiles
    counts = dict(zip(states.column("service").to_pylist(), states.column(state.count).to_pylist()))
    assert min(counts.values()) > 8 and {len(v) for v in states.column(state.values).to_pylist()} == {8}  # 8 = 2 * accuracy
