"""Lower a logical plan to a Spark job description (pure: no pyspark import, no session).

Each table op is lowered to native DataFrame operations by its entry in ``lowerings.LOWERINGS``
(the engine's one op table); plan nodes are lowered through an exact-type table.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from connectors.registry import scheme_of
from dataflow.columns import SOURCE
from dataflow.dsl.spec import SinkSpec, SourceSpec
from dataflow.errors import EngineCapabilityError
from dataflow.ops.declare import OpKind, Params
from dataflow.engines.spark.lowerings import LOWERINGS
from dataflow.engines.spark.python_steps import PYTHON_LOWERING, python_allowed
from dataflow.plan.columns import named_by, needed_after
from dataflow.plan.nodes import Filter, FlatMap, FusedMap, LogicalPlan, Map, Read, Shuffle, Step, Write, steps_of
from dataflow.plan.validate import param_reads
from dataflow.runtime.stage import StepCall

__all__ = ["READ_METHODS", "SparkInput", "SparkJob", "SparkRead", "SparkStep", "SparkWrite", "compile_plan"]

DEFAULT_ROWS_PER_FILE = 10_000

READ_METHODS = {"csv": "csv records", "jsonl": "JSON lines", "parquet": "parquet", "text": "text"}

# Steps whose rows do not depend on __source__ and that record no row errors of their own (whose
# records name it). An aggregate's min(__source__) is only lineage, kept when the sink writes it.
_LINEAGE_FREE = frozenset({"table.aggregate", "table.filter_rows", "table.select", "table.with_columns"})


@dataclass(frozen=True)
class SparkRead:
    """How a source becomes a DataFrame: natively for local files, else the connectors' Python data source."""

    source: SourceSpec
    method: str
    remote: bool
    counted: bool = True  # its rows are the run's input rows (read counters, step -1)
    named: frozenset[str] = frozenset()  # the columns the steps name: an input without a JSON object still has them (null)
    lineage: bool = True  # False: no step and not the sink reads __source__ (a read may then skip making it)
    # Set: steps[i] is an aggregate and it and the steps before it only carry __source__ to its
    # min(__source__), so until there the lineage may be any key that sorts as its strings do.
    lineage_key_until: int | None = None

    def describe(self) -> str:
        if self.source.in_memory:
            return f"the rows held at {self.source.uri}: the DataFrame itself, spark.createDataFrame (an Arrow table) or a Ray Dataset through Parquet"
        how = "Python data source over fsspec (connectors)" if self.remote or self.source.format == "csv" else "native Spark reader"
        return f"{self.method} from {self.source.uri} via {how}"


@dataclass(frozen=True)
class SparkStep:
    """One op application, lowered by its registry name."""

    index: int
    name: str
    params: Params  # the plan's validated model, read by attribute
    path: str
    kind: str
    needed_after: frozenset[str] | None = None  # the columns later steps and the sink read (None: all)
    drops_rows: bool = False  # the rows it does not pass on are drops (filters, dedups)
    call: StepCall | None = None  # set: no native lowering, the op runs in Spark's Python workers (kind "python")

    @property
    def lowering(self) -> str:
        return PYTHON_LOWERING if self.call is not None else LOWERINGS[self.name].native


@dataclass(frozen=True)
class SparkInput:
    """A named source (the right side of a join) and the steps that prepare it."""

    name: str
    read: SparkRead
    steps: tuple[SparkStep, ...]


@dataclass(frozen=True)
class SparkWrite:
    """Write partitions (local Parquet natively, else our format writers in ``mapInArrow``); the runner commits."""

    sink: SinkSpec
    rows_per_file: int
    native: bool = False  # local Parquet: Spark's own writer
    max_file_bytes: int | None = None  # set: our writers, which also bound a file's bytes
    leaves_out: tuple[str, ...] = ()  # consumed input columns not written


@dataclass(frozen=True)
class SparkJob:
    """The lowered Spark job."""

    plan: LogicalPlan
    read: SparkRead
    steps: tuple[SparkStep, ...]
    write: SparkWrite
    inputs: tuple[SparkInput, ...] = ()
    engine: str = "spark"

    def describe(self) -> str:
        """The ``== Spark job ==`` section of ``dataflow explain``."""
        lines = ["== Spark job ==", f"read: {self.read.describe()}"]
        for side in self.inputs:
            lines.append(f"source '{side.name}': {side.read.describe()}")
            lines += [f"    {s.path} {s.name}: {s.lowering}" for s in side.steps]
        lines += [f"{s.path} {s.name}: {s.lowering}" for s in self.steps]
        w = self.write
        how = "Spark's Parquet writer" if w.native else f"mapInArrow[{w.sink.format} writer]"
        bound = f" max_file_bytes={w.max_file_bytes}" if w.max_file_bytes else ""
        lines.append(f"write: {how} rows_per_file={w.rows_per_file}{bound} -> commit {w.sink.uri}")
        lines.append("row errors (bad JSON, wrong types, failed casts): split off natively -> <sink>/_errors/")
        return "\n".join(lines)


def _lower_read(node: Read, counted: bool = True) -> SparkRead:
    fmt = node.source.format
    if fmt not in READ_METHODS:
        raise EngineCapabilityError("spark", f"a '{fmt}' source", "Spark reads csv, jsonl, parquet and text sources; set engine: ray for media")
    method = READ_METHODS[fmt]
    if fmt == "text":
        method = "text lines" if node.source.options.get("split", "file") == "line" else "whole text files"
    return SparkRead(source=node.source, method=method, remote=scheme_of(node.source.uri) != "file", counted=counted)


def _step(node: Step, needed: frozenset[str] | None) -> SparkStep:
    if node.op.name not in LOWERINGS and python_allowed(node.op):
        call = StepCall(index=node.index, op=node.op, params=node.params)
        return SparkStep(index=node.index, name=node.op.name, params=node.params, path=node.path, kind="python", needed_after=needed, drops_rows=_drops_rows(node.op), call=call)
    if node.op.name not in LOWERINGS:
        have = ", ".join(sorted(LOWERINGS))
        raise EngineCapabilityError("spark", f"{node.path} ({node.op.name})", f"Spark lowers only {have}; set engine: ray")
    return SparkStep(index=node.index, name=node.op.name, params=node.params, path=node.path, kind=node.op.kind.value, needed_after=needed, drops_rows=_drops_rows(node.op))


_STEP_NODES = (FusedMap, Map, Filter, FlatMap, Shuffle)


def _lower_chain(nodes) -> tuple[SparkRead | None, list[SparkStep], SparkWrite | None]:
    read = write = None
    steps: list[Step] = []
    for node in nodes:
        if type(node) is Read:
            read = _lower_read(node)
        elif type(node) is Write:
            s = node.sink
            # Spark's own Parquet writer bounds files by rows only.
            native = s.format == "parquet" and scheme_of(s.uri) == "file" and s.max_file_bytes is None
            write = SparkWrite(sink=s, rows_per_file=s.rows_per_file or DEFAULT_ROWS_PER_FILE, native=native, max_file_bytes=s.max_file_bytes, leaves_out=node.leaves_out)
        else:
            if type(node) not in _STEP_NODES:
                raise EngineCapabilityError("spark", f"plan node {type(node).__name__}")
            steps += steps_of([node])
    if read is not None:
        read = replace(read, named=named_by(steps), lineage=_reads_lineage(steps, write), lineage_key_until=_first_min_lineage(steps))
    return read, [_step(s, needed) for s, needed in zip(steps, needed_after(steps))], write


def compile_plan(plan: LogicalPlan) -> SparkJob:
    """Lower ``plan`` to a SparkJob.

    Raises:
        EngineCapabilityError: a source format or op Spark cannot run, naming the step.
    """
    read, steps, write = _lower_chain(plan.nodes)
    inputs = []
    for side in plan.inputs:
        side_read, side_steps, _ = _lower_chain(side.nodes)
        inputs.append(SparkInput(name=side.name, read=SparkRead(side_read.source, side_read.method, side_read.remote, counted=False), steps=tuple(side_steps)))
    return SparkJob(plan=plan, read=read, steps=tuple(steps), write=write, inputs=tuple(inputs))


def _reads_lineage(steps: list[Step], write: SparkWrite | None) -> bool:
    """Whether anything reads the rows' ``__source__``: the sink, a step that names it, or a step not known to leave it alone."""
    if write is None or write.sink.lineage:
        return True
    return any(_names_lineage(s) for s in steps)


def _names_lineage(step: Step) -> bool:
    """Whether ``step`` reads or names ``__source__``, or is not known to leave it alone."""
    return step.op.name not in _LINEAGE_FREE or SOURCE in param_reads(step.params)[0] or SOURCE in step.op.columns(step.params)[0]


def _first_min_lineage(steps: list[Step]) -> int | None:
    """The index of the first aggregate when it and the steps before it leave ``__source__`` alone but for its minimum."""
    for i, s in enumerate(steps):
        if _names_lineage(s):
            return None
        if s.op.name == "table.aggregate":
            return None if SOURCE in s.params.aggregations else i
        if s.op.name == "table.with_columns" and SOURCE in s.op.output_columns(frozenset(), s.params):
            return None  # it sets __source__ itself
    return None


def _drops_rows(op) -> bool:
    """Whether a step's missing rows are drops: a filter's or dedup's, and a flat map's that yielded nothing (as the executor counts them)."""
    return op.drops_rows or op.kind is OpKind.FLAT_MAP
