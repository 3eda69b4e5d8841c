"""Run Spark SQL expressions on Arrow tables with DuckDB (how the table ops evaluate on Ray).

sqlglot transpiles each Spark tree to DuckDB; the rewrites below make DuckDB follow Spark where
the two differ (the README's "Differences on Ray" lists what remains). One in-process DuckDB
connection per thread, one thread each (Ray already runs a task per core), in time zone UTC
(dataflow's Spark sessions' ``spark.sql.session.timeZone``), whatever the machine's.
On Ray, null numbers may travel between steps as NaN (the numpy batch form cannot tell them
apart), so a float NaN read from a column counts as null here.
"""
from __future__ import annotations

import json
import re
import threading

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp
from dataflow.ops.table import duck_collections, duck_functions, json_path, python_functions, spark_hash, spark_times

__all__ = ["TABLE", "aggregate", "aggregate_sql", "keep_mask", "over_rows", "query", "quoted", "run", "to_duckdb", "with_columns", "with_columns_sql"]

_TABLE = TABLE = "__df_batch__"
_ROW = "__df_row__"
_local = threading.local()


def quoted(name: str) -> str:
    """A column name as a DuckDB identifier."""
    return '"' + name.replace('"', '""') + '"'


def _fn(name: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def _as(node: exp.Expression, type_name: str) -> exp.Expression:
    return exp.Cast(this=node, to=exp.DataType.build(type_name, dialect="duckdb"))


def _when(cond: exp.Expression, value: exp.Expression) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=cond, true=value)])


def _json_shape(dtype: exp.DataType) -> object:
    """A Spark type as the structure ``json_transform`` takes."""
    if dtype.is_type(exp.DataType.Type.STRUCT):
        return {f.name: _json_shape(f.args["kind"]) for f in dtype.expressions}
    if dtype.is_type(exp.DataType.Type.ARRAY):
        return [_json_shape(dtype.expressions[0])]
    return dtype.sql(dialect="duckdb")


def _from_json(node: exp.FromJson) -> exp.Expression:
    import json

    schema = node.expression
    if not (isinstance(schema, exp.Literal) and schema.is_string):
        raise ValueError("from_json needs its schema as a string literal on Ray")
    ddl = schema.name if schema.name.strip().lower().startswith("struct") else f"STRUCT<{schema.name}>"
    shape = _json_shape(exp.DataType.build(ddl, dialect="spark"))
    text = node.this
    return _when(_fn("json_valid", text), _fn("json_transform", text, exp.Literal.string(json.dumps(shape))))


def _java_replacement(node: exp.Expression) -> exp.Expression:
    """Java's ``$1`` group references as RE2's ``\\1``."""
    if isinstance(node, exp.Literal) and node.is_string:
        import re

        return exp.Literal.string(re.sub(r"\$(\d)", r"\\\1", node.name.replace("\\", "\\\\")))
    return node


_SPARK_UNITS = {"YYYY": "year", "YY": "year", "MON": "month", "MM": "month", "DD": "day"}


def _collects(node: exp.Expression) -> bool:
    """``collect_list``, ``collect_set``, ``array_agg``: the aggregates that give an array."""
    return isinstance(node, (exp.ArrayAgg, exp.ArrayUniqueAgg))


def _rewrite(node: exp.Expression, default_x: str | None) -> exp.Expression:
    """One Spark node as DuckDB nodes with Spark's result (sqlglot's own transpiling does the rest)."""
    from dataflow.ops.table.sql import HELPERS, _slope_x

    name = node.name.lower() if isinstance(node, exp.Anonymous) else ""
    if name in HELPERS:
        y, x = _slope_x(node, default_x)
        node = exp.RegrSlope(this=y, expression=x)
    if name == "mean":
        return exp.Avg(this=node.expressions[0])
    if name == "bround":
        return _fn("round_even", node.expressions[0], node.expressions[1] if len(node.expressions) > 1 else exp.Literal.number(0))
    if name == "timestamp_seconds":
        seconds = _as(node.expressions[0], "DECIMAL(38, 6)")  # an INT literal times 10**6 overflows 32 bits
        return _fn("make_timestamp", _as(exp.Mul(this=seconds, expression=exp.Literal.number(1000000)), "BIGINT"))
    if isinstance(node, (exp.Div, exp.Mod)):  # Spark: x / 0 and x % 0 are NULL (DuckDB gives inf, or fails on integers)
        node.set("expression", _fn("nullif", node.expression, exp.Literal.number(0)))
        if isinstance(node, exp.Div):  # Spark divides a FLOAT as a DOUBLE (DuckDB: FLOAT); DuckDB gives a DOUBLE for the rest
            node.set("this", exp.TryCast(this=node.this, to=exp.DataType.build("DOUBLE")))
        node.set("safe", None)  # sqlglot's own NULLIF, which it leaves out for some divisors
        return node
    if isinstance(node, exp.Round):
        # Spark rounds a double's decimal form half up (-5.85 -> -5.9); DuckDB its binary value (-5.8499.. -> -5.8)
        x, digits = node.this, node.args.get("decimals") or exp.Literal.number(0)
        decimal = exp.TryCast(this=_as(x.copy(), "VARCHAR"), to=exp.DataType.build("DECIMAL(38, 10)", dialect="duckdb"))
        exact = _as(exp.Round(this=decimal, decimals=digits.copy()), "DOUBLE")
        floating = exp.In(this=_fn("typeof", x.copy()), expressions=[exp.Literal.string("DOUBLE"), exp.Literal.string("FLOAT")])
        return exp.Case(ifs=[exp.If(this=floating, true=exp.Coalesce(this=exact, expressions=[node]))], default=node.copy())
    if isinstance(node, (exp.Like, exp.ILike)) and not isinstance(node.parent, exp.Escape):  # Spark escapes with \ (DuckDB's LIKE: no escape)
        return exp.Escape(this=node, expression=exp.Literal.string("\\"))
    if isinstance(node, (exp.ArgMin, exp.ArgMax)):  # Spark's min_by/max_by keep a NULL value of the row found (DuckDB's arg_min skips it)
        return _fn("arg_min_null" if isinstance(node, exp.ArgMin) else "arg_max_null", node.this, node.expression)
    if isinstance(node, exp.Kurtosis):  # Spark's is the population's excess kurtosis
        return _fn("kurtosis_pop", node.this)
    if isinstance(node, exp.Skewness):  # Spark's is the population's (DuckDB's: the sample's, bias-corrected)
        n = _fn("count", node.this.copy())
        return exp.Div(this=exp.Mul(this=node, expression=exp.paren(exp.Sub(this=n, expression=exp.Literal.number(2)))),
                       expression=_fn("sqrt", exp.Mul(this=n.copy(), expression=exp.paren(exp.Sub(this=n.copy(), expression=exp.Literal.number(1))))))
    if isinstance(node, exp.Factorial):  # Spark: a BIGINT, NULL outside 0..20 (DuckDB: a HUGEINT)
        ok = exp.Between(this=node.this.copy(), low=exp.Literal.number(0), high=exp.Literal.number(20))
        return _when(ok, _as(exp.Factorial(this=_as(node.this, "INTEGER")), "BIGINT"))
    if isinstance(node, exp.IntDiv):  # x div 0 is NULL, as / and % are
        node.set("expression", _fn("nullif", node.expression, exp.Literal.number(0)))
        return node
    if isinstance(node, exp.MonthsBetween):  # Spark counts the time of day too, in months of 31 days
        months = _fn("__df_months_between", node.this, node.expression)  # timestamps: coercion._time_casts
        if isinstance(node.args.get("roundoff"), exp.Boolean) and not node.args["roundoff"].this:
            return months
        return exp.Round(this=months, decimals=exp.Literal.number(8))  # Spark rounds to 8 digits unless roundOff is false
    if isinstance(node, exp.Nanvl):
        return exp.Case(ifs=[exp.If(this=_fn("isnan", node.this.copy()), true=node.expression)], default=node.this)
    if isinstance(node, exp.TimeToStr) and isinstance(node.args.get("format"), exp.Literal):  # date_format(t, pattern): Java's letters
        written = duck_functions.format_java(node.this, duck_functions.java_pattern(node.args["format"].name))
        if written is not None:
            return written
    if isinstance(node, exp.Window) and isinstance(node.this, (exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile)):
        return _as(node, "INTEGER")  # Spark's row_number, rank, dense_rank and ntile are INTs (DuckDB: BIGINTs)
    if _collects(node) and not isinstance(node.parent, exp.Window) or isinstance(node, exp.Window) and _collects(node.this):
        return exp.Coalesce(this=node, expressions=[exp.Array(expressions=[])])  # Spark: [] where no value is kept (DuckDB: NULL)
    if isinstance(node, (exp.DateTrunc, exp.TimestampTrunc)) and isinstance(node.args.get("unit"), (exp.Literal, exp.Var)):
        unit = node.args["unit"]  # Spark's names (MM, MON, YYYY, YY, DD) as DuckDB's; trunc(date) gives a DATE
        name = _SPARK_UNITS.get(unit.name.upper(), unit.name.lower())
        node.set("unit", exp.Literal.string(name) if isinstance(unit, exp.Literal) else exp.var(name.upper()))
        return _as(node, "DATE") if isinstance(node, exp.DateTrunc) else node
    if isinstance(node, exp.Elt):  # elt(n, a, b, ...): NULL outside 1..count (DuckDB's lists count from the end below 1)
        picked = exp.Bracket(this=exp.Array(expressions=node.expressions), expressions=[node.this.copy()], offset=1)
        return _when(exp.GTE(this=node.this, expression=exp.Literal.number(1)), picked)
    if isinstance(node, exp.ArrayDistinct):  # Spark keeps the first of each value, NULL too, in order (list_distinct does neither)
        x, i = exp.to_identifier("__df_x"), exp.to_identifier("__df_i")
        first = exp.EQ(this=_fn("list_position", node.this.copy(), exp.column(x)), expression=exp.column(i))
        return _fn("list_filter", node.this, exp.Lambda(this=first, expressions=[x, i]))
    if isinstance(node, exp.CountIf):  # Spark: 0 where no condition is true (DuckDB's count_if: NULL when all are NULL)
        return exp.Count(this=exp.Case(ifs=[exp.If(this=node.this, true=exp.Literal.number(1))]))
    if isinstance(node, exp.ApproxQuantile):  # Spark's answer where it is exact (n below its accuracy): rank ceil(p * n)
        return _fn("quantile_disc", node.this, node.args["quantile"])
    if isinstance(node, (exp.RegrSlope, exp.RegrIntercept, exp.Corr)):  # NaN where Spark gives NULL (x constant, one point)
        return _fn("nullif", node, _as(exp.Literal.string("NaN"), "DOUBLE"))
    if isinstance(node, (exp.Floor, exp.Ceil)) and node.args.get("decimals") is None:
        return _as(node, "BIGINT")
    if isinstance(node, exp.Ln):
        return exp.Ln(this=_when(exp.GT(this=node.this, expression=exp.Literal.number(0)), node.this))
    if isinstance(node, exp.Log):
        arg = node.expression if node.expression is not None else node.this
        positive = _when(exp.GT(this=arg, expression=exp.Literal.number(0)), arg)
        return exp.Log(this=node.this, expression=positive) if node.expression is not None else exp.Log(this=positive)
    if isinstance(node, exp.DayOfWeek):
        return exp.Add(this=node, expression=exp.Literal.number(1))  # Spark: 1 is Sunday
    if isinstance(node, exp.TsOrDsAdd):  # date_add / date_sub give a DATE
        return _as(node, "DATE")
    if isinstance(node, exp.StrToUnix):  # a string or a timestamp -> whole seconds
        return _as(_fn("floor", _fn("epoch", duck_functions.read_time(node.this, node.args.get("format")))), "BIGINT")
    if isinstance(node, exp.StrToTime):  # to_timestamp(s, pattern)
        return duck_functions.read_time(node.this, node.args.get("format"))
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.SIGNED_INTEGER_TYPES):  # Spark truncates, DuckDB rounds
        x, kind = node.this, _fn("typeof", node.this.copy())
        floating = exp.In(this=kind, expressions=[exp.Literal.string("DOUBLE"), exp.Literal.string("FLOAT")])
        text = _fn("trim", exp.TryCast(this=x.copy(), to=exp.DataType.build("VARCHAR")))
        decimal = exp.Like(this=kind.copy(), expression=exp.Literal.string("DECIMAL%"))
        whole = _fn("split_part", text.copy(), exp.Literal.string("."), exp.Literal.number(1))  # a decimal's digits before its point
        malformed = exp.and_(exp.EQ(this=kind.copy(), expression=exp.Literal.string("VARCHAR")),  # Spark: '2.7' is no INT (DuckDB: 3)
                             exp.Not(this=_fn("regexp_full_match", text.copy(), exp.Literal.string("[+-]?[0-9]+"))))
        return exp.Case(ifs=[exp.If(this=floating, true=exp.TryCast(this=_fn("trunc", exp.TryCast(this=x.copy(), to=exp.DataType.build("DOUBLE"))), to=node.to.copy())),
                             exp.If(this=decimal, true=exp.TryCast(this=whole, to=node.to.copy())), exp.If(this=malformed, true=exp.Null())], default=node)
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEXT_TYPES):  # a double or float as Spark writes it, an instant without its zone
        floating = exp.In(this=_fn("typeof", node.this.copy()), expressions=[exp.Literal.string("DOUBLE"), exp.Literal.string("FLOAT")])
        instant = exp.EQ(this=_fn("typeof", node.this.copy()), expression=exp.Literal.string("TIMESTAMP WITH TIME ZONE"))  # in UTC: '+00' ends it
        return exp.Case(ifs=[exp.If(this=floating, true=_fn("__df_java_double_text", _as(node.this.copy(), "VARCHAR"))),
                             exp.If(this=instant, true=_fn("regexp_replace", _as(node.this.copy(), "VARCHAR"), exp.Literal.string("\\+00$"), exp.Literal.string("")))],
                        default=node)
    if isinstance(node, exp.JSONExtractScalar):
        return _json_object(node)
    if isinstance(node, (exp.Upper, exp.Lower)):  # beyond ASCII: Java's full case mappings (``python_functions``)
        return _fn("__df_upper" if isinstance(node, exp.Upper) else "__df_lower", node.this)
    if isinstance(node, exp.Initcap):
        text = _as(node.this.copy(), "VARCHAR")
        return exp.Case(ifs=[exp.If(this=_fn("__df_ascii", node.this.copy()), true=node)], default=_fn("__df_case_text", text, exp.Literal.string("initcap")))
    if isinstance(node, exp.FromJson):
        return _from_json(node)
    if isinstance(node, exp.RegexpReplace):
        node.set("replacement", _java_replacement(node.args.get("replacement")))
    return duck_functions.rewrite(node)


def _json_object(node: exp.JSONExtractScalar) -> exp.Expression:
    """``get_json_object`` with a literal path by Spark's rules (``json_path``): valid JSON by DuckDB's ``->>`` where the path
    has no wildcard, the rest in Python; a path Spark reads as none is NULL. A path from a column: DuckDB's reading of it."""
    path = node.expression
    if not (isinstance(path, exp.Literal) and path.is_string):
        return _when(_fn("json_valid", node.this), node)
    steps = json_path.steps(path.name)
    if steps is None:
        return exp.cast(exp.Null(), "VARCHAR")
    spark = _fn("__df_json_path", _as(node.this.copy(), "VARCHAR"), exp.Literal.string(json.dumps(steps)))
    duckdb_path = json_path.duckdb_path(steps)
    if duckdb_path is None:
        return spark
    fast = exp.JSONExtractScalar(this=node.this.copy(), expression=exp.Literal.string(duckdb_path))
    if not steps or isinstance(steps[-1], int):  # a JSON null there is the text 'null' on Spark (a field's is NULL)
        fast = _fn("coalesce", fast, _as(exp.JSONExtract(this=node.this.copy(), expression=exp.Literal.string(duckdb_path)), "VARCHAR"))
    return exp.Case(ifs=[exp.If(this=_fn("json_valid", node.this), true=fast)], default=spark)


def to_duckdb(tree: exp.Expression, default_x: str | None = None) -> str:
    """Return a bound Spark tree as DuckDB SQL with Spark's semantics (the time casts in a second pass: the rewrites make them too)."""
    from dataflow.ops.table.sql import bottom_up

    return bottom_up(bottom_up(tree, lambda n: _rewrite(n, default_x)), _time_text).sql(dialect="duckdb")


_TIME_CASTS = {exp.DataType.Type.DATE: "__df_date", exp.DataType.Type.TIMESTAMPTZ: "__df_instant"}


def _time_text(node: exp.Expression) -> exp.Expression:
    """Text read as a date or an instant by Spark's grammar (``spark_times``): in the casts, and in the date
    functions whose text arguments sqlglot casts as it writes them (``to_date(s)``, ``date_add(s, 1)``, ``datediff``)."""
    if isinstance(node, exp.TryCast) and node.to.this in _TIME_CASTS:
        return _fn(_TIME_CASTS[node.to.this], node.this)
    if isinstance(node, exp.TsOrDsToDate):  # to_date(s, pattern): sqlglot writes the default pattern as a cast
        fmt = node.args.get("format")
        return _fn("__df_date", node.this) if fmt is None else _as(duck_functions.read_time(node.this, fmt), "DATE")
    if isinstance(node, (exp.TsOrDsAdd, exp.TsOrDsDiff)):
        for key in ("this", "expression") if isinstance(node, exp.TsOrDsDiff) else ("this",):
            if not (isinstance(node.args[key], exp.Anonymous) and node.args[key].name == "__df_date"):
                node.set(key, _fn("__df_date", node.args[key]))
    return node


#: Spark's text of a double or float (Java's ``Double.toString``) from DuckDB's (both the shortest digits):
#: ``3.0E-4`` for 0.0003, ``1.0E7`` for 1e7, ``1.0``, ``-0.0``, ``NaN``, ``Infinity``. Strings in, so it binds for any type.
_MACROS = """
CREATE MACRO __df_jtext4(d, e, sign) AS CASE
  WHEN d = '' THEN sign || '0.0'
  WHEN e >= 7 OR e < -3 THEN sign || d[1] || '.' || coalesce(nullif(substr(d, 2), ''), '0') || 'E' || e
  WHEN e >= 0 THEN sign || rpad(substr(d, 1, e + 1), CAST(e + 1 AS INTEGER), '0') || '.' || coalesce(nullif(substr(d, e + 2), ''), '0')
  ELSE sign || '0.' || repeat('0', CAST(-e - 1 AS INTEGER)) || d END;
CREATE MACRO __df_jtext3(all_digits, int_len, x, sign) AS __df_jtext4(rtrim(ltrim(all_digits, '0'), '0'),
  x + int_len - (length(all_digits) - length(ltrim(all_digits, '0'))) - 1, sign);
CREATE MACRO __df_jtext2(a, sign) AS __df_jtext3(replace(split_part(a, 'e', 1), '.', ''), length(split_part(split_part(a, 'e', 1), '.', 1)),
  coalesce(TRY_CAST(nullif(split_part(a, 'e', 2), '') AS INTEGER), 0), sign);
CREATE MACRO __df_java_double_text(s) AS CASE
  WHEN s IN ('nan', '-nan') THEN 'NaN' WHEN s = 'inf' THEN 'Infinity' WHEN s = '-inf' THEN '-Infinity'
  WHEN s[1] = '-' THEN __df_jtext2(substr(s, 2), '-') ELSE __df_jtext2(s, '') END;
"""


def _connection() -> duckdb.DuckDBPyConnection:
    con = getattr(_local, "con", None)
    if con is None:
        con = duckdb.connect(config={"threads": 1})
        con.execute("LOAD icu; SET TimeZone = 'UTC'")  # as dataflow's Spark sessions, not the machine's zone (ICU is built in)
        con.execute(_MACROS)
        con.execute(duck_functions.MACROS)
        con.execute(duck_collections.MACROS)
        spark_hash.register(con)
        python_functions.register(con)
        json_path.register(con)
        spark_times.register(con)
        _local.con = con
    return con


def _nan_as_null(table: pa.Table) -> pa.Table:
    for i, field in enumerate(table.schema):
        if pa.types.is_floating(field.type):
            col = table.column(i)
            table = table.set_column(i, field.name, pc.if_else(pc.is_nan(col), pa.scalar(None, field.type), col))
    return table


def _query(table: pa.Table, sql: str) -> pa.Table:
    con = _connection()
    con.register(_TABLE, _nan_as_null(table))
    try:
        return _instants(con.sql(sql).to_arrow_table(), table.schema)
    finally:
        con.unregister(_TABLE)


def _as_utc(kind: pa.DataType) -> pa.DataType:
    """``kind`` with every timestamp without a zone (at any depth) made one in UTC."""
    if pa.types.is_timestamp(kind):
        return pa.timestamp(kind.unit, kind.tz or "UTC")
    if pa.types.is_struct(kind):
        return pa.struct([f.with_type(_as_utc(f.type)) for f in kind])
    if pa.types.is_large_list(kind):
        return pa.large_list(kind.value_field.with_type(_as_utc(kind.value_type)))
    if pa.types.is_list(kind):
        return pa.list_(kind.value_field.with_type(_as_utc(kind.value_type)))
    if pa.types.is_map(kind):
        return pa.map_(kind.key_field.with_type(_as_utc(kind.key_type)), kind.item_field.with_type(_as_utc(kind.item_type)))
    return kind


def _instants(out: pa.Table, source: pa.Schema | None = None) -> pa.Table:
    """Spark's TIMESTAMP is an instant (``timestamp[us, tz=UTC]`` in Arrow); the rewrites compute one as DuckDB's
    TIMESTAMP without a zone (UTC wall-clock time). Where the input holds no timestamp without a zone (Spark's
    TIMESTAMP_NTZ, which such an input keeps and its arithmetic gives), each one out is Spark's TIMESTAMP: it is
    made one in UTC, the same instants, as Spark writes it."""
    if source is not None and any(_as_utc(f.type) != f.type for f in source):
        return out
    for i, field in enumerate(out.schema):
        kind = _as_utc(field.type)
        if kind != field.type:
            out = out.set_column(i, field.with_type(kind), out.column(i).cast(kind))
    return out


def _reads(expr: str, names: dict[str, str]) -> bool:
    """Whether a DuckDB expression may read one of ``names`` (a word match: a false hit only costs a query level)."""
    return any(re.search(r"(?<![\w$])" + re.escape(n) + r"(?![\w$])", expr) for n in names)


def with_columns(table: pa.Table, columns: dict[str, str]) -> pa.Table:
    """Set each named column to its DuckDB expression, in order (an expression may read the ones before it).

    Columns that read none of the names set before them in the same level share one SELECT.
    """
    return _query(table, with_columns_sql(list(table.column_names), columns, _TABLE)[0])


def with_columns_sql(names: list[str], columns: dict[str, str], source: str) -> tuple[str, list[str]]:
    """The query of :func:`with_columns` over ``source`` (a table name or a parenthesized query) whose columns are ``names``, and its column names."""
    names = list(names)
    sql, level = f"SELECT * FROM {source}", {}

    def close(sql: str) -> str:
        replaced = [f"({e}) AS {quoted(n)}" for n, e in level.items() if n in names]
        added = [f"({e}) AS {quoted(n)}" for n, e in level.items() if n not in names]
        names.extend(n for n in level if n not in names)
        star = f"* REPLACE ({', '.join(replaced)})" if replaced else "*"
        return f"SELECT {', '.join([star, *added])} FROM ({sql})"

    for name, expr in columns.items():
        if name in level or _reads(expr, level):
            sql, level = close(sql), {}
        level[name] = expr
    return (close(sql) if level else sql), names


def _spark_integers(out: pa.Table) -> pa.Table:
    """DuckDB sums integers into HUGEINT (Arrow decimal(38, 0)); Spark's sum of integers is a BIGINT."""
    for i, field in enumerate(out.schema):
        if pa.types.is_decimal(field.type) and field.type.scale == 0 and field.type.precision == 38:
            out = out.set_column(i, field.name, out.column(i).cast(pa.int64()))
    return out


def over_rows(table: pa.Table, columns: dict[str, str]) -> pa.Table:
    """Set each named column to its DuckDB window expression (``f(...) OVER (...)``); every row stays in its place."""
    indexed = table.append_column(_ROW, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    present = set(table.column_names)
    replaced = [f"({e}) AS {quoted(n)}" for n, e in columns.items() if n in present]
    added = [f"({e}) AS {quoted(n)}" for n, e in columns.items() if n not in present]
    star = f"* REPLACE ({', '.join(replaced)})" if replaced else "*"
    out = _query(indexed, f"SELECT {', '.join([star, *added])} FROM {_TABLE} ORDER BY {_ROW}")
    return _spark_integers(out.drop_columns([_ROW]))


def keep_mask(table: pa.Table, condition: str) -> np.ndarray:
    """Rows where the DuckDB boolean ``condition`` is true (NULL counts as false)."""
    out = _query(table, f"SELECT (({condition}) IS TRUE) AS keep FROM {_TABLE}")
    return np.asarray(out.column(0).to_numpy(), dtype=bool)


def aggregate(table: pa.Table, keys: list[str], aggregations: dict[str, str], extra: dict[str, str] | None = None) -> pa.Table:
    """One row per distinct ``keys`` (all rows when none) with each DuckDB aggregation; ``extra`` after them."""
    return query(table, aggregate_sql(keys, {**aggregations, **(extra or {})}, _TABLE))


def aggregate_sql(keys: list[str], items: dict[str, str], source: str) -> str:
    """The query of :func:`aggregate` over ``source`` (a table name or a parenthesized query)."""
    select = ", ".join([*(quoted(k) for k in keys), *(f"({e}) AS {quoted(n)}" for n, e in items.items())])
    group = f" GROUP BY {', '.join(quoted(k) for k in keys)}" if keys else ""
    return f"SELECT {select} FROM {source}{group}"


def query(table: pa.Table, sql: str) -> pa.Table:
    """Run DuckDB ``sql`` over ``table`` (named ``TABLE`` in it; a float NaN reads as null); sums of integers come back as BIGINT, as Spark's."""
    return _spark_integers(_query(table, sql))


def run(sql: str) -> pa.Table:
    """Run DuckDB ``sql`` that reads no batch (it scans a file itself); sums of integers come back as BIGINT, as Spark's."""
    return _spark_integers(_instants(_connection().sql(sql).to_arrow_table()))
