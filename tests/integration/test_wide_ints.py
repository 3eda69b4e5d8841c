"""An integer beyond 64 bits in an untyped JSON-lines read: one row error, never a failed run.

One such value failed the whole run on Ray (``ArrowInvalid: PyLong is too large to fit int64``, at the write).
Spark infers the column a ``bigint`` and refuses the line (a corrupt record); Ray now refuses it too. (Where the
column also holds a fraction, Spark infers a double and reads the integer as one; Ray still refuses it: README.)
"""
from __future__ import annotations

import pytest

from tests.sink_output import run_doc

LINES = ['{"a": 1, "k": "one"}', '{"a": ' + "9" * 400 + ', "k": "huge"}', '{"a": 18446744073709551616, "k": "u64+1"}',
         '{"a": -9223372036854775808, "k": "min"}', '{"a": 9223372036854775807, "k": "max"}', '{"a": 9223372036854775808, "k": "max+1"}']


@pytest.fixture(params=["ray", "spark"], ids=["ray", "spark"])
def engine(request) -> str:
    request.getfixturevalue("ray_local" if request.param == "ray" else "spark_local")
    return request.param


def test_an_integer_beyond_64_bits_is_one_row_error_on_both_engines(engine, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "n.jsonl").write_text("\n".join(LINES) + "\n")
    doc = {"name": "wide-ints", "engine": engine, "source": {"uri": str(tmp_path / "in"), "format": "jsonl"},
           "steps": [], "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    report, rows, errors = run_doc(doc)
    assert sorted((r["k"], r["a"]) for r in rows) == [("max", 2**63 - 1), ("min", -(2**63)), ("one", 1)]
    assert sorted(e["source"].rsplit("=", 1)[1] for e in errors) == ["2", "3", "6"]
    assert (report.rows_in, report.rows_out, report.rows_errored) == (6, 3, 3)
