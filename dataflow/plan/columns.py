"""Which columns the rest of a chain of steps reads: what an engine may leave out of what it keeps."""
from __future__ import annotations

from dataflow.columns import SOURCE
from dataflow.plan.nodes import Step
from dataflow.plan.validate import param_reads

__all__ = ["named_by", "needed_after", "needed_by"]

_PROBE = "\0any other column"


def _needed_before(step: Step, needed: frozenset[str] | None) -> frozenset[str] | None:
    """The columns ``step``'s input must hold for it and the steps after it (None: every column)."""
    if step.op.name == "table.dedup" and not step.params.keys:
        return None  # no keys: a row's every column is its key
    reads = param_reads(step.params)[0] | frozenset(step.op.columns(step.params)[0]) | {SOURCE}
    after = step.op.output_columns(frozenset({_PROBE}), step.params) if step.op.output_columns else None
    if after is not None and _PROBE not in after:
        # The step keeps only the columns it names (select, aggregations); those it passes on may come from its input.
        return reads | after
    return None if needed is None else needed | reads


def needed_after(steps: list[Step], end: frozenset[str] | None = None) -> list[frozenset[str] | None]:
    """For each step, the columns of its output that the later steps or the sink read (None: every column).

    The sink writes every column that reaches it (``end``: only those, e.g. a checkpoint the rest
    of the run reads back), so columns fall out only at a step that keeps just the columns it
    names. Over-approximates: a column listed may still go unused.
    """
    out: list[frozenset[str] | None] = []
    needed: frozenset[str] | None = end
    for step in reversed(steps):
        out.append(needed)
        needed = _needed_before(step, needed)
    return out[::-1]


def needed_by(steps: list[Step], end: frozenset[str] | None = None) -> frozenset[str] | None:
    """The columns the first of ``steps`` must be given for them and the sink (``end``: the sink reads only those; None: every column)."""
    return _needed_before(steps[0], needed_after(steps, end)[0]) if steps else end


def named_by(steps: list[Step]) -> frozenset[str]:
    """Every column the steps' params or declared inputs name (some may be made by an earlier step)."""
    return frozenset().union(*(param_reads(s.params)[0] | frozenset(s.op.columns(s.params)[0]) for s in steps)) - {SOURCE}
