"""run_pipeline(): build -> validate -> optimize -> compile -> run -> commit -> report.

The only module that calls the plan, the engines and the commit together.
"""
from __future__ import annotations

import hashlib
import json
import posixpath
import sys
import tempfile
import time
import uuid
from itertools import chain
from dataclasses import dataclass
from typing import Any

from dataflow.dsl.spec import PipelineSpec
from dataflow.engines.base import Engine, RunContext, RunOptions, ShardRun
from dataflow.engines.registry import compile_pipeline
from dataflow.errors import DataflowError, RunError
from dataflow.ops.declare import OpKind
from dataflow.plan.nodes import LogicalPlan, steps_of
from dataflow.plan.phases import split_at_global
from dataflow.report.html import write_html_report
from dataflow.runtime.commit import SinkLayout, commit_output, publish_errors, read_manifest, refuse_existing, remove_tmp, sweep_tmp, sweep_unpublished
from dataflow.runtime.io_stats import io_totals
from dataflow.runtime.progress import Progress, Shard
from dataflow.runtime.shards import ShardCutter, ShardFeed, shard_size
from dataflow.runtime.report import RunReport, budget_problem, cache_report, run_report, top_reasons
from dataflow.runtime.scratch import check_scratch, disk_error_hint, is_disk_error
from dataflow.runtime.failure import failure_text, unreadable_input, vanished_input
from dataflow.runtime.settings import RunSettings, usable_settings
from dataflow.runtime.stage import StepStats
from dataflow.runtime.stats import CONSERVES, FANS_OUT, RESHAPES, Counted, SideOutputs, balance_problems, read_stats

__all__ = ["BudgetExceededError", "UnbalancedCountsError", "commit_shards", "pipeline_hash", "run_pipeline", "take_rows"]

WARM_WAIT_S = 60.0  # the longest the first shards wait for the engine's warm-up (a busy cluster may hold its tasks back)


class BudgetExceededError(RunError):
    """More row errors than ``errors.max_error_ratio`` / ``errors.max_errors`` allow."""

    def __init__(self, message: str, report: RunReport):
        self.report = report
        super().__init__(message)


class UnbalancedCountsError(RunError):
    """The run's row counters do not add up: rows were lost or made without a record (a bug, not bad data)."""

    def __init__(self, message: str, report: RunReport):
        self.report = report
        super().__init__(message)


def pipeline_hash(spec: PipelineSpec) -> str:
    """A stable hash of what the pipeline computes (sink mode excluded)."""
    data = spec.model_dump(mode="json")
    data["sink"].pop("mode", None)
    data["storage"].pop("cache", None)  # where inputs are cached does not change the output
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class _Phase:
    """One engine job over shards: the whole plan, or the part before / from a global step."""

    name: str
    job: Any
    sharded: bool


def _on_sink(sink_uri: str, path: str) -> str:
    """A path on the sink's filesystem as a URI an engine can read (the sink's scheme put back)."""
    from connectors.registry import scheme_of

    scheme = scheme_of(sink_uri)
    return path if scheme == "file" else f"{scheme}://{path}"


def _phases(engine: Engine, optimized: LogicalPlan, job, checkpoint_uri: str) -> list[_Phase]:
    head, tail = split_at_global(optimized, checkpoint_uri)
    if tail is None:
        return [_Phase("map", job, sharded=True)]
    return [_Phase("map", engine.compile(head), sharded=True), _Phase("global", engine.compile(tail), sharded=False)]


def run_pipeline(
    spec: PipelineSpec, options: RunOptions = RunOptions(), *, restart: bool = False, shard: tuple[int, int] | None = None
) -> RunReport:
    """Run a pipeline to its sink and commit; return the report.

    The input is split into deterministic shards; each finished shard is staged with a marker
    under ``<sink>/_dataflow/``, so running the same pipeline again after a crash resumes from
    the markers (``restart`` discards them). With ``shard=(i, n)`` only the i-th of n shards runs
    and is staged, for ``commit_shards`` to publish once all n are there.

    Raises:
        PipelineSpecError, PlanError: before anything starts.
        SinkExistsError: mode ``error`` and the sink holds committed output.
        BudgetExceededError: too many row errors (nothing is published; errors are kept).
        RunError: the engine failed.
    """
    from connectors.registry import filesystem, first_parquet_schema, storage_traits, strip_scheme
    from dataflow.plan.input_types import check_input_types
    from dataflow.runtime.held import held_schema  # zerocopy hook: an in-memory source is its one input

    logical, optimized, engine, job = compile_pipeline(spec)
    sink, source, storage = spec.sink, spec.source, spec.storage.options
    fs = filesystem(sink.uri, storage)
    run_id = uuid.uuid4().hex[:12]
    layout = SinkLayout(strip_scheme(sink.uri), run_id)
    refuse_existing(fs, layout, sink.mode, sink.uri)
    if not storage_traits(sink.uri).is_local:
        check_scratch()
    if shard is None:  # shard runs may run side by side (an Indexed Job): each keeps to its own tmp
        sweep_tmp(fs, layout)
    start = time.monotonic()
    feed = ShardFeed.of_source(source, storage)  # lists on its thread while the engine starts
    engine.start(options, job)  # on this (the main) thread; the engine may warm its workers for the job
    progress = Progress(fs, layout.root)
    checkpoint = _on_sink(sink.uri, progress.staged)
    # An engine that takes every input as one unit (a mixed Spark -> Ray run, through its handoff) gets one shard.
    whole = shard is None and engine.caps.partitions_inputs
    # Cut while listing unless the shards must be known first: resuming, --shard, the engine, a global step.
    streamed = not (whole or shard or engine.caps.whole_listing or source.in_memory or fs.exists(progress.state_path)
                    or split_at_global(optimized, checkpoint)[1] is not None)
    cutter = ShardCutter(shard_size(engine.parallelism(), files_per_shard=source.options.get("files_per_shard"), min_files=engine.caps.min_files_per_shard), strip_scheme)
    ready = engine.warm()
    shards, waves = feed.first_shards(cutter, streamed=streamed, count=1 if whole else (shard[1] if shard else None), ready=ready)
    if ready is not None:
        # The first shard then runs in warm workers: a run's start-up (its workers' start and imports, the
        # engine's first execution) is paid once before it, not inside it; shards submitted earlier only queue.
        ready.wait(WARM_WAIT_S)
    schema = (held_schema(source.uri) if source.in_memory else first_parquet_schema(shards[0].inputs, storage)) if source.format == "parquet" and shards[0].inputs else None
    if schema is not None:  # the schema is known: wrong column types are plan errors
        check_input_types(logical, schema)
    state = {
        "pipeline_hash": pipeline_hash(spec),
        "input_fingerprint": None if streamed else cutter.fingerprint,  # a streamed run's, when its listing ends
        "shards": None if streamed else len(shards),
        "skipped": dict(sorted(feed.skipped.items())),  # files the extension filter left out, for the report
        # Storage options may hold credentials: they are never written (commit reads them from env).
        "pipeline": spec.model_dump(mode="json", exclude={"storage"}),
    }
    try:
        done, note = progress.begin(state, restart=restart)
    except OSError as exc:
        raise RunError(f"cannot write to sink '{sink.uri}': {exc.strerror or exc} (check that the path exists and is writable; nothing was written)") from exc
    if note and options.progress:
        print(f"dataflow: {note}", file=sys.stderr, flush=True)
    # One shard in all: a checkpoint before a global step would only write the input to it twice.
    single = not streamed and shard is None and len(shards) == 1
    phases = [_Phase("map", job, sharded=True)] if whole or single else _phases(engine, optimized, job, checkpoint)
    map_job = engine.prepare(phases[0].job, [f for s in shards for f in s.inputs], storage)  # fixes what must not vary between shards (Spark's inferred JSON schema)
    try:
        for wave in chain([shards], waves):
            todo = [s for s in wave if s.id not in done and (shard is None or s.index == shard[0])]
            if not _run_shards(engine, map_job, todo, layout, progress, spec, options, publish=len(phases) == 1):
                break  # past the error budget: the check at the end reports it
        else:
            if streamed:
                progress.listed(cutter.fingerprint, cutter.count, dict(sorted(feed.skipped.items())))
        if shard is not None:
            markers = [m for m in progress.completed().values()]
            report = run_report(spec, engine.name, _stats(fs, progress, markers), progress.staged_files([m for m in markers if m["index"] == shard[0]]), time.monotonic() - start)
            report.skipped = dict(feed.skipped)
            return report
        if len(phases) > 1:
            _run_global(engine, phases[1].job, layout, progress, options)
    except DataflowError:
        raise
    except Exception as exc:
        text = failure_text(exc)[:500]
        hint = disk_error_hint(sink.uri) if is_disk_error(text) else "a bug in an op or the engine, not bad data; run with --debug for the traceback"
        if (vanished := vanished_input(text)) is not None:
            hint = (f"input file {vanished} was listed, then gone when Spark read it, past the files a shard's job runs again without "
                    f"(a file gone before is a row error); restore it, or run again over the input as it is now")
        elif (unreadable := unreadable_input(text)) is not None:
            hint = (f"input file {unreadable} could not be read: Spark reads file contents natively, and a shard's job runs again past only a "
                    f"few files it stops at; repair or remove the files, or run on Ray, where each is a row error")
        raise RunError(f"run of '{spec.name}' failed on engine {engine.name}: {text} ({hint}; committed shards are kept for a resume)") from exc
    return _finish(spec, optimized, engine.name, fs, layout, progress, start)


def _shard_context(
    layout: SinkLayout, shard_id: str, run_id: str, spec: PipelineSpec, inputs, settings: RunSettings | None = None, publish: bool = False
) -> tuple[str, RunContext]:
    """The shard's tmp folder and context; ``publish``: the run's output phase (object stores upload to final names)."""
    from connectors.registry import storage_traits

    tmp = posixpath.join(layout.tmp, shard_id)
    side = SideOutputs(uri=spec.sink.uri, storage_options=spec.storage.options, stats_dir=posixpath.join(tmp, "_stats"), errors_dir=posixpath.join(tmp, "_errors"))
    root = layout.root if publish and not storage_traits(spec.sink.uri).is_local else None
    settings = settings or RunSettings(storage_options=spec.storage.options)
    return tmp, RunContext(run_id=run_id, tmp_data=posixpath.join(tmp, "data"), side=side, settings=settings, inputs=inputs, publish_root=root)


def _run_shards(engine: Engine, job, shards: list[Shard], layout: SinkLayout, progress: Progress, spec: PipelineSpec, options: RunOptions, publish: bool = False) -> bool:
    """Run shards (the engine decides how: one stream, or a few at once) and stage each as it finishes; stop early past ``max_errors`` (returns False)."""
    settings = usable_settings(spec, cache_dir=options.cache_dir)
    runs = [ShardRun(s, *_shard_context(layout, s.id, layout.run_id, spec, s.inputs, settings, publish=publish)) for s in shards]

    limit = spec.errors.max_errors
    errored = [0 if limit is None else _rows_errored(progress, list(progress.completed().values()))]  # by shards staged before (a resume)
    within = [True]

    def done(run: ShardRun, written: list) -> bool:  # called on this thread: a running total, each shard's stats read once
        marker = progress.stage(run.shard, run.tmp, written, phase="map", run_id=layout.run_id)
        if limit is None:
            return True
        errored[0] += _rows_errored(progress, [marker])
        within[0] = errored[0] <= limit  # else the budget check at the end reports it
        return within[0]

    if runs:
        engine.execute_shards(job, runs, options, done)
    return within[0]


def _rows_errored(progress: Progress, markers: list[dict[str, Any]]) -> int:
    return sum(st.rows_errored for st in read_stats(progress.fs, progress.side_dirs(markers, "_stats")).values())


def _run_global(engine: Engine, job, layout: SinkLayout, progress: Progress, options: RunOptions) -> None:
    """Run the part from the first global step once, over the staged checkpoint of all shards."""
    maps = [m for m in progress.completed().values() if m["phase"] == "map"]
    final = Shard(index=len(maps), count=len(maps), inputs=("global",))
    if final.id in progress.completed():
        return
    spec = job.plan.spec
    checkpoint = [_on_sink(spec.sink.uri, f.src) for f in progress.staged_files(maps) if f.src.endswith(".parquet")]
    tmp, ctx = _shard_context(layout, final.id, layout.run_id, spec, tuple(checkpoint), publish=True)
    written = engine.execute(job, ctx, options) if checkpoint else []
    progress.stage(final, tmp, written, phase="global", run_id=layout.run_id)


def _stats(fs, progress: Progress, markers: list[dict[str, Any]]):
    stats = read_stats(fs, progress.side_dirs([m for m in markers if m["phase"] == "map"], "_stats"))
    for index, st in read_stats(fs, progress.side_dirs([m for m in markers if m["phase"] == "global"], "_stats"), skip=frozenset({-1})).items():
        stats.setdefault(index, StepStats()).add(st)
    return stats


def _chains(plan: LogicalPlan) -> list[list[Counted]]:
    """The plan's steps as the balance check sees them: the main chain from the read, then each named source's."""

    def counted(nodes) -> list[Counted]:
        return [Counted(s.index, f"{s.path} ({s.op.name})", FANS_OUT if s.op.kind is OpKind.FLAT_MAP else RESHAPES if s.op.reshapes else CONSERVES) for s in steps_of(nodes)]

    return [[Counted(-1, "read"), *counted(plan.nodes)], *(counted(side.nodes) for side in plan.inputs)]


def _discard(fs, layout: SinkLayout, progress: Progress) -> None:
    """Leave the sink as it was: remove this run's unpublished files, its progress and its tmp folder."""
    old = read_manifest(fs, layout)
    sweep_unpublished(fs, layout, {f["path"].split("/", 1)[0] for f in (old or {}).get("files", [])})
    progress.clear()
    remove_tmp(fs, layout)


def _finish(spec: PipelineSpec, plan: LogicalPlan, engine_name: str, fs, layout: SinkLayout, progress: Progress, start: float) -> RunReport:
    """Check that the counts balance and the error budget over every shard, then commit, write the report, drop the progress."""
    from dataflow import __version__

    markers = list(progress.completed().values())
    has_global = any(m["phase"] == "global" for m in markers)
    outputs = [m for m in markers if m["phase"] == ("global" if has_global else "map")]
    files = progress.staged_files(outputs)
    state = json.loads(fs.cat_file(progress.state_path))
    stats = _stats(fs, progress, markers)
    report = run_report(spec, engine_name, stats, files, time.monotonic() - start)
    problems = balance_problems(_chains(plan), stats, report.rows_out)
    if problems:
        _discard(fs, layout, progress)
        report.failure = "row counts do not balance; nothing was published"
        raise UnbalancedCountsError(
            f"run of '{spec.name}' on {engine_name}: row counts do not balance, so nothing was published "
            f"(a bug in an op or the engine, not bad data): {'; '.join(problems)}",
            report,
        )
    report.skipped = state.get("skipped", {})
    report.cache = cache_report(fs, layout)
    io = io_totals(fs, layout.tmp)
    report.retries, report.bytes_read = io["retries"], io["bytes_read"]
    error_dirs = progress.side_dirs(markers, "_errors")
    problem = budget_problem(spec, report)
    if problem:
        reasons = top_reasons(fs, error_dirs)
        publish_errors(fs, layout, error_dirs)
        _discard(fs, layout, progress)
        report.failure = f"error budget exceeded: {problem}; nothing was published"
        raise BudgetExceededError(f"{report.failure}. Top reasons: {reasons}. Records are in {report.errors}", report)
    commit_output(fs, layout, spec.sink.mode, files, error_dirs, {
        "pipeline": spec.name,
        "pipeline_hash": state["pipeline_hash"],
        "input_fingerprint": state["input_fingerprint"],
        "dataflow_version": __version__,
        "engine": engine_name,
        "rows_in": report.rows_in,
        "rows_out": report.rows_out,
        "rows_errored": report.rows_errored,
        "shards": [
            {"shard": m["shard"], "phase": m["phase"], "run_id": m.get("run_id"), "inputs": m["inputs"], "files": [f["rel"] for f in m["files"]]}
            for m in sorted(markers, key=lambda m: m["shard"])
        ],
    })
    progress.clear()
    report.published = True
    report.wall_seconds = time.monotonic() - start
    write_html_report(report, spec, fs, layout.root)  # <sink>/_dataflow/report.html; fills report.source*, .resources
    with fs.open(posixpath.join(progress.base, "report.json"), "wb") as f:
        f.write(json.dumps(report.to_dict(), indent=2).encode("utf-8"))
    return report


def commit_shards(sink_uri: str, count: int, spec: PipelineSpec | None = None) -> RunReport:
    """Publish a sink whose ``count`` shards were run separately (``dataflow run --shard i/N``).

    Without ``spec``, the pipeline recorded by the shard runs is used. A pipeline with a global
    step runs it here, once, over the checkpoint the shard runs staged.

    Raises:
        RunError: nothing to commit there, or some shard markers are missing (names them).
    """
    from connectors.registry import filesystem, strip_scheme

    fs = filesystem(sink_uri, spec.storage.options if spec else None)
    probe = Progress(fs, strip_scheme(sink_uri))
    if not fs.exists(probe.state_path):
        raise RunError(f"cannot commit {sink_uri}: no shard run has staged output there (run 'dataflow run --shard i/N' first)")
    if spec is None:
        spec = PipelineSpec.model_validate(json.loads(fs.cat_file(probe.state_path))["pipeline"])
    layout = SinkLayout(strip_scheme(spec.sink.uri), uuid.uuid4().hex[:12])
    progress = Progress(fs, layout.root)
    have = {m["index"] for m in progress.completed().values() if m["count"] == count}
    missing = sorted(set(range(count)) - have)
    if missing:
        raise RunError(f"cannot commit {spec.sink.uri}: shard(s) {', '.join(map(str, missing))} of {count} have no completion marker yet")
    _, optimized, engine, _ = compile_pipeline(spec)
    _, tail = split_at_global(optimized, _on_sink(spec.sink.uri, progress.staged))
    if tail is not None:  # the shards staged the checkpoint; the global step runs once, here
        _run_global(engine, engine.compile(tail), layout, progress, RunOptions(progress=False))
    return _finish(spec, optimized, "shards", fs, layout, progress, time.monotonic())


def take_rows(spec: PipelineSpec, n: int, options: RunOptions = RunOptions()) -> list[dict[str, Any]]:
    """Run the pipeline on its first inputs, without a sink, and return ``n`` rows."""
    _, _, engine, job = compile_pipeline(spec)
    with tempfile.TemporaryDirectory(prefix="dataflow-take-") as tmp:
        side = SideOutputs(uri=tmp, storage_options={}, stats_dir=f"{tmp}/_stats", errors_dir=f"{tmp}/_errors")
        ctx = RunContext(run_id="take", tmp_data=f"{tmp}/data", side=side, settings=RunSettings(storage_options=spec.storage.options))
        return engine.take(job, n, ctx, options)
