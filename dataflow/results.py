"""Run a pipeline for results held in memory: the engine's own dataset, no output files.

``Pipeline.to_ray``/``to_arrow``/``to_pandas``/``to_huggingface``/``to_spark``/``count`` run the
pipeline once through ``hold_pipeline``: the engine (``Engine.hold``) keeps the output where it
computed it (Ray: materialized blocks in the object store; Spark: a persisted DataFrame) and
returns it with its row count. The steps' counters and row errors still go to a staging folder
(``<folder>/_stats``, ``<folder>/_errors``), so the report, the balance check and the error
budget work as for a run to a sink; no data file is written there.
"""
from __future__ import annotations

import posixpath
import time
import uuid
from dataclasses import dataclass
from typing import Any

from dataflow.dsl.spec import PipelineSpec
from dataflow.engines.base import RunContext, RunOptions
from dataflow.runtime.report import RunReport
from dataflow.runtime.settings import RunSettings

__all__ = ["Held", "hold_pipeline"]


@dataclass(frozen=True)
class Held:
    """A run's output kept in memory: ``kind`` is ``arrow`` (a ``pyarrow.Table``), ``ray`` (a materialized Dataset) or ``spark`` (a DataFrame)."""

    kind: str
    value: Any
    report: RunReport


def hold_pipeline(spec: PipelineSpec, options: RunOptions) -> Held | None:
    """Run ``spec`` (its sink: the staging folder for counters and errors) into the engine's memory.

    A mixed plan (Spark, then Ray) still hands its rows from one engine to the next through
    Parquet; its last engine holds the output. Returns None where the engine cannot hold its
    output: the caller then runs it to a staged Parquet sink.

    Raises:
        UnbalancedCountsError, BudgetExceededError: as ``run_pipeline``.
        RunError: the engine failed.
    """
    from connectors.formats import WrittenFile
    from connectors.registry import filesystem
    from dataflow.engines.registry import compile_pipeline
    from dataflow.errors import DataflowError, RunError
    from dataflow.runtime.held import held
    from dataflow.runner import BudgetExceededError, UnbalancedCountsError, _chains
    from dataflow.runtime.failure import failure_text
    from dataflow.runtime.report import budget_problem, run_report, top_reasons
    from dataflow.runtime.stage import StepStats
    from dataflow.runtime.stats import SideOutputs, balance_problems, read_stats

    start = time.monotonic()
    source = spec.source
    if source.in_memory and not spec.all_steps and spec.engine != "spark":
        table = held(source.uri)
        import pyarrow as pa

        if isinstance(table, pa.Table):  # nothing to compute: the held table itself (its buffers shared)
            n = table.num_rows
            stats = {-1: StepStats(rows_in=n, rows_out=n)}
            return Held("arrow", table, run_report(spec, "memory", stats, [WrittenFile("<memory>", n, table.nbytes)], 0.0))
    logical, optimized, engine, job = compile_pipeline(spec)
    if not hasattr(engine, "hold"):
        return None
    _check_input_types(spec, logical)
    folder = spec.sink.uri.rstrip("/")
    side = SideOutputs(uri=folder, storage_options={}, stats_dir=posixpath.join(folder, "_stats"), errors_dir=posixpath.join(folder, "_errors"))
    ctx = RunContext(run_id=uuid.uuid4().hex[:12], tmp_data=posixpath.join(folder, "_tmp"), side=side, settings=RunSettings(storage_options=spec.storage.options))
    try:
        value, rows = engine.hold(job, ctx, options)
    except DataflowError:
        raise
    except Exception as exc:
        raise RunError(f"run of '{spec.name}' failed on engine {engine.name}: {failure_text(exc)[:500]}") from exc
    fs = filesystem(folder, {})
    stats = read_stats(fs, [side.stats_dir])
    report = run_report(spec, engine.name, stats, [WrittenFile("<memory>", rows, 0)], time.monotonic() - start)
    problems = balance_problems(_chains(optimized), stats, rows)
    if problems:
        report.failure = "row counts do not balance"
        raise UnbalancedCountsError(f"run of '{spec.name}' on {engine.name}: row counts do not balance (a bug in an op or the engine, not bad data): {'; '.join(problems)}", report)
    problem = budget_problem(spec, report)
    if problem:
        report.failure = f"error budget exceeded: {problem}"
        raise BudgetExceededError(f"{report.failure}. Top reasons: {top_reasons(fs, [side.errors_dir])}. Records are in {report.errors}", report)
    return Held(getattr(engine, "engines", [engine])[-1].name, value, report)  # a mixed plan's output is its last engine's


def _check_input_types(spec: PipelineSpec, logical) -> None:
    """Wrong column types of a Parquet or held Arrow input are plan errors, as in ``run_pipeline``."""
    from connectors.registry import list_files, parquet_schema
    from dataflow.plan.input_types import check_input_types
    from dataflow.runtime.held import held_schema

    source, storage = spec.source, spec.storage.options
    if source.format != "parquet":
        return
    if source.in_memory:
        schema = held_schema(source.uri)
    else:
        files = list_files(source.uri, source.format, source.options, storage)
        schema = parquet_schema(files[0], storage) if files else None
    if schema is not None:
        check_input_types(logical, schema)
