"""connectors.formats.aligned: a JSON-lines file's line count when every line starts with ``{`` and it is UTF-8, across the check's chunks."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import connectors.formats.aligned as aligned

BODIES = [b"", b"{", b"{}\n", b"{}\n{}", b"{}\n{}\n", b"{}\n\n", b"{}\n \n", b"{}\n{}\n[]", b"[]\n{}", b" {}", b"\n",
          b"{\"a\": \"\xc3\xa9\"}\n{}\n", b"{\"a\": \"\xff\"}\n", b"{\"a\": \"\xc3\"}", b"{}\r\n{}\r\n", b"{}\n{}\n{}\n{}\nx", b"{\"a\": 1}\r{}\n",
          b"{}\r\n{}\r", b"{}\r\r\n{}\n", b"{}\r\n\r\n", b"{}\r"]


def _expected(body: bytes, cr: bool) -> int | None:
    """By the definition: every line (split at LF; a last LF ends the last line) starts with "{", UTF-8, and no CR but in CRLFs unless allowed."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not body:
        return 0
    lines = body[:-1].split(b"\n") if body.endswith(b"\n") else body.split(b"\n")
    if any(not line.startswith(b"{") for line in lines) or (not cr and body.count(b"\r") != body.count(b"\r\n")):
        return None
    return len(lines)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 8, 1 << 18])
def test_lines_are_counted_and_checked_across_chunks(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(aligned, "_CHUNK", chunk)
    for i, body in enumerate(BODIES):
        path = tmp_path / f"{i}.jsonl"
        path.write_bytes(body)
        for cr in (True, False):
            assert aligned.object_lines(str(path), cr=cr) == _expected(body, cr), (body, cr)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([b"{}", b'{"a": "\xc3\xa9"}', b"", b" ", b"[]", b"{\r}", b"{}\r", b"\r", b"\xff", b"{x", b"\xc3"]), max_size=8),
       st.booleans(), st.sampled_from([1, 3, 7, 64]))
def test_any_body_matches_the_definition(tmp_path_factory, parts, trailing, chunk):
    body = b"\n".join(parts) + (b"\n" if trailing and parts else b"")
    path = tmp_path_factory.mktemp("aligned") / "f.jsonl"
    path.write_bytes(body)
    old, aligned._CHUNK = aligned._CHUNK, chunk
    try:
        assert aligned.object_lines(str(path)) == _expected(body, True)
        assert aligned.object_lines(str(path), cr=False) == _expected(body, False)
    finally:
        aligned._CHUNK = old


def _compressed(codec: str, body: bytes) -> bytes:
    """``body`` as a file of ``codec`` in two members (streams, frames) where it splits, as pigz, pbzip2 and pzstd write them."""
    import bz2
    import gzip
    import lzma

    import zstandard

    compress = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress, "zst": zstandard.ZstdCompressor().compress}[codec]
    cut = len(body) // 2
    return compress(body[:cut]) + compress(body[cut:]) if body else compress(body)


@pytest.mark.parametrize("codec", ["gz", "bz2", "xz", "zst"])
def test_a_compressed_file_is_checked_as_it_decompresses(tmp_path, monkeypatch, codec):
    monkeypatch.setattr(aligned, "_CHUNK", 3)
    for i, body in enumerate(BODIES):
        path = tmp_path / f"{i}.jsonl.{codec}"
        path.write_bytes(_compressed(codec, body))
        for cr in (True, False):
            assert aligned.object_lines(str(path), cr=cr) == _expected(body, cr), (body, cr)


@pytest.mark.parametrize("damage", ["truncated", "zero padding", "trailing bytes", "bad checksum"])
def test_a_damaged_gzip_file_or_one_with_data_after_its_last_member_fails_the_check(tmp_path, damage):
    """Hadoop's gzip reader fails a Spark job on each of these (Python's skips zero padding): none may take a fast path."""
    import gzip

    body = b"".join(b'{"i": %d}\n' % i for i in range(2000))
    whole = gzip.compress(body)
    data = {"truncated": whole[: len(whole) // 2], "zero padding": whole + b"\0" * 64, "trailing bytes": whole + b"{}\n",
            "bad checksum": whole[:-8] + bytes(4) + whole[-4:]}[damage]
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(data)
    assert aligned.object_lines(str(path)) is None
    path.write_bytes(whole + gzip.compress(body))  # two whole members: one file
    assert aligned.object_lines(str(path)) == 4000


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=8), st.booleans(), st.sampled_from([1, 3, 7, 64]), st.sampled_from([1, 5, 20, 39, 1000]))
def test_a_file_with_a_line_longer_than_the_limit_is_refused(tmp_path_factory, lengths, trailing, chunk, max_line):
    body = b"\n".join(b"{" + b"x" * n for n in lengths) + (b"\n" if trailing else b"")
    path = tmp_path_factory.mktemp("aligned") / "f.jsonl"
    path.write_bytes(body)
    old, aligned._CHUNK = aligned._CHUNK, chunk
    try:
        got = aligned.object_lines(str(path), max_line=max_line)
    finally:
        aligned._CHUNK = old
    longest = max(n + 1 for n in lengths)
    if longest > max_line:
        assert got is None  # the fast paths never take a line the readers make a row error
    elif longest + 2 * chunk <= max_line:  # the check may refuse a line within two chunks of the limit: the exact path reads it alike
        assert got == len(lengths)
