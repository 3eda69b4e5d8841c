"""The engines by name, their declared capabilities, and compiling a spec on the engines it plans to.

Engine classes are named by ``"module:Class"`` strings and imported on use; their modules import
neither Ray nor PySpark (sessions start in ``execute``), so the capabilities are read without them.
"""
from __future__ import annotations

import importlib
import importlib.util

from dataflow.dsl.spec import PipelineSpec
from dataflow.engines.base import Engine, EngineCaps
from dataflow.plan import render_logical, render_optimized
from dataflow.plan.handoff import split_at_handoffs
from dataflow.plan.planner import plan_pipeline

__all__ = ["ENGINES", "compile_pipeline", "engine_caps", "explain_pipeline", "get_engine"]

ENGINES = {"ray": "dataflow.engines.ray.engine:RayEngine", "spark": "dataflow.engines.spark.engine:SparkEngine"}


def engine_class(name: str) -> type[Engine]:
    """Return the engine class called ``name``."""
    module, _, cls = ENGINES[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def get_engine(name: str) -> Engine:
    """Return an engine instance by name."""
    return engine_class(name)()


def _installed(caps: EngineCaps) -> bool:
    return caps.requires is None or importlib.util.find_spec(caps.requires) is not None


def engine_caps(installed_only: bool = True) -> dict[str, EngineCaps]:
    """Return name -> capabilities of the engines; ``installed_only=False`` for a cluster image that has them all."""
    caps = {name: engine_class(name).caps for name in ENGINES}
    return {name: c for name, c in caps.items() if not installed_only or _installed(c)}


def compile_pipeline(spec: PipelineSpec):
    """Return (logical plan, optimized plan, engine, compiled job); no cluster is started.

    A plan that hands rows from one engine to another gets a ``MixedEngine`` running its segments.
    """
    from dataflow.engines.mixed import MixedEngine

    logical, optimized = plan_pipeline(spec, engine_caps())
    if optimized.engine is None:
        engine: Engine = MixedEngine([get_engine(seg.engine) for seg in split_at_handoffs(optimized)])
    else:
        engine = get_engine(optimized.engine)
    return logical, optimized, engine, engine.compile(optimized)


def explain_pipeline(spec: PipelineSpec) -> str:
    """The three sections of ``dataflow explain``."""
    logical, optimized, _, job = compile_pipeline(spec)
    return "\n\n".join([render_logical(logical), render_optimized(optimized), job.describe()])
