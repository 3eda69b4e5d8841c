"""``Pipeline.preview()``: run the steps on the first few inputs in this process and say what happened.

No cluster is started: the first ``n`` inputs are read with the connectors, then each step of the
optimized plan runs through the same ``StageExecutor`` the engines use, one step at a time, so
every input row ends as kept, dropped by a named step (with the filter's reason) or errored (with
the op's message).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dataflow.columns import SOURCE
from dataflow.batch import Columns, from_arrow, from_rows, length, take, to_rows
from dataflow.lineage import ROW

__all__ = ["Outcome", "PreviewRows", "preview_pipeline", "read_first"]

MEDIA_FORMATS = ("image", "audio", "binary")
LINE_FORMATS = ("csv", "jsonl", "text")


@dataclass(frozen=True)
class Outcome:
    """What happened to one input row.

    Attributes:
        source: The row's ``__source__``.
        status: ``kept``, ``dropped`` or ``errored``.
        step: ``"<index>: <op>"`` of the step that dropped or refused it (None when kept).
        reason: The filter's drop reason or the row error's message.
        row: The row as that step received it (the output row when kept).
    """

    source: str
    status: str
    step: str | None = None
    reason: str | None = None
    row: dict[str, Any] | None = None

    def describe(self) -> str:
        if self.status == "kept":
            return "kept"
        return f"{self.status} by {self.step}" + (f": {self.reason}" if self.reason else "")


class PreviewRows(Sequence):
    """The kept output rows of a preview (a sequence of dicts), plus every input row's outcome.

    In a notebook it displays one line per input row: its outcome, then its columns with images
    as thumbnails, audio as players and long text truncated.
    """

    def __init__(self, rows: list[dict[str, Any]], outcomes: list[Outcome]):
        self.rows, self.outcomes = rows, outcomes

    def __getitem__(self, i):
        return self.rows[i]

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def dropped(self) -> list[Outcome]:
        """Outcomes of the rows a filter dropped or an op refused."""
        return [o for o in self.outcomes if o.status != "kept"]

    def __repr__(self) -> str:
        lines = [f"PreviewRows({len(self.rows)} kept of {len(self.outcomes)} inputs)"]
        lines += [f"  {o.source}: {o.describe()}" for o in self.outcomes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from html import escape

        from dataflow.report.notebook import rows_html

        css = {"kept": "kept", "dropped": "drop", "errored": "err"}
        status = [f"<span class='{css[o.status]}'>{escape(o.describe())}</span>" for o in self.outcomes]
        head = f"<p><b>preview</b>: {len(self.rows)} kept, {sum(o.status == 'dropped' for o in self.outcomes)} dropped, {sum(o.status == 'errored' for o in self.outcomes)} errored of {len(self.outcomes)} inputs</p>"
        return head + rows_html([o.row or {SOURCE: o.source} for o in self.outcomes], status)


def read_first(spec, n: int) -> tuple[Columns, list[Outcome]]:
    """Read the source's first ``n`` rows as the engines would (with ``__source__``), plus unreadable ones.

    Returns:
        The rows, and the outcomes of records the reader refused (bad lines).
    """
    from connectors.formats import BadRecord
    from connectors.registry import filesystem, line_reader, list_files, open_lines, parquet_footers, read_parquet_part, strip_scheme, unreadable_parquet

    source, storage = spec.source, spec.storage.options
    if source.in_memory:  # rows this process holds (dataflow.memory), no files
        from dataflow.runtime.held import first_rows

        return from_arrow(first_rows(source.uri, source.in_memory, n)), []
    files = list_files(source.uri, source.format, source.options, storage)
    fs = filesystem(source.uri, storage)
    if source.format in MEDIA_FORMATS:
        chosen = files[:n]
        data = np.empty(len(chosen), dtype=object)
        for i, f in enumerate(chosen):
            data[i] = fs.cat_file(strip_scheme(f))
        return {"bytes": data, SOURCE: np.array(chosen, dtype=object)}, []
    rows: list[dict[str, Any]] = []
    bad: list[Outcome] = []
    for f in files:
        if source.format == "parquet":
            (parts,) = parquet_footers([f], storage)
            if not isinstance(parts, list):
                bad.append(Outcome(f, "errored", "read", unreadable_parquet(f, parts).reason))
                parts = []
            for group, first, _ in parts:
                part = to_rows(from_arrow(read_parquet_part(f, group, storage, source.options.get("columns"))))
                rows += [{SOURCE: f"{f}{ROW}{first + i}", **{k: v for k, v in r.items() if k != SOURCE}} for i, r in enumerate(part[: n - len(rows)])]
                if len(rows) >= n:
                    break
        else:
            with open_lines(f, storage) as lines:
                for rec in line_reader(source.format)(f, lines, source.options):
                    if isinstance(rec, BadRecord):
                        bad.append(Outcome(rec.source, "errored", "read", rec.reason))
                    else:
                        rows.append(rec)
                    if len(rows) + len(bad) >= n:
                        break
        if len(rows) + len(bad) >= n:
            break
    return (from_rows(rows, [SOURCE]) if rows else {SOURCE: np.array([], dtype=object)}), bad


def _plan_steps(spec):
    from dataflow.errors import PlanError
    from dataflow.engines.registry import engine_caps
    from dataflow.plan.planner import plan_pipeline

    _, optimized = plan_pipeline(spec, engine_caps())
    if optimized.inputs:
        names = ", ".join(i.name for i in optimized.inputs)
        raise PlanError(f"preview: steps read the named source(s) {names}, which preview does not load (use Pipeline.take() instead)")
    return optimized.steps()


def _drop_reason(executor, cols: Columns, i: int, drops, op: str) -> str | None:
    """The reason a filter gave for dropping row ``i``: the one reason counted, else rerun it alone.

    A filter that gives no reasons counts its drops under its op name: then there is none.
    """
    reasons = [r for r, c in drops.items() if c and r != op]
    if len(reasons) > 1:
        _, _, stats = executor(take(cols, np.array([i])))
        reasons = [r for st in stats.values() for r, c in st.drops.items() if c and r != op] or reasons
    return reasons[0] if reasons else None


def preview_pipeline(spec, n: int = 8) -> PreviewRows:
    """Run the pipeline's steps on its first ``n`` input rows in this process.

    Raises:
        PipelineSpecError, PlanError: the pipeline is not valid (nothing runs).
        ConnectorError: the source cannot be listed or read.
    """
    from dataflow.runtime.stage import StageExecutor, StepCall

    steps = _plan_steps(spec)
    cols, outcomes = read_first(spec, n)
    inputs = [str(s) for s in cols[SOURCE]]
    done: dict[str, Outcome] = {}
    for step in steps:
        if not length(cols):
            break
        executor = StageExecutor([StepCall(index=step.index, op=step.op, params=step.params)])
        out, errors, stats = executor(cols)
        refused = {e.source: e for e in errors}
        kept = set(out.get(SOURCE, ())) if length(out) else set()
        label = f"{step.index}: {step.op.name}"
        for i, row in enumerate(to_rows(cols)):
            src = str(row[SOURCE])
            if src in kept or src in done:
                continue
            if src in refused:
                done[src] = Outcome(src, "errored", label, refused[src].reason, row)
            else:
                done[src] = Outcome(src, "dropped", label, _drop_reason(executor, cols, i, stats[step.index].drops, step.op.name), row)
        cols = out
    rows = to_rows(cols) if length(cols) else []
    first_kept: dict[str, dict[str, Any]] = {}
    for r in rows:
        first_kept.setdefault(str(r[SOURCE]), r)
    order = list(dict.fromkeys([*inputs, *(o.source for o in outcomes), *first_kept]))
    final = {o.source: o for o in outcomes} | done | {s: Outcome(s, "kept", row=r) for s, r in first_kept.items()}
    return PreviewRows(rows, [final[s] for s in order])
