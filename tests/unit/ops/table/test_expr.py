"""The SQL expression parser and checker: precedence, the function table, errors that say where."""
from __future__ import annotations

import pydantic
import pytest

from dataflow.ops.table import expr as E
from dataflow.ops.table.expr import ExprError, parse, parse_aggregation, parse_window


def test_precedence_follows_sql_and_not_binds_tighter_than_and():
    node = E.parse("NOT a = 1 AND b > 2 OR c")
    assert isinstance(node, E.Binary) and node.op == "or"
    left = node.left
    assert left.op == "and" and isinstance(left.left, E.Unary) and left.left.op == "not"
    assert E.parse("1 + 2 * 3") == E.Binary("+", E.Lit(1), E.Binary("*", E.Lit(2), E.Lit(3)))
    assert E.parse("'a' || 'b' = 'ab'").op == "="


def test_literals_quoting_params_and_negative_numbers():
    assert E.parse("'it''s'") == E.Lit("it's")
    assert E.parse("-2.5") == E.Lit(-2.5) and E.parse("1e3") == E.Lit(1000.0)
    assert E.parse("`odd name` IS NOT NULL") == E.IsNull(E.Col("odd name"), negated=True)
    assert E.parse("x < -:limit") == E.Binary("<", E.Col("x"), E.Unary("-", E.Param("limit")))


def test_predicates_in_between_like_case_cast():
    assert E.parse("x NOT IN (1, 2)") == E.InList(E.Col("x"), (E.Lit(1), E.Lit(2)), negated=True)
    assert E.parse("x BETWEEN 1 AND 3") == E.Between(E.Col("x"), E.Lit(1), E.Lit(3))
    assert E.parse("s LIKE 'sw1%'") == E.Like(E.Col("s"), "sw1%")
    case = E.parse("CASE WHEN x > 0 THEN 'pos' ELSE 'neg' END")
    assert isinstance(case, E.Case) and case.otherwise == E.Lit("neg")
    assert E.parse("CAST(x AS BIGINT)") == E.Cast(E.Col("x"), "long")


def test_columns_and_params_are_collected():
    node = E.parse("coalesce(a, b) > :t AND CASE WHEN c THEN d END")
    assert E.columns_of(node) == {"a", "b", "c", "d"}
    assert E.params_of(node) == {"t"}
    assert E.columns_of(E.parse_aggregation("slope(rx, ts)")) == {"rx", "ts"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("a >", "at the end: expected a value"),
        ("a $ b", "at column 3: unexpected character '$'"),
        ("flor(x)", "unknown function 'flor'"),
        ("sum(x) > 1", "aggregate function 'sum' is not allowed here"),
        ("round()", "function 'round' takes 1 to 2 argument(s), got 0"),
        ("CAST(x AS blob)", "unknown type 'blob'"),
        ("x NOT 3", "expected IN, BETWEEN or LIKE after NOT"),
        ("", "empty expression"),
    ],
    ids=["dangling-operator", "bad-character", "unknown-function", "aggregate-in-scalar", "arity", "bad-type", "dangling-not", "empty"],
)
def test_bad_expressions_say_where_and_what(text, message):
    with pytest.raises(E.ExprError, match=message.replace("(", r"\(").replace(")", r"\)").replace("$", r"\$")):
        E.parse(text)


def test_flor_suggests_floor():
    with pytest.raises(E.ExprError, match="did you mean 'floor'"):
        E.parse("flor(x)")


def test_aggregations_accept_one_aggregate_call():
    assert E.parse_aggregation("count(*)") == E.Aggregation("count", None)
    assert E.parse_aggregation("avg(x * 2)").func == "mean"
    assert E.parse_aggregation("slope(y)", implicit_x=True) == E.Aggregation("slope", E.Col("y"))
    with pytest.raises(E.ExprError, match="'slope' takes 2 argument"):
        E.parse_aggregation("slope(y)")
    with pytest.raises(E.ExprError, match="must be one call of"):
        E.parse_aggregation("x + 1")
    with pytest.raises(E.ExprError, match=r"at column 5 \('\*'\): expected a value"):
        E.parse_aggregation("sum(*)")


def test_expression_params_are_checked_when_validated():
    model = pydantic.create_model("M", where=(E.Expr, ...), agg=(E.AggExpr, "count(*)"))
    assert model(where="a > 1").model_dump() == {"where": "a > 1", "agg": "count(*)"}
    with pytest.raises(pydantic.ValidationError, match="unknown function 'nope'"):
        model(where="nope(a)")
    with pytest.raises(pydantic.ValidationError, match="must be one call of"):
        model(where="a", agg="a + 1")


@pytest.mark.parametrize(
    "text, message",
    [("percentile_approx(rx, 1.5)", "between 0 and 1"), ("percentile_approx(rx, p)", "between 0 and 1"), ("regr_slope(rx)", "takes 2")],
    ids=["fraction-above-1", "fraction-not-literal", "regr-needs-x"],
)
def test_spark_aggregates_check_their_arguments(text, message):
    with pytest.raises(ExprError, match=message):
        parse_aggregation(text)


def test_spark_aggregate_names_map_to_one_computation():
    assert parse_aggregation("regr_slope(rx, ts)").func == "slope" and parse_aggregation("stddev_samp(rx)").func == "stddev"
    assert parse_aggregation("percentile_approx(rx, 0.5)").fraction == 0.5


def test_window_functions_take_positive_literal_offsets():
    assert parse_window("lag(rx, 2)").offset == 2 and parse_window("lead(rx)").offset == 1
    assert parse_window("row_number()").func == "row_number" and parse_window("max(ts)").func == "max"
    with pytest.raises(ExprError, match="positive integer literal"):
        parse_window("lag(rx, 0)")
    with pytest.raises(ExprError, match="lag"):
        parse_window("rx + 1")


def test_unix_timestamp_needs_a_supported_literal_format():
    with pytest.raises(ExprError, match="string literal"):
        parse("unix_timestamp(t, fmt)")
    with pytest.raises(ExprError, match="pattern letter 'E'"):
        parse("unix_timestamp(t, 'EEE yyyy')")
