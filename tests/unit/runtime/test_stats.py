"""The row-conservation check over summed step counters."""
from __future__ import annotations

from collections import Counter

from dataflow.runtime.stage import StepStats
from dataflow.runtime.stats import FANS_OUT, RESHAPES, Counted, balance_problems

READ = Counted(-1, "read")


def _st(rows_in: int, rows_out: int, errored: int = 0, **drops: int) -> StepStats:
    return StepStats(rows_in=rows_in, rows_out=rows_out, rows_errored=errored, drops=Counter(drops))


def test_balanced_counts_have_no_problems():
    chain = [READ, Counted(0, "steps[0] (table.filter_rows)"), Counted(1, "steps[1] (table.filter_rows)"), Counted(2, "steps[2] (text.dedup_exact)")]
    stats = {-1: _st(12, 10, 2), 0: _st(10, 7, 1, **{"table.filter_rows": 2}), 1: _st(7, 5, 0, **{"table.filter_rows": 2}), 2: _st(5, 4, 0, dup=1)}
    assert balance_problems([chain], stats, rows_written=4) == []


def test_a_step_that_loses_rows_is_named_with_its_numbers():
    chain = [READ, Counted(0, "steps[0] (table.with_columns)"), Counted(1, "steps[1] (table.lose_rows)")]
    stats = {-1: _st(10, 10), 0: _st(10, 10), 1: _st(10, 7)}
    assert balance_problems([chain], stats, rows_written=7) == [
        "steps[1] (table.lose_rows): 10 rows in != 7 out + 0 dropped + 0 errored (3 rows unaccounted for)"
    ]


def test_a_step_that_makes_rows_is_named():
    problems = balance_problems([[READ, Counted(0, "steps[0] (table.dedup)")]], {-1: _st(3, 3), 0: _st(3, 5)}, rows_written=5)
    assert problems == ["steps[0] (table.dedup): 3 rows in != 5 out + 0 dropped + 0 errored (2 rows more than it was given)"]


def test_rows_lost_between_steps_and_at_the_sink_are_named():
    chain = [READ, Counted(0, "steps[0] (a)"), Counted(1, "steps[1] (b)")]
    stats = {-1: _st(10, 10), 0: _st(10, 9, 1), 1: _st(8, 8)}
    assert balance_problems([chain], stats, rows_written=6) == [
        "steps[1] (b): 8 rows in, but steps[0] (a) passed on 9",
        "the sink wrote 6 rows, but steps[1] (b) passed on 8",
    ]


def test_a_flat_map_is_exempt_from_equality_but_not_from_its_errors():
    chain = [READ, Counted(0, "steps[0] (audio.segment_vad)", FANS_OUT), Counted(1, "steps[1] (x)")]
    assert balance_problems([chain], {-1: _st(3, 3), 0: _st(3, 11, 1), 1: _st(11, 11)}, rows_written=11) == []
    assert balance_problems([chain], {-1: _st(3, 3), 0: _st(3, 0, 4)}, rows_written=0) == ["steps[0] (audio.segment_vad): 4 rows errored of 3 rows in"]
    assert balance_problems([chain], {-1: _st(3, 3), 0: _st(3, -1)}, rows_written=0)[0].startswith("steps[0] (audio.segment_vad): a negative count")


def test_a_reshaping_step_is_exempt_but_its_neighbours_are_not():
    chain = [READ, Counted(0, "steps[0] (table.aggregate)", RESHAPES), Counted(1, "steps[1] (table.filter_rows)")]
    assert balance_problems([chain], {-1: _st(6, 6), 0: _st(6, 3), 1: _st(3, 2, 0, f=1)}, rows_written=2) == []
    assert balance_problems([chain], {-1: _st(6, 6), 0: _st(6, 3), 1: _st(2, 2)}, rows_written=2) == [
        "steps[1] (table.filter_rows): 2 rows in, but steps[0] (table.aggregate) passed on 3"
    ]


def test_a_named_source_chain_is_checked_without_read_or_sink():
    main = [READ, Counted(1, "steps[1] (table.join)", RESHAPES)]
    side = [Counted(0, "steps[0] (table.filter_rows)")]
    assert balance_problems([main, side], {-1: _st(6, 6), 1: _st(6, 6), 0: _st(4, 3, 0, f=1)}, rows_written=6) == []
    assert balance_problems([main, side], {-1: _st(6, 6), 1: _st(6, 6), 0: _st(4, 2)}, rows_written=6) == [
        "steps[0] (table.filter_rows): 4 rows in != 2 out + 0 dropped + 0 errored (2 rows unaccounted for)"
    ]


def test_a_step_without_counters_is_not_compared_with_its_neighbours():
    chain = [READ, Counted(0, "steps[0] (a)"), Counted(1, "steps[1] (b)")]
    assert balance_problems([chain], {-1: _st(5, 5), 1: _st(3, 3)}, rows_written=3) == []


def test_an_arrow_column_of_sources_names_its_batch_as_the_same_values_in_a_list():
    import pyarrow as pa

    from dataflow.runtime.stats import batch_key

    values = ["f.jsonl#line=1", "\u00e9\u20ac", None, "", "x\0y"] * 3
    columns = [pa.array(values), pa.array(values, pa.large_string()), pa.chunked_array([values[:4], values[4:]]), pa.array(values).slice(2, 7),
               pa.array([], pa.string()), pa.chunked_array([], pa.string())]
    assert [batch_key(c) for c in columns] == [batch_key(c.to_pylist()) for c in columns]
    assert batch_key(pa.array(["a", "b"])) != batch_key(pa.array(["ab"]))
