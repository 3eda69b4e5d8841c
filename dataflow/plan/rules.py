"""Plan rules, applied in one listed order: each is ``Rule.apply(plan) -> plan``."""
from __future__ import annotations

from dataclasses import replace
from collections.abc import Mapping
from typing import Callable, Protocol

from dataflow.errors import EngineCapabilityError, SpecIssue
from dataflow.ops.declare import Modality, OpKind, OpSpec, Resources
from dataflow.plan.nodes import FusedMap, Handoff, LogicalPlan, Step
from dataflow.plan.rules_media import DraftJpegDecodes, LeaveOutConsumedInputs

__all__ = ["DEFAULT_RULES", "AssignEngines", "Caps", "FuseAdjacentMaps", "InsertHandoffs", "Rule", "optimize"]

_ROW_WISE = {OpKind.MAP, OpKind.FILTER, OpKind.FLAT_MAP}
_ENGINE_ORDER = ("ray", "spark")



class Caps(Protocol):
    """What the planner reads of an engine's declared capabilities (``dataflow.engines.base.EngineCaps``)."""

    name: str

    def runs(self, op: OpSpec) -> bool: ...

    def reads(self, source_format: str) -> bool: ...


class Rule(Protocol):
    """A plan-to-plan rewrite."""

    def apply(self, plan: LogicalPlan) -> LogicalPlan: ...


class AssignEngines:
    """Give every node an engine: the stage's or pipeline's ``engine:``, or ray/spark by what the steps do.

    ``auto`` picks Spark when every step is a table op that Spark lowers and Spark reads the input
    (tabular or line-based), and Ray otherwise (media steps, media sources, or an op only Ray runs).
    A step the chosen engine cannot run is an error naming the step and the engines that can (every
    such step, in one error), as is a source it cannot read or an engine that is not there.

    Args:
        engines: name -> capabilities of the engines the plan may use (``EngineCaps``).
    """

    def __init__(self, engines: Mapping[str, Caps]):
        self.engines = dict(engines)

    def _lacking(self, engine: str, steps: list[Step]) -> list[Step]:
        caps = self.engines.get(engine)
        return [s for s in steps if caps is not None and not caps.runs(s.op)]

    def _choose(self, requested: str, steps: list[Step], source_format: str, forced_by: str) -> tuple[str, str]:
        if requested != "auto":
            return requested, f"engine: {requested} set {forced_by}"
        media = sorted({s.op.modality.value for s in steps if s.op.modality is not Modality.TABLE})
        if media:
            return "ray", f"auto: {', '.join(media)} steps run on Ray Data"
        if "spark" not in self.engines:
            return "ray", "auto: table steps, but the Spark engine is not installed; Ray Data runs them"
        if not self.engines["spark"].reads(source_format):
            return "ray", f"auto: a '{source_format}' source is unstructured media, read by Ray Data"
        lacking = self._lacking("spark", steps)
        if lacking:
            return "ray", f"auto: table steps, but Spark has no lowering for {', '.join(sorted({s.op.name for s in lacking}))}; Ray Data runs them"
        return "spark", f"auto: every step is a table op over a '{source_format}' source, which Spark runs natively"

    def _check(self, engine: str, steps: list[Step], reason: str, source_format: str | None = None) -> list[SpecIssue]:
        """One issue per step ``engine`` cannot run, naming the engines that can; one for a source it cannot read."""
        if engine not in self.engines:
            have = ", ".join(e for e in _ENGINE_ORDER if e in self.engines)
            return [SpecIssue(key="engine", message=f"engine '{engine}' is not installed here ({reason}); installed: {have or 'none'}",
                              hint="install it, or set engine: to an installed one")]
        issues = []
        if source_format is not None and not self.engines[engine].reads(source_format):
            have = [e for e in _ENGINE_ORDER if e != engine and e in self.engines and self.engines[e].reads(source_format)]
            issues.append(SpecIssue(
                key="source.format",
                message=f"engine '{engine}' cannot read a '{source_format}' source ({reason}); engines that can: {', '.join(have) or 'none'}",
                hint="set engine: to one of those",
            ))
        for s in self._lacking(engine, steps):
            have = [e for e in _ENGINE_ORDER if e != engine and e in self.engines and not self._lacking(e, [s])]
            issues.append(SpecIssue(
                key=s.path,
                message=f"engine '{engine}' cannot run {s.op.name} ({reason}); engines that can: {', '.join(have) or 'none'}",
                hint="set engine: to one of those, or run the step in a stage of its own",
            ))
        return issues

    def _groups(self, plan: LogicalPlan) -> list[tuple[str, list[Step]]]:
        """The main chain's steps by stage (one group without stages)."""
        groups: list[tuple[str, list[Step]]] = []
        for node in plan.nodes:
            if isinstance(node, Step):
                name = node.stage or ""
                if not groups or groups[-1][0] != name:
                    groups.append((name, []))
                groups[-1][1].append(node)
        return groups or [("", [])]

    def apply(self, plan: LogicalPlan) -> LogicalPlan:
        spec = plan.spec
        stage_engines = {s.name: s.engine for s in spec.stages}
        engine_of: dict[int, str] = {}
        reasons, issues = [], []
        source_format = spec.source.format
        for name, steps in self._groups(plan):
            requested = stage_engines.get(name, "auto")
            forced_by = f"on stage '{name}'"
            if requested == "auto":
                requested, forced_by = spec.engine, "in the pipeline"
            engine, reason = self._choose(requested, steps, source_format, forced_by)
            issues += self._check(engine, steps, reason, source_format)
            engine_of.update({id(s): engine for s in steps})
            reasons.append((name, engine, reason))
            source_format = "parquet"  # the next stage reads the handoff
        first = reasons[0][1]
        nodes, current = [], first
        for node in plan.nodes:
            current = engine_of.get(id(node), current)
            nodes.append(replace(node, engine=current))
        inputs = []
        for side in plan.inputs:
            engine = _consumer_engine(nodes, side.name, first)
            issues += self._check(engine, [n for n in side.nodes if isinstance(n, Step)], f"source '{side.name}' is read by a step on {engine}", side.nodes[0].source.format)
            inputs.append(replace(side, nodes=tuple(replace(n, engine=engine) for n in side.nodes)))
        if issues:
            raise EngineCapabilityError(first, issues=issues)
        if len(reasons) == 1:
            text = reasons[0][2]
        else:
            text = "; ".join(f"stage '{n}' on {e} ({r})" for n, e, r in reasons)
        return replace(plan, nodes=tuple(nodes), engine_reason=text, inputs=tuple(inputs))


def _consumer_engine(nodes: list, name: str, default: str) -> str:
    from dataflow.plan.build import source_refs

    return next((n.engine for n in nodes if isinstance(n, Step) and name in source_refs(n)), default)


def _fusible(step: Step) -> bool:
    return step.op.kind in _ROW_WISE and not step.uses_gpu


def _pick(choose: Callable, *values):
    given = [v for v in values if v is not None]
    return choose(given) if given else None


def _merge(a: Resources, b: Resources, actors: bool) -> Resources | None:
    """Resources of one stage running both steps, or None when they ask for different actor pools.

    The fused batch function needs the larger CPU and memory request and the smaller batch (so a
    step asking for small batches of large rows gets them); task stages take the tighter
    concurrency cap. Two different ``concurrency`` values of an actor pool are not mergeable.
    """
    if actors and None not in (a.concurrency, b.concurrency) and a.concurrency != b.concurrency:
        return None
    return Resources(
        num_cpus=_pick(max, a.num_cpus, b.num_cpus),
        concurrency=_pick(min, a.concurrency, b.concurrency),
        batch_size=_pick(min, a.batch_size, b.batch_size),
        memory=_pick(max, a.memory, b.memory),
    )


def _fuse(nodes) -> tuple:
    out: list = []
    for node in nodes:
        if not isinstance(node, Step) or node.op.kind is OpKind.GLOBAL:
            out.append(node)
            continue
        prev = out[-1] if out else None
        if (
            isinstance(prev, FusedMap)
            and _fusible(node)
            and all(_fusible(s) for s in prev.steps)
            and prev.engine == node.engine
            and (merged := _merge(prev.resources, node.resources, prev.stateful or node.op.stateful)) is not None
        ):
            out[-1] = replace(prev, steps=(*prev.steps, node), resources=merged)
        else:
            out.append(FusedMap(steps=(node,), resources=node.resources, engine=node.engine))
    return tuple(out)


class FuseAdjacentMaps:
    """Fuse adjacent row-wise CPU steps on one engine into a FusedMap; every step ends in a stage.

    Decoded pixels cross a stage boundary only into or out of a GPU step: differing batch sizes
    still fuse (the smallest wins); GPU steps, global steps and actor pools of different sizes
    stay apart.
    """

    def apply(self, plan: LogicalPlan) -> LogicalPlan:
        inputs = tuple(replace(side, nodes=_fuse(side.nodes)) for side in plan.inputs)
        return replace(plan, nodes=_fuse(plan.nodes), inputs=inputs)


class InsertHandoffs:
    """Where consecutive nodes run on different engines, insert a visible Handoff between them."""

    def apply(self, plan: LogicalPlan) -> LogicalPlan:
        out: list = []
        for node in plan.nodes:
            prev = out[-1] if out else None
            if prev is not None and not isinstance(prev, Handoff) and prev.engine != node.engine:
                number = sum(isinstance(n, Handoff) for n in out) + 1
                out.append(Handoff(number=number, from_engine=prev.engine, to_engine=node.engine, engine=prev.engine))
            out.append(node)
        return replace(plan, nodes=tuple(out))


# The rules after engine assignment, which needs the engines' capabilities (``plan_pipeline`` puts it first).
DEFAULT_RULES: tuple[Rule, ...] = (FuseAdjacentMaps(), InsertHandoffs(), DraftJpegDecodes(), LeaveOutConsumedInputs())


def optimize(plan: LogicalPlan, rules: tuple[Rule, ...] = DEFAULT_RULES) -> LogicalPlan:
    """Apply ``rules`` in order."""
    for rule in rules:
        plan = rule.apply(plan)
    return plan
