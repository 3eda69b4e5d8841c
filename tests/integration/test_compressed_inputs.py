"""Compressed line files (.gz, .bz2, .xz, .zst) next to plain ones, on Ray and on Spark.

Each compressed file holds the same lines as its plain twin: both engines read exactly the same
rows and row errors from each, numbered ``#line=N`` alike; a truncated file keeps the lines before
the damage and leaves one error record naming it; files the extension filter skips are counted
in the report.
"""
from __future__ import annotations

import bz2
import gzip
import json
import lzma
import pathlib

import pyarrow.parquet as pq
import pytest
import zstandard

from dataflow.cli.summary import render_summary
from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline

QUIET = RunOptions(progress=False)
CODECS = {
    "bz2": bz2.compress,
    "gz": gzip.compress,
    "xz": lzma.compress,
    "zst": lambda data: zstandard.ZstdCompressor().compress(data),
}
# format -> (extension, content, options, rows by line number, errors by line number)
FORMATS = {
    "jsonl": (
        "jsonl",
        '{"id": 1, "text": "héllo"}\r\nnot json\n\n{"id": 2, "text": "b"}\n'.encode(),
        {},
        {1: {"id": 1, "text": "héllo"}, 4: {"id": 2, "text": "b"}},
        {2: "JSONDecodeError"},
    ),
    "csv": (
        "csv",
        b'id,text\r\n1,"multi\r\nline"\r\n2,b,extra\r\n3,c\r\n',
        {},
        {2: {"id": "1", "text": "multi\r\nline"}, 5: {"id": "3", "text": "c"}},
        {4: "ValueError"},
    ),
    "text": (
        "txt",
        b"first\r\nsecond \xff\n\nthird",
        {"split": "line", "extensions": ["txt"]},
        {1: {"text": "first"}, 4: {"text": "third"}},
        {2: "UnicodeDecodeError"},
    ),
}


@pytest.fixture(params=["ray", "spark"], ids=["ray", "spark"])
def engine(request) -> str:
    request.getfixturevalue("ray_local" if request.param == "ray" else "spark_local")
    return request.param


def _run(engine: str, root: pathlib.Path, fmt: str, options: dict):
    sink = root.parent / "out"
    doc = {"name": f"compressed-{fmt}", "engine": engine, "source": {"uri": str(root), "format": fmt, "options": options},
           "steps": [], "sink": {"uri": str(sink), "format": "parquet"}}
    report = run_pipeline(parse_pipeline(doc), QUIET)
    manifest = json.loads((sink / "_manifest.json").read_text())
    rows = [r for f in manifest["files"] for r in pq.read_table(sink / f["path"]).to_pylist()]
    errors = [r for p in (sink / "_errors").glob("*.jsonl") for r in map(json.loads, p.read_text().splitlines())]
    return report, rows, errors, sink


@pytest.mark.parametrize("fmt", sorted(FORMATS), ids=sorted(FORMATS))
def test_compressed_files_read_exactly_as_their_plain_twin(engine: str, fmt: str, tmp_path: pathlib.Path):
    ext, content, options, by_line, bad_lines = FORMATS[fmt]
    root = tmp_path / "in"
    root.mkdir()
    names = [f"plain.{ext}", *(f"part-0.{ext}.{c}" for c in CODECS)]
    (root / names[0]).write_bytes(content)
    for codec, name in zip(CODECS, names[1:]):
        (root / name).write_bytes(CODECS[codec](content))
    (root / "notes.md").write_text("not data\n")
    (root / "notes.rst").write_text("not data\n")
    (root / f"gone.{ext}").symlink_to(tmp_path / "nowhere")  # a broken link: not a file, counted, never read
    report, rows, errors, sink = _run(engine, root, fmt, options)
    got = sorted((r.pop("__source__"), {k: v for k, v in r.items() if v is not None}) for r in rows)
    assert got == sorted((f"{root / n}#line={line}", row) for n in names for line, row in by_line.items())
    assert sorted((e["source"], e["op"], e["error_type"]) for e in errors) == sorted((f"{root / n}#line={line}", "read", kind) for n in names for line, kind in bad_lines.items())
    assert (report.rows_in, report.rows_out, report.rows_errored) == (len(names) * (len(by_line) + len(bad_lines)), len(names) * len(by_line), len(names) * len(bad_lines))
    # Skipped files are named in the report and its summary, never dropped without a word.
    skipped = {".md": 1, ".rst": 1, "(not a regular file)": 1}
    assert report.skipped == skipped
    assert json.loads((sink / "_dataflow" / "report.json").read_text())["skipped"] == skipped
    words = "1 entry that is not a regular file (a broken symbolic link, a pipe or a socket), 1 file with extension .md, 1 file with extension .rst"
    assert f"skipped       {words} (set source.options.extensions to read them)" in render_summary(report)
    assert f"skipped: {words}" in (sink / "_dataflow" / "report.html").read_text()


@pytest.mark.parametrize("codec", ["gz", "zst"], ids=["gz", "zst"])
def test_truncated_compressed_file_keeps_its_first_lines_and_one_error_names_it(engine: str, codec: str, tmp_path: pathlib.Path):
    root = tmp_path / "in"
    root.mkdir()
    lines = [json.dumps({"n": i, "text": f"doc {i} " + "w" * (i % 13)}) for i in range(20_000)]  # zstd: several 128 kB blocks, so half the file still decodes
    data = ("\n".join(lines) + "\n").encode()
    (root / f"good.jsonl.{codec}").write_bytes(CODECS[codec](b'{"n": -1, "text": "intact"}\n'))
    packed = CODECS[codec](data)
    (root / f"cut.jsonl.{codec}").write_bytes(packed[: len(packed) // 2])
    report, rows, errors, _ = _run(engine, root, "jsonl", {})
    cut = sorted((r for r in rows if "cut" in r["__source__"]), key=lambda r: r["n"])
    assert [r["n"] for r in rows if "good" in r["__source__"]] == [-1]
    assert 0 < len(cut) < 20_000
    assert [(r["__source__"], r["n"], r["text"]) for r in cut] == [(f"{root / f'cut.jsonl.{codec}'}#line={i + 1}", i, json.loads(lines[i])["text"]) for i in range(len(cut))]
    # One record names the file; the partial line at the damage is part of it, not a line error.
    assert [(e["source"], e["op"]) for e in errors] == [(str(root / f"cut.jsonl.{codec}"), "read")]
    assert "stream is damaged" in errors[0]["reason"] and f"after line {len(cut)};" in errors[0]["reason"]
    assert report.rows_errored == 1
