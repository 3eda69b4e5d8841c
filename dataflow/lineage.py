"""The fragments dataflow appends to a row's ``__source__`` (``columns.SOURCE``), declared once.

A source is its input's URI followed by fragments that place the row in it: readers append one
(``#line=12``), and ops that make several rows of one append another (``#match=2``). Writers spell
them with the names below; ``strip_fragments`` and ``FRAGMENTS_REGEX`` take exactly those, with
the values dataflow writes, off the end of a source. A ``#`` of the file's own name stays:
``logs#part=1.jsonl`` is a legal name on POSIX and S3.
"""
from __future__ import annotations

import re

__all__ = ["FRAGMENTS_REGEX", "KEY", "LINE", "MATCH", "OFFSET", "ROW", "ROW_GROUP", "TIME", "WINDOW", "key_fragment", "strip_fragments"]

LINE = "#line="  # line files (text, JSONL, CSV): the line's number, from 1
ROW = "#row="  # tables (Parquet, in-memory tables): the row's number, from 0
ROW_GROUP = "#row_group="  # a Parquet row group, before its rows are numbered
OFFSET = "#offset="  # a WebDataset shard's damaged member, where no name could be read: its byte offset
KEY = "#key="  # a WebDataset sample key: a member's name up to the first dot of its basename (``key_fragment``)
MATCH = "#match="  # table.join: a left row's rank among its several matches, from 1
WINDOW = "#window="  # table.window_aggregate with overlapping windows: the window's start, integer unix seconds (may be negative)
TIME = "#t="  # audio.segment_vad: a media fragment ``start,end`` in seconds with three decimals

# Written for RE2 (pyarrow.compute) and Python's re alike: no names or lookarounds, and the
# fragment names hold no metacharacters. One or more fragments, then the end of the source.
_TRAILING = rf"(({LINE}|{ROW}|{ROW_GROUP}|{OFFSET}|{MATCH}|{WINDOW})-?\d+|{KEY}([^#]*/)?[^#./]*|{TIME}\d+\.\d+,\d+\.\d+)+"
FRAGMENTS_REGEX = _TRAILING + "$"
"""dataflow's fragments at the end of a source, for ``pyarrow.compute.replace_substring_regex`` (RE2's ``$`` ends the text)."""
_TRAILING_RE = re.compile(_TRAILING + r"\Z")


def key_fragment(key: str) -> str:
    """The ``#key=`` fragment of a WebDataset sample key, ``%`` and ``#`` percent-encoded: a member ``a#b.jpg`` gives ``#key=a%23b``, which strips whole."""
    return KEY + key.replace("%", "%25").replace("#", "%23")


def strip_fragments(source: str) -> str:
    """Return ``source`` without the fragments dataflow appended: ``logs#part=1.jsonl#line=3`` -> ``logs#part=1.jsonl``."""
    return _TRAILING_RE.sub("", source)
