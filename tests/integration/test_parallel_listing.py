"""A Ray run whose input is listed by worker processes reads and cuts exactly what the serial listing gives."""
from __future__ import annotations

import json

import pyarrow.parquet as pq

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline
from tests.datagen import write_jsonl
from tests.trees import workers_scanned


def _run(tmp_path, name):
    spec = parse_pipeline({
        "name": "listed", "engine": "ray",
        "source": {"uri": str(tmp_path / "in"), "format": "jsonl", "options": {"files_per_shard": 4}},
        "steps": [{"op": "table.filter_rows", "params": {"where": "n >= 0"}}],
        "sink": {"uri": str(tmp_path / name), "format": "parquet"},
    })  # fmt: skip
    report = run_pipeline(spec, RunOptions(progress=False, stream_shards=True))
    manifest = json.loads((tmp_path / name / "_manifest.json").read_text())
    rows = sorted(pq.read_table(tmp_path / name, columns=["n"]).column("n").to_pylist())
    return report.rows_out, manifest["input_fingerprint"], [(s["shard"], s["inputs"]) for s in manifest["shards"]], rows


def test_a_run_listed_by_worker_processes_equals_the_serial_run(ray_local, tmp_path, monkeypatch):
    import connectors.listing as listing

    for f, rel in enumerate(["a/1.jsonl", "a/b/2.jsonl", "a/_tmp/x.jsonl", "b/3.ndjson", "b/c/4.jsonl", "c/.x.jsonl", "d/5.jsonl",
                             "d/e/f/6.jsonl", "d/e/7.txt", "z.jsonl", "a-b.jsonl"]):  # fmt: skip
        write_jsonl(tmp_path / "in" / rel, [{"n": f * 10 + i} for i in range(3)])
    (tmp_path / "in" / "e" / "empty").mkdir(parents=True)
    monkeypatch.setattr(listing, "LOCAL_WORKERS", 1)
    serial = _run(tmp_path, "serial")

    scanned = workers_scanned(monkeypatch)
    parallel = _run(tmp_path, "parallel")
    assert parallel == serial and serial[0] == 8 * 3 and len(serial[2]) == 2 and len(scanned) == 11
