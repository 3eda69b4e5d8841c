"""What a run reports: counts, timing, output location and per-step counters (``RunReport``), and building it."""
from __future__ import annotations

import json
import posixpath
from dataclasses import asdict, dataclass, field
from typing import Any

from dataflow.dsl.spec import PipelineSpec
from dataflow.runtime.stats import read_errors

__all__ = ["CACHE_COUNTERS_DIR", "CacheReport", "RunReport", "StepReport", "budget_problem", "cache_report", "run_report", "top_reasons"]

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


def run_report(spec: PipelineSpec, engine: str, stats, files, wall: float) -> RunReport:
    """The report of a run from its summed step counters and its written files."""
    read = stats.get(-1)
    steps = [StepReport(op="read", rows_in=read.rows_in, rows_out=read.rows_out, rows_errored=read.rows_errored, seconds=read.seconds)] if read else []
    for i, step in enumerate(spec.all_steps):
        st = stats.get(i)
        if st is not None:
            steps.append(StepReport(op=step.op, rows_in=st.rows_in, rows_out=st.rows_out, rows_errored=st.rows_errored, seconds=st.seconds, drops=dict(st.drops)))
        else:
            steps.append(StepReport(op=step.op))
    return RunReport(
        pipeline=spec.name,
        engine=engine,
        rows_in=read.rows_in if read else 0,
        rows_out=sum(f.rows for f in files),
        rows_errored=sum(s.rows_errored for s in stats.values()),
        wall_seconds=wall,
        output=spec.sink.uri,
        errors=f"{spec.sink.uri.rstrip('/')}/_errors/",
        steps=steps,
        files=len(files),
        bytes_written=sum(f.bytes for f in files),
    )


def budget_problem(spec: PipelineSpec, report: RunReport) -> str | None:
    """Why the run's row errors exceed ``errors.max_errors`` / ``errors.max_error_ratio``, or None."""
    budget = spec.errors
    if budget.max_errors is not None and report.rows_errored > budget.max_errors:
        return f"{report.rows_errored} row errors exceed errors.max_errors={budget.max_errors}"
    ratio = report.rows_errored / report.rows_in if report.rows_in else 0.0
    if budget.max_error_ratio is not None and ratio > budget.max_error_ratio:
        return f"{report.rows_errored} of {report.rows_in} rows failed ({ratio:.1%}), above errors.max_error_ratio={budget.max_error_ratio}"
    return None


def top_reasons(fs, errors_dirs: list[str]) -> str:
    """The three commonest (op, reason) pairs among the run's error records."""
    from collections import Counter

    counts = Counter((r["op"], r["reason"].split(":")[0]) for r in read_errors(fs, errors_dirs, limit=10_000))
    return "; ".join(f"{op}: {reason} (x{n})" for (op, reason), n in counts.most_common(3))


def cache_report(fs, layout) -> CacheReport | None:
    """Sum the cache counters the read tasks of this run left under ``<tmp>/<shard>/_cache/``."""
    if not fs.exists(layout.tmp):
        return None
    paths = [p for p in fs.find(layout.tmp) if posixpath.basename(posixpath.dirname(p)) == CACHE_COUNTERS_DIR]
    if not paths:
        return None
    total = CacheReport()
    for path in paths:
        for name, value in json.loads(fs.cat_file(path)).items():
            if hasattr(total, name):
                setattr(total, name, getattr(total, name) + int(value))
    return total
