"""Cast Arrow arrays with Spark's ``try_cast`` rules, so both engines agree on what is castable.

Strings are trimmed; integers take an optional sign and digits only; doubles take decimal and
scientific forms, ``inf``/``infinity``/``nan`` in any case; booleans take t/true/y/yes/1 and
f/false/n/no/0 in any case. Doubles cast to integers truncate toward zero, and to strings as Java
writes them (``-10.0``, ``1.0E-4``). A value that cannot be
cast becomes null; ``failed`` tells those apart from nulls in the input.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataflow.ops.table.types import ARROW_TYPES

__all__ = ["failed", "java_double", "try_cast"]

_INT_RE = r"^[+-]?[0-9]+$"
_FLOAT_RE = r"^[+-]?([0-9]+\.?[0-9]*([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))[dDfF]?$"
_TRUE = ("t", "true", "y", "yes", "1")
_FALSE = ("f", "false", "n", "no", "0")
_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}


def _from_string(arr: pa.Array, target: str) -> pa.Array:
    text = pc.utf8_trim_whitespace(arr)
    if target == "string":
        return arr
    if target == "boolean":
        low = pc.utf8_lower(text)
        true, false = pc.is_in(low, pa.array(_TRUE)), pc.is_in(low, pa.array(_FALSE))
        return pc.if_else(true, True, pc.if_else(false, pa.scalar(False), pa.scalar(None, pa.bool_())))
    if target in _RANGES:
        ok = pc.match_substring_regex(text, _INT_RE)
        lo, hi = _RANGES[target]
        values = [int(s) if good else None for s, good in zip(text.to_pylist(), ok.to_pylist())]
        return pa.array([v if v is not None and lo <= v <= hi else None for v in values], ARROW_TYPES[target])
    ok = pc.match_substring_regex(text, _FLOAT_RE)
    cleaned = pc.replace_substring_regex(pc.if_else(ok, text, pa.scalar(None, pa.string())), r"^(.*[0-9.])[dDfF]$", r"\1")
    cleaned = pc.replace_substring_regex(cleaned, r"(?i)^([+-]?)inf(inity)?$", r"\1inf")
    return pc.cast(cleaned, ARROW_TYPES[target])


def java_double(x: float) -> str:
    """A double as Spark (Java's ``Double.toString``) writes it: ``-10.0``, ``2.35``, ``1.0E-4``, ``1.2345E7``."""
    if not np.isfinite(x):
        return "NaN" if np.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(float(x))
    mantissa, exponent = np.format_float_scientific(x, unique=True, exp_digits=1).split("e")
    return f"{mantissa}{'0' if mantissa.endswith('.') else ''}E{int(exponent)}"


def _from_number(arr: pa.Array, target: str) -> pa.Array:
    if target == "string" and pa.types.is_floating(arr.type):
        return pa.array([None if v is None else java_double(v) for v in arr.to_pylist()], pa.string())
    if target == "string":
        return pc.cast(arr, pa.string())
    if target in _RANGES and pa.types.is_floating(arr.type):
        data = arr.to_numpy(zero_copy_only=False).astype(np.float64)
        lo, hi = _RANGES[target]
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(data) & (data >= lo) & (data < hi + 1.0)
            whole = np.trunc(np.where(ok, data, 0.0)).astype(np.int64)
        mask = ~ok | np.asarray(arr.is_null().to_numpy(zero_copy_only=False))
        return pa.array(whole, ARROW_TYPES[target], mask=mask)
    if target in _RANGES:
        lo, hi = _RANGES[target]
        wide = pc.cast(arr, pa.int64())
        inside = pc.and_(pc.greater_equal(wide, lo), pc.less_equal(wide, hi))
        return pc.cast(pc.if_else(inside, wide, pa.scalar(None, pa.int64())), ARROW_TYPES[target])
    if target == "boolean":
        return pc.not_equal(arr, 0)
    return pc.cast(arr, ARROW_TYPES[target])


def try_cast(arr: pa.Array | pa.ChunkedArray, target: str) -> pa.Array:
    """Cast ``arr`` to the type named ``target``; values that cannot be cast become null."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), ARROW_TYPES[target])
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return _from_string(arr.cast(pa.string()), target)
    if pa.types.is_boolean(arr.type):
        if target == "string":
            return pc.if_else(arr, "true", "false")
        return pc.cast(arr, ARROW_TYPES[target])
    if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
        return _from_number(arr, target)
    raise TypeError(f"cannot cast a {arr.type} column to {target}")


def failed(before: pa.Array, after: pa.Array) -> pa.Array:
    """A mask of values that were present before a cast and are null after it."""
    return pc.and_(pc.is_valid(before), pc.is_null(after))
