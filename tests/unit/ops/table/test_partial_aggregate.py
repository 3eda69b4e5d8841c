"""The map-side combine of ``table.aggregate``: partial states per block, merged per group, equal the one-phase aggregation."""
from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataflow.ops.table.grouping import aggregate_table
from dataflow.ops.table.partial_aggregate import two_phase
from dataflow.ops.table.sql import parse_aggregation

MERGEABLE = {
    "n": "count(*)", "c": "count(x)", "ci": "count_if(x > 0)", "s": "sum(i)", "a": "avg(x)", "ai": "mean(i)", "lo": "min(x)",
    "hi": "max(i)", "p": "percentile_approx(x, 0.9)", "pp": "percentile_approx(i, array(0.25, 0.5))", "e": "sum(i) / count(*) + max(x)",
    "v": "count_if(i > :floor)",
}


def _parsed(aggs: dict[str, str]):
    return {k: parse_aggregation(v) for k, v in aggs.items()}


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("text", ["count(DISTINCT x)", "collect_list(x)", "slope(x, i)", "stddev_samp(x)", "sum(x) FILTER (WHERE i > 1)", "max(x) - count(DISTINCT i)"])
def test_aggregations_without_an_exact_merge_do_not_split(text):
    assert two_phase(_parsed({"out": text})) is None


_ROWS = st.lists(st.tuples(st.sampled_from(["a", "b", None]), st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False)), st.integers(-50, 50)), max_size=60)


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(rows=_ROWS, cut=st.integers(1, 25), keyed=st.booleans())
def test_merged_states_of_any_blocks_equal_the_one_phase_aggregation(rows, cut, keyed):
    table = pa.table({"k": pa.array([r[0] for r in rows], pa.string()), "x": pa.array([r[1] for r in rows], pa.float64()),
                      "i": pa.array([r[2] for r in rows], pa.int64()), "__source__": pa.array([f"f#row={n}" for n in range(len(rows))])})
    keys = ["k"] if keyed else []
    parsed, params = _parsed(MERGEABLE), {"floor": 3}
    split = two_phase(parsed, params)
    states = pa.concat_tables([split.partial_rows(table.slice(i, cut), keys) for i in range(0, max(len(rows), 1), cut)], promote_options="permissive")
    if not rows and not keys:
        assert states.num_rows == 0  # the run's merge then gives the one row of an aggregation over no rows
        return
    assert split.holds_states(states) and not split.holds_states(table)
    one_table, two_table = aggregate_table(table, keys, parsed, params), split.merged_rows(states, keys)
    assert one_table.schema == two_table.schema
    one, two = one_table.to_pylist(), two_table.to_pylist()
    order = (lambda r: (r["k"] is None, r["k"] or "")) if keyed else (lambda r: 0)
    one, two = sorted(one, key=order), sorted(two, key=order)
    assert [list(r) for r in one] == [list(r) for r in two]
    bad = [(r1, name) for r1, r2 in zip(one, two) for name in r1 if not _same(r1[name], r2[name])]
    assert not bad, bad
