"""Numbers held as text (every CSV field, a JSON value written as a string) compared and computed with numbers.

``v >= :floor`` over a CSV column failed every Ray run (DuckDB: "Cannot compare values of type VARCHAR and type
INTEGER_LITERAL", reported as a bug in an op) and failed a Spark run at the first field that is not a number (ANSI's
implicit cast). Now both engines cast as Spark does, by ``TRY_CAST`` (``dataflow.ops.table.coercion``): the same rows
and aggregates on both, a field that is no number NULL (dropped by a filter, left out of an aggregate), never an error.
"""
from __future__ import annotations

import json

import pytest

from tests.sink_output import run_doc

CSV = "host,latency_ms,code\nsw1,12.5,200\nsw1,n/a,500\nsw2, 40 ,503\nsw2,7,404\nsw3,,200\nsw1,30,abc\n"
STEPS = [
    {"op": "table.filter_rows", "params": {"where": "latency_ms >= :floor OR code >= 500", "vars": {"floor": 10}}},
    {"op": "table.with_columns", "params": {"columns": {"ms2": "latency_ms * 2", "server": "code BETWEEN 500 AND 599"}}},
    {"op": "table.aggregate", "params": {"keys": ["host"], "aggregations": {
        "n": "count(*)", "avg_ms": "avg(latency_ms)", "max_ms2": "max(ms2)", "errors": "count_if(server)", "total": "sum(code)"}}},
]
WANT = [  # sw1: 12.5/200 and n/a/500 and 30/abc kept; sw2: ' 40 '/503 kept, 7/404 dropped; sw3 dropped (no number)
    {"host": "sw1", "n": 3, "avg_ms": 21.25, "max_ms2": 60.0, "errors": 1, "total": 700},
    {"host": "sw2", "n": 1, "avg_ms": 40.0, "max_ms2": 80.0, "errors": 1, "total": 503},
]


@pytest.fixture(params=["ray", "spark"], ids=["ray", "spark"])
def engine(request) -> str:
    request.getfixturevalue("ray_local" if request.param == "ray" else "spark_local")
    return request.param


def _groups(rows):
    return sorted(({k: v for k, v in r.items() if k != "__source__"} for r in rows), key=lambda r: r["host"])


def test_csv_fields_compare_and_aggregate_as_numbers(engine, tmp_path):
    (tmp_path / "in.csv").write_text(CSV)
    doc = {"name": "csv-numbers", "engine": engine, "source": {"uri": str(tmp_path / "in.csv"), "format": "csv"},
           "steps": STEPS, "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    report, rows, errors = run_doc(doc)
    assert _groups(rows) == WANT and errors == []
    assert (report.rows_in, report.rows_errored) == (6, 0) and report.steps[1].drops == {"table.filter_rows": 2}


def test_json_numbers_written_as_strings_compare_as_numbers(engine, tmp_path):
    lines = [{"host": "sw1", "latency_ms": "12.5", "code": "200"}, {"host": "sw1", "latency_ms": "n/a", "code": "500"},
             {"host": "sw2", "latency_ms": " 40 ", "code": "503"}, {"host": "sw2", "latency_ms": "7", "code": "404"},
             {"host": "sw3", "latency_ms": "", "code": "200"}, {"host": "sw1", "latency_ms": "30", "code": "abc"}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    doc = {"name": "json-numbers", "engine": engine, "source": {"uri": str(tmp_path / "in.jsonl"), "format": "jsonl"},
           "steps": STEPS, "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    report, rows, errors = run_doc(doc)
    assert _groups(rows) == WANT and errors == []
    assert report.rows_in == 6


def test_numbers_computed_as_text_compare_and_aggregate_as_numbers(engine, tmp_path):
    """A log line's status code by ``regexp_extract`` and a JSON field by ``get_json_object`` (both text), beside numbers."""
    logs = ["GET /a code=200 ms=12.5", "GET /b code=503 ms=40", "GET /c code=500 ms=n/a", "GET /d no code", "GET /e code=404 ms=7"]
    (tmp_path / "in.txt").write_text("".join(line + "\n" for line in logs))
    doc = {"name": "computed-numbers", "engine": engine, "source": {"uri": str(tmp_path / "in.txt"), "format": "text", "options": {"split": "line"}},
           "steps": [
               {"op": "table.with_columns", "params": {"columns": {"ms": "regexp_extract(text, 'ms=(\\\\S+)', 1)", "meta": "concat('{\"n\": ', length(text), '}')"}}},
               {"op": "table.filter_rows", "params": {"where": "regexp_extract(text, 'code=(\\\\d+)', 1) >= 500 OR ms > 10"}},
               {"op": "table.aggregate", "params": {"aggregations": {"n": "count(*)", "total_ms": "sum(ms)", "len": "max(get_json_object(meta, '$.n') + 0)"}}},
           ],
           "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    report, rows, errors = run_doc(doc)
    kept = [line for line in logs if "code=5" in line or "ms=12.5" in line or "ms=40" in line]  # the no-code line: '' is no number, so NULL
    assert [{k: v for k, v in r.items() if k != "__source__"} for r in rows] == [{"n": len(kept), "total_ms": 52.5, "len": max(len(line) for line in kept)}]
    assert errors == [] and report.rows_in == len(logs)
