"""Spark functions that DuckDB lacks or computes otherwise, as DuckDB nodes with Spark's result (``duck._rewrite`` calls ``rewrite``).

Found by running the examples of Spark's own function reference (``DESCRIBE FUNCTION EXTENDED``)
on both engines: a lambda's index counts from 0 in Spark (from 1 in DuckDB), ``aggregate``'s
finishing lambda, ``sequence`` counting down, ``format_string``'s ``%`` patterns, the NULLs of
``array_contains``/``array_position``/``array_remove``/``exists``/``forall``, three-letter day
and month names, Spark's type names, time zone conversions, and the functions DuckDB has no name for.
"""
from __future__ import annotations

import itertools
import re
from typing import Callable

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.time import format_time

from dataflow.ops.table import duck_collections, duck_urls, spark_times
from dataflow.ops.table.duck_nodes import any_null as _unknown, call as _fn, number as _n

__all__ = ["MACROS", "format_java", "java_pattern", "read_time", "rewrite", "substitute"]

#: DuckDB macros the rewrites call; created on each connection with ``duck``'s own.
MACROS = """
CREATE MACRO __df_width_bucket(v, lo, hi, n) AS CASE
  WHEN n <= 0 OR lo = hi OR isnan(v) OR isnan(lo) OR isnan(hi) THEN NULL
  WHEN lo < hi THEN CASE WHEN v < lo THEN 0 WHEN v >= hi THEN n + 1 ELSE CAST(floor((v - lo) / (hi - lo) * n) AS BIGINT) + 1 END
  ELSE CASE WHEN v > lo THEN 0 WHEN v <= hi THEN n + 1 ELSE CAST(floor((lo - v) / (lo - hi) * n) AS BIGINT) + 1 END END;
CREATE MACRO __df_months_between(a, b) AS (year(a) - year(b)) * 12 + month(a) - month(b) + CASE
  WHEN day(a) = day(b) OR (day(a) = day(last_day(a)) AND day(b) = day(last_day(b))) THEN 0
  ELSE ((day(a) - day(b)) * 86400 + (epoch(a) - epoch(date_trunc('day', a))) - (epoch(b) - epoch(date_trunc('day', b)))) / 2678400.0 END;
CREATE MACRO __df_substring_index(s, d, n) AS CASE
  WHEN n = 0 OR d = '' THEN ''
  WHEN n > 0 THEN array_to_string(string_split(s, d)[1:n], d)
  ELSE array_to_string(string_split(s, d)[n:], d) END;
CREATE MACRO __df_scalar_type(t) AS CASE t
  WHEN 'BIGINT' THEN 'bigint' WHEN 'INTEGER' THEN 'int' WHEN 'SMALLINT' THEN 'smallint' WHEN 'TINYINT' THEN 'tinyint'
  WHEN 'DOUBLE' THEN 'double' WHEN 'FLOAT' THEN 'float' WHEN 'VARCHAR' THEN 'string' WHEN 'BOOLEAN' THEN 'boolean'
  WHEN 'DATE' THEN 'date' WHEN 'TIMESTAMP' THEN 'timestamp' WHEN 'TIMESTAMP WITH TIME ZONE' THEN 'timestamp' WHEN 'BLOB' THEN 'binary'
  WHEN '"NULL"' THEN 'void' ELSE lower(t) END;
CREATE MACRO __df_spark_type(t) AS CASE
  WHEN t LIKE '%[]' AND t NOT LIKE '%[]%[]' THEN 'array<' || __df_scalar_type(t[:-3]) || '>'
  ELSE __df_scalar_type(t) END;
"""

_TRY_ARITHMETIC = {exp.SafeAdd: exp.Add, exp.SafeSubtract: exp.Sub, exp.SafeMultiply: exp.Mul}


def _from_zero(lam: exp.Lambda) -> exp.Lambda:
    """A two-argument lambda's body with its index argument counting from 0, as Spark's (DuckDB's counts from 1)."""
    if len(lam.expressions) != 2:
        return lam
    index = lam.expressions[1].name
    lam.set("this", substitute(lam.this, {index: lambda ref: exp.paren(exp.Sub(this=ref, expression=_n(1)))}))
    return lam


def substitute(body: exp.Expression, values: dict[str, Callable[[exp.Expression], exp.Expression]]) -> exp.Expression:
    """``body`` with each reference to a lambda argument named in ``values`` (an identifier, or a column of that name)
    replaced by ``values[name](reference)``, all in one pass (a replacement is not searched again)."""

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name in values or isinstance(node, exp.Identifier) and not isinstance(node.parent, exp.Column) and node.name in values:
            return values[node.name](node.copy())
        return node

    return body.transform(swap)


def _three_valued(values: exp.Expression, decisive: bool) -> exp.Expression:
    """Spark's ``exists`` (``decisive`` True) or ``forall`` (False) over a list of booleans: that value if one holds it, else NULL if one is NULL."""
    size = _fn("len", values.copy())
    return exp.Case(ifs=[
        exp.If(this=exp.Is(this=values.copy(), expression=exp.Null()), true=exp.Null()),
        exp.If(this=_fn("list_contains", values.copy(), exp.Boolean(this=decisive)), true=exp.Boolean(this=decisive)),
        exp.If(this=exp.LT(this=_fn("list_count", values.copy()), expression=size), true=exp.Null()),
    ], default=exp.Boolean(this=not decisive))


def _pmod(a: exp.Expression, n: exp.Expression) -> exp.Expression:
    """Spark's ``pmod``: the remainder's sign made that of ``n`` where it is negative (``n`` 0: NULL, as ``%``)."""
    r = exp.Mod(this=exp.paren(a), expression=_fn("nullif", n.copy(), _n(0)))
    back = exp.Mod(this=exp.paren(exp.Add(this=r.copy(), expression=n.copy())), expression=n.copy())
    return exp.Case(ifs=[exp.If(this=exp.LT(this=r.copy(), expression=_n(0)), true=back)], default=r)


def _instant(value: exp.Expression) -> exp.Expression:
    """A date, timestamp or text as a timestamp: text with a zone offset (``...T10:00:00+01:00``) is that instant, as
    Spark reads it (DuckDB's cast to TIMESTAMP drops the offset), without one it is UTC (the session's zone); the
    instant as UTC wall-clock time, NULL where the text is no time; an instant already as it is."""
    if _is_instant(value):
        return value
    return exp.TryCast(this=exp.TryCast(this=value, to=exp.DataType.build("TIMESTAMPTZ")), to=exp.DataType.build("TIMESTAMP"))


def _is_instant(node: exp.Expression) -> bool:
    """Whether ``node`` is what ``_instant`` makes."""
    return (isinstance(node, exp.TryCast) and node.to.this == exp.DataType.Type.TIMESTAMP
            and isinstance(node.this, exp.TryCast) and node.this.to.this == exp.DataType.Type.TIMESTAMPTZ)


def read_time(text: exp.Expression, pattern: exp.Expression | None) -> exp.Expression:
    """``text`` read as a timestamp by a Spark (Java) pattern, or cast without one; NULL where it reads as none.

    A literal pattern is Java's, or sqlglot's strftime of it (read back to Java's); the text must be
    what Spark's parser reads for it (``spark_times.pattern_text``: ``MM`` two digits, ``SSS`` one to
    three, nothing around), which DuckDB's ``strptime`` then reads: its quoted literals (``'T'``) and
    zone offsets (``X``, ``Z``) become strptime's, ``S`` up to 6 times its ``%f``, a ``Z`` suffix reads as
    UTC, as Java's ``X`` reads it, a pattern without a year is in 1970, as Spark's (strptime: 1900), and
    ``yy`` is a year 2000-2099, as Java's (strptime: 1969-2068). A date or a timestamp is that time, as Spark's.
    """
    if pattern is None:
        return _instant(text)
    check, original = None, text
    as_text = exp.Cast(this=text, to=exp.DataType.build("VARCHAR"))  # binds whatever the type (a time takes the other branch)
    text = as_text.copy()
    if isinstance(pattern, exp.Literal):
        java = java_pattern(pattern.name)
        check = spark_times.pattern_text(java)
        fmt = format_time(re.sub(r"(?<![S'])S{1,6}(?!S)", "SSSSSS", java), Spark.TIME_MAPPING)
        pattern = exp.Literal.string(re.sub(r"(?<!%)(X{1,3}|Z{1,3})", "%z", re.sub(r"'([^']*)'", r"\1", fmt)))
        if "%z" in pattern.name:
            text = _fn("regexp_replace", text, exp.Literal.string("Z$"), exp.Literal.string("+00:00"))
    parsed: exp.Expression = exp.StrToTime(this=text, format=pattern, safe=True)
    years = [token for token, letter in spark_times.pattern_tokens(java) if letter in ("y", "Y", "u")] if isinstance(pattern, exp.Literal) else ["yyyy"]
    if not years:
        parsed = exp.Add(this=parsed, expression=exp.Interval(this=exp.Literal.string("70"), unit=exp.Var(this="YEAR")))
    elif any(len(token) == 2 and token[0] != "u" for token in years):  # two digits: Java's years 2000-2099 (strptime's 1969-2068)
        before = exp.LT(this=_fn("year", parsed.copy()), expression=_n(2000))
        parsed = exp.Case(ifs=[exp.If(this=before, true=exp.Add(this=parsed.copy(), expression=exp.Interval(this=exp.Literal.string("100"), unit=exp.Var(this="YEAR"))))], default=parsed)
    if check is not None:
        whole = _fn("regexp_full_match", as_text, exp.Literal.string(check))
        parsed = exp.Case(ifs=[exp.If(this=whole, true=parsed)])
    # Spark reads only text by the pattern: a date or a timestamp is that time (``unix_timestamp(ts)``, ``to_timestamp(ts, fmt)``).
    is_text = exp.In(this=_fn("typeof", original.copy()), expressions=[exp.Literal.string("VARCHAR"), exp.Literal.string('"NULL"')])
    return exp.Case(ifs=[exp.If(this=is_text, true=parsed)], default=_instant(original.copy()))


def java_pattern(text: str) -> str:
    """A pattern literal as Java's: as the user wrote it, or read back from sqlglot's strftime of it (``%Y-%mstrict``)."""
    return format_time(text, Spark.INVERSE_TIME_MAPPING) if "%" in text else text


#: Java pattern letters (by count) as strftime's, for a time in UTC (the session's zone: the zone letters are its names).
_STRFTIME = {
    "y": {1: "%Y", 2: "%y", 3: "%Y", 4: "%Y"}, "M": {1: "%-m", 2: "%m", 3: "%b", 4: "%B"}, "L": {1: "%-m", 2: "%m", 3: "%b", 4: "%B"},
    "d": {1: "%-d", 2: "%d"}, "D": {1: "%-j", 3: "%j"}, "H": {1: "%-H", 2: "%H"}, "h": {1: "%-I", 2: "%I"}, "m": {1: "%-M", 2: "%M"},
    "s": {1: "%-S", 2: "%S"}, "a": {1: "%p"}, "E": {1: "%a", 2: "%a", 3: "%a", 4: "%A"}, "G": {1: "AD", 2: "AD", 3: "AD", 4: "Anno Domini"},
    "X": {1: "Z", 2: "Z", 3: "Z", 4: "Z", 5: "Z"}, "x": {1: "+00", 2: "+0000", 3: "+00:00", 4: "+0000", 5: "+00:00"},
    "Z": {1: "+0000", 2: "+0000", 3: "+0000", 4: "GMT", 5: "Z"}, "z": {1: "UTC", 2: "UTC", 3: "UTC", 4: "Coordinated Universal Time"},
    "V": {2: "UTC"}, "O": {1: "GMT", 4: "GMT"},
}


def format_java(ts: exp.Expression, java: str) -> exp.Expression | None:
    """``date_format(ts, java)``: the time ``ts`` (UTC) written by a Java pattern, as Spark writes it; None for a
    pattern with a letter not listed (``w``, ``u``, ``F``...), left to sqlglot's mapping."""
    pieces: list[exp.Expression | str] = []  # strftime's text, or an expression of its own

    def number(value: exp.Expression, width: int) -> exp.Expression:  # at least ``width`` digits (DuckDB's lpad would also cut)
        return _fn("printf", exp.Literal.string(f"%0{width}d"), value)

    hour = _fn("hour", ts.copy())
    for token, letter in spark_times.pattern_tokens(java):
        n = len(token)
        if letter is None:
            pieces.append(token.replace("%", "%%"))
        elif letter == "S" and n == 3:
            pieces.append("%g")
        elif letter == "S" and n >= 6:  # microseconds, then zeros
            pieces.append("%f" + "0" * (n - 6))
        elif letter == "S":  # the fraction's first n digits
            pieces.append(_fn("substr", _fn("strftime", ts.copy(), exp.Literal.string("%f")), _n(1), _n(n)))
        elif letter == "D" and n == 2:
            pieces.append(number(_fn("dayofyear", ts.copy()), 2))
        elif letter == "k" and n <= 2:  # 1-24
            pieces.append(number(exp.Case(ifs=[exp.If(this=exp.EQ(this=hour.copy(), expression=_n(0)), true=_n(24))], default=hour.copy()), n))
        elif letter == "K" and n <= 2:  # 0-11
            pieces.append(number(exp.Mod(this=hour.copy(), expression=_n(12)), n))
        elif letter in "Qq" and n <= 3:
            quarter = exp.Cast(this=_fn("quarter", ts.copy()), to=exp.DataType.build("VARCHAR"))
            pieces.append(exp.Concat(expressions=[exp.Literal.string({1: "", 2: "0", 3: "Q"}[n]), quarter]))
        elif letter == "y" and n > 4:
            pieces.append(number(_fn("year", ts.copy()), n))
        elif n in _STRFTIME.get(letter, {}):
            pieces.append(_STRFTIME[letter][n])
        else:
            return None
    written: list[exp.Expression] = []
    for is_text, group in itertools.groupby(pieces, key=lambda p: isinstance(p, str)):
        if is_text:
            written.append(_fn("strftime", ts.copy(), exp.Literal.string("".join(group))))
        else:
            written.extend(group)
    return written[0] if len(written) == 1 else exp.Concat(expressions=written, safe=True)


def _parsed_time(args: list[exp.Expression], to: str) -> exp.Expression:
    """``try_to_timestamp`` / ``try_to_date``: text read by a Java pattern, or cast; NULL where it is no time."""
    parsed = read_time(args[0], args[1] if len(args) > 1 else None)
    return exp.Cast(this=parsed, to=exp.DataType.build(to)) if to == "DATE" else parsed


#: Spark's ``extract`` / ``date_part`` fields as DuckDB's ``date_part`` units of the same value (``DAYOFWEEK`` and ``SECOND``: ``_extract``).
_FIELDS = {
    **dict.fromkeys(("YEAR", "Y", "YEARS", "YR", "YRS"), "year"), "YEAROFWEEK": "isoyear", **dict.fromkeys(("QUARTER", "QTR"), "quarter"),
    **dict.fromkeys(("MONTH", "MON", "MONS", "MONTHS"), "month"), **dict.fromkeys(("WEEK", "W", "WEEKS"), "week"),
    **dict.fromkeys(("DAY", "D", "DAYS"), "day"), **dict.fromkeys(("DAYOFWEEK", "DOW"), "dow"), **dict.fromkeys(("DAYOFWEEK_ISO", "DOW_ISO"), "isodow"),
    "DOY": "doy", **dict.fromkeys(("HOUR", "H", "HOURS", "HR", "HRS"), "hour"), **dict.fromkeys(("MINUTE", "M", "MIN", "MINS", "MINUTES"), "minute"),
    **dict.fromkeys(("SECOND", "S", "SEC", "SECONDS", "SECS"), "second"),
}


def _extract(field: str, source: exp.Expression) -> exp.Expression | None:
    """Spark's ``extract(field FROM source)``: Sunday is day 1 of the week, seconds keep their fraction (DECIMAL(8, 6)); None: a field it lacks."""
    unit = _FIELDS.get(field.upper())
    if unit is None:
        return None
    if unit == "second":  # text reaches here read as a timestamp (``coercion._time_casts``); a date, time or interval as it is
        micros = exp.Div(this=_fn("date_part", exp.Literal.string("microseconds"), source), expression=exp.Literal.number("1000000.0"))
        return exp.Cast(this=micros, to=exp.DataType.build("DECIMAL(8, 6)", dialect="duckdb"))
    part = _fn("date_part", exp.Literal.string(unit), source)
    return exp.Add(this=part, expression=_n(1)) if unit == "dow" else part


def _log1p(x: exp.Expression) -> exp.Expression:
    """ln(1 + x) to the last digits where x is tiny (``u = 1 + x``, scaled by ``x / (u - 1)``); NULL at or below -1, as Spark's."""
    u = exp.paren(exp.Add(this=_n(1), expression=exp.Cast(this=x.copy(), to=exp.DataType.build("DOUBLE"))))
    scaled = exp.Div(this=exp.Mul(this=_fn("ln", u.copy()), expression=x.copy()), expression=exp.paren(exp.Sub(this=u.copy(), expression=_n(1))))
    return exp.Case(ifs=[exp.If(this=exp.LTE(this=x.copy(), expression=_n(-1)), true=exp.Null()),
                         exp.If(this=exp.EQ(this=u.copy(), expression=_n(1)), true=exp.Cast(this=x.copy(), to=exp.DataType.build("DOUBLE")))], default=scaled)


def _expm1(x: exp.Expression) -> exp.Expression:
    """exp(x) - 1 to the last digits where x is tiny (``u = exp(x)``, scaled by ``x / ln(u)``)."""
    u = _fn("exp", exp.Cast(this=x.copy(), to=exp.DataType.build("DOUBLE")))
    scaled = exp.Div(this=exp.Mul(this=exp.paren(exp.Sub(this=u.copy(), expression=_n(1))), expression=x.copy()), expression=_fn("ln", u.copy()))
    return exp.Case(ifs=[exp.If(this=exp.EQ(this=u.copy(), expression=_n(1)), true=exp.Cast(this=x.copy(), to=exp.DataType.build("DOUBLE"))),
                         exp.If(this=exp.EQ(this=exp.Sub(this=u.copy(), expression=_n(1)), expression=_n(-1)), true=exp.Literal.number("-1.0")),
                         exp.If(this=_fn("isinf", u.copy()), true=u.copy())], default=scaled)


def _mask(args: list[exp.Expression]) -> exp.Expression | None:
    """Spark's ``mask(s[, upper[, lower[, digit[, other]]]])``: each letter or digit replaced by its class's character (NULL: kept)."""
    given = [*args[1:], *([None] * (5 - len(args)))]
    if len(args) > 5 or any(a is not None and not isinstance(a, (exp.Literal, exp.Null)) for a in given):
        return None
    defaults = [exp.Literal.string("X"), exp.Literal.string("x"), exp.Literal.string("n"), exp.Null()]
    chars = [d if a is None else a for a, d in zip(given, defaults)]
    c = exp.column("__df_c")
    classes = [exp.If(this=_fn("regexp_full_match", c.copy(), exp.Literal.string(f"\\p{{{k}}}")), true=exp.Coalesce(this=ch, expressions=[c.copy()]))
               for k, ch in zip(("Lu", "Ll", "Nd"), chars)]
    each = exp.Case(ifs=classes, default=exp.Coalesce(this=chars[3], expressions=[c.copy()]))
    masked = _fn("list_transform", _fn("string_split", args[0].copy(), exp.Literal.string("")), exp.Lambda(this=each, expressions=[exp.to_identifier("__df_c")]))
    return exp.Case(ifs=[exp.If(this=exp.Is(this=args[0], expression=exp.Null()), true=exp.Null())], default=_fn("array_to_string", masked, exp.Literal.string("")))


_SPEC = re.compile(r"%(\d+\$)?([-#+ 0,(<]*)(\d+)?(\.\d+)?([a-zA-Z%])")


def _java_format(args: list[exp.Expression]) -> exp.Expression | None:
    """``format_string(pattern, ...)`` with a literal pattern, each argument formatted on its own: a NULL one is
    Java's ``null`` (upper case for ``%S``...) in the same width and cut to the precision, where C's printf gives
    NULL; ``%b`` is Java's (a boolean as itself, NULL as false, anything else true; C's printf: binary digits).
    None: a pattern with indexed or relative arguments, times, or too few arguments (printf as it is)."""
    pattern, values = args[0], args[1:]
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        return None
    text, pieces, pos, used = pattern.name, [], 0, 0
    for m in _SPEC.finditer(text):
        index, flags, width, precision, conversion = m.groups()
        pieces.append(exp.Literal.string(text[pos:m.start()]))
        pos = m.end()
        if conversion in "%n":
            pieces.append(exp.Literal.string("%" if conversion == "%" else "\n"))
            continue
        if index or "<" in flags or conversion in "tT" or used >= len(values):
            return None
        as_text = exp.Literal.string(f"%{'-' if '-' in flags else ''}{width or ''}{precision or ''}s")  # Java cuts "null" to the precision too
        value = values[used]
        used += 1
        if conversion in "bB":  # Java: a boolean as itself, NULL as false, anything else as true
            shown = exp.Case(ifs=[exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Literal.string("false")),
                                 exp.If(this=exp.EQ(this=_fn("typeof", value.copy()), expression=exp.Literal.string("BOOLEAN")),
                                        true=_fn("lower", exp.Cast(this=value.copy(), to=exp.DataType.build("VARCHAR"))))], default=exp.Literal.string("true"))
            pieces.append(_fn("printf", as_text, _fn("upper", shown) if conversion == "B" else shown))
            continue
        blank = _fn("printf", as_text, exp.Literal.string("NULL" if conversion.isupper() else "null"))
        pieces.append(exp.Coalesce(this=_fn("printf", exp.Literal.string(m.group(0)), value), expressions=[blank]))
    pieces.append(exp.Literal.string(text[pos:]))
    kept = [p for p in pieces if not (isinstance(p, exp.Literal) and p.name == "")]
    return exp.Concat(expressions=kept or [exp.Literal.string("")], safe=True)


def _by_name(name: str, args: list[exp.Expression]) -> exp.Expression | None:
    """The Spark functions sqlglot does not know (``sql.SPARK_EXTRA``) as DuckDB nodes; None for the others."""
    if name in ("isnull", "isnotnull"):
        test = exp.Is(this=args[0], expression=exp.Null())
        return test if name == "isnull" else exp.Not(this=test)
    if name in ("try_to_timestamp", "try_to_date"):
        return _parsed_time(args, "TIMESTAMP" if name == "try_to_timestamp" else "DATE")
    if name in ("timestamp_millis", "timestamp_micros"):
        return _fn("epoch_ms", args[0]) if name == "timestamp_millis" else _fn("make_timestamp", exp.Cast(this=args[0], to=exp.DataType.build("BIGINT")))
    if name == "try_mod":
        return exp.Mod(this=exp.paren(args[0]), expression=_fn("nullif", args[1], _n(0)))
    if name == "pmod":
        return _pmod(*args)
    if name in ("positive", "e"):
        return exp.paren(args[0]) if name == "positive" else _fn("exp", _n(1))
    if name == "btrim":
        return _fn("trim", *args)
    if name in ("zeroifnull", "nullifzero"):
        return exp.Coalesce(this=args[0], expressions=[_n(0)]) if name == "zeroifnull" else _fn("nullif", args[0], _n(0))
    if name == "octet_length":
        return _fn("strlen", args[0])
    if name == "find_in_set":  # 1-based, 0 where absent or where the value holds a comma
        found = exp.Coalesce(this=_fn("list_position", _fn("string_split", args[1], exp.Literal.string(",")), args[0].copy()), expressions=[_n(0)])
        return exp.Case(ifs=[exp.If(this=_unknown(*args), true=exp.Null()), exp.If(this=_fn("contains", args[0], exp.Literal.string(",")), true=_n(0))], default=found)
    if name == "weekday":  # 0 is Monday
        return exp.Sub(this=_fn("isodow", exp.TryCast(this=args[0], to=exp.DataType.build("DATE"))), expression=_n(1))
    if name == "hypot":
        return _fn("sqrt", exp.Add(this=exp.Mul(this=args[0], expression=args[0].copy()), expression=exp.Mul(this=args[1], expression=args[1].copy())))
    if name == "json_array_length":  # NULL for text that is no JSON array
        valid = exp.and_(_fn("json_valid", args[0].copy()), exp.EQ(this=_fn("json_type", args[0].copy()), expression=exp.Literal.string("ARRAY")))
        return exp.Case(ifs=[exp.If(this=valid, true=_fn("json_array_length", args[0]))])
    if name in ("map_values", "map_entries"):
        return _fn(name, *args)
    if name == "regexp":
        return exp.RegexpLike(this=args[0], expression=args[1])
    if name in ("date_part", "datepart") and len(args) == 2 and isinstance(args[0], exp.Literal):
        return _extract(args[0].name, args[1])
    if name == "make_date":
        return _fn("make_date", *[exp.Cast(this=a, to=exp.DataType.build("BIGINT")) for a in args])
    if name == "now":
        return exp.CurrentTimestamp()
    if name in ("log1p", "expm1"):
        return _log1p(args[0]) if name == "log1p" else _expm1(args[0])
    if name in ("hash", "xxhash64"):  # Spark's Murmur3 / XXH64 with seed 42, each argument hashed with the hash so far (``spark_hash``)
        folded: exp.Expression = _n(42) if name == "hash" else exp.Cast(this=_n(42), to=exp.DataType.build("BIGINT"))
        for arg in args:
            folded = _fn("__df_hash" if name == "hash" else "__df_xxhash", folded, arg)
        return folded
    if name == "crc32":
        return _fn("__df_crc32", args[0])
    if name == "conv" and len(args) == 3:  # Spark's NumberConverter (``python_functions``)
        return _fn("__df_conv", *args)
    if name == "mask" and args:
        return _mask(args)
    if name == "format_number" and len(args) == 2:  # grouped thousands, d digits (half even, as Java's DecimalFormat); d < 0: NULL
        spec = exp.DPipe(this=exp.DPipe(this=exp.Literal.string("{:,."), expression=exp.Cast(this=args[1], to=exp.DataType.build("VARCHAR"))),
                         expression=exp.Literal.string("f}"))
        return exp.Case(ifs=[exp.If(this=exp.GTE(this=args[1].copy(), expression=_n(0)), true=_fn("format", spec, exp.Cast(this=args[0], to=exp.DataType.build("DOUBLE"))))])
    if name == "bin":
        return _fn("bin", exp.Cast(this=args[0], to=exp.DataType.build("BIGINT")))
    if name == "array_repeat":
        count = _fn("greatest", args[1], _n(0))
        return _fn("list_resize", exp.Array(expressions=[args[0]]), count, args[0].copy())
    if name == "arrays_overlap":  # NULL where none is shared, both hold elements and one a NULL
        a, b = args
        nulls = exp.or_(exp.LT(this=_fn("list_count", a.copy()), expression=_fn("len", a.copy())), exp.LT(this=_fn("list_count", b.copy()), expression=_fn("len", b.copy())))
        both = exp.and_(exp.GT(this=_fn("len", a.copy()), expression=_n(0)), exp.GT(this=_fn("len", b.copy()), expression=_n(0)))
        return exp.Case(ifs=[exp.If(this=_unknown(a, b), true=exp.Null()), exp.If(this=_fn("list_has_any", a.copy(), b.copy()), true=exp.true()),
                             exp.If(this=exp.and_(both, nulls), true=exp.Null())], default=exp.false())
    return None


def rewrite(node: exp.Expression) -> exp.Expression:
    """``node`` as DuckDB computes Spark's result, or ``node`` itself."""
    name = node.name.lower() if isinstance(node, exp.Anonymous) else ""
    if name and (named := _by_name(name, list(node.expressions))) is not None:
        return named
    for module in (duck_collections, duck_urls):
        if name and (named := module.by_name(name, list(node.expressions))) is not None:
            return named
    if (changed := duck_collections.rewrite(node)) is not None:
        return changed
    if isinstance(node, exp.Extract) and isinstance(node.this, (exp.Var, exp.Literal)) and (extracted := _extract(node.this.name, node.expression)) is not None:
        return extracted
    if isinstance(node, exp.TimestampFromParts) and node.args.get("nano") is not None:  # sqlglot reads Spark's 7th argument, the zone, as nanoseconds
        zone = node.args["nano"]
        node.set("nano", None)
        return _fn("__df_zoned", node, zone)  # ``spark_times``
    if isinstance(node, exp.Soundex):  # Spark's American Soundex (``python_functions``)
        return _fn("__df_soundex", node.this)
    if isinstance(node, exp.Ascii):  # of a number too: its text's first character
        return _fn("ascii", exp.Cast(this=node.this, to=exp.DataType.build("VARCHAR")))
    if isinstance(node, exp.ParseUrl) and (url := duck_urls.parse_url(node)) is not None:
        return url
    if isinstance(node, exp.TryCast) and node.to.this == exp.DataType.Type.TIMESTAMP and not _is_instant(node):
        return _instant(node.this)
    if isinstance(node, exp.Quantile):  # percentile: interpolated, as Spark's (DuckDB's quantile is discrete)
        return _fn("quantile_cont", node.this, node.args["quantile"])
    if isinstance(node, exp.IgnoreNulls) and isinstance(node.this, (exp.First, exp.Last)) and isinstance(node.parent, exp.Window):
        value = exp.FirstValue if isinstance(node.this, exp.First) else exp.LastValue  # DuckDB keeps IGNORE NULLS for these
        return exp.IgnoreNulls(this=value(this=node.this.this))
    if isinstance(node, exp.IgnoreNulls) and isinstance(node.this, (exp.First, exp.Last, exp.AnyValue)):
        agg = node.this  # first(x, true) / last(x, true): DuckDB drops IGNORE NULLS
        return exp.Filter(this=agg, expression=exp.Where(this=exp.Not(this=exp.Is(this=agg.this.copy(), expression=exp.Null()))))
    if isinstance(node, (exp.Transform, exp.ArrayFilter)) and isinstance(node.expression, exp.Lambda):
        _from_zero(node.expression)
        return node
    if isinstance(node, exp.Reduce) and isinstance(node.args.get("finish"), exp.Lambda):  # aggregate(arr, zero, merge, finish)
        finish = node.args["finish"]
        node.set("finish", None)
        return substitute(finish.this, {finish.expressions[0].name: lambda _: node.copy()})
    if isinstance(node, exp.GenerateSeries) and node.args.get("step") is None:  # sequence(5, 1) counts down
        start, end = node.args["start"], node.args["end"]
        step = exp.Case(ifs=[exp.If(this=exp.LTE(this=start.copy(), expression=end.copy()), true=_n(1))], default=_n(-1))
        if not any(isinstance(a, (exp.TsOrDsToDate, exp.StrToDate, exp.Cast, exp.CurrentDate, exp.CurrentTimestamp)) for a in (start, end)):
            node.set("step", step)
        return node
    if isinstance(node, exp.Format) or name == "printf":  # format_string / printf: Java's % patterns, as C's printf
        args = [node.this, *node.expressions] if isinstance(node, exp.Format) else list(node.expressions)
        return _java_format(args) or _fn("printf", *args)
    if isinstance(node, exp.Levenshtein) and node.args.get("ins_cost") is not None:  # levenshtein(a, b, threshold): -1 past it
        distance = exp.Levenshtein(this=node.this, expression=node.expression)
        return exp.Case(ifs=[exp.If(this=exp.GT(this=distance.copy(), expression=node.args["ins_cost"]), true=_n(-1))], default=distance)
    if isinstance(node, exp.ArrayContains):  # NULL where not found and the array holds a NULL
        arr, value = node.this, node.expression
        missing = exp.LT(this=_fn("list_count", arr.copy()), expression=_fn("len", arr.copy()))
        return exp.Case(ifs=[exp.If(this=_unknown(arr, value), true=exp.Null()), exp.If(this=_fn("list_contains", arr.copy(), value.copy()), true=exp.true()),
                             exp.If(this=missing, true=exp.Null())], default=exp.false())
    if isinstance(node, exp.ArrayPosition):  # 0 where not found (a NULL array or value: NULL)
        arr, value = node.this, node.expression
        return exp.Case(ifs=[exp.If(this=_unknown(arr, value), true=exp.Null())], default=exp.Coalesce(this=_fn("list_position", arr.copy(), value.copy()), expressions=[_n(0)]))
    if isinstance(node, exp.ArrayRemove):  # the array's NULLs stay (a NULL value: NULL)
        x = exp.to_identifier("__df_x")
        keep = exp.or_(exp.Is(this=exp.column(x.copy()), expression=exp.Null()), exp.NEQ(this=exp.column(x.copy()), expression=node.expression.copy()))
        kept = _fn("list_filter", node.this, exp.Lambda(this=keep, expressions=[x]))
        return exp.Case(ifs=[exp.If(this=exp.Is(this=node.expression, expression=exp.Null()), true=exp.Null())], default=kept)
    if isinstance(node, exp.Exists) and isinstance(node.expression, exp.Lambda):  # exists(arr, x -> p)
        return _three_valued(_fn("list_transform", node.this, node.expression), True)
    if name == "forall" and len(node.expressions) == 2:
        return _three_valued(_fn("list_transform", *node.expressions), False)
    if isinstance(node, (exp.Dayname, exp.Monthname)):  # Spark: 'Wed', 'Feb' (the argument is a date: coercion._time_casts)
        return _fn("left", node, _n(3))
    if isinstance(node, (exp.LastDay, exp.NextDay)):  # a DATE, as Spark's
        return exp.Cast(this=node, to=exp.DataType.build("DATE"))
    if isinstance(node, exp.Typeof):
        return _fn("__df_spark_type", node)
    if isinstance(node, (exp.AddMonths, exp.DateFromUnixDate)):  # a DATE, as Spark's
        return exp.Cast(this=node, to=exp.DataType.build("DATE"))
    if isinstance(node, exp.WidthBucket):
        return _fn("__df_width_bucket", node.this, node.args["min_value"], node.args["max_value"], node.args["num_buckets"])
    if type(node) in _TRY_ARITHMETIC:  # try_add / try_subtract / try_multiply: NULL on overflow
        return _fn("try", _TRY_ARITHMETIC[type(node)](this=node.this, expression=node.expression))
    if isinstance(node, exp.Rint):
        return exp.Cast(this=_fn("round_even", node.this, _n(0)), to=exp.DataType.build("DOUBLE"))
    if isinstance(node, exp.Negative):
        return exp.Neg(this=exp.paren(node.this))
    if isinstance(node, exp.Getbit):
        return exp.BitwiseAnd(this=exp.paren(exp.BitwiseRightShift(this=node.this, expression=node.expression)), expression=_n(1))
    if isinstance(node, exp.SubstringIndex):
        return _fn("__df_substring_index", node.this, node.args["delimiter"], node.args["count"])
    if isinstance(node, exp.RegexpSubstr):  # the first match, NULL where none
        return exp.Case(ifs=[exp.If(this=_fn("regexp_matches", node.this.copy(), node.expression.copy()),
                                    true=_fn("regexp_extract", node.this, node.expression, _n(0)))])
    if isinstance(node, exp.AtTimeZone):  # from_utc_timestamp(ts, tz): ts read as UTC, the wall-clock time in tz
        return _fn("timezone", node.args["zone"], _fn("timezone", exp.Literal.string("UTC"), node.this))  # sqlglot casts ts
    if isinstance(node, exp.FromTimeZone):  # to_utc_timestamp(ts, tz): ts read as tz's wall-clock time, in UTC
        return _fn("timezone", exp.Literal.string("UTC"), _fn("timezone", node.args["zone"], node.this))
    if isinstance(node, exp.ConvertTimezone):  # convert_timezone([source, ]target, ts): the source defaults to the session's (UTC)
        source = node.args.get("source_tz") or exp.Literal.string("UTC")
        return _fn("timezone", node.args["target_tz"], _fn("timezone", source, _instant(node.args["timestamp"])))
    if isinstance(node, exp.CurrentTimezone):  # dataflow's Spark sessions run in UTC
        return exp.Literal.string("UTC")
    if isinstance(node, (exp.Sec, exp.Csc)):
        return exp.Div(this=exp.Literal.number("1.0"), expression=_fn("cos" if isinstance(node, exp.Sec) else "sin", node.this))
    return node
