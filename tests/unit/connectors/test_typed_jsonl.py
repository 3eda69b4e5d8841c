"""JSONL with a declared schema (Ray's read): Arrow blocks where clean, line by line where not; every line a row or a row error."""
from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.formats import BadRecord
from connectors.formats import typed_jsonl
from connectors.formats.typed_jsonl import arrow_schema, read_typed_jsonl, read_typed_jsonl_blocks
from connectors.registry import decompressed

SCHEMA = {"level": "string", "lat": "double", "n": "int", "ctx": "struct<region: string, attempt: int>"}


def _read(path, schema=SCHEMA, blocks=True, **options):
    """Rows (dicts) and errors (source, type) of a file, as Ray's ReadStream would read it."""
    read = read_typed_jsonl_blocks if blocks else read_typed_jsonl
    with open(path, "rb") as raw, decompressed(raw, str(path)) as f:
        out = list(read(str(path), f, {"schema": schema, **options}))
    tables = [r for r in out if isinstance(r, pa.Table)]
    assert all(t.schema == arrow_schema(schema) for t in tables)
    rows = [row for t in tables for row in t.to_pylist()]
    return rows, [(b.source, b.error_type) for b in out if isinstance(b, BadRecord)]


def _line(i: int, **extra) -> str:
    return json.dumps({"level": "INFO", "lat": i + 0.5, "n": i, "ctx": {"region": "eu", "attempt": 1, "pod": "x"}, "extra": [1], **extra})


def test_clean_file_parses_into_declared_types_with_exact_line_numbers(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text("\n".join(_line(i) for i in range(3)) + "\n")
    rows, errors = _read(p)
    assert errors == []
    assert rows[2] == {"__source__": f"{p}#line=3", "level": "INFO", "lat": 2.5, "n": 2, "ctx": {"region": "eu", "attempt": 1}}


def test_bad_lines_are_row_errors_and_the_block_keeps_its_good_lines(tmp_path):
    p = tmp_path / "b.jsonl"
    lines = [_line(0), "{not json", '{"lat": "fast"}', "null", "[1, 2]", '{"n": 1.5}', '{"n": 3000000000}', "", "   ", _line(9), '{"level": 7, "ctx": null}']
    p.write_text("\n".join(lines))  # no LF after the last line
    rows, errors = _read(p)
    assert errors == [(f"{p}#line=2", "JSONDecodeError"), (f"{p}#line=3", "TypeError"), (f"{p}#line=4", "TypeError"),
                      (f"{p}#line=5", "TypeError"), (f"{p}#line=6", "TypeError"), (f"{p}#line=7", "TypeError")]
    assert [r["__source__"] for r in rows] == [f"{p}#line=1", f"{p}#line=10", f"{p}#line=11"]
    assert rows[2]["level"] == "7" and rows[2]["ctx"] is None  # a string takes any value as its JSON text, as Spark's


def test_wrong_kind_in_a_struct_field_names_the_field(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"ctx": {"attempt": "two"}}\n')
    with open(p, "rb") as f:
        (bad,) = list(read_typed_jsonl_blocks(str(p), f, {"schema": SCHEMA}))
    assert bad.error_type == "TypeError" and "ctx.attempt" in bad.reason


def test_null_only_lines_never_reach_arrow_and_are_row_errors(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text("null\n" * 50)
    rows, errors = _read(p)
    assert rows == [] and len(errors) == 50 and errors[-1] == (f"{p}#line=50", "TypeError")


def test_cr_line_ends_are_numbered_as_splitlines_does(tmp_path):
    p = tmp_path / "e.jsonl"
    p.write_bytes((_line(0) + "\r\n" + _line(1) + "\r" + _line(2) + "\n").encode())
    rows, errors = _read(p)
    assert errors == [] and [r["n"] for r in rows] == [0, 1, 2]
    assert [r["__source__"] for r in rows] == [f"{p}#line={i}" for i in (1, 2, 3)]


def test_two_objects_on_one_line_are_one_row_error_not_two_rows(tmp_path):
    p = tmp_path / "f.jsonl"
    p.write_text(_line(0) + "\n" + _line(1) + _line(2) + "\n" + _line(3) + "\n")
    rows, errors = _read(p)
    assert errors == [(f"{p}#line=2", "JSONDecodeError")] and [r["n"] for r in rows] == [0, 3]


def test_non_utf8_line_is_a_row_error(tmp_path):
    p = tmp_path / "g.jsonl"
    p.write_bytes(_line(0).encode() + b'\n{"level": "\xff"}\n' + _line(2).encode() + b"\n")
    rows, errors = _read(p)
    assert errors == [(f"{p}#line=2", "UnicodeDecodeError")] and [r["n"] for r in rows] == [0, 2]


def test_other_encoding_and_gzip_read_line_by_line_into_the_same_rows(tmp_path):
    text = _line(0, level="é") + "\n{bad\n" + _line(2) + "\n"
    plain, latin, gz = tmp_path / "h.jsonl", tmp_path / "h1.jsonl", tmp_path / "h.jsonl.gz"
    plain.write_text(text, encoding="utf-8")
    latin.write_bytes(text.encode("latin-1"))
    gz.write_bytes(gzip.compress(text.encode()))
    want, want_errors = _read(plain)
    for path, options in ((latin, {"encoding": "latin-1"}), (gz, {})):
        rows, errors = _read(path, blocks=False, **options)
        assert [{**r, "__source__": None} for r in rows] == [{**r, "__source__": None} for r in want]
        assert [e[0].rsplit("#", 1)[1] for e in errors] == [e[0].rsplit("#", 1)[1] for e in want_errors] == ["line=2"]


def test_lines_across_blocks_keep_their_numbers(tmp_path, monkeypatch):
    monkeypatch.setattr(typed_jsonl, "_BLOCK", 300)  # many blocks, lines cut across them
    p = tmp_path / "i.jsonl"
    p.write_text("\ufeff" + "\n".join(_line(i) if i != 7 else "{oops" for i in range(40)) + "\n")
    rows, errors = _read(p)
    assert errors == [(f"{p}#line=8", "JSONDecodeError")]
    assert [(r["__source__"], r["n"]) for r in rows] == [(f"{p}#line={i + 1}", i) for i in range(40) if i != 7]


def test_empty_lines_leave_a_block_to_arrow_and_are_counted_in_the_line_numbers(tmp_path, monkeypatch):
    """A file cut into blocks of 300 bytes with empty lines first, between lines, a run of them filling whole blocks, and last."""
    monkeypatch.setattr(typed_jsonl, "_BLOCK", 300)
    monkeypatch.setattr(typed_jsonl, "jsonl_row", lambda *args: pytest.fail("a block was read line by line"))
    lines = ["", *[_line(i) if i % 4 else "" for i in range(1, 30)], *[""] * 700, _line(30), "", ""]
    p = tmp_path / "e.jsonl"
    p.write_text("\n".join(lines) + "\n")
    rows, errors = _read(p)
    assert errors == [] and [r["__source__"] for r in rows] == [f"{p}#line={n + 1}" for n, line in enumerate(lines) if line]
    assert rows == _read(p, blocks=False)[0]


def test_a_crlf_file_is_parsed_by_arrow_and_a_lone_cr_reads_its_block_line_by_line(tmp_path, monkeypatch):
    p = tmp_path / "w.jsonl"
    p.write_bytes(b"".join(_line(i).encode() + b"\r\n" + (b"\r\n" if i == 3 else b"") for i in range(8)))  # and an empty line
    arrow = typed_jsonl._block
    seen = []
    monkeypatch.setattr(typed_jsonl, "_block", lambda data, schema: seen.append(arrow(data, schema)) or seen[-1])
    rows, errors = _read(p)
    assert errors == [] and seen[0] is not None and [r["n"] for r in rows] == list(range(8))
    assert (rows, errors) == _read(p, blocks=False) and rows[4]["__source__"] == f"{p}#line=6"
    p.write_bytes(p.read_bytes().replace(b"\r\n", b"\r", 1))  # a lone CR: a line break to splitlines alone
    rows, errors = _read(p)
    assert seen[-1] is None and (rows, errors) == _read(p, blocks=False) and len(rows) == 8


@pytest.mark.parametrize("ddl", ["timestamp", "decimal(10,2)", "map<string,int>", "date", "struct<t: timestamp>"])
def test_unsupported_types_are_refused_naming_the_field(ddl):
    with pytest.raises(ValueError, match="field 'when' has type"):
        arrow_schema({"a": "string", "when": ddl})


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False), st.text(max_size=5))
_LINES = st.one_of(
    st.fixed_dictionaries({}, optional={"level": _VALUES, "lat": _VALUES, "n": _VALUES}).map(json.dumps),
    st.sampled_from(["", "null", "{x", "[]", "7", "  ", '{"a": 1}{"a": 2}']),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINES, max_size=30), cut=st.integers(40, 400))
def test_every_line_is_one_row_or_one_row_error(tmp_path, monkeypatch, lines, cut):
    monkeypatch.setattr(typed_jsonl, "_BLOCK", cut)
    p = tmp_path / "p.jsonl"
    p.write_text("\n".join(lines) + "\n")
    schema = {"level": "string", "lat": "double", "n": "long"}
    rows, errors = _read(p, schema)
    blank = sum(1 for line in lines if not line.strip())
    assert len(rows) + len(errors) + blank == len(lines)
    numbers = sorted(int(s.rsplit("=", 1)[1]) for s in [r["__source__"] for r in rows] + [e[0] for e in errors])
    assert numbers == [i + 1 for i, line in enumerate(lines) if line.strip()]
    slow, slow_errors = _read(p, schema, blocks=False)
    assert rows == slow and errors == slow_errors  # Arrow's blocks give what the line-by-line read gives


def test_the_read_takes_no_parser_setting_from_the_environment(tmp_path, monkeypatch):
    """The Arrow parse is the only one: the setting that once chose another parser in each worker is not read."""
    monkeypatch.setenv("DATAFLOW_JSONL_PARSER", "simd")
    p = tmp_path / "x.jsonl"
    p.write_text(_line(0) + "\n")
    with open(p, "rb") as f:
        (table,) = list(read_typed_jsonl_blocks(str(p), f, {"schema": SCHEMA}))
    assert isinstance(table, pa.Table) and table.column("n").to_pylist() == [0]
