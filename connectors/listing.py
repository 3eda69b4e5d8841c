"""List a source's input files: sorted, filtered by extension and patterns, with full URIs."""
from __future__ import annotations

import fnmatch
import json
import os
import posixpath
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any, NamedTuple

from connectors.extensions import LINE_FORMATS, ExtensionFilter, describe_skipped
from connectors.walk import LOCAL_WORKERS, Batch, LocalTree, RemoteTree, listed
from dataflow.errors import ConnectorError

__all__ = ["DEFAULT_EXTENSIONS", "LINE_FORMATS", "Listing", "list_entries", "list_files", "list_pages", "list_source", "page_size", "to_uri"]

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


def _candidates(fs, uri: str, path: str, recursive: bool) -> tuple[list[tuple[str, dict[str, Any]]], str] | None:
    """Return ((path, info) of each file, sorted by path; root of relative names), or None when nothing is there."""
    found = _found(fs, uri, path, recursive)
    return None if found is None else (sorted(found[0].items()), found[1])


def _found(fs, uri: str, path: str, recursive: bool) -> tuple[dict[str, dict[str, Any]], str] | None:
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
        found = {p: i for p, i in found.items() if listed(posixpath.relpath(p, root), published)}
    return found, root


def _walk_local(fs, path: str, keep: ExtensionFilter, recursive: bool, stack: ExitStack) -> tuple[Iterator[Batch], str] | None:
    """A local directory's batches in sorted path order (:class:`connectors.walk.LocalTree`); None for anything else (globs, files, other filesystems)."""
    if not _is_local(fs) or any(c in path for c in "*?[") or not os.path.isabs(path) or not os.path.isdir(path):
        return None
    root = path.rstrip("/") or "/"
    tree = LocalTree(keep, recursive, _published(fs, root), len(root.rstrip("/")) + 1, workers=LOCAL_WORKERS if recursive else 1)
    return stack.enter_context(tree.walk(root)), root


def _walk_remote(fs, path: str, keep: ExtensionFilter, stack: ExitStack) -> tuple[Iterator[Batch], str] | None:
    """A folder's batches on another filesystem, its top-level subfolders listed at once (:class:`connectors.walk.RemoteTree`); None unless ``path`` is a folder."""
    if _is_local(fs) or any(c in path for c in "*?["):
        return None
    try:
        if fs.info(path).get("type") != "directory":
            return None
    except FileNotFoundError:
        return None
    root = path.rstrip("/")
    return stack.enter_context(RemoteTree(fs, keep, root, _published(fs, root)).walk()), root


def _filtered(found: tuple[list[tuple[str, dict[str, Any]]], str], keep: ExtensionFilter) -> tuple[Iterator[Batch], str]:
    """:func:`_candidates`' files as one batch, filtered by extension."""
    files, root = found
    return iter([keep.split(files)]), root


class Listing(NamedTuple):
    """The files a source reads, and the files its extension filter left out."""

    entries: list[tuple[str, dict[str, Any]]]  # (uri, listing entry), sorted by URI
    skipped: dict[str, int]  # extension (".txt", ".txt.gz"; "" for none) -> files left out for it


def list_entries(fs, uri: str, path: str, fmt: str, options: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Return ``(uri, info)`` of each file a source reads (see :func:`list_source`)."""
    return list_source(fs, uri, path, fmt, options).entries


def page_size() -> int:
    """Files per listing page: ``DATAFLOW_LISTING_PAGE`` (default 1000)."""
    raw = os.environ.get("DATAFLOW_LISTING_PAGE", "1000")
    try:
        size = int(raw)
    except ValueError:
        size = 0
    if size < 1:
        raise ConnectorError(f"DATAFLOW_LISTING_PAGE: expected a positive number of files, got {raw!r}")
    return size


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
    entries: list[tuple[str, dict[str, Any]]] = []
    skipped: Counter[str] = Counter()
    for page in list_pages(fs, uri, path, fmt, options):
        entries += page.entries
        skipped.update(page.skipped)
    return Listing(entries, dict(sorted(skipped.items())))


def list_pages(fs, uri: str, path: str, fmt: str, options: dict[str, Any], page: int | None = None) -> Iterator[Listing]:
    """:func:`list_source` page by page: pages of up to ``page`` files (default :func:`page_size`), in URI order.

    A local directory is walked in sorted order, so its first pages come before the walk ends;
    its folders are scanned by worker processes once it has shown
    ``connectors.walk.PARALLEL_AFTER`` files, while they prove faster than the walk alone
    (:class:`connectors.walk.LocalTree`). A folder on another filesystem is listed one
    top-level subfolder at a time (``find``), several at once on threads, each paged when its turn
    comes; globs, single files and non-recursive sources are listed whole, then paged. Either way
    the pages are the serial listing's. The error for a source without a matching file comes
    after the last page.
    """
    page = page or page_size()
    names = options.get("extensions", DEFAULT_EXTENSIONS.get(fmt, ()))
    names = () if names == "*" else tuple(e.lower().lstrip(".") for e in ([names] if isinstance(names, str) else names))
    keep = ExtensionFilter(frozenset(names), fmt)
    min_size, max_size = _size_option(options, "min_size"), _size_option(options, "max_size")
    ignore_missing, recursive = bool(options.get("ignore_missing", False)), options.get("recursive", True)
    with ExitStack() as stack:
        found = _walk_local(fs, path, keep, recursive, stack) or (_walk_remote(fs, path, keep, stack) if recursive else None)
        if found is None:
            found = _candidates(fs, uri, path, recursive)
            found = None if found is None else _filtered(found, keep)
        if found is None:
            if ignore_missing:
                return
            raise ConnectorError(f"source '{uri}' does not exist (set source.options.ignore_missing: true to read it as empty)")
        batches, root = found
        include, exclude = options.get("include"), options.get("exclude")
        under = root.rstrip("/") + "/" if root else ""
        rel = (lambda p: p[len(under):] if p.startswith(under) else posixpath.relpath(p, root)) if root else (lambda p: p)  # noqa: E731
        local = "://" not in uri or uri.startswith("file://")
        kept: list[tuple[str, dict[str, Any]]] = []
        skipped: Counter[str] = Counter()
        all_skipped: Counter[str] = Counter()
        total = 0
        for entries, skips in batches:
            skipped.update(skips)
            if include:
                entries = [e for e in entries if any(fnmatch.fnmatch(rel(e[0]), pat) for pat in include)]
            if exclude:
                entries = [e for e in entries if not any(fnmatch.fnmatch(rel(e[0]), pat) for pat in exclude)]
            if min_size is not None:
                entries = [e for e in entries if int(e[1].get("size") or 0) >= min_size]
            if max_size is not None:
                entries = [e for e in entries if int(e[1].get("size") or 0) <= max_size]
            kept += entries if local else [(to_uri(fs, p, uri), info) for p, info in entries]
            if len(kept) >= page:
                full = len(kept) - len(kept) % page
                for at in range(0, full, page):
                    all_skipped.update(skipped)
                    yield Listing(kept[at : at + page], dict(skipped))
                    skipped = Counter()
                total += full
                kept = kept[full:]
        total += len(kept)
        all_skipped.update(skipped)
        if not total and not ignore_missing:
            wanted = f" with extension {', '.join(names)}" if names else ""
            sizes = " within source.options.min_size/max_size" if (min_size is not None or max_size is not None) else ""
            left = f"; skipped: {describe_skipped(all_skipped)}" if all_skipped else ""
            raise ConnectorError(f"source '{uri}' holds no file{wanted}{sizes} (set source.options.extensions to change the filter{left})")
        if kept or skipped:
            yield Listing(kept, dict(skipped))


def _is_local(fs) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def list_files(fs, uri: str, path: str, fmt: str, options: dict[str, Any]) -> list[str]:
    """Return the sorted URIs of the files a source reads (see :func:`list_entries` for the options).

    Raises:
        ConnectorError: the source does not exist or holds no matching file.
    """
    return [u for u, _ in list_entries(fs, uri, path, fmt, options)]
