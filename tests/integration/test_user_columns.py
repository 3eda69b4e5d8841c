"""User columns named like dataflow's never collide with its lineage (issue 13), on Ray and on Spark.

The corpus is shaped like Dolma / RedPajama: ``id``, a ``source`` shared by most rows, a
``metadata`` struct and ``text``, with exact duplicates spread over the files. Expected rows come
from a plain-Python reference that keeps, of each duplicate group, the row with the smallest
``__source__`` (``<file>#line=N``).
"""
from __future__ import annotations

import csv
import json
import pathlib
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataflow.columns import SOURCE
from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline

QUIET = RunOptions(progress=False)
DOCS, DUPLICATES, FILES = 350, 30, 3
USER = ("source", "id", "text", "bytes", "image", "path", "key")


@pytest.fixture(params=["ray", "spark"], ids=["ray", "spark"])
def engine(request) -> str:
    """The engine under test, with its session started (one per test run)."""
    request.getfixturevalue("ray_local" if request.param == "ray" else "spark_local")
    return request.param


def write_corpus(folder: pathlib.Path) -> dict[str, dict]:
    """Write a Dolma-shaped JSONL corpus over ``FILES`` files; return each row by its ``__source__``."""
    rnd = random.Random(13)
    docs = []
    for i in range(DOCS - DUPLICATES):
        origin = "common-crawl" if i % 10 else "wikipedia"  # one value shared by most rows
        docs.append({"id": f"doc-{i:05d}", "source": origin, "metadata": {"url": f"https://example.org/{i}", "lang": "en", "tokens": 40 + i},
                     "text": f"Document {i}: " + " ".join(rnd.choice(["river", "stone", "cloud", "field", "lamp"]) for _ in range(12))})
    for k in range(DUPLICATES):
        copy = dict(docs[rnd.randrange(len(docs))])
        docs.append({**copy, "id": f"dup-{k:03d}", "metadata": {**copy["metadata"], "url": f"https://mirror.example.org/{k}"}})
    rnd.shuffle(docs)
    folder.mkdir(parents=True)
    rows = {}
    for f in range(FILES):
        path = folder / f"part-{f}.jsonl"
        part = docs[f::FILES]
        path.write_text("".join(json.dumps(d) + "\n" for d in part), encoding="utf-8")
        rows |= {f"{path}#line={n}": d for n, d in enumerate(part, start=1)}
    return rows


def keep_smallest(rows: dict[str, dict]) -> set[str]:
    """The reference dedup: per distinct text, the smallest identity."""
    best: dict[str, str] = {}
    for ident in sorted(rows):
        best.setdefault(rows[ident]["text"], ident)
    return set(best.values())


def _run(doc: dict, sink: pathlib.Path):
    report = run_pipeline(parse_pipeline({"name": "user-columns", **doc, "sink": {"uri": str(sink), "format": "parquet", **doc.get("sink", {})}}), QUIET)
    manifest = json.loads((sink / "_manifest.json").read_text())
    return report, [r for f in manifest["files"] for r in pq.read_table(sink / f["path"]).to_pylist()]


def _drops(report, op: str) -> int:
    return sum(s.drops.get(op, 0) for s in report.steps)


@pytest.mark.parametrize("files_per_shard", [None, 1], ids=["one-shard", "a-shard-per-file"])
def test_dedup_exact_on_a_corpus_with_its_own_source_field_keeps_every_distinct_doc(ray_local, files_per_shard, tmp_path):
    rows = write_corpus(tmp_path / "corpus")
    expected = keep_smallest(rows)
    assert len(expected) == DOCS - DUPLICATES
    options = {"files_per_shard": files_per_shard} if files_per_shard else {}
    source = {"uri": str(tmp_path / "corpus"), "format": "jsonl", "options": options}
    report, out = _run({"engine": "ray", "source": source, "steps": [{"op": "text.dedup_exact"}]}, tmp_path / "out")
    assert report.rows_out == len(out) == len(expected)
    assert {r[SOURCE] for r in out} == expected
    for r in out:  # the user's values, untouched
        assert {k: r[k] for k in ("id", "source", "text", "metadata")} == rows[r[SOURCE]]
    assert _drops(report, "text.dedup_exact") == DUPLICATES


def test_table_dedup_on_text_keeps_the_smallest_identity_on_every_engine(engine, tmp_path):
    rows = write_corpus(tmp_path / "corpus")
    report, out = _run({"engine": engine, "source": {"uri": str(tmp_path / "corpus"), "format": "jsonl"},
                        "steps": [{"op": "table.dedup", "params": {"keys": ["text"]}}]}, tmp_path / "out")
    assert sorted(r[SOURCE] for r in out) == sorted(keep_smallest(rows))
    assert all((r["id"], r["source"], r["text"]) == (rows[r[SOURCE]]["id"], rows[r[SOURCE]]["source"], rows[r[SOURCE]]["text"]) for r in out)
    assert report.rows_out == DOCS - DUPLICATES


def _user_rows(n: int = 6) -> list[dict]:
    return [{"source": "crawl" if i % 3 else "books", "id": i, "text": f"t{i}", "image": f"img{i}.png", "path": f"/p/{i}", "key": f"k{i}"} for i in range(n)]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_columns_named_like_dataflows_round_trip_untouched(engine, fmt, tmp_path):
    data = _user_rows()
    folder = tmp_path / "in"
    folder.mkdir()
    if fmt == "jsonl":
        (folder / "t.jsonl").write_text("".join(json.dumps({**r, SOURCE: "forged"}) + "\n" for r in data))
    elif fmt == "csv":
        with open(folder / "t.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(data[0]))
            w.writeheader()
            w.writerows(data)
    else:
        pq.write_table(pa.Table.from_pylist([{**r, "bytes": r["text"].encode(), SOURCE: "forged"} for r in data]), folder / "t.parquet")
    steps = [{"op": "table.filter_rows", "params": {"where": "id >= 0" if fmt != "csv" else "id IS NOT NULL"}}]
    _, out = _run({"engine": engine, "source": {"uri": str(folder), "format": fmt}, "steps": steps}, tmp_path / "out")
    out.sort(key=lambda r: int(r["id"]))
    cast = str if fmt == "csv" else (lambda v: v)
    assert [{k: r[k] for k in ("source", "id", "text", "image", "path", "key")} for r in out] == [{**r, "id": cast(r["id"])} for r in data]
    if fmt == "parquet":
        assert [r["bytes"] for r in out] == [r["text"].encode() for r in data]
    # The reader's own lineage: the data's __source__ ("forged") is replaced.
    where = "#row=" if fmt == "parquet" else "#line="
    assert all(r[SOURCE].startswith(str(folder)) and where in r[SOURCE] for r in out)


def test_spark_pass_through_keeps_the_users_source_column(spark_local, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _user_rows()))
    _, out = _run({"engine": "spark", "source": {"uri": str(folder), "format": "jsonl"}, "steps": []}, tmp_path / "out")
    assert sorted((r["id"], r["source"], r["text"]) for r in out) == [(r["id"], r["source"], r["text"]) for r in _user_rows()]


def test_sink_lineage_false_leaves_the_lineage_column_out(engine, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _user_rows()))
    doc = {"engine": engine, "source": {"uri": str(folder), "format": "jsonl"}, "steps": [{"op": "table.filter_rows", "params": {"where": "id >= 0"}}]}
    _, kept = _run(doc, tmp_path / "with")
    _, out = _run({**doc, "sink": {"lineage": False}}, tmp_path / "without")
    assert all(SOURCE in r for r in kept)
    assert sorted(sorted(r) for r in out) == sorted(sorted(set(r) - {SOURCE}) for r in kept)
    assert sorted((r["id"], r["source"]) for r in out) == [(r["id"], r["source"]) for r in _user_rows()]
