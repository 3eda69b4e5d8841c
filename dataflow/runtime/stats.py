"""Per-batch side outputs (row errors and step counters) and their aggregation at the driver.

Each batch writes its files under names derived from the sources it holds, so a retried task
overwrites its own files instead of counting twice. ``balance_problems`` checks that the summed
counters add up (rows are conserved) before anything is published.
"""
from __future__ import annotations

import hashlib
import json
import posixpath
from dataclasses import dataclass
from typing import Any

from dataflow.runtime.error_sink import ErrorRecord, write_error_records
from dataflow.runtime.stage import StepStats

__all__ = ["Counted", "SideOutputs", "balance_problems", "batch_key", "read_errors", "read_stats"]

CONSERVES, FANS_OUT, RESHAPES = "conserves", "fans_out", "reshapes"


def batch_key(sources) -> str:
    """A stable name for a batch: a hash of the sources it holds (an Arrow string column is hashed as its buffer, to the same key)."""
    h = hashlib.sha1()
    if _is_arrow_text(sources):
        for part in _nul_terminated(sources):
            h.update(part)
        return h.hexdigest()[:20]
    for s in sources:
        h.update(str(s).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:20]


def _is_arrow_text(sources) -> bool:
    import pyarrow as pa

    return isinstance(sources, (pa.Array, pa.ChunkedArray)) and (pa.types.is_string(sources.type) or pa.types.is_large_string(sources.type))


def _nul_terminated(sources) -> list:
    """Each value's UTF-8 bytes and a NUL, end to end (a null as ``None``, as ``str(None)``): the bytes the loop hashes, as buffers."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    values = pc.fill_null(sources, "None")
    joined = pc.binary_join_element_wise(values, pa.scalar("\0", values.type), pa.scalar("", values.type))
    parts = []
    for chunk in joined.chunks if isinstance(joined, pa.ChunkedArray) else [joined]:
        if len(chunk):
            offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64 if pa.types.is_large_string(chunk.type) else np.int32)
            start, end = int(offsets[chunk.offset]), int(offsets[chunk.offset + len(chunk)])
            parts.append(chunk.buffers()[2].slice(start, end - start))
    return parts


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


@dataclass(frozen=True)
class Counted:
    """A step as the balance check sees it.

    ``rule``: ``conserves`` (``rows_in == rows_out + dropped + errored``: maps, filters, dedups,
    the read), ``fans_out`` (a flat map: any number out, but no more errors than rows in) or
    ``reshapes`` (an aggregation or join: new rows, only its neighbours' counts are checked).
    """

    index: int
    name: str
    rule: str = CONSERVES


def _step_problem(step: Counted, st: StepStats) -> str | None:
    dropped = sum(st.drops.values())
    numbers = (st.rows_in, st.rows_out, st.rows_errored, dropped)
    if min(numbers) < 0:
        return f"{step.name}: a negative count (in {st.rows_in}, out {st.rows_out}, dropped {dropped}, errored {st.rows_errored})"
    if step.rule == CONSERVES and st.rows_in != st.rows_out + dropped + st.rows_errored:
        lost = st.rows_in - st.rows_out - dropped - st.rows_errored
        what = f"{lost} rows unaccounted for" if lost > 0 else f"{-lost} rows more than it was given"
        return f"{step.name}: {st.rows_in} rows in != {st.rows_out} out + {dropped} dropped + {st.rows_errored} errored ({what})"
    if step.rule == FANS_OUT and st.rows_errored > st.rows_in:
        return f"{step.name}: {st.rows_errored} rows errored of {st.rows_in} rows in"
    return None


def balance_problems(chains: list[list[Counted]], stats: dict[int, StepStats], rows_written: int) -> list[str]:
    """Where the run's counters (summed over shards and engines) do not add up; empty when they balance.

    ``chains[0]`` is the main chain, from the read (index -1) to the step whose rows the sink
    writes: each step must balance by its rule, each step must get the rows the one before passed
    on, and the sink must write the rows the last step passed on. Later chains are named sources
    (a join's right side), checked the same way but for the read and the sink. A step without
    counters (no batch reached it) is not compared with its neighbours.
    """
    problems = []
    for number, chain in enumerate(chains):
        for step in chain:
            problem = _step_problem(step, stats[step.index]) if step.index in stats else None
            if problem:
                problems.append(problem)
        for before, after in zip(chain, chain[1:]):
            a, b = stats.get(before.index), stats.get(after.index)
            if a is not None and b is not None and a.rows_out != b.rows_in:
                problems.append(f"{after.name}: {b.rows_in} rows in, but {before.name} passed on {a.rows_out}")
        last = stats.get(chain[-1].index) if number == 0 and chain else None
        if last is not None and last.rows_out != rows_written:
            problems.append(f"the sink wrote {rows_written} rows, but {chain[-1].name} passed on {last.rows_out}")
    return problems
