"""JSON nesting depth: what Spark's parser refuses (deeper than ``MAX_DEPTH`` levels), Ray's readers refuse alike."""
from __future__ import annotations

import inspect
import json
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataflow import nesting

_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab\n\u00e9'),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[{"\\k', max_size=3), inner, max_size=3), max_leaves=30)


def _depth(value) -> int:
    """Levels of lists and objects (a loop: values of a thousand levels are measured too)."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        value, level = todo.pop()
        if isinstance(value, (list, dict)):
            todo += [(v, level + 1) for v in (value.values() if isinstance(value, dict) else value)]
            level += 1
        deepest = max(deepest, level)
    return deepest


@settings(max_examples=500, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_VALUES, limit=st.integers(1, 6), ascii_only=st.booleans())
def test_too_deep_is_the_depth_of_the_parsed_value_brackets_in_strings_aside(value, limit, ascii_only, monkeypatch):
    monkeypatch.setattr(nesting, "MAX_DEPTH", limit)
    text = json.dumps(value, ensure_ascii=ascii_only)
    for data in (text, text.encode()):
        at = nesting.too_deep(data)
        assert (at is not None) == (_depth(value) > limit)
        if at is not None:  # the bracket that goes one level too deep
            opened = data[:at + 1]
            assert _depth_of_prefix(opened) == limit + 1


def _depth_of_prefix(prefix) -> int:
    """The nesting depth at the end of a JSON prefix that ends in an opening bracket."""
    text = prefix.decode() if isinstance(prefix, bytes) else prefix
    depth, in_string, escaped = 0, False, False
    for c in text:
        if in_string:
            in_string, escaped = (in_string, False) if escaped else (c != '"', c == "\\")
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
    return depth


def test_json_loads_refuses_what_spark_refuses_and_reads_its_deepest_from_deep_in_a_stack():
    edge = "[" * (nesting.MAX_DEPTH - 1) + "{}" + "]" * (nesting.MAX_DEPTH - 1)
    over = "[" + edge + "]"

    def nested_calls(n):  # a reader deep in a worker's stack, under Python's default limit: its json alone fails there
        if n:
            return nested_calls(n - 1)
        with pytest.raises(RecursionError):
            json.loads(edge)
        return nesting.json_loads(edge)

    old, limit = sys.getrecursionlimit(), 1000 + len(inspect.stack())  # Python's default here: other imports of the suite raise it
    sys.setrecursionlimit(limit)
    try:
        assert _depth(nested_calls(400)) == nesting.MAX_DEPTH
        assert sys.getrecursionlimit() == limit  # raised for that call only
    finally:
        sys.setrecursionlimit(old)
    with pytest.raises(json.JSONDecodeError, match=f"nested deeper than {nesting.MAX_DEPTH} levels") as caught:
        nesting.json_loads(over)
    assert caught.value.pos == nesting.MAX_DEPTH
