"""The optical-module fault pipeline: precision and recall per fault type on a generated fleet, on Spark and on Ray.

The shipped thresholds were tuned on the generator's default seed (7); these fleets use other seeds.
"""
from __future__ import annotations

import json
import pathlib

import pyarrow.parquet as pq
from click.testing import CliRunner

from dataflow.cli.main import cli
from dataflow.dsl.parse import load_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline
from examples.optical_faults import FAULTS, format_score, generate, score

PIPELINE = str(pathlib.Path(__file__).parents[3] / "pipelines" / "optical_module_faults.yaml")
TUNING_SEED = 7


def _run(data: pathlib.Path, out: pathlib.Path, engine: str):
    spec = load_pipeline(PIPELINE, overrides=(f"engine={engine}",), environ={"OPTICAL_DATA": str(data), "OPTICAL_OUT": str(out)})
    report = run_pipeline(spec, RunOptions(progress=False))
    rows = [r for f in json.loads((out / "_manifest.json").read_text())["files"] for r in pq.read_table(out / f["path"]).to_pylist()]
    return report, {r["link"]: r for r in rows}


def test_explain_says_spark_and_why(tmp_path):
    result = CliRunner().invoke(cli, ["explain", PIPELINE], env={"OPTICAL_DATA": str(tmp_path)})
    assert result.exit_code == 0, result.output
    assert "engine: spark (auto: every step is a table op over a 'text' source, which Spark runs natively)" in result.output
    assert "== Spark job ==" in result.output and "source 'syslog': text lines" in result.output


def test_fault_pipeline_precision_and_recall_per_fault_type_on_spark(spark_local, tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    seed = 2027
    assert seed != TUNING_SEED
    expected = generate(data, fibres=160, hours=8, interval_s=120, seed=seed, malformed=0.001)
    report, rows = _run(data, out, "spark")
    assert report.engine == "spark" and report.published
    degrading = {link: r["fault"] for link, r in rows.items() if r["status"] == "degrading"}
    result = score(expected, degrading)
    print(format_score(result))
    for kind in FAULTS:
        quality = result["quality"][kind]
        assert quality["support"] >= 9, kind
        assert quality["precision"] >= 0.95 and quality["recall"] >= 0.95, (kind, quality)
    # Healthy ends are not written as degrading; every flag says how bad and what to do.
    assert not set(degrading) - set(expected["labels"]) - {link for link, r in rows.items() if r["fault"] not in FAULTS}
    for r in rows.values():
        assert r["reason"] and (r["severity"] in ("minor", "major", "critical")) == (r["status"] == "degrading")
        assert r["status"] != "suppressed" or "within the grace period" in r["reason"]
    # Malformed telemetry never reaches the features: each bad line is one error record.
    errors = [json.loads(line) for p in (out / "_errors").glob("*.jsonl") for line in p.read_text().splitlines()]
    assert report.rows_errored == len(errors) == expected["malformed"] > 0
    assert {e["op"] for e in errors} == {"table.parse_json"}
    assert report.rows_in == expected["rows"] + expected["malformed"]


def test_ray_flags_what_spark_flags(spark_local, ray_local, tmp_path):
    data = tmp_path / "data"
    expected = generate(data, fibres=30, hours=7, interval_s=300, seed=11, malformed=0.0)
    flags = {}
    for engine in ("spark", "ray"):
        report, rows = _run(data, tmp_path / engine, engine)
        assert report.engine == engine
        flags[engine] = {link: (r["status"], r["fault"], r["severity"], r["reason"]) for link, r in rows.items()}
    assert flags["ray"] == flags["spark"]
    assert {link for link, f in flags["spark"].items() if f[0] == "degrading"} <= set(expected["labels"])
