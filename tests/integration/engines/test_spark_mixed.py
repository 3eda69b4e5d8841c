"""A mixed pipeline: Spark joins image metadata with labels and filters, then Ray decodes and resizes.

Real local Spark and Ray (one session each per test run); the handoff between them is Parquet in
the run's scratch area, removed after the commit.
"""
from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline
from dataflow.engines.registry import explain_pipeline
from tests.datagen import write_images

KEEP = {"img_0001", "img_0002", "img_0004", "img_0006", "bad_0000"}


def _inputs(root: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    paths = write_images(root / "images", 7, size=(200, 120))
    rows = [{"image_id": p.stem, "camera": f"cam{i % 2}", "bytes": p.read_bytes()} for i, p in enumerate(paths)]
    rows.append({"image_id": "bad_0000", "camera": "cam0", "bytes": b"not an image at all"})
    meta = root / "meta.parquet"
    pq.write_table(pa.Table.from_pylist(rows), meta)
    labels = root / "labels.csv"
    labels.write_text("image_id,label\n" + "".join(f"{r['image_id']},{'keep' if r['image_id'] in KEEP else 'drop'}\n" for r in rows))
    return meta, labels


def _doc(meta: pathlib.Path, labels: pathlib.Path, sink: pathlib.Path) -> dict:
    return {
        "name": "select_then_thumbnail",
        "source": {"uri": str(meta), "format": "parquet"},
        "sources": {"labels": {"uri": str(labels), "format": "csv"}},
        "stages": [
            {"name": "select", "engine": "spark", "steps": [
                {"op": "table.join", "params": {"right": "labels", "keys": ["image_id"]}},
                {"op": "table.filter_rows", "params": {"where": "label = 'keep'"}},
            ]},
            {"name": "thumbnails", "steps": [
                {"op": "image.decode"},
                {"op": "image.resize", "params": {"max_side": 64}},
                {"op": "table.select", "params": {"columns": ["image_id", "camera", "label", "width", "height"]}},
            ]},
        ],
        "sink": {"uri": str(sink), "format": "parquet"},
    }


def test_mixed_plan_explains_both_jobs_and_the_handoff(tmp_path):
    meta, labels = _inputs(tmp_path)
    text = explain_pipeline(parse_pipeline(_doc(meta, labels, tmp_path / "out")))
    assert "engine: spark -> ray (stage 'select' on spark (engine: spark set on stage 'select'); stage 'thumbnails' on ray (auto: image steps" in text
    assert "-> Handoff[spark -> ray] parquet in <sink>/_tmp/<run_id>/<shard>/handoff-1/" in text
    assert "== Spark job ==" in text and "== Handoff 1: parquet in" in text and "== Ray job ==" in text


def test_spark_selects_then_ray_decodes_and_resizes(spark_local, ray_local, tmp_path):
    meta, labels = _inputs(tmp_path)
    sink = tmp_path / "out"
    report = run_pipeline(parse_pipeline(_doc(meta, labels, sink)), RunOptions(progress=False))
    assert report.engine == "spark+ray" and report.published
    manifest = json.loads((sink / "_manifest.json").read_text())
    rows = sorted((r for f in manifest["files"] for r in pq.read_table(sink / f["path"]).to_pylist()), key=lambda r: r["image_id"])
    assert [r["image_id"] for r in rows] == sorted(KEEP - {"bad_0000"})
    assert all(r["label"] == "keep" and max(r["width"], r["height"]) == 64 for r in rows)
    # Lineage crosses the handoff: the row that Ray could not decode names its row of meta.parquet.
    errors = [json.loads(line) for p in (sink / "_errors").glob("*.jsonl") for line in p.read_text().splitlines()]
    assert [(e["source"], e["op"]) for e in errors] == [(f"{meta}#row=7", "image.decode")]
    steps = {s.op: s for s in report.steps}
    assert (report.rows_in, steps["table.filter_rows"].rows_in, steps["table.filter_rows"].rows_out) == (8, 8, 5)
    assert (steps["image.decode"].rows_in, steps["image.decode"].rows_errored, report.rows_out) == (5, 1, 4)
    # Counts balance across the engines: Ray's first step gets the rows Spark's last passed on.
    counts = [(s.op, s.rows_in, s.rows_out, sum(s.drops.values()), s.rows_errored) for s in report.steps]
    assert counts == [("read", 8, 8, 0, 0), ("table.join", 8, 8, 0, 0), ("table.filter_rows", 8, 5, 3, 0),
                      ("image.decode", 5, 4, 0, 1), ("image.resize", 4, 4, 0, 0), ("table.select", 4, 4, 0, 0)]
    assert not (sink / "_tmp").exists(), "the handoff must be removed after the commit"
