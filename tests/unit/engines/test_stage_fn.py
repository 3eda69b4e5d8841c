"""``StageFn`` runs a media stage, or a stage given a ``batch_size``, that many rows at a time, whatever block Ray gives it (the read's)."""
from __future__ import annotations

import pyarrow as pa

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.ray.run import StageFn
from dataflow.engines.registry import compile_pipeline
from dataflow.runtime.stats import SideOutputs
from tests.datagen import encode, gradient


def _stage(tmp_path, op: dict):
    doc = {"name": "t", "engine": "ray", "source": {"uri": str(tmp_path / "in.parquet"), "format": "parquet"}, "steps": [op],
           "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    return compile_pipeline(parse_pipeline(doc))[3].stages[0]


def test_a_media_stage_takes_a_big_block_in_pieces_of_its_batch(tmp_path):
    stage = _stage(tmp_path, {"op": "image.decode", "params": {"column": "image"}, "resources": {"batch_size": 4}})
    side = SideOutputs(uri=str(tmp_path), storage_options={}, stats_dir=str(tmp_path / "stats"), errors_dir=str(tmp_path / "errors"))
    jpeg = encode(gradient(8, 6), "JPEG")
    rows = pa.table({"__source__": [f"in.parquet#row={i}" for i in range(10)],
                     "image": pa.array([{"bytes": jpeg, "path": None}] * 10, pa.struct([("bytes", pa.binary()), ("path", pa.string())]))})
    pieces = list(StageFn(stage, side)(rows))
    assert [len(p["width"]) if isinstance(p, dict) else p.num_rows for p in pieces] == [4, 4, 2]


def test_a_table_stage_takes_the_block_whole(tmp_path):
    stage = _stage(tmp_path, {"op": "table.filter_rows", "params": {"where": "x > 1"}})
    side = SideOutputs(uri=str(tmp_path), storage_options={}, stats_dir=str(tmp_path / "stats"), errors_dir=str(tmp_path / "errors"))
    pieces = list(StageFn(stage, side)(pa.table({"__source__": [f"f#row={i}" for i in range(100_000)], "x": list(range(100_000))})))
    assert [p.num_rows for p in pieces] == [99_998]


def test_a_table_stage_given_a_batch_size_takes_the_block_in_pieces_of_it(tmp_path):
    stage = _stage(tmp_path, {"op": "table.filter_rows", "params": {"where": "x > 1"}, "resources": {"batch_size": 400}})
    side = SideOutputs(uri=str(tmp_path), storage_options={}, stats_dir=str(tmp_path / "stats"), errors_dir=str(tmp_path / "errors"))
    pieces = list(StageFn(stage, side)(pa.table({"__source__": [f"f#row={i}" for i in range(1000)], "x": list(range(1000))})))
    assert [p.num_rows for p in pieces] == [398, 400, 200]
