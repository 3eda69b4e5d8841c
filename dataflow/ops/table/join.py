"""Join the rows with a named source of the pipeline (``sources:``) on key columns."""
from __future__ import annotations

from typing import Literal

import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.lineage import MATCH
from dataflow.ops.declare import op
from dataflow.ops.table.named import bound_table
from dataflow.ops.table.types import ColumnName, SourceName

__all__ = ["JOIN_TYPES", "RIGHT_SOURCE", "join_arrow", "join_identity", "join_tables"]

RIGHT_SOURCE = "__df_right_source__"  # the right row's identity, while the join ranks matches

#: Our join names -> pyarrow's.
JOIN_TYPES = {"inner": "inner", "left": "left outer", "right": "right outer", "full": "full outer", "semi": "left semi", "anti": "left anti"}


def right_renames(left: list[str], right: list[str], on: list[str], suffix: str) -> dict[str, str]:
    """Right-side columns that collide with left ones (keys excepted) -> their suffixed names."""
    return {c: f"{c}{suffix}" for c in right if c in left and c not in on}


def join_identity(left: str | None, right: str | None, matches: int, rank: int) -> str | None:
    """A joined row's ``__source__``: the left row's, suffixed ``#match=<rank>`` when it matched several right rows.

    A right row without a left match takes its own. Identities stay unique per row, so a later
    dedup never confuses two rows of one left row.
    """
    if left is None:
        return right
    return f"{left}{MATCH}{rank}" if matches > 1 else left


def _unique_identities(out: pa.Table) -> pa.Table:
    """Replace the left identity by ``join_identity``: matches ranked by the right row's identity (vectorized)."""
    import numpy as np
    import pyarrow.compute as pc

    left, right = out.column(SOURCE).combine_chunks(), out.column(RIGHT_SOURCE).combine_chunks()
    if len(left) == 0:
        return out.drop_columns([RIGHT_SOURCE])
    # Rank each left row's matches by (right is not null, right): sort by (left, that), count the runs.
    keys = pa.table({"l": left, "n": pc.is_valid(right), "r": right})
    order = pc.sort_indices(keys, sort_keys=[("l", "ascending", "at_start"), ("n", "ascending", "at_start"), ("r", "ascending", "at_start")])
    sorted_left = left.take(order)
    differ = pc.fill_null(pc.not_equal(sorted_left[1:], sorted_left[:-1]), True).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[True, differ])
    sizes = np.diff(np.r_[starts, len(left)])
    pos = np.arange(len(left))
    rank_sorted = pos - np.repeat(starts, sizes) + 1
    count_sorted = np.repeat(sizes, sizes)
    rank, count = np.empty_like(pos), np.empty_like(pos)
    o = order.to_numpy()
    rank[o], count[o] = rank_sorted, count_sorted
    suffixed = pc.binary_join_element_wise(left.cast(pa.string()), MATCH, pa.array(rank).cast(pa.string()), "")
    ids = pc.if_else(pc.is_null(left), right.cast(pa.string()), pc.if_else(pa.array(count > 1), suffixed, left.cast(pa.string())))
    return out.set_column(out.column_names.index(SOURCE), SOURCE, ids).drop_columns([RIGHT_SOURCE])


def join_arrow(left: pa.Table, right: pa.Table, on: list[str], how: str, suffix: str) -> pa.Table:
    """Join two Arrow tables with SQL semantics (null keys never match); identities as ``join_identity`` says."""
    missing = [k for k in on if k not in right.column_names]
    if missing:
        raise KeyError(f"table.join: the right table has no key column(s) {missing} (have: {right.column_names})")
    paired = SOURCE in left.column_names and SOURCE in right.column_names and how not in ("semi", "anti")
    if paired:
        right = right.rename_columns([RIGHT_SOURCE if c == SOURCE else c for c in right.column_names])
    right = right.drop_columns([c for c in (SOURCE,) if c in right.column_names])
    right = right.rename_columns([right_renames(left.column_names, right.column_names, on, suffix).get(c, c) for c in right.column_names])
    for k in on:
        lt, rt = left.schema.field(k).type, right.schema.field(k).type
        if lt != rt:
            right = right.set_column(right.column_names.index(k), k, right.column(k).cast(lt))
    # Arrow's join takes no null-typed (all-null, untyped) payload column: such columns sit out and come back as nulls.
    untyped = [c for t in (left, right) for c in t.column_names if c not in on and pa.types.is_null(t.schema.field(c).type)]
    out = left.drop_columns([c for c in untyped if c in left.column_names]).join(
        right.drop_columns([c for c in untyped if c in right.column_names]), keys=list(on), join_type=JOIN_TYPES[how], coalesce_keys=True, use_threads=False)
    for c in untyped:
        if c in left.column_names or how not in ("semi", "anti"):
            out = out.append_column(c, pa.nulls(out.num_rows))
    if how in ("semi", "anti"):
        return out.select(left.column_names)
    out = out.select([*left.column_names, *(c for c in right.column_names if c not in on)])
    return _unique_identities(out) if paired else out


def _unknown_columns(columns_in: frozenset[str] | None, params) -> None:
    return None  # the right side's columns are known only when it is read


@op(name="table.join", modality="table", inputs=(), outputs=(SOURCE,), kind="global", partition_by="keys", batch_format="pyarrow", output_columns=_unknown_columns, reshapes=True)
def join_tables(
    batch: pa.Table,
    *,
    right: SourceName,
    keys: list[ColumnName],
    how: Literal["inner", "left", "right", "full", "semi", "anti"] = "inner",
    suffix: str = "_right",
) -> pa.Table:
    """Join the rows (left) with the named source ``right`` where the ``keys`` columns are equal.

    Keys are shared columns of the output; other right columns that collide with left ones get
    ``suffix``. Null keys never match. ``semi`` keeps left rows with a match, ``anti`` those without.
    A left row that matches several right rows yields rows with ``__source__``
    ``<left>#match=1``, ``#match=2``, ... (ordered by the right rows' ``__source__``), so every
    row keeps a unique identity; a right row without a match keeps its own ``__source__``.

    Args:
        right: Name of a source declared under ``sources:`` (its rows after its own steps).
        keys: Key columns present on both sides.
        how: inner, left, right, full, semi or anti.
        suffix: Appended to right-side column names that collide with left ones.
    """
    return join_arrow(batch, bound_table(right), list(keys), how, suffix)
