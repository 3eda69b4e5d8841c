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


def _written(tmp_path: pathlib.Path, engine: str, source: dict, steps: list[dict]) -> pa.Table:
    out = tmp_path / f"out-{engine}"
    doc = {"name": "computed", "engine": engine, "source": source, "steps": steps, "sink": {"uri": str(out), "format": "parquet"}}
    run_pipeline(parse_pipeline(doc), RunOptions(progress=False))
    files = json.loads((out / "_manifest.json").read_text())["files"]
    return pa.concat_tables([pq.read_table(out / f["path"]) for f in files]).drop_columns(["__source__"])


INSTANTS = {"t": "to_timestamp(s)", "later": "to_timestamp(s) + INTERVAL 90 MINUTES", "hour": "date_trunc('HOUR', to_timestamp(s))",
            "made": "make_timestamp(2024, 2, 29, 23, 59, 30.5)", "seconds": "timestamp_seconds(n)", "cast": "CAST(s AS TIMESTAMP)",
            "listed": "array(to_timestamp(s))", "nested": "named_struct('at', to_timestamp(s))"}


def test_computed_timestamps_are_sparks_instants_on_both_engines(ray_local, spark_local, tmp_path: pathlib.Path):
    """A timestamp an expression computes is Spark's TIMESTAMP, an instant: ``timestamp[us, tz=UTC]`` in Parquet, in a
    list or a struct too, and out of an aggregate. Ray wrote those of ``to_timestamp``, ``date_trunc``, ``+ INTERVAL``
    and ``make_timestamp`` without a zone (the same wall-clock time, another type)."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"s": "2024-01-02 03:04:05", "n": 0, "k": "a"}\n{"s": "2024-05-06T07:08:09+02:00", "n": 86400, "k": "a"}\n')
    source = {"uri": str(src), "format": "jsonl", "options": {"schema": {"s": "string", "n": "bigint", "k": "string"}}}
    steps = [{"op": "table.with_columns", "params": {"columns": INSTANTS}}]
    ray, spark = (_written(tmp_path, e, source, steps) for e in ("ray", "spark"))
    utc = pa.timestamp("us", "UTC")
    assert {n: ray.schema.field(n).type for n in INSTANTS} == {n: spark.schema.field(n).type for n in INSTANTS} == {
        **{n: utc for n in ("t", "later", "hour", "made", "seconds", "cast")}, "listed": pa.list_(utc), "nested": pa.struct([("at", utc)])}
    assert sorted(ray.select(list(INSTANTS)).to_pylist(), key=str) == sorted(spark.select(list(INSTANTS)).to_pylist(), key=str)
    assert sorted(r["t"] for r in ray.to_pylist()) == [dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), dt.datetime(2024, 5, 6, 5, 8, 9, tzinfo=UTC)]
    grouped = [{"op": "table.aggregate", "params": {"keys": ["k"], "aggregations": {"first": "min(to_timestamp(s))", "last": "max(to_timestamp(s))"}}}]
    ray, spark = (_written(tmp_path / "grouped", e, source, grouped) for e in ("ray", "spark"))
    assert ray.schema.field("last").type == spark.schema.field("last").type == utc
    assert ray.select(["k", "first", "last"]).to_pylist() == spark.select(["k", "first", "last"]).to_pylist()


def test_a_timestamp_without_a_zone_stays_one_on_both_engines(ray_local, spark_local, tmp_path: pathlib.Path):
    """A Parquet timestamp without a zone is Spark's TIMESTAMP_NTZ: passed on, and moved by an interval, it keeps its type."""
    naive = pa.table({"at": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5)], pa.timestamp("us"))})
    pq.write_table(naive, tmp_path / "naive.parquet")
    steps = [{"op": "table.with_columns", "params": {"columns": {"same": "at", "later": "at + INTERVAL 1 HOUR"}}}]
    for engine in ("ray", "spark"):
        out = _written(tmp_path, engine, {"uri": str(tmp_path / "naive.parquet"), "format": "parquet"}, steps)
        assert [out.schema.field(n).type for n in ("at", "same", "later")] == [pa.timestamp("us")] * 3, engine
        assert out.column("later").to_pylist() == [dt.datetime(2024, 1, 2, 4, 4, 5)]
