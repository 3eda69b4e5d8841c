"""Run a fused stage's steps over one batch: formats, filters, flat maps and row errors.

This is engine-agnostic: Ray calls it from ``map_batches`` and Spark from ``mapInArrow``. Steps are
shipped to workers as ``StepCall``: the op by value (``dataflow.ops.shipping``) and its params as
the op's param model validated at plan time, so workers never look an op up by name and nothing
bound to a session travels.
"""
from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.errors import RowError
from dataflow.ops.declare import BatchFormat, OpKind, OpSpec, Params
from dataflow.batch import Columns, from_arrow, from_rows, length, take, to_arrow, to_rows
from dataflow.runtime.error_sink import ErrorRecord

__all__ = ["StageExecutor", "StepCall", "StepStats"]


@dataclass(frozen=True)
class StepCall:
    """What a worker needs to run one step: its place, the op and its validated params."""

    index: int
    op: OpSpec
    params: Params

    def __post_init__(self) -> None:
        # Engines pass the plan's op and model; a name and a dict (tests, tools) are resolved and validated here, on the driver.
        if isinstance(self.op, str):
            from dataflow.ops.registry import get_op

            object.__setattr__(self, "op", get_op(self.op))
        if isinstance(self.params, dict):
            object.__setattr__(self, "params", self.op.params(**self.params))


@dataclass
class StepStats:
    """Counters of one step over the batches a worker ran."""

    rows_in: int = 0
    rows_out: int = 0
    rows_errored: int = 0
    seconds: float = 0.0
    drops: Counter = field(default_factory=Counter)

    def add(self, other: StepStats) -> None:
        self.rows_in += other.rows_in
        self.rows_out += other.rows_out
        self.rows_errored += other.rows_errored
        self.seconds += other.seconds
        self.drops.update(other.drops)

    def as_dict(self) -> dict[str, Any]:
        return {"rows_in": self.rows_in, "rows_out": self.rows_out, "rows_errored": self.rows_errored,
                "seconds": round(self.seconds, 6), "drops": dict(self.drops)}


def _to_format(cols: Columns, fmt: BatchFormat) -> Any:
    """``cols`` as a numpy, row or pandas batch (Arrow batches come from ``_Batch.table``)."""
    if fmt is BatchFormat.NUMPY:
        return dict(cols)
    if fmt is BatchFormat.ROW:
        return to_rows(cols)
    import pandas as pd  # only pandas steps pay its import (the driver imports this module before Ray starts)

    return pd.DataFrame({k: v for k, v in cols.items()})


def _from_format(result: Any) -> Columns:
    pd = sys.modules.get("pandas")  # a step cannot return a DataFrame before pandas is imported
    if pd is not None and isinstance(result, pd.DataFrame):
        return {str(k): result[k].to_numpy() for k in result.columns}
    return dict(result)


class _Batch:
    """A batch in the form the last step left it, Arrow or ``Columns``; each form is built once, when a step asks for it.

    Consecutive ``pyarrow`` steps hand each other the Arrow table: no numpy objects in between.
    """

    __slots__ = ("_cols", "_table")

    def __init__(self, cols: Columns | None = None, table: pa.Table | None = None):
        self._cols, self._table = cols, table

    @property
    def cols(self) -> Columns:
        if self._cols is None:
            self._cols = from_arrow(self._table)
        return self._cols

    @property
    def table(self) -> pa.Table:
        if self._table is None:
            self._table = to_arrow(self._cols)
        return self._table

    @property
    def names(self) -> list[str]:
        return self._table.column_names if self._cols is None else list(self._cols)

    @property
    def is_arrow(self) -> bool:
        return self._cols is None

    def __len__(self) -> int:
        return self._table.num_rows if self._cols is None else length(self._cols)


class StageExecutor:
    """Apply a list of steps to batches, collecting row errors and per-step counters.

    A global op (dedup, aggregation) is called once with the whole dataset as its batch.
    """

    def __init__(self, calls: list[StepCall], devices: list[str] | None = None, keeps: list[frozenset[str] | None] | None = None):
        """Bind each step; ``devices`` names each step's implementation ("cpu" or "gpu", default all "cpu").

        ``keeps``: per step, the columns of its output that later steps and the sink read (None: all);
        the others leave the batch right after it (``dataflow.plan.columns.needed_after``).
        """
        self.calls = calls
        self.keeps = keeps or [None] * len(calls)
        self.ops = [c.op for c in calls]
        # Per step, in order: a pipeline may run one op several times with different params.
        self.params = [c.params for c in calls]
        self._typed = [spec.typed_inputs(p) for spec, p in zip(self.ops, self.params)]
        self.fns: list[Callable[[Any], Any]] = [
            spec.bind(params, device) for spec, params, device in zip(self.ops, self.params, devices or ["cpu"] * len(calls))
        ]

    def __call__(self, cols: Columns) -> tuple[Columns, list[ErrorRecord], dict[int, StepStats]]:
        out, errors, stats = self.run(cols)
        return (from_arrow(out) if isinstance(out, pa.Table) else out), errors, stats

    def run(self, batch: Columns | pa.Table) -> tuple[Columns | pa.Table, list[ErrorRecord], dict[int, StepStats]]:
        """Run the steps over ``batch``; the result is an Arrow table where the last step left one (no conversion back)."""
        errors: list[ErrorRecord] = []
        stats: dict[int, StepStats] = {}
        held = _Batch(table=batch) if isinstance(batch, pa.Table) else _Batch(cols=batch)
        for call, spec, params, fn, typed, keep in zip(self.calls, self.ops, self.params, self.fns, self._typed, self.keeps):
            st = stats[call.index] = StepStats(rows_in=len(held))
            start = time.perf_counter()
            if st.rows_in and typed:
                held = _Batch(cols=_split_wrong_types(spec.name, typed, held.cols, errors, st))
            if len(held):
                held = self._step(spec, params, fn, held, errors, st)
            if keep is not None and any(n not in keep for n in held.names):
                held = _Batch(table=held.table.select([n for n in held.names if n in keep])) if held.is_arrow else _Batch(cols={k: v for k, v in held.cols.items() if k in keep})
            st.seconds = time.perf_counter() - start
            st.rows_out = len(held)
        return (held.table if held.is_arrow else held.cols), errors, stats

    def _step(self, spec, params, fn, held: _Batch, errors: list[ErrorRecord], st: StepStats) -> _Batch:
        if spec.batch_format is BatchFormat.ROW:
            return _Batch(cols=self._rows(spec, fn, held.cols, errors, st))
        try:
            return self._batch(spec, params, fn, held, st)
        except RowError:
            # Isolate the bad rows: run the batch again one row at a time.
            cols, parts = held.cols, []
            for i in range(length(cols)):
                one = take(cols, np.array([i]))
                try:
                    parts.append(self._batch(spec, params, fn, _Batch(cols=one), st).cols)
                except RowError as exc:
                    errors.append(_record(one[SOURCE][0] if SOURCE in one else None, spec.name, exc))
                    st.rows_errored += 1
            return _Batch(cols=_concat(parts, cols))

    def _batch(self, spec, params, fn, held: _Batch, st: StepStats) -> _Batch:
        fmt = spec.batch_format
        result = fn(held.table if fmt is BatchFormat.PYARROW else _to_format(held.cols, fmt))
        if spec.kind is OpKind.FILTER:
            keep, reasons = result if isinstance(result, tuple) else (result, None)
            keep = np.asarray(keep, dtype=bool)
            if reasons is not None:
                st.drops.update((r or spec.name) for r, k in zip(reasons, keep) if not k)  # a drop without a reason still counts
            else:
                st.drops[spec.name] += int((~keep).sum())
            return _Batch(table=held.table.filter(pa.array(keep))) if held.is_arrow else _Batch(cols=take(held.cols, np.flatnonzero(keep)))
        if isinstance(result, pa.RecordBatch):
            result = pa.Table.from_batches([result])
        out = _Batch(table=result) if isinstance(result, pa.Table) else _Batch(cols=_from_format(result))
        if spec.drops_rows:  # a global op that keeps a subset (a dedup): the rows it leaves out are its drops
            st.drops[spec.name] += len(held) - len(out)
        if spec.output_columns is not None:
            allowed = spec.output_columns(frozenset(held.names), params)
            if allowed is not None:
                names = [k for k in out.names if k in allowed]
                out = _Batch(table=out.table.select(names)) if out.is_arrow else _Batch(cols={k: out.cols[k] for k in names})
        return out

    def _rows(self, spec, fn, cols: Columns, errors: list[ErrorRecord], st: StepStats) -> Columns:
        out = []
        names = list(cols)
        for row in to_rows(cols):
            try:
                result = fn(dict(row))
            except RowError as exc:
                errors.append(_record(row.get(SOURCE), spec.name, exc))
                st.rows_errored += 1
                continue
            if spec.kind is OpKind.FILTER:
                if result is True or (result is not False and not isinstance(result, str)):
                    out.append(row)
                else:
                    st.drops[result if isinstance(result, str) else spec.name] += 1
            elif spec.kind is OpKind.FLAT_MAP:
                out += [{**row, **child} for child in result]
                if not result:  # a row that yields none is dropped
                    st.drops[spec.name] += 1
            else:
                out.append(result)
        return from_rows(out, names) if out else {k: v[:0] for k, v in cols.items()}


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "struct<" + ", ".join(f"{k}: {_type_name(v)}" for k, v in value.items()) + ">"
    if isinstance(value, (list, tuple, np.ndarray)):
        return "list"
    return type(value).__name__


def _split_wrong_types(op: str, typed: dict, cols: Columns, errors: list[ErrorRecord], st: StepStats) -> Columns:
    """Send rows whose typed input columns hold a value of another kind to the errors; keep the rest.

    The op never sees such a value, so a list where text is expected is a row error, not a crash.
    """
    bad: dict[int, str] = {}
    for column, kind in typed.items():
        for i, value in enumerate(cols.get(column, ())):
            if i not in bad and not kind.accepts(value):
                bad[i] = f"column '{column}' holds {_type_name(value)}, expected {kind.value}"
    if not bad:
        return cols
    for i, reason in bad.items():
        errors.append(ErrorRecord(source=str(cols[SOURCE][i]) if SOURCE in cols else "", op=op, error_type="TypeError", reason=f"wrong input type: {reason}"))
    st.rows_errored += len(bad)
    return take(cols, np.array([i for i in range(length(cols)) if i not in bad], dtype=np.int64))


def _record(source: Any, op: str, exc: RowError) -> ErrorRecord:
    return ErrorRecord(source=str(source), op=op, error_type=type(exc.__cause__ or exc).__name__, reason=str(exc))


def _concat(parts: list[Columns], like: Columns) -> Columns:
    parts = [p for p in parts if length(p)]
    if not parts:
        return {k: v[:0] for k, v in like.items()}
    names = list(dict.fromkeys(k for p in parts for k in p))
    return from_rows([r for p in parts for r in to_rows(p)], names)
