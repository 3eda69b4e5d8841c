"""Plan rules, applied in one listed order: each is ``Rule.apply(plan) -> plan``."""
from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from dataflow.ops.declare import Modality, OpKind, Resources
from dataflow.plan.nodes import FusedMap, LogicalPlan, Step

__all__ = ["DEFAULT_RULES", "AssignEngines", "FuseAdjacentMaps", "Rule", "optimize"]

_TABULAR_SOURCES = {"csv", "jsonl", "parquet", "text"}
_ROW_WISE = {OpKind.MAP, OpKind.FILTER, OpKind.FLAT_MAP}


class Rule(Protocol):
    """A plan-to-plan rewrite."""

    def apply(self, plan: LogicalPlan) -> LogicalPlan: ...


class AssignEngines:
    """Give every node an engine: the pipeline's ``engine:``, or ray/spark by modality for auto."""

    def __init__(self, spark_available: bool = False):
        self.spark_available = spark_available

    def _choose(self, plan: LogicalPlan) -> tuple[str, str]:
        requested = plan.spec.engine
        if requested != "auto":
            return requested, f"engine: {requested} set in the pipeline"
        steps = [n for n in plan.nodes if isinstance(n, Step)]
        media = sorted({s.op.modality.value for s in steps if s.op.modality is not Modality.TABLE})
        if media:
            return "ray", f"auto: {', '.join(media)} steps run on Ray Data"
        if plan.spec.source.format not in _TABULAR_SOURCES:
            return "ray", f"auto: a '{plan.spec.source.format}' source is unstructured media, read by Ray Data"
        if self.spark_available:
            return "spark", f"auto: every step is a table op over a '{plan.spec.source.format}' source"
        return "ray", "auto: table steps, but the Spark engine is not installed; Ray Data runs them"

    def apply(self, plan: LogicalPlan) -> LogicalPlan:
        engine, reason = self._choose(plan)
        return replace(plan, nodes=tuple(replace(n, engine=engine) for n in plan.nodes), engine_reason=reason)


def _fusible(step: Step) -> bool:
    return step.op.kind in _ROW_WISE and not step.uses_gpu


def _merge(a: Resources, b: Resources) -> Resources | None:
    """Resources of a stage running both, or None when they disagree on pool shape."""
    for name in ("concurrency", "batch_size", "memory"):
        va, vb = getattr(a, name), getattr(b, name)
        if va is not None and vb is not None and va != vb:
            return None
    cpus = [c for c in (a.num_cpus, b.num_cpus) if c is not None]
    return Resources(
        num_cpus=max(cpus) if cpus else None,
        concurrency=a.concurrency if a.concurrency is not None else b.concurrency,
        batch_size=a.batch_size if a.batch_size is not None else b.batch_size,
        memory=a.memory if a.memory is not None else b.memory,
    )


class FuseAdjacentMaps:
    """Fuse adjacent row-wise CPU steps on one engine into a FusedMap; every step ends in a stage."""

    def apply(self, plan: LogicalPlan) -> LogicalPlan:
        out: list = []
        for node in plan.nodes:
            if not isinstance(node, Step) or node.op.kind is OpKind.GLOBAL:
                out.append(node)
                continue
            prev = out[-1] if out else None
            if (
                isinstance(prev, FusedMap)
                and _fusible(node)
                and all(_fusible(s) for s in prev.steps)
                and prev.engine == node.engine
                and (merged := _merge(prev.resources, node.resources)) is not None
            ):
                out[-1] = replace(prev, steps=(*prev.steps, node), resources=merged)
            else:
                out.append(FusedMap(steps=(node,), resources=node.resources, engine=node.engine))
        return replace(plan, nodes=tuple(out))


DEFAULT_RULES: tuple[Rule, ...] = (AssignEngines(), FuseAdjacentMaps())


def optimize(plan: LogicalPlan, rules: tuple[Rule, ...] = DEFAULT_RULES) -> LogicalPlan:
    """Apply ``rules`` in order."""
    for rule in rules:
        plan = rule.apply(plan)
    return plan
