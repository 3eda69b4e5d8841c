"""Lower a logical plan to a Ray Data job description (pure: no Ray import, no session)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from dataflow.dsl.spec import SinkSpec, SourceSpec
from dataflow.engines.ray.read import FILES_PER_TASK
from dataflow.errors import EngineCapabilityError
from dataflow.ops.declare import Modality
from dataflow.plan.columns import needed_after, needed_by
from dataflow.plan.nodes import Filter, FlatMap, FusedMap, LogicalPlan, Map, Read, Shuffle, Write, steps_of
from dataflow.runtime.fused_sql import fusable
from dataflow.runtime.stage import StepCall

__all__ = ["ARROW", "RayGlobal", "RayJob", "RayRead", "RayStage", "RayWrite", "compile_plan"]

LINE_FORMATS = ("csv", "jsonl", "text")
MEDIA_BATCH_SIZE = 64
TABLE_BATCH_SIZE = 4096
#: Rows a batch of a stage of table ops holds: each batch is a few DuckDB queries with a fixed cost
#: (binding, registering the batch): 16,384-row batches ran the logs benchmark's ops 1.7x faster than
#: 4,096 (65,536: 2.4x, but 650 MB batches of 10 kB documents).
SQL_BATCH_SIZE = 16384
ACTOR_NUM_CPUS = 0.5  # fractional so an actor pool never starves the read tasks on small machines
DEFAULT_ROWS_PER_FILE = 10_000
DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024
# The batch format of every callable that sees user columns: Ray's "numpy" format turns a null
# number into NaN (an int column into floats) and a list into an array; ``from_arrow`` keeps them.
ARROW = "pyarrow"


@dataclass(frozen=True)
class RayRead:
    """The read: work items listed at the driver go to ``ray.data.from_items``, then read tasks fetch them.

    ``reader`` names the items: ``files`` (whole files fetched by ``FetchFiles`` through the URI
    layer and its cache, then turned into rows; line formats, named by ``parse``, are streamed by
    ``ReadStream`` instead, decompressed when compressed), ``row_groups`` (Parquet, one row group
    per task) or ``shards`` (WebDataset tar shards streamed by ``ReadStream``).
    """

    source: SourceSpec
    reader: str
    parse: str | None
    columns: frozenset[str] | None = None  # the columns the steps and the sink read (None: all)

    @property
    def options(self) -> dict:
        """The source's options for its read tasks: a declared jsonl schema keeps only the fields something reads."""
        schema = self.source.options.get("schema") if self.parse == "jsonl" else None
        if not schema or self.columns is None:
            return self.source.options
        read = {k: v for k, v in schema.items() if k in self.columns}
        return {**self.source.options, "schema": read} if read else self.source.options

    def describe(self) -> str:
        """The ``read:`` line of ``dataflow explain``: what runs, in order."""
        uri = self.source.uri
        if self.parse == "jsonl" and self.source.options.get("schema"):
            fields = ", ".join(self.options["schema"]) or "none"
            return (f"ray.data.from_items(files listed under {uri}) -> map_batches[ReadStream, {FILES_PER_TASK}+ files per task] parses 8 MiB blocks of "
                    f"jsonl with pyarrow.json into the declared types (fields read: {fields}); "
                    "a block with a bad line is read line by line")
        if self.source.in_memory:
            return f"the rows held at {uri}: ray.data.from_arrow (an Arrow table) or the Dataset itself (a Spark DataFrame: through Parquet) -> map_batches[count, add __source__] (zero-copy)"
        if self.reader == "row_groups":
            return f"ray.data.from_items(row groups listed from the Parquet footers under {uri}) -> map_batches[read one row group per task] into rows"
        if self.reader == "shards":
            return f"ray.data.from_items(tar shards listed under {uri}) -> map_batches[ReadStream, 1 shard per task] streams samples into rows"
        if self.parse in LINE_FORMATS:
            whole_text = self.parse == "text" and self.source.options.get("split", "file") == "file"
            rows = "one row per file" if whole_text else f"{self.parse} lines into rows"
            return f"ray.data.from_items(files listed under {uri}) -> map_batches[ReadStream, {FILES_PER_TASK}+ files per task] streams (and decompresses) {rows}"
        return f"ray.data.from_items(files listed under {uri}) -> map_batches[FetchFiles, {FILES_PER_TASK}+ files per task] -> one row per file"


@dataclass(frozen=True)
class RayStage:
    """One ``map_batches`` call: a fused stage run as tasks or as an actor pool."""

    name: str
    label: str
    calls: tuple[StepCall, ...]
    compute: str
    batch_size: int
    num_cpus: float | None = None
    num_gpus: float | None = None
    memory: int | None = None
    concurrency: int | None = None
    keeps: tuple[frozenset[str] | None, ...] = ()  # per step, the columns of its output later steps and the sink read (None: all)
    batch_given: bool = False  # the steps' resources set batch_size (else it is the engine's default)
    media: bool = False  # its rows are media files (one row each), not table rows


@dataclass(frozen=True)
class RayGlobal:
    """A global op (dedup, aggregation, join): hash shuffles of the rows, never a gather at the driver."""

    name: str
    label: str
    call: StepCall
    strategy: str
    num_cpus: float | None = None  # num_cpus, num_gpus, batch_size: for the map a distributed
    num_gpus: float | None = None  # lowering runs (e.g. MinHash signatures)
    batch_size: int | None = None
    shuffle: str = ""  # what ``explain`` shows of the op's shuffles
    bucketed: bool = False  # the op declares a bucketing: duplicates are found bucket by bucket
    partition_by: str | None = None  # the op's parameter listing the columns its rows are hash-partitioned on


@dataclass(frozen=True)
class RayWrite:
    """Write shards with our format writers from ``map_batches``, then commit at the driver."""

    sink: SinkSpec
    rows_per_file: int
    max_file_bytes: int
    leaves_out: tuple[str, ...] = ()  # consumed input columns not written
    reads: frozenset[str] | None = None  # a checkpoint's: only these columns are written (None: all)
    feeds: StepCall | None = None  # a checkpoint's: the global step reading it (an aggregation's partial states are written)


@dataclass(frozen=True)
class RayJob:
    """The lowered Ray Data job."""

    plan: LogicalPlan
    read: RayRead
    stages: tuple[RayStage | RayGlobal, ...]
    write: RayWrite | None
    engine: str = "ray"
    inputs: tuple[tuple[str, RayJob], ...] = ()  # named sources (a join's right side), each read and run first

    def describe(self) -> str:
        """The ``== Ray job ==`` section of ``dataflow explain``."""
        lines = ["== Ray job ==", f"read: {self.read.describe()}"]
        for s, after in zip(self.stages, [*self.stages[1:], None]):
            if isinstance(s, RayGlobal):
                res = ", ".join(f"{k}={v}" for k, v in (("num_cpus", s.num_cpus), ("num_gpus", s.num_gpus), ("batch_size", s.batch_size)) if v is not None)
                lines.append(f"{s.name}: global[{s.label}] via {s.strategy}" + (f", {res}" if res else ""))
                lines.append(f"    shuffle: {s.shuffle}")
                continue
            res = ", ".join(
                f"{k}={v}" for k, v in (("num_cpus", s.num_cpus), ("num_gpus", s.num_gpus), ("memory", s.memory), ("concurrency", s.concurrency)) if v is not None
            )
            pool = "actor pool" if s.compute == "actors" else "tasks"
            lines.append(f"{s.name}: map_batches[{s.label}] as {pool}, batch_size={s.batch_size}" + (f", {res}" if res else ""))
            if isinstance(after, RayGlobal) and after.label == "table.aggregate" and s.compute == "tasks" and fusable(list(s.calls)):
                lines.append(f"    {s.name} and {after.name}'s partial states: one DuckDB query per block where they merge exactly (else step by step)")
                lines += self._scanned(s)
        for name, sub in self.inputs:
            lines.append(f"source '{name}' (materialized in Ray's object store, shuffled with the rows of the steps that read it):")
            lines += ["    " + line for line in sub.describe().splitlines()[1:]]
        w = self.write
        if w is not None:
            lines.append(f"write: map_batches[{w.sink.format} writer] rows_per_file={w.rows_per_file} max_file_bytes={w.max_file_bytes} -> commit {w.sink.uri}")
            if w.reads is not None:  # a run's checkpoint before its global phase
                lines.append(f"    checkpoint for {w.feeds.op.name if w.feeds else 'the global phase'}: its partial states where they merge exactly, else columns "
                             + ", ".join(sorted(w.reads)))
                last = self.stages[-1] if self.stages else None
                if isinstance(last, RayStage) and last.compute == "tasks" and w.feeds is not None and w.feeds.op.name == "table.aggregate" and fusable(list(last.calls)):
                    lines.append(f"    {last.name} and the partial states: one DuckDB query per block where they merge exactly (else step by step)")
                    lines += self._scanned(last)
        return "\n".join(lines)

    def _scanned(self, stage: RayStage) -> list[str]:
        """The explain line of a first stage fused with its aggregation's partial states over typed JSON lines (``fused_read``)."""
        if stage is not self.stages[0] or self.read.parse != "jsonl" or not self.read.source.options.get("schema"):
            return []
        return ["    with the read: each local file whose every line starts with '{' is scanned by DuckDB inside that query (read_ndjson, "
                "the declared kinds checked); any other file is read as above"]


def _lower_read(node: Read, plan: LogicalPlan, columns: frozenset[str] | None = None) -> RayRead:
    fmt = node.source.format
    if fmt == "parquet":
        # One read task per row group, listed from the footers: exact row offsets in ``__source__``.
        return RayRead(source=node.source, reader="row_groups", parse="parquet")
    if fmt == "webdataset":
        return RayRead(source=node.source, reader="shards", parse=None)
    if fmt == "jsonl" and node.source.options.get("schema"):
        from connectors.registry import jsonl_arrow_schema

        try:
            jsonl_arrow_schema(node.source.options["schema"])
        except ValueError as exc:
            raise EngineCapabilityError("ray", "this jsonl source", str(exc)) from exc
    return RayRead(source=node.source, reader="files", parse=fmt if fmt in LINE_FORMATS else None, columns=columns)


def _lower_stage(node: FusedMap, plan: LogicalPlan, number: int, keep: dict[int, frozenset[str] | None] | None = None) -> RayStage:
    res = node.resources
    gpu = bool(res.num_gpus)
    actors = node.stateful or gpu
    media = plan.spec.source.format in ("image", "audio", "binary") or any(s.op.modality is not Modality.TABLE for s in node.steps)
    return RayStage(
        name=f"stage-{number}",
        label=" -> ".join(s.op.name for s in node.steps),
        calls=tuple(StepCall(index=s.index, op=s.op, params=s.params) for s in node.steps),
        compute="actors" if actors else "tasks",
        batch_size=res.batch_size or (MEDIA_BATCH_SIZE if media else SQL_BATCH_SIZE),
        num_cpus=res.num_cpus if res.num_cpus is not None else (ACTOR_NUM_CPUS if actors else None),
        num_gpus=res.num_gpus or None,
        memory=res.memory,
        concurrency=res.concurrency,
        keeps=tuple((keep or {}).get(s.index) for s in node.steps),
        batch_given=res.batch_size is not None,
        media=media,
    )


def _single(node, plan: LogicalPlan, number: int, keep: dict[int, frozenset[str] | None] | None = None) -> RayStage:
    return _lower_stage(FusedMap(steps=(node,), resources=node.resources, engine=node.engine), plan, number, keep)


def _lower_global(node: Shuffle, plan: LogicalPlan, number: int, keep: dict[int, frozenset[str] | None] | None = None) -> RayGlobal:
    from dataflow.engines.ray.global_ops import describe_shuffle

    distributed = node.op.bucketing is not None
    return RayGlobal(
        name=f"stage-{number}",
        label=node.op.name,
        call=StepCall(index=node.index, op=node.op, params=node.params),
        strategy="distributed Ray lowering" if distributed else "hash shuffle, then the op once per partition",
        shuffle=describe_shuffle(node.op, node.params),
        bucketed=distributed,
        partition_by=node.op.partition_by,
        num_cpus=node.resources.num_cpus,
        num_gpus=node.resources.num_gpus or None,
        batch_size=node.resources.batch_size or (TABLE_BATCH_SIZE if node.resources.num_gpus else None),
    )


def _lower_write(node: Write, plan: LogicalPlan) -> RayWrite:
    s = node.sink
    return RayWrite(sink=s, rows_per_file=s.rows_per_file or DEFAULT_ROWS_PER_FILE, max_file_bytes=s.max_file_bytes or DEFAULT_MAX_FILE_BYTES, leaves_out=node.leaves_out, reads=node.reads,
                    feeds=None if node.feeds is None else StepCall(index=node.feeds.index, op=node.feeds.op, params=node.feeds.params))


_LOWER_STAGE = {FusedMap: _lower_stage, Map: _single, Filter: _single, FlatMap: _single, Shuffle: _lower_global}


def compile_plan(plan: LogicalPlan) -> RayJob:
    """Lower ``plan`` to a RayJob.

    Raises:
        EngineCapabilityError: a node Ray cannot run, naming the step.
    """
    read = write = None
    stages = []
    # The columns each step's output must keep: the others leave the batch there (not carried to later steps, the sink or a shuffle).
    sink = next((n for n in plan.nodes if type(n) is Write), None)
    steps = steps_of(plan.nodes)
    keep = dict(zip((s.index for s in steps), needed_after(steps, sink.reads if sink else None)))
    for node in plan.nodes:
        if type(node) is Read:
            read = _lower_read(node, plan, needed_by(steps, sink.reads if sink else None))
        elif type(node) is Write:
            write = _lower_write(node, plan)
        else:
            lower = _LOWER_STAGE.get(type(node))
            if lower is None:
                raise EngineCapabilityError("ray", f"plan node {type(node).__name__}")
            stages.append(lower(node, plan, len(stages) + 1, keep))
    inputs = tuple((side.name, compile_plan(replace(plan, nodes=side.nodes, inputs=()))) for side in plan.inputs)
    return RayJob(plan=plan, read=read, stages=tuple(stages), write=write, inputs=inputs)
