"""The extension filter of a listing: which file names a source reads, decided once per suffix pair."""
from __future__ import annotations

import os
from typing import Any

from connectors.folder_scan import NOT_A_FILE, suffixes
from connectors.formats.compressed import codec_of, inner_name

__all__ = ["LINE_FORMATS", "ExtensionFilter", "describe_skipped"]

# Formats whose files may be compressed (.gz, .bz2, .xz, .zst): listed by the extension inside.
LINE_FORMATS = frozenset({"csv", "jsonl", "text"})


class ExtensionFilter:
    """Keep the names with one of ``extensions`` (every name when empty); report the others by extension.

    A name's verdict depends only on its last two suffixes (``a.b.jsonl.gz`` -> ``.jsonl.gz``), so
    it is worked out once per suffix pair and kept: a listing meets few distinct ones.

    Args:
        extensions: Lower-case extensions without the dot; empty keeps every file.
        fmt: The source format: line formats match the extension inside a compressed name
            (``part-0.jsonl.gz`` is a ``jsonl`` file).
    """

    def __init__(self, extensions: frozenset[str], fmt: str):
        self.extensions, self.fmt = extensions, fmt
        self._verdicts: dict[str, str | None] = {}  # suffixes (or a dot-name) -> None (kept) or the skip's extension

    def skip(self, name: str) -> str | None:
        """None when ``name`` (a base name) is kept, else the extension it is skipped for (``.txt``, ``.txt.gz``, ``""``)."""
        return self.verdict(suffixes(name)) if self.extensions else None

    def split(self, entries: list[tuple[str, Any]]) -> tuple[list[tuple[str, Any]], dict[str, int]]:
        """``(path, info)`` entries in the order given: those kept, and the others counted by the extension they are skipped for
        (``NOT_A_FILE`` for an entry fsspec calls neither a file nor a folder: a broken link, a pipe)."""
        kept, skipped = [], {}
        for entry in entries:
            path = entry[0]
            ext = NOT_A_FILE if _not_a_file(path, entry[1]) else self.skip(path[path.rfind("/") + 1:])
            if ext is None:
                kept.append(entry)
            else:
                skipped[ext] = skipped.get(ext, 0) + 1
        return kept, skipped

    def verdict(self, key: str) -> str | None:
        """:meth:`skip` of the names whose :func:`connectors.folder_scan.suffixes` are ``key`` (``NOT_A_FILE`` for an entry that is not a file)."""
        if key == NOT_A_FILE:
            return NOT_A_FILE
        if not self.extensions:
            return None
        try:
            return self._verdicts[key]
        except KeyError:
            full = key[1:] if key[:1] == "/" else "x" + key
            verdict = self._verdicts[key] = None if _extension(full, self.fmt) in self.extensions else _full_extension(full)
            return verdict


def _not_a_file(path: str, info: dict[str, Any]) -> bool:
    """Whether a listing entry is neither a file nor a folder (a broken link, a pipe). fsspec's local listing calls every link ``other``: a link is asked where it leads."""
    kind = info.get("type", "file")
    if kind == "other" and info.get("islink"):
        return not os.path.isfile(path)
    return kind not in ("file", "directory")


def describe_skipped(skipped: dict[str, int]) -> str:
    """A listing's skipped entries in words: ``3 files with extension .txt, 1 file with no extension, 1 entry that is not a regular file (...)``."""
    parts = []
    for ext, n in sorted(skipped.items()):
        if ext == NOT_A_FILE:
            parts.append(f"{n:,} {'entry that is not a regular file' if n == 1 else 'entries that are not regular files'} (a broken symbolic link, a pipe or a socket)")
            continue
        files = f"{n:,} file" + ("s" if n != 1 else "")
        parts.append(f"{files} with extension {ext}" if ext else f"{files} with no extension")
    return ", ".join(parts)


def _extension(name: str, fmt: str) -> str:
    """The extension a name is listed by: the one inside a compressed line file (``a.jsonl.gz`` -> ``jsonl``)."""
    name = inner_name(name) if fmt in LINE_FORMATS else name
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def _full_extension(name: str) -> str:
    """The extension a skipped name is reported by, with its compression suffix: ``.txt``, ``.txt.gz``."""
    inner = inner_name(name)
    ext = f".{inner.rsplit('.', 1)[-1]}" if "." in inner else ""
    return (ext + name[len(inner):]).lower() if codec_of(name) else ext.lower()
