"""Hash shuffles of Arrow tables on Ray Data: every global op's distributed building block.

``hash_shuffle`` moves the rows of one or more datasets so that rows with equal key values meet
in one partition, then calls a function once per partition with that partition's rows (one Arrow
table per input dataset). The rows travel as Arrow IPC pieces, one piece per (block, partition),
through Ray Data's own shuffle (``groupby(partition).map_groups``): blocks with different schemas,
nested values and nulls cross it unchanged, and no row ever reaches the driver.

Each block sends a piece, empty or not, to every partition: so each partition function sees the
schema of every input even where one side has no rows there (a left join's right side).
"""
from __future__ import annotations

from typing import Callable, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataflow.engines.ray.compile import ARROW

__all__ = ["DEFAULT_PARTITIONS_PER_CPU", "hash_shuffle", "partition_ids", "shuffle_partitions"]

PART, SIDE, PIECE = "__df_part__", "__df_side__", "__df_piece__"
DEFAULT_PARTITIONS_PER_CPU = 2
# Key columns, or ``fn(column names, None) -> key columns`` resolved per block.
Keys = Union[Sequence[str], Callable[[list, None], list]]
_MIX = np.uint64(0x9E3779B97F4A7C15)


def shuffle_partitions(configured: int | None = None) -> int:
    """The partition count of a shuffle: ``configured`` (``--shuffle-partitions``), else
    ``DATAFLOW_RAY_SHUFFLE_PARTITIONS``, else 2 per CPU of the cluster."""
    import os

    from dataflow.engines.ray.session import cluster_cpus

    configured = configured or int(os.environ.get("DATAFLOW_RAY_SHUFFLE_PARTITIONS") or 0)
    return max(1, int(configured)) if configured else max(1, int(cluster_cpus()) * DEFAULT_PARTITIONS_PER_CPU)


def _key_hash(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A process-independent hash of each value; equal values (and all nulls) hash alike.

    Each distinct value is hashed once (a dictionary encoding): keys repeat, and turning a value
    into a Python string is the cost.
    """
    import pandas as pd

    try:
        text = col.cast(pa.string())  # canonical: 1 and 1.0 in blocks of different types agree
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # lists, structs: their repr
        values = np.array([None if v is None else repr(v) for v in col.to_pylist()], dtype=object)
        return pd.util.hash_array(values, categorize=False)
    encoded = (text.combine_chunks() if isinstance(text, pa.ChunkedArray) else text).dictionary_encode()
    distinct = np.asarray(encoded.dictionary.to_numpy(zero_copy_only=False), dtype=object)
    hashes = np.r_[pd.util.hash_array(distinct, categorize=False), pd.util.hash_array(np.array([None], dtype=object), categorize=False)]
    return hashes[pc.fill_null(encoded.indices, len(distinct)).to_numpy(zero_copy_only=False)]


def partition_ids(table: pa.Table, keys: Sequence[str], parts: int) -> np.ndarray:
    """The partition (``0 .. parts-1``) of each row of ``table`` by its ``keys`` values; none: 0."""
    h = np.zeros(table.num_rows, dtype=np.uint64)
    if not keys or parts == 1:
        return h.astype(np.int64)
    with np.errstate(over="ignore"):
        for k in keys:
            h = h * _MIX + _key_hash(table.column(k))
    return (h % np.uint64(parts)).astype(np.int64)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _table(piece: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(piece)).read_all()


class _Pieces:
    """Map: cut a block into one IPC piece per partition, tagged with the input's number."""

    def __init__(self, keys: Keys, parts: int, side: int):
        self.keys, self.parts, self.side = keys, parts, side

    def __call__(self, block: pa.Table) -> pa.Table:
        keys = self.keys(block.column_names, None) if callable(self.keys) else self.keys
        ids = partition_ids(block, keys, self.parts)
        order = np.argsort(ids, kind="stable")
        bounds = np.searchsorted(ids[order], np.arange(self.parts + 1))
        pieces = [_ipc(block.take(pa.array(order[bounds[p] : bounds[p + 1]]))) for p in range(self.parts)]
        n = self.parts
        return pa.table({PART: pa.array(np.arange(n), pa.int64()), SIDE: pa.array(np.full(n, self.side), pa.int64()), PIECE: pa.array(pieces, pa.binary())})


def _concat(tables: list[pa.Table]) -> pa.Table:
    if len(tables) == 1:
        return tables[0]
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except pa.ArrowTypeError:  # Ray's fixed- and variable-shape tensor columns do not merge; as tensor structs they do
        return pa.concat_tables([_tensor_structs(t) for t in tables], promote_options="permissive")


def _tensor_structs(table: pa.Table) -> pa.Table:
    """``table`` with each extension (tensor) column as dataflow's ``{shape, dtype, data}`` struct column."""
    from dataflow.batch import from_arrow, to_arrow

    names = [f.name for f in table.schema if isinstance(f.type, pa.ExtensionType)]
    if not names:
        return table
    plain = to_arrow(from_arrow(table.select(names)))
    for name in names:
        table = table.set_column(table.schema.get_field_index(name), name, plain.column(name))
    return table


def _apply(group: pa.Table, fn: Callable[..., pa.Table], sides: int) -> pa.Table:
    """Per partition: rebuild each input's rows from its pieces and call ``fn(part, *tables)``."""
    side = group.column(SIDE).to_numpy()
    pieces = group.column(PIECE).to_pylist()
    tables = []
    for s in range(sides):
        mine = [_table(p) for p, t in zip(pieces, side) if t == s]
        tables.append(_concat(mine) if mine else None)
    return fn(int(group.column(PART)[0].as_py()), *tables)


def hash_shuffle(inputs: Sequence[tuple[object, Keys]], parts: int, fn: Callable[..., pa.Table], seed: bool = False):
    """Shuffle ``inputs`` (``(dataset, key columns)`` each) into ``parts`` hash partitions, then map them.

    ``fn(part, table_0, table_1, ...)`` runs once per partition, in a Ray task, with each input's
    rows of that partition (``None`` for an input without blocks), and returns the partition's
    output rows. One shuffle: every piece crosses the network once. ``seed``: every partition runs,
    even when no input has a block (e.g. an aggregation over no rows still returns its one row).
    """
    tagged = [ds.map_batches(_Pieces(keys, parts, i), batch_format=ARROW, batch_size=None) for i, (ds, keys) in enumerate(inputs)]
    from ray.data.context import ShuffleStrategy

    if seed:
        import ray

        empty = pa.array([b""] * parts, pa.binary())
        tagged.append(ray.data.from_arrow(pa.table({PART: pa.array(np.arange(parts), pa.int64()), SIDE: pa.array(np.full(parts, -1), pa.int64()), PIECE: empty})))
    pieces = tagged[0].union(*tagged[1:]) if len(tagged) > 1 else tagged[0]
    # NOTE: Ray 2.60's default hash shuffle (v2) fails when a map task saw only empty blocks
    # (their schema-less pieces do not concatenate with real ones); the sort shuffle does not.
    # The context is shared along this dataset's lineage (one run's pipeline), not Ray's global one.
    pieces.context.shuffle_strategy = ShuffleStrategy.SORT_SHUFFLE_PULL_BASED
    return pieces.groupby(PART, num_partitions=parts).map_groups(_apply, fn_kwargs={"fn": fn, "sides": len(inputs)}, batch_format=ARROW)
