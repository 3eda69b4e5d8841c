"""Plan check against a source's known schema: each op's typed input column holds the kind it expects.

Ops declare the kind of value an input column must hold (``@op(input_types=...)``). When the
source's schema is known before the run (Parquet: read from the footer), a step reading a column
of another type is a plan error that names the column, its type and the expected one, keyed by the
step (so the CLI gives its file and line). Without a schema the same check runs per value in
``runtime.stage`` and the row goes to ``_errors/``.
"""
from __future__ import annotations

import pyarrow as pa

from dataflow.errors import PlanError, SpecIssue
from dataflow.ops.declare import ColumnType
from dataflow.plan.nodes import LogicalPlan, Read, Step

__all__ = ["arrow_accepts", "check_input_types"]


def _plain(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _is_binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


def arrow_accepts(kind: ColumnType, t: pa.DataType) -> bool:
    """Whether a column of Arrow type ``t`` holds values of ``kind`` (an all-null column does)."""
    t = _plain(t)
    if pa.types.is_null(t):
        return True
    if kind is ColumnType.STRING:
        return pa.types.is_string(t) or pa.types.is_large_string(t)
    if _is_binary(t):
        return True
    if kind is ColumnType.IMAGE_BYTES and pa.types.is_struct(t):  # Hugging Face Image: struct<bytes, path>
        names = {t.field(i).name for i in range(t.num_fields)}
        return "bytes" in names and names <= {"bytes", "path"} and _is_binary(_plain(t.field("bytes").type))
    return False


def check_input_types(plan: LogicalPlan, schema: pa.Schema) -> None:
    """Check the main chain's typed inputs against the source's schema.

    Columns a step writes have no known type after it (none after an op whose outputs depend on
    its params, such as ``table.with_columns``), so only columns coming unchanged from the source
    are checked.

    Raises:
        PlanError: one issue per step reading a column of the wrong type.
    """
    types: dict[str, pa.DataType | None] = {}
    problems = []
    for node in plan.nodes:
        if isinstance(node, Read):  # a later Read is an engine handoff: its types are not the source's
            types = {f.name: f.type for f in schema} if node is plan.nodes[0] else {}
        elif isinstance(node, Step):
            for column, kind in node.op.typed_inputs(node.params).items():
                t = types.get(column)
                if t is not None and not arrow_accepts(kind, t):
                    problems.append(SpecIssue(
                        key=node.path,
                        message=f"{node.op.name} reads column '{column}' of type {t}, but expects {kind.value}",
                        hint="a Hugging Face Image column (struct<bytes, path>) is read by image.decode directly"
                        if kind is ColumnType.IMAGE_BYTES else None,
                    ))
            if node.op.output_columns is not None:  # its params decide what it writes: no type is known after it
                types = {}
            else:
                types.update(dict.fromkeys(node.op.columns(node.params)[1]))
    if problems:
        raise PlanError(issues=problems)
