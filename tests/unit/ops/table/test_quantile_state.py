"""``percentile_approx`` merged from bounded states: within Spark's error (``N / accuracy`` ranks), exact where no block is cut,
and no state or merge list longer than ``2 * accuracy`` values."""
from __future__ import annotations

import datetime
import decimal
import itertools
import math

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataflow.ops.table.grouping import aggregate_table
from dataflow.ops.table.partial_aggregate import two_phase
from dataflow.ops.table.sql import parse_aggregation


def _split(aggs: dict[str, str], params=None):
    return two_phase({k: parse_aggregation(v) for k, v in aggs.items()}, params)


def _merged(split, table: pa.Table, keys: list[str], cuts: int | list[int]) -> tuple[pa.Table, pa.Table]:
    """The merged answer of ``table`` in blocks of ``cuts`` rows (one size, or each block's, the last taking the rest)."""
    sizes = [cuts] * -(-table.num_rows // cuts) if isinstance(cuts, int) else cuts
    starts = [0, *itertools.accumulate(sizes)]
    blocks = [table.slice(a, b - a) for a, b in zip(starts, [*starts[1:-1], table.num_rows]) if b > a]
    states = pa.concat_tables([split.partial_rows(b, keys) for b in blocks], promote_options="permissive")
    return states, split.merged_rows(states, keys)


def _within(answer, values: list, p: float, accuracy: int) -> bool:
    """Whether ``answer`` is one of ``values`` whose rank is within ``N / accuracy`` of the exact rank ``max(1, ceil(p N))``."""
    ordered = sorted(values)
    n, want = len(ordered), max(1, math.ceil(p * len(ordered)))
    low, high = sum(v < answer for v in ordered) + 1, sum(v <= answer for v in ordered)
    return answer in ordered and low - n / accuracy <= want <= high + n / accuracy


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(values=st.lists(st.one_of(st.none(), st.integers(-40, 40), st.floats(-1e3, 1e3, allow_nan=False)), min_size=1, max_size=400),
       groups=st.integers(1, 3), cuts=st.lists(st.integers(1, 300), min_size=1, max_size=6), accuracy=st.integers(1, 12), p=st.sampled_from([0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 1.0]))
def test_merged_answer_is_within_n_over_accuracy_ranks_and_states_stay_bounded(values, groups, cuts, accuracy, p):
    table = pa.table({"k": pa.array([i % groups for i in range(len(values))], pa.int64()),
                      "x": pa.array([None if v is None else float(v) for v in values], pa.float64())})
    split = _split({"q": f"percentile_approx(x, {p}, {accuracy})", "n": "count(x)"})
    (state,) = split.quantiles
    states, merged = _merged(split, table, ["k"], cuts)
    assert max(len(v or []) for v in states.column(state.values).to_pylist()) <= 2 * accuracy
    resampled = state.resampled(states, ["k"])
    assert max(len(v or []) for v in resampled.column(state.values).to_pylist()) <= 2 * accuracy
    for row in merged.to_pylist():
        group = [v for k, v in zip(table.column("k").to_pylist(), table.column("x").to_pylist()) if k == row["k"] and v is not None]
        assert row["n"] == len(group)
        if not group:
            assert row["q"] is None
        else:
            assert _within(row["q"], group, p, accuracy), (row, sorted(group))


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(values=st.lists(st.integers(-1000, 1000), min_size=1, max_size=120), cut=st.integers(1, 40), p=st.floats(0, 1))
def test_blocks_of_at_most_two_accuracy_values_give_the_one_phase_answer(values, cut, p):
    table = pa.table({"x": pa.array(values, pa.int64())})
    aggs = {"q": f"percentile_approx(x, {p!r}, 20)", "qq": "percentile_approx(x, array(0.1, 0.5, 0.9), 20)"}
    _, merged = _merged(_split(aggs), table, [], min(cut, 40))
    assert merged.to_pylist() == aggregate_table(table, [], {k: parse_aggregation(v) for k, v in aggs.items()}, {}).to_pylist()


def test_blocks_of_very_different_sizes_weigh_their_values_by_what_they_stand_for():
    # 5,000 values cut to 20, each standing for 250, and 20 exact ones far above them: the median is among the 5,000.
    values = list(range(5_000)) + [10**6 + i for i in range(20)]
    split = _split({"m": "percentile_approx(x, 0.5, 10)"})
    _, merged = _merged(split, pa.table({"x": pa.array(values, pa.int64())}), [], [5_000, 20])
    assert _within(merged.column("m")[0].as_py(), values, 0.5, 10), merged.column("m")[0]


def test_an_array_of_percentages_reads_the_same_bounded_states():
    table = pa.table({"x": pa.array(range(1, 10_001), pa.int64())})
    split = _split({"qq": "percentile_approx(x, array(0.1, 0.5, 0.99), 25)"})
    states, merged = _merged(split, table, [], 1_000)
    (state,) = split.quantiles
    assert {len(v) for v in states.column(state.values).to_pylist()} == {50}
    answers = merged.column("qq")[0].as_py()
    assert all(_within(a, list(range(1, 10_001)), p, 25) for a, p in zip(answers, [0.1, 0.5, 0.99], strict=True)), answers


@pytest.mark.parametrize(("kind", "make"), [
    (pa.date32(), lambda i: datetime.date(2026, 1, 1) + datetime.timedelta(days=i)),
    (pa.timestamp("us", "UTC"), lambda i: datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=i)),
    (pa.decimal128(12, 2), lambda i: decimal.Decimal(i) / 4),
])
def test_cut_states_of_dates_timestamps_and_decimals(kind, make):
    values = [make((i * 37) % 500) for i in range(500)]
    table = pa.table({"x": pa.array(values, kind)})
    split = _split({"m": "percentile_approx(x, 0.5, 10)"})
    states, merged = _merged(split, table, [], 100)
    assert {len(v) for v in states.column(split.quantiles[0].values).to_pylist()} == {20}
    assert merged.schema == aggregate_table(table, [], {"m": parse_aggregation("percentile_approx(x, 0.5, 10)")}, {}).schema
    assert _within(merged.column("m")[0].as_py(), values, 0.5, 10)


def test_accuracy_from_a_variable_and_a_non_constant_accuracy():
    (state,) = _split({"q": "percentile_approx(x, 0.5, :acc)"}, {"acc": 7}).quantiles
    assert state.points == 14
    assert _split({"q": "percentile_approx(x, 0.5)"}).quantiles[0].points == 20_000  # Spark's default accuracy, 10,000
    assert _split({"q": "percentile_approx(x, 0.5, i)"}) is None  # not a constant: the rows cross the shuffle


def test_two_cut_percentiles_grouped_by_a_struct_key_with_nulls():
    # Keys of a kind Arrow's group_by refuses (a struct) and a null key; two percentile_approx states cut side by side.
    n = 3_000
    keys = [None if i % 5 == 0 else {"region": ["eu", "us"][i % 2], "tier": i % 3} for i in range(n)]
    table = pa.table({"k": pa.array(keys), "x": pa.array([float((i * 7919) % 1000) for i in range(n)]), "i": pa.array([(i * 31) % 97 for i in range(n)], pa.int64())})
    split = _split({"px": "percentile_approx(x, 0.25, 8)", "pi": "percentile_approx(i, 0.9, 8)", "n": "count(*)"})
    assert len(split.quantiles) == 2
    states, merged = _merged(split, table, ["k"], [700, 100, 2_200])
    assert all(len(v) <= 16 for q in split.quantiles for v in states.column(q.values).to_pylist() if v)
    rows = table.to_pylist()
    assert sum(r["n"] for r in merged.to_pylist()) == n
    for row in merged.to_pylist():
        group = [r for r in rows if r["k"] == row["k"]]
        assert _within(row["px"], [r["x"] for r in group], 0.25, 8) and _within(row["pi"], [r["i"] for r in group], 0.9, 8), row
