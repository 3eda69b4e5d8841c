"""``table.with_columns`` entries, including Spark's ``json_tuple`` generator (several columns from one JSON string).

An entry is ``name: expression``, or ``"(a, b)": "json_tuple(js, 'a', 'b')"``, which sets the
columns a and b as Spark's ``SELECT json_tuple(js, 'a', 'b') AS (a, b)`` does: each is the
field's value as a string (a nested object or array as compact JSON text), NULL for a missing
field, a JSON null, or text that is not a JSON object. Spark parses it with one ``from_json`` of the
fields as strings (with ``json_tuple``'s parser options; the generator costs 1.5x as much); Ray runs
``json_extract_string`` per field in DuckDB.

Examples:
    >>> [names for names, _ in entries({"(a, b)": "json_tuple(js, 'a', 'b')", "c": "a || b"})]
    [('a', 'b'), ('c',)]
"""
from __future__ import annotations

import functools
import re
from typing import Any

from pydantic_core import core_schema
from sqlglot import exp

from dataflow.ops.table.sql import ExprError, duckdb_sql, parse

__all__ = ["HIDDEN", "ColumnExprs", "duckdb_columns", "entries", "is_json_tuple", "json_tuple_args", "output_names"]

_NAMES = re.compile(r"^\(\s*(.*?)\s*\)$", re.S)


def output_names(key: str) -> tuple[str, ...]:
    """The columns an entry's key names: ``"(a, b)"`` -> ``("a", "b")``, ``"x"`` -> ``("x",)``.

    Raises:
        ExprError: an empty name inside the parentheses.
    """
    m = _NAMES.match(str(key))
    if m is None:
        return (str(key),)
    names = tuple(n.strip().strip("`") for n in m.group(1).split(","))
    if not all(names):
        raise ExprError(f"expected column names like '(a, b)', got {key!r}")
    return names


def is_json_tuple(tree: exp.Expression) -> bool:
    """Whether an expression is a ``json_tuple(...)`` call."""
    return isinstance(tree, exp.Anonymous) and tree.name.lower() == "json_tuple"


@functools.lru_cache(maxsize=4096)
def _entry(key: str, text: str) -> tuple[tuple[str, ...], exp.Expression]:
    names = output_names(key)
    tree = parse(text, generator=True)
    if not is_json_tuple(tree):
        if len(names) > 1:
            raise ExprError(f"'{key}' names {len(names)} columns: its expression must be json_tuple(json, 'field', ...), got {text!r}")
        return names, tree
    fields = tree.expressions[1:]
    if not fields or not all(isinstance(f, exp.Literal) and f.is_string for f in fields):
        raise ExprError(f"json_tuple takes a JSON string and field names as string literals, got {text!r}")
    if len(fields) != len(names):
        raise ExprError(f"json_tuple gives {len(fields)} column(s) but the key {key!r} names {len(names)}; "
                        f"name one per field: '({', '.join(f.name for f in fields)})'")
    return names, tree


def entries(columns: dict[str, str]) -> list[tuple[tuple[str, ...], exp.Expression]]:
    """Each entry as (the column names it sets, its parsed expression: copy before changing it).

    Raises:
        ExprError: an expression that does not parse, or a json_tuple whose key does not name one column per field.
    """
    return [_entry(str(k), str(v)) for k, v in columns.items()]


#: The hidden column of one json_tuple's values on Ray (``HIDDEN`` and its index), dropped after the step.
HIDDEN = "__df_json_tuple__"


def duckdb_columns(columns: dict[str, str], params: dict[str, Any] | None, kinds: dict[str, str] | None = None) -> dict[str, str]:
    """Each column set by the entries -> its DuckDB expression; a json_tuple parses its JSON once,
    into a hidden list column (``HIDDEN``) its columns index. ``kinds``: the input columns' (``coercion``)."""
    out: dict[str, str] = {}
    for k, (names, tree) in enumerate(entries(columns)):
        if not is_json_tuple(tree):
            out[names[0]] = duckdb_sql(tree, params, kinds=kinds)
            continue
        js = duckdb_sql(tree.expressions[0], params, kinds=kinds)
        paths = ", ".join("'" + ('$."' + f.name.replace('"', '\\"') + '"').replace("'", "''") + "'" for f in tree.expressions[1:])
        hidden = f"{HIDDEN}{k}"
        out[hidden] = f"try(json_extract_string({js}, [{paths}]))"  # NULL for text that is not JSON; parsed once (json_valid would parse it twice)
        out.update({name: f'"{hidden}"[{i + 1}]' for i, name in enumerate(names)})
    return out


def json_tuple_args(tree: exp.Expression) -> tuple[exp.Expression, tuple[str, ...]]:
    """A json_tuple call's JSON expression and its field names."""
    return tree.expressions[0], tuple(f.name for f in tree.expressions[1:])


def _check_text(text: str) -> str:
    parse(text, generator=True)  # an error names the entry's key (its YAML line)
    return text


def _check(value: dict) -> dict:
    entries(value)
    return value


class ColumnExprs(dict):
    """``table.with_columns``'s columns: name -> Spark SQL expression, or ``"(a, b)"`` -> ``json_tuple(js, 'a', 'b')``."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        text = core_schema.no_info_after_validator_function(_check_text, core_schema.str_schema())
        return core_schema.no_info_after_validator_function(_check, core_schema.dict_schema(core_schema.str_schema(), text))
