"""Translate parsed SQL expressions (``dataflow.ops.table.expr``) into Spark Columns.

The translation keeps the semantics ``dataflow.ops.table.evaluate`` has on Arrow: ``/`` divides as
doubles with NULL for a zero divisor, integer literals are 64-bit, failed casts are NULL. A tree
becomes SQL text rendered from its nodes (one parse in the JVM, where building Columns node by node
would cost a JVM call each).
"""
from __future__ import annotations

import math
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from dataflow.ops.table import expr as E
from dataflow.ops.table.types import SPARK_TYPES

__all__ = ["aggregate_column", "aggregate_sql", "col", "sql_literal", "sql_name", "to_column", "to_sql"]


def sql_name(name: str) -> str:
    """``name`` as a Spark SQL identifier (back-quoted: dots and spaces are not parsed)."""
    return "`" + name.replace("`", "``") + "`"


def col(name: str) -> Column:
    """A column by its exact name (dots and spaces are not parsed)."""
    return F.col(sql_name(name))


def sql_literal(value: Any) -> str:
    """A Python value as a Spark SQL literal: integers are BIGINT, floats DOUBLE, strings verbatim."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return f"{value}L"
    if isinstance(value, float):
        if math.isfinite(value):
            return f"{value!r}D"
        return "CAST('NaN' AS DOUBLE)" if math.isnan(value) else f"CAST('{'-' if value < 0 else ''}Infinity' AS DOUBLE)"
    # Spark SQL reads backslash escapes in string literals (spark.sql.parser.escapedStringLiterals off).
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _text(sql: str) -> str:
    return f"CAST({sql} AS STRING)"


_FUNCS = {
    "concat": lambda a: f"concat({', '.join(_text(x) for x in a)})",
    # try_: an unreadable time is NULL (as off ANSI mode), never a failed task.
    "unix_timestamp": lambda a: f"unix_timestamp(try_to_timestamp({_text(a[0])}, {a[1]}))",
    "power": lambda a: f"power(CAST({a[0]} AS DOUBLE), CAST({a[1]} AS DOUBLE))",
}
_PLAIN_FUNCS = {"abs", "ceil", "coalesce", "exp", "floor", "greatest", "least", "length", "ln", "lower", "sqrt", "trim", "upper"}
_OPS = {"and": "AND", "or": "OR", "=": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "+": "+", "-": "-", "*": "*"}


def _binary(op: str, a: str, b: str) -> str:
    if op in _OPS:
        return f"({a} {_OPS[op]} {b})"
    if op == "/":
        return f"try_divide(CAST({a} AS DOUBLE), CAST({b} AS DOUBLE))"
    if op == "%":
        return f"try_mod({a}, {b})"
    return f"concat({_text(a)}, {_text(b)})"  # ||


def _negate(sql: str, negated: bool) -> str:
    return f"(NOT {sql})" if negated else sql


def to_sql(node: E.Node, params: dict[str, Any] | None = None) -> str:
    """Return ``node`` as Spark SQL text (names quoted, literals escaped; from the parsed tree, never the user's text).

    Raises:
        KeyError: a ``:var`` with no value in ``params``.
    """
    params = params or {}

    def go(n: E.Node) -> str:
        if isinstance(n, E.Lit):
            return sql_literal(n.value)
        if isinstance(n, E.Col):
            return sql_name(n.name)
        if isinstance(n, E.Param):
            if n.name not in params:
                raise KeyError(f"no value for ':{n.name}' (set it under vars)")
            return sql_literal(params[n.name])
        if isinstance(n, E.Unary):
            return f"(NOT {go(n.arg)})" if n.op == "not" else f"(- {go(n.arg)})"
        if isinstance(n, E.Binary):
            return _binary(n.op, go(n.left), go(n.right))
        if isinstance(n, E.IsNull):
            return f"({go(n.arg)} IS {'NOT ' if n.negated else ''}NULL)"
        if isinstance(n, E.InList):
            arg = go(n.arg)
            return _negate("(" + " OR ".join(f"({arg} = {go(item)})" for item in n.items) + ")", n.negated)
        if isinstance(n, E.Between):
            arg = go(n.arg)
            return _negate(f"(({arg} >= {go(n.low)}) AND ({arg} <= {go(n.high)}))", n.negated)
        if isinstance(n, E.Like):
            return _negate(f"({go(n.arg)} LIKE {sql_literal(n.pattern)})", n.negated)
        if isinstance(n, E.Case):
            whens = " ".join(f"WHEN {go(cond)} THEN {go(value)}" for cond, value in n.whens)
            otherwise = f" ELSE {go(n.otherwise)}" if n.otherwise is not None else ""
            return f"(CASE {whens}{otherwise} END)"
        if isinstance(n, E.Cast):
            return f"try_cast({go(n.arg)} AS {SPARK_TYPES[n.type]})"
        if isinstance(n, E.Func):
            if n.name == "round":
                digits = n.args[1].value if len(n.args) > 1 and isinstance(n.args[1], E.Lit) else 0
                return f"round({go(n.args[0])}, {int(digits)})"
            args = [go(a) for a in n.args]
            if n.name in _PLAIN_FUNCS:
                return f"{n.name}({', '.join(args)})"
            return _FUNCS[n.name](args)
        raise TypeError(f"cannot translate {type(n).__name__}")

    return go(node)


def to_column(node: E.Node, params: dict[str, Any] | None = None) -> Column:
    """Return the Spark Column computing ``node`` (one SQL expression: one call into the JVM).

    Raises:
        KeyError: a ``:var`` with no value in ``params``.
    """
    return F.expr(to_sql(node, params))


_AGGREGATES = {"sum": "sum", "mean": "avg", "min": "min", "max": "max", "stddev": "stddev_samp"}
_PAIRED = {"slope": "regr_slope", "regr_count": "regr_count", "regr_sxx": "regr_sxx", "regr_sxy": "regr_sxy", "regr_syy": "regr_syy"}


def aggregate_sql(agg: E.Aggregation, params: dict[str, Any], default_x: str | None = None) -> str:
    """Return a parsed aggregation as Spark SQL text."""
    if agg.func == "count":
        return "count(1)" if agg.arg is None else f"count({to_sql(agg.arg, params)})"
    arg = to_sql(agg.arg, params)
    if agg.func in _PAIRED:
        x = to_sql(agg.x, params) if agg.x is not None else sql_name(default_x)
        return f"{_PAIRED[agg.func]}(CAST({arg} AS DOUBLE), CAST({x} AS DOUBLE))"
    if agg.func == "percentile_approx":
        return f"percentile_approx({arg}, {agg.fraction!r}D)"
    return f"{_AGGREGATES[agg.func]}({arg})"


def aggregate_column(agg: E.Aggregation, params: dict[str, Any], default_x: str | None = None) -> Column:
    """Return the Spark aggregate Column of a parsed aggregation."""
    return F.expr(aggregate_sql(agg, params, default_x))
