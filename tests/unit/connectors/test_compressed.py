"""Compressed line files: listed by their inner extension, streamed, damaged ends kept as far as they read."""
from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import tracemalloc

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from connectors.formats import BadRecord
from connectors.formats.lines import _lines
from connectors.registry import line_reader, list_source, open_lines

CODECS = {
    "gz": gzip.compress,
    "bz2": lambda data: bz2.compress(data, 1),  # 100 kB blocks: a truncated file still has whole ones
    "xz": lambda data: lzma.compress(data, preset=0),
    "zst": lambda data: zstandard.ZstdCompressor().compress(data),
}
JSONL = b'{"a": 1}\r\n{"a": "\xff"}\nnot json\n\n{"a": "\xc3\xa9"}'
CSV = b'a,b\n1,2\n3,"multi\nline"\n5,6,7\n8,9\n'
TEXT = b"one\r\ntwo\rthree\n\nfour\n"


def _read(path, fmt, options=None):
    with open_lines(str(path)) as f:
        return [r if not isinstance(r, BadRecord) else (r.source, r.error_type) for r in line_reader(fmt)(str(path), f, options or {})]


@pytest.mark.parametrize("ext", sorted(CODECS), ids=sorted(CODECS))
@pytest.mark.parametrize(("fmt", "data", "options"), [("jsonl", JSONL, {}), ("csv", CSV, {}), ("text", TEXT, {"split": "line", "skip_empty": False})], ids=["jsonl", "csv", "text"])
def test_compressed_file_reads_as_its_plain_twin(tmp_path, ext, fmt, data, options):
    plain, packed = tmp_path / f"part-0.{fmt}", tmp_path / f"part-0.{fmt}.{ext}"
    plain.write_bytes(data)
    packed.write_bytes(CODECS[ext](data))
    twin = [{**r, "__source__": r["__source__"].replace(str(plain), str(packed))} if isinstance(r, dict) else (r[0].replace(str(plain), str(packed)), r[1]) for r in _read(plain, fmt, options)]
    assert _read(packed, fmt, options) == twin
    assert len(twin) >= 4


def test_multi_frame_zstd_reads_every_frame(tmp_path):
    path = tmp_path / "docs.jsonl.zst"
    cctx = zstandard.ZstdCompressor()
    path.write_bytes(cctx.compress(b'{"a": 1}\n') + cctx.compress(b'{"a": 2}\n'))
    assert _read(path, "jsonl") == [{"__source__": f"{path}#line=1", "a": 1}, {"__source__": f"{path}#line=2", "a": 2}]


def test_a_hash_in_a_compressed_files_name_keeps_its_codec(tmp_path):
    """``logs#part=1.jsonl.gz`` is gzip: a ``#`` of the name is no fragment (only dataflow's own are taken off)."""
    path = tmp_path / "logs#part=1.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"a": 1}\n'))
    assert _read(path, "jsonl") == [{"__source__": f"{path}#line=1", "a": 1}]

@pytest.mark.parametrize("ext", sorted(CODECS), ids=sorted(CODECS))
def test_truncated_file_keeps_the_lines_before_the_damage_and_names_the_file(tmp_path, ext):
    data = b"".join(json.dumps({"n": i, "pad": "x" * (i % 7)}).encode() + b"\n" for i in range(20_000))
    packed = CODECS[ext](data)
    path = tmp_path / f"docs.jsonl.{ext}"
    path.write_bytes(packed[: len(packed) * 2 // 3])
    records = _read(path, "jsonl")
    rows, bad = records[:-1], records[-1]
    assert bad[0] == str(path)  # the file, not a line
    assert all(isinstance(r, dict) for r in rows)
    assert [r["n"] for r in rows] == list(range(len(rows)))  # in order, none lost before the damage
    assert [r["__source__"] for r in rows[:2]] == [f"{path}#line=1", f"{path}#line=2"]


def test_truncated_gzip_reason_says_what_happened(tmp_path):
    path = tmp_path / "t.txt.gz"
    path.write_bytes(gzip.compress(b"a\nb\n" * 10_000)[:-30])
    with open_lines(str(path)) as f:
        bad = list(line_reader("text")(str(path), f, {"split": "line"}))[-1]
    assert isinstance(bad, BadRecord) and bad.error_type == "EOFError"
    assert bad.reason.startswith("gzip stream is damaged: Compressed file ended before the end-of-stream marker was reached (after line")


@pytest.mark.parametrize("registry", ["fsspec's", "another gzip in fsspec's registry"])
def test_file_that_is_not_gzip_at_all_is_one_record(tmp_path, monkeypatch, registry):
    """The reason is the standard library's, whatever gzip fsspec would take (``isal``'s, where it is installed, says EOFError)."""
    import fsspec.compression

    if registry != "fsspec's":
        monkeypatch.setitem(fsspec.compression.compr, "gzip", lambda f, **kw: io.BytesIO(b"not this reader"))
    path = tmp_path / "fake.csv.gz"
    path.write_bytes(b"a,b\n1,2\n")
    with open_lines(str(path)) as f:
        records = list(line_reader("csv")(str(path), f, {}))
    assert [(r.source, r.error_type) for r in records] == [(str(path), "BadGzipFile")]


def test_large_gzip_is_streamed_not_held(tmp_path):
    line = json.dumps({"text": "word " * 200}).encode() + b"\n"
    data = line * 20_000  # ~20 MB decompressed
    path = tmp_path / "big.jsonl.gz"
    path.write_bytes(gzip.compress(data, compresslevel=1))
    tracemalloc.start()
    try:
        with open_lines(str(path)) as f:
            count = sum(1 for _ in line_reader("jsonl")(str(path), f, {}))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 20_000
    assert peak < len(data) / 20, f"peak {peak} bytes while reading {len(data)} decompressed bytes"


@given(st.binary().map(lambda b: b.replace(b"\x00", b"\r").replace(b"\x01", b"\n")))
def test_streamed_lines_are_numbered_as_splitlines_numbers_them(data):
    expected = data.splitlines()
    if expected and expected[0].startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark is not data
        expected[0] = expected[0][3:]
    assert [raw for _, raw in _lines("f", io.BytesIO(data))] == expected


def test_a_byte_order_mark_is_not_part_of_the_first_row():
    jsonl = list(line_reader("jsonl")("f.jsonl", io.BytesIO(b'\xef\xbb\xbf{"a": 1}\n{"a": 2}\n'), {}))
    csv_rows = list(line_reader("csv")("f.csv", io.BytesIO(b"\xef\xbb\xbfid,x\r\n1,2\r\n"), {}))
    assert [r["a"] for r in jsonl] == [1, 2]
    assert csv_rows == [{"__source__": "f.csv#line=2", "id": "1", "x": "2"}]


def test_listing_takes_compressed_line_files_by_inner_extension_and_counts_the_rest(tmp_path):
    for name in ["plain.jsonl", "part-0.jsonl.gz", "part-1.jsonl.zst", "notes.txt", "more.txt", "table.csv.gz", "README", "_SUCCESS"]:
        (tmp_path / name).write_bytes(b"")
    files, skipped = list_source(str(tmp_path), "jsonl", {})
    assert [f.rsplit("/", 1)[1] for f in files] == ["part-0.jsonl.gz", "part-1.jsonl.zst", "plain.jsonl"]
    assert skipped == {"": 1, ".csv.gz": 1, ".txt": 2}  # hidden files (_SUCCESS) are not counted


def test_compressed_parquet_is_not_a_parquet_file(tmp_path):
    (tmp_path / "a.parquet").write_bytes(b"")
    (tmp_path / "b.parquet.gz").write_bytes(b"")
    files, skipped = list_source(str(tmp_path), "parquet", {})
    assert [f.rsplit("/", 1)[1] for f in files] == ["a.parquet"] and skipped == {".parquet.gz": 1}


def _blocks_and_lines(path, fmt, options):
    """What the block reader (Ray's, for UTF-8) and the line-by-line reader give for one file, records as (source, type)."""
    from connectors.formats.lines import read_text_blocks
    from connectors.formats.typed_jsonl import read_typed_jsonl, read_typed_jsonl_blocks

    blocks, lines = (read_typed_jsonl_blocks, read_typed_jsonl) if fmt == "jsonl" else (read_text_blocks, line_reader("text"))
    out = []
    for read in (blocks, lines):
        with open_lines(str(path)) as f:
            records = list(read(str(path), f, options))
        rows = [row for r in records if not isinstance(r, BadRecord) for row in (r.to_pylist() if hasattr(r, "to_pylist") else [r])]
        out.append((rows, [(r.source, r.error_type, r.reason) for r in records if isinstance(r, BadRecord)]))
    return out


@pytest.mark.parametrize("ext", sorted(CODECS), ids=sorted(CODECS))
@pytest.mark.parametrize(("fmt", "options"), [("jsonl", {"schema": {"n": "int", "pad": "string"}}), ("text", {"split": "line"})], ids=["typed-jsonl", "text"])
def test_a_truncated_file_read_in_blocks_keeps_the_line_by_line_reads_rows_and_error(tmp_path, monkeypatch, ext, fmt, options):
    """Blocks of 3,000 bytes over a file cut at two thirds: the line reader's rows (every line before the piece that met the damage), then its one record naming the file."""
    from connectors.formats import lines as L
    from connectors.formats import typed_jsonl

    monkeypatch.setattr(typed_jsonl, "_BLOCK", 3000)
    monkeypatch.setattr(L, "_BLOCK", 3000)
    data = b"".join(json.dumps({"n": i, "pad": "x" * (i % 7)}).encode() + b"\n" for i in range(20_000))
    packed = CODECS[ext](data)
    path = tmp_path / f"docs.{fmt}.{ext}"
    path.write_bytes(packed[: len(packed) * 2 // 3])
    (rows, errors), (want_rows, want_errors) = _blocks_and_lines(path, fmt, options)
    assert rows == want_rows and errors == want_errors and 0 < len(rows) < 20_000
    assert [r["__source__"] for r in rows] == [f"{path}#line={i + 1}" for i in range(len(rows))]
    assert len(errors) == 1 and errors[0][0] == str(path) and f"(after line {len(rows)};" in errors[0][2]


@given(st.binary(max_size=300).map(lambda b: b.replace(b"\r", b"")), st.integers(1, 400), st.integers(1, 64))
def test_line_blocks_are_whole_lines_and_a_damage_keeps_every_line_before_it(data, damage_at, size):
    """A stream that serves ``damage_at`` bytes, a few at a time, then raises: the blocks are its whole lines up to there, then the error."""
    from connectors.formats.compressed import DamagedFile
    from connectors.formats.lines import line_blocks

    class Stream:
        def __init__(self):
            self.pos = 0

        def read1(self, n):
            if self.pos >= damage_at and damage_at < len(data):
                raise DamagedFile("damaged")
            part = data[self.pos : min(self.pos + min(n, 7), damage_at if damage_at < len(data) else len(data))]
            self.pos += len(part)
            return part

    out = list(line_blocks(Stream(), size))
    blocks = [b for b in out if isinstance(b, bytes)]
    assert all(blocks) and all(b.endswith(b"\n") for b in blocks[:-1])
    if damage_at < len(data):
        assert isinstance(out[-1], DamagedFile) and b"".join(blocks) == data[: data.rfind(b"\n", 0, damage_at) + 1]
    else:
        assert b"".join(blocks) == data
