"""Line files as streams: the codec a name implies (``.gz``, ``.bz2``, ``.xz``, ``.zst``), and a buffered reader.

The codec comes from the file name through fsspec's inference (``fsspec.utils.infer_compression``),
so ``part-0.jsonl.gz`` is a gzip stream of a ``jsonl`` file (fsspec infers ``.zst`` because the
``zstandard`` dependency is installed). Files, compressed or not, are read in 64 kB blocks and
decompressed as they are read, never whole into memory (a strict gzip read by zlib-ng, twice as fast as
zlib here). A stream that ends early or holds damaged data raises :class:`DamagedFile` from the read
that meets it: the lines before it are already read.
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import posixpath
import zlib
from contextlib import contextmanager
from typing import BinaryIO, Iterator

from zlib_ng import zlib_ng

from dataflow.lineage import strip_fragments

__all__ = ["CODECS", "INFLATION", "DamagedFile", "codec_of", "decompressed", "inner_name", "read_by_name"]

CODECS = ("bz2", "gzip", "xz", "zstd")
INFLATION = 8  # bytes of lines per compressed byte, about (text under gzip -6): what a compressed file weighs in a size budget
_BUFFER = 1 << 16


class DamagedFile(Exception):
    """A compressed input that ends early or holds data its codec cannot decode."""


def codec_of(path: str) -> str | None:
    """The codec of a line file from its name (``gzip``, ``bz2``, ``xz``, ``zstd``), or None."""
    from fsspec.utils import infer_compression

    codec = infer_compression(strip_fragments(path))
    return codec if codec in CODECS else None


def read_by_name(path: str, suffixes: dict[str, str]) -> bool:
    """Whether a reader that decompresses the codecs of ``suffixes`` (codec: the name's suffix it knows) reads ``path`` as dataflow does: plain, or so named."""
    codec = codec_of(path)
    return codec is None or (codec in suffixes and path.endswith(suffixes[codec]))


def inner_name(path: str) -> str:
    """The file name without its compression suffix: ``part-0.jsonl.gz`` -> ``part-0.jsonl``."""
    name = posixpath.basename(path)
    return name.rsplit(".", 1)[0] if codec_of(name) else name


def _damage_errors() -> tuple[type[BaseException], ...]:
    import zstandard

    return (EOFError, OSError, ValueError, zlib.error, zlib_ng.error, lzma.LZMAError, zstandard.ZstdError)


class _Checked(io.RawIOBase):
    """A decompressing stream whose codec errors surface as :class:`DamagedFile`."""

    def __init__(self, inner, codec: str):
        self._inner, self._codec, self._errors = inner, codec, _damage_errors()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            return self._inner.readinto(buffer)
        except self._errors as exc:
            raise DamagedFile(f"{self._codec} stream is damaged: {exc}") from exc

    def close(self) -> None:
        self._inner.close()
        super().close()


class _Members(io.RawIOBase):
    """zstd frames or gzip members decompressed one after another; a file that ends inside one, or holds anything else after one, is damaged.

    ``zstandard``'s own stream reader ends quietly at a truncated frame, so frames are followed
    here; Python's gzip reader skips zero padding after the last member, which Hadoop's refuses.
    NOTE: input goes in 16 kB at a time, which bounds what one step decompresses.
    """

    _STEP = 1 << 14

    def __init__(self, raw: BinaryIO, codec: str):
        self._raw, self._codec = raw, codec
        self._member, self._pending, self._fed = self._new(), b"", False

    def _new(self):
        if self._codec == "gzip":
            return zlib_ng.decompressobj(wbits=31)  # one gzip member, its checksum and length checked
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            data = self._raw.read(self._STEP)
            if not data:
                if self._fed and not self._member.eof:
                    raise EOFError(f"{self._codec} file ended inside a {'member' if self._codec == 'gzip' else 'frame'} (truncated)")
                return 0
            out = []
            while data:
                if self._member.eof:  # the next member or frame (pzstd, pigz, concatenated parts)
                    self._member = self._new()
                self._fed = True
                out.append(self._member.decompress(data))
                data = self._member.unused_data if self._member.eof else b""
            self._pending = b"".join(out)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


class _Plain(io.RawIOBase):
    """An open file read in large sequential blocks (fsspec's own ``readline`` reads 100 bytes, then seeks back)."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._raw.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _open_codec(raw: BinaryIO, codec: str, strict: bool):
    """The codec's stream: the standard library's readers, not fsspec's registry (which takes ``isal``'s gzip where it is installed: other errors, larger buffers)."""
    if codec == "zstd" or (strict and codec == "gzip"):
        return _Members(raw, codec)
    if codec == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    return bz2.BZ2File(raw, mode="rb") if codec == "bz2" else lzma.LZMAFile(raw, mode="rb")


@contextmanager
def decompressed(raw: BinaryIO, path: str, strict: bool = False) -> Iterator[BinaryIO]:
    """Yield the file's content as a buffered binary stream, decompressed when ``path`` names a codec.

    ``raw`` stays open (the caller owns it); reads of a damaged stream raise :class:`DamagedFile`.
    ``strict``: data after a gzip file's last member (zero padding too) is damage, as Hadoop's reader takes it.
    """
    codec = codec_of(path)
    inner = _Checked(_open_codec(raw, codec, strict), codec) if codec else _Plain(raw)
    with io.BufferedReader(inner, _BUFFER) as f:
        yield f
