"""Plan rules for media steps."""
from __future__ import annotations

from dataclasses import replace

from dataflow.plan.nodes import FusedMap, LogicalPlan, Step

__all__ = ["DraftJpegDecodes"]

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
                params = step.op.params(**{**step.params.model_dump(), "draft_max_side": bound})
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
