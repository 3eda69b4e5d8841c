"""Logical plan nodes: frozen descriptions with no engine objects."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from dataflow.dsl.spec import PipelineSpec, SinkSpec, SourceSpec
from dataflow.ops.declare import OpSpec, Resources

__all__ = ["Filter", "FlatMap", "FusedMap", "LogicalPlan", "Map", "Node", "Read", "Shuffle", "Step", "Write", "source_columns"]

_MEDIA_COLUMNS = frozenset({"source", "bytes"})


def source_columns(source: SourceSpec) -> frozenset[str] | None:
    """Columns a source yields, or None when they come from the data (tables)."""
    if source.format in ("image", "audio", "binary"):
        return _MEDIA_COLUMNS
    if source.format == "text":
        return frozenset({"source", "text"})
    return None


@dataclass(frozen=True)
class Read:
    """Read a source into rows (every row gets a ``source`` column)."""

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

    @property
    def label(self) -> str:
        return self.op.name

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

    @property
    def label(self) -> str:
        return f"Write[{self.sink.format}]"


Node = Union[Read, Step, FusedMap, Write]


@dataclass(frozen=True)
class LogicalPlan:
    """A linear chain of nodes from one Read to one Write, plus the spec it came from."""

    spec: PipelineSpec
    nodes: tuple[Node, ...]
    engine_reason: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def in_order(self) -> tuple[Node, ...]:
        return self.nodes

    @property
    def engine(self) -> str | None:
        engines = {n.engine for n in self.nodes}
        return engines.pop() if len(engines) == 1 else None
