"""Row conservation is checked before the commit: a run whose counts do not add up fails and publishes nothing."""
from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataflow.cli.main import cli
from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.errors import RunError
from dataflow.runner import UnbalancedCountsError, run_pipeline

QUIET = RunOptions(progress=False)


def _doc(tmp_path: pathlib.Path, engine: str, steps: list[dict]) -> dict:
    rows = [{"k": i % 4, "n": i, "s": str(i) if i % 5 else "bad"} for i in range(20)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet")
    return {"name": "balance", "engine": engine, "source": {"uri": str(tmp_path / "in.parquet"), "format": "parquet"},
            "steps": steps, "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}


def test_a_step_that_silently_loses_rows_fails_the_run_and_publishes_nothing(ray_local, tmp_path):
    steps = [{"op": "table.with_columns", "params": {"columns": {"m": "n * 2"}}}, {"op": "tests.opfixtures:lose_rows", "params": {"keep": 3}}]
    with pytest.raises(UnbalancedCountsError) as info:
        run_pipeline(parse_pipeline(_doc(tmp_path, "ray", steps)), QUIET)
    assert isinstance(info.value, RunError)
    message = str(info.value)
    assert "row counts do not balance" in message and "nothing was published" in message
    assert "steps[1] (table.lose_rows): 20 rows in != 3 out + 0 dropped + 0 errored (17 rows unaccounted for)" in message
    out = tmp_path / "out"
    assert not (out / "_SUCCESS").exists() and not (out / "_manifest.json").exists()
    assert not list(out.glob("part-*")) and not list(out.glob("_tmp/*"))
    assert not info.value.report.published


def test_the_cli_exits_1_naming_the_step(ray_local, tmp_path):
    doc = _doc(tmp_path, "ray", [{"op": "tests.opfixtures:lose_rows", "params": {"keep": 2}}])
    (tmp_path / "p.yaml").write_text(json.dumps(doc))
    result = CliRunner().invoke(cli, ["run", str(tmp_path / "p.yaml"), "--quiet"])
    assert result.exit_code == 1, result.output
    assert "steps[0] (table.lose_rows): 20 rows in != 2 out" in result.output
    assert not (tmp_path / "out" / "_SUCCESS").exists()


@pytest.mark.parametrize("engine", ["ray", "spark"], ids=["ray", "spark"])
def test_counts_balance_in_a_normal_run(engine, request, tmp_path):
    request.getfixturevalue(f"{engine}_local")
    steps = [
        {"op": "table.with_columns", "params": {"columns": {"m": "n * 2"}}},
        {"op": "table.filter_rows", "params": {"where": "n >= 2"}},
        {"op": "table.cast", "params": {"columns": {"s": "long"}}},  # "bad" at n = 5, 10, 15: row errors
        {"op": "table.filter_rows", "params": {"where": "m < 30"}},
        {"op": "table.dedup", "params": {"keys": ["k"]}},
    ]
    report = run_pipeline(parse_pipeline(_doc(tmp_path, engine, steps)), QUIET)
    assert report.published and report.engine == engine
    counts = [(s.op, s.rows_in, s.rows_out, sum(s.drops.values()), s.rows_errored) for s in report.steps]
    assert counts == [("read", 20, 20, 0, 0), ("table.with_columns", 20, 20, 0, 0), ("table.filter_rows", 20, 18, 2, 0),
                      ("table.cast", 18, 15, 0, 3), ("table.filter_rows", 15, 11, 4, 0), ("table.dedup", 11, 4, 7, 0)]
    assert (report.rows_out, report.rows_errored) == (4, 3)
