"""Every op an engine claims has a lowering there: the engines' tables agree with the op registry."""
from __future__ import annotations

import pytest

from dataflow.engines.registry import engine_caps
from dataflow.engines.spark.lowerings import LOWERINGS
from dataflow.ops.declare import OpKind
from dataflow.ops.registry import all_ops

ROW_WISE = {OpKind.MAP, OpKind.FILTER, OpKind.FLAT_MAP}


def _ray_lowers(op) -> bool:
    """Ray runs row-wise ops as Python; a global op by the shuffle its declaration names (or in one task)."""
    return op.kind in ROW_WISE or op.kind is OpKind.GLOBAL


def _spark_lowers(op) -> bool:
    """Spark lowers its table's ops natively and runs row-wise table ops as Python (``EngineCaps.python_table_ops``)."""
    return op.name in LOWERINGS or (op.modality.value == "table" and op.kind in ROW_WISE)


LOWERS = {"ray": _ray_lowers, "spark": _spark_lowers}


@pytest.mark.parametrize("engine", sorted(engine_caps(installed_only=False)))
def test_every_op_an_engine_claims_is_lowered_or_row_wise(engine):
    caps = engine_caps(installed_only=False)[engine]
    claimed = [op for op in all_ops() if caps.runs(op)]
    assert claimed
    assert [op.name for op in claimed if not LOWERS[engine](op)] == []


def test_spark_lowers_only_registered_ops():
    assert sorted(set(LOWERINGS) - {op.name for op in all_ops()}) == []


def test_global_ops_declare_their_shuffle_on_the_op():
    partitioned = {op.name: op.partition_by for op in all_ops() if op.partition_by}
    bucketed = sorted(op.name for op in all_ops() if op.bucketing is not None)
    assert partitioned == {"table.aggregate": "keys", "table.dedup": "keys", "table.join": "keys", "table.window_aggregate": "keys",
                           "table.window_columns": "keys"}
    assert bucketed == ["image.dedup_phash", "text.dedup_exact", "text.dedup_minhash"]
    assert all(op.kind is OpKind.GLOBAL for op in all_ops() if op.partition_by or op.bucketing)
