"""``table.aggregate`` on Ray with its map-side combine, over several shards: the map phase writes
partial states to the checkpoint, the global phase merges them; rows and counters as in one phase."""
from __future__ import annotations

import json
import pathlib

import duckdb
import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline

QUIET = RunOptions(progress=False)
AGGS = {"n": "count(*)", "mu": "avg(lat)", "p90": "percentile_approx(lat, 0.9)", "errs": "count_if(code LIKE '5%')", "hi": "max(lat)", "s": "sum(lat)"}


def _write_logs(folder: pathlib.Path) -> None:
    """Three files; the last holds only DEBUG lines (no rows pass the filter there) and one bad line."""
    folder.mkdir()
    services, levels = ["auth", "db", "web"], ["INFO", "WARN", "ERROR"]
    for f in range(3):
        lines = []
        for i in range(40):
            level = "DEBUG" if f == 2 else levels[(i * 7 + f) % 3]
            lines.append(json.dumps({"service": services[(i + f) % 3], "level": level, "lat": None if i % 9 == 0 else (i * 13 % 17) + f / 4,
                                     "msg": f"done code={[200, 500, 503, 404][i % 4]}"}))
        if f == 2:
            lines.append("{not json")
        (folder / f"part-{f}.jsonl").write_text("\n".join(lines) + "\n")


def _rows(out: pathlib.Path) -> list[dict]:
    files = json.loads((out / "_manifest.json").read_text())["files"]
    return [r for f in files for r in pq.read_table(out / f["path"]).to_pylist()]


def _expected(data: pathlib.Path, keys: list[str]) -> list[dict]:
    group = f"GROUP BY {', '.join(keys)}" if keys else ""
    query = f"""SELECT {''.join(k + ', ' for k in keys)} count(*) AS n, avg(lat) AS mu, quantile_disc(lat, 0.9) AS p90,
                count_if(regexp_extract(msg, 'code=(\\d+)', 1) LIKE '5%') AS errs, max(lat) AS hi, sum(lat) AS s
                FROM read_ndjson('{data}/*.jsonl', columns = {{service: 'VARCHAR', level: 'VARCHAR', lat: 'DOUBLE', msg: 'VARCHAR'}}, ignore_errors = true)
                WHERE level <> 'DEBUG' {group}"""
    with duckdb.connect() as con:
        return con.sql(query).to_arrow_table().to_pylist()


@pytest.mark.parametrize("keys", [["service", "level"], []], ids=["keyed", "all_rows"])
def test_aggregate_over_shards_merges_partial_states_into_the_one_phase_rows(ray_local, tmp_path, keys):
    data = tmp_path / "logs"
    _write_logs(data)
    doc = {"name": "combine", "engine": "ray", "source": {"uri": str(data), "format": "jsonl", "options": {"files_per_shard": 1}},
           "steps": [{"op": "table.filter_rows", "params": {"where": "level <> 'DEBUG'"}},
                     {"op": "table.with_columns", "params": {"columns": {"code": r"regexp_extract(msg, 'code=(\\d+)', 1)"}}},
                     {"op": "table.aggregate", "params": {"keys": keys, "aggregations": AGGS}}],
           "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    report = run_pipeline(parse_pipeline(doc), QUIET)  # the counters must balance (else UnbalancedCountsError)
    got = sorted(_rows(tmp_path / "out"), key=lambda r: [str(r[k]) for k in keys])
    want = sorted(_expected(data, keys), key=lambda r: [str(r[k]) for k in keys])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert {k: g[k] for k in keys} == {k: w[k] for k in keys}
        assert g["n"] == w["n"] and g["errs"] == w["errs"] and g["p90"] == w["p90"] and g["hi"] == w["hi"]
        assert g["mu"] == pytest.approx(w["mu"]) and g["s"] == pytest.approx(w["s"])
        assert g["__source__"].startswith(str(data))
    steps = {s.op: s for s in report.steps}
    assert steps["table.aggregate"].rows_in == steps["table.filter_rows"].rows_out == 80
    assert steps["table.aggregate"].rows_out == report.rows_out == len(want)
    assert report.rows_errored == 1  # the bad line, in the error sink with its source


def test_percentile_over_shards_of_very_different_sizes_is_within_its_accuracy(ray_local, tmp_path):
    # 600 small values in one file and 12 large ones in another: each shard's state is cut to 10 values, the first
    # file's standing for 60 values each and the second's for 1.2, so the median comes from the first file.
    data = tmp_path / "values"
    data.mkdir()
    (data / "a.jsonl").write_text("".join(json.dumps({"g": "x", "v": float(i)}) + "\n" for i in range(600)))
    (data / "b.jsonl").write_text("".join(json.dumps({"g": "x", "v": 1e6 + i}) + "\n" for i in range(12)))
    doc = {"name": "median", "engine": "ray",
           "source": {"uri": str(data), "format": "jsonl", "options": {"files_per_shard": 1, "schema": {"g": "string", "v": "double"}}},
           "steps": [{"op": "table.aggregate", "params": {"keys": ["g"], "aggregations": {"m": "percentile_approx(v, 0.5, 5)", "n": "count(*)"}}}],
           "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    run_pipeline(parse_pipeline(doc), QUIET)
    (row,) = _rows(tmp_path / "out")
    assert row["n"] == 612
    assert 306 - 612 / 5 <= row["m"] + 1 <= 306 + 612 / 5, row  # the rank of value v is v + 1; the exact median's is 306
