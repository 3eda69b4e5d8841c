"""The real-world conformance corpus (``tests/corpora.py``) through real runs: exact rows out, exact
``_errors/`` records, user values untouched. Line formats run on both engines, media on Ray."""
from __future__ import annotations

import json
import pathlib
from typing import Any

import pyarrow.parquet as pq
import pytest

from dataflow.columns import SOURCE
from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline
from tests import corpora

QUIET = RunOptions(progress=False)
NO_BUDGET = {"max_error_ratio": 1.0}


@pytest.fixture(params=["ray", "spark"])
def engine(request) -> str:
    request.getfixturevalue(f"{request.param}_local")
    return request.param


def _run(engine: str, source: dict[str, Any], steps: list[dict[str, Any]], sink: pathlib.Path):
    doc = {"name": "corpus", "engine": engine, "source": source, "steps": steps, "sink": {"uri": str(sink), "format": "parquet"}, "errors": NO_BUDGET}
    report = run_pipeline(parse_pipeline(doc), QUIET)
    manifest = json.loads((sink / "_manifest.json").read_text())
    rows = [r for f in manifest["files"] for r in pq.read_table(sink / f["path"]).to_pylist()]
    errors = [json.loads(line) for p in sorted((sink / "_errors").glob("*.jsonl")) for line in p.read_text().splitlines()]
    return report, rows, errors


def test_dolma_shards_gzip_zstd_and_plain_dedup_to_the_reference(engine: str, tmp_path: pathlib.Path):
    docs, repeats = corpora.dolma_docs(350, 30, seed=3)
    parts = [docs[:120], docs[120:240], docs[240:]]
    for i, (part, kind) in enumerate(zip(parts, ["gz", "zst", None])):
        corpora.write_lines(tmp_path / "in" / f"part-{i}.jsonl", part, kind)
    # text.dedup_exact runs on Ray; on Spark the same exact copies are a table.dedup on the text.
    dedup = {"op": "text.dedup_exact"} if engine == "ray" else {"op": "table.dedup", "params": {"keys": ["text"]}}
    report, rows, errors = _run(engine, {"uri": str(tmp_path / "in"), "format": "jsonl"}, [dedup], tmp_path / "out")
    kept = [d for i, d in enumerate(docs) if i not in repeats]
    assert errors == []
    assert sorted(r["id"] for r in rows) == sorted(d["id"] for d in kept)
    by_id = {d["id"]: d for d in docs}
    for r in rows:  # the user's own `source`, `id`, `metadata` and `text` come back as they went in
        assert {k: v for k, v in r.items() if k != SOURCE} == by_id[r["id"]]
    step = next(s for s in report.steps if s.op == dedup["op"])
    assert (step.rows_in, step.rows_out, sum(step.drops.values())) == (350, 320, 30)


def test_redpajama_and_csv_quirks_round_trip_untouched(engine: str, tmp_path: pathlib.Path):
    docs = corpora.redpajama_docs(40)
    corpora.write_lines(tmp_path / "rp" / "rp.jsonl", docs, "gz")
    _, rows, errors = _run(engine, {"uri": str(tmp_path / "rp"), "format": "jsonl"}, [], tmp_path / "out-rp")
    assert errors == []
    assert sorted((r["meta"]["timestamp"], r["text"], r["red_pajama_subset"]) for r in rows) == sorted(
        (d["meta"]["timestamp"], d["text"], d["red_pajama_subset"]) for d in docs)

    data, expected = corpora.csv_with_quirks()
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "posts.csv").write_bytes(data)
    _, rows, errors = _run(engine, {"uri": str(tmp_path / "csv"), "format": "csv"}, [], tmp_path / "out-csv")
    assert errors == []
    assert sorted(({k: v for k, v in r.items() if k != SOURCE} for r in rows), key=lambda r: r["id"]) == expected


def test_hf_image_parquet_decodes_with_labels_and_captions_untouched(ray_local, tmp_path: pathlib.Path):
    src = corpora.hf_image_parquet(tmp_path / "hf" / "train-00000-of-00001.parquet", 12)
    _, rows, errors = _run("ray", {"uri": str(tmp_path / "hf"), "format": "parquet"},
                           [{"op": "image.decode", "params": {"column": "image"}}, {"op": "image.resize", "params": {"max_side": 16}}], tmp_path / "out")
    assert errors == []
    assert sorted((r["label"], r["text"]) for r in rows) == sorted((s["label"], s["text"]) for s in src)
    assert all(r["width"] == 16 and r["height"] < 16 for r in rows)  # every image is wider than tall


def test_odd_images_decode_and_every_broken_file_is_an_error_with_its_reason(ray_local, tmp_path: pathlib.Path):
    folder = tmp_path / "images"
    folder.mkdir()
    odd = corpora.odd_images()
    for name, data in odd.items():
        (folder / name).write_bytes(data)
    broken = corpora.broken_images(folder)
    _, rows, errors = _run("ray", {"uri": str(folder), "format": "image"},
                           [{"op": "image.decode"}, {"op": "image.resize", "params": {"max_side": 32}}], tmp_path / "out")
    assert sorted(pathlib.Path(r[SOURCE]).name for r in rows) == sorted(odd)
    assert all(max(r["width"], r["height"]) <= 32 for r in rows)
    assert sorted(pathlib.Path(e["source"]).name for e in errors) == sorted(p.name for p in broken.values())
    assert {e["op"] for e in errors} == {"image.decode"} and all(e["reason"] for e in errors)
    reasons = {pathlib.Path(e["source"]).name: e["reason"] for e in errors}
    assert "pixels" in reasons["bomb.png"] and "pixels" in reasons["bomb.gif"]


def test_odd_audio_decodes_and_broken_clips_are_errors(ray_local, tmp_path: pathlib.Path):
    folder = tmp_path / "audio"
    folder.mkdir()
    odd, broken = corpora.odd_audio(), corpora.broken_audio()
    for name, data in {**odd, **broken}.items():
        (folder / name).write_bytes(data)
    _, rows, errors = _run("ray", {"uri": str(folder), "format": "audio"}, [{"op": "audio.decode"}], tmp_path / "out")
    assert sorted(pathlib.Path(r[SOURCE]).name for r in rows) == sorted(odd)
    assert sorted(pathlib.Path(e["source"]).name for e in errors) == sorted(broken)
    assert {e["op"] for e in errors} == {"audio.decode"}
