"""PipelineSpec -> LogicalPlan."""
from __future__ import annotations

from dataflow.dsl.spec import PipelineSpec, ResourcesSpec, StepSpec
from dataflow.dsl.yaml_io import format_path
from dataflow.ops.declare import OpKind, Resources
from dataflow.ops.registry import get_op
from dataflow.plan.nodes import Filter, FlatMap, LogicalPlan, Map, Read, Shuffle, SideInput, Step, Write

__all__ = ["build_plan", "source_refs"]

_NODE_FOR_KIND = {OpKind.MAP: Map, OpKind.FILTER: Filter, OpKind.FLAT_MAP: FlatMap, OpKind.GLOBAL: Shuffle}


def _resources(spec: ResourcesSpec | None) -> Resources | None:
    return Resources(**spec.model_dump(exclude_none=True)) if spec else None


def _step(index: int, path: tuple, step: StepSpec, stage: str | None) -> Step:
    op = get_op(step.op)
    resources = op.resources.merged(_resources(step.resources))
    node = _NODE_FOR_KIND[op.kind]
    return node(index=index, op=op, params=step.params_of(op), resources=resources, ref=step.op, where=format_path(path), stage=stage)


def source_refs(step: Step) -> list[str]:
    """The named sources a step's params refer to (params typed ``SourceName``)."""
    from dataflow.ops.table.types import SourceName

    fields = type(step.params).model_fields
    return [getattr(step.params, n) for n, f in fields.items() if f.annotation is SourceName]


def build_plan(spec: PipelineSpec) -> LogicalPlan:
    """Build the logical plan of a validated spec (one node per step, in order).

    Named sources that a step refers to become side inputs, each a chain from its own Read.
    """
    main: list = [Read(source=spec.source)]
    side: dict[str, list] = {}
    for index, (path, step) in enumerate(spec.indexed_steps()):
        if path[0] == "sources":
            name = path[1]
            side.setdefault(name, [Read(source=spec.sources[name])]).append(_step(index, path, step, None))
            continue
        stage = spec.stages[path[1]].name if path[0] == "stages" else None
        main.append(_step(index, path, step, stage))
    main.append(Write(sink=spec.sink))
    used: list[str] = []
    chains = [main, *side.values()]
    for chain in chains:
        for node in chain:
            if isinstance(node, Step):
                used += [n for n in source_refs(node) if n not in used]
    inputs = tuple(SideInput(name=n, nodes=tuple(side.get(n, [Read(source=spec.sources[n])]))) for n in used)
    return LogicalPlan(spec=spec, nodes=tuple(main), inputs=inputs)
