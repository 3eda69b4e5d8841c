"""PipelineSpec -> LogicalPlan."""
from __future__ import annotations

from dataflow.dsl.spec import PipelineSpec, ResourcesSpec
from dataflow.ops.declare import OpKind, Resources
from dataflow.ops.registry import get_op
from dataflow.plan.nodes import Filter, FlatMap, LogicalPlan, Map, Read, Shuffle, Write

__all__ = ["build_plan"]

_NODE_FOR_KIND = {OpKind.MAP: Map, OpKind.FILTER: Filter, OpKind.FLAT_MAP: FlatMap, OpKind.GLOBAL: Shuffle}


def _resources(spec: ResourcesSpec | None) -> Resources | None:
    return Resources(**spec.model_dump(exclude_none=True)) if spec else None


def build_plan(spec: PipelineSpec) -> LogicalPlan:
    """Build the logical plan of a validated spec (one node per step, in order)."""
    nodes: list = [Read(source=spec.source)]
    for i, step in enumerate(spec.steps):
        op = get_op(step.op)
        resources = op.resources.merged(_resources(step.resources))
        nodes.append(_NODE_FOR_KIND[op.kind](index=i, op=op, params=op.params(**step.params), resources=resources, ref=step.op))
    nodes.append(Write(sink=spec.sink))
    return LogicalPlan(spec=spec, nodes=tuple(nodes))
