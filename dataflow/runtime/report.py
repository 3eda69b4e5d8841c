"""What a run reports: counts, timing, output location and per-step counters (``RunReport``)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["CACHE_COUNTERS_DIR", "CacheReport", "RunReport", "StepReport"]

CACHE_COUNTERS_DIR = "_cache"  # read tasks leave their cache counters in <shard tmp>/_cache/*.json


@dataclass
class StepReport:
    """Counters of one step (or of the reader, op ``read``)."""

    op: str
    rows_in: int = 0
    rows_out: int = 0
    rows_errored: int = 0
    seconds: float = 0.0
    drops: dict[str, int] = field(default_factory=dict)


@dataclass
class CacheReport:
    """What the cache tier did in a run, summed over every read task (see ``connectors.storage.disk_cache``)."""

    hits: int = 0
    misses: int = 0
    bytes_local: int = 0
    bytes_remote: int = 0
    evictions: int = 0
    corrupt: int = 0
    direct_reads: int = 0


@dataclass
class RunReport:
    """The outcome of a run: counts, timing, output location and per-step counters."""

    pipeline: str
    engine: str
    rows_in: int = 0
    rows_out: int = 0
    rows_errored: int = 0
    wall_seconds: float = 0.0
    output: str | None = None
    errors: str | None = None
    steps: list[StepReport] = field(default_factory=list)
    files: int = 0
    bytes_written: int = 0  # bytes of the published output files
    bytes_read: int = 0  # bytes the read tasks got from the source (from remote storage or the cache tier)
    retries: int = 0  # storage requests sent again by the tasks' S3 clients (SlowDown, 5xx, broken connections)
    published: bool = False
    failure: str | None = None
    cache: CacheReport | None = None
    source: str | None = None
    source_format: str | None = None
    skipped: dict[str, int] = field(default_factory=dict)  # files the source's extension filter left out, by extension
    resources: dict[str, Any] = field(default_factory=dict)  # filled at commit by dataflow.report.html

    @property
    def rows_per_second(self) -> float:
        return self.rows_in / self.wall_seconds if self.wall_seconds else 0.0

    def _repr_html_(self) -> str:
        from dataflow.report.notebook import run_report_html

        return run_report_html(self)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["wall_seconds"] = round(self.wall_seconds, 3)
        d["rows_per_second"] = round(self.rows_per_second, 1)
        for s in d["steps"]:
            s["rows_per_second"] = round(s["rows_in"] / s["seconds"], 1) if s["seconds"] else None
            s["seconds"] = round(s["seconds"], 3)
        return d
