"""The Python API on real engines: in-memory sources in, fluent steps, results out; ops shipped by value."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pyarrow as pa

import dataflow

ROOT = pathlib.Path(__file__).parents[2]


def _scale(batch: pd.DataFrame, *, factor: int = 10) -> pd.DataFrame:
    batch["m"] = batch["n"] * factor
    return batch


def _half(row: dict) -> dict:
    if row["n"] == 3:
        raise dataflow.RowError("three is refused")
    return {**row, "half": row["n"] / 2}


class _Embed:
    """A callable class: its 'model' is built once per actor."""

    def __init__(self, *, dim: int):
        self.weights = np.arange(dim)

    def __call__(self, batch: dict) -> dict:
        return {**batch, "dot": batch["n"] * int(self.weights.sum())}


def test_pandas_in_map_batches_out_on_ray(ray_local):
    frame = pd.DataFrame({"n": range(300), "text": [f"t{i}" for i in range(300)]})
    p = dataflow.from_pandas(frame, name="frame").with_engine("ray").map_batches(_scale, batch_format="pandas", fn_kwargs={"factor": 3})
    out = p.to_pandas().sort_values("n", ignore_index=True)
    assert out["m"].tolist() == [3 * i for i in range(300)] and out["text"].tolist() == frame["text"].tolist()
    assert out["__source__"].iloc[7] == "memory:frame#row=7"
    assert p.count() == 300 and ray_local.is_initialized()  # the same run, the same session


def test_ray_dataset_in_callable_class_and_filter_then_ray_dataset_out(ray_local):
    ds = ray_local.data.from_items([{"n": i} for i in range(200)])
    p = (dataflow.from_ray(ds, name="rds").filter("n >= 50")
         .map_batches(_Embed, fn_constructor_kwargs={"dim": 4}, resources={"num_cpus": 0.5, "concurrency": 1}))
    out = p.to_ray().to_pandas()
    assert len(out) == 150 and out["dot"].sum() == sum(i * 6 for i in range(50, 200))
    assert "as actor pool" in p.explain()
    assert all(s.startswith("memory:rds#part=") for s in out["__source__"])


def test_arrow_items_and_huggingface_round_trip_on_ray(ray_local):
    import datasets

    table = pa.table({"n": [1, 2, 3], "s": ["a", "b", "c"]})
    assert sorted(dataflow.from_arrow(table).with_engine("ray").select("n").to_arrow().column_names) == ["__source__", "n"]
    assert sorted(dataflow.from_items([{"n": 5}, {"n": 6}]).with_engine("ray").with_column("k", "n + 1").to_pandas()["k"]) == [6, 7]
    hf = datasets.Dataset.from_dict({"n": [1, 2, 3, 4], "label": ["x", "y", "x", "y"]})
    back = dataflow.from_huggingface(hf, name="hf").with_engine("ray").filter("label = 'x'").to_huggingface()
    assert isinstance(back, datasets.Dataset) and sorted(back["n"]) == [1, 3]
    p = dataflow.from_huggingface(hf).with_engine("ray")
    assert sorted(p.schema().names) == ["__source__", "label", "n"] and len(p.show(2)) == 2 and "<table" in p.show(2)._repr_html_()
    assert sum(b.num_rows for b in p.iter_batches(batch_size=3)) == 4


def test_spark_dataframe_in_native_and_python_steps_and_spark_dataframe_out(spark_local):
    df = spark_local.createDataFrame(pd.DataFrame({"n": list(range(40)), "s": ["a"] * 40}))
    p = dataflow.from_spark(df, name="sdf").filter("n < 5").with_column("m", "n * 2").map_batches(_half, batch_format="row")
    text = p.explain()
    assert "engine: spark" in text and "udf.half: mapInArrow[the op in Python workers" in text
    out = p.to_spark().toPandas().sort_values("n")
    assert out["half"].tolist() == [0.0, 0.5, 1.0, 2.0] and out["m"].tolist() == [0, 2, 4, 8]
    assert all(s.startswith("memory:sdf#id=") for s in out["__source__"])
    report = p._run_once().report
    assert (report.rows_in, report.rows_out, report.rows_errored) == (40, 4, 1)
    errors = [json.loads(line) for f in sorted(pathlib.Path(report.errors).glob("*.jsonl")) for line in f.read_text().splitlines()]
    assert [(e["op"], e["error_type"], e["reason"]) for e in errors] == [(p._data["steps"][2]["op"], "RowError", "three is refused")]


def test_pandas_in_map_batches_out_on_spark(spark_local):
    frame = pd.DataFrame({"n": range(20)})
    back = dataflow.from_pandas(frame, name="pdf").with_engine("spark").map_batches(_scale, batch_format="pandas").to_pandas()
    assert sorted(back["m"]) == [10 * i for i in range(20)] and set(back["__source__"]) == {f"memory:pdf#row={i}" for i in range(20)}


def test_an_op_defined_in_main_runs_on_ray_workers_and_one_ray_session_serves_every_result(ray_local, tmp_path):
    script = tmp_path / "notebook_like.py"
    script.write_text(textwrap.dedent('''
        import json
        import pandas as pd
        import ray
        import dataflow
        from dataflow.ops import op

        @op(name="demo.shout", modality="text", inputs=("text",), outputs=("text",), batch_format="pandas")
        def shout(batch, *, mark: str = "!"):
            """Upper-case each text.

            Args:
                mark: Appended to each text.
            """
            batch["text"] = batch["text"].str.upper() + mark
            return batch

        p = dataflow.from_pandas(pd.DataFrame({"text": [f"row {i}" for i in range(300)]})).with_engine("ray").apply(shout, mark="?")
        before = ray.is_initialized()
        texts = sorted(p.to_pandas()["text"])
        session = ray.get_runtime_context().get_job_id()
        again = p.map_batches(lambda b: b).count()
        print(json.dumps({"before": before, "texts": texts, "again": again,
                          "same_session": ray.get_runtime_context().get_job_id() == session}))
    '''))
    env = {**os.environ, "RAY_ADDRESS": ray_local.get_runtime_context().gcs_address, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, env=env, cwd=tmp_path, timeout=240)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    result = json.loads(run.stdout.decode().strip().splitlines()[-1])
    assert result == {"before": False, "texts": sorted(f"ROW {i}?" for i in range(300)), "again": 300, "same_session": True}
