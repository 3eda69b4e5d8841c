"""table.window_aggregate: tumbling and sliding time windows per key."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pydantic
import pytest

from dataflow.ops.table.window_aggregate import window_aggregate, window_starts

T = pa.table({"__source__": ["s0", "s1", "s2", "s3"], "link": ["a", "a", "a", "b"], "ts": [0, 1800, 3600, None], "rx": [-3.0, -3.5, -4.0, -1.0]})


def test_window_starts_cover_every_window_holding_a_time():
    rows, starts = window_starts(np.array([0.0, 1800.0, 5399.0]), 3600, 1800)
    assert sorted(zip(rows.tolist(), starts.tolist())) == [(0, -1800), (0, 0), (1, 0), (1, 1800), (2, 1800), (2, 3600)]


def test_tumbling_windows_with_slope_per_second_and_null_times_skipped():
    out = window_aggregate(T, size="2h", keys=["link"], aggregations={"n": "count(*)", "sl": "slope(rx)", "lo": "min(rx)"})
    assert out.column_names == ["link", "window_start", "window_end", "n", "sl", "lo", "__source__"]
    assert out.to_pylist() == [{"link": "a", "window_start": 0, "window_end": 7200, "n": 3, "sl": pytest.approx(-1 / 3600), "lo": -4.0, "__source__": "s0"}]


def test_sliding_windows_count_a_row_in_each_window():
    out = window_aggregate(T, size=3600, slide=1800, keys=["link"], aggregations={"n": "count(*)"})
    assert sorted((r["window_start"], r["n"]) for r in out.to_pylist()) == [(-1800, 1), (0, 2), (1800, 2), (3600, 1)]
    # Overlapping windows share their smallest row: the window start keeps identities unique.
    assert sorted(out.column("__source__").to_pylist()) == ["s0#window=-1800", "s0#window=0", "s1#window=1800", "s2#window=3600"]


def test_durations_are_checked():
    assert window_aggregate.params(size="15m", aggregations={"n": "count(*)"}).size == 900
    with pytest.raises(pydantic.ValidationError, match="expected a duration"):
        window_aggregate.params(size="soon", aggregations={"n": "count(*)"})
