"""Spark's ``get_json_object`` on Ray: the path read by Spark's grammar (``steps``) and the value by Spark's rules (``extract``).

``duck`` runs valid JSON and a path without a wildcard by DuckDB's ``->>`` (which gives Spark's text
there, but for doubles outside 0.001..10^7, written ``10000000.0`` where Spark writes ``1.0E7``);
the rest runs here, through ``__df_json_path(text, steps)``. Spark's rules (learned by probing
Spark 4): the text's first JSON value is read and nothing after it (``{"a":1} xyz`` gives ``1``);
the matches of ``[*]`` are written as a JSON array (Hive's rule), but a single match alone
(``$.a[*].b`` of ``{"a": [{"b": "x"}]}`` is ``"x"``, quoted), and no match is NULL; a field whose
value is JSON null is no match, a null at the root or an index is ``null``; ``[*][*]`` flattens
the inner arrays; after a wildcard, or an index followed by one, nested wildcards keep their
arrays. Values are written compactly as Jackson writes them (a double as Java's
``Double.toString``: ``2e3`` is ``2000.0``), a string at the top level without its quotes. A path
Spark reads as none (``$..a``, ``$.*``, ``a``, a slice) gives NULL. A wildcard path costs ~10 us a row.

Examples:
    >>> extract('{"a": [{"b": 1}, {"b": 2}]}', ("a", None, "b"))
    '[1,2]'
    >>> extract('{"a": [{"b": "x"}, {"c": 2}]}', ("a", None, "b"))
    '"x"'
"""
from __future__ import annotations

import functools
import json
import math
import re
from enum import Enum
from typing import Any

import pyarrow as pa

from dataflow.ops.table.casting import java_double

__all__ = ["duckdb_path", "extract", "register", "steps"]

Step = str | int | None  # a field's name, an array index, the wildcard ``[*]``


_STEP = re.compile(r"\.(?P<name>[^.\[]+)|\['(?P<quoted>[^']+)'\]|\[ *(?P<index>\d+)\]|\[\*\]")  # no group matched: ``[*]``
_INT_MAX = (1 << 31) - 1


class _Style(Enum):
    RAW = 1  # the top level: a string written without quotes
    QUOTED = 2  # inside the array of a wildcard's matches
    FLATTEN = 3  # inside ``[*][*]``: arrays written as their elements


class _Object(list):
    """A JSON object as its (name, value) pairs, in order, duplicates kept."""


def steps(path: str) -> tuple[Step, ...] | None:
    """The steps of a Spark JSON path after its ``$``; None for a path Spark reads as none (its value is NULL).

    Spark's grammar: ``$``, then ``.name`` (any characters up to the next ``.`` or ``[``; ``.*`` is
    none), ``['name']`` (no quote inside), ``[n]`` (spaces before the digits, an int) or ``[*]``.
    """
    if not path.startswith("$"):
        return None
    out: list[Step] = []
    pos = 1
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:
            return None
        name, quoted, index = m.group("name", "quoted", "index")
        if name == "*" or (index is not None and int(index) > _INT_MAX):
            return None
        out.append(name if name is not None else quoted if quoted is not None else int(index) if index is not None else None)
        pos = m.end()
    return tuple(out)


def duckdb_path(path: tuple[Step, ...]) -> str | None:
    """The path as DuckDB's ``->>`` reads it, where it has no wildcard and its names no ``"`` or ``\\``; else None."""
    if any(step is None or isinstance(step, str) and ('"' in step or "\\" in step) for step in path):
        return None
    return "$" + "".join(f'."{step}"' if isinstance(step, str) else f"[{step}]" for step in path)


def extract(text: str, path: tuple[Step, ...]) -> str | None:
    """Spark's ``get_json_object(text, path)`` for the steps of a path (``steps``).

    Like Spark's parser, it reads the first JSON value of the text (white space before it, control
    characters in its strings) and nothing after it.
    """
    try:
        root, _ = _DECODER.raw_decode(text.lstrip(" \t\n\r"))
        out = _Writer()
        return out.text() if _evaluate(root, out, _Style.RAW, path) else None
    except (ValueError, RecursionError):  # not JSON; nested deeper than Python's stack (Spark reads up to 1,000 levels)
        return None


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is no JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_Object, parse_constant=_refuse, strict=False)


class _Writer:
    """Compact JSON text, commas placed between the values of an array (Jackson's generator)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.firsts: list[bool] = []  # per open array: whether nothing was written in it yet

    def value(self, text: str) -> None:
        if self.firsts:
            if not self.firsts[-1]:
                self.parts.append(",")
            self.firsts[-1] = False
        self.parts.append(text)

    def start(self) -> None:
        self.value("[")
        self.firsts.append(True)

    def end(self) -> None:
        self.parts.append("]")
        self.firsts.pop()

    def text(self) -> str:
        return "".join(self.parts)


def _evaluate(value: Any, out: _Writer, style: _Style, steps: tuple[Step, ...]) -> bool:
    """Write what ``steps`` match in ``value`` to ``out``; whether anything matched."""
    is_array = isinstance(value, list) and not isinstance(value, _Object)
    if not steps:
        if style is _Style.RAW and isinstance(value, str):
            out.value(value)
            return True
        if style is _Style.FLATTEN and is_array:
            return any([_evaluate(v, out, style, ()) for v in value])  # a list: every element written
        out.value(_json(value))
        return True
    step, rest = steps[0], steps[1:]
    if isinstance(step, str):  # the first field of that name whose value is no null and matches
        return isinstance(value, _Object) and any(name == step and v is not None and _evaluate(v, out, style, rest) for name, v in value)
    if not is_array:
        return False
    if isinstance(step, int):
        inner = _Style.QUOTED if rest and rest[0] is None else style
        return step < len(value) and _evaluate(value[step], out, inner, rest)
    if rest and rest[0] is None:  # ``[*][*]``: one array of the inner arrays' elements
        out.start()
        matched = [_evaluate(v, out, _Style.FLATTEN, rest[1:]) for v in value]
        out.end()
        return any(matched)
    if style is _Style.QUOTED:
        out.start()
        matched = [_evaluate(v, out, style, rest) for v in value]
        out.end()
        return any(matched)
    matches = _Writer()  # Hive's rule: one match is written without the array around it
    matches.start()
    count = sum(_evaluate(v, matches, _Style.QUOTED if style is _Style.RAW else style, rest) for v in value)
    matches.end()
    if count:
        text = matches.text()
        out.value(text if count > 1 else text[1:-1])
    return count > 0


def _json(value: Any) -> str:
    """``value`` as Jackson writes it: compact, doubles as Java's ``Double.toString``, text as UTF-8."""
    if isinstance(value, _Object):
        return "{" + ",".join(f"{_string(k)}:{_json(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json(v) for v in value) + "]"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, float):  # Infinity (from 1e400) as a string, as Jackson writes it
        return java_double(value) if math.isfinite(value) else f'"{java_double(value)}"'
    return _LITERALS[value] if value is None or isinstance(value, bool) else str(value)


_LITERALS = {None: "null", True: "true", False: "false"}
_ESCAPES = {**{i: f"\\u{i:04X}" for i in range(0x20)}, 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}


def _string(text: str) -> str:
    return '"' + text.translate(_ESCAPES) + '"'


@functools.lru_cache(maxsize=64)
def _steps(encoded: str) -> tuple[Step, ...]:
    return tuple(json.loads(encoded))


def _extract_all(texts: pa.Array, paths: pa.Array) -> pa.Array:
    out = [None if t is None or p is None else extract(t, _steps(p)) for t, p in zip(texts.to_pylist(), paths.to_pylist())]
    try:
        return pa.array(out, pa.string())
    except UnicodeEncodeError:  # a lone surrogate (``"\\ud800"`` in the JSON) has no UTF-8: replaced
        return pa.array([None if v is None else v.encode("utf-8", "replace").decode("utf-8") for v in out], pa.string())


def register(con) -> None:
    """Create ``__df_json_path(text, steps)`` (``steps`` as a JSON array: names, indexes, null for ``[*]``) on a DuckDB connection."""
    from duckdb.sqltypes import VARCHAR

    con.create_function("__df_json_path", _extract_all, [VARCHAR, VARCHAR], VARCHAR, type="arrow", null_handling="special", side_effects=False)
