"""Bounded samples of a committed sink for the report: kept rows, dropped and errored inputs, error groups.

Everything is read back from what the run committed (``_manifest.json``, the output files,
``_errors/``), so a report can be re-rendered later from the sink alone. The work is bounded:
at most ``limit`` thumbnails of each kind, the ``__source__`` column of one shard's outputs, and
the first ``MAX_ERROR_RECORDS`` error records. Source files are untrusted (the errored ones
are often decompression bombs): they are opened with ``image.decode``'s ``max_pixels``, at most
``MAX_IMAGE_BYTES`` of each is read, and thumbnails stop after ``MEDIA_SECONDS`` (the rest are
shown with a note instead of a picture).
"""
from __future__ import annotations

import json
import posixpath
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from dataflow.columns import SOURCE
from dataflow.lineage import strip_fragments
from dataflow.report.media import MAX_IMAGE_BYTES, image_thumbnail, thumbnail_from_bytes

__all__ = ["ErrorGroup", "Sample", "Samples", "collect_samples", "group_errors"]

MAX_ERROR_RECORDS = 10_000
MAX_SHARDS_SCANNED = 4  # shards whose inputs are compared with the output to find dropped rows
EXAMPLES_PER_GROUP = 3
MEDIA_SECONDS = 20.0  # time for all thumbnails of one report; later ones are skipped with a note
MEDIA_FORMATS = ("image", "audio", "binary")
_IMAGE_COLUMNS = ("bytes", "image", "thumbnail")


@dataclass(frozen=True)
class Sample:
    """One picture of the grid: the row's source, its thumbnail (None when unreadable), a caption."""

    source: str
    image: str | None
    caption: str


@dataclass(frozen=True)
class ErrorGroup:
    """Row errors of one op with one reason (its text up to the first colon)."""

    op: str
    reason: str
    count: int
    examples: tuple[str, ...]
    detail: str


@dataclass
class Samples:
    """What the report shows beyond the counters."""

    kept: list[Sample] = field(default_factory=list)
    dropped: list[Sample] = field(default_factory=list)
    errored: list[Sample] = field(default_factory=list)
    errors: list[ErrorGroup] = field(default_factory=list)
    error_records: int = 0


def group_errors(records: list[dict[str, Any]]) -> list[ErrorGroup]:
    """Group error records by op and reason, largest group first, with example sources."""
    counts: Counter = Counter()
    examples: dict[tuple[str, str], list[str]] = {}
    detail: dict[tuple[str, str], str] = {}
    for r in records:
        key = (r["op"], r["reason"].split(":", 1)[0])
        counts[key] += 1
        ex = examples.setdefault(key, [])
        if len(ex) < EXAMPLES_PER_GROUP:
            ex.append(r["source"])
        detail.setdefault(key, r["reason"])
    return [ErrorGroup(op, reason, n, tuple(examples[(op, reason)]), detail[(op, reason)]) for (op, reason), n in counts.most_common()]


def _basename(source: str) -> str:
    return posixpath.basename(strip_fragments(source)) or source


class _Thumbs:
    """Thumbnails within the decode op's pixel limit and the report's time budget."""

    def __init__(self, read_source: Callable[[str, int], bytes] | None, max_pixels: int | None):
        self.read_source, self.max_pixels = read_source, max_pixels
        self.deadline = time.monotonic() + MEDIA_SECONDS

    def _late(self) -> bool:
        return time.monotonic() > self.deadline

    def of_value(self, value: Any) -> str | None:
        return None if self._late() else image_thumbnail(value, max_pixels=self.max_pixels)

    def of_source(self, source: str) -> tuple[str | None, str]:
        """A thumbnail of a source file, or None and why not."""
        if self.read_source is None or strip_fragments(source) != source:  # a row of a file, not the file
            return None, ""
        if self._late():
            return None, f"not shown: thumbnails stop after {MEDIA_SECONDS:.0f} s"
        try:
            return thumbnail_from_bytes(self.read_source(source, MAX_IMAGE_BYTES), max_pixels=self.max_pixels), ""
        except Exception as exc:  # noqa: BLE001  hostile headers raise more than OSError; the report of a committed run is still written
            return None, f"not viewable: {str(exc)[:80] or type(exc).__name__}"


def _drop_label(steps: list[dict[str, Any]]) -> str:
    droppers = [s for s in steps if sum(s.get("drops", {}).values())]
    if len(droppers) != 1:
        return "dropped by one of: " + ", ".join(s["op"] for s in droppers)
    reasons = [r for r, n in droppers[0]["drops"].items() if n and r != droppers[0]["op"]]
    why = f": {reasons[0]}" if len(reasons) == 1 else (f" ({', '.join(reasons)})" if reasons else "")
    return f"dropped by {droppers[0]['op']}{why}"


class _Outputs:
    """Read committed output files: first rows for thumbnails, ``__source__`` values for the drop check."""

    def __init__(self, fs, root: str, sink_format: str):
        self.fs, self.root, self.format = fs, root, sink_format

    def _path(self, rel: str) -> str:
        return posixpath.join(self.root, rel)

    def first_rows(self, rel: str, n: int) -> list[dict[str, Any]]:
        if self.format == "parquet":
            import pyarrow.parquet as pq

            from dataflow.batch import from_arrow, to_rows

            with self.fs.open(self._path(rel), "rb") as f:
                batch = next(pq.ParquetFile(f).iter_batches(batch_size=n), None)
                return to_rows(from_arrow(batch)) if batch is not None else []
        if self.format == "files" and rel.endswith("index.jsonl"):
            rows = [json.loads(line) for line in self.fs.cat_file(self._path(rel)).decode("utf-8").splitlines()[:n] if line.strip()]
            folder = posixpath.dirname(self._path(rel))
            return [{**r, "bytes": self.fs.cat_file(posixpath.join(folder, r["file"]))} for r in rows]
        if self.format == "jsonl":
            lines = self.fs.cat_file(self._path(rel)).decode("utf-8").splitlines()
            return [json.loads(line) for line in lines[:n] if line.strip()]
        return []

    def data_files(self, entries: list[dict[str, Any]]) -> list[str]:
        """The files holding rows (for the ``files`` format, the index of each folder)."""
        if self.format == "files":
            return [e["path"] for e in entries if e["path"].endswith("index.jsonl")]
        return [e["path"] for e in entries if e.get("rows")]

    def sources(self, rel: str) -> set[str]:
        if self.format == "parquet":
            import pyarrow.parquet as pq

            with self.fs.open(self._path(rel), "rb") as f:
                pf = pq.ParquetFile(f)
                if SOURCE not in pf.schema_arrow.names:
                    return set()
                return set(pf.read(columns=[SOURCE]).column(SOURCE).to_pylist())
        if self.format in ("jsonl", "files") and rel.endswith(".jsonl"):
            lines = self.fs.cat_file(self._path(rel)).decode("utf-8").splitlines()
            return {json.loads(line).get(SOURCE) for line in lines if line.strip()}
        return set()


def _kept(outputs: _Outputs, files: list[str], thumbs: _Thumbs, limit: int) -> list[Sample]:
    out: list[Sample] = []
    for rel in files:
        for row in outputs.first_rows(rel, limit - len(out)):
            source = str(row.get(SOURCE, rel))
            image = next((t for c in _IMAGE_COLUMNS if c in row for t in [thumbs.of_value(row[c])] if t), None)
            note = ""
            if image is None:
                image, note = thumbs.of_source(source)
            size = f"{row['width']}x{row['height']}" if "width" in row and "height" in row else ""
            out.append(Sample(source, image, " ".join(p for p in (_basename(source), size, note) if p)))
        if len(out) >= limit:
            break
    return out


def _shard_files(manifest: dict[str, Any]) -> list[tuple[list[str], list[str]]]:
    """The inputs of the first few map shards, each with the committed files holding its rows.

    After a global step (dedup) the rows of every shard are in the global step's files.
    """
    shards = manifest.get("shards", [])
    global_files = [f for s in shards if s.get("inputs") == ["global"] for f in s["files"]]
    maps = [s for s in shards if s.get("inputs") != ["global"] and s.get("inputs")][:MAX_SHARDS_SCANNED]
    return [(list(s["inputs"]), global_files or s["files"]) for s in maps]


def collect_samples(
    fs,
    root: str,
    manifest: dict[str, Any],
    report: dict[str, Any],
    *,
    sink_format: str,
    read_source: Callable[[str, int], bytes] | None,
    limit: int = 8,
    max_pixels: int | None = None,
) -> Samples:
    """Collect the report's samples from a committed sink.

    Args:
        fs: The sink filesystem.
        root: The sink root on ``fs``.
        manifest: The sink's ``_manifest.json``.
        report: ``RunReport.to_dict()``.
        sink_format: parquet, jsonl or files.
        read_source: ``(uri, max_bytes)`` -> a source file's bytes, refusing (ValueError) a file
            above ``max_bytes`` without reading it (None: no source thumbnails).
        limit: Thumbnails of each kind at most.
        max_pixels: The run's ``image.decode`` pixel limit (None: the op's default).
    """
    from dataflow.runtime.stats import read_errors

    records = read_errors(fs, [posixpath.join(root, "_errors")], limit=MAX_ERROR_RECORDS)
    samples = Samples(errors=group_errors(records), error_records=len(records))
    if report.get("source_format") != "image":
        return samples
    outputs, thumbs = _Outputs(fs, root, sink_format), _Thumbs(read_source, max_pixels)
    samples.kept = _kept(outputs, outputs.data_files(manifest.get("files", [])), thumbs, limit)
    for r in records[:limit]:
        image, note = thumbs.of_source(r["source"])
        samples.errored.append(Sample(r["source"], image, f"{_basename(r['source'])}: {r['op']}: {r['reason'][:80]}" + (f" ({note})" if note and image is None else "")))
    if any(sum(s.get("drops", {}).values()) for s in report.get("steps", [])):
        samples.dropped = _dropped(outputs, _shard_files(manifest), {r["source"] for r in records}, _drop_label(report["steps"]), thumbs, limit)
    return samples


def _dropped(outputs: _Outputs, shards, errored: set[str], label: str, thumbs: _Thumbs, limit: int) -> list[Sample]:
    """Inputs of the scanned shards that are neither in the output nor errored: a filter dropped them."""
    out: list[Sample] = []
    read: dict[str, set[str]] = {}
    for inputs, files in shards:
        for f in files:
            if f not in read:
                read[f] = outputs.sources(f)  # after a global step every shard shares the same files
        kept = set().union(*(read[f] for f in files))
        for source in [i for i in inputs if i not in kept and i not in errored][: limit - len(out)]:
            image, note = thumbs.of_source(source)
            out.append(Sample(source, image, f"{_basename(source)}: {label}" + (f" ({note})" if note else "")))
        if len(out) >= limit:
            break
    return out
