"""The one planner: a spec to its checked logical and optimized plans, given the engines' capabilities.

The runner, ``dataflow validate`` / ``explain``, ``dataflow k8s render``, the report and the
broker's CLI all plan through ``plan_pipeline``; none re-plans with fewer checks.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dataflow.dsl.spec import PipelineSpec
from dataflow.plan.build import build_plan
from dataflow.plan.nodes import LogicalPlan
from dataflow.plan.rules import DEFAULT_RULES, AssignEngines, optimize
from dataflow.plan.validate import validate_plan

__all__ = ["plan_pipeline"]


def plan_pipeline(spec: PipelineSpec, engines: Mapping[str, Any]) -> tuple[LogicalPlan, LogicalPlan]:
    """Return the (logical, optimized) plans of ``spec``, checked.

    Column flow and engine capability are reported together, then the default rules run in
    order (engine assignment, map fusion, handoffs between engines, draft JPEG decodes).

    Args:
        spec: The pipeline.
        engines: The engines the plan may use, name -> ``EngineCaps`` (``dataflow.engines.registry.engine_caps``).

    Raises:
        PlanError: every column-flow and capability problem, in one error.
    """
    assign = AssignEngines(engines)
    logical = validate_plan(build_plan(spec), engines=assign)
    return logical, optimize(logical, (assign, *DEFAULT_RULES))
