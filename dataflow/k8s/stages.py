"""Split an optimized plan into stages, one per Kubernetes job: a maximal run of nodes on one engine."""
from __future__ import annotations

import math
from dataclasses import dataclass

from dataflow.k8s.naming import dns_name
from dataflow.ops.declare import Resources
from dataflow.plan.nodes import FusedMap, Handoff, LogicalPlan, Node, Read, Step, Write, steps_of

__all__ = ["ComputeNeed", "Stage", "plan_stages"]


@dataclass(frozen=True)
class ComputeNeed:
    """What one compute node of a stage asks of its workers (Ray's defaults filled in)."""

    num_cpus: float
    num_gpus: float
    memory: int | None
    concurrency: int | None

    @classmethod
    def of(cls, resources: Resources) -> ComputeNeed:
        """Return the need of a node with these resources (a task without ``num_cpus`` takes one CPU)."""
        return cls(
            num_cpus=1.0 if resources.num_cpus is None else float(resources.num_cpus),
            num_gpus=float(resources.num_gpus or 0),
            memory=resources.memory,
            concurrency=resources.concurrency,
        )

    @property
    def uses_gpu(self) -> bool:
        return self.num_gpus > 0

    def total(self, per_worker: float) -> float:
        """Return ``per_worker`` times the declared concurrency (0 when none is declared)."""
        return per_worker * self.concurrency if self.concurrency else 0.0

    def whole_cpus(self) -> int:
        """Return the CPUs of one task rounded up to a whole core (at least one)."""
        return max(1, math.ceil(self.num_cpus))


@dataclass(frozen=True)
class Stage:
    """The nodes one Kubernetes job runs, and the handoffs around them."""

    index: int
    count: int
    engine: str
    nodes: tuple[Node, ...]
    spec_name: str = ""  # the name under the pipeline's stages:, when it has them
    side_nodes: tuple[Node, ...] = ()  # steps of named sources (sources:) this stage's engine prepares

    @property
    def name(self) -> str:
        """Suffix of the stage's object names: empty for a one-stage pipeline."""
        if self.count == 1:
            return ""
        return dns_name(self.spec_name) if self.spec_name else f"s{self.index}-{self.engine}"

    @property
    def selector(self) -> str:
        """What ``dataflow run --stage`` takes to run only this stage: its name, else its position."""
        return self.spec_name or str(self.index)

    @property
    def needs(self) -> tuple[ComputeNeed, ...]:
        return tuple(
            ComputeNeed.of(n.resources) for n in (*self.nodes, *self.side_nodes) if isinstance(n, (FusedMap, Step))
        )

    @property
    def reads(self) -> str:
        first = self.nodes[0]
        return first.source.uri if isinstance(first, Read) else ""

    @property
    def writes(self) -> str:
        last = self.nodes[-1]
        if isinstance(last, Handoff):
            return f"{last.label}: Parquet under the sink's _tmp/<run_id>/"
        return last.sink.uri if isinstance(last, Write) else ""


def _stage_name(nodes: list[Node]) -> str:
    return next((step.stage for step in steps_of(nodes) if step.stage), "")


def plan_stages(plan: LogicalPlan) -> tuple[Stage, ...]:
    """Group the optimized plan's nodes into stages of one engine each, in order.

    A ``Handoff`` node carries the engine of the stage that writes it, so it ends that stage. The
    steps of named sources are counted in the first stage on their engine, which prepares them.

    Raises:
        ValueError: a node has no engine (the plan was not optimized with AssignEngines).
    """
    groups: list[tuple[str, list[Node]]] = []
    for node in plan.nodes:
        if node.engine is None:
            raise ValueError(f"{node.label}: no engine assigned; optimize the plan with AssignEngines first")
        if groups and groups[-1][0] == node.engine:
            groups[-1][1].append(node)
        else:
            groups.append((node.engine, [node]))
    side = {engine: tuple(n for si in plan.inputs for n in si.nodes if n.engine == engine) for engine, _ in groups}
    first_of = {engine: next(i for i, (e, _) in enumerate(groups) if e == engine) for engine, _ in groups}
    return tuple(
        Stage(
            index=i, count=len(groups), engine=e, nodes=tuple(ns), spec_name=_stage_name(ns),
            side_nodes=side[e] if first_of[e] == i else (),
        )
        for i, (e, ns) in enumerate(groups)
    )
