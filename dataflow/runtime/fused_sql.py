"""A stage of SQL table steps and the partial states of the aggregation after it, as one DuckDB query per batch.

``table.filter_rows``, ``table.with_columns`` and ``table.select`` each run one or two DuckDB
queries per batch, and the aggregation's partial states (``TwoPhase.partial_rows``) one more, each
over the previous one's Arrow output. :class:`FusedAggregate` nests them into one query: the
rows between the steps are never built. It gives the same states and per-step counters as the
steps run one by one, and says so by returning None where it cannot:

- a stage with more than one filter (the rows kept after the first would not be counted), a
  step of another op, or one whose inputs are type-checked row by row: never fused;
- a batch of no rows, or a batch the query fails on (a DuckDB error: a cast, a missing column):
  run step by step, where the bad rows become row errors as before;
- a stage where a ``with_columns`` expression computes a floating-point column: step by step,
  since a NaN it computes reads as null in the next step's query but not inside one query.

``run_files`` runs the same query over local JSON-lines files that DuckDB scans itself
(``runtime.jsonl_scan``), with the same states and counters as over the files' Arrow reads.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from dataflow.columns import SOURCE
from dataflow.ops.table.coercion import arrow_kinds
from dataflow.runtime.stage import StepCall, StepStats

if TYPE_CHECKING:
    from dataflow.runtime.jsonl_scan import JsonlScan

__all__ = ["FUSABLE", "FusedAggregate", "fusable"]

FUSABLE = ("table.filter_rows", "table.select", "table.with_columns")
_ROWS = "__df_rows__"


def fusable(calls: list[StepCall]) -> bool:
    """Whether these steps can run as one query: SQL table steps only, at most one filter, no row-wise type checks."""
    return (bool(calls) and all(c.op.name in FUSABLE and not c.op.typed_inputs(c.params) for c in calls)
            and sum(c.op.name == "table.filter_rows" for c in calls) <= 1)


def _has_float(kind: pa.DataType) -> bool:
    if pa.types.is_floating(kind):
        return True
    if pa.types.is_struct(kind):
        return any(_has_float(f.type) for f in kind)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _has_float(kind.value_type)
    return pa.types.is_map(kind) and (_has_float(kind.key_type) or _has_float(kind.item_type))


class FusedAggregate:
    """The steps ``calls`` (``keeps``: per step, the columns later steps read, None: all) and the partial states of ``split`` by ``keys``."""

    def __init__(self, calls: list[StepCall], keeps: list[frozenset[str] | None], split, keys: list[str]):
        self.calls, self.keeps, self.split, self.keys = calls, keeps, split, keys
        self._sql: dict[pa.Schema, str | None] = {}
        self._keeps_source: dict[pa.Schema, bool] = {}

    def run(self, table: pa.Table) -> tuple[pa.Table, dict[int, StepStats], StepStats] | None:
        """The batch's partial states (``pa.table({})`` when no row is left), each step's counters and the partial step's; None: run it step by step."""
        import duckdb

        from dataflow.ops.table import duck

        if not table.num_rows:
            return None
        sql = self._sql_for(table.schema)
        if sql is None:
            return None
        start = time.perf_counter()
        try:
            states = duck.query(table, sql)
        except duckdb.Error:
            return None
        return self._counted(states, table.num_rows, time.perf_counter() - start)

    def run_files(self, scan: JsonlScan, schema: pa.Schema) -> tuple[pa.Table, dict[int, StepStats], StepStats] | None:
        """``run`` over local JSON-lines files, each line starting with ``{``, read as ``schema`` by DuckDB in the query (``jsonl_scan``).

        None: read them the Arrow way (a value of another kind, a bad line in any of them, steps
        whose query keeps no ``__source__``, which carries the kind check).
        """
        import duckdb

        from dataflow.ops.table import duck

        rows = sum(scan.lines)
        if not self.scans(schema) or not rows:
            return None
        sql = self._sql_for(schema)
        start = time.perf_counter()
        try:
            states = duck.run(f"WITH {duck.TABLE} AS NOT MATERIALIZED ({scan.sql(schema)}) {sql}")
        except (duckdb.Error, UnicodeDecodeError):  # NOTE: DuckDB may cut a message quoting the line inside a UTF-8 character
            return None
        i = states.column_names.index(SOURCE)  # each group's smallest line key: its smallest source
        states = states.set_column(i, SOURCE, scan.sources(states.column(i)))
        return self._counted(states, rows, time.perf_counter() - start)

    def scans(self, schema: pa.Schema) -> bool:
        """Whether ``run_files`` can take files read as ``schema`` at all: its query builds and keeps ``__source__``, which carries the kind check."""
        return self._sql_for(schema) is not None and self._keeps_source[schema]

    def _sql_for(self, schema: pa.Schema) -> str | None:
        if schema not in self._sql:
            self._sql[schema] = self._query(schema.empty_table())
        return self._sql[schema]

    def _counted(self, states: pa.Table, rows: int, seconds: float) -> tuple[pa.Table, dict[int, StepStats], StepStats]:
        kept = int(pc.sum(states.column(_ROWS)).as_py() or 0)
        states = self.split.compacted(states.drop_columns([_ROWS])) if kept else pa.table({})
        share = seconds / (len(self.calls) + 1)
        stats = {}
        for call in self.calls:
            st = stats[call.index] = StepStats(rows_in=rows, seconds=share)
            if call.op.name == "table.filter_rows":
                st.drops[call.op.name] = rows - kept
                rows = kept
            st.rows_out = rows
        return states, stats, StepStats(rows_in=kept, seconds=share)

    def _query(self, empty: pa.Table) -> str | None:
        """The fused query for batches of ``empty``'s schema; None when a step computes a float column or its SQL cannot be built."""
        import duckdb

        from dataflow.ops.table import duck

        names, sql = list(empty.column_names), duck.TABLE

        def kinds() -> dict[str, str]:  # of the columns so far (``coercion``)
            return arrow_kinds(duck.query(empty, f"SELECT * FROM {sql}").schema)

        try:
            for call, keep in zip(self.calls, self.keeps):
                p = call.params
                if call.op.name == "table.filter_rows":
                    from dataflow.ops.table.sql import duckdb_sql, parse

                    sql = f"(SELECT * FROM {sql} WHERE (({duckdb_sql(parse(p.where), p.vars, kinds=kinds())}) IS TRUE))"
                elif call.op.name == "table.with_columns":
                    from dataflow.ops.table.json_tuple import HIDDEN, duckdb_columns

                    columns = duckdb_columns(p.columns, p.vars, kinds())
                    inner, after = duck.with_columns_sql(names, columns, sql)
                    computed = duck.query(empty, f"SELECT {', '.join(duck.quoted(n) for n in columns)} FROM ({inner})")
                    if any(_has_float(f.type) for f in computed.schema):
                        return None
                    hidden = [n for n in after if n.startswith(HIDDEN) and n not in names]
                    names = [n for n in after if n not in hidden]
                    sql = f"({inner})" if not hidden else f"(SELECT * EXCLUDE ({', '.join(duck.quoted(n) for n in hidden)}) FROM ({inner}))"
                else:  # table.select
                    names = list(dict.fromkeys([*p.columns, *([SOURCE] if SOURCE in names else [])]))
                    sql = f"(SELECT {', '.join(duck.quoted(n) for n in names)} FROM {sql})"
                if keep is not None and any(n not in keep for n in names):
                    names = [n for n in names if n in keep]
                    sql = f"(SELECT {', '.join(duck.quoted(n) for n in names)} FROM {sql})"
            self._keeps_source[empty.schema] = SOURCE in names
            extra = {SOURCE: f"min({duck.quoted(SOURCE)})"} if SOURCE in names else {}
            sql = duck.aggregate_sql(self.keys, {**self.split.for_kinds(kinds()).partial, **extra, _ROWS: "count(*)"}, sql)
            duck.query(empty, sql)  # binds: a missing column or a type error shows here, once
        except (duckdb.Error, ValueError, KeyError):
            return None
        return sql
