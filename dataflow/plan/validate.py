"""Plan checks: column flow between steps, and the expressions and column names in params."""
from __future__ import annotations

import difflib
import typing

import pydantic

from dataflow.columns import is_working, working_column_reason
from dataflow.errors import EngineCapabilityError, PlanError, SpecIssue
from dataflow.ops.registry import all_ops
from dataflow.plan.nodes import LogicalPlan, Read, Step, source_columns
from dataflow.plan.rules import Rule

__all__ = ["param_reads", "validate_plan"]


def _defaults(spec):
    try:
        return spec.params()
    except pydantic.ValidationError:  # required params: fall back to the declared names
        return None


def _outputs_with_defaults(spec) -> tuple[str, ...]:
    params = _defaults(spec)
    return spec.columns(params)[1] if params is not None else spec.outputs


def _kinds(annotation) -> set[type]:
    """The classes inside an annotation such as ``dict[ColumnName, Expr] | None``."""
    out = {annotation} if isinstance(annotation, type) else set()
    for arg in typing.get_args(annotation):
        out |= _kinds(arg)
    return out


def param_reads(params: pydantic.BaseModel) -> tuple[frozenset[str], frozenset[str]]:
    """Columns a step's params read, and the ``:var`` markers they use.

    Params typed ``ColumnName`` name a column; ``Expr``/``AggExpr``/``WindowAggExpr``/``WindowExpr`` values are
    parsed. In ``ColumnExprs`` (``table.with_columns``) an expression may also read the
    names defined before it.
    """
    from dataflow.ops.table import sql as E
    from dataflow.ops.table import sql_params as P
    from dataflow.ops.table.json_tuple import ColumnExprs, entries
    from dataflow.ops.table.types import ColumnName

    columns: set[str] = set()
    markers: set[str] = set()
    for name, field in type(params).model_fields.items():
        kinds, value = _kinds(field.annotation), getattr(params, name)
        if value is None:
            continue
        if ColumnName in kinds:
            names = list(value) if isinstance(value, (list, tuple, dict)) else [value]
            columns |= {str(n) for n in names}
        if ColumnExprs in kinds:  # table.with_columns: an expression may read the columns set before it
            defined: set[str] = set()
            for names, node in entries(value):
                columns |= set(E.columns_of(node)) - defined
                markers |= E.params_of(node)
                defined |= set(names)
            continue
        exprs = kinds & {P.Expr, P.AggExpr, P.WindowAggExpr, P.WindowExpr}
        if not exprs:
            continue
        texts = list(value.items()) if isinstance(value, dict) else [(None, value)]
        defined = set()
        for out_name, text in texts:
            if P.WindowExpr in exprs:
                node = E.parse_window(text)
            else:
                node = E.parse(text) if P.Expr in exprs else E.parse_aggregation(text, implicit_x=P.WindowAggExpr in exprs)
            columns |= set(E.columns_of(node)) - defined
            markers |= E.params_of(node)
            if out_name is not None and P.Expr in exprs:
                defined.add(out_name)
    return frozenset(columns), frozenset(markers)


def _var_problems(node: Step, markers: frozenset[str]) -> list[SpecIssue]:
    if not markers:
        return []
    given = set((getattr(node.params, "vars", None) or {}).keys())
    missing = sorted(markers - given)
    if not missing:
        return []
    where = "vars" if "vars" in type(node.params).model_fields else "vars (this op takes none)"
    have = ", ".join(sorted(given)) or "none"
    return [SpecIssue(key=node.path, message=f"{node.op.name} uses :{', :'.join(missing)} but {where} gives no value for it (have: {have})")]


def _declared_problems(source, key: str) -> list[SpecIssue]:
    """A declared input schema (``options.schema``) naming a column spelled like dataflow's working columns."""
    schema = source.options.get("schema")
    names = schema if isinstance(schema, dict) else {}
    return [SpecIssue(key=f"{key}.options.schema.{name}", message=working_column_reason(name)) for name in names if is_working(str(name))]


def _chain_problems(nodes, source_format: str, key: str = "source") -> list[SpecIssue]:
    problems = []
    columns = None
    for node in nodes:
        if isinstance(node, Read):
            columns = source_columns(node.source)
            problems += _declared_problems(node.source, key)
        elif isinstance(node, Step):
            inputs, outputs = node.op.columns(node.params)
            reads, markers = param_reads(node.params)
            problems += _var_problems(node, markers)
            if columns is not None:
                for col in dict.fromkeys([*inputs, *sorted(reads)]):
                    if col not in columns:
                        makers = [s.name for s in all_ops() if col in _outputs_with_defaults(s) and s.name != node.op.name]
                        makers.sort(key=lambda n: (not n.startswith(node.op.modality.value + "."), n))
                        close = difflib.get_close_matches(col, sorted(columns), n=1)
                        problems.append(SpecIssue(
                            key=node.path,
                            message=f"{node.op.name} needs column '{col}', which no earlier step or the "
                            f"'{source_format}' source provides (have: {', '.join(sorted(columns))})",
                            hint=f"did you mean '{close[0]}'?" if close else f"add {makers[0]} before it" if makers else None,
                        ))
            if node.op.output_columns is not None:
                columns = node.op.output_columns(columns, node.params)
            elif columns is not None:
                columns = columns | set(outputs)
    return problems


def validate_plan(plan: LogicalPlan, engines: Rule | None = None) -> LogicalPlan:
    """Check that every step finds the columns it reads and the ``:var`` values it uses.

    Args:
        plan: The logical plan.
        engines: The run's engine assignment (``AssignEngines``); its capability problems are
            reported in the same error.

    Raises:
        PlanError: one issue per problem, keyed by the step's path (e.g. ``steps[1]``): each step
            that reads a column no earlier node writes (with a fix), each column of a declared
            input schema spelled like dataflow's working columns (``__df_<name>__``), and each
            step its engine cannot run.
    """
    problems = _chain_problems(plan.nodes, plan.spec.source.format)
    for side in plan.inputs:
        problems += _chain_problems(side.nodes, side.nodes[0].source.format, f"sources.{side.name}")
    if engines is not None:
        try:
            engines.apply(plan)
        except EngineCapabilityError as exc:
            problems += exc.issues or [SpecIssue(key="engine", message=str(exc))]
    if problems:
        raise PlanError(issues=problems)
    return plan
