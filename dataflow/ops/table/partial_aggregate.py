"""Aggregations in two phases: a partial state per block, merged per group after the shuffle.

This is the map-side combine Spark runs before its shuffle: only the states (a few rows per block
and group) cross it, not the rows. An aggregation splits when every aggregate function in it has a
state that merges to Spark's answer: ``count``, ``count_if``, ``sum``, ``min`` and ``max`` (each
its own), ``avg``/``mean`` (a sum and a count) and ``percentile_approx`` with a constant accuracy
(its values, at most ``2 * accuracy`` of them a block and group: ``quantile_state``). Others
(``count(DISTINCT x)``, ``collect_list``, ``slope``, ``stddev_samp``, ``FILTER (WHERE ...)``, ...)
do not split: their rows cross the shuffle.

Examples:
    >>> from dataflow.ops.table.sql import parse_aggregation
    >>> split = two_phase({"n": parse_aggregation("count(*)"), "m": parse_aggregation("avg(x)")})
    >>> sorted(split.merge)
    ['m', 'n']
    >>> two_phase({"d": parse_aggregation("count(DISTINCT x)")}) is None
    True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from sqlglot import exp

from dataflow.columns import SOURCE
from dataflow.ops.table import duck
from dataflow.ops.table.quantile_state import DEFAULT_ACCURACY, QuantileState
from dataflow.ops.table.coercion import STRING, arrow_kinds, coerced
from dataflow.ops.table.sql import EXTRA_AGGREGATES, columns_of, duckdb_sql

__all__ = ["TwoPhase", "two_phase"]

_STATE = "__df_state__"
_MERGED = "__df_merged__"
_OWN = (exp.Count, exp.CountIf, exp.Sum, exp.Min, exp.Max)
_LOSSY = (exp.Filter, exp.Window, exp.Distinct)


@dataclass(frozen=True)
class TwoPhase:
    """An aggregation split in two: ``partial`` (state column -> DuckDB aggregate over rows), ``merge`` (output -> over states).

    ``quantiles``: the ``percentile_approx`` states, cut to their bound after each partial query
    (``compacted``) and resampled before the merge.
    """

    partial: dict[str, str]
    merge: dict[str, str]
    quantiles: tuple[QuantileState, ...] = ()
    aggregations: dict[str, exp.Expression] = field(default_factory=dict, compare=False, repr=False)
    params: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    reads: frozenset[str] = field(default=frozenset(), compare=False, repr=False)  # the columns the aggregations read
    _by_kinds: dict[tuple, TwoPhase] = field(default_factory=dict, compare=False, repr=False)

    def for_kinds(self, kinds: dict[str, str]) -> TwoPhase:
        """This split over input columns of ``kinds`` (``coercion.arrow_kinds``): a string column beside a number is cast, as Spark does."""
        key = tuple(sorted((c, k) for c, k in kinds.items() if c in self.reads and k == STRING))
        if not key:
            return self
        if key not in self._by_kinds:
            self._by_kinds[key] = two_phase(self.aggregations, self.params, kinds)
        return self._by_kinds[key]

    def holds_states(self, table: pa.Table) -> bool:
        """Whether ``table`` holds this split's partial states already (a checkpoint of them), not rows."""
        return all(name in table.column_names for name in self.partial)

    def partial_rows(self, table: pa.Table, keys: list[str]) -> pa.Table:
        """One state row per group of ``table`` (none for no rows); the group's smallest ``__source__`` kept."""
        extra = {SOURCE: f"min({duck.quoted(SOURCE)})"} if SOURCE in table.column_names else {}
        out = duck.aggregate(table, keys, self.for_kinds(arrow_kinds(table.schema)).partial, extra)
        return self.compacted(out) if table.num_rows else out.slice(0, 0)

    def compacted(self, states: pa.Table) -> pa.Table:
        """The state rows of a partial query with each ``percentile_approx`` state cut to its bound."""
        for q in self.quantiles:
            states = q.compacted(states)
        return states

    def merged_rows(self, states: pa.Table, keys: list[str]) -> pa.Table:
        """One row per group of the state rows: the keys, each aggregation, then ``__source__``."""
        extra = {SOURCE: f"min({duck.quoted(SOURCE)})"} if SOURCE in states.column_names else {}
        for q in self.quantiles:
            states = q.resampled(states, keys)
        return duck.aggregate(states, keys, self.merge, extra)


def _is_aggregate(node: exp.Expression) -> bool:
    return isinstance(node, exp.AggFunc) or (isinstance(node, exp.Anonymous) and node.name.lower() in EXTRA_AGGREGATES)


def _states(node: exp.Expression, first: int, params: dict[str, Any], kinds: dict[str, str] | None) -> tuple[dict[str, str], str, QuantileState | None] | None:
    """The state columns (numbered from ``first``) of one aggregate call, the DuckDB SQL that merges them and a
    ``percentile_approx``'s bound; None: no merge within Spark's answer (or a ``percentile_approx`` accuracy not constant)."""
    s = f"{_STATE}{first}"
    q = duck.quoted(s)
    if isinstance(node, _OWN):
        own = duckdb_sql(node.copy(), params, kinds=kinds)
        if isinstance(node, (exp.Count, exp.CountIf)):
            return {s: own}, f"CAST(sum({q}) AS BIGINT)", None
        return {s: own}, f"{type(node).__name__.lower()}({q})", None
    if isinstance(node, exp.Avg) or (isinstance(node, exp.Anonymous) and node.name.lower() == "mean" and len(node.expressions) == 1):
        x = duckdb_sql((node.this if isinstance(node, exp.Avg) else node.expressions[0]).copy(), params, kinds=kinds)
        c = f"{_STATE}{first + 1}"
        return {s: f"sum({x})", c: f"count({x})"}, f"CAST(sum({q}) AS DOUBLE) / nullif(sum({duck.quoted(c)}), 0)", None
    if isinstance(node, exp.ApproxQuantile):
        accuracy = _accuracy(node.args.get("accuracy"), params)
        if accuracy is None:
            return None
        x, p = duckdb_sql(node.this.copy(), params, kinds=kinds), duckdb_sql(node.args["quantile"].copy(), params)
        c = f"{_STATE}{first + 1}"
        state = QuantileState(values=s, count=c, points=2 * accuracy)
        return {s: f"list({x}) FILTER (WHERE ({x}) IS NOT NULL)", c: f"count({x})"}, f"list_aggregate(flatten(list({q})), 'quantile_disc', {p})", state
    return None


def _accuracy(node: exp.Expression | None, params: dict[str, Any]) -> int | None:
    """``percentile_approx``'s accuracy (a literal or a ``:var``; Spark's default when not given), None when it is neither."""
    if node is None:
        return DEFAULT_ACCURACY
    value = params.get(node.name) if isinstance(node, exp.Placeholder) else node.this if isinstance(node, exp.Literal) and not node.is_string else None
    try:
        return max(1, int(value)) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def two_phase(aggregations: dict[str, exp.Expression], params: dict[str, Any] | None = None, kinds: dict[str, str] | None = None) -> TwoPhase | None:
    """Split parsed aggregations (``sql.parse_aggregation``) into partial states and their merge; None when one does not split.

    Args:
        aggregations: Output name -> parsed Spark aggregation.
        params: Values for ``:var`` markers.
        kinds: The input columns' kinds, where known (``coercion``; ``TwoPhase.for_kinds`` gives the split for others).
    """
    given, params = aggregations, params or {}
    partial: dict[str, str] = {}
    merge: dict[str, str] = {}
    quantiles: list[QuantileState] = []
    for name, tree in aggregations.items():
        tree = coerced(tree.copy(), kinds)
        if any(isinstance(n, _LOSSY) for n in tree.walk()):
            return None
        calls = [n for n in tree.walk() if _is_aggregate(n)]
        if any(_is_aggregate(a) for c in calls for a in c.walk() if a is not c):
            return None  # an aggregate inside another: not an aggregation Spark accepts
        merged: dict[str, str] = {}
        for call in calls:
            split = _states(call, len(partial), params, kinds)
            if split is None:
                return None
            states, sql, quantile = split
            partial.update(states)
            quantiles.extend([quantile] if quantile else [])
            marker = f"{_MERGED}{len(merged)}"
            merged[duck.quoted(marker)] = sql
            placeholder = exp.column(marker, quoted=True)
            if call is tree:
                tree = placeholder
            else:
                call.replace(placeholder)
        text = duckdb_sql(tree, params)
        for marker, sql in merged.items():
            text = text.replace(marker, f"({sql})")
        merge[name] = text
    reads = frozenset(c for tree in given.values() for c in columns_of(tree))
    return TwoPhase(partial=partial, merge=merge, quantiles=tuple(quantiles), aggregations=given, params=params, reads=reads)
