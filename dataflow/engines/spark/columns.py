"""Translate parsed SQL expressions (``dataflow.ops.table.expr``) into Spark Columns.

The translation keeps the semantics ``dataflow.ops.table.evaluate`` has on Arrow: ``/`` divides as
doubles with NULL for a zero divisor, integer literals are 64-bit, failed casts are NULL.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from dataflow.ops.table import expr as E
from dataflow.ops.table.types import SPARK_TYPES

__all__ = ["aggregate_column", "col", "to_column"]


def col(name: str) -> Column:
    """A column by its exact name (dots and spaces are not parsed)."""
    return F.col("`" + name.replace("`", "``") + "`")


def _lit(value: Any) -> Column:
    if isinstance(value, bool) or value is None or isinstance(value, (float, str)):
        return F.lit(value)
    return F.lit(value).cast("bigint")


def _text(c: Column) -> Column:
    return c.cast("string")


_FUNCS = {
    "abs": lambda a: F.abs(a[0]),
    "ceil": lambda a: F.ceil(a[0]),
    "coalesce": lambda a: F.coalesce(*a),
    "concat": lambda a: F.concat(*[_text(x) for x in a]),
    "exp": lambda a: F.exp(a[0]),
    "floor": lambda a: F.floor(a[0]),
    "greatest": lambda a: F.greatest(*a),
    "least": lambda a: F.least(*a),
    "length": lambda a: F.length(a[0]),
    "ln": lambda a: F.ln(a[0]),
    "lower": lambda a: F.lower(a[0]),
    "power": lambda a: F.pow(a[0].cast("double"), a[1].cast("double")),
    "sqrt": lambda a: F.sqrt(a[0]),
    "trim": lambda a: F.trim(a[0]),
    "upper": lambda a: F.upper(a[0]),
}
_COMPARE = {"=": Column.__eq__, "!=": Column.__ne__, "<": Column.__lt__, "<=": Column.__le__, ">": Column.__gt__, ">=": Column.__ge__}


def _binary(op: str, a: Column, b: Column) -> Column:
    if op == "and":
        return a & b
    if op == "or":
        return a | b
    if op in _COMPARE:
        return _COMPARE[op](a, b)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return F.try_divide(a.cast("double"), b.cast("double"))
    if op == "%":
        return F.try_mod(a, b)
    return F.concat(_text(a), _text(b))


def to_column(node: E.Node, params: dict[str, Any] | None = None) -> Column:
    """Return the Spark Column computing ``node``.

    Raises:
        KeyError: a ``:var`` with no value in ``params``.
    """
    params = params or {}

    def go(n: E.Node) -> Column:
        if isinstance(n, E.Lit):
            return _lit(n.value)
        if isinstance(n, E.Col):
            return col(n.name)
        if isinstance(n, E.Param):
            if n.name not in params:
                raise KeyError(f"no value for ':{n.name}' (set it under vars)")
            return _lit(params[n.name])
        if isinstance(n, E.Unary):
            return ~go(n.arg) if n.op == "not" else -go(n.arg)
        if isinstance(n, E.Binary):
            return _binary(n.op, go(n.left), go(n.right))
        if isinstance(n, E.IsNull):
            return go(n.arg).isNotNull() if n.negated else go(n.arg).isNull()
        if isinstance(n, E.InList):
            arg = go(n.arg)
            out = None
            for item in n.items:
                eq = arg == go(item)
                out = eq if out is None else out | eq
            return ~out if n.negated else out
        if isinstance(n, E.Between):
            arg = go(n.arg)
            out = (arg >= go(n.low)) & (arg <= go(n.high))
            return ~out if n.negated else out
        if isinstance(n, E.Like):
            out = go(n.arg).like(n.pattern)
            return ~out if n.negated else out
        if isinstance(n, E.Case):
            out = None
            for cond, value in n.whens:
                out = F.when(go(cond), go(value)) if out is None else out.when(go(cond), go(value))
            return out.otherwise(go(n.otherwise)) if n.otherwise is not None else out
        if isinstance(n, E.Cast):
            return go(n.arg).try_cast(SPARK_TYPES[n.type])
        if isinstance(n, E.Func):
            if n.name == "round":
                digits = n.args[1].value if len(n.args) > 1 and isinstance(n.args[1], E.Lit) else 0
                return F.round(go(n.args[0]), int(digits))
            return _FUNCS[n.name]([go(a) for a in n.args])
        raise TypeError(f"cannot translate {type(n).__name__}")

    return go(node)


def aggregate_column(agg: E.Aggregation, params: dict[str, Any], default_x: str | None = None) -> Column:
    """Return the Spark aggregate Column of a parsed aggregation."""
    if agg.func == "count":
        return F.count(F.lit(1)) if agg.arg is None else F.count(to_column(agg.arg, params))
    arg = to_column(agg.arg, params)
    if agg.func == "slope":
        x = to_column(agg.x, params) if agg.x is not None else col(default_x)
        return F.regr_slope(arg.cast("double"), x.cast("double"))
    return {"sum": F.sum, "mean": F.avg, "min": F.min, "max": F.max, "stddev": F.stddev_samp}[agg.func](arg)
