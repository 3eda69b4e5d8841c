"""Plan checks: column flow between steps."""
from __future__ import annotations

import pydantic

from dataflow.errors import PlanError
from dataflow.ops.registry import all_ops
from dataflow.plan.nodes import LogicalPlan, Read, Step, source_columns

__all__ = ["validate_plan"]


def _defaults(spec):
    try:
        return spec.params()
    except pydantic.ValidationError:  # required params: fall back to the declared names
        return None


def _outputs_with_defaults(spec) -> tuple[str, ...]:
    params = _defaults(spec)
    return spec.columns(params)[1] if params is not None else spec.outputs


def validate_plan(plan: LogicalPlan) -> LogicalPlan:
    """Check that every step finds the columns it reads.

    Raises:
        PlanError: listing each step that reads a column no earlier node writes, with a fix.
    """
    problems = []
    columns = None
    for node in plan.nodes:
        if isinstance(node, Read):
            columns = source_columns(node.source)
        elif isinstance(node, Step):
            inputs, outputs = node.op.columns(node.params)
            if columns is not None:
                for col in inputs:
                    if col not in columns:
                        makers = [s.name for s in all_ops() if col in _outputs_with_defaults(s) and s.name != node.op.name]
                        makers.sort(key=lambda n: (not n.startswith(node.op.modality.value + "."), n))
                        fix = f"; add {makers[0]} before it" if makers else ""
                        problems.append(
                            f"steps[{node.index}] ({node.op.name}) needs column '{col}', which no earlier step or the "
                            f"'{plan.spec.source.format}' source provides (have: {', '.join(sorted(columns))}){fix}"
                        )
            if node.op.output_columns is not None:
                columns = node.op.output_columns(columns, node.params)
            elif columns is not None:
                columns = columns | set(outputs)
    if problems:
        raise PlanError("\n".join(problems))
    return plan
