"""A file listed, then gone before it is read (rotated, compacted, removed by another job).

Such a file failed the whole run on both engines (Ray's read task, Spark's analysis or its schema sample: a
``FileNotFoundError`` or ``PATH_NOT_FOUND``), called "a bug in an op or the engine". Now it is one read error
(``FileNotFoundError``, "listed, then not readable") and every other file is read, on both engines and in every format.
The file is removed right after the listing has shown it (the listing page is wrapped: no mock of what is read).
A file removed while Spark runs the job it was planned in stops that job; the job runs again with that file read by the
Python data source, which records it as gone.
"""
from __future__ import annotations

import csv
import json
import os
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import connectors.listing
from dataflow.runtime.failure import failure_text, vanished_input
from tests.sink_output import run_doc

ROWS = [{"k": f"k{i % 3}", "v": i} for i in range(6)]
STEPS = [{"op": "table.filter_rows", "params": {"where": "v >= 0"}}]
AGGREGATE = [*STEPS, {"op": "table.aggregate", "params": {"keys": ["k"], "aggregations": {"n": "count(*)", "total": "sum(v)"}}}]


@pytest.fixture(params=["ray", "spark"], ids=["ray", "spark"])
def engine(request) -> str:
    request.getfixturevalue("ray_local" if request.param == "ray" else "spark_local")
    return request.param


def _write(path: pathlib.Path, fmt: str) -> None:
    if fmt == "parquet":
        pq.write_table(pa.Table.from_pylist(ROWS), path)
    elif fmt == "csv":
        with path.open("w", newline="") as f:
            out = csv.DictWriter(f, ["k", "v"])
            out.writeheader()
            out.writerows(ROWS)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    else:
        path.write_text("".join(f"{r['k']} {r['v']}\n" for r in ROWS))


def _three_files(tmp_path: pathlib.Path, fmt: str) -> tuple[pathlib.Path, str, pathlib.Path]:
    """Files a, b and c of ``fmt`` in a folder: (the folder, their extension, b)."""
    src = tmp_path / "in"
    src.mkdir()
    ext = {"text": "txt"}.get(fmt, fmt)
    for name in ("a", "b", "c"):
        _write(src / f"{name}.{ext}", fmt)
    return src, ext, src / f"b.{ext}"


def _gone_after_listing(monkeypatch, victim: pathlib.Path) -> None:
    """Remove ``victim`` once the listing has shown it (after the page that holds it is handed on)."""
    listed = connectors.listing.list_pages

    def pages(*args, **kwargs):
        for page in listed(*args, **kwargs):
            yield page
            victim.unlink(missing_ok=True)

    monkeypatch.setattr(connectors.listing, "list_pages", pages)


CASES = {  # name: (format, source options, steps, rows a kept file gives)
    "jsonl-typed": ("jsonl", {"schema": {"k": "string", "v": "bigint"}}, STEPS, 6),
    "jsonl-typed-aggregate": ("jsonl", {"schema": {"k": "string", "v": "bigint"}}, AGGREGATE, None),
    "jsonl-untyped": ("jsonl", {}, STEPS, 6),
    "text-lines": ("text", {"split": "line"}, [], 6),
    "text-files": ("text", {"split": "file"}, [], 1),
    "csv": ("csv", {}, [{"op": "table.filter_rows", "params": {"where": "k <> ''"}}], 6),
    "parquet": ("parquet", {}, STEPS, 6),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_file_gone_since_the_listing_is_one_read_error_and_the_others_are_read(engine, case, tmp_path, monkeypatch):
    fmt, options, steps, per_file = CASES[case]
    src, ext, victim = _three_files(tmp_path, fmt)
    _gone_after_listing(monkeypatch, victim)
    doc = {"name": "vanished", "engine": engine, "source": {"uri": str(src), "format": fmt, "options": options},
           "steps": steps, "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    report, rows, errors = run_doc(doc)
    assert not victim.exists()
    assert [(e["source"], e["op"], e["error_type"]) for e in errors] == [(str(victim), "read", "FileNotFoundError")]
    assert errors[0]["reason"].startswith("listed, then not readable")
    if per_file is None:  # the aggregate of the two files kept
        assert sorted((r["k"], r["n"], r["total"]) for r in rows) == [("k0", 4, 6), ("k1", 4, 10), ("k2", 4, 14)]
        assert (report.rows_in, report.rows_errored) == (2 * len(ROWS) + 1, 1)
    else:
        assert {r["__source__"].split("#")[0] for r in rows} == {str(src / f"a.{ext}"), str(src / f"c.{ext}")}
        assert len(rows) == 2 * per_file
        assert (report.rows_in, report.rows_out, report.rows_errored) == (2 * per_file + 1, 2 * per_file, 1)


@pytest.mark.parametrize("case", ["jsonl-typed", "jsonl-typed-aggregate", "text-lines", "parquet"])
def test_a_file_gone_while_spark_runs_its_job_is_one_read_error(spark_local, case, tmp_path, monkeypatch):
    """The window between the driver's last look and Spark's task: the file is removed once the frames are built.

    Spark's job stops at it (its own read, ``FAILED_READ_FILE.FILE_NOT_EXIST``); the job runs again with the file read by
    the Python data source, which records it as gone.
    """
    import dataflow.engines.spark.run as spark_run

    fmt, options, steps, per_file = CASES[case]
    src, ext, victim = _three_files(tmp_path, fmt)
    write, attempts = spark_run.write_outputs, []

    def removed_first(*args, **kwargs):
        attempts.append(victim.exists())
        victim.unlink(missing_ok=True)
        return write(*args, **kwargs)

    monkeypatch.setattr(spark_run, "write_outputs", removed_first)
    doc = {"name": "vanished", "engine": "spark", "source": {"uri": str(src), "format": fmt, "options": options},
           "steps": steps, "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    report, rows, errors = run_doc(doc)
    assert attempts == [True, False]  # planned over the file, then run again without reading it natively
    assert [(e["source"], e["op"], e["error_type"]) for e in errors] == [(str(victim), "read", "FileNotFoundError")]
    if per_file is None:
        assert sorted((r["k"], r["n"], r["total"]) for r in rows) == [("k0", 4, 6), ("k1", 4, 10), ("k2", 4, 14)]
        assert (report.rows_in, report.rows_errored) == (2 * len(ROWS) + 1, 1)
    else:
        assert {r["__source__"].split("#")[0] for r in rows} == {str(src / f"a.{ext}"), str(src / f"c.{ext}")}
        assert (report.rows_in, report.rows_out, report.rows_errored) == (2 * per_file + 1, 2 * per_file, 1)
    assert list((tmp_path / "out").glob("*.parquet")) and not list((tmp_path / "out").glob("_tmp*"))


def test_spark_names_a_file_it_stopped_at(spark_local, tmp_path):
    """Spark's own failure for a file gone while its task ran, told apart from a corrupt file: the name the rerun reads apart."""
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"a": 1}) + "\n")
    df = spark_local.read.schema("a INT").json(f"file://{path}")
    os.remove(path)
    with pytest.raises(Exception) as failed:
        df.collect()
    assert vanished_input(failure_text(failed.value)) == f"file://{path}"
    assert vanished_input(f"[PATH_NOT_FOUND] Path does not exist: file:{path}. SQLSTATE: 42K03") == f"file:{path}"
    assert vanished_input("[FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:///x/bad.parquet.") is None
