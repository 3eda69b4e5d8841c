"""List a source's input files: sorted, filtered by extension and patterns, with full URIs."""
from __future__ import annotations

import fnmatch
import json
import posixpath
from collections import Counter
from typing import Any, NamedTuple

from connectors.formats.compressed import codec_of, inner_name
from dataflow.errors import ConnectorError

__all__ = ["DEFAULT_EXTENSIONS", "LINE_FORMATS", "Listing", "list_entries", "list_files", "list_source", "to_uri"]

# Formats whose files may be compressed (.gz, .bz2, .xz, .zst): listed by the extension inside.
LINE_FORMATS = frozenset({"csv", "jsonl", "text"})

DEFAULT_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "audio": ("aif", "aiff", "flac", "mp3", "ogg", "opus", "wav"),
    "binary": (),
    "csv": ("csv",),
    "image": ("bmp", "gif", "jpeg", "jpg", "png", "tif", "tiff", "webp"),
    "jsonl": ("json", "jsonl", "ndjson"),
    "parquet": ("parquet", "pq"),
    "text": (),
    "webdataset": ("tar",),
}


def to_uri(fs, path: str, template: str) -> str:
    """Turn a filesystem path back into a URI of the same scheme (and server) as ``template``."""
    from connectors.registry import to_uri as _to_uri

    return _to_uri(path, template)


def _hidden(path: str, root: str) -> bool:
    """A file under a ``.x`` or ``_x`` name below ``root`` (or named so itself)."""
    under = root.rstrip("/") + "/"
    rel = path[len(under):] if path.startswith(under) else posixpath.basename(path)
    return any(part.startswith((".", "_")) for part in rel.split("/"))


def _published(fs, root: str) -> set[str] | None:
    """Paths listed in ``root/_manifest.json`` when ``root`` is a committed dataflow sink, else None.

    Readers trust the manifest, never a listing: on object stores a run's parts sit at their
    final names before its manifest is written, and only listed files are committed output.
    """
    try:
        manifest = json.loads(fs.cat_file(posixpath.join(root, "_manifest.json")))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ConnectorError(f"source '{root}': _manifest.json is not valid JSON ({exc})") from exc
    return {str(f["path"]).rstrip("/") for f in manifest.get("files", [])}


def _size_option(options: dict[str, Any], key: str) -> int | None:
    from connectors.sizes import parse_size

    if options.get(key) is None:
        return None
    try:
        return parse_size(options[key])
    except ValueError as exc:
        raise ConnectorError(f"source.options.{key}: {exc}") from exc


def _candidates(fs, uri: str, path: str, recursive: bool) -> tuple[dict[str, dict[str, Any]], str] | None:
    """Return (path -> info of each file, root of relative names), or None when nothing is there."""
    if any(c in path for c in "*?["):
        found = fs.glob(path, detail=True)
        root = path.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0].rsplit("/", 1)[0]
        return {p: i for p, i in found.items() if i.get("type") != "directory"}, root
    try:
        info = fs.info(path)
    except FileNotFoundError:
        return None
    if info.get("type") != "directory":
        return {info.get("name", path): info}, posixpath.dirname(path)
    root = path.rstrip("/")
    if recursive:
        found = fs.find(root, detail=True)
    else:
        found = {i["name"]: i for i in fs.ls(root, detail=True)}
    found = {p: i for p, i in found.items() if i.get("type") != "directory" and not _hidden(p, root)}
    published = _published(fs, root)
    if published is not None:
        found = {p: i for p, i in found.items() if _listed(posixpath.relpath(p, root), published)}
    return found, root


def _listed(rel: str, published: set[str]) -> bool:
    return rel in published or any(rel.startswith(f"{entry}/") for entry in published)


class Listing(NamedTuple):
    """The files a source reads, and the files its extension filter left out."""

    entries: list[tuple[str, dict[str, Any]]]  # (uri, listing entry), sorted by URI
    skipped: dict[str, int]  # extension (".txt", ".txt.gz"; "" for none) -> files left out for it


def _extension(path: str, fmt: str) -> str:
    """The extension a file is listed by: the one inside a compressed line file (``a.jsonl.gz`` -> ``jsonl``)."""
    name = inner_name(path) if fmt in LINE_FORMATS else posixpath.basename(path)
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def _full_extension(path: str) -> str:
    """The extension a skipped file is reported by, with its compression suffix: ``.txt``, ``.txt.gz``."""
    name = posixpath.basename(path)
    inner = inner_name(name)
    ext = f".{inner.rsplit('.', 1)[-1]}" if "." in inner else ""
    return (ext + name[len(inner):]).lower() if codec_of(name) else ext.lower()


def list_entries(fs, uri: str, path: str, fmt: str, options: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Return ``(uri, info)`` of each file a source reads (see :func:`list_source`)."""
    return list_source(fs, uri, path, fmt, options).entries


def list_source(fs, uri: str, path: str, fmt: str, options: dict[str, Any]) -> Listing:
    """Return ``(uri, info)`` of each file a source reads, sorted by URI, and the files skipped by extension.

    Line formats (text, jsonl, csv) match the extension inside a compressed file's name
    (``part-0.jsonl.gz`` is a jsonl file); hidden files (``.x``, ``_x``) are not counted as skipped.

    Args:
        fs: The filesystem of ``uri``.
        uri: The source URI as written (a file, a directory or a glob).
        path: ``uri`` without its scheme, as ``fs`` understands it.
        fmt: The source format (chooses the default extensions).
        options: Source options: ``recursive`` (default true), ``extensions`` (a list such as
            ``[jpg, .PNG]`` or one name, matched case-insensitively; ``"*"`` for every file),
            ``include`` / ``exclude`` (glob patterns on the path relative to the root),
            ``min_size`` / ``max_size`` (bytes, or sizes such as ``10MB``; files outside are
            skipped) and ``ignore_missing`` (true: a missing or empty source reads as no rows).

    Raises:
        ConnectorError: the source does not exist or holds no matching file (unless
            ``ignore_missing``), or a size option is not a size.
    """
    exts = options.get("extensions", DEFAULT_EXTENSIONS.get(fmt, ()))
    exts = () if exts == "*" else tuple(e.lower().lstrip(".") for e in ([exts] if isinstance(exts, str) else exts))
    min_size, max_size = _size_option(options, "min_size"), _size_option(options, "max_size")
    ignore_missing = bool(options.get("ignore_missing", False))
    found = _candidates(fs, uri, path, options.get("recursive", True))
    if found is None:
        if ignore_missing:
            return Listing([], {})
        raise ConnectorError(f"source '{uri}' does not exist (set source.options.ignore_missing: true to read it as empty)")
    entries, root = found
    paths = sorted(entries)
    skipped: Counter[str] = Counter()
    if exts:
        keep = {p: _extension(p, fmt) in exts for p in paths}
        skipped.update(_full_extension(p) for p in paths if not keep[p])
        paths = [p for p in paths if keep[p]]
    rel = lambda p: posixpath.relpath(p, root) if root else p  # noqa: E731
    if options.get("include"):
        paths = [p for p in paths if any(fnmatch.fnmatch(rel(p), pat) for pat in options["include"])]
    if options.get("exclude"):
        paths = [p for p in paths if not any(fnmatch.fnmatch(rel(p), pat) for pat in options["exclude"])]
    if min_size is not None:
        paths = [p for p in paths if int(entries[p].get("size") or 0) >= min_size]
    if max_size is not None:
        paths = [p for p in paths if int(entries[p].get("size") or 0) <= max_size]
    if not paths and not ignore_missing:
        wanted = f" with extension {', '.join(exts)}" if exts else ""
        sizes = " within source.options.min_size/max_size" if (min_size is not None or max_size is not None) else ""
        left = "; skipped: " + ", ".join(f"{n} with extension {e or '(none)'}" for e, n in sorted(skipped.items())) if skipped else ""
        raise ConnectorError(f"source '{uri}' holds no file{wanted}{sizes} (set source.options.extensions to change the filter{left})")
    return Listing(sorted((to_uri(fs, p, uri), entries[p]) for p in paths), dict(sorted(skipped.items())))


def list_files(fs, uri: str, path: str, fmt: str, options: dict[str, Any]) -> list[str]:
    """Return the sorted URIs of the files a source reads (see :func:`list_entries` for the options).

    Raises:
        ConnectorError: the source does not exist or holds no matching file.
    """
    return [u for u, _ in list_entries(fs, uri, path, fmt, options)]
