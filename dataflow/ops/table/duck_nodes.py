"""The sqlglot node builders the DuckDB rewrites share (``duck_functions``, ``duck_collections``, ``duck_urls``)."""
from __future__ import annotations

from sqlglot import exp

__all__ = ["call", "number", "any_null"]


def call(name: str, *args: exp.Expression) -> exp.Expression:
    """A call of the DuckDB function ``name``."""
    return exp.Anonymous(this=name, expressions=list(args))


def number(value: int) -> exp.Literal:
    return exp.Literal.number(value)


def any_null(*args: exp.Expression) -> exp.Expression:
    """Whether any of ``args`` is NULL."""
    tests = [exp.Is(this=a.copy(), expression=exp.Null()) for a in args]
    return exp.or_(*tests) if len(tests) > 1 else tests[0]
