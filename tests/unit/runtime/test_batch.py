"""The canonical batch form keeps typed columns: Arrow -> numpy columns -> Arrow."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa

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
