"""The global-phase split: the map part of a plan runs per shard into a checkpoint, the rest once over it."""
from __future__ import annotations

from dataclasses import replace

from dataflow.dsl.spec import SinkSpec, SourceSpec
from dataflow.plan.build import source_refs
from dataflow.plan.nodes import LogicalPlan, Read, Shuffle, Write, steps_of

__all__ = ["split_at_global"]


def split_at_global(plan: LogicalPlan, checkpoint_uri: str) -> tuple[LogicalPlan, LogicalPlan | None]:
    """Cut before the first global step: the map part runs per shard into a Parquet checkpoint.

    The checkpoint holds only the columns the rest of the run reads (``Write.reads``): a step
    that keeps just the columns it names (an aggregation) leaves the others unread.
    """
    from dataflow.plan.columns import needed_by

    cut = next((i for i, n in enumerate(plan.nodes) if isinstance(n, Shuffle)), None)
    if cut is None:
        return plan, None
    engine = plan.nodes[cut].engine
    checkpoint_sink = SinkSpec(uri=plan.spec.sink.uri, format="parquet")
    # Named sources feed joins, which are global: the map part reads them only if a step names one.
    steps = steps_of(plan.nodes[:cut])
    inputs = plan.inputs if any(source_refs(s) for s in steps) else ()
    head = replace(plan, nodes=(*plan.nodes[:cut], Write(sink=checkpoint_sink, engine=engine, reads=needed_by(steps_of(plan.nodes[cut:])), feeds=plan.nodes[cut])), inputs=inputs)
    source = SourceSpec(uri=checkpoint_uri, format="parquet", options={"keep_lineage": True})  # the rows keep their input's lineage
    tail = replace(plan, nodes=(Read(source=source, engine=engine), *plan.nodes[cut:]))
    return head, tail
