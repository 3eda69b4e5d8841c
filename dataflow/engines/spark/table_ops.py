"""Native Spark lowerings of the table ops, each named by its entry in ``lowerings.LOWERINGS``.

A lowering is ``fn(df, step, named) -> DataFrame``. An op that meets bad data returns
``Checked``: its rows with a ``BAD`` flag column, and the cases that say why a row is bad, which
are evaluated on the bad rows only; the job's runner splits those off to ``_errors/``. Each
lowering matches the op's Arrow implementation in ``dataflow/ops/table`` (the conformance suite in
``tests/contracts/engine.py`` checks it).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import reduce
from typing import Any, Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dataflow.columns import SOURCE
from dataflow.engines.spark.columns import col, sql_literal, sql_name
from dataflow.engines.spark.compile import SparkStep
from dataflow.lineage import MATCH, WINDOW
from dataflow.ops.table.coercion import kind_of_type, may_coerce
from dataflow.ops.table.dedup import dedup_keys
from dataflow.ops.table.join import RIGHT_SOURCE, right_renames
from dataflow.ops.table.json_tuple import HIDDEN, entries, is_json_tuple, json_tuple_args
from dataflow.ops.table.parse_regex import group_names, java_pattern, named_patterns
from dataflow.ops.table.sql import ORDERED_WINDOW, columns_of, parse, parse_aggregation, parse_window, spark_sql
from dataflow.ops.table.types import SPARK_TYPES
from dataflow.ops.table.window_aggregate import TIME_SECONDS
from dataflow.ops.table.window_columns import over_key

__all__ = ["BAD", "Checked"]

BAD = "__df_bad__"
_CORRUPT = "__df_corrupt__"
_JSON_TUPLE = HIDDEN  # the parsed struct, dropped in the same step
# json_tuple's JSON parser (Jackson's defaults, unquoted control characters allowed), not from_json's
# more lenient defaults; a malformed record is flagged so that none of its fields are kept (json_tuple's NULLs).
_JSON_TUPLE_OPTIONS = {"columnNameOfCorruptRecord": _CORRUPT, "mode": "PERMISSIVE", "allowSingleQuotes": "false",
                       "allowNonNumericNumbers": "false", "allowUnquotedControlChars": "true"}


@dataclass
class Checked:
    """Rows flagged in column ``BAD``; ``cases`` are (condition, error type, reason), first match wins.

    A case's condition and reason are Spark SQL text: they are evaluated on bad rows only, once
    the run knows it has some. ``helpers`` are columns the cases read that good rows do not keep.
    ``errors_from``, when set, builds a cheaper frame holding every bad row (with the same
    columns): the error write reads it instead of a persisted copy of ``df``. It may build a
    ``Checked`` instead, whose own cases then give the reasons (``df`` need not have their columns). ``flag``, when set,
    is a helper column equal to ``BAD`` that only this check writes and its cases alone read: the
    check can then be folded into the next step's (``then``).
    """

    df: DataFrame
    cases: list[tuple[str, str, str]]
    helpers: tuple[str, ...] = ()
    errors_from: Callable[[], DataFrame | Checked] | None = None
    flag: str | None = None
    typed_by: str | None = None  # a helper column holding each bad row's error type (Python steps), instead of the cases'
    counted: bool = False  # its rows and bad rows were counted where they were read (the read's ``count``): not observed again

    def rows(self) -> DataFrame:
        """All rows, good and bad, without ``BAD``: the input of a step this check is folded into."""
        return self.df.drop(BAD)

    def then(self, nxt: Checked) -> Checked:
        """This check and ``nxt`` (a check over ``rows()``) as one; a row this one flags keeps its reason."""
        assert self.flag is not None, "only a check with its own flag column can be folded"
        return Checked(nxt.df.withColumn(BAD, F.col(BAD) | F.col(self.flag)), [*self.cases, *nxt.cases], helpers=(*self.helpers, *nxt.helpers))

    def error_columns(self) -> tuple[Column, Column]:
        """(error_type, reason) of a bad row."""
        etype = " ".join(f"WHEN {cond} THEN {sql_literal(t)}" for cond, t, _ in self.cases)
        reason = " ".join(f"WHEN {cond} THEN {r}" for cond, _, r in self.cases)
        return (F.col(self.typed_by) if self.typed_by else F.expr(f"CASE {etype} END")), F.expr(f"CASE {reason} END")


def _kinds(df: DataFrame, tree) -> dict[str, str] | None:
    """The kinds of ``df``'s columns where ``tree`` may need Spark's implicit casts made forgiving (``coercion``); None where not (no schema lookup)."""
    return {n: k for n, t in df.dtypes if (k := kind_of_type(t))} if may_coerce(tree) else None


def _vars(step: SparkStep) -> dict[str, Any]:
    return getattr(step.params, "vars", None) or {}


def _select(df: DataFrame, step: SparkStep, named) -> DataFrame:
    keep = list(dict.fromkeys([*step.params.columns, *([SOURCE] if SOURCE in df.columns else [])]))
    return df.select(*[col(c) for c in keep])


def _filter_rows(df: DataFrame, step: SparkStep, named) -> DataFrame:
    tree = parse(step.params.where)
    return df.where(F.expr(spark_sql(tree, _vars(step), kinds=_kinds(df, tree))))


def _with_columns(df: DataFrame, step: SparkStep, named) -> DataFrame:
    # One withColumns per run of expressions that read none of the names set before them in it:
    # the same result as one withColumn each, with fewer plans for Spark to analyse.
    batch: dict[str, Column] = {}
    for names, tree in entries(step.params.columns):
        if columns_of(tree) & batch.keys():
            df, batch = df.withColumns(batch), {}
        if not is_json_tuple(tree):
            batch[names[0]] = F.expr(spark_sql(tree, _vars(step), kinds=_kinds(df, tree)))
            continue
        # json_tuple as one from_json of its fields as strings (the same values, a third less time
        # than the generator), parsed once into a temporary column, then set in place like the others
        js, fields = json_tuple_args(tree)
        schema = T.StructType([T.StructField(f, T.StringType()) for f in dict.fromkeys([*fields, _CORRUPT])])
        df = df.withColumns(batch).withColumn(_JSON_TUPLE, F.from_json(F.expr(spark_sql(js, _vars(step))), schema, _JSON_TUPLE_OPTIONS))
        parsed, ok = F.col(_JSON_TUPLE), F.col(_JSON_TUPLE).getField(_CORRUPT).isNull()
        df, batch = df.withColumns({n: F.when(ok, parsed.getField(f)) for n, f in zip(names, fields)}).drop(_JSON_TUPLE), {}
    return df.withColumns(batch) if batch else df


def _parse_json(df: DataFrame, step: SparkStep, named) -> Checked:
    fields, column = step.params.fields, step.params.column
    # A field's type is a type name, or a Spark DDL type from the JSONL reader's inference.
    ddl = ", ".join([*(f"{sql_name(n)} {SPARK_TYPES.get(t, t)}" for n, t in fields.items()), f"{_CORRUPT} STRING"])  # no fields: only empty files
    text = sql_name(column)
    options = f"map('columnNameOfCorruptRecord', '{_CORRUPT}', 'mode', 'PERMISSIVE')"
    df = df.withColumn("__df_parsed__", F.expr(f"from_json({text}, {sql_literal(ddl)}, {options})"))
    parsed = {n: F.expr(f"__df_parsed__.{sql_name(n)}") for n in fields}
    df = df.withColumns({**parsed, BAD: F.expr(f"{text} IS NULL OR __df_parsed__.{_CORRUPT} IS NOT NULL")}).drop("__df_parsed__")
    # Evaluated on bad rows only: a second parse tells bad JSON from a field of the wrong type.
    as_map = f"from_json({text}, 'MAP<STRING, STRING>')"
    return Checked(df, [
        (f"{text} IS NULL", "TypeError", sql_literal(f"column '{column}' is null")),
        (f"get_json_object({text}, '$') IS NULL", "JSONDecodeError", "'invalid JSON'"),
        (f"{as_map} IS NULL", "TypeError", "'expected a JSON object'"),
        *[(f"{as_map}[{sql_literal(n)}] IS NOT NULL AND {sql_name(n)} IS NULL", "TypeError", sql_literal(f"field '{n}' is not a {t}")) for n, t in fields.items()],
        ("TRUE", "JSONDecodeError", "'invalid JSON'"),
    ])


def _parse_regex(df: DataFrame, step: SparkStep, named) -> DataFrame | Checked:
    column, mode, pattern = step.params.column, step.params.on_mismatch, step.params.pattern
    text = col(column)
    tried = [(name, *java_pattern(regex)) for name, regex in named_patterns(pattern).items()]
    hits = [text.rlike(regex) & text.isNotNull() for _, regex, _ in tried]
    matched = reduce(operator.or_, hits)
    if mode == "drop":
        df = df.where(matched)

    def first_match(values: list[Column]) -> Column:
        out = None
        for hit, value in zip(hits, values):
            out = F.when(hit, value) if out is None else out.when(hit, value)
        return out

    columns = {}
    for group in group_names(pattern):
        values = [F.regexp_extract(text, regex, groups[group]) if group in groups else F.lit(None).cast("string") for _, regex, groups in tried]
        value = first_match(values)
        columns[group] = F.when(value != "", value)
    if isinstance(pattern, dict):
        columns[step.params.pattern_column] = first_match([F.lit(name) for name, _, _ in tried])
    df = df.withColumns(columns)
    if mode != "error":
        return df
    df = df.withColumn(BAD, ~F.coalesce(matched, F.lit(False)))
    return Checked(df, [("TRUE", "ValueError", sql_literal(f"column '{column}' does not match the pattern"))])


def _cast(df: DataFrame, step: SparkStep, named) -> Checked:
    columns = step.params.columns
    flags = {f"__df_failed_{i}__": col(n).isNotNull() & col(n).try_cast(SPARK_TYPES[t]).isNull() for i, (n, t) in enumerate(columns.items())}
    df = df.withColumns(flags)
    df = df.withColumns({**{n: col(n).try_cast(SPARK_TYPES[t]) for n, t in columns.items()}, BAD: reduce(operator.or_, [F.col(f) for f in flags])})
    cases = [(sql_name(f), "ValueError", sql_literal(f"column '{n}': value is not a valid {t}")) for f, (n, t) in zip(flags, columns.items())]
    return Checked(df, cases, helpers=tuple(flags))


def _dedup(df: DataFrame, step: SparkStep, named) -> DataFrame:
    keys = dedup_keys(df.columns, step.params.keys)
    order_by, keep = step.params.order_by, step.params.keep
    order = []
    if order_by is not None:
        order.append(col(order_by).desc_nulls_last() if keep == "last" else col(order_by).asc_nulls_first())
    if SOURCE in df.columns:
        order.append(col(SOURCE).asc_nulls_first())
    if not order:
        return df.dropDuplicates(keys)
    rank = F.row_number().over(Window.partitionBy(*[col(k) for k in keys]).orderBy(*order))
    return df.withColumn("__df_rank__", rank).where(F.col("__df_rank__") == 1).drop("__df_rank__")


def _grouped(df: DataFrame, keys: list[str], aggregations: dict[str, Any], params: dict, default_x: str | None = None) -> DataFrame:
    aggs = [F.expr(spark_sql(tree, params, default_x, kinds=_kinds(df, tree))).alias(name) for name, tree in aggregations.items()]
    if SOURCE in df.columns:
        aggs.append(F.min(col(SOURCE)).alias(SOURCE))
    return df.groupBy(*[col(k) for k in keys]).agg(*aggs)


def _aggregate(df: DataFrame, step: SparkStep, named) -> DataFrame:
    parsed = {n: parse_aggregation(t) for n, t in step.params.aggregations.items()}
    return _grouped(df, list(step.params.keys or []), parsed, _vars(step))


def _window_aggregate(df: DataFrame, step: SparkStep, named) -> DataFrame:
    p = step.params
    keys, time, size = list(p.keys or []), p.time_column, int(p.size)
    slide = int(p.slide or size)
    t, x = col(time), time
    df = df.where(t.isNotNull())
    kind = df.schema[time].dataType if time in df.columns else None
    if isinstance(kind, (T.TimestampType, T.TimestampNTZType, T.DateType)):  # its UTC unix seconds: the windows' and slope(y)'s x (as on Ray)
        if isinstance(kind, T.DateType):
            seconds = (F.datediff(t, F.lit("1970-01-01").cast("date")) * 86400).cast("double")
        else:  # a local timestamp (NTZ) is read as UTC, as Arrow's timestamp without a zone on Ray
            seconds = F.unix_micros(F.from_utc_timestamp(t.cast("timestamp"), F.current_timezone()) if isinstance(kind, T.TimestampNTZType) else t) / 1e6
        df, t, x = df.withColumn(TIME_SECONDS, seconds), F.col(TIME_SECONDS), TIME_SECONDS
    elif kind is not None and not isinstance(kind, T.NumericType):
        raise TypeError(f"table.window_aggregate: time_column '{time}' is of type {kind.simpleString()}; it takes unix seconds (a number), a timestamp or a date")
    last = F.floor(t.cast("double") / F.lit(float(slide))) * F.lit(slide)
    if slide == size:
        df = df.withColumn("window_start", last.cast("bigint"))
    else:
        count = -(-size // slide)
        first = (last - F.lit((count - 1) * slide)).cast("bigint")
        starts = F.sequence(first, last.cast("bigint"), F.lit(slide).cast("bigint"))
        df = df.withColumn("window_start", F.explode(starts)).where(F.col("window_start") + F.lit(size) > t)
    parsed = {n: parse_aggregation(text, implicit_x=True) for n, text in p.aggregations.items()}
    out = _grouped(df, [*keys, "window_start"], parsed, _vars(step), default_x=x)
    out = out.withColumn("window_end", F.col("window_start") + F.lit(size))
    if slide < size and SOURCE in out.columns:
        out = out.withColumn(SOURCE, F.concat(col(SOURCE), F.lit(WINDOW), F.col("window_start").cast("string")))
    return out.select(*[col(k) for k in keys], "window_start", "window_end", *[col(n) for n in parsed], *([SOURCE] if SOURCE in out.columns else []))


def _window_columns(df: DataFrame, step: SparkStep, named) -> DataFrame:
    p = step.params
    columns: dict[str, Column] = {}
    for name, text in p.columns.items():
        tree = parse_window(text)
        windowed = over_key(tree, list(p.keys or []), p.order_by, SOURCE in df.columns)
        columns[name] = F.expr(spark_sql(windowed, _vars(step), kinds=_kinds(df, tree)))
    return df.withColumns(columns)


_HOW = {"inner": "inner", "left": "left", "right": "right", "full": "full", "semi": "left_semi", "anti": "left_anti"}


def _join(df: DataFrame, step: SparkStep, named: dict[str, DataFrame]) -> DataFrame:
    p = step.params
    keys, how = list(p.keys), p.how
    right = named[p.right]
    paired = SOURCE in df.columns and SOURCE in right.columns and how not in ("semi", "anti")
    right = right.withColumnRenamed(SOURCE, RIGHT_SOURCE) if paired else right.drop(SOURCE)
    renames = right_renames(df.columns, right.columns, keys, p.suffix)
    right = right.select(*[col(c).alias(renames.get(c, c)) for c in right.columns])
    left_types = dict(df.dtypes)
    for k in keys:
        if dict(right.dtypes)[k] != left_types[k]:
            right = right.withColumn(k, col(k).cast(left_types[k]))
    out = df.join(right, on=keys, how=_HOW[how])
    if how in ("semi", "anti"):
        return out.select(*[col(c) for c in df.columns])
    out = out.select(*[col(c) for c in df.columns], *[col(c) for c in right.columns if c not in keys])
    return _unique_identities(out) if paired else out


def _unique_identities(out: DataFrame) -> DataFrame:
    """``__source__`` as ``join_identity`` gives it: a left row matched several times gets ``#match=<rank>``."""
    left, right = col(SOURCE), col(RIGHT_SOURCE)
    matches = F.count(F.lit(1)).over(Window.partitionBy(left))
    rank = F.row_number().over(Window.partitionBy(left).orderBy(right.asc_nulls_first()))
    ident = F.when(left.isNull(), right).when(matches > 1, F.concat(left, F.lit(MATCH), rank.cast("string"))).otherwise(left)
    return out.withColumn(SOURCE, ident).drop(RIGHT_SOURCE)
