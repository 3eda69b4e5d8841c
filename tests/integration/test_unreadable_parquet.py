"""Parquet files that are not: an empty file, text named ``.parquet``, a truncated file, a corrupt data page.

One such file failed the whole run on both engines, with Python's traceback, before anything started (the runner read
the first file's footer for the schema; Ray read every footer on the driver). Now a file whose footer does not read is
one row error on both engines (``ArrowInvalid``, "not a readable Parquet file"), and the others are read; a zero-row
file is no row and no error. A corrupt data page under a good footer is a row error of that row group on both engines
(Spark's native job stopped there, failing the run; now the job runs again with that file read a row group at a time).
"""
from __future__ import annotations

import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.report.preview import read_first
from tests.sink_output import run_doc


@pytest.fixture(params=["ray", "spark"], ids=["ray", "spark"])
def engine(request) -> str:
    request.getfixturevalue("ray_local" if request.param == "ray" else "spark_local")
    return request.param


def _inputs(root: pathlib.Path, corrupt_page: bool = False) -> list[str]:
    """Good files, a zero-row one and three whose footers do not read (their names, sorted); ``corrupt_page``: one more, with a bad page."""
    root.mkdir()
    pq.write_table(pa.table({"a": [1, 2], "t": ["x", "y"]}), root / "b-good.parquet")
    pq.write_table(pa.table({"a": [3], "t": ["z"]}), root / "f-good.parquet")
    pq.write_table(pa.table({"a": pa.array([], pa.int64()), "t": pa.array([], pa.string())}), root / "g-zero.parquet")
    whole = (root / "f-good.parquet").read_bytes()
    (root / "a-empty.parquet").write_bytes(b"")  # sorts first: the runner's schema comes from the first file that reads
    (root / "c-text.parquet").write_text("id,name\n1,not parquet\n")
    (root / "d-cut.parquet").write_bytes(whole[: len(whole) // 2])
    if corrupt_page:
        _corrupt_page(root / "e-page.parquet", 0)
    return [str(root / n) for n in ("a-empty.parquet", "c-text.parquet", "d-cut.parquet")]


def _run(engine: str, root: pathlib.Path):
    sink = root.parent / "out"
    doc = {"name": "bad-parquet", "engine": engine, "source": {"uri": str(root), "format": "parquet"},
           "steps": [{"op": "table.filter_rows", "params": {"where": "a > 0"}}], "sink": {"uri": str(sink), "format": "parquet"}}
    return run_doc(doc)


def test_a_file_whose_footer_does_not_read_is_one_row_error(engine, tmp_path):
    unreadable = _inputs(tmp_path / "in")
    report, rows, errors = _run(engine, tmp_path / "in")
    assert sorted((r["__source__"].rsplit("/", 1)[1], r["a"]) for r in rows) == [("b-good.parquet#row=0", 1), ("b-good.parquet#row=1", 2), ("f-good.parquet#row=0", 3)]
    assert sorted(e["source"] for e in errors) == unreadable
    assert {(e["op"], e["error_type"]) for e in errors} == {("read", "ArrowInvalid")} and all("not a readable Parquet file" in e["reason"] for e in errors)
    assert (report.rows_in, report.rows_out, report.rows_errored) == (6, 3, 3)


def test_a_corrupt_data_page_is_a_row_error_of_its_row_group(engine, tmp_path):
    """Spark reads pages natively and its job stops there; the job runs again with that file read a row group at a time."""
    unreadable = _inputs(tmp_path / "in", corrupt_page=True)
    page = str(tmp_path / "in" / "e-page.parquet")
    report, rows, errors = _run(engine, tmp_path / "in")
    assert sorted((r["__source__"].rsplit("/", 1)[1], r["a"]) for r in rows) == [("b-good.parquet#row=0", 1), ("b-good.parquet#row=1", 2), ("f-good.parquet#row=0", 3)]
    assert sorted(e["source"] for e in errors) == sorted([*unreadable, f"{page}#row_group=0"])
    page_error = next(e for e in errors if e["source"].endswith("#row_group=0"))
    assert page_error["op"] == "read" and "not a readable Parquet file" in page_error["reason"]
    assert (report.rows_in, report.rows_out, report.rows_errored) == (7, 3, 4)


def _corrupt_page(path: pathlib.Path, first: int) -> None:
    """A Parquet file of 1,000 rows (``a`` from ``first``) in one row group whose data page is damaged."""
    pq.write_table(pa.table({"a": list(range(first, first + 1000)), "t": [f"v{i}" for i in range(1000)]}), path, compression="snappy")
    data = bytearray(path.read_bytes())
    data[len(data) // 3 : len(data) // 3 + 200] = b"\xff" * 200
    path.write_bytes(bytes(data))


def test_past_its_limit_of_files_spark_stopped_at_every_file_is_read_by_the_python_source(spark_local, tmp_path, monkeypatch):
    """Spark's job stops at each of three damaged pages; past ``NATIVE_FAILURES`` (1 here) the shard runs once more with
    every file read by the Python data source: three runs in all, each damaged row group one row error, no good row lost."""
    import dataflow.engines.spark.engine as spark_engine
    import dataflow.engines.spark.run as spark_run

    monkeypatch.setattr(spark_engine, "NATIVE_FAILURES", 1)
    runs = []
    build = spark_run.build_frames
    monkeypatch.setattr(spark_run, "build_frames", lambda *a, **k: runs.append(k.get("streamed")) or build(*a, **k))
    root = tmp_path / "in"
    root.mkdir()
    pq.write_table(pa.table({"a": [1, 2], "t": ["x", "y"]}), root / "b-good.parquet")
    pages = [root / f"p{k}-page.parquet" for k in range(3)]
    for k, page in enumerate(pages):
        _corrupt_page(page, 1000 * (k + 1))
    report, rows, errors = _run("spark", root)
    assert sorted((r["__source__"].rsplit("/", 1)[1], r["a"]) for r in rows) == [("b-good.parquet#row=0", 1), ("b-good.parquet#row=1", 2)]
    assert sorted(e["source"] for e in errors) == [f"{p}#row_group=0" for p in pages]
    assert (report.rows_in, report.rows_out, report.rows_errored) == (5, 2, 3)
    assert len(runs) == 3 and runs[-1] == frozenset([str(root / "b-good.parquet"), *map(str, pages)])


def test_a_corrupt_row_group_loses_only_its_own_rows(engine, tmp_path):
    """A file of three row groups, the second damaged: the first and third are read, on both engines."""
    root = tmp_path / "in"
    root.mkdir()
    path = root / "groups.parquet"
    pq.write_table(pa.table({"a": list(range(3000)), "t": [f"v{i}" * 3 for i in range(3000)]}), path, row_group_size=1000, compression="snappy")
    meta = pq.read_metadata(path)
    group = meta.row_group(1).column(1)  # the second row group's text column: damage its data page
    start = group.dictionary_page_offset or group.data_page_offset
    data = bytearray(path.read_bytes())
    data[start + 40 : start + 240] = b"\xff" * 200
    path.write_bytes(bytes(data))
    report, rows, errors = _run(engine, root)
    assert sorted(r["a"] for r in rows) == [*range(1, 1000), *range(2000, 3000)]  # the filter drops a = 0
    assert [e["source"] for e in errors] == [f"{path}#row_group=1"]
    assert (report.rows_out, report.rows_errored) == (1999, 1)


def test_preview_shows_an_unreadable_file_as_an_error_and_the_others_as_rows(tmp_path):
    unreadable = _inputs(tmp_path / "in")
    doc = {"name": "bad-parquet", "source": {"uri": str(tmp_path / "in"), "format": "parquet"}, "steps": [], "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    rows, outcomes = read_first(parse_pipeline(doc), 10)
    assert len(rows["__source__"]) == 3 and sorted(o.source for o in outcomes) == unreadable and {o.status for o in outcomes} == {"errored"}
