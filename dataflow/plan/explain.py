"""Text rendering of plans for ``dataflow explain``."""
from __future__ import annotations

from dataflow.plan.nodes import FusedMap, LogicalPlan, Read, Step, Write

__all__ = ["render_logical", "render_optimized"]


def _params(step: Step) -> str:
    values = step.params.model_dump()
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def _resources(res) -> str:
    d = res.as_dict()
    return " ".join(f"{k}={v}" for k, v in d.items()) or "defaults"


def _describe(node, engine: bool) -> list[str]:
    tag = f"  [engine={node.engine}]" if engine and node.engine else ""
    if isinstance(node, Read):
        opts = f" options={node.source.options}" if node.source.options else ""
        return [f"{node.label} uri={node.source.uri}{opts}{tag}"]
    if isinstance(node, Write):
        s = node.sink
        return [f"{node.label} uri={s.uri} mode={s.mode}{tag}"]
    if isinstance(node, FusedMap):
        lines = [f"{node.label}  resources: {_resources(node.resources)}{tag}"]
        lines += [f"    steps[{s.index}] {s.op.kind.value} {s.op.name}({_params(s)})" for s in node.steps]
        return lines
    return [f"steps[{node.index}] {type(node).__name__}[{node.op.name}]({_params(node)})  resources: {_resources(node.resources)}{tag}"]


def _render(plan: LogicalPlan, engine: bool) -> str:
    lines = []
    for depth, node in enumerate(plan.nodes):
        arrow = "" if depth == 0 else "-> "
        first, *rest = _describe(node, engine)
        lines.append(arrow + first)
        lines += rest
    return "\n".join(lines)


def render_logical(plan: LogicalPlan) -> str:
    """The ``== Logical plan ==`` section."""
    return "== Logical plan ==\n" + _render(plan, engine=False)


def render_optimized(plan: LogicalPlan) -> str:
    """The ``== Optimized plan (engine per step) ==`` section, with the engine choice and why."""
    head = "== Optimized plan (engine per step) ==\n"
    reason = f"\nengine: {plan.engine} ({plan.engine_reason})" if plan.engine_reason else ""
    return head + _render(plan, engine=True) + reason
