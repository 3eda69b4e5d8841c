"""run_pipeline(): build -> validate -> optimize -> compile -> run -> commit -> report.

The only module that calls the plan, the engines and the commit together.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import tempfile
import time
import uuid
from typing import Any

from dataflow.dsl.spec import PipelineSpec
from dataflow.engines.base import RunContext, RunOptions, RunReport, StepReport
from dataflow.errors import DataflowError, RunError
from dataflow.plan import build_plan, optimize, render_logical, render_optimized, validate_plan
from dataflow.plan.nodes import LogicalPlan
from dataflow.plan.rules import AssignEngines, FuseAdjacentMaps
from dataflow.runtime.commit import SinkLayout, commit_output, publish_errors, refuse_existing, remove_tmp
from dataflow.runtime.stats import SideOutputs, read_errors, read_stats

__all__ = ["ENGINES", "BudgetExceededError", "compile_pipeline", "explain_pipeline", "get_engine", "pipeline_hash", "plan_pipeline", "run_pipeline", "take_rows"]

ENGINES = {"ray": "dataflow.engines.ray:RayEngine", "spark": "dataflow.engines.spark:SparkEngine"}


class BudgetExceededError(RunError):
    """More row errors than ``errors.max_error_ratio`` / ``errors.max_errors`` allow."""

    def __init__(self, message: str, report: RunReport):
        self.report = report
        super().__init__(message)


def _engine_available(name: str) -> bool:
    return importlib.util.find_spec(ENGINES[name].split(":")[0]) is not None


def get_engine(name: str):
    """Return an engine instance by name."""
    module, _, cls = ENGINES[name].partition(":")
    return getattr(importlib.import_module(module), cls)()


def plan_pipeline(spec: PipelineSpec) -> tuple[LogicalPlan, LogicalPlan]:
    """Return the (logical, optimized) plans of a spec, checked."""
    logical = validate_plan(build_plan(spec))
    rules = (AssignEngines(spark_available=_engine_available("spark")), FuseAdjacentMaps())
    return logical, optimize(logical, rules)


def compile_pipeline(spec: PipelineSpec):
    """Return (logical plan, optimized plan, engine, compiled job); no cluster is started."""
    logical, optimized = plan_pipeline(spec)
    if not _engine_available(optimized.engine):
        raise DataflowError(f"engine '{optimized.engine}' is not available in this installation")
    engine = get_engine(optimized.engine)
    return logical, optimized, engine, engine.compile(optimized)


def explain_pipeline(spec: PipelineSpec) -> str:
    """The three sections of ``dataflow explain``."""
    logical, optimized, _, job = compile_pipeline(spec)
    return "\n\n".join([render_logical(logical), render_optimized(optimized), job.describe()])


def pipeline_hash(spec: PipelineSpec) -> str:
    """A stable hash of what the pipeline computes (sink mode excluded)."""
    data = spec.model_dump(mode="json")
    data["sink"].pop("mode", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _report(spec: PipelineSpec, engine: str, stats, written, wall: float) -> RunReport:
    read = stats.get(-1)
    steps = [StepReport(op="read", rows_in=read.rows_in, rows_out=read.rows_out, rows_errored=read.rows_errored, seconds=read.seconds)] if read else []
    for i, step in enumerate(spec.steps):
        st = stats.get(i)
        if st is not None:
            steps.append(StepReport(op=step.op, rows_in=st.rows_in, rows_out=st.rows_out, rows_errored=st.rows_errored, seconds=st.seconds, drops=dict(st.drops)))
        else:
            steps.append(StepReport(op=step.op))
    return RunReport(
        pipeline=spec.name,
        engine=engine,
        rows_in=read.rows_in if read else 0,
        rows_out=sum(w.rows for w in written),
        rows_errored=sum(s.rows_errored for s in stats.values()),
        wall_seconds=wall,
        output=spec.sink.uri,
        steps=steps,
        files=len(written),
        bytes_written=sum(w.bytes for w in written),
    )


def _budget_problem(spec: PipelineSpec, report: RunReport) -> str | None:
    budget = spec.errors
    if budget.max_errors is not None and report.rows_errored > budget.max_errors:
        return f"{report.rows_errored} row errors exceed errors.max_errors={budget.max_errors}"
    ratio = report.rows_errored / report.rows_in if report.rows_in else 0.0
    if budget.max_error_ratio is not None and ratio > budget.max_error_ratio:
        return f"{report.rows_errored} of {report.rows_in} rows failed ({ratio:.1%}), above errors.max_error_ratio={budget.max_error_ratio}"
    return None


def _top_reasons(fs, errors_dir: str) -> str:
    from collections import Counter

    counts = Counter((r["op"], r["reason"].split(":")[0]) for r in read_errors(fs, errors_dir, limit=10_000))
    return "; ".join(f"{op}: {reason} (x{n})" for (op, reason), n in counts.most_common(3))


_CHAINED = "The above exception was the direct cause of the following exception:"


def _failure_text(exc: BaseException) -> str:
    """The user's exception inside an engine's wrappers, as ``Type: message``.

    Engines that run tasks in other processes ship the task's traceback as text; its first
    chained error is the one the op raised.
    """
    text = str(exc)
    if _CHAINED in text:
        lines = [line for line in text.split(_CHAINED, 1)[0].splitlines() if line.strip()]
        if lines:
            return lines[-1].strip()
    inner = getattr(exc, "cause", None) or exc.__cause__
    if isinstance(inner, BaseException) and inner is not exc:
        return _failure_text(inner)
    return f"{type(exc).__name__}: {text.strip()}"


def run_pipeline(spec: PipelineSpec, options: RunOptions = RunOptions()) -> RunReport:
    """Run a pipeline to its sink and commit; return the report.

    Raises:
        PipelineSpecError, PlanError: before anything starts.
        SinkExistsError: mode ``error`` and the sink holds committed output.
        BudgetExceededError: too many row errors (nothing is published; errors are kept).
        RunError: the engine failed.
    """
    from connectors.registry import filesystem, strip_scheme

    _, optimized, engine, job = compile_pipeline(spec)
    sink = spec.sink
    storage = spec.storage.options
    fs = filesystem(sink.uri, storage)
    run_id = uuid.uuid4().hex[:12]
    layout = SinkLayout(strip_scheme(sink.uri), run_id)
    refuse_existing(fs, layout, sink.mode, sink.uri)
    side = SideOutputs(uri=sink.uri, storage_options=storage, stats_dir=layout.tmp_stats, errors_dir=layout.tmp_errors)
    ctx = RunContext(run_id=run_id, tmp_data=layout.tmp_data, side=side, storage_options=storage)
    start = time.monotonic()
    try:
        written = engine.execute(job, ctx, options)
    except DataflowError:
        raise
    except Exception as exc:
        raise RunError(
            f"run of '{spec.name}' failed on engine {engine.name}: {_failure_text(exc)[:500]} "
            f"(a bug in an op or the engine, not bad data; run with --debug for the traceback; partial output left under {layout.tmp})"
        ) from exc
    report = _report(spec, engine.name, read_stats(fs, layout.tmp_stats), written, time.monotonic() - start)
    report.errors = f"{sink.uri.rstrip('/')}/_errors/"
    problem = _budget_problem(spec, report)
    if problem:
        reasons = _top_reasons(fs, layout.tmp_errors)
        publish_errors(fs, layout)
        remove_tmp(fs, layout)
        report.failure = f"error budget exceeded: {problem}; nothing was published"
        raise BudgetExceededError(f"{report.failure}. Top reasons: {reasons}. Records are in {report.errors}", report)
    from dataflow import __version__

    commit_output(fs, layout, sink.mode, written, {
        "pipeline": spec.name,
        "pipeline_hash": pipeline_hash(spec),
        "dataflow_version": __version__,
        "engine": engine.name,
        "rows_in": report.rows_in,
        "rows_out": report.rows_out,
        "rows_errored": report.rows_errored,
    })
    report.published = True
    report.wall_seconds = time.monotonic() - start
    return report


def take_rows(spec: PipelineSpec, n: int, options: RunOptions = RunOptions()) -> list[dict[str, Any]]:
    """Run the pipeline on its first inputs, without a sink, and return ``n`` rows."""
    _, _, engine, job = compile_pipeline(spec)
    with tempfile.TemporaryDirectory(prefix="dataflow-take-") as tmp:
        side = SideOutputs(uri=tmp, storage_options={}, stats_dir=f"{tmp}/_stats", errors_dir=f"{tmp}/_errors")
        ctx = RunContext(run_id="take", tmp_data=f"{tmp}/data", side=side, storage_options=spec.storage.options)
        return engine.take(job, n, ctx, options)
