"""``fused_read.ReadFusedStage`` called as a read task would (no Ray): the files DuckDB scans in the stage's query and those read the Arrow way."""
from __future__ import annotations

import bz2
import gzip
import json

import numpy as np
import pytest
import zstandard

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.registry import compile_pipeline
from dataflow.runtime.stats import SideOutputs

SCHEMA = {"level": "string", "lat": "double", "ctx": "struct<region: string>"}
LINES = [json.dumps({"level": ["DEBUG", "INFO"][i % 2], "lat": i / 4, "ctx": {"region": ["eu", "us"][i % 3 == 0]}}) for i in range(300)]
BODY = "".join(line + "\n" for line in LINES).encode()


def _stage(tmp_path):
    from dataflow.engines.ray.read import ReadStream
    from dataflow.engines.ray.run import _scanned_stage

    (tmp_path / "in").mkdir(exist_ok=True)
    doc = {"name": "t", "engine": "ray", "source": {"uri": str(tmp_path / "in"), "format": "jsonl", "options": {"schema": SCHEMA}},
           "steps": [{"op": "table.filter_rows", "params": {"where": "level <> 'DEBUG'"}},
                     {"op": "table.aggregate", "params": {"keys": ["level"], "aggregations": {"n": "count(*)", "eu": "count_if(ctx.region = 'eu')"}}}],
           "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    job = compile_pipeline(parse_pipeline(doc))[-1]
    side = SideOutputs(str(tmp_path / "out"), {}, str(tmp_path / "out/_stats"), str(tmp_path / "out/_errors"))
    return _scanned_stage(job, ReadStream(str(tmp_path / "in"), "jsonl", job.read.options, {}, None, side), side)


def _states(stage, paths) -> dict[str, int]:
    import pyarrow as pa

    tables = [t for t in stage({"uri": np.array(paths), "info": np.array([""] * len(paths))}) if t.num_rows]
    if not tables:
        return {}
    merged = stage.stage.split.merged_rows(pa.concat_tables(tables, promote_options="permissive"), ["level"])
    return {r["level"]: (r["n"], r["eu"]) for r in merged.to_pylist()}


@pytest.mark.parametrize(("name", "data", "scanned"), [
    ("a.jsonl", BODY, True),
    ("a.jsonl.gz", gzip.compress(BODY[:5000]) + gzip.compress(BODY[5000:]), True),  # two members
    ("a.jsonl.zst", zstandard.ZstdCompressor().compress(BODY), True),
    ("a.jsonl.bz2", bz2.compress(BODY), False),  # read_ndjson does not decompress bz2
], ids=["plain", "gzip", "zstd", "bz2"])
def test_duckdb_scans_plain_gzip_and_zstd_files_and_the_arrow_way_reads_the_others(tmp_path, monkeypatch, name, data, scanned):
    """Each gives the groups of the same lines in a plain file, scanned or not."""
    scans = _recorded(monkeypatch)
    stage = _stage(tmp_path)
    path, plain = tmp_path / "in" / name, tmp_path / "plain.jsonl"
    path.write_bytes(data)
    plain.write_bytes(BODY)
    assert _states(stage, [str(path)]) == _states(stage, [str(plain)]) == {"INFO": (150, 100)}
    assert scans == ([[str(path)], [str(plain)]] if scanned else [[str(plain)]])


@pytest.mark.parametrize("data", [gzip.compress(BODY) + bytes(64), gzip.compress(BODY)[:-8] + bytes(8), gzip.compress(BODY)[:-100]],
                         ids=["zero-padding", "bad-checksum", "truncated"])
def test_a_damaged_gzip_file_or_one_padded_after_its_last_member_is_not_scanned(tmp_path, monkeypatch, data):
    """DuckDB reads a bad checksum without a word and fails the query on zero padding: the check decompresses the file first and refuses both."""
    scans = _recorded(monkeypatch)
    stage = _stage(tmp_path)
    path = tmp_path / "in" / "a.jsonl.gz"
    path.write_bytes(data)
    _states(stage, [str(path)])
    assert scans == []


def _recorded(monkeypatch) -> list:
    from dataflow.engines.ray.fused_read import ReadFusedStage

    scans, real = [], ReadFusedStage._scan
    monkeypatch.setattr(ReadFusedStage, "_scan", lambda self, files: scans.append(sorted(files)) or real(self, files))
    return scans
