"""The canonical batch form keeps typed columns: Arrow -> numpy columns -> Arrow."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dataflow.batch import from_arrow, to_arrow


def test_typed_columns_survive_the_round_trip():
    table = pa.table({
        "t": pa.array([dt.datetime(2024, 3, 5, 13, 45, 30), None], pa.timestamp("us")),
        "day": pa.array([dt.date(2024, 3, 5), None]),
        "raw": pa.array([b"\x00\xff", None]),
        "l": pa.array([[7, 2], None]),
        "st": pa.array([{"x": 7, "y": "a"}, None]),
        "m": pa.array([[("k", 7)], None], pa.map_(pa.string(), pa.int64())),
    })
    back = to_arrow(from_arrow(table))
    assert back.schema == table.schema
    assert back.to_pylist() == table.to_pylist()


_DTYPES = st.sampled_from(["uint8", "int16", "float32", "float64", "bool"])
_CELL = st.one_of(st.none(), hnp.arrays(dtype=_DTYPES, shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5)))


@settings(max_examples=150, deadline=None)
@given(cells=st.lists(_CELL, min_size=1, max_size=12).filter(lambda c: any(x is not None for x in c)), cut=st.integers(0, 11))
def test_tensor_cells_round_trip_whole_and_sliced(cells, cut):
    column = np.empty(len(cells), dtype=object)
    for i, c in enumerate(cells):
        column[i] = c
    table = to_arrow({"t": column})
    start = min(cut, len(cells) - 1)
    back = from_arrow(table.slice(start))["t"]
    assert len(back) == len(cells) - start
    for got, want in zip(back, cells[start:]):
        if want is None:
            assert got is None
        else:
            assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=want.dtype.kind == "f")
