"""Plan rules for media steps."""
from __future__ import annotations

from dataclasses import replace

from dataflow.columns import SOURCE
from dataflow.plan.nodes import FusedMap, LogicalPlan, Read, Step, Write, source_columns

__all__ = ["DraftJpegDecodes", "LeaveOutConsumedInputs"]

_DECODE, _RESIZE = "image.decode", "image.resize"
_SHAPE_COLUMNS = ("width", "height")


def _draft_for(decode: Step, later: list[Step]) -> int | None:
    """The resize bound a decode may draft to: the next step touching its pixels is a max_side resize."""
    params = decode.params
    if not params.auto_draft or params.draft_max_side is not None:
        return None
    touched = {params.output, *_SHAPE_COLUMNS}
    for step in later:
        if step.op.name == _RESIZE and step.params.column == params.output:
            p = step.params
            return p.max_side if p.size is None and p.max_side else None
        inputs, outputs = step.op.columns(step.params)
        if touched & (set(inputs) | set(outputs)):
            return None
    return None


class DraftJpegDecodes:
    """Let ``image.decode`` decode JPEGs at a reduced DCT scale when an ``image.resize`` follows.

    Pillow's ``draft`` makes libjpeg decode at 1/2, 1/4 or 1/8 scale, skipping most of the IDCT
    work; the image is still at least as large as the resize target, so the resize gives the same
    size. Applies only when no step in between reads or writes the pixels or their size (a blur
    or size filter must see the full image), and never when the decode sets ``draft_max_side`` or
    ``auto_draft: false`` itself. Works before or after ``FuseAdjacentMaps``.
    """

    def apply(self, plan: LogicalPlan) -> LogicalPlan:
        steps = plan.steps()
        changed: dict[int, Step] = {}
        for i, step in enumerate(steps):
            if step.op.name != _DECODE:
                continue
            bound = _draft_for(step, steps[i + 1 :])
            if bound:
                params = step.params.model_copy(update={"draft_max_side": bound})  # a planned value: no second validation
                changed[step.index] = replace(step, params=params)
        if not changed:
            return plan

        def swap(node):
            if isinstance(node, FusedMap):
                return replace(node, steps=tuple(changed.get(s.index, s) for s in node.steps))
            if isinstance(node, Step):
                return changed.get(node.index, node)
            return node

        return replace(plan, nodes=tuple(swap(n) for n in plan.nodes))


def _touches(step: Step, column: str) -> bool:
    from dataflow.plan.validate import param_reads  # validate imports the rules

    inputs, outputs = step.op.columns(step.params)
    return column in inputs or column in outputs or column in param_reads(step.params)[0]


def consumed_left_out(steps: list[Step], sink) -> tuple[str, ...]:
    """The consumed input columns (``@op(consumes=...)``) the sink need not write.

    A column a step consumed (a decode's encoded bytes) is left out unless a later step reads or
    writes it, ``sink.keep`` names it, or the sink's format writes it as the file itself
    (``files`` / ``webdataset``: their ``column`` option, default ``bytes``).
    """
    member = sink.options.get("column", "bytes") if sink.format in ("files", "webdataset") else None
    out: list[str] = []
    for i, step in enumerate(steps):
        for column in step.op.consumed(step.params):
            if column in step.op.columns(step.params)[1] or column in sink.keep or column == member or column in out:
                continue
            if not any(_touches(later, column) for later in steps[i + 1 :]):
                out.append(column)
    return tuple(out)


def _reaching(plan: LogicalPlan, steps: list[Step]) -> frozenset[str] | None:
    """The columns that reach the sink, when the source's are known (media, text), else None."""
    read = next((n for n in plan.nodes if isinstance(n, Read)), None)
    columns = source_columns(read.source) if read else None
    for step in steps:
        if columns is None:
            return None
        columns = step.op.output_columns(columns, step.params) if step.op.output_columns else columns | set(step.op.columns(step.params)[1])
    return columns


class LeaveOutConsumedInputs:
    """Do not write what a step consumed: a decode's raw bytes stay out of the sink by default.

    The column still flows to every later step (it is left out at the write only), so no step
    sees different data; lineage (``__source__``) is kept. ``sink.keep`` writes it after all.
    The Write node records what it leaves out, and the columns it writes when they are known
    before the data is read, for ``dataflow explain``.
    """

    def apply(self, plan: LogicalPlan) -> LogicalPlan:
        steps = plan.steps()
        sink = plan.spec.sink
        left_out = consumed_left_out(steps, sink)
        reaching = _reaching(plan, steps)
        written = None if reaching is None else tuple(sorted(c for c in reaching if c not in left_out and (sink.lineage or c != SOURCE)))
        nodes = tuple(replace(n, leaves_out=left_out, columns=written) if isinstance(n, Write) else n for n in plan.nodes)
        return replace(plan, nodes=nodes)
