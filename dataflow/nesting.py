"""How deep a JSON text nests: Spark's JSON parser (Jackson's default) refuses a text nested deeper than
``MAX_DEPTH`` levels, the top object counted; where dataflow parses JSON in Python (Ray's untyped reads,
``table.parse_json``, Spark's schema inference) it refuses the same texts, where Python's parser failed the
run on one (``RecursionError``). Arrow and DuckDB read any depth (Ray's typed reads: README).
"""
from __future__ import annotations

import json
import re
import sys
from typing import Any, Callable, TypeVar

__all__ = ["MAX_DEPTH", "deep_call", "json_loads", "too_deep"]

T = TypeVar("T")

MAX_DEPTH = 1000
_TOKENS = {str: re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S), bytes: re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)}
_OPEN = {str: ("[", "{"), bytes: (b"[", b"{")}


def too_deep(text: str | bytes, start: int = 0, end: int | None = None) -> int | None:
    """Where ``text[start:end]`` (JSON) first nests deeper than ``MAX_DEPTH``, as an offset in ``text``, or None.

    Brackets inside strings do not count. A text of at most ``MAX_DEPTH`` opening brackets (every
    text of at most that many bytes) is answered by two counts, never scanned.
    """
    end = len(text) if end is None else end
    kind = str if isinstance(text, str) else bytes
    square, curly = _OPEN[kind]
    if end - start <= MAX_DEPTH or text.count(square, start, end) + text.count(curly, start, end) <= MAX_DEPTH:
        return None
    depth = 0
    for m in _TOKENS[kind].finditer(text, start, end):
        token = m.group()
        if len(token) != 1:
            continue
        if token in _OPEN[kind]:
            depth += 1
            if depth > MAX_DEPTH:
                return m.start()
        else:
            depth -= 1
    return None


def deep_call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``; where it runs out of Python's stack (``json`` reading or writing a value of up to
    ``MAX_DEPTH`` levels from deep in a worker), again with room for ``MAX_DEPTH`` more levels (twice: a level may take two calls)."""
    try:
        return fn(*args, **kwargs)
    except RecursionError:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(old + 2 * MAX_DEPTH)
        try:
            return fn(*args, **kwargs)
        finally:
            sys.setrecursionlimit(old)


def json_loads(text: str) -> Any:
    """``json.loads(text)``, but a text nested deeper than ``MAX_DEPTH`` levels is a ``JSONDecodeError`` (at the bracket that goes too deep) and one of up to that many levels parses from any caller's depth."""
    if (at := too_deep(text)) is not None:
        raise json.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", text, at)
    return deep_call(json.loads, text)
