"""Text rendering of plans for ``dataflow explain``."""
from __future__ import annotations

from dataflow.plan.nodes import FusedMap, Handoff, LogicalPlan, Read, Step, Write

__all__ = ["render_logical", "render_optimized"]


def _params(step: Step) -> str:
    values = step.params.model_dump()
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def _resources(res) -> str:
    d = res.as_dict()
    return " ".join(f"{k}={v}" for k, v in d.items()) or "defaults"


def _describe(node, engine: bool) -> list[str]:
    tag = f"  [engine={node.engine}]" if engine and node.engine else ""
    if isinstance(node, Read) and node.source.in_memory:
        return [f"Read[memory] name={node.source.in_memory} held by this process at {node.source.uri}{tag}",
                "    in memory: not resumable (a new process does not have these rows) and not renderable for Kubernetes"]
    if isinstance(node, Read):
        opts = f" options={node.source.options}" if node.source.options else ""
        return [f"{node.label} uri={node.source.uri}{opts}{tag}"]
    if isinstance(node, Write):
        s = node.sink
        lines = [f"{node.label} uri={s.uri} mode={s.mode}{tag}"]
        if node.columns is not None:
            lines.append(f"    writes columns: {', '.join(node.columns)}")
        if node.leaves_out:
            lines.append(f"    leaves out: {', '.join(node.leaves_out)} (consumed by a decode; sink.keep writes it)")
        return lines
    if isinstance(node, Handoff):
        return [f"{node.label} parquet in <sink>/_tmp/<run_id>/<shard>/handoff-{node.number}/ (removed after commit)"]
    if isinstance(node, FusedMap):
        lines = [f"{node.label}  resources: {_resources(node.resources)}{tag}"]
        lines += [f"    {s.path} {s.op.kind.value} {s.op.name}({_params(s)})" for s in node.steps]
        return lines
    stage = f"  (stage {node.stage})" if node.stage else ""
    return [f"{node.path} {type(node).__name__}[{node.op.name}]({_params(node)})  resources: {_resources(node.resources)}{tag}{stage}"]


def _chain(nodes, engine: bool, indent: str = "") -> list[str]:
    lines = []
    for depth, node in enumerate(nodes):
        arrow = "" if depth == 0 else "-> "
        first, *rest = _describe(node, engine)
        lines.append(indent + arrow + first)
        lines += [indent + line for line in rest]
    return lines


def _render(plan: LogicalPlan, engine: bool) -> str:
    lines = _chain(plan.nodes, engine)
    for side in plan.inputs:
        lines.append(f"source '{side.name}' (read by name):")
        lines += _chain(side.nodes, engine, indent="    ")
    return "\n".join(lines)


def render_logical(plan: LogicalPlan) -> str:
    """The ``== Logical plan ==`` section."""
    return "== Logical plan ==\n" + _render(plan, engine=False)


def render_optimized(plan: LogicalPlan) -> str:
    """The ``== Optimized plan (engine per step) ==`` section, with the engine choice and why."""
    head = "== Optimized plan (engine per step) ==\n"
    engines = plan.engine or " -> ".join(plan.engines)
    reason = f"\nengine: {engines} ({plan.engine_reason})" if plan.engine_reason else ""
    return head + _render(plan, engine=True) + reason
