"""A new table op runs on both engines after two additions: the op, and one Spark lowering entry."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.engines.registry import explain_pipeline
from dataflow.engines.spark.lowerings import LOWERINGS, Lowering
from dataflow.runner import run_pipeline


@pytest.fixture
def spark_lowers_double(monkeypatch):
    monkeypatch.setitem(LOWERINGS, "table.double_fixture", Lowering("withColumn(into, column * 2)", "tests.table_op_fixture:lower_double"))


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_new_table_op_runs_on_both_engines(engine, spark_lowers_double, request, tmp_path):
    request.getfixturevalue("ray_local" if engine == "ray" else "spark_local")
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"n": [1, 2, 5]}), tmp_path / "in" / "part.parquet")
    spec = parse_pipeline({
        "name": "double", "engine": engine,
        "source": {"uri": str(tmp_path / "in"), "format": "parquet"},
        "steps": [{"op": "tests.table_op_fixture:double_column", "params": {"into": "twice"}}],
        "sink": {"uri": str(tmp_path / "out"), "format": "parquet"},
    })
    if engine == "spark":
        assert "steps[0] table.double_fixture: withColumn(into, column * 2)" in explain_pipeline(spec)
    report = run_pipeline(spec, RunOptions(progress=False))
    rows = pq.read_table(tmp_path / "out", columns=["n", "twice"]).to_pylist()
    assert sorted((r["n"], r["twice"]) for r in rows) == [(1, 2), (2, 4), (5, 10)]
    assert (report.engine, report.rows_in, report.rows_out) == (engine, 3, 3)
