"""A Python step's mapInArrow function, without Spark: output schema from a sample, refused rows flagged."""
from __future__ import annotations

import pyarrow as pa

from dataflow.engines.spark.python_steps import ETYPE, REASON, PythonStage, output_schema, python_allowed
from dataflow.errors import RowError
from dataflow.ops import get_op
from dataflow.ops.function import function_op
from dataflow.runtime.stage import StepCall


def _half(row: dict) -> dict:
    if row["n"] == 3:
        raise RowError("three is refused")
    return {**row, "half": row["n"] / 2}


def test_the_schema_comes_from_the_sample_and_refused_rows_come_back_flagged():
    call = StepCall(0, function_op(_half, batch_format="row"), {})
    sample = pa.table({"__source__": ["s0", "s1"], "n": [0, 1]})
    schema = output_schema(call, sample)
    assert schema == pa.schema([("__source__", pa.string()), ("n", pa.int64()), ("half", pa.float64())])
    flagged = pa.schema([*schema, pa.field("bad", pa.bool_()), pa.field(ETYPE, pa.string()), pa.field(REASON, pa.string())])
    batch = pa.record_batch({"__source__": ["a", "b", "c"], "n": [2, 3, 4]})
    (out,) = list(PythonStage(call, flagged, "bad")([batch]))
    assert out.to_pylist() == [
        {"__source__": "a", "n": 2, "half": 1.0, "bad": False, ETYPE: None, REASON: None},
        {"__source__": "c", "n": 4, "half": 2.0, "bad": False, ETYPE: None, REASON: None},
        {"__source__": "b", "n": None, "half": None, "bad": True, ETYPE: "RowError", REASON: "three is refused"},
    ]


def test_spark_runs_row_wise_table_ops_in_python_only():
    assert python_allowed(function_op(_half, batch_format="row"))
    assert not python_allowed(get_op("image.decode")) and not python_allowed(get_op("table.dedup"))
