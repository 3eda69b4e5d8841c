"""Untyped JSON lines: runs of lines numbered as line by line, and Arrow's batch equal to Python's rows wherever it is taken."""
from __future__ import annotations

import gzip
import io
import json

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.formats import BadRecord
from connectors.formats.jsonl_runs import arrow_batch, read_jsonl_runs
from connectors.formats.lines import LineRun, jsonl_row, read_jsonl
from dataflow.engines.ray.read import rows_block

SRC = "/data/f.jsonl"


def python_rows(lines: list[bytes]) -> list[dict | BadRecord]:
    """What the reader builds line by line: each line's parsed row (blank lines none)."""
    return [r for i, raw in enumerate(lines, start=1) if (r := jsonl_row(f"{SRC}#line={i}", raw, int64=True)) is not None]


def both(lines: list[bytes]) -> tuple[pa.Table | None, object]:
    rows = python_rows(lines)
    expected = None if any(isinstance(r, BadRecord) for r in rows) else rows_block(rows)
    return arrow_batch(LineRun(SRC, 1, lines), 0, len(lines)), expected


def assert_same(got: pa.Table, expected) -> None:
    assert isinstance(expected, pa.Table), "Arrow took a batch that Python builds as object columns"
    assert got.schema == expected.schema
    assert repr(got.to_pylist()) == repr(expected.to_pylist())  # NaN and -0.0 compared too


scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | st.text(max_size=8)
keys = st.sampled_from(["a", "b", "ts", "__source__", "x y", "é", "A"])
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3), max_leaves=8)
objects = st.dictionaries(keys, values | st.sampled_from(["2024-01-01", "2024-01-01T10:00:00Z", "2024-01-01 10:00:00.5", "10:00"]), max_size=4)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(objects, min_size=1, max_size=12))
def test_an_arrow_batch_is_the_table_python_builds(rows):
    lines = [json.dumps(r, ensure_ascii=False).encode() for r in rows]
    got, expected = both(lines)
    if got is not None:
        assert_same(got, expected)


@pytest.mark.parametrize("text", [
    '{"a": 1}\n{"a": 2.5}',  # int and double: a double column
    '{"a": {"b": 1}}\n{"a": {"c": "x", "b": 2}}',  # struct fields in the order they come
    '{"b": 1}\n{"a": [1, 2]}\n{}',  # columns in the order they come, missing ones null
    '{"a": []}\n{"a": null}',  # an empty list: list<null>
    '{"ts": "2024-01-01T10:00:00Z", "d": {"x": "2024-01-01"}}',  # text Arrow reads as a timestamp is text
    '{"a": "\\u00e9\\ud83d\\ude00", "é": "ü"}',  # escapes and UTF-8
    '{"__source__": "theirs", "a": 1}',  # the data's own __source__ is replaced by the lineage
    '{"a": NaN, "b": -Infinity, "c": -0.0, "d": 1e308}',  # as Python's json reads them
])
def test_batches_arrow_takes(text):
    got, expected = both(text.encode().split(b"\n"))
    assert got is not None
    assert_same(got, expected)
    assert got.column("__source__").to_pylist()[0] == f"{SRC}#line=1"


@pytest.mark.parametrize("text", [
    '{"a": 1}\n{"a": "x"}',  # two kinds in a column: Python keeps objects
    '{"a": 1, "a": 2}',  # a repeated key: Python keeps the last
    '{"a": 12345678901234567890}',  # beyond 64 bits: a row error
    '{"a": 1}\n\n{"a": 2}',  # a blank line is no row
    '[1, 2]',  # not an object: a row error
    '{"a": 1} ',  # anything after the object
    '{"a": "\\ud800"}',  # a lone surrogate
    '{"a": true}\n{"a": 1}',
    '{"__df_x__": 1}',  # a working column's name
    '{"a": ' + "[" * 1001 + "]" * 1001 + "}",  # deeper than Python reads
    '{"a": 1}\n{"a": ' + "[" * 1001 + "]" * 1001 + '}\n{"a": 2}',  # and among short lines
])
def test_batches_python_parses(text):
    assert arrow_batch(LineRun(SRC, 1, text.encode().split(b"\n")), 0, len(text.split("\n"))) is None


def test_invalid_utf8_is_parsed_by_python():
    assert arrow_batch(LineRun(SRC, 1, [b'{"a": "\xff"}']), 0, 1) is None


def test_a_batch_inside_a_run_is_numbered_from_its_place():
    run = LineRun(SRC, 101, [b'{"a": %d}' % i for i in range(10)])
    got = arrow_batch(run, 4, 3)
    assert got.to_pylist() == [{"__source__": f"{SRC}#line={105 + i}", "a": 4 + i} for i in range(3)]


@pytest.mark.parametrize("data", [
    b'{"a": 1}\n{"a": 2}\n',
    b'\xef\xbb\xbf{"a": 1}\r\n{"a": 2}\r{"a": 3}\n\n{"a": 4}',  # BOM, CRLF, a lone CR, a blank line, no last break
    b'{"a": 1}\n' + b'{"a": "' + b"x" * 300 + b'"}\n{"a": 3}\n',  # a line over max_line_bytes
    b"",
])
@pytest.mark.parametrize(("multiple", "carried"), [(1, 1 << 20), (3, 1 << 20), (3, 10)])
def test_runs_number_lines_as_line_by_line(data, multiple, carried, monkeypatch):
    """Runs (a multiple of lines, or what is held once it outgrows a batch Arrow takes) give the rows and errors of line by line."""
    from connectors.formats import jsonl_runs

    monkeypatch.setattr(jsonl_runs, "_MAX_BATCH_BYTES", carried)
    monkeypatch.setattr(jsonl_runs, "_BLOCK", 16)  # a block of a line or two: lines carried from block to block
    options = {"max_line_bytes": 100}
    runs = list(read_jsonl_runs(SRC, io.BytesIO(data), options, multiple))
    flat = []
    for item in runs:
        if isinstance(item, BadRecord):
            flat.append(item)
        else:
            flat += [r for i, raw in enumerate(item.lines) if (r := jsonl_row(item.src(i), raw, int64=True)) is not None]
    assert flat == list(read_jsonl(SRC, io.BytesIO(data), options))


def test_a_damaged_gzip_keeps_the_lines_before_the_damage():
    from connectors.formats.compressed import decompressed

    body = b"".join(b'{"n": %d}\n' % i for i in range(50_000))
    packed = gzip.compress(body)[:-5000]

    def items(reader):
        with decompressed(io.BytesIO(packed), "f.jsonl.gz") as f:
            return list(reader(SRC, f, {}))

    flat = []
    for item in items(read_jsonl_runs):
        flat += [item] if isinstance(item, BadRecord) else [jsonl_row(item.src(i), raw, int64=True) for i, raw in enumerate(item.lines)]
    assert flat == items(read_jsonl)
    assert isinstance(flat[-1], BadRecord) and len(flat) > 1
