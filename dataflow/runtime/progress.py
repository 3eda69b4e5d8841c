"""Deterministic input shards and per-shard completion markers: what makes a killed run resumable.

Layout under the sink (all of it removed at commit, except ``report.json``)::

    <sink>/_dataflow/state.json                 pipeline hash, input fingerprint, shard count
    <sink>/_dataflow/progress/<shard>.json      one marker per committed shard, written last
    <sink>/_dataflow/staged/<shard>/data/...    the shard's output files
    <sink>/_dataflow/staged/<shard>/_errors/    its row errors
    <sink>/_dataflow/staged/<shard>/_stats/     its per-step counters
"""
from __future__ import annotations

import hashlib
import json
import posixpath
from dataclasses import dataclass
from typing import Any

__all__ = ["MIN_FILES_PER_SHARD", "Progress", "Shard", "StagedFile"]

MIN_FILES_PER_SHARD = 16


@dataclass(frozen=True)
class Shard:
    """A deterministic slice of the sorted input files.

    ``count``: the shards in all, when known (None while the listing goes on). ``digest``: a hash
    of the shard's files' names, sizes and versions (``shards.ShardCutter``); else of its names.
    """

    index: int
    count: int | None
    inputs: tuple[str, ...]
    digest: str | None = None

    @property
    def id(self) -> str:
        digest = self.digest or hashlib.sha1("\n".join(self.inputs).encode("utf-8", "surrogatepass")).hexdigest()[:12]
        return f"{self.index:05d}-{digest}"


@dataclass(frozen=True)
class StagedFile:
    """An output file waiting for the commit: where it is, its final relative name, its size."""

    src: str
    rel: str
    rows: int
    bytes: int
    shard: str | None = None


_LISTED = ("input_fingerprint", "shards", "skipped")  # what a streamed run records when its listing ends


def _same_run(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether ``new`` resumes ``old``: the same state, or the same pipeline when ``old`` was stopped while listing.

    Then the listing did not end, and the shards' ids (which hash their files' names, sizes and
    versions) tell which of its markers still hold.
    """
    if old.get("input_fingerprint") is None:
        return {k: v for k, v in old.items() if k not in _LISTED} == {k: v for k, v in new.items() if k not in _LISTED}
    return old == new


class Progress:
    """The resumable state of a sink's unfinished run."""

    def __init__(self, fs, root: str):
        self.fs, self.root = fs, root
        self.base = posixpath.join(root, "_dataflow")
        self.markers = posixpath.join(self.base, "progress")
        self.staged = posixpath.join(self.base, "staged")
        self.state_path = posixpath.join(self.base, "state.json")

    def _read_json(self, path: str) -> Any:
        with self.fs.open(path, "rb") as f:
            return json.loads(f.read())

    def _write_json(self, path: str, data: Any) -> None:
        tmp = f"{path}.tmp"
        with self.fs.open(tmp, "wb") as f:
            f.write(json.dumps(data, indent=1).encode("utf-8"))
        self.fs.mv(tmp, path)

    def begin(self, state: dict[str, Any], restart: bool = False) -> tuple[dict[str, dict[str, Any]], str | None]:
        """Load the markers to resume from; discard progress made under another state.

        Returns:
            The completed shards by id, and a note saying what was resumed or discarded.
        """
        old = self._read_json(self.state_path) if self.fs.exists(self.state_path) else None
        note = None
        if old is not None and (restart or not _same_run(old, state)):
            note = "--restart: discarded earlier progress" if restart else "pipeline or inputs changed since the interrupted run: starting over"
            self.clear()
        elif old is not None:
            done = self.completed()
            note = f"resuming: {len(done)} of {state['shards']} shards already committed" if done else None
        self.fs.makedirs(self.markers, exist_ok=True)
        self._write_json(self.state_path, state)
        return self.completed(), note

    def listed(self, fingerprint: str, shards: int, skipped: dict[str, int]) -> None:
        """Record what the listing found once it ended (a streamed run starts before)."""
        state = self._read_json(self.state_path)
        self._write_json(self.state_path, {**state, "input_fingerprint": fingerprint, "shards": shards, "skipped": skipped})

    def completed(self) -> dict[str, dict[str, Any]]:
        if not self.fs.exists(self.markers):
            return {}
        out = {}
        for path in sorted(self.fs.ls(self.markers, detail=False)):
            if path.endswith(".json"):
                marker = self._read_json(path)
                out[marker["shard"]] = marker
        return out

    def shard_dir(self, shard: Shard) -> str:
        return posixpath.join(self.staged, shard.id)

    def stage(self, shard: Shard, tmp_dir: str, written: list[Any], phase: str, run_id: str) -> dict[str, Any]:
        """Move a finished shard's files from the run's tmp folder into staging, then write its marker.

        The marker names the run that computed the shard (``run_id``): after a resume, the manifest
        tells which shards an earlier, interrupted run contributed.
        """
        dst = self.shard_dir(shard)
        if self.fs.exists(dst):
            self.fs.rm(dst, recursive=True)
        data_dir = posixpath.join(tmp_dir, "data")
        files = []
        for w in written:
            if not w.path.startswith(data_dir + "/"):  # uploaded to its final name already (object-store sinks)
                rel = posixpath.relpath(w.path, self.root)
                files.append({"src": rel, "rel": rel, "rows": w.rows, "bytes": w.bytes})
                continue
            rel = posixpath.relpath(w.path, data_dir)
            target = posixpath.join(dst, "data", rel)
            self.fs.makedirs(posixpath.dirname(target), exist_ok=True)
            self.fs.mv(w.path, target)
            files.append({"src": posixpath.relpath(target, self.root), "rel": rel, "rows": w.rows, "bytes": w.bytes})
        for side in ("_errors", "_stats"):
            src = posixpath.join(tmp_dir, side)
            if self.fs.exists(src):
                self.fs.makedirs(dst, exist_ok=True)
                self.fs.mv(src, posixpath.join(dst, side), recursive=True)
        marker = {"shard": shard.id, "index": shard.index, "count": shard.count, "phase": phase, "run_id": run_id, "inputs": list(shard.inputs), "files": files}
        self._write_json(posixpath.join(self.markers, f"{shard.id}.json"), marker)
        return marker

    def staged_files(self, markers: list[dict[str, Any]]) -> list[StagedFile]:
        return [StagedFile(posixpath.join(self.root, f["src"]), f["rel"], f["rows"], f["bytes"], m["shard"]) for m in markers for f in m["files"]]

    def side_dirs(self, markers: list[dict[str, Any]], side: str) -> list[str]:
        return [posixpath.join(self.staged, m["shard"], side) for m in markers]

    def clear(self) -> None:
        """Remove markers, staged output and state (``report.json`` stays)."""
        for path in (self.markers, self.staged, self.state_path):
            if self.fs.exists(path):
                self.fs.rm(path, recursive=True)
