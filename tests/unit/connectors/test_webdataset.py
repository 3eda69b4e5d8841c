"""WebDataset tar shards: samples grouped by key, streamed; damaged members are row errors, not lost shards."""
from __future__ import annotations

import io
import json
import tarfile

import numpy as np
import pytest

from connectors.formats import BadRecord
from connectors.formats.webdataset import WebDatasetFormat, read_shard
from connectors.registry import filesystem


def _tar(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class OnlyForward(io.RawIOBase):
    """A stream that cannot seek: proves the reader never needs the shard whole."""

    def __init__(self, data: bytes):
        self._buf = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, b):
        chunk = self._buf.read(min(len(b), 1000))
        b[: len(chunk)] = chunk
        return len(chunk)


SAMPLES = [("000.jpg", b"J0"), ("000.json", b'{"a": 0}'), ("000.cls", b"3"), ("sub/001.png", b"P1"), ("sub/001.txt", b"cat"), ("002.seg.png", b"S2"), ("002.webp", b"W2")]


def test_members_group_into_one_row_per_key_read_forward_only():
    rows = list(read_shard("s3://b/shard-0.tar", OnlyForward(_tar(SAMPLES)), {}))
    assert [r["__key__"] for r in rows] == ["000", "sub/001", "002"]
    assert rows[0] == {"__source__": "s3://b/shard-0.tar#key=000", "__key__": "000", "bytes": b"J0", "format": "jpg", "json": b'{"a": 0}', "cls": b"3"}
    assert (rows[1]["bytes"], rows[1]["format"], rows[1]["txt"]) == (b"P1", "png", b"cat")
    assert (rows[2]["bytes"], rows[2]["format"], rows[2]["seg_png"]) == (b"W2", "webp", b"S2")


def test_long_member_names_survive():
    name = "x" * 150 + "/0001.jpg"
    (row,) = read_shard("t.tar", io.BytesIO(_tar([(name, b"J")])), {})
    assert row["__key__"] == "x" * 150 + "/0001" and row["bytes"] == b"J"


def test_a_bad_header_is_one_row_error_and_the_rest_is_read():
    data = bytearray(_tar(SAMPLES))
    offsets = [m.offset for m in tarfile.open(fileobj=io.BytesIO(bytes(data)))]
    data[offsets[3] + 100] ^= 0xFF  # corrupt the header of sub/001.png
    out = list(read_shard("t.tar", io.BytesIO(bytes(data)), {}))
    bad = [r for r in out if isinstance(r, BadRecord)]
    good = [r for r in out if not isinstance(r, BadRecord)]
    assert bad[0].error_type == "TarError" and "checksum" in bad[0].reason
    # the damaged member is lost, so its sample has only the caption left: a row error too
    assert bad[1].source == "t.tar#key=sub/001" and "it has: txt" in bad[1].reason
    assert [r["__key__"] for r in good] == ["000", "002"] and good[1]["bytes"] == b"W2"


def test_a_shard_cut_short_keeps_the_samples_before_the_cut():
    data = _tar(SAMPLES)
    offsets = [m.offset_data for m in tarfile.open(fileobj=io.BytesIO(data))]
    out = list(read_shard("t.tar", io.BytesIO(data[: offsets[5] + 1]), {}))
    assert [r["__key__"] for r in out if not isinstance(r, BadRecord)] == ["000", "sub/001"]
    (bad,) = [r for r in out if isinstance(r, BadRecord)]
    assert bad.source == "t.tar#key=002" and "cut short" in bad.reason


def test_a_sample_without_a_bytes_member_is_a_row_error():
    out = list(read_shard("t.tar", io.BytesIO(_tar([("a.json", b"{}"), ("b.jpg", b"J")])), {"bytes_from": ["jpg"]}))
    assert isinstance(out[0], BadRecord) and "no member with an extension in bytes_from (jpg)" in out[0].reason
    assert out[1]["bytes"] == b"J"
    (row,) = read_shard("t.tar", io.BytesIO(_tar([("a.json", b"{}")])), {"bytes_from": []})
    assert row == {"__source__": "t.tar#key=a", "__key__": "a", "json": b"{}"}


def test_sink_writes_shards_that_read_back(tmp_path):
    cols = {
        "__source__": np.array(["s3://raw/x/img 1.jpg", "s3://raw/y/img 1.jpg"], dtype=object),
        "bytes": np.array([b"AAA", b"BBBB"], dtype=object),
        "format": np.array(["webp", "webp"], dtype=object),
        "width": np.array([3, 4]),
        "caption": np.array([b"a cat", None], dtype=object),
    }
    fs = filesystem(str(tmp_path))
    (written,) = WebDatasetFormat.write(fs, str(tmp_path / "part-0.tar"), cols, {})
    assert written.rows == 2 and written.bytes == (tmp_path / "part-0.tar").stat().st_size
    rows = list(read_shard("part-0.tar", open(tmp_path / "part-0.tar", "rb"), {}))
    assert [r["bytes"] for r in rows] == [b"AAA", b"BBBB"]
    assert len({r["__key__"] for r in rows}) == 2 and all("." not in r["__key__"] and " " not in r["__key__"] for r in rows)
    assert json.loads(rows[0]["json"]) == {"__source__": "s3://raw/x/img 1.jpg", "width": 3}
    assert rows[0]["caption"] == b"a cat" and "caption" not in rows[1]


@pytest.mark.parametrize("key", ["../../etc/passwd", "/abs/key", "a/./b"], ids=["dotdot", "absolute", "dot"])
def test_sink_keys_never_leave_the_shard(tmp_path, key):
    cols = {"__key__": np.array([key], dtype=object), "bytes": np.array([b"x"], dtype=object)}
    WebDatasetFormat.write(filesystem(str(tmp_path)), str(tmp_path / "s.tar"), cols, {"extension": "bin"})
    (name,) = tarfile.open(tmp_path / "s.tar").getnames()
    assert not name.startswith("/") and ".." not in name.split("/")
