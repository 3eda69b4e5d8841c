"""Line readers: a malformed line or record is one row error, never a failed file."""
from __future__ import annotations

import bz2
import gzip
import io
import lzma

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.formats import BadRecord
from connectors.registry import line_reader


def _split(records):
    rows = [r for r in records if not isinstance(r, BadRecord)]
    return rows, [(b.source, b.error_type) for b in records if isinstance(b, BadRecord)]


def test_csv_invalid_byte_wrong_field_count_and_csv_error_are_each_one_row_error():
    huge = b'"' + b"y" * 140_000 + b'"'  # over csv's field size limit: a csv.Error
    data = b"a,b\n1,2\n3,\xff4\n5,6,7\n" + huge + b",z\n8,\"multi\nline\"\n"
    rows, errors = _split(list(line_reader("csv")("f.csv", io.BytesIO(data), {})))
    assert rows == [{"__source__": "f.csv#line=2", "a": "1", "b": "2"}, {"__source__": "f.csv#line=6", "a": "8", "b": "multi\nline"}]
    assert errors == [("f.csv#line=3", "UnicodeDecodeError"), ("f.csv#line=4", "ValueError"), ("f.csv#line=5", "csv.Error")]


def test_csv_undecodable_header_is_reported_and_its_rows_still_read():
    records = list(line_reader("csv")("g.csv", io.BytesIO(b"na\xefme,b\nx,1\n"), {}))
    assert isinstance(records[0], BadRecord) and records[0].source == "g.csv#line=1"
    assert "byte 0xef in field 1" in records[0].reason
    assert records[1:] == [{"__source__": "g.csv#line=2", "na\ufffdme": "x", "b": "1"}]


def test_csv_decodes_in_the_given_encoding():
    rows, errors = _split(list(line_reader("csv")("h.csv", io.BytesIO("a,b\n1,é\n".encode("latin-1")), {"encoding": "latin-1"})))
    assert rows == [{"__source__": "h.csv#line=2", "a": "1", "b": "é"}] and errors == []


def test_jsonl_bad_utf8_and_bad_json_lines_are_row_errors():
    data = b'{"a": 1}\n{"a": "\xff"}\nnot json\n\n{"a": "\xef\xbf\xbd"}\n'
    rows, errors = _split(list(line_reader("jsonl")("t.jsonl", io.BytesIO(data), {})))
    assert rows == [{"__source__": "t.jsonl#line=1", "a": 1}, {"__source__": "t.jsonl#line=5", "a": "\ufffd"}]
    assert errors == [("t.jsonl#line=2", "UnicodeDecodeError"), ("t.jsonl#line=3", "JSONDecodeError")]


def test_a_user_source_field_is_kept_and_a_forged_lineage_is_replaced():
    data = b'{"source": "common-crawl", "id": 7, "__source__": "forged", "text": "x"}\n'
    (row,) = line_reader("jsonl")("t.jsonl", io.BytesIO(data), {})
    assert row == {"__source__": "t.jsonl#line=1", "source": "common-crawl", "id": 7, "text": "x"}
    (row,) = line_reader("csv")("c.csv", io.BytesIO(b"source,__source__,key\nbooks,forged,k1\n"), {})
    assert row == {"__source__": "c.csv#line=2", "source": "books", "key": "k1"}


@pytest.mark.parametrize("data", [b"", b"a", b"a\n", b"\xef\xbb\xbfa\n\nb\r\nc\rd", b"x\n   \n\ty\n", b"ok\n\xff\xfe bad\nfine\n", b"\n\n\n", "\u00e9\u2028\u00fc\n".encode()])
@pytest.mark.parametrize("skip_empty", [True, False])
@pytest.mark.parametrize("block", [3, 8 << 20])
def test_text_blocks_give_the_rows_and_bad_lines_of_the_line_reader(data, skip_empty, block, monkeypatch):
    import pyarrow as pa

    from connectors.formats import lines as L

    def flat(items):
        out = []
        for it in items:
            out += it.to_pylist() if isinstance(it, pa.Table) else [it if isinstance(it, dict) else (it.source, it.error_type)]
        return out

    monkeypatch.setattr(L, "_BLOCK", block)
    opts = {"split": "line", "skip_empty": skip_empty}
    assert flat(L.read_text_blocks("f", io.BytesIO(data), opts)) == flat(L.read_text("f", io.BytesIO(data), opts))


@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.sampled_from([b"a", b"\n", b"\r", b" ", b"\xff", "\u00e9".encode(), b'{"k": 1}', b"\x0b"]), max_size=30).map(b"".join),
       block=st.integers(1, 12), skip_empty=st.booleans())
def test_text_blocks_equal_the_line_reader_on_drawn_bytes(data, block, skip_empty, monkeypatch):
    import pyarrow as pa

    from connectors.formats import lines as L

    def flat(items):
        return [r for it in items for r in (it.to_pylist() if isinstance(it, pa.Table) else [it if isinstance(it, dict) else (it.source, it.error_type)])]

    monkeypatch.setattr(L, "_BLOCK", block)
    opts = {"split": "line", "skip_empty": skip_empty}
    assert flat(L.read_text_blocks("f", io.BytesIO(data), opts)) == flat(L.read_text("f", io.BytesIO(data), opts))


def _json_way(text: str):
    import json

    try:
        return "value", json.loads(text)
    except (ValueError, RecursionError) as exc:
        return "error", f"{type(exc).__name__}: {exc}"


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6), st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e-400", "-0", "-0.0", "1E2", "0.1",
                                          "123456789012345678901234", "18446744073709551615", "9223372036854775808", '"\\ud800"', '"\\u00e9"']),
)


def _json_text(value) -> str:
    import json

    if isinstance(value, str) and value[:1] in ("N", "I", "-", "1", "0", "9", '"') and value not in ("",):
        return value  # a literal spelled as a reader sees it
    return json.dumps(value)


@st.composite
def _documents(draw):
    """JSON-ish lines: objects of drawn scalars, nested objects and lists, repeated keys, spellings only Python's json takes, bad tails."""
    def doc(depth: int) -> str:
        kind = draw(st.sampled_from(["scalar", "object", "list"] if depth < 3 else ["scalar"]))
        if kind == "scalar":
            return _json_text(draw(_SCALARS))
        items = [doc(depth + 1) for _ in range(draw(st.integers(0, 3)))]
        if kind == "list":
            return "[" + ", ".join(items) + "]"
        keys = draw(st.lists(st.sampled_from(["a", "b", "é", "a b", ""]), min_size=len(items), max_size=len(items)))
        return "{" + ", ".join(f'"{k}": {v}' for k, v in zip(keys, items)) + "}"

    return doc(0) + draw(st.sampled_from(["", " ", "\t", " x", ",", "\ufeff"]))


@settings(max_examples=400, deadline=None)
@given(_documents())
def test_json_lines_parse_to_what_pythons_json_gives(text):
    """orjson reads a line where it reads it as ``json`` does (a value of the same types, keys in the same order); every other line,
    and every error, is ``json``'s own."""
    from connectors.formats.lines import loads

    want = _json_way(text)
    try:
        got = "value", loads(text, text.encode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError) as exc:
        got = "error", f"{type(exc).__name__}: {exc}"
    assert repr(got) == repr(want)


def _long_aware(data: bytes, max_line: int) -> list[tuple[str, object]]:
    """By the definition: ``splitlines``' lines, each longer than ``max_line`` bytes (its break not counted) as ("long", its length)."""
    out = []
    for line in data.splitlines(keepends=True):
        n = len(line) - (2 if line.endswith(b"\r\n") else 1 if line.endswith((b"\n", b"\r")) else 0)
        out.append(("long", n) if n > max_line else ("line", line[:n]))
    return out


@settings(max_examples=400, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.tuples(st.integers(0, 40), st.sampled_from([b"\n", b"\r", b"\r\n", b"\n\n", b"\r\r", b""])), max_size=12),
       max_line=st.sampled_from([1, 3, 8, 15, 100]), size=st.sampled_from([1, 4, 10, 64]), piece=st.sampled_from([1, 2, 3, 7, 16]))
def test_a_line_longer_than_the_limit_comes_in_its_place_and_is_never_held_whole(parts, max_line, size, piece, monkeypatch):
    from connectors.formats import lines as L

    monkeypatch.setattr(L, "_PIECE", piece)
    data = b"".join(b"x" * n + brk for n, brk in parts)
    got = []
    for block in L.line_blocks(io.BytesIO(data), size, max_line):
        if isinstance(block, L.LongLine):
            got.append(("long", block.size))
        else:
            assert len(block) <= max_line + size + piece + 2  # a long line is read past, not gathered
            got += [("line", line) for line in block.splitlines()]
    assert got == _long_aware(data, max_line)


_COMPRESS = {"": lambda b: b, ".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress, ".zst": lambda b: zstandard.ZstdCompressor().compress(b)}


@pytest.mark.parametrize("suffix", list(_COMPRESS))
@pytest.mark.parametrize("reader", ["jsonl", "text", "text_blocks", "typed_jsonl_blocks", "text_latin1"])
def test_each_line_reader_makes_a_long_line_one_row_error_and_numbers_the_rest_alike(reader, suffix):
    """Plain and each codec (decompressed as the engines open a file), UTF-8 and a Latin-1 source (read line by line)."""
    from connectors.formats import lines as L
    from connectors.formats.compressed import decompressed
    from connectors.formats.typed_jsonl import read_typed_jsonl_blocks

    data = b'{"a": 1}\n{"a": "' + b"y" * 300 + b'"}\r\n{"a": 3}\r{"a": \xe94}'.replace(b"\xe9", b"" if reader != "text_latin1" else b"\xe9")
    opts = {"max_line_bytes": "256", "split": "line", "schema": {"a": "string"}, "encoding": "latin-1" if reader == "text_latin1" else "utf-8"}
    read = {"jsonl": L.read_jsonl, "text": L.read_text, "text_blocks": L.read_text_blocks, "typed_jsonl_blocks": read_typed_jsonl_blocks, "text_latin1": L.read_text}[reader]
    rows, errors = [], []
    with decompressed(io.BytesIO(_COMPRESS[suffix](data)), "f.jsonl" + suffix) as f:
        items = list(read("f", f, opts))
    for item in items:
        if isinstance(item, BadRecord):
            errors.append(item)
        else:
            rows += item.to_pylist() if hasattr(item, "to_pylist") else [item]
    assert [r["__source__"] for r in rows] == ["f#line=1", "f#line=3", "f#line=4"]
    assert errors == [BadRecord("f#line=2", "LineTooLong", "line of 309 bytes is longer than max_line_bytes (256)")]
    if reader == "text_latin1":
        assert rows[-1]["text"] == '{"a": \xe94}'


@pytest.mark.parametrize("value", [0, -1, "lots", True])
def test_a_bad_line_limit_is_refused_by_name(value):
    from connectors.formats.lines import max_line_bytes

    with pytest.raises(ValueError, match="max_line_bytes"):
        max_line_bytes({"max_line_bytes": value})


def test_a_file_too_large_for_one_row_is_a_row_error_read_no_further(monkeypatch):
    from connectors.formats import lines as L

    monkeypatch.setattr(L, "MAX_ROW", 10)
    reads = []

    class Watched(io.BytesIO):
        def read(self, n=-1):
            reads.append(n)
            return super().read(n)

    assert list(L.read_text("f.txt", Watched(b"0123456789"), {})) == [{"__source__": "f.txt", "text": "0123456789"}]
    (record,) = L.read_text("g.txt", Watched(b"0123456789A" * 1000), {})
    assert record == BadRecord("g.txt", "FileTooLarge", "file of more than 10 bytes: larger than one row holds (a value of Arrow and Parquet stays below 2 GiB); read it with split: line")
    assert reads == [11, 11]  # never the whole file


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(lines=st.lists(st.tuples(st.integers(0, 14), st.sampled_from(["\n", "\r", "\r\n"])), min_size=1, max_size=10),
       limit=st.integers(1, 12), last_break=st.booleans())
def test_a_csv_line_longer_than_the_limit_is_one_row_error_and_the_others_keep_their_numbers(lines, limit, last_break):
    """Lines of one field (no quotes) around the limit, under each line break: a line of more than ``max_line_bytes``
    characters is a ``LineTooLong`` record in its place (a header one ends the file), the others are records."""
    from connectors.formats.lines import read_csv

    texts = [("h" if i == 0 else "v") * n or ("h" if i == 0 else "") for i, (n, _) in enumerate(lines)]
    data = "".join(t + brk for t, (_, brk) in zip(texts, lines))
    if not last_break:
        data = data.rstrip("\r\n")
    got = [(r.source, r.error_type) if isinstance(r, BadRecord) else (r["__source__"], r[texts[0]])
           for r in read_csv("f", io.BytesIO(data.encode()), {"max_line_bytes": limit})]
    split = data.encode().splitlines()
    if len(split[0]) > limit:
        assert got == [("f#line=1", "LineTooLong")]
        return
    want = [(f"f#line={i}", "LineTooLong") if len(t) > limit else (f"f#line={i}", t.decode()) for i, t in enumerate(split[1:], start=2) if t or len(t) > limit]
    assert got == want
