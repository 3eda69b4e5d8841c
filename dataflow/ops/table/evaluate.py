"""Evaluate parsed expressions over a pyarrow Table with SQL (Spark) semantics.

Nulls follow three-valued logic. On Ray, null numbers travel between steps as NaN (the numpy batch
form cannot tell them apart), so a float NaN read from a column counts as null here.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataflow.ops.table import expr as E
from dataflow.ops.table.casting import try_cast
from dataflow.ops.table.types import strptime_format

__all__ = ["column", "evaluate", "evaluate_mask"]

Value = pa.Array


def column(table: pa.Table, name: str) -> pa.Array:
    """Return a column as one array; float NaN becomes null.

    Raises:
        KeyError: no such column, naming the columns there are.
    """
    if name not in table.column_names:
        have = ", ".join(c for c in table.column_names if not c.startswith("__"))
        raise KeyError(f"no column '{name}' (have: {have})")
    arr = table.column(name).combine_chunks()
    if pa.types.is_floating(arr.type):
        arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, arr.type), arr)
    return arr


def _literal(value: Any, n: int) -> pa.Array:
    if value is None:
        return pa.nulls(n)
    return pa.repeat(pa.scalar(value), n)


def _numeric(*arrays: pa.Array) -> bool:
    return all(pa.types.is_integer(a.type) or pa.types.is_floating(a.type) or pa.types.is_null(a.type) for a in arrays)


def _unify(arrays: list[pa.Array]) -> list[pa.Array]:
    """Cast to one common type: numbers widen to double when mixed, nulls take the others' type."""
    types = {a.type for a in arrays if not pa.types.is_null(a.type)}
    if not types:
        return arrays
    if len(types) > 1 and all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in types):
        target = pa.float64() if any(pa.types.is_floating(t) for t in types) else pa.int64()
    elif len(types) == 1:
        target = types.pop()
    else:
        raise TypeError(f"cannot combine values of types {', '.join(sorted(map(str, types)))}")
    return [a if a.type == target else a.cast(target) for a in arrays]


def _to_float(a: pa.Array) -> pa.Array:
    return a.cast(pa.float64())


def _remainder(a: pa.Array, b: pa.Array) -> pa.Array:
    floats = pa.types.is_floating(a.type) or pa.types.is_floating(b.type)
    dtype = np.float64 if floats else np.int64
    x = a.cast(pa.float64() if floats else pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(dtype)
    y = b.cast(pa.float64() if floats else pa.int64()).fill_null(1).to_numpy(zero_copy_only=False).astype(dtype)
    zero = y == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.fmod(x, np.where(zero, 1, y))
    mask = zero | np.asarray(a.is_null().to_numpy(zero_copy_only=False)) | np.asarray(b.is_null().to_numpy(zero_copy_only=False))
    return pa.array(out, mask=mask)


def _arith(op: str, a: pa.Array, b: pa.Array) -> pa.Array:
    if op == "||":
        parts = [x if pa.types.is_string(x.type) else try_cast(x, "string") for x in (a, b)]
        return pc.binary_join_element_wise(*parts, "", null_handling="emit_null")
    if not _numeric(a, b):
        raise TypeError(f"'{op}' needs numbers, got {a.type} and {b.type}")
    a, b = _unify([a, b])
    if pa.types.is_null(a.type):
        return pa.nulls(len(a), pa.float64() if op == "/" else pa.int64())
    if op == "+":
        return pc.add_checked(a, b)
    if op == "-":
        return pc.subtract_checked(a, b)
    if op == "*":
        return pc.multiply_checked(a, b)
    if op == "/":
        fa, fb = _to_float(a), _to_float(b)
        return pc.if_else(pc.equal(fb, 0.0), pa.scalar(None, pa.float64()), pc.divide(fa, fb))
    return _remainder(a, b)


_COMPARE = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}


def _compare(op: str, a: pa.Array, b: pa.Array) -> pa.Array:
    if pa.types.is_null(a.type) or pa.types.is_null(b.type):
        return pa.nulls(len(a), pa.bool_())
    if not (_numeric(a, b) or a.type == b.type):
        raise TypeError(f"cannot compare {a.type} with {b.type} (use CAST)")
    a, b = _unify([a, b])
    return _COMPARE[op](a, b)


def _bool(a: pa.Array, what: str) -> pa.Array:
    if pa.types.is_null(a.type):
        return a.cast(pa.bool_())
    if not pa.types.is_boolean(a.type):
        raise TypeError(f"{what} needs a boolean, got {a.type}")
    return a


def _round(args: list[pa.Array]) -> pa.Array:
    x = args[0]
    digits = args[1][0].as_py() if len(args) > 1 and len(args[1]) else 0
    if pa.types.is_integer(x.type) and digits >= 0:
        return x
    return pc.round(x, ndigits=digits, round_mode="half_towards_infinity")


def _floor_ceil(fn, x: pa.Array) -> pa.Array:
    if pa.types.is_integer(x.type):
        return x.cast(pa.int64())
    return fn(x).cast(pa.int64())


def _ln(x: pa.Array) -> pa.Array:
    f = _to_float(x)
    positive = pc.greater(f, 0.0)
    return pc.if_else(positive, pc.ln(pc.if_else(positive, f, 1.0)), pa.scalar(None, pa.float64()))


def _string(x: pa.Array, fn) -> pa.Array:
    if pa.types.is_null(x.type):
        return x.cast(pa.string())
    if not pa.types.is_string(x.type):
        raise TypeError(f"needs a string, got {x.type}")
    return fn(x)


def _unix_timestamp(text: pa.Array, fmt: str) -> pa.Array:
    """Seconds since the epoch of each string read with ``fmt``; a time without an offset is UTC; unreadable: null."""
    directives = strptime_format(fmt)
    out = []
    for value in _string(text, lambda s: s).to_pylist():
        try:
            stamp = datetime.strptime(value, directives) if value is not None else None
        except ValueError:
            stamp = None
        if stamp is not None and stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)
        out.append(int(stamp.timestamp()) if stamp is not None else None)
    return pa.array(out, pa.int64())


def _call(name: str, args: list[pa.Array]) -> pa.Array:
    if name == "abs":
        return pc.abs_checked(args[0])
    if name == "round":
        return _round(args)
    if name == "floor":
        return _floor_ceil(pc.floor, args[0])
    if name == "ceil":
        return _floor_ceil(pc.ceil, args[0])
    if name == "sqrt":
        return pc.sqrt(_to_float(args[0]))
    if name == "exp":
        return pc.exp(_to_float(args[0]))
    if name == "ln":
        return _ln(args[0])
    if name == "power":
        return pc.power(_to_float(args[0]), _to_float(args[1]))
    if name == "lower":
        return _string(args[0], pc.utf8_lower)
    if name == "upper":
        return _string(args[0], pc.utf8_upper)
    if name == "length":
        return _string(args[0], pc.utf8_length).cast(pa.int32())
    if name == "trim":
        return _string(args[0], lambda s: pc.utf8_trim(s, characters=" "))
    if name == "coalesce":
        return pc.coalesce(*_unify(args))
    if name in ("greatest", "least") and all(pa.types.is_null(a.type) for a in args):
        return pa.nulls(len(args[0]))
    if name == "greatest":
        return pc.max_element_wise(*_unify(args), skip_nulls=True)
    if name == "least":
        return pc.min_element_wise(*_unify(args), skip_nulls=True)
    if name == "concat":
        parts = [a if pa.types.is_string(a.type) else try_cast(a, "string") for a in args]
        return pc.binary_join_element_wise(*parts, "", null_handling="emit_null")
    if name == "unix_timestamp":
        return _unix_timestamp(args[0], args[1][0].as_py() if len(args[1]) else "")
    raise KeyError(name)


def _case(node: E.Case, table: pa.Table, params: dict[str, Any]) -> pa.Array:
    conds = [_bool(evaluate(c, table, params), "CASE WHEN").fill_null(False) for c, _ in node.whens]
    values = [evaluate(v, table, params) for _, v in node.whens]
    otherwise = evaluate(node.otherwise, table, params) if node.otherwise is not None else pa.nulls(table.num_rows)
    *values, otherwise = _unify([*values, otherwise])
    if all(pa.types.is_null(v.type) for v in values):
        return otherwise
    out = otherwise
    for cond, value in reversed(list(zip(conds, values))):
        out = pc.if_else(cond, value, out)
    return out


def evaluate(node: E.Node, table: pa.Table, params: dict[str, Any] | None = None) -> pa.Array:
    """Return the values of ``node`` for every row of ``table``.

    Args:
        node: A parsed expression (``expr.parse``).
        table: The rows.
        params: Values for ``:var`` markers.

    Raises:
        KeyError: a column or ``:var`` that does not exist.
        TypeError: operands of types the operator does not take.
    """
    params = params or {}
    n = table.num_rows
    if isinstance(node, E.Lit):
        return _literal(node.value, n)
    if isinstance(node, E.Col):
        return column(table, node.name)
    if isinstance(node, E.Param):
        if node.name not in params:
            raise KeyError(f"no value for ':{node.name}' (set it under vars)")
        return _literal(params[node.name], n)
    if isinstance(node, E.Unary):
        arg = evaluate(node.arg, table, params)
        if node.op == "not":
            return pc.invert(_bool(arg, "NOT"))
        if not _numeric(arg):
            raise TypeError(f"unary '-' needs a number, got {arg.type}")
        return pc.negate_checked(arg) if not pa.types.is_null(arg.type) else arg
    if isinstance(node, E.Binary):
        left, right = evaluate(node.left, table, params), evaluate(node.right, table, params)
        if node.op == "and":
            return pc.and_kleene(_bool(left, "AND"), _bool(right, "AND"))
        if node.op == "or":
            return pc.or_kleene(_bool(left, "OR"), _bool(right, "OR"))
        if node.op in _COMPARE:
            return _compare(node.op, left, right)
        return _arith(node.op, left, right)
    if isinstance(node, E.IsNull):
        valid = pc.is_valid(evaluate(node.arg, table, params))
        return valid if node.negated else pc.invert(valid)
    if isinstance(node, E.InList):
        arg = evaluate(node.arg, table, params)
        out = None
        for item in node.items:
            eq = _compare("=", arg, evaluate(item, table, params))
            out = eq if out is None else pc.or_kleene(out, eq)
        return pc.invert(out) if node.negated else out
    if isinstance(node, E.Between):
        arg = evaluate(node.arg, table, params)
        out = pc.and_kleene(_compare(">=", arg, evaluate(node.low, table, params)), _compare("<=", arg, evaluate(node.high, table, params)))
        return pc.invert(out) if node.negated else out
    if isinstance(node, E.Like):
        arg = _string(evaluate(node.arg, table, params), lambda s: s)
        out = pc.match_like(arg, node.pattern)
        return pc.invert(out) if node.negated else out
    if isinstance(node, E.Case):
        return _case(node, table, params)
    if isinstance(node, E.Cast):
        return try_cast(evaluate(node.arg, table, params), node.type)
    if isinstance(node, E.Func):
        return _call(node.name, [evaluate(a, table, params) for a in node.args])
    raise TypeError(f"cannot evaluate {type(node).__name__}")


def evaluate_mask(node: E.Node, table: pa.Table, params: dict[str, Any] | None = None) -> np.ndarray:
    """Return a keep mask: rows where the boolean expression is true (null counts as false)."""
    result = _bool(evaluate(node, table, params), "a filter")
    return np.asarray(result.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
