"""Spark SQL expressions: checked with sqlglot, bound without pasting text, rendered for Spark and DuckDB."""
from __future__ import annotations

import math

import pyarrow as pa
import pydantic
import pytest

from dataflow.ops.table import duck
from dataflow.ops.table import sql as S


def test_columns_read_count_struct_fields_as_their_column_and_skip_lambda_variables():
    tree = S.parse("coalesce(a, `odd name`) > :t AND meta.lang = 'en' AND exists(arr, x -> x > b)")
    assert S.columns_of(tree) == {"a", "odd name", "meta", "arr", "b"}
    assert S.params_of(tree) == {"t"}
    assert S.columns_of(S.parse_aggregation("slope(rx, ts)")) == {"rx", "ts"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("a >", "at column 3: incomplete GT"),
        ("a b", "at column 3: unexpected 'b' after the expression"),
        ("x > 1)", "at column 6:"),
        ("flor(x)", "unknown function 'flor' in 'flor(x)'; did you mean 'floor'?"),
        ("sum(x) > 1", "aggregate function 'sum' is not allowed here"),
        ("row_number() OVER (ORDER BY a)", "window functions (OVER) are not allowed here"),
        ("SELECT a FROM t", "expected one expression, not a statement or a subquery"),
        ("a; DROP TABLE t", "expected one expression, not a statement or a subquery"),
        ("'abc", "an unterminated quote?"),
        ("", "empty expression"),
        ("to_timestamp_ntz(ts)", "to_timestamp_ntz gives Spark's TIMESTAMP_NTZ, which dataflow does not compute on Ray; use to_timestamp"),
    ],
    ids=["dangling-operator", "two-expressions", "stray-paren", "unknown-function", "aggregate-in-scalar", "window", "query", "statements", "quote", "empty",
         "timestamp-ntz"],
)
def test_bad_expressions_say_where_and_what(text, message):
    with pytest.raises(S.ExprError, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        S.parse(text)


def test_aggregations_need_every_column_inside_an_aggregate():
    assert S.is_count(S.parse_aggregation("count(DISTINCT x)"))
    S.parse_aggregation("sum(v) FILTER (WHERE x > 0) / count(*)")
    S.parse_aggregation("slope(y)", implicit_x=True)
    with pytest.raises(S.ExprError, match="'slope' takes 2 argument"):
        S.parse_aggregation("slope(y)")
    with pytest.raises(S.ExprError, match="needs an aggregate function"):
        S.parse_aggregation("x + 1")
    with pytest.raises(S.ExprError, match="at column 1: column 'x' is read outside an aggregate function"):
        S.parse_aggregation("x + count(*)")
    with pytest.raises(S.ExprError, match="cannot be nested"):
        S.parse_aggregation("sum(max(x))")


def test_vars_are_bound_as_literals_never_pasted_into_the_text():
    tree = S.parse("s = :v AND n < :n AND f > :f")
    hostile = {"v": "x' OR TRUE OR '", "n": -3, "f": 1.5}
    table = pa.table({"s": ["x' OR TRUE OR '", "x"], "n": [-4, -4], "f": [2.0, 2.0]})
    assert duck.keep_mask(table, S.duckdb_sql(tree, hostile)).tolist() == [True, False]
    assert "'x\\' OR TRUE OR \\''" in S.spark_sql(tree, hostile)
    with pytest.raises(KeyError, match="no value for ':v'"):
        S.spark_sql(tree, {})
    assert S.parse("a + 1").sql() == "a + 1"  # binding copies: the cached tree keeps its markers
    big = duck.with_columns(pa.table({"a": [1]}), {"b": S.duckdb_sql(S.parse(":n * 3"), {"n": 2**31})})
    assert big.column("b").to_pylist() == [3 * 2**31]  # integers bind as BIGINT


def test_a_var_is_read_as_the_literal_it_stands_for():
    """A pattern or a JSON path given by ``vars:`` is read by Spark's rules as a literal one is (not DuckDB's)."""
    table = pa.table({"ts": ["2024-03-05 13:45:30"], "j": ['{"a": [1, 2]}']})
    columns = {"h": S.duckdb_sql(S.parse("date_format(ts, :f)"), {"f": "yyyy-MM-dd HH"}), "a": S.duckdb_sql(S.parse("get_json_object(j, :p)"), {"p": "$.a[*]"})}
    out = duck.with_columns(table, columns)
    assert (out.column("h").to_pylist(), out.column("a").to_pylist()) == (["2024-03-05 13"], ["[1,2]"])


def test_spark_text_does_not_depend_on_the_ansi_flag():
    text = S.spark_sql(S.parse("a / b + a % b + cast(s AS INT) + element_at(arr, 5) + arr[1] + m['k']"))
    assert text == "TRY_DIVIDE(a, b) + TRY_MOD(a, b) + TRY_CAST(s AS INT) + TRY_ELEMENT_AT(arr, 5) + GET(arr, 1) + m['k']"
    assert S.spark_sql(S.parse_aggregation("slope(y)", implicit_x=True), default_x="ts") == "REGR_SLOPE(y, `ts`)"


def test_duckdb_reads_nan_as_null_and_later_columns_read_earlier_ones():
    table = pa.table({"x": [1.0, math.nan, None], "k": ["a", "a", "b"]})
    out = duck.with_columns(table, {"y": S.duckdb_sql(S.parse("coalesce(x, -1) * 2")), "x": S.duckdb_sql(S.parse("y + 1"))})
    assert out.column_names == ["x", "k", "y"]
    assert out.to_pydict() == {"x": [3.0, -1.0, -1.0], "k": ["a", "a", "b"], "y": [2.0, -2.0, -2.0]}
    assert duck.keep_mask(table, S.duckdb_sql(S.parse("x > 0"))).tolist() == [True, False, False]


def test_expression_params_are_checked_when_validated():
    from dataflow.ops.table.sql_params import AggExpr, Expr

    model = pydantic.create_model("M", where=(Expr, ...), agg=(AggExpr, "count(*)"))
    assert model(where="a > 1").model_dump() == {"where": "a > 1", "agg": "count(*)"}
    with pytest.raises(pydantic.ValidationError, match="unknown function 'nope'"):
        model(where="nope(a)")
    with pytest.raises(pydantic.ValidationError, match="needs an aggregate function"):
        model(where="a", agg="a + 1")


def test_documented_differences_on_ray():
    """README "Differences on Ray": RE2 patterns, overflow fails, string subscripts are map keys."""
    import duckdb

    table = pa.table({"s": ["ab"], "i": pa.array([2**63 - 1], pa.int64())})
    with pytest.raises(duckdb.Error):  # look-ahead is Java-only
        duck.with_columns(table, {"m": S.duckdb_sql(S.parse("regexp_extract(s, 'a(?=b)', 0)"))})
    with pytest.raises(duckdb.Error, match="Overflow"):
        duck.with_columns(table, {"m": S.duckdb_sql(S.parse("i + 1"))})
    assert duck.with_columns(table, {"r": S.duckdb_sql(S.parse(r"regexp_replace(s, '(a)(b)', '$2$1')"))}).column("r").to_pylist() == ["ba"]
    assert S.spark_sql(S.parse("m['k'] + a[0]")) == "m['k'] + GET(a, 0)"
    with pytest.raises(ValueError, match="from_json needs its schema as a string literal on Ray"):
        S.duckdb_sql(S.parse("from_json(s, schema_column)"))
    dec = duck.with_columns(table, {"d": S.duckdb_sql(S.parse("cast(1.5 AS decimal(5, 2)) * 3"))}).column("d")
    assert dec.type == pa.decimal128(15, 2) and float(dec[0].as_py()) == 4.5  # Spark: decimal(8, 2), the same value


def test_duckdb_text_is_kept_per_value_and_type_of_each_var():
    tree = S.parse("x = :v")
    table = pa.table({"x": pa.array([1.0, 2.0])})
    texts = {repr(v): S.duckdb_sql(tree, {"v": v}) for v in (1, True, 1.0, "1", 2)}
    assert len(set(texts.values())) == 5  # values that compare equal (1, True, 1.0) are different literals
    assert S.duckdb_sql(tree, {"v": 2}) == texts["2"] and S.duckdb_sql(tree, {"v": 1}) == texts["1"]
    assert duck.keep_mask(table, S.duckdb_sql(tree, {"v": 2})).tolist() == [False, True]
    with pytest.raises(KeyError):
        S.duckdb_sql(tree, {})
