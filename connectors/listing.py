"""List a source's input files: sorted, filtered by extension and patterns, with full URIs."""
from __future__ import annotations

import fnmatch
import posixpath
from typing import Any

from dataflow.errors import ConnectorError

__all__ = ["DEFAULT_EXTENSIONS", "list_files", "to_uri"]

DEFAULT_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "audio": ("aif", "aiff", "flac", "mp3", "ogg", "opus", "wav"),
    "binary": (),
    "csv": ("csv",),
    "image": ("bmp", "gif", "jpeg", "jpg", "png", "tif", "tiff", "webp"),
    "jsonl": ("json", "jsonl", "ndjson"),
    "parquet": ("parquet", "pq"),
    "text": (),
}


def to_uri(fs, path: str, template: str) -> str:
    """Turn a filesystem path back into a URI of the same scheme as ``template``."""
    if "://" in template and not template.startswith("file://"):
        return f"{template.split('://', 1)[0]}://{path.lstrip('/')}"
    return path


def _hidden(path: str, root: str) -> bool:
    rel = posixpath.relpath(path, root) if path.startswith(root) else posixpath.basename(path)
    return any(part.startswith((".", "_")) for part in rel.split("/"))


def list_files(fs, uri: str, path: str, fmt: str, options: dict[str, Any]) -> list[str]:
    """Return the sorted URIs of the files a source reads.

    Args:
        fs: The filesystem of ``uri``.
        uri: The source URI as written (a file, a directory or a glob).
        path: ``uri`` without its scheme, as ``fs`` understands it.
        fmt: The source format (chooses the default extensions).
        options: Source options: ``recursive`` (default true), ``extensions`` (list, or ``"*"``),
            ``include`` / ``exclude`` (glob patterns on the path relative to the root).

    Raises:
        ConnectorError: the source does not exist or holds no matching file.
    """
    exts = options.get("extensions", DEFAULT_EXTENSIONS.get(fmt, ()))
    exts = () if exts == "*" else tuple(e.lower().lstrip(".") for e in exts)
    recursive = options.get("recursive", True)
    if any(c in path for c in "*?["):
        paths = [p for p in fs.glob(path) if fs.isfile(p)]
        root = path.split("*", 1)[0].rsplit("/", 1)[0]
    elif fs.isfile(path):
        paths, root = [path], posixpath.dirname(path)
    elif fs.isdir(path):
        root = path.rstrip("/")
        paths = fs.find(root) if recursive else [p for p in fs.ls(root, detail=False) if fs.isfile(p)]
        paths = [p for p in paths if not _hidden(p, root)]
    else:
        raise ConnectorError(f"source '{uri}' does not exist")
    if exts:
        paths = [p for p in paths if p.rsplit(".", 1)[-1].lower() in exts and "." in posixpath.basename(p)]
    rel = lambda p: posixpath.relpath(p, root) if root else p  # noqa: E731
    if options.get("include"):
        paths = [p for p in paths if any(fnmatch.fnmatch(rel(p), pat) for pat in options["include"])]
    if options.get("exclude"):
        paths = [p for p in paths if not any(fnmatch.fnmatch(rel(p), pat) for pat in options["exclude"])]
    if not paths:
        wanted = f" with extension {', '.join(exts)}" if exts else ""
        raise ConnectorError(f"source '{uri}' holds no file{wanted} (set source.options.extensions to change the filter)")
    return sorted(to_uri(fs, p, uri) for p in paths)
