"""Spark's array and map functions that DuckDB lacks or computes otherwise, as DuckDB nodes with Spark's result.

Called by ``duck_functions.rewrite``. A map's lambdas (``transform_values``, ``transform_keys``,
``map_filter``) run over its entries; a function whose DuckDB name depends on its argument's type
(``size`` of a map or an array, ``reverse`` of text or an array) calls a macro overloaded by type.
``str_to_map`` and ``split`` with a limit need literal delimiters (their regular expressions are
built into the query); with others DuckDB's error stops the step, as for any function it lacks.
"""
from __future__ import annotations

from sqlglot import exp

from dataflow.ops.table.duck_nodes import any_null as _unknown, call as _fn, number as _n

__all__ = ["MACROS", "by_name", "rewrite"]

#: DuckDB macros the rewrites call, overloaded by their argument's type (a map, text; anything else: a list or binary).
MACROS = """
CREATE MACRO __df_size(x MAP(VARCHAR, VARCHAR)) AS cardinality(x), (x) AS len(x);
CREATE MACRO __df_reverse(x VARCHAR) AS reverse(x), (x) AS list_reverse(x);
CREATE MACRO __df_base64(x VARCHAR) AS to_base64(encode(x)), (x) AS to_base64(x);
CREATE MACRO __df_binary(x VARCHAR) AS encode(x), (x) AS CAST(x AS BLOB);
"""

_ENTRY = "__df_entry"


def _bound(lam: exp.Expression, values: list[exp.Expression]) -> exp.Expression:
    """The body of the lambda ``lam`` with each of its arguments replaced by the node in ``values``."""
    from dataflow.ops.table.duck_functions import substitute

    return substitute(lam.this, {arg.name: lambda _, v=value: v.copy() for arg, value in zip(lam.expressions, values)})


def _entries(m: exp.Expression, over) -> exp.Expression:
    """``over(list_function, lambda)`` applied to the entries of the map ``m``, rebuilt as a map."""
    entry = exp.to_identifier(_ENTRY)
    return _fn("map_from_entries", over(_fn("map_entries", m), entry))


def _field(name: str) -> exp.Expression:
    return exp.Dot(this=exp.column(_ENTRY), expression=exp.to_identifier(name))


def _map_lambda(name: str, m: exp.Expression, lam: exp.Lambda) -> exp.Expression:
    """``transform_values`` / ``transform_keys`` / ``map_filter`` of the map ``m`` by the two-argument lambda ``lam`` (key, value)."""
    value = _bound(lam, [_field("key"), _field("value")])
    if name == "map_filter":
        return _entries(m, lambda entries, e: _fn("list_filter", entries, exp.Lambda(this=value, expressions=[e])))
    key, val = (value, _field("value")) if name == "transform_keys" else (_field("key"), value)
    pair = _fn("struct_pack", exp.PropertyEQ(this=exp.to_identifier("key"), expression=key), exp.PropertyEQ(this=exp.to_identifier("value"), expression=val))
    return _entries(m, lambda entries, e: _fn("list_transform", entries, exp.Lambda(this=pair, expressions=[e])))


def _zip_with(a: exp.Expression, b: exp.Expression, lam: exp.Lambda) -> exp.Expression:
    """``zip_with(a, b, (x, y) -> f)``: f over the pairs, the shorter array padded with NULLs; NULL where an array is."""
    i = exp.to_identifier("__df_i")
    at = [exp.Bracket(this=arr.copy(), expressions=[exp.Add(this=exp.column(i.copy()), expression=_n(1))], offset=1) for arr in (a, b)]
    each = _fn("list_transform", _fn("range", _fn("greatest", _fn("len", a.copy()), _fn("len", b.copy()))), exp.Lambda(this=_bound(lam, at), expressions=[i]))
    return exp.Case(ifs=[exp.If(this=_unknown(a, b), true=exp.Null())], default=each)


def _arrays_zip(arrays: list[exp.Expression]) -> exp.Expression:
    """``arrays_zip(a, b, ...)``: structs of the arrays' elements by position (the shorter padded with NULLs), each field
    named as Spark names it (a column's or a struct field's name, else its position from 0); NULL where an array is."""
    i = exp.to_identifier("__df_i")
    names = [a.name if isinstance(a, (exp.Column, exp.Dot)) and a.name else str(k) for k, a in enumerate(arrays)]
    fields = [exp.PropertyEQ(this=exp.to_identifier(n, quoted=True), expression=exp.Bracket(this=a.copy(), expressions=[exp.Add(this=exp.column(i.copy()), expression=_n(1))], offset=1))
              for n, a in zip(names, arrays)]
    size = _fn("greatest", *[_fn("len", a.copy()) for a in arrays])
    zipped = _fn("list_transform", _fn("range", size), exp.Lambda(this=_fn("struct_pack", *fields), expressions=[i]))
    return exp.Case(ifs=[exp.If(this=_unknown(*arrays), true=exp.Null())], default=zipped)


def _array_union(a: exp.Expression, b: exp.Expression) -> exp.Expression:
    """The distinct elements of ``a`` then ``b``, in order, one NULL kept; NULL where an array is."""
    both = _fn("list_concat", a.copy(), b.copy())
    x, i = exp.to_identifier("__df_x"), exp.to_identifier("__df_i")
    first = exp.EQ(this=_fn("list_position", both.copy(), exp.column(x)), expression=exp.column(i))
    return exp.Case(ifs=[exp.If(this=_unknown(a, b), true=exp.Null())], default=_fn("list_filter", both, exp.Lambda(this=first, expressions=[x, i])))


def _map_concat(maps: list[exp.Expression]) -> exp.Expression:
    """The maps' entries in one map; NULL where one is; an error on a key in two (Spark's default ``mapKeyDedupPolicy``)."""
    if len(maps) == 1:
        return maps[0]
    joined = _fn("map_concat", *[m.copy() for m in maps])
    count = _fn("cardinality", maps[0].copy())
    for m in maps[1:]:
        count = exp.Add(this=count, expression=_fn("cardinality", m.copy()))
    return exp.Case(ifs=[exp.If(this=_unknown(*maps), true=exp.Null()),
                         exp.If(this=exp.LT(this=_fn("cardinality", joined.copy()), expression=count),
                                true=_fn("error", exp.Literal.string("map_concat: a key in two maps (Spark: DUPLICATED_MAP_KEY)")))],
                    default=joined)


def _literal_regex(node: exp.Expression | None) -> str | None:
    return node.name if isinstance(node, exp.Literal) and node.is_string else None


def _str_to_map(text: exp.Expression, pairs: exp.Expression, kv: exp.Expression) -> exp.Expression | None:
    """``str_to_map``: ``text`` split at the regex ``pairs``, each piece at its first match of ``kv`` (no match: a NULL value)."""
    pair_re, kv_re = _literal_regex(pairs), _literal_regex(kv)
    if pair_re is None or kv_re is None:
        return None
    p = exp.column("__df_p")
    split = _fn("regexp_matches", p.copy(), exp.Literal.string(kv_re))
    key = exp.Case(ifs=[exp.If(this=split, true=_fn("regexp_extract", p.copy(), exp.Literal.string(f"(?s)^(.*?)(?:{kv_re})"), _n(1)))], default=p.copy())
    value = exp.Case(ifs=[exp.If(this=split.copy(), true=_fn("regexp_extract", p.copy(), exp.Literal.string(f"(?s)^.*?(?:{kv_re})(.*)$"), _n(1)))])
    pair = _fn("struct_pack", exp.PropertyEQ(this=exp.to_identifier("key"), expression=key), exp.PropertyEQ(this=exp.to_identifier("value"), expression=value))
    entries = _fn("list_transform", _fn("regexp_split_to_array", text, exp.Literal.string(pair_re)), exp.Lambda(this=pair, expressions=[exp.to_identifier("__df_p")]))
    return _fn("map_from_entries", entries)


def _split(text: exp.Expression, regex: exp.Expression, limit: exp.Expression) -> exp.Expression | None:
    """``split(text, regex, limit)``: at most ``limit`` pieces, the last holding the rest (``limit`` <= 0: all of them)."""
    pattern, number = _literal_regex(regex), limit.this if isinstance(limit, exp.Neg) else limit
    if pattern is None or not (isinstance(number, exp.Literal) and number.is_int):
        return None
    n = -int(number.name) if isinstance(limit, exp.Neg) else int(number.name)
    parts = exp.RegexpSplit(this=text, expression=regex)
    if n <= 0:
        return parts
    if n == 1:
        return exp.Case(ifs=[exp.If(this=_unknown(text), true=exp.Null())], default=exp.Array(expressions=[text.copy()]))
    skip = f"(?:.*?(?:{pattern}))" if pattern else "."  # an empty regex splits between characters
    rest = _fn("regexp_extract", text.copy(), exp.Literal.string(f"(?s)^{skip}{{{n - 1}}}(.*)$"), _n(1))
    head = exp.Bracket(this=parts.copy(), expressions=[exp.Slice(this=_n(1), expression=_n(n - 1))], offset=1)
    return exp.Case(ifs=[exp.If(this=_unknown(text), true=exp.Null()), exp.If(this=exp.LTE(this=_fn("len", parts.copy()), expression=_n(n)), true=parts)],
                    default=_fn("list_concat", head, exp.Array(expressions=[rest])))


def by_name(name: str, args: list[exp.Expression]) -> exp.Expression | None:
    """The array and map functions sqlglot does not know (``sql.SPARK_EXTRA``) as DuckDB nodes; None for the others."""
    if name == "cardinality":
        return _fn("__df_size" if _typed(args[0]) else "len", *args)
    if name == "get":  # 0-based, NULL outside the array
        return exp.Case(ifs=[exp.If(this=exp.GTE(this=args[1].copy(), expression=_n(0)),
                                    true=exp.Bracket(this=args[0], expressions=[exp.Add(this=args[1], expression=_n(1))], offset=1))])
    if name == "array_union":
        return _array_union(*args)
    if name == "map_concat" and args:
        return _map_concat(args)
    if name in ("transform_values", "transform_keys", "map_filter") and len(args) == 2 and isinstance(args[1], exp.Lambda):
        return _map_lambda(name, *args)
    if name == "zip_with" and len(args) == 3 and isinstance(args[2], exp.Lambda):
        return _zip_with(*args)
    return None


def _typed(arg: exp.Expression) -> bool:
    """Whether DuckDB knows ``arg``'s type when it picks a macro's overload: not for an aggregate or a window (it takes the first overload, and fails)."""
    return arg.find(exp.AggFunc, exp.Window) is None


def _overloaded(node: exp.Expression, macro: str) -> exp.Expression | None:
    return _fn(macro, node.this) if _typed(node.this) else None


def rewrite(node: exp.Expression) -> exp.Expression | None:
    """The array and map nodes of sqlglot's that DuckDB computes otherwise, rewritten; None for the others.

    Over an aggregate or a window (``size(collect_set(x))``) the type-overloaded macros cannot be
    used: ``size`` counts a list, ``reverse`` reverses a collected list or else text, as DuckDB's own functions.
    """
    if isinstance(node, exp.ArraySize):
        return _overloaded(node, "__df_size")
    if isinstance(node, exp.Reverse):
        if not _typed(node.this) and node.this.find(exp.ArrayAgg, exp.ArrayUniqueAgg):
            return _fn("list_reverse", node.this)
        return _overloaded(node, "__df_reverse")
    if isinstance(node, exp.ToBase64):
        return _overloaded(node, "__df_base64")
    if isinstance(node, (exp.Cast, exp.TryCast)) and node.to.is_type(exp.DataType.Type.BINARY, exp.DataType.Type.VARBINARY):
        return _overloaded(node, "__df_binary")  # text as its UTF-8 bytes (DuckDB's cast reads escapes, and fails on other characters)
    if isinstance(node, exp.ArraysZip) and node.expressions:
        return _arrays_zip(list(node.expressions))
    if isinstance(node, exp.MapContainsKey):  # NULL for a NULL map
        return _fn("list_contains", _fn("map_keys", node.this), node.args["key"])
    if isinstance(node, exp.StrToMap):
        return _str_to_map(node.this, node.args["pair_delim"], node.args["key_value_delim"])
    if isinstance(node, exp.RegexpSplit) and node.args.get("limit") is not None:
        return _split(node.this, node.expression, node.args["limit"])
    return None
