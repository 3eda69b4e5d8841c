"""Atomic output commit: tasks write under ``<sink>/_tmp/<run_id>/``; the driver publishes.

On object stores a move is a copy, so there the writers upload each data file once, straight to
its final name (names carry the run, so they never meet committed files) and the commit only
writes the manifest and ``_SUCCESS``: readers trust the manifest, never a listing. Data files
no manifest names (left by a killed run) are deleted at the next commit.

Layout of a committed sink::

    <sink>/part-<run>-<key>.<ext>     data files (or <sink>/files-<run>-<key>/ for the files format)
    <sink>/_errors/<run>-*.jsonl      row errors {source, op, error_type, reason}
    <sink>/_manifest.json             files, rows, bytes, pipeline hash, dataflow version
    <sink>/_SUCCESS                   written last: a reader that sees it sees everything
"""
from __future__ import annotations

import json
import posixpath
import re
import time
from dataclasses import dataclass, field
from typing import Any

from dataflow.errors import RunError, SinkExistsError

__all__ = [
    "CommitResult",
    "SinkLayout",
    "commit_output",
    "publish_errors",
    "read_manifest",
    "refuse_existing",
    "remove_tmp",
    "sweep_tmp",
    "sweep_unpublished",
]

# Data files and folders the writers name: part-<8 hex>-..., files-<8 hex>-... (see the engines' writers).
_OUR_NAMES = re.compile(r"^(part|files)-[0-9a-f]{8}-")


@dataclass(frozen=True)
class SinkLayout:
    """The paths of one run's output on the sink filesystem."""

    root: str
    run_id: str

    @property
    def tmp(self) -> str:
        return posixpath.join(self.root, "_tmp", self.run_id)

    @property
    def tmp_data(self) -> str:
        return posixpath.join(self.tmp, "data")

    @property
    def tmp_errors(self) -> str:
        return posixpath.join(self.tmp, "_errors")

    @property
    def tmp_stats(self) -> str:
        return posixpath.join(self.tmp, "_stats")

    @property
    def errors(self) -> str:
        return posixpath.join(self.root, "_errors")

    @property
    def manifest(self) -> str:
        return posixpath.join(self.root, "_manifest.json")

    @property
    def success(self) -> str:
        return posixpath.join(self.root, "_SUCCESS")


def read_manifest(fs, layout: SinkLayout) -> dict[str, Any] | None:
    """Return the committed manifest, or None when the sink holds no committed output."""
    if not fs.exists(layout.success) or not fs.exists(layout.manifest):
        return None
    with fs.open(layout.manifest, "rb") as f:
        return json.loads(f.read())


def refuse_existing(fs, layout: SinkLayout, mode: str, uri: str) -> None:
    """Raise when ``mode`` is ``error`` and the sink already holds committed output."""
    if mode == "error" and fs.exists(layout.success):
        raise SinkExistsError(
            f"sink '{uri}' already holds committed output (mode: error); set sink.mode to 'overwrite' "
            "to replace it or 'append' to add to it (e.g. --set sink.mode=overwrite)"
        )


def remove_tmp(fs, layout: SinkLayout) -> None:
    """Delete this run's temporary folder, and ``_tmp`` itself once no other run uses it."""
    if fs.exists(layout.tmp):
        fs.rm(layout.tmp, recursive=True)
    parent = posixpath.dirname(layout.tmp)
    if fs.exists(parent) and not fs.ls(parent, detail=False):
        fs.rmdir(parent)


def sweep_tmp(fs, layout: SinkLayout) -> None:
    """Delete what killed runs left under ``<sink>/_tmp/`` (one run per sink at a time)."""
    parent = posixpath.dirname(layout.tmp)
    if fs.exists(parent):
        fs.rm(parent, recursive=True)


def _is_object_store(fs) -> bool:
    from connectors.registry import storage_traits

    return not storage_traits(fs).is_local


def _write_atomic(fs, path: str, data: bytes, tmp_dir: str) -> None:
    """Write a small file so a reader sees all of it or none: one PUT on object stores, else temp + rename."""
    if _is_object_store(fs):
        fs.pipe_file(path, data)
        return
    fs.makedirs(tmp_dir, exist_ok=True)
    tmp = posixpath.join(tmp_dir, posixpath.basename(path))
    with fs.open(tmp, "wb") as f:
        f.write(data)
    fs.mv(tmp, path)


def sweep_unpublished(fs, layout: SinkLayout, keep: set[str]) -> list[str]:
    """Delete data files at the sink root that no manifest names (a killed or failed run's uploads).

    Only names the writers give (``part-<hex>-…``, ``files-<hex>-…``) are touched; ``keep`` holds
    the top-level names the manifest lists.

    Returns:
        The deleted paths.
    """
    if not fs.exists(layout.root):
        return []
    gone = []
    for path in fs.ls(layout.root, detail=False):
        name = posixpath.basename(path.rstrip("/"))
        if _OUR_NAMES.match(name) and name not in keep:
            fs.rm(path, recursive=True)
            gone.append(path)
    return gone


def _move_tree(fs, src_root: str, dst_root: str, rename) -> list[str]:
    moved = []
    if not fs.exists(src_root):
        return moved
    for path in sorted(fs.find(src_root)):
        rel = posixpath.relpath(path, src_root)
        dst = posixpath.join(dst_root, rename(rel))
        fs.makedirs(posixpath.dirname(dst), exist_ok=True)
        fs.mv(path, dst)
        moved.append(dst)
    return moved


def publish_errors(fs, layout: SinkLayout, error_dirs: list[str]) -> list[str]:
    """Move row-error files to ``<sink>/_errors/`` (also when the data is not published)."""
    moved = []
    for i, src in enumerate(sorted(error_dirs)):
        moved += _move_tree(fs, src, layout.errors, lambda rel, i=i: f"{layout.run_id}-{i:05d}-{rel.replace('/', '-')}")
    return moved


@dataclass
class CommitResult:
    """What a commit published."""

    files: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def commit_output(fs, layout: SinkLayout, mode: str, files: list[Any], error_dirs: list[str], manifest_extra: dict[str, Any]) -> CommitResult:
    """Publish a run: move data into place (unless already there), write the manifest, then ``_SUCCESS``.

    Old files are deleted only after that (``overwrite``), and so are unlisted data files at the root.

    Args:
        fs: The sink filesystem.
        layout: This run's paths.
        mode: error, overwrite or append.
        files: ``StagedFile`` entries (source path, final relative name, rows, bytes).
        error_dirs: Folders of row-error files to publish under ``_errors/``.
        manifest_extra: Pipeline name, hash, input fingerprint, counts and the like.
    """
    old = read_manifest(fs, layout) if mode in ("overwrite", "append") else None
    refuse_existing(fs, layout, mode, layout.root)
    published = []
    for f in sorted(files, key=lambda f: f.rel):
        dst = posixpath.join(layout.root, f.rel)
        if f.rel.startswith("/") or posixpath.normpath(posixpath.relpath(dst, layout.root)).startswith(".."):
            raise RunError(f"refusing to write '{f.rel}' outside the sink root {layout.root}")
        if f.src.rstrip("/") != dst:  # an object-store writer put it at its final name already
            fs.makedirs(posixpath.dirname(dst), exist_ok=True)
            fs.mv(f.src, dst)
        published.append({"path": f.rel, "rows": f.rows, "bytes": f.bytes, "run_id": layout.run_id, **({"shard": f.shard} if getattr(f, "shard", None) else {})})
    errors = publish_errors(fs, layout, error_dirs)
    keep_old = bool(old and mode == "append")
    manifest = {
        "version": 1,
        **manifest_extra,
        "run_id": layout.run_id,
        "committed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": (old.get("files", []) if keep_old else []) + published,
        "errors": (old.get("errors", []) if keep_old else []) + [posixpath.relpath(e, layout.root) for e in errors],
        "runs": (old.get("runs", []) if keep_old else []) + [layout.run_id],
    }
    _write_atomic(fs, layout.manifest, json.dumps(manifest, indent=2).encode("utf-8"), layout.tmp)
    fs.pipe_file(layout.success, b"")
    if old and mode == "overwrite":
        live = {f["path"] for f in published}
        for entry in old.get("files", []):
            if entry["path"] not in live and fs.exists(posixpath.join(layout.root, entry["path"])):
                fs.rm(posixpath.join(layout.root, entry["path"]), recursive=True)
        for rel in old.get("errors", []):
            if fs.exists(posixpath.join(layout.root, rel)):
                fs.rm(posixpath.join(layout.root, rel))
    sweep_unpublished(fs, layout, {f["path"].split("/", 1)[0] for f in manifest["files"]})
    remove_tmp(fs, layout)
    return CommitResult(files=manifest["files"], errors=manifest["errors"])
