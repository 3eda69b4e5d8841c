"""A committed image sink built by hand (no engine): outputs, manifest, error records, report.json."""
from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

from tests.datagen import encode, gradient, write_corrupt_images, write_images


def report_dict(root: pathlib.Path, source: pathlib.Path, **extra) -> dict:
    """A ``RunReport.to_dict()`` of 6 inputs: 3 kept, 2 dropped as tiny, 1 undecodable."""
    steps = [
        {"op": "read", "rows_in": 6, "rows_out": 6, "rows_errored": 0, "seconds": 0.01, "drops": {}},
        {"op": "image.decode", "rows_in": 6, "rows_out": 5, "rows_errored": 1, "seconds": 0.2, "drops": {}},
        {"op": "image.filter_size", "rows_in": 5, "rows_out": 3, "rows_errored": 0, "seconds": 0.001, "drops": {"image.filter_size:min_side": 2}},
        {"op": "image.encode", "rows_in": 3, "rows_out": 3, "rows_errored": 0, "seconds": 0.05, "drops": {}},
    ]
    return {
        "pipeline": "thumbs", "engine": "ray", "rows_in": 6, "rows_out": 3, "rows_errored": 1, "wall_seconds": 4.0,
        "rows_per_second": 1.5, "output": str(root), "errors": f"{root}/_errors/", "steps": steps, "files": 1,
        "bytes_written": 1234, "published": True, "failure": None, "cache": None, "source": str(source),
        "source_format": "image", "resources": {"worker_seconds": 0.26, "parallelism": 0.07, "steps": [{"op": "image.decode", "stage": 1, "engine": "ray"}]},
        **extra,
    }


def build_committed_sink(tmp_path: pathlib.Path) -> pathlib.Path:
    """``<tmp>/out``: one Parquet file of 3 kept WebP rows, a manifest, _SUCCESS, _errors and report.json."""
    src = tmp_path / "images"
    good = write_images(src, 3, size=(200, 150))
    tiny = write_images(tmp_path / "tiny", 2, size=(30, 20))
    tiny = [p.rename(src / f"tiny_{p.name}") for p in tiny]
    bad = write_corrupt_images(src)["truncated"]
    root = tmp_path / "out"
    (root / "_errors").mkdir(parents=True)
    (root / "_dataflow").mkdir()
    table = pa.table({
        "bytes": [encode(gradient(64, 48, seed=i), "WEBP") for i in range(3)],
        "width": [64] * 3, "height": [48] * 3, "__source__": [str(p) for p in good],
    })
    pq.write_table(table, root / "part-0.parquet")
    inputs = sorted(str(p) for p in [*good, *tiny, bad])
    manifest = {
        "version": 1, "pipeline": "thumbs", "pipeline_hash": "abc123", "dataflow_version": "0.1.0", "run_id": "r1",
        "committed_at": "2026-12-02T00:00:00Z", "files": [{"path": "part-0.parquet", "rows": 3, "bytes": 1234}],
        "errors": ["_errors/r1-0.jsonl"], "shards": [{"shard": "00000-of-00001-x", "inputs": inputs, "files": ["part-0.parquet"]}],
    }
    (root / "_manifest.json").write_text(json.dumps(manifest))
    (root / "_SUCCESS").write_text("")
    record = {"source": str(bad), "op": "image.decode", "error_type": "OSError", "reason": "undecodable image: image file is truncated"}
    (root / "_errors" / "r1-0.jsonl").write_text(json.dumps(record) + "\n")
    (root / "_dataflow" / "report.json").write_text(json.dumps(report_dict(root, src)))
    return root
