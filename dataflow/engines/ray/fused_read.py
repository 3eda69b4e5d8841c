"""Typed JSON lines straight into the partial states of the aggregation after the first stage: one DuckDB query per read task.

Where the read is a local ``jsonl`` source with a declared schema and the stage after it runs as
one query with the aggregation's partial states (``fused_stage``), each read task asks DuckDB to
scan its files inside that query, all in one (``FusedAggregate.run_files``; where that fails, in
parts, down to single files: ``scanned_parts``): no Arrow table of the lines is built. A file it
cannot take (bz2 or xz, a damaged gzip or zstd file, another encoding, a line that does not start
with ``{``, a CR, a value of another kind, a bad line, a file gone since it was listed) is read as before, by ``ReadStream`` into Arrow blocks and
``FusedStageFn`` on each; its row errors are the same. Both give the same states and counters.
"""
from __future__ import annotations

import os
from typing import Callable, Iterator, TypeVar

import pyarrow as pa

from connectors.formats import GONE
from dataflow.batch import Columns, to_arrow
from dataflow.engines.ray.fused_stage import FusedStageFn
from dataflow.engines.ray.read import READ_STEP, ReadStream
from dataflow.runtime.io_stats import record_io, shard_tmp_of
from dataflow.runtime.stage import StepStats
from dataflow.runtime.stats import batch_key

__all__ = ["QUERY_BYTES", "ReadFusedStage", "query_groups", "scanned_parts", "scans_files"]

T = TypeVar("T")
QUERY_BYTES = 256 << 20  # the files of one query: bounds the states it holds (percentile_approx's are its values) to a few MB


def scans_files(reader: ReadStream) -> bool:
    """Whether ``reader``'s files may be scanned by DuckDB: local typed JSON lines in UTF-8 (no cache tier) whose declared types it reads."""
    from connectors.formats.typed_jsonl import arrow_schema
    from connectors.registry import scheme_of
    from dataflow.runtime.jsonl_scan import supported

    options = reader.options
    return (reader.fmt == "jsonl" and bool(options.get("schema")) and reader.cache is None and scheme_of(reader.source_uri) == "file"
            and options.get("encoding", "utf-8").lower() in ("utf-8", "utf8") and supported(arrow_schema(options["schema"])))


class ReadFusedStage:
    """``read`` then ``stage`` per batch of listed files, each file scanned by DuckDB in the stage's query where it can be."""

    def __init__(self, read: ReadStream, stage: FusedStageFn):
        from connectors.formats.typed_jsonl import arrow_schema

        self.read, self.stage = read, stage
        self.schema = arrow_schema(read.options["schema"])  # parsed once, at the driver

    def __call__(self, batch: Columns) -> Iterator[pa.Table]:
        from connectors.formats.aligned import object_lines
        from connectors.formats.compressed import INFLATION, codec_of
        from connectors.formats.lines import max_line_bytes
        from connectors.registry import count_bytes_read, io_counters, strip_scheme
        from dataflow.runtime.jsonl_scan import duckdb_reads

        side = self.stage.side
        io_before = io_counters()
        uris = [str(u) for u in batch["uri"]]
        paths = [strip_scheme(u) for u in uris]
        lines, sizes, weights = {}, {}, {}  # path: lines, bytes and lines' bytes (about, once decompressed), of the files DuckDB may scan
        if self.stage.fused().scans(self.schema):  # else no file is read for it: the query cannot take one
            max_line = max_line_bytes(self.read.options)  # a longer line is a row error of the Arrow way
            for path in paths:
                try:
                    n = object_lines(path, cr=False, max_line=max_line) if duckdb_reads(path) else None  # a compressed file is decompressed whole for it
                    size = os.path.getsize(path) if n else 0
                except GONE:  # gone since it was listed: the Arrow way records it
                    continue
                if n:
                    lines[path], sizes[path] = n, size
                    weights[path] = size * (1 if codec_of(path) is None else INFLATION)  # towards QUERY_BYTES
        read, steps, partial, scanned = StepStats(), {}, StepStats(), set()
        for files, done in (part for group in query_groups(lines, weights) for part in scanned_parts(group, self._scan)):
            states, stats, part = done
            scanned.update(files)
            read.add(StepStats(rows_in=sum(files.values()), rows_out=sum(files.values())))
            for index, st in stats.items():
                steps.setdefault(index, StepStats()).add(st)
            partial.add(part)
            for path in files:
                count_bytes_read(sizes[path])
            yield states
        if scanned:
            key = batch_key([u for u, p in zip(uris, paths) if p in scanned])
            side.write("read", key, [], {READ_STEP: read})
            side.write(self.stage.stage.name, key, [], steps)
            side.write(f"{self.stage.partial_name}-partial", key, [], {self.stage.call.index: partial})
            record_io(side.uri, side.storage_options, shard_tmp_of(side), "read", key, io_before, io_counters())
        rest = [i for i, p in enumerate(paths) if p not in scanned]
        if rest:
            for block in self.read({k: v[rest] for k, v in batch.items()}):
                yield self.stage(block if isinstance(block, pa.Table) else to_arrow(block))

    def _scan(self, files: dict[str, int]) -> tuple[pa.Table, dict[int, StepStats], StepStats] | None:
        from dataflow.runtime.jsonl_scan import JsonlScan

        scan = JsonlScan.of(files)
        return self.stage.fused().run_files(scan, self.schema) if scan is not None else None


def scanned_parts(files: dict[str, int], scan: Callable[[dict[str, int]], T | None], ways: int = 8) -> list[tuple[dict[str, int], T]]:
    """``scan`` over all ``files`` at once; where it fails (a value of another kind in one of them), over ``ways`` parts of them, and so on down to single files.

    Returns the parts scanned, with what ``scan`` gave; a file in none of them failed alone. A bad
    file among n costs about ``ways * log(n, ways)`` scans, not n.
    """
    done = scan(files) if files else None
    if done is not None:
        return [(files, done)]
    if len(files) < 2:
        return []
    items = list(files.items())
    size = -(-len(items) // ways)
    return [part for i in range(0, len(items), size) for part in scanned_parts(dict(items[i : i + size]), scan, ways)]


def query_groups(lines: dict[str, int], sizes: dict[str, int], limit: int = QUERY_BYTES) -> Iterator[dict[str, int]]:
    """``lines`` in groups of files of at most ``limit`` bytes together (``sizes``; a bigger file alone), in order."""
    group: dict[str, int] = {}
    total = 0
    for path, n in lines.items():
        if group and total + sizes[path] > limit:
            yield group
            group, total = {}, 0
        group[path] = n
        total += sizes[path]
    if group:
        yield group
