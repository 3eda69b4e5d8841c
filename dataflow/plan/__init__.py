"""The logical plan: build, validate, optimize and explain, with no engine objects."""
from dataflow.plan.build import build_plan
from dataflow.plan.explain import render_logical, render_optimized
from dataflow.plan.nodes import LogicalPlan
from dataflow.plan.rules import DEFAULT_RULES, optimize
from dataflow.plan.validate import validate_plan

__all__ = ["DEFAULT_RULES", "LogicalPlan", "build_plan", "optimize", "render_logical", "render_optimized", "validate_plan"]
