"""The same op several times in a row, fused in one Ray stage: each step keeps its own params and counters.

Image and text ops run on Ray only (Spark lowers table ops; the table cases are in tests/contracts/engine.py).
"""
from __future__ import annotations

import io
import json
import pathlib

import pyarrow.parquet as pq
from PIL import Image

import dataflow
from tests.datagen import write_images, write_jsonl


def _rows(sink: pathlib.Path) -> list[dict]:
    files = json.loads((sink / "_manifest.json").read_text())["files"]
    return [r for f in files for r in pq.read_table(sink / f["path"]).to_pylist()]


def test_image_resize_twice_in_one_stage(ray_local, tmp_path):
    write_images(tmp_path / "in", 4, size=(320, 240))
    p = (
        dataflow.read(str(tmp_path / "in"), format="image")
        .apply("image.decode").apply("image.resize", max_side=160).apply("image.resize", max_side=40).apply("image.encode", format="png")
        .write(str(tmp_path / "out"))
    )
    assert "FusedMap[image.decode -> image.resize -> image.resize -> image.encode]" in p.explain()
    report = p.run(progress=False)
    rows = _rows(tmp_path / "out")
    assert len(rows) == 4 and {Image.open(io.BytesIO(r["bytes"])).size for r in rows} == {(40, 30)}
    assert [(s.op, s.rows_in, s.rows_out) for s in report.steps][2:4] == [("image.resize", 4, 4), ("image.resize", 4, 4)]


def test_a_text_filter_twice_counts_each_steps_drops(ray_local, tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x" * n} for n in range(10)])
    report = (
        dataflow.read(str(tmp_path / "in"), format="jsonl")
        .apply("text.filter_length", min_chars=2).apply("text.filter_length", max_chars=6)
        .write(str(tmp_path / "out"))
        .run(progress=False)
    )
    assert sorted(len(r["text"]) for r in _rows(tmp_path / "out")) == [2, 3, 4, 5, 6]
    counts = [(s.op, s.rows_in, s.rows_out, sum(s.drops.values())) for s in report.steps]
    assert counts == [("read", 10, 10, 0), ("text.filter_length", 10, 8, 2), ("text.filter_length", 8, 5, 3)]
