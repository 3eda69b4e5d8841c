"""A jsonl source with a declared schema on Ray (Arrow blocks, fused SQL into partial states) gives Spark's groups and row errors."""
from __future__ import annotations

import json
import pathlib

import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.errors import PlanError
from dataflow.runner import run_pipeline

QUIET = RunOptions(progress=False)
SCHEMA = {"service": "string", "level": "string", "lat": "double", "msg": "string", "ctx": "struct<region: string, attempt: int>"}
BAD = ["{not json", '{"service": "a", "level": "INFO", "lat": "fast"}', "null", '{"service": "b", "ctx": {"attempt": 1.5}}']


def _write(folder: pathlib.Path) -> None:
    folder.mkdir()
    for f in range(3):
        lines = [json.dumps({"service": "abc"[(i + f) % 3], "level": ["DEBUG", "INFO", "WARN"][i % 3], "lat": None if i % 7 == 0 else i % 13 + f / 4,
                             "msg": f"code={[200, 500, 503][i % 3]}", "ctx": {"region": ["eu", "us"][i % 2], "attempt": i % 3}, "host": "h"})
                 for i in range(60)]
        lines.insert(10 + f, BAD[f])
        if f == 2:
            lines.insert(30, BAD[3])
        (folder / f"part-{f}.jsonl").write_text("\n".join(lines) + "\n")


def _doc(data: pathlib.Path, out: pathlib.Path, engine: str, files_per_shard: int | None = 1) -> dict:
    shards = {"files_per_shard": files_per_shard} if files_per_shard else {}
    return {"name": "typed", "engine": engine, "source": {"uri": str(data), "format": "jsonl", "options": {"schema": SCHEMA, **shards}},
            "steps": [{"op": "table.filter_rows", "params": {"where": "level <> 'DEBUG'"}},
                      {"op": "table.with_columns", "params": {"columns": {"region": "ctx.region", "code": r"regexp_extract(msg, 'code=(\\d+)', 1)"}}},
                      {"op": "table.aggregate", "params": {"keys": ["service", "level"], "aggregations": {
                          "n": "count(*)", "mu": "avg(lat)", "p": "percentile_approx(lat, 0.5)", "errs": "count_if(code LIKE '5%')", "eu": "count_if(region = 'eu')"}}}],
            "sink": {"uri": str(out), "format": "parquet"}}


def _groups(out: pathlib.Path) -> list[dict]:
    files = json.loads((out / "_manifest.json").read_text())["files"]
    rows = [r for f in files for r in pq.read_table(out / f["path"]).to_pylist()]
    return sorted(({k: v for k, v in r.items() if k != "__source__"} for r in rows), key=lambda r: (r["service"], r["level"]))


def _errors(out: pathlib.Path) -> list[tuple[str, str]]:
    recs = [json.loads(line) for p in (out / "_errors").rglob("*.jsonl") for line in p.read_text().splitlines()]
    return sorted((pathlib.Path(r["source"]).name, r["error_type"]) for r in recs)


@pytest.mark.parametrize("files_per_shard", [1, None], ids=["shards-then-global-phase", "one-phase"])
def test_declared_schema_on_ray_matches_spark(ray_local, spark_local, tmp_path, files_per_shard):
    """A shard a file: the map phase's stage and partial states fuse before the checkpoint; one shard: before the global stage itself."""
    data = tmp_path / "logs"
    _write(data)
    reports = {e: run_pipeline(parse_pipeline(_doc(data, tmp_path / e, e, files_per_shard)), QUIET) for e in ("ray", "spark")}
    ray, spark = _groups(tmp_path / "ray"), _groups(tmp_path / "spark")
    assert [{k: r[k] for k in ("service", "level", "n", "errs", "eu", "p")} for r in ray] == [{k: r[k] for k in ("service", "level", "n", "errs", "eu", "p")} for r in spark]
    assert [r["mu"] for r in ray] == pytest.approx([r["mu"] for r in spark])
    assert reports["ray"].rows_errored == reports["spark"].rows_errored == 4
    assert _errors(tmp_path / "ray") == [("part-0.jsonl#line=11", "JSONDecodeError"), ("part-1.jsonl#line=12", "TypeError"),
                                         ("part-2.jsonl#line=13", "TypeError"), ("part-2.jsonl#line=31", "TypeError")]
    steps = {s.op: s for s in reports["ray"].steps}
    assert steps["table.filter_rows"].rows_in == 180 and steps["table.aggregate"].rows_in == steps["table.filter_rows"].rows_out == 120


def test_a_type_ray_does_not_read_is_refused_before_the_run(ray_local, tmp_path):
    data = tmp_path / "logs"
    _write(data)
    doc = _doc(data, tmp_path / "out", "ray")
    doc["source"]["options"]["schema"] = {**SCHEMA, "ts": "timestamp"}
    with pytest.raises(PlanError, match="field 'ts' has type 'timestamp'"):
        run_pipeline(parse_pipeline(doc), QUIET)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("merge_bytes", ["", "-1"], ids=["merged-in-one-task", "merged-through-the-shuffle"])
def test_a_run_in_one_phase_whose_filter_drops_every_row(ray_local, tmp_path, monkeypatch, merge_bytes):
    """Every block's fused query keeps no row; the merge, in one task or through the hash shuffle, gives no group, and each step's counters still add up."""
    monkeypatch.setenv("DATAFLOW_RAY_MERGE_TASK_BYTES", merge_bytes)
    data = tmp_path / "logs"
    _write(data)
    doc = _doc(data, tmp_path / "out", "ray", files_per_shard=None)
    doc["steps"][0]["params"]["where"] = "level = 'NONE'"
    report = run_pipeline(parse_pipeline(doc), QUIET)
    assert _groups(tmp_path / "out") == []
    steps = {s.op: s for s in report.steps}
    assert steps["table.filter_rows"].rows_in == 180 and steps["table.filter_rows"].rows_out == 0
    assert steps["table.aggregate"].rows_in == 0 and steps["table.aggregate"].rows_out == 0
    assert report.rows_errored == 4


@pytest.mark.parametrize(("codec", "files_per_shard"), [("bz2", 2), ("gz", None)], ids=["bz2-shards-then-global-phase", "gzip-one-phase"])
def test_files_duckdb_scans_give_what_their_compressed_twins_give(ray_local, tmp_path, codec, files_per_shard):
    """Clean plain files are scanned by DuckDB in the stage's query (``fused_read``); their bz2 twins (DuckDB does not decompress
    bz2), the bad-line files and a file whose filtered-out line holds a value of another kind go the Arrow way, and the gzip
    twins of the clean files are scanned decompressed: the same groups, lineage, row errors and counters."""
    import bz2
    import gzip

    plain, packed = tmp_path / "plain", tmp_path / "packed"
    _write(plain)
    for f in range(3, 6):  # clean files, and one with a string for a double on a DEBUG line (the filter drops it, the read may not)
        rows = [{"service": "abc"[i % 3], "level": ["DEBUG", "INFO", "WARN"][(i + f) % 3], "lat": i / 3, "msg": f"code={[200, 500][i % 2]}",
                 "ctx": {"region": ["eu", "us"][(i + f) % 2], "attempt": i % 4}} for i in range(50)]
        if f == 5:
            rows[6] = {**rows[6], "level": "DEBUG", "lat": "slow"}
        (plain / f"part-{f}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    packed.mkdir()
    for p in sorted(plain.iterdir()):
        (packed / f"{p.name}.{codec}").write_bytes({"bz2": bz2.compress, "gz": gzip.compress}[codec](p.read_bytes()))
    reports = {name: run_pipeline(parse_pipeline(_doc(data, tmp_path / f"out-{name}", "ray", files_per_shard)), QUIET)
               for name, data in (("plain", plain), ("packed", packed))}
    rows = {name: sorted(pq.read_table(tmp_path / f"out-{name}").to_pylist(), key=lambda r: (r["service"], r["level"])) for name in reports}
    for a, b in zip(rows["plain"], rows["packed"], strict=True):
        assert {**a, "mu": None, "__source__": a["__source__"].replace("/plain/", "/")} == {**b, "mu": None, "__source__": b["__source__"].replace(f".{codec}", "").replace("/packed/", "/")}
        assert a["mu"] == pytest.approx(b["mu"])
    assert _errors(tmp_path / "out-plain") == [(n.replace(f".{codec}", ""), t) for n, t in _errors(tmp_path / "out-packed")] == [
        ("part-0.jsonl#line=11", "JSONDecodeError"), ("part-1.jsonl#line=12", "TypeError"), ("part-2.jsonl#line=13", "TypeError"),
        ("part-2.jsonl#line=31", "TypeError"), ("part-5.jsonl#line=7", "TypeError")]
    counters = {name: [(s.op, s.rows_in, s.rows_out, s.rows_errored) for s in r.steps] for name, r in reports.items()}
    assert counters["plain"] == counters["packed"] and reports["plain"].rows_in == reports["packed"].rows_in == 184 + 150  # lines, the bad ones included


def test_aggregate_lineage_is_the_same_on_both_engines_over_odd_file_names(ray_local, spark_local, tmp_path):
    """Files whose names are prefixes of each other or hold a space, a quote, an accent or ``#``, of line counts of 1 to 3
    digits: each group's smallest ``path#line=N`` is the same string on Ray (one DuckDB query over the files, line keys)
    and on Spark."""
    data = tmp_path / "logs"
    data.mkdir()
    for k, name in enumerate(["a.jsonl", "a.jsonl.2", "a b.jsonl", "it's.jsonl", "é#x.jsonl", "z.jsonl"]):
        rows = [{"service": "abc"[(i * (k + 1)) % 3], "level": ["INFO", "DEBUG"][i % 2], "lat": i / 3, "msg": "code=200",
                 "ctx": {"region": "eu", "attempt": 1}} for i in range([5, 12, 130, 9, 40, 101][k])]
        (data / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    sources = {}
    for engine in ("ray", "spark"):
        doc = _doc(data, tmp_path / engine, engine, files_per_shard=None)
        run_pipeline(parse_pipeline(doc), QUIET)
        rows = [r for f in json.loads((tmp_path / engine / "_manifest.json").read_text())["files"] for r in pq.read_table(tmp_path / engine / f["path"]).to_pylist()]
        sources[engine] = sorted((r["service"], r["level"], r["__source__"]) for r in rows)
    assert sources["ray"] == sources["spark"] and len(sources["ray"]) == 3
