"""Formats: readers that parse a file's bytes into rows, and sink writers.

A reader is a function ``read_file(source, data, options)`` yielding row dicts, or ``BadRecord``
for a part of the file that cannot be parsed (a row error, never a failed file). A writer is a
class with ``write(fs, path, cols, options) -> list[WrittenFile]``.
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["GONE", "BadRecord", "WrittenFile", "gone"]

GONE = (FileNotFoundError, PermissionError, IsADirectoryError)  # a listed file removed, closed to this process or made a folder since


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


def gone(source: str, exc: OSError) -> BadRecord:
    """The read error of a file listed, then not readable (``GONE``): one record, and the run goes on."""
    return BadRecord(source, type(exc).__name__, f"listed, then not readable: {exc.strerror or exc}")
