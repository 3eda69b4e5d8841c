"""Zero-copy in and out: in-memory sources are read without staging files, and results are the engine's own dataset."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

import dataflow
from dataflow.runtime import held


def _staged() -> set[pathlib.Path]:
    """Every file under this process's staging folder."""
    return {p for p in pathlib.Path(held._STAGING[0]).rglob("*") if p.is_file()} if held._STAGING else set()


def _refuse_13(row: dict) -> dict:
    if row["n"] == 13:
        raise dataflow.RowError("thirteen is refused")
    return {**row, "m": row["n"] * 2}


def _addresses(column: pa.ChunkedArray) -> list[int]:
    return [b.address for chunk in column.chunks for b in chunk.buffers() if b is not None]


def test_arrow_in_and_out_without_steps_shares_the_buffers_and_writes_nothing():
    t = pa.table({"n": pa.array(range(1000)), "s": pa.array([f"s{i}" for i in range(1000)])})
    p = dataflow.from_arrow(t, name="t")
    before = _staged()
    out = p.to_arrow()
    assert _addresses(out.column("n")) == _addresses(t.column("n")) and _addresses(out.column("s")) == _addresses(t.column("s"))
    frame = p.to_pandas()  # a fixed-width column without nulls in one chunk: pandas over the same buffer
    assert np.shares_memory(frame["n"].to_numpy(), np.frombuffer(t.column("n").chunks[0].buffers()[1], dtype=np.int64))
    assert p.count() == 1000 and _staged() == before and not pathlib.Path(p._run_once().report.output).exists()


def test_ray_dataset_in_and_out_stays_in_the_object_store_with_counters_and_errors(ray_local):
    from ray.data.dataset import MaterializedDataset

    ds = ray_local.data.from_items([{"n": i, "pad": "x" * 2048} for i in range(300)], override_num_blocks=2)
    p = dataflow.from_ray(ds, name="rds").map_batches(_refuse_13, batch_format="row")
    before = _staged()
    out = p.to_ray()
    assert isinstance(out, MaterializedDataset) and out.count() == 299
    report = p._run_once().report
    assert (report.rows_in, report.rows_out, report.rows_errored) == (300, 299, 1)
    new = _staged() - before
    assert new and all({"_stats", "_errors"} & set(f.parts) for f in new)  # counters and error records only: no data file
    errors = [json.loads(line) for f in new if "_errors" in f.parts for line in f.read_text().splitlines()]
    assert [(e["reason"], e["source"].startswith("memory:rds#part=")) for e in errors] == [("thirteen is refused", True)]
    a, b = p.to_arrow(), p.to_arrow()  # both over the run's blocks in the object store (not read again, not copied)
    assert a.num_rows == 299 and _addresses(a.column("pad")) == _addresses(b.column("pad"))
    assert sorted(a.column("m").to_pylist()) == sorted(2 * i for i in range(300) if i != 13)
    assert all(s.startswith("memory:rds#part=") for s in a.column("__source__").to_pylist())


def test_pandas_in_ray_out_reads_no_staged_input(ray_local):
    from ray.data.dataset import MaterializedDataset

    p = dataflow.from_pandas(pd.DataFrame({"n": range(50)}), name="pdf").filter("n >= 10").with_column("k", "n + 1")
    before = _staged()
    out = p.to_ray()
    assert isinstance(out, MaterializedDataset) and sorted(out.to_pandas()["k"]) == list(range(11, 51))
    assert not [f for f in _staged() - before if f.suffix == ".parquet"]
    assert p.preview(3).outcomes and p.count() == 40


def test_spark_dataframe_in_and_out_is_the_runs_own_frame_without_files(spark_local):
    df = spark_local.createDataFrame(pd.DataFrame({"n": list(range(40))}))
    p = dataflow.from_spark(df, name="sdf").with_engine("spark").filter("n < 5").with_column("m", "n * 2")
    before = _staged()
    out = p.to_spark()
    assert out.is_cached and out.inputFiles() == []  # the user's DataFrame, persisted; no Parquet read
    assert sorted(r["m"] for r in out.collect()) == [0, 2, 4, 6, 8]
    assert not [f for f in _staged() - before if f.suffix == ".parquet"]
    report = p._run_once().report
    assert (report.rows_in, report.rows_out, report.rows_errored) == (40, 5, 0)
    assert sorted(p.to_arrow().column("m").to_pylist()) == [0, 2, 4, 6, 8]


def test_arrow_into_spark_goes_over_arrow_not_files(spark_local):
    p = dataflow.from_arrow(pa.table({"n": list(range(20))}), name="arw").with_engine("spark").with_column("m", "n + 1")
    before = _staged()
    out = p.to_spark()
    assert out.inputFiles() == [] and sorted(r["m"] for r in out.collect()) == list(range(1, 21))
    assert set(r["__source__"] for r in out.collect()) == {f"memory:arw#row={i}" for i in range(20)}
    assert not [f for f in _staged() - before if f.suffix == ".parquet"]


def test_a_spark_dataframe_on_ray_is_handed_over_through_parquet_and_ray_holds_the_output(spark_local, ray_local):
    from ray.data.dataset import MaterializedDataset

    df = spark_local.createDataFrame(pd.DataFrame({"n": list(range(10)), "text": [f"  Row {i} " for i in range(10)]}))
    p = dataflow.from_spark(df, name="mix").filter("n < 5").apply("text.normalize")
    assert "engine: ray" in p.explain()  # a text step: the planner puts the whole plan on Ray
    before = _staged()
    out = p.to_ray()
    assert isinstance(out, MaterializedDataset) and out.count() == 5
    report = p._run_once().report
    assert (report.rows_in, report.rows_out) == (10, 10 - 5)
    parquet = [f for f in _staged() - before if f.suffix == ".parquet"]
    assert parquet and all(f.parent.name.startswith("mix-spark-") for f in parquet)  # the documented handoff between engines, not the output


def test_a_spark_then_ray_plan_hands_over_through_parquet_and_ray_holds_the_output(spark_local, ray_local):
    from ray.data.dataset import MaterializedDataset

    df = spark_local.createDataFrame(pd.DataFrame({"n": list(range(10)), "text": [f"  Row {i} " for i in range(10)]}))
    stages = [
        {"name": "pick", "engine": "spark", "steps": [{"op": "table.filter_rows", "params": {"where": "n < 5"}}]},
        {"name": "clean", "steps": [{"op": "text.normalize"}]},
    ]
    p = dataflow.Pipeline({**dataflow.from_spark(df, name="mix")._data, "stages": stages})
    assert "engine: spark -> ray" in p.explain()
    out = p.to_ray()
    assert isinstance(out, MaterializedDataset) and sorted(out.to_pandas()["text"]) == [f"Row {i}" for i in range(5)]
    report = p._run_once().report
    assert report.engine == "spark+ray" and (report.rows_in, report.rows_out) == (10, 5)
    parquet = list(pathlib.Path(report.output).rglob("*.parquet"))
    assert parquet and all("handoff-1" in f.parts for f in parquet)  # the documented handoff; the output stays in Ray


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_an_in_memory_source_runs_to_a_sink_and_commits(engine, request, tmp_path):
    request.getfixturevalue(f"{engine}_local")
    p = dataflow.from_arrow(pa.table({"n": list(range(30))}), name="sunk").with_engine(engine).filter("n % 3 = 0")
    before = _staged()
    report = p.write(str(tmp_path / "out")).run(progress=False)
    assert report.published and (report.rows_in, report.rows_out, report.engine) == (30, 10, engine)
    back = pads.dataset(str(tmp_path / "out"), format="parquet").to_table()
    assert sorted(back.column("n").to_pylist()) == list(range(0, 30, 3))
    assert set(back.column("__source__").to_pylist()) == {f"memory:sunk#row={i}" for i in range(0, 30, 3)}
    assert _staged() == before  # the input was never staged


def test_a_held_result_keeps_the_error_budget(ray_local):
    from dataflow.runner import BudgetExceededError

    p = dataflow.from_items([{"n": i} for i in range(20)], name="budget").map_batches(_refuse_13, batch_format="row").with_errors(max_errors=0)
    with pytest.raises(BudgetExceededError, match="1 row errors exceed errors.max_errors=0.*thirteen is refused"):
        p.to_pandas()
