"""Logical plan nodes: frozen descriptions with no engine objects."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from dataflow.columns import SOURCE
from dataflow.dsl.spec import PipelineSpec, SinkSpec, SourceSpec
from dataflow.ops.declare import OpSpec, Resources

__all__ = [
    "Filter", "FlatMap", "FusedMap", "Handoff", "LogicalPlan", "Map", "Node", "Read", "Shuffle", "SideInput", "Step", "Write", "source_columns", "steps_of",
]

_MEDIA_COLUMNS = frozenset({SOURCE, "bytes"})


def source_columns(source: SourceSpec) -> frozenset[str] | None:
    """Columns a source yields, or None when they come from the data (tables)."""
    if source.format in ("image", "audio", "binary"):
        return _MEDIA_COLUMNS
    if source.format == "text":
        return frozenset({SOURCE, "text"})
    return None


@dataclass(frozen=True)
class Read:
    """Read a source into rows (every row gets a ``__source__`` column)."""

    source: SourceSpec
    engine: str | None = None

    @property
    def label(self) -> str:
        return f"Read[{self.source.format}]"


@dataclass(frozen=True)
class Step:
    """One op application; the subclasses say how rows map."""

    index: int
    op: OpSpec
    params: Any
    resources: Resources
    engine: str | None = None
    ref: str = ""
    where: str = ""  # the step's key path in the pipeline, e.g. "stages[1].steps[0]"
    stage: str | None = None  # the name of its stage, when the pipeline has stages

    @property
    def label(self) -> str:
        return self.op.name

    @property
    def path(self) -> str:
        """Where the step is written: its key path, or ``steps[i]``."""
        return self.where or f"steps[{self.index}]"

    @property
    def uses_gpu(self) -> bool:
        return bool(self.resources.num_gpus)


@dataclass(frozen=True)
class Map(Step):
    """One row in, one row out."""


@dataclass(frozen=True)
class Filter(Step):
    """Keep or drop each row."""


@dataclass(frozen=True)
class FlatMap(Step):
    """One row in, any number out."""


@dataclass(frozen=True)
class Shuffle(Step):
    """A global op that needs all rows (dedup, aggregation)."""


@dataclass(frozen=True)
class FusedMap:
    """Adjacent row-wise steps run as one batch function: decode once, no pixels between steps."""

    steps: tuple[Step, ...]
    resources: Resources
    engine: str | None = None

    @property
    def label(self) -> str:
        return "FusedMap[" + " -> ".join(s.op.name for s in self.steps) + "]"

    @property
    def stateful(self) -> bool:
        return any(s.op.stateful for s in self.steps)


@dataclass(frozen=True)
class Write:
    """Write rows to the sink and commit."""

    sink: SinkSpec
    engine: str | None = None
    leaves_out: tuple[str, ...] = ()  # consumed input columns the sink does not write (plan.rules_media.LeaveOutConsumedInputs)
    columns: tuple[str, ...] | None = None  # what it writes, when the source's columns are known at plan time
    reads: frozenset[str] | None = None  # a checkpoint's: the columns the rest of the run reads back (None: every column)
    feeds: Step | None = None  # a checkpoint's: the global step that reads it back (an engine may write that step's partial states)

    @property
    def label(self) -> str:
        return f"Write[{self.sink.format}]"


@dataclass(frozen=True)
class Handoff:
    """Rows change engine here: Parquet written to the run's scratch area, read by the next engine.

    The scratch folder lies under the sink's ``_tmp/<run_id>/`` and is removed after the commit.
    Its ``engine`` is the one that writes it (``from_engine``).
    """

    number: int
    from_engine: str
    to_engine: str
    engine: str | None = None

    @property
    def label(self) -> str:
        return f"Handoff[{self.from_engine} -> {self.to_engine}]"


Node = Union[Read, Step, FusedMap, Handoff, Write]


@dataclass(frozen=True)
class SideInput:
    """A named source that an op reads by name (the right side of a join), with its own steps."""

    name: str
    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class LogicalPlan:
    """A linear chain of nodes from one Read to one Write, plus the spec it came from."""

    spec: PipelineSpec
    nodes: tuple[Node, ...]
    engine_reason: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    inputs: tuple[SideInput, ...] = ()

    def steps(self) -> list[Step]:
        """The main chain's steps in order, each fused stage's steps in its place (named sources' not included)."""
        return steps_of(self.nodes)

    @property
    def engine(self) -> str | None:
        """The plan's one engine, or None when it hands rows from one engine to another."""
        engines = {n.engine for n in self.nodes if not isinstance(n, Handoff)}
        return engines.pop() if len(engines) == 1 and not any(isinstance(n, Handoff) for n in self.nodes) else None

    @property
    def engines(self) -> tuple[str, ...]:
        """The engines in the order the rows meet them."""
        out: list[str] = []
        for n in self.nodes:
            if n.engine and (not out or out[-1] != n.engine) and not isinstance(n, Handoff):
                out.append(n.engine)
        return tuple(out)


def steps_of(nodes) -> list[Step]:
    """The steps among ``nodes``, in order, with each fused stage's steps in its place."""
    return [s for n in nodes for s in (n.steps if isinstance(n, FusedMap) else (n,)) if isinstance(s, Step)]
