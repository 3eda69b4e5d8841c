"""The optical-module fault pipeline on local Spark: exactly the known degrading links are flagged."""
from __future__ import annotations

import json
import pathlib

import pyarrow.parquet as pq
from click.testing import CliRunner

from dataflow.cli.main import cli
from dataflow.dsl.parse import load_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline
from examples.optical_faults import generate

PIPELINE = str(pathlib.Path(__file__).parents[3] / "pipelines" / "optical_module_faults.yaml")


def test_explain_says_spark_and_why(tmp_path):
    result = CliRunner().invoke(cli, ["explain", PIPELINE], env={"OPTICAL_DATA": str(tmp_path)})
    assert result.exit_code == 0, result.output
    assert "engine: spark (auto: every step is a table op over a 'text' source, which Spark runs natively)" in result.output
    assert "== Spark job ==" in result.output and "source 'syslog': text lines" in result.output


def test_fault_pipeline_flags_exactly_the_degrading_links(spark_local, tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    expected = generate(data, links=60, hours=12, interval_s=120, malformed=0.002)
    spec = load_pipeline(PIPELINE, environ={"OPTICAL_DATA": str(data), "OPTICAL_OUT": str(out)})
    report = run_pipeline(spec, RunOptions(progress=False))
    assert report.engine == "spark" and report.published
    rows = {r["link"]: r for f in json.loads((out / "_manifest.json").read_text())["files"] for r in pq.read_table(out / f["path"]).to_pylist()}
    assert len(rows) == 60
    flagged = {link: r["reason"] for link, r in rows.items() if r["degrading"]}
    assert set(flagged) == set(expected["degrading"])
    for link, kind in expected["degrading"].items():
        assert {"rx_falling": "rx power falling", "crc_high": "CRC errors", "flapping": "port flapped 5 times"}[kind] in flagged[link]
    for link in expected["distractors"]:
        assert not rows[link]["degrading"] and rows[link]["samples"] > 100
    assert all(r["window_start"] == 1767225600 + 6 * 3600 and r["window_end"] - r["window_start"] == 6 * 3600 for r in rows.values())
    # Malformed telemetry never reaches the features: each bad line is one error record with its line.
    errors = [json.loads(line) for p in (out / "_errors").glob("*.jsonl") for line in p.read_text().splitlines()]
    assert report.rows_errored == len(errors) == expected["malformed"] > 0
    assert {e["op"] for e in errors} == {"table.parse_json"} and {e["error_type"] for e in errors} <= {"JSONDecodeError", "TypeError"}
    path, line = errors[0]["source"].split("#line=")
    text = pathlib.Path(path).read_text().splitlines()[int(line) - 1]
    assert '"ts": "n/a"' in text or '"rx_power_dbm": "low"' in text or not text.endswith("}")
    assert report.rows_in == expected["rows"] + expected["malformed"]
