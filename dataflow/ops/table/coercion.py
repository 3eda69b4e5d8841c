"""Spark's implicit casts of text to numbers, made explicit: ``v >= 2`` over a string column ``v`` (a CSV field, an untyped JSON value).

Spark computes with a string beside a number by casting the string (to BIGINT beside an integer,
to DOUBLE beside a fractional number, in a division and in numeric functions such as ``sum``,
``avg``, ``abs``); with ANSI on (Spark 4's default) a malformed string then fails the job, and
DuckDB refuses the expression outright (``Cannot compare values of type VARCHAR and type
INTEGER_LITERAL``). ``coerced`` writes those casts into the tree as ``TRY_CAST``, where the column
types are known (``kinds``), so both engines give the same rows and a value that is not a number is
NULL, as an explicit ``CAST`` is here (``dataflow.ops.table.sql``). A comparison (``=``, ``<``,
``BETWEEN``, ``IN``, ...) reads the string as a DOUBLE whatever the number beside it: the same
answer as Spark's wherever Spark gives one, and ``'12.5' >= 10`` true where Spark's BIGINT cast
fails. A string computed by a function of text (``regexp_extract(msg, 'code=(\\d+)', 1) >= 500``,
``date_format(ts, 'HH') < 6``, ``upper(s)``, ``get_json_object``...) is cast as a string column is.

Spark casts text to a date or timestamp where a time function takes one (``year(s)``, ``hour(s)``,
``date_add(s, 1)``, ``to_timestamp(s)``...) and, with ANSI, fails the job at text that is no time;
DuckDB fails the step. ``coerced`` writes those casts as ``TRY_CAST`` too (whatever the column's
type: the cast of a date or timestamp is the one Spark makes), so such text is NULL on both.
"""
from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

__all__ = ["INTEGRAL", "FRACTIONAL", "STRING", "arrow_kinds", "coerced", "kind_of_type", "may_coerce"]

STRING, INTEGRAL, FRACTIONAL = "string", "integral", "fractional"

_COMPARED = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ)
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Mod)
_AS_DOUBLE = (exp.Sum, exp.Avg, exp.Stddev, exp.StddevPop, exp.StddevSamp, exp.Variance, exp.VariancePop, exp.Abs, exp.Neg, exp.Round, exp.ApproxQuantile)
_INTEGRAL = frozenset({"tinyint", "smallint", "int", "integer", "bigint", "byte", "short", "long"})
_FRACTIONAL = frozenset({"float", "double", "real", "decimal"})
#: Functions whose value is text, whatever their arguments' types.
_TEXT_VALUED = (
    exp.Upper, exp.Lower, exp.Initcap, exp.Concat, exp.DPipe, exp.Substring, exp.SubstringIndex, exp.Left, exp.Right, exp.Trim, exp.Pad,
    exp.Replace, exp.Translate, exp.RegexpExtract, exp.RegexpReplace, exp.SplitPart, exp.JSONExtractScalar, exp.TimeToStr, exp.Format,
)


def kind_of_type(name: str) -> str | None:
    """The kind of a Spark type name (``string``, ``bigint``, ``decimal(10,2)``): ``STRING``, ``INTEGRAL``, ``FRACTIONAL`` or None."""
    base = name.lower().split("(", 1)[0].strip()
    if base in ("string", "varchar", "char"):
        return STRING
    return INTEGRAL if base in _INTEGRAL else FRACTIONAL if base in _FRACTIONAL else None


def arrow_kinds(schema) -> dict[str, str]:
    """The kinds of a ``pyarrow.Schema``'s string and number columns."""
    import pyarrow as pa

    out = {}
    for field in schema:
        t = field.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            out[field.name] = STRING
        elif pa.types.is_integer(t):
            out[field.name] = INTEGRAL
        elif pa.types.is_floating(t) or pa.types.is_decimal(t):
            out[field.name] = FRACTIONAL
    return out


def _kind(node: exp.Expression, kinds: Mapping[str, str]) -> str | None:
    if isinstance(node, exp.Paren):
        return _kind(node.this, kinds)
    if isinstance(node, exp.Literal):
        return None if node.is_string else INTEGRAL if node.is_int else FRACTIONAL
    if isinstance(node, exp.Neg) and isinstance(node.this, (exp.Literal, exp.Paren, exp.Cast)):
        return _kind(node.this, kinds)
    if isinstance(node, exp.Cast):  # a bound var (``:floor``) is a cast literal
        return kind_of_type(node.to.sql(dialect="spark"))
    if isinstance(node, exp.Column) and not node.table:
        return kinds.get(node.name)
    return STRING if isinstance(node, _TEXT_VALUED) else None


def _number(node: exp.Expression, kind: str) -> exp.Expression:
    return exp.TryCast(this=node, to=exp.DataType.build("bigint" if kind == INTEGRAL else "double"), safe=True)


def _coerce(node: exp.Expression, kinds: Mapping[str, str]) -> None:
    if isinstance(node, (*_COMPARED, *_ARITHMETIC)):
        left, right = _kind(node.this, kinds), _kind(node.expression, kinds)
        if left == STRING and right in (INTEGRAL, FRACTIONAL):
            node.set("this", _number(node.this, FRACTIONAL if isinstance(node, _COMPARED) else right))
        elif right == STRING and left in (INTEGRAL, FRACTIONAL):
            node.set("expression", _number(node.expression, FRACTIONAL if isinstance(node, _COMPARED) else left))
    elif isinstance(node, exp.Div):
        for key in ("this", "expression"):
            if _kind(node.args[key], kinds) == STRING:
                node.set(key, _number(node.args[key], FRACTIONAL))
    elif isinstance(node, (exp.Between, exp.In)):
        others = [node.args.get("low"), node.args.get("high")] if isinstance(node, exp.Between) else list(node.expressions)
        if _kind(node.this, kinds) == STRING and others and {_kind(o, kinds) for o in others if o is not None} <= {INTEGRAL, FRACTIONAL}:
            node.set("this", _number(node.this, FRACTIONAL))
    elif isinstance(node, _AS_DOUBLE) and _kind(node.this, kinds) == STRING:
        node.set("this", _number(node.this, FRACTIONAL))
    elif isinstance(node, exp.Anonymous) and node.name.lower() == "mean" and node.expressions and _kind(node.expressions[0], kinds) == STRING:
        node.set("expressions", [_number(node.expressions[0], FRACTIONAL), *node.expressions[1:]])


def _operands(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, (*_COMPARED, *_ARITHMETIC, exp.Div)):
        return [node.this, node.expression]
    if isinstance(node, (exp.Between, exp.In, *_AS_DOUBLE)):
        return [node.this]
    if isinstance(node, exp.Anonymous) and node.name.lower() == "mean":
        return list(node.expressions[:1])
    return []


def may_coerce(tree: exp.Expression) -> bool:
    """Whether ``coerced`` might cast something in ``tree`` (a column or text beside what is not text, in a numeric function): else the kinds need not be looked up."""
    for node in tree.walk():
        operands = [o.unnest() for o in _operands(node)]
        if any(isinstance(o, (exp.Column, *_TEXT_VALUED)) for o in operands) and not any(isinstance(o, exp.Literal) and o.is_string for o in operands):
            return True
    return False


#: Time functions and the type Spark casts their argument to (sqlglot's own wrappers of an argument included).
_TIME_ARGUMENTS: dict[type, tuple[tuple[str, ...], str]] = {
    **{f: (("this",), "TIMESTAMP") for f in (exp.Hour, exp.Minute, exp.Second, exp.TimeToStr, exp.TimestampTrunc)},
    exp.MonthsBetween: (("this", "expression"), "TIMESTAMP"),
    **{f: (("this",), "DATE") for f in (exp.Quarter, exp.DayOfWeek, exp.DayOfYear, exp.WeekOfYear, exp.LastDay, exp.NextDay, exp.TsOrDsAdd,
                                         exp.AddMonths, exp.DateTrunc, exp.Dayname, exp.Monthname)},
}


def _is_date_part(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.lower() in ("date_part", "datepart") and len(node.expressions) == 2


def _interval_or_time(node: exp.Expression) -> bool:
    """Whether ``extract``'s source is an interval or a time of day (fields of their own), not text or an instant read as a timestamp."""
    if isinstance(node, (exp.Add, exp.Sub)):  # interval 5 days 3 hours: a sum of intervals
        return _interval_or_time(node.this) and _interval_or_time(node.expression)
    if isinstance(node, exp.Paren):
        return _interval_or_time(node.this)
    return isinstance(node, exp.Interval) or isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.INTERVAL, exp.DataType.Type.TIME)


def _time_casts(node: exp.Expression) -> exp.Expression:
    """``node`` with the text it reads as a time cast by ``TRY_CAST`` (NULL where it is none, as a cast is here)."""
    if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast) and node.to.is_type(*exp.DataType.TEMPORAL_TYPES):
        return exp.TryCast(this=node.this, to=node.to, safe=True)  # to_timestamp(s) is a cast
    if isinstance(node, exp.TsOrDsToDate) and node.args.get("format") is None:  # year(s), datediff(s, t), to_date(s)
        return exp.TryCast(this=node.this, to=exp.DataType.build("DATE"), safe=True)
    if isinstance(node, exp.TimeStrToTime):  # date_format(s, ...)
        return exp.TryCast(this=node.this, to=exp.DataType.build("TIMESTAMP"), safe=True)
    if isinstance(node, exp.StrToTime):  # to_timestamp(s, pattern)
        node.set("safe", True)
    if isinstance(node, exp.Anonymous) and node.name.lower() == "weekday" and node.expressions and not isinstance(node.expressions[0], exp.TryCast):
        node.set("expressions", [exp.TryCast(this=node.expressions[0], to=exp.DataType.build("DATE"), safe=True), *node.expressions[1:]])
    part_of = node.expression if isinstance(node, exp.Extract) else node.expressions[1] if _is_date_part(node) else None
    if part_of is not None and not isinstance(part_of, exp.TryCast) and not _interval_or_time(part_of):  # extract(f FROM s), date_part(f, s)
        part_of.replace(exp.TryCast(this=part_of.copy(), to=exp.DataType.build("TIMESTAMP"), safe=True))
    for key in _TIME_ARGUMENTS.get(type(node), ((), ""))[0]:
        arg = node.args.get(key)
        if arg is not None and not isinstance(arg, (exp.TryCast, exp.TsOrDsToDate, exp.StrToTime, exp.TimeStrToTime)):
            node.set(key, exp.TryCast(this=arg, to=exp.DataType.build(_TIME_ARGUMENTS[type(node)][1]), safe=True))
    return node


def coerced(tree: exp.Expression, kinds: Mapping[str, str] | None) -> exp.Expression:
    """``tree`` (a copy the caller owns) with a string column or computed text beside a number cast to it as Spark would, by ``TRY_CAST``; ``kinds``: the input columns' kinds."""
    kinds = kinds or {}
    if (any(kinds.get(c.name) == STRING for c in tree.find_all(exp.Column)) or tree.find(*_TEXT_VALUED)) and may_coerce(tree):
        for node in list(tree.walk()):
            _coerce(node, kinds)
    for node in list(tree.walk()):
        new = _time_casts(node)
        if new is node:
            continue
        if node is tree:
            tree = new
        else:
            node.replace(new)
    return tree
