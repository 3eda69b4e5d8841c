"""Typed Parquet columns (timestamp, date, decimal, binary, struct, list, map) pass a step on either engine and are
written back with the same types and values (Spark's own writer included: TIMESTAMP(MICROS), not INT96)."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline

UTC = dt.timezone.utc
TABLE = pa.table({
    "n": pa.array([1, 2, 0], pa.int64()),
    "ts": pa.array([dt.datetime(2026, 1, 1, 12, 30, 1, 250, tzinfo=UTC), None, dt.datetime(1969, 12, 31, tzinfo=UTC)], pa.timestamp("us", "UTC")),
    "day": pa.array([dt.date(2026, 1, 1), dt.date(1900, 2, 28), None], pa.date32()),
    "price": pa.array([decimal.Decimal("1.10"), None, decimal.Decimal("-3.33")], pa.decimal128(9, 2)),
    "blob": pa.array([b"\x00\xff", b"", None], pa.binary()),
    "meta": pa.array([{"lang": "en", "score": 0.5}, None, {"lang": None, "score": 1.0}], pa.struct([("lang", pa.string()), ("score", pa.float64())])),
    "tags": pa.array([[1, 2], [], None], pa.list_(pa.int64())),
    "attrs": pa.array([[("k", 7)], None, []], pa.map_(pa.string(), pa.int64())),
})


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_typed_columns_are_written_back_unchanged(request, tmp_path: pathlib.Path, engine):
    request.getfixturevalue(f"{engine}_local")
    pq.write_table(TABLE, tmp_path / "typed.parquet")
    doc = {"name": "typed", "engine": engine, "source": {"uri": str(tmp_path / "typed.parquet"), "format": "parquet"},
           "steps": [{"op": "table.filter_rows", "params": {"where": "n > 0"}}], "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    run_pipeline(parse_pipeline(doc), RunOptions(progress=False))
    files = json.loads((tmp_path / "out" / "_manifest.json").read_text())["files"]
    out = pa.concat_tables([pq.read_table(tmp_path / "out" / f["path"]) for f in files]).drop_columns(["__source__"])
    expected = TABLE.slice(0, 2)
    for field in expected.schema:
        assert out.schema.field(field.name).type == field.type, (field.name, out.schema.field(field.name).type)
    assert sorted(out.select(expected.column_names).to_pylist(), key=lambda r: r["n"]) == expected.to_pylist()
