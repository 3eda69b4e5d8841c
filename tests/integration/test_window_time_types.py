"""table.window_aggregate over a timestamp or date time column (Parquet-typed) gives the windows of its UTC unix
seconds on both engines, with ``slope(y)`` per second; a time column of another type fails the run naming it."""
from __future__ import annotations

import datetime as dt
import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.errors import RunError
from dataflow.runner import run_pipeline

UTC = dt.timezone.utc
START = dt.datetime(2026, 1, 1, tzinfo=UTC)
MINUTES = [0, 20, 50, 61, 95, None, 130]  # minutes after START; None: a null time (skipped)
RX = [1.0, 2.0, 4.0, 4.5, 6.0, 9.0, 7.0]


def _table(kind: pa.DataType) -> pa.Table:
    if pa.types.is_date(kind):
        times = [None if m is None else (START + dt.timedelta(days=m)).date() for m in MINUTES]
    else:
        times = [None if m is None else (START + dt.timedelta(minutes=m)).replace(tzinfo=None if kind.tz is None else UTC) for m in MINUTES]
    return pa.table({"link": ["a"] * 4 + ["b"] * 3, "ts": pa.array(times, kind), "rx": RX})


def _expected(kind: pa.DataType, size: int, slide: int) -> list[dict]:
    """The windows computed here from unix seconds: (link, start, end, n, slope per second, first time)."""
    unit = 86400 if pa.types.is_date(kind) else 60
    base = int(START.timestamp())
    groups: dict[tuple[str, int], list[tuple[int, float, object]]] = {}
    for link, m, rx, t in zip(["a"] * 4 + ["b"] * 3, MINUTES, RX, _table(kind).column("ts").to_pylist()):
        if m is None:
            continue
        s = base + m * unit
        start = s // slide * slide
        while start + size > s:
            groups.setdefault((link, start), []).append((s, rx, t))
            start -= slide
    out = []
    for (link, start), rows in sorted(groups.items()):
        xs, ys = [r[0] for r in rows], [r[1] for r in rows]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        var = sum((x - mx) ** 2 for x in xs)
        slope = None if var == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var
        out.append({"link": link, "window_start": start, "window_end": start + size, "n": len(rows), "sl": slope, "first": min(r[2] for r in rows)})
    return out


def _run(tmp_path: pathlib.Path, engine: str, table: pa.Table, size: str, slide: str | None) -> list[dict]:
    pq.write_table(table, tmp_path / "links.parquet")
    params = {"keys": ["link"], "size": size, "time_column": "ts", "aggregations": {"n": "count(*)", "sl": "slope(rx)", "first": "min(ts)"}}
    doc = {"name": "windows", "engine": engine, "source": {"uri": str(tmp_path / "links.parquet"), "format": "parquet"},
           "steps": [{"op": "table.window_aggregate", "params": {**params, **({"slide": slide} if slide else {})}}],
           "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    run_pipeline(parse_pipeline(doc), RunOptions(progress=False))
    files = json.loads((tmp_path / "out" / "_manifest.json").read_text())["files"]
    rows = [r for f in files for r in pq.read_table(tmp_path / "out" / f["path"]).to_pylist()]
    return sorted(({k: v for k, v in r.items() if k != "__source__"} for r in rows), key=lambda r: (r["link"], r["window_start"]))


def _check(rows: list[dict], expected: list[dict]) -> None:
    assert [{k: v for k, v in r.items() if k != "sl"} for r in rows] == [{k: v for k, v in r.items() if k != "sl"} for r in expected]
    for r, e in zip(rows, expected):
        assert (r["sl"] is None) == (e["sl"] is None) and (e["sl"] is None or r["sl"] == pytest.approx(e["sl"], rel=1e-9)), (r, e)


KINDS = {"timestamp_utc": pa.timestamp("us", "UTC"), "timestamp_ms_local": pa.timestamp("ms"), "date": pa.date32()}


@pytest.mark.parametrize("engine", ["ray", "spark"])
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("windows", [("1h", None), ("1h", "30m")], ids=["tumbling", "sliding"])
def test_timestamp_and_date_time_columns(request, tmp_path, engine, kind, windows):
    request.getfixturevalue(f"{engine}_local")
    size, slide = (("2d", "1d") if windows[1] else ("2d", None)) if kind == "date" else windows
    seconds = {"1h": 3600, "30m": 1800, "2d": 172800, "1d": 86400}
    expected = _expected(KINDS[kind], seconds[size], seconds[slide or size])
    _check(_run(tmp_path, engine, _table(KINDS[kind]), size, slide), expected)


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_a_string_time_column_fails_the_run_naming_it(request, tmp_path, engine):
    request.getfixturevalue(f"{engine}_local")
    table = pa.table({"link": ["a"], "ts": ["2026-01-01T00:00:00Z"], "rx": [1.0]})
    with pytest.raises(RunError, match=r"time_column 'ts' is of type string; it takes unix seconds \(a number\), a timestamp or a date"):
        _run(tmp_path, engine, table, "1h", None)
