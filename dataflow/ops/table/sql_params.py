"""The params types of the table ops' Spark SQL texts: each is parsed (``dataflow.ops.table.sql``) when the params are validated."""
from __future__ import annotations

from pydantic_core import core_schema

from dataflow.ops.table.sql import parse, parse_aggregation, parse_window

__all__ = ["AggExpr", "Expr", "WindowAggExpr", "WindowExpr"]


def _check_expr(text: str) -> str:
    parse(text)
    return text


def _check_agg(text: str) -> str:
    parse_aggregation(text)
    return text


def _check_window_agg(text: str) -> str:
    parse_aggregation(text, implicit_x=True)
    return text


class _Parsed(str):
    """A Spark SQL text param, checked by ``_check`` when the params are validated."""

    _check = staticmethod(_check_expr)

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.no_info_after_validator_function(cls._check, core_schema.str_schema())


class Expr(_Parsed):
    """A Spark SQL scalar expression in a step's params; parsed when the params are validated."""


class AggExpr(_Parsed):
    """A Spark SQL aggregation (``count(*)``, ``sum(x)``, ``slope(y, x)``...) in a step's params."""

    _check = staticmethod(_check_agg)


def _check_window(text: str) -> str:
    parse_window(text)
    return text


class WindowExpr(_Parsed):
    """A ``table.window_columns`` column: ``lag``/``lead``/``row_number()`` in a key's order, or an aggregation over its rows."""

    _check = staticmethod(_check_window)


class WindowAggExpr(_Parsed):
    """An aggregation over a time window; ``slope(y)`` regresses y on the window's time column."""

    _check = staticmethod(_check_window_agg)
