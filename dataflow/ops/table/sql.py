"""Spark SQL expressions: parsed and checked with sqlglot's Spark dialect, rendered for Spark and for DuckDB.

The expression language is Spark SQL (https://spark.apache.org/docs/latest/api/sql/). A step's text
is parsed once when its params are validated; ``:name`` markers are bound as literals from the
step's ``vars`` by replacing nodes of the tree (never by pasting text). Spark runs the rendered
tree with ``F.expr``; Ray runs the same tree transpiled to DuckDB over each Arrow batch
(``dataflow.ops.table.duck``).

Rules both engines follow whatever the Spark session's ANSI flag: ``/``, ``%`` and ``div`` by zero
are NULL (Spark's ``try_divide``/``try_mod``), ``CAST`` is ``try_cast`` (a value that does not
convert is NULL), and so is the cast Spark makes of a string column beside a number
(``v >= 2``, ``sum(v)``: ``coercion``). ``slope(y, x)`` is ``regr_slope(y, x)``; in ``table.window_aggregate``,
``slope(y)`` regresses y on the window's time column. The params types that parse these texts are in
``dataflow.ops.table.sql_params``.

Examples:
    >>> sorted(columns_of(parse("rx_power_dbm < :floor AND meta.link LIKE 'sw1%'")))
    ['meta', 'rx_power_dbm']
"""
from __future__ import annotations

import difflib
import functools
import math
import re
from collections.abc import Mapping
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark

from dataflow.ops.table.coercion import coerced

__all__ = [
    "FRAMED",
    "ORDERED_WINDOW",
    "RANKING",
    "window_calls",
    "ExprError",
    "columns_of",
    "duckdb_sql",
    "is_count",
    "params_of",
    "parse",
    "parse_aggregation",
    "parse_window",
    "spark_sql",
]

#: dataflow's own helpers, on top of Spark's functions: name -> Spark's equivalent.
HELPERS = {"slope": "regr_slope"}
#: Spark functions sqlglot does not know by name, which DuckDB runs through a rewrite (``duck``).
SPARK_EXTRA = {
    "array_union", "arrays_overlap", "array_repeat", "bin", "bround", "btrim", "cardinality", "conv", "crc32", "date_part", "datepart", "e", "expm1", "find_in_set",
    "forall", "format_number", "get", "hash", "hypot", "isnotnull", "isnull", "json_array_length", "log1p", "make_date", "map_concat", "map_entries",
    "map_filter", "map_values", "mask", "mean", "now", "nullifzero", "octet_length", "pmod", "positive", "printf", "regexp", "timestamp_micros",
    "timestamp_millis", "timestamp_seconds", "transform_keys", "transform_values", "try_mod", "try_parse_url", "try_to_date", "try_to_timestamp", "url_decode",
    "url_encode", "weekday", "xxhash64", "zeroifnull", "zip_with",
}
#: The aggregates among ``HELPERS`` and ``SPARK_EXTRA``.
EXTRA_AGGREGATES = {"slope", "mean"}


class _Spark(Spark):
    """Spark's dialect, leaving a JSON path (``get_json_object``) the text it is: Spark's grammar reads it (``json_path``), not sqlglot's;
    Spark 3.4's ``to_timestamp_ltz`` and ``make_timestamp_ltz`` read as ``to_timestamp`` and ``make_timestamp`` (the same, where the
    session's timestamps are Spark's default TIMESTAMP_LTZ, as dataflow's are)."""

    class Parser(Spark.Parser):
        FUNCTIONS = {**Spark.Parser.FUNCTIONS, "TO_TIMESTAMP_LTZ": Spark.Parser.FUNCTIONS["TO_TIMESTAMP"],
                     "MAKE_TIMESTAMP_LTZ": Spark.Parser.FUNCTIONS["MAKE_TIMESTAMP"]}

    def to_json_path(self, path: exp.Expression | None) -> exp.Expression | None:
        return path


_KNOWN = sorted({*(n.lower() for n in _Spark.Parser.FUNCTIONS), *HELPERS, *SPARK_EXTRA})
#: Spark functions of TIMESTAMP_NTZ, a type Ray does not compute (a zone-less timestamp is Spark's TIMESTAMP there).
_NTZ = {"to_timestamp_ntz", "make_timestamp_ntz", "try_to_timestamp_ntz"}


class ExprError(ValueError):
    """An expression that does not parse or breaks a rule; says where (column) and what."""


def _position(node: exp.Expression) -> str:
    meta = node.meta if isinstance(node, exp.Identifier) else getattr(node.this, "meta", {}) if isinstance(node.this, exp.Expression) else {}
    return f"at column {meta['start'] + 1}: " if "start" in meta else ""


def _syntax(text: str) -> exp.Expression:
    if not str(text).strip():
        raise ExprError("empty expression")
    try:
        tree = sqlglot.parse_one(str(text), read=_Spark)
    except sqlglot.errors.ParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        col = err.get("col") and err["col"] - max(len(err.get("highlight") or ""), 1) + 1  # sqlglot gives the token's end
        where = f"at column {col}: " if col else ""
        what = re.sub(r"Required keyword: '\w+' missing for <class '[\w.]*\.(\w+)'>", r"incomplete \1 (an operand is missing)", str(err.get("description", exc)))
        raise ExprError(f"{where}{what} in {text!r}") from None
    except sqlglot.errors.TokenError as exc:
        raise ExprError(f"{exc} (an unterminated quote?) in {text!r}") from None
    if isinstance(tree, exp.Alias):
        raise ExprError(f"{_position(tree.args['alias'])}unexpected '{tree.alias}' after the expression in {text!r}")
    if isinstance(tree, (exp.Query, exp.Block, exp.Command, exp.DDL, exp.DML)) or tree.find(exp.Query):
        raise ExprError(f"expected one expression, not a statement or a subquery, in {text!r}")
    return tree


def _aggregates(tree: exp.Expression):
    for node in tree.find_all(exp.AggFunc, exp.Anonymous):
        if isinstance(node, exp.AggFunc) and not isinstance(node, RANKING) or isinstance(node, exp.Anonymous) and node.name.lower() in EXTRA_AGGREGATES:
            yield node


def _check_functions(tree: exp.Expression, text: str, generator: bool = False) -> None:
    for node in tree.find_all(exp.Anonymous):
        name = node.name.lower()
        if name == "json_tuple":
            if node is not tree or not generator:
                raise ExprError(f"json_tuple gives several columns: use it as a whole table.with_columns expression under a key "
                                f"naming them, '(a, b)': \"json_tuple(js, 'a', 'b')\" (got {text!r})")
        elif name in _NTZ:
            raise ExprError(f"{name} gives Spark's TIMESTAMP_NTZ, which dataflow does not compute on Ray; use {name.replace('_ntz', '')}"
                            f" (dataflow's session time zone is UTC: the same wall-clock time) in {text!r}")
        elif name not in HELPERS and name not in SPARK_EXTRA:
            close = difflib.get_close_matches(name, _KNOWN, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else " (see Spark SQL's function reference)"
            raise ExprError(f"unknown function '{name}' in {text!r}{hint}")
    for node in tree.find_all(exp.ArraySort):
        if isinstance(node.expression, exp.Lambda):  # DuckDB sorts by value only: Ray could not follow it
            raise ExprError(f"array_sort with a comparator is not supported (it must run alike on Ray); use array_sort(arr) or "
                            f"sort_array(arr, false), or sort on a computed key in {text!r}")
    if tree.find(exp.Window):
        raise ExprError(f"window functions (OVER) are not allowed here (use table.window_aggregate) in {text!r}")


@functools.lru_cache(maxsize=4096)
def parse(text: str, generator: bool = False) -> exp.Expression:
    """Parse a scalar Spark SQL expression and check its functions (returns a shared tree: copy before changing it).

    ``generator`` allows a whole ``json_tuple(...)`` (``table.with_columns``, ``dataflow.ops.table.json_tuple``).

    Raises:
        ExprError: the expression does not parse, uses an unknown function, or aggregates.
    """
    tree = _syntax(text)
    _check_functions(tree, text, generator)
    agg = next(_aggregates(tree), None)
    if agg is not None:
        raise ExprError(f"aggregate function '{agg.sql('spark').split('(')[0].lower()}' is not allowed here "
                        f"(use table.aggregate or table.window_aggregate) in {text!r}")
    return tree


def _check_calls(calls: list[exp.Expression], find, text: str, implicit_x: bool = False) -> None:
    """Each of ``calls`` (aggregate or window functions) holds no other (``find``), and a ``slope`` has 2 arguments (1 too: ``implicit_x``)."""
    for call in calls:
        if any(inner is not call for inner in find(call)):
            raise ExprError(f"aggregate and window functions cannot be nested in {call.key} in {text!r}")
        if isinstance(call, exp.Anonymous) and call.name.lower() == "slope" and not (1 if implicit_x else 2) <= len(call.expressions) <= 2:
            raise ExprError(f"'slope' takes {'1 to 2' if implicit_x else 2} argument(s), got {len(call.expressions)} in {text!r}")


@functools.lru_cache(maxsize=4096)
def parse_aggregation(text: str, *, implicit_x: bool = False) -> exp.Expression:
    """Parse an aggregation such as ``count(*)``, ``sum(crc) / count(*)`` or ``slope(rx, ts)``.

    Every column must be read inside an aggregate function.

    Args:
        text: The aggregation text.
        implicit_x: Allow ``slope(y)`` (the window's time column is x).

    Raises:
        ExprError: no aggregate, a column outside one, a nested aggregate, or a bad ``slope``.
    """
    tree = _syntax(text)
    _check_functions(tree, text)
    aggs = list(_aggregates(tree))
    if not aggs:
        raise ExprError(f"an aggregation needs an aggregate function (count(*), sum(x), avg(x), percentile_approx(x, 0.5), slope(y, x)...), got {text!r}")
    _check_calls(aggs, _aggregates, text, implicit_x)
    scopes = [a.parent if isinstance(a.parent, exp.Filter) else a for a in aggs]  # sum(x) FILTER (WHERE ...)
    for col in _columns(tree):
        if not _inside(col, scopes):
            raise ExprError(f"{_position(col)}column '{col.parts[0].name}' is read outside an aggregate function in {text!r}")
    return tree


#: The window functions of ``table.window_columns`` that follow a key's row order; the rest aggregate over its rows.
#: ``RANKING`` ones are no aggregation; ``FRAMED`` ones see all the key's rows in order.
RANKING = (exp.RowNumber, exp.Rank, exp.DenseRank, exp.PercentRank, exp.CumeDist, exp.Ntile, exp.NthValue)
FRAMED = (exp.First, exp.Last, exp.FirstValue, exp.LastValue, exp.NthValue)
ORDERED_WINDOW = (exp.Lag, exp.Lead, *RANKING, *FRAMED)


def window_calls(tree: exp.Expression):
    """The window functions of a ``table.window_columns`` column: its aggregations and ``ORDERED_WINDOW`` calls, once each."""
    seen: set[int] = set()
    for node in (*tree.find_all(*ORDERED_WINDOW), *_aggregates(tree)):
        if id(node) not in seen:
            seen.add(id(node))
            yield node


@functools.lru_cache(maxsize=4096)
def parse_window(text: str) -> exp.Expression:
    """Parse a ``table.window_columns`` column: an expression of window functions and the row's columns.

    Window functions are ``lag(x[, n])``, ``lead(x[, n])``, ``row_number()`` and aggregations:
    ``max(ts)``, ``rx - lag(rx)``, ``max(y) - min(y)``, ``x / sum(x)``.

    Raises:
        ExprError: no window function, one inside another, an offset that is not a positive integer literal, a bad ``slope``.
    """
    tree = _syntax(text)
    _check_functions(tree, text)
    calls = list(window_calls(tree))
    if not calls:
        raise ExprError(f"expected lag(x[, n]), lead(x[, n]), row_number() or an aggregation (count(*), max(x)...) in {text!r}")
    _check_calls(calls, window_calls, text)
    for call in calls:
        offset = call.args.get("offset") if isinstance(call, (exp.Lag, exp.Lead)) else None
        if offset is not None and not (isinstance(offset, exp.Literal) and not offset.is_string and offset.name.isdigit() and int(offset.name) > 0):
            raise ExprError(f"the offset of {call.key} must be a positive integer literal in {text!r}")
    return tree


def _inside(node: exp.Expression, ancestors: list[exp.Expression]) -> bool:
    parent = node.parent
    while parent is not None:
        if any(parent is a for a in ancestors):
            return True
        parent = parent.parent
    return False


def is_count(tree: exp.Expression) -> bool:
    """Whether an aggregation is a plain ``count(...)`` (0, not NULL, over no rows)."""
    return isinstance(tree, exp.Count)


def _columns(tree: exp.Expression):
    lambdas = {p.name for lam in tree.find_all(exp.Lambda) for p in lam.expressions}
    for col in tree.find_all(exp.Column):
        if not (col.name in lambdas and not col.table and col.find_ancestor(exp.Lambda)):
            yield col


def columns_of(tree: exp.Expression) -> frozenset[str]:
    """Return the column names an expression reads (``meta.lang`` reads ``meta``)."""
    return frozenset(c.parts[0].name for c in _columns(tree))


def params_of(tree: exp.Expression) -> frozenset[str]:
    """Return the ``:var`` names an expression uses."""
    return frozenset(p.name for p in tree.find_all(exp.Placeholder))


def _literal(value: Any) -> exp.Expression:
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):  # BIGINT, as a column of integers read from JSON or Parquet
        number = exp.Literal.number(value) if value >= 0 else exp.Neg(this=exp.Literal.number(-value))
        return exp.Cast(this=number, to=exp.DataType.build("bigint"))
    if isinstance(value, float):
        text = repr(value) if math.isfinite(value) else ("NaN" if math.isnan(value) else ("-" if value < 0 else "") + "Infinity")
        return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("double"))
    return exp.Literal.string(str(value))


def _bind(tree: exp.Expression, params: dict[str, Any] | None) -> exp.Expression:
    params = params or {}

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder):
            if node.name not in params:
                raise KeyError(f"no value for ':{node.name}' (set it under vars)")
            return _literal(params[node.name])  # atomic in SQL (a literal, NULL, a boolean, a CAST): no parentheses, so rewrites see a literal
        return node

    return tree.copy().transform(swap, copy=False)


def _slope_x(node: exp.Anonymous, default_x: str | None) -> list[exp.Expression]:
    args = list(node.expressions)
    if len(args) == 1:
        if default_x is None:
            raise ExprError("slope(y) needs an x (slope(y, x)) outside table.window_aggregate")
        args.append(exp.column(default_x, quoted=True))
    return args


def _java_format(node: exp.Expression) -> exp.Expression:
    """The pattern of a time function as Spark reads it: sqlglot keeps a literal one in its own form."""
    fmt = node.args["format"]
    return exp.Literal.string(Spark().generator().format_time(node)[1:-1].replace("\\'", "'")) if isinstance(fmt, exp.Literal) else fmt


def _to_spark(node: exp.Expression, default_x: str | None) -> exp.Expression:
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
        index = node.expressions[0]
        if node.args.get("offset") == 1:  # element_at: NULL out of bounds (and for a missing map key)
            return exp.Anonymous(this="try_element_at", expressions=[node.this, index])
        if not (isinstance(index, exp.Literal) and index.is_string):  # arr[i]; m['key'] stays as it is
            return exp.Anonymous(this="get", expressions=[node.this, index])
    if isinstance(node, exp.Div):
        return exp.Anonymous(this="try_divide", expressions=[node.this, node.expression])
    if isinstance(node, exp.Mod):
        return exp.Anonymous(this="try_mod", expressions=[node.this, node.expression])
    if isinstance(node, exp.IntDiv):  # x div 0 is NULL, as / and % are
        node.set("expression", exp.Nullif(this=node.expression, expression=exp.Literal.number(0)))
        return node
    if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast) or isinstance(node, exp.TryCast) and not node.args.get("safe"):
        return exp.TryCast(this=node.this, to=node.to, safe=True)
    if isinstance(node, exp.IgnoreNulls) and isinstance(node.this, (exp.First, exp.Last)):  # first(x, true): Spark's own form, also over a window
        return exp.Anonymous(this=node.this.key, expressions=[node.this.this, exp.true()])
    if isinstance(node, exp.Anonymous) and node.name.lower() == "pmod" and len(node.expressions) == 2:  # by zero: NULL, as % (ANSI fails the task)
        a, n = node.expressions
        return exp.Anonymous(this="pmod", expressions=[a, exp.Nullif(this=n, expression=exp.Literal.number(0))])
    if isinstance(node, exp.Anonymous) and node.name.lower() in HELPERS:
        return exp.Anonymous(this=HELPERS[node.name.lower()], expressions=_slope_x(node, default_x))
    if isinstance(node, exp.Elt):  # elt(n, a, b...): NULL outside 1..count, as element_at (ANSI fails the task)
        count = exp.Literal.number(len(node.expressions))
        return exp.Case(ifs=[exp.If(this=exp.Between(this=node.this.copy(), low=exp.Literal.number(1), high=count), true=node)])
    if isinstance(node, exp.StrToUnix) and node.args.get("format") is not None:  # unreadable text: NULL, never a failed task; a time is its own
        return exp.Anonymous(this="unix_timestamp", expressions=[exp.Anonymous(this="try_to_timestamp", expressions=[node.this, _java_format(node)])])
    if isinstance(node, exp.StrToTime) or isinstance(node, exp.TsOrDsToDate) and node.args.get("format") is not None:  # to_timestamp / to_date(s, pattern)
        name = "try_to_timestamp" if isinstance(node, exp.StrToTime) else "try_to_date"
        return exp.Anonymous(this=name, expressions=[node.this, _java_format(node)])
    return node


def bottom_up(tree: exp.Expression, fn) -> exp.Expression:
    """Replace every node by ``fn(node)``, children before their parent, so nested nodes are rewritten too
    (sqlglot's ``transform`` does not descend into a node it has just replaced)."""
    for node in reversed(list(tree.walk(bfs=False))):
        parent, key, index = node.parent, node.arg_key, node.index  # fn may wrap node, which re-parents it
        new = fn(node)
        if new is node:
            continue
        if node is tree:
            tree = new
        else:
            parent.set(key, new, index=index)
    return tree


def spark_sql(tree: exp.Expression, params: dict[str, Any] | None = None, default_x: str | None = None, kinds: Mapping[str, str] | None = None) -> str:
    """Return the expression as Spark SQL text, ``:var`` bound from ``params``; ``kinds``: the input columns' (``coercion``).

    Raises:
        KeyError: a ``:var`` with no value in ``params``.
    """
    return bottom_up(coerced(_bind(tree, params), kinds), lambda n: _to_spark(n, default_x)).sql(dialect="spark")


def duckdb_sql(tree: exp.Expression, params: dict[str, Any] | None = None, default_x: str | None = None, kinds: Mapping[str, str] | None = None) -> str:
    """Return the expression as DuckDB SQL text with Spark's semantics (see ``dataflow.ops.table.duck``); ``kinds``: the input columns' (``coercion``).

    Ops call it for every batch: the text is kept per (expression, values, ``default_x``, kinds of the columns it reads).

    Raises:
        KeyError: a ``:var`` with no value in ``params``.
    """
    # repr tells apart the values that compare equal (1, 1.0, True) and is hashable for lists.
    read = tuple(sorted((c, kinds[c]) for c in columns_of(tree) if c in kinds)) if kinds else ()
    key = (tree, default_x, tuple(sorted((k, repr(v)) for k, v in (params or {}).items())), read)
    text = _DUCKDB_TEXT.get(key)
    if text is None:
        if len(_DUCKDB_TEXT) >= 4096:
            _DUCKDB_TEXT.clear()
        text = _DUCKDB_TEXT[key] = _to_duckdb(tree, params, default_x, dict(read))
    return text


_DUCKDB_TEXT: dict[tuple, str] = {}


def _to_duckdb(tree: exp.Expression, params: dict[str, Any] | None, default_x: str | None, kinds: Mapping[str, str]) -> str:
    from dataflow.ops.table.duck import to_duckdb

    return to_duckdb(coerced(_bind(tree, params), kinds), default_x)
