"""Split a plan at its Handoff nodes into one plan per engine segment, and the job that runs them.

Segment k writes its rows as Parquet to a scratch folder; segment k+1 reads that folder. At plan
time the folders are placeholders; the runner binds them to the run's scratch area.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dataflow.dsl.spec import SinkSpec, SourceSpec
from dataflow.plan.build import source_refs
from dataflow.plan.nodes import Handoff, LogicalPlan, Read, Write, steps_of

__all__ = ["MixedJob", "handoff_placeholder", "split_at_handoffs"]


def handoff_placeholder(number: int) -> str:
    """The scratch folder of handoff ``number`` as ``explain`` shows it."""
    return f"<sink>/_tmp/<run_id>/<shard>/handoff-{number}"


def _segment(plan: LogicalPlan, nodes: list, read: Read, write: Write) -> LogicalPlan:
    names = {ref for s in steps_of(nodes) for ref in source_refs(s)}
    spec = plan.spec.model_copy(update={"source": read.source, "sink": write.sink})
    return replace(plan, spec=spec, nodes=(read, *nodes, write), inputs=tuple(i for i in plan.inputs if i.name in names))


def split_at_handoffs(plan: LogicalPlan) -> list[LogicalPlan]:
    """Return the plan's engine segments, each from a Read to a Write (handoffs become Parquet)."""
    segments: list[LogicalPlan] = []
    read = plan.nodes[0]
    body: list = []
    for node in plan.nodes[1:]:
        if isinstance(node, Handoff):
            engine = node.from_engine
            write = Write(sink=SinkSpec(uri=handoff_placeholder(node.number), format="parquet", mode="overwrite"), engine=engine)
            segments.append(_segment(plan, body, replace(read, engine=engine), write))
            # The rows keep the lineage of the original input across the handoff.
            read = Read(source=SourceSpec(uri=handoff_placeholder(node.number), format="parquet", options={"keep_lineage": True}), engine=node.to_engine)
            body = []
        elif isinstance(node, Write):
            segments.append(_segment(plan, body, read, node))
        else:
            body.append(node)
    return segments


def _bind(segment: LogicalPlan, read_uri: str | None, write_uri: str | None) -> LogicalPlan:
    nodes = list(segment.nodes)
    spec = segment.spec
    if read_uri is not None:
        nodes[0] = replace(nodes[0], source=nodes[0].source.model_copy(update={"uri": read_uri}))
        spec = spec.model_copy(update={"source": nodes[0].source})
    if write_uri is not None:
        nodes[-1] = replace(nodes[-1], sink=nodes[-1].sink.model_copy(update={"uri": write_uri}))
        spec = spec.model_copy(update={"sink": nodes[-1].sink})
    return replace(segment, spec=spec, nodes=tuple(nodes))


@dataclass(frozen=True)
class MixedJob:
    """Jobs of several engines run in order, with Parquet handoffs between them."""

    plan: LogicalPlan
    segments: tuple[LogicalPlan, ...]
    jobs: tuple[Any, ...]
    engine: str = "mixed"

    def bind(self, k: int, uris: list[str]) -> LogicalPlan:
        """Segment ``k`` with its handoff folders set: ``uris[i]`` is the folder of handoff i+1."""
        last = k == len(self.segments) - 1
        return _bind(self.segments[k], uris[k - 1] if k > 0 else None, None if last else uris[k])

    def describe(self) -> str:
        """Each segment's engine job, with the handoffs between them."""
        parts = []
        for k, job in enumerate(self.jobs):
            if k > 0:
                parts.append(f"== Handoff {k}: parquet in {handoff_placeholder(k)}/ (read by {job.engine}, removed after commit) ==")
            parts.append(job.describe())
        return "\n\n".join(parts)
