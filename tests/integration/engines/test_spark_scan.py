"""The files a Spark read scans (``engines/spark/scan.py``): the folder when the files are all of it, never a file the run did not list."""
from __future__ import annotations

import json

import pyarrow.parquet as pq

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline

SCHEMA = {"level": "string", "latency_ms": "double"}


def _line(i: int) -> str:
    return json.dumps({"level": ["INFO", "DEBUG"][i % 2], "latency_ms": i / 4})


def _write(folder, files: dict[str, list[str]]):
    folder.mkdir()
    for name, lines in files.items():
        (folder / name).write_text("".join(line + "\n" for line in lines))
    return folder


def _scanned(df) -> set[str]:
    return {f.rsplit("/", 1)[1] for f in df.inputFiles()}


def test_the_folder_is_scanned_only_when_it_holds_exactly_the_listed_files(spark_local, tmp_path):
    """Spark lists one folder faster than it resolves many paths; a file the run did not list is never read."""
    from dataflow.engines.spark.json_fast import fast_jsonl
    from dataflow.engines.spark.scan import folder_of

    data = _write(tmp_path / "in", {name: [_line(i) for i in range(4)] for name in ("a.jsonl", "b.jsonl", "_c.jsonl")})
    files = sorted(str(p) for p in data.iterdir())
    assert folder_of(files) is None  # Spark's folder listing leaves out "_c.jsonl"
    assert folder_of(files[1:]) is None  # "_c.jsonl" is in the folder, not in the files
    (data / "_c.jsonl").unlink()
    assert folder_of(files[1:]) == str(data)
    (data / "sub").mkdir()
    assert folder_of(files[1:]) is None
    (data / "sub").rmdir()
    df = fast_jsonl(spark_local, files[1:], ["file://" + f for f in files[1:]], SCHEMA)
    assert _scanned(df) == {"a.jsonl", "b.jsonl"} and df.count() == 8


def test_a_file_that_comes_after_the_folder_check_is_not_read(spark_local, tmp_path, monkeypatch):
    import dataflow.engines.spark.scan as scan
    from dataflow.engines.spark.json_fast import fast_jsonl

    data = _write(tmp_path / "in", {name: [_line(i) for i in range(4)] for name in ("a.jsonl", "b.jsonl")})
    files = sorted(str(p) for p in data.iterdir())
    real = scan.folder_of

    def then_a_file_comes(listed):
        folder = real(listed)
        (data / "late.jsonl").write_text(_line(0) + "\n")
        return folder

    monkeypatch.setattr(scan, "folder_of", then_a_file_comes)
    df = fast_jsonl(spark_local, files, ["file://" + f for f in files], SCHEMA)
    assert _scanned(df) == {"a.jsonl", "b.jsonl"} and df.count() == 8


def test_text_lines_read_through_the_folder_keep_their_lineage(spark_local, tmp_path, monkeypatch):
    from pyspark.sql import DataFrameReader

    import dataflow.engines.spark.scan as scan

    data = _write(tmp_path / "in", {"a.txt": ["one", "", "three"], "b.txt": ["x"]})
    seen = []
    real = DataFrameReader.load
    monkeypatch.setattr(DataFrameReader, "load", lambda self, path=None, *a, **kw: seen.append(path) or real(self, path, *a, **kw))

    def run(name: str) -> list[dict]:
        doc = {"name": "lines", "engine": "spark", "source": {"uri": str(data), "format": "text", "options": {"split": "line"}},
               "steps": [], "sink": {"uri": str(tmp_path / name), "format": "parquet"}}
        run_pipeline(parse_pipeline(doc), RunOptions(progress=False))
        return sorted((r["__source__"], r["text"]) for f in (tmp_path / name).glob("*.parquet") for r in pq.read_table(f).to_pylist())

    through_folder = run("folder")
    monkeypatch.setattr(scan, "folder_of", lambda files: None)
    assert seen == [f"file://{data}"]  # the folder, not the paths
    assert run("paths") == through_folder
    assert through_folder == [(f"{data}/a.txt#line=1", "one"), (f"{data}/a.txt#line=3", "three"), (f"{data}/b.txt#line=1", "x")]
