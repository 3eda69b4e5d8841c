"""Per-batch side outputs (row errors and step counters) and their aggregation at the driver.

Each batch writes its files under names derived from the sources it holds, so a retried task
overwrites its own files instead of counting twice.
"""
from __future__ import annotations

import hashlib
import json
import posixpath
from dataclasses import dataclass
from typing import Any

from dataflow.runtime.error_sink import ErrorRecord, write_error_records
from dataflow.runtime.stage import StepStats

__all__ = ["SideOutputs", "batch_key", "read_errors", "read_stats"]


def batch_key(sources) -> str:
    """A stable name for a batch: a hash of the sources it holds."""
    h = hashlib.sha1()
    for s in sources:
        h.update(str(s).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:20]


@dataclass(frozen=True)
class SideOutputs:
    """Where a stage task writes its error records and counters (plain data: ships to workers)."""

    uri: str
    storage_options: dict[str, dict[str, Any]]
    stats_dir: str
    errors_dir: str

    def _fs(self):
        from connectors.registry import filesystem

        return filesystem(self.uri, self.storage_options)

    def write(self, stage: str, key: str, errors: list[ErrorRecord], stats: dict[int, StepStats]) -> None:
        fs = self._fs()
        if errors:
            write_error_records(fs, posixpath.join(self.errors_dir, f"{stage}-{key}.jsonl"), errors)
        payload = {str(i): s.as_dict() for i, s in stats.items()}
        with fs.open(posixpath.join(self.stats_dir, f"{stage}-{key}.json"), "wb") as f:
            f.write(json.dumps(payload).encode("utf-8"))


def read_stats(fs, stats_dirs: list[str], skip: frozenset[int] = frozenset()) -> dict[int, StepStats]:
    """Sum every batch's counters per step index (``-1`` is the reader), leaving out ``skip``."""
    total: dict[int, StepStats] = {}
    paths = [p for d in stats_dirs if fs.exists(d) for p in fs.find(d)]
    for path in paths:
        with fs.open(path, "rb") as f:
            data = json.loads(f.read())
        for index, d in data.items():
            if int(index) in skip:
                continue
            st = StepStats(d["rows_in"], d["rows_out"], d["rows_errored"], d["seconds"])
            st.drops.update(d.get("drops", {}))
            total.setdefault(int(index), StepStats()).add(st)
    return total


def read_errors(fs, errors_dirs: list[str], limit: int | None = None) -> list[dict[str, Any]]:
    """Return error records under ``errors_dirs`` (sorted files), at most ``limit``."""
    out: list[dict[str, Any]] = []
    paths = sorted(p for d in errors_dirs if fs.exists(d) for p in fs.find(d))
    for path in paths:
        with fs.open(path, "rb") as f:
            for line in f.read().decode("utf-8").splitlines():
                if line.strip():
                    out.append(json.loads(line))
                    if limit is not None and len(out) >= limit:
                        return out
    return out
