"""Formats: readers that parse a file's bytes into rows, and sink writers.

A reader is a function ``read_file(source, data, options)`` yielding row dicts, or ``BadRecord``
for a part of the file that cannot be parsed (a row error, never a failed file). A writer is a
class with ``write(fs, path, cols, options) -> list[WrittenFile]``.
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["BadRecord", "WrittenFile"]


class BadRecord(NamedTuple):
    """A record of the input that could not be parsed."""

    source: str
    error_type: str
    reason: str


class WrittenFile(NamedTuple):
    """An output file a writer produced."""

    path: str
    rows: int
    bytes: int
