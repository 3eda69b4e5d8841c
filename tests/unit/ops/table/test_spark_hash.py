"""Spark's hash functions as dataflow computes them on Ray (``spark_hash``): Spark's values, and the block-at-a-time text hash equal to the one-value one."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from dataflow.ops.table import duck
from dataflow.ops.table.spark_hash import hash_binary, hash_bytes, hash_ints, hash_longs
from dataflow.ops.table.sql import duckdb_sql, parse

SEED = np.array([42], np.int32)


def test_values_are_sparks():
    """Values printed by Spark 4.3 (``SELECT hash(...)``): a bigint, a boolean (an int), text with a 3-byte tail."""
    assert hash_longs(SEED, np.array([7], np.int64))[0] == 1293116811
    assert hash_ints(SEED, np.array([1], np.int32))[0] == -559580957
    assert hash_bytes(42, b"Hello World") == 352365215


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=300)), max_size=40), st.integers(-(2**31), 2**31 - 1))
def test_block_hash_equals_one_value_at_a_time(values, seed):
    """Short values side by side, long ones (over 256 bytes) alone: each gets the hash of its bytes (NULL: of none)."""
    seeds = np.full(len(values), seed, np.int32)
    got = hash_binary(seeds, pa.array(values, pa.binary())) if values else np.zeros(0, np.int32)
    assert list(got) == [hash_bytes(seed, v or b"") for v in values]


def test_hash_folds_its_arguments_by_type_in_duckdb():
    """``hash(a, b)`` is ``b`` hashed with ``a``'s hash as its seed; a NULL leaves it; the same number as int and bigint hashes differently, as in Spark."""
    table = pa.table({"i": pa.array([7, None], pa.int64()), "n": pa.array([7, 7], pa.int32()), "s": ["Hello World", None]})
    sql = {k: duckdb_sql(parse(e)) for k, e in {"a": "hash(i, s)", "b": "hash(s)", "c": "hash(n)", "d": "hash(i)"}.items()}
    out = duck.query(table, "SELECT " + ", ".join(f"{e} AS {k}" for k, e in sql.items()) + f" FROM {duck.TABLE}").to_pydict()
    assert out["a"][0] == hash_bytes(int(hash_longs(SEED, np.array([7]))[0]), b"Hello World")
    assert out["a"][1] == 42 and out["b"] == [352365215, 42] and out["d"] == [1293116811, 42]
    assert out["c"][0] == int(hash_ints(SEED, np.array([7], np.int32))[0]) != out["d"][0]
