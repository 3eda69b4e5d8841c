"""Which streamed runs are one fused task chain (read -> stages -> writers) and which keep their stages apart."""
from __future__ import annotations

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.ray.run import stream_fused
from dataflow.engines.registry import compile_pipeline


def _job(fmt: str, steps: list[dict], tmp_path):
    spec = parse_pipeline({"name": "p", "engine": "ray", "source": {"uri": str(tmp_path), "format": fmt}, "steps": steps,
                           "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}})
    return compile_pipeline(spec)[3]


def test_a_line_source_with_table_steps_is_one_task_chain(tmp_path):
    steps = [{"op": "table.filter_rows", "params": {"where": "n >= 5"}}, {"op": "table.with_columns", "params": {"columns": {"m": "n * 2"}}}]
    assert stream_fused(_job("jsonl", steps, tmp_path))


def test_an_image_source_with_task_stages_is_one_task_chain(tmp_path):
    assert stream_fused(_job("image", [{"op": "image.decode"}, {"op": "image.resize", "params": {"max_side": 64}}], tmp_path))


def test_parquet_row_groups_keep_the_stages_apart_from_the_read(tmp_path):
    assert not stream_fused(_job("parquet", [{"op": "table.filter_rows", "params": {"where": "n >= 5"}}], tmp_path))
