"""WebDataset shards: tar files of ``<key>.<ext>`` members, one sample per key, as training loaders read them.

Reading streams a shard member by member (a shard is never held in memory whole) and groups
consecutive members with the same key into one row. A damaged member (a bad header checksum,
data cut short) becomes a row error and the reader resynchronises on the next valid header, so
the rest of the shard is still read.

Row layout of the source: ``__source__`` (``<shard uri>#key=<key>``, ``#`` and ``%`` in the key percent-encoded), ``__key__`` (the sample key, as
WebDataset names it), ``bytes`` (the first
member whose extension is in ``bytes_from``), ``format`` (that extension), and one bytes column
per other member, named after its extension (``json``, ``txt``, ``cls``; dots and dashes become
``_``). The sink writes the reverse: ``<key>.<format>`` from ``bytes``, other bytes columns as
``<key>.<column>``, and every remaining value in ``<key>.json`` (``<key>.meta.json`` when the rows
already carry a ``json`` member).
"""
from __future__ import annotations

import hashlib
import io
import json
import posixpath
import re
import tarfile
from typing import Any, BinaryIO, Iterator, NamedTuple

import numpy as np

from connectors.formats import BadRecord, WrittenFile
from connectors.formats.encode import json_value
from dataflow import lineage
from dataflow.columns import SOURCE

__all__ = ["DEFAULT_BYTES_FROM", "KEY", "WebDatasetFormat", "read_shard", "tar_members"]

DEFAULT_BYTES_FROM = ("jpg", "jpeg", "png", "webp", "gif", "bmp", "tif", "tiff", "flac", "wav", "mp3", "ogg", "opus", "m4a", "bin")
KEY = "__key__"  # the sample key, named as WebDataset names it
_BLOCK = 512
_RESERVED = frozenset({"bytes", "format"})
_UNSAFE_KEY = re.compile(r"[^A-Za-z0-9_/-]+")
_UNSAFE_COLUMN = re.compile(r"[^a-z0-9_]+")


class Member(NamedTuple):
    """One regular file of a tar shard."""

    name: str
    offset: int
    data: bytes


class BadMember(NamedTuple):
    """A part of the shard that is not a readable member."""

    name: str | None
    offset: int
    reason: str


def _read(f: BinaryIO, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        chunk = f.read(n - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _pax_path(data: bytes) -> str | None:
    """The ``path`` record of a pax extended header."""
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos)
        if space < 0:
            return None
        length = int(data[pos:space])
        record = data[space + 1 : pos + length - 1]
        key, _, value = record.partition(b"=")
        if key == b"path":
            return value.decode("utf-8", "surrogateescape")
        pos += length
    return None


def tar_members(f: BinaryIO) -> Iterator[Member | BadMember]:
    """Yield the regular files of a tar stream in order, and a ``BadMember`` for each damaged part.

    Handles ustar, GNU long names and pax path records; skips directories and links.
    """
    offset, long_name, in_bad_run = 0, None, False
    while True:
        header = _read(f, _BLOCK)
        if len(header) < _BLOCK:
            if header.strip(b"\0"):
                yield BadMember(None, offset, f"truncated tar header ({len(header)} of {_BLOCK} bytes)")
            return
        if header == b"\0" * _BLOCK:
            return  # end-of-archive marker
        try:
            info = tarfile.TarInfo.frombuf(header, "utf-8", "surrogateescape")
        except tarfile.HeaderError as exc:
            if not in_bad_run:
                yield BadMember(None, offset, f"invalid tar header: {exc}")
            in_bad_run = True
            offset += _BLOCK  # resynchronise: try the next 512-byte block as a header
            continue
        in_bad_run = False
        padded = (info.size + _BLOCK - 1) // _BLOCK * _BLOCK
        data = _read(f, info.size)
        name = long_name or info.name
        if len(data) < info.size:
            yield BadMember(name, offset, f"member data cut short ({len(data)} of {info.size} bytes)")
            return
        _read(f, padded - info.size)
        member_offset, offset = offset, offset + _BLOCK + padded
        if info.type == tarfile.GNUTYPE_LONGNAME:
            long_name = data.rstrip(b"\0").decode("utf-8", "surrogateescape")
            continue
        if info.type == tarfile.XHDTYPE:
            long_name = _pax_path(data) or long_name
            continue
        long_name = None
        if info.type in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE):
            yield Member(name, member_offset, data)


def _split_name(name: str) -> tuple[str, str]:
    """``a/b/000.seg.png`` -> (``a/b/000``, ``seg.png``): the key ends at the basename's first dot."""
    folder, base = posixpath.split(name)
    stem, _, ext = base.partition(".")
    return posixpath.join(folder, stem) if folder else stem, ext.lower()


def _column(ext: str) -> str:
    col = _UNSAFE_COLUMN.sub("_", ext.lower()).strip("_") or "member"
    col = f"ext_{col}" if col[0].isdigit() else col
    return f"member_{col}" if col in _RESERVED else col


def _sample(uri: str, key: str, members: list[Member], bytes_from: tuple[str, ...]) -> dict[str, Any] | BadRecord:
    source = uri + lineage.key_fragment(key)
    row: dict[str, Any] = {SOURCE: source, KEY: key}
    by_ext = {}
    for m in members:
        by_ext.setdefault(_split_name(m.name)[1], m.data)
    if bytes_from:
        chosen = next((e for e in bytes_from if e in by_ext), None)
        if chosen is None:
            return BadRecord(source, "ValueError", f"sample has no member with an extension in bytes_from ({', '.join(bytes_from)}); it has: {', '.join(sorted(by_ext))}")
        row["bytes"], row["format"] = by_ext.pop(chosen), chosen
    for ext, data in by_ext.items():
        row[_column(ext)] = data
    return row


def read_shard(uri: str, f: BinaryIO, options: dict[str, Any]) -> Iterator[dict[str, Any] | BadRecord]:
    """Yield one row per sample of the shard ``uri`` read from ``f``, or a ``BadRecord``.

    Args:
        uri: The shard's URI (goes into ``__source__``).
        f: The open shard (read sequentially).
        options: ``bytes_from``: member extensions, in order of preference, whose data becomes the
            ``bytes`` column (default: common image and audio extensions, then ``bin``); an
            empty list keeps every member as its own column.
    """
    bytes_from = tuple(e.lower().lstrip(".") for e in options.get("bytes_from", DEFAULT_BYTES_FROM))
    key, members = None, []
    for item in tar_members(f):
        if isinstance(item, BadMember):
            where = uri + lineage.key_fragment(_split_name(item.name)[0]) if item.name else f"{uri}{lineage.OFFSET}{item.offset}"
            yield BadRecord(where, "TarError", item.reason)
            continue
        k, _ = _split_name(item.name)
        if members and k != key:
            yield _sample(uri, key, members, bytes_from)
            members = []
        key = k
        members.append(item)
    if members:
        yield _sample(uri, key, members, bytes_from)


def _safe_key(value: str) -> str:
    parts = [p for p in _UNSAFE_KEY.sub("_", value).split("/") if p not in ("", ".", "..")]
    return "/".join(parts)[:200] or "sample"


def _sample_key(cols, i: int) -> str:
    if KEY in cols and cols[KEY][i] is not None:
        return _safe_key(str(cols[KEY][i]))
    source = str(cols[SOURCE][i]) if SOURCE in cols else str(i)
    stem = posixpath.basename(lineage.strip_fragments(source)).split(".", 1)[0]
    return f"{_safe_key(stem)}-{hashlib.sha1(source.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tar.addfile(info, io.BytesIO(data))


class WebDatasetFormat:
    """Write a batch as one tar shard of samples (see the module docstring for the layout).

    Sink options: ``extension`` for the ``bytes`` member (default: the row's ``format`` column,
    else ``bin``).
    """

    extension = "tar"

    @staticmethod
    def write(fs, path: str, cols, options) -> list[WrittenFile]:
        names = list(cols)
        n = len(cols[names[0]]) if names else 0
        seen: dict[str, int] = {}
        with fs.open(path, "wb") as f:
            with tarfile.open(fileobj=f, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                for i in range(n):
                    key = _sample_key(cols, i)
                    seen[key] = seen.get(key, 0) + 1
                    if seen[key] > 1:
                        key = f"{key}_{seen[key] - 1}"
                    meta = {}
                    for col in names:
                        value = cols[col][i]
                        if value is None or col == KEY:
                            continue
                        if col == "bytes":
                            fmt = options.get("extension") or (cols["format"][i] if "format" in cols and cols["format"][i] else "bin")
                            _add(tar, f"{key}.{str(fmt).lstrip('.')}", bytes(value))
                        elif isinstance(value, (bytes, bytearray, memoryview)):
                            _add(tar, f"{key}.{col}", bytes(value))
                        elif isinstance(value, np.ndarray) and value.dtype != object:
                            buf = io.BytesIO()
                            np.save(buf, value, allow_pickle=False)
                            _add(tar, f"{key}.{col}.npy", buf.getvalue())
                        elif col != "format" or "bytes" not in cols:
                            meta[col] = json_value(value)
                    if meta:
                        name = f"{key}.meta.json" if "json" in cols else f"{key}.json"  # a json member of the source wins
                        _add(tar, name, json.dumps(meta, ensure_ascii=False, sort_keys=True).encode("utf-8"))
        return [WrittenFile(path, n, fs.size(path))]
