"""Turn YAML data into a validated PipelineSpec, reporting every problem with its place."""
from __future__ import annotations

import dataclasses
import difflib
import typing
from typing import Any

import pydantic

from dataflow.dsl.spec import PipelineSpec
from dataflow.dsl.yaml_io import LineMap, apply_overrides, format_path, load, parse_key_path, substitute_env
from dataflow.errors import PipelineSpecError, SpecIssue, UnknownOpError

__all__ = ["load_pipeline", "load_pipeline_with_lines", "locate_issues", "parse_pipeline"]


def _submodel(model: Any, part: str | int) -> Any:
    """Follow one path segment through the annotations of a pydantic model."""
    if isinstance(model, type) and issubclass(model, pydantic.BaseModel):
        field = model.model_fields.get(str(part))
        return field.annotation if field else None
    origin = typing.get_origin(model)
    args = [a for a in typing.get_args(model) if a is not type(None)]
    if origin in (list, tuple) and isinstance(part, int) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)) and args:
        return _submodel(args[0], part)
    return None


def _model_at(root: Any, path: tuple) -> Any:
    model = root
    for part in path:
        model = _submodel(model, part)
        if model is None:
            return None
    origin_args = [a for a in typing.get_args(model) if a is not type(None)]
    if typing.get_origin(model) is not None and origin_args and isinstance(origin_args[0], type):
        model = origin_args[0]
    return model


def _hint(word: str, choices: list[str]) -> str | None:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


def _issues_from_validation(
    exc: pydantic.ValidationError, root: Any, prefix: tuple, lines: LineMap, file: str | None, what: str | None = None
) -> list[SpecIssue]:
    issues = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        path = (*prefix, *loc)
        line, col = lines.get(path) or lines.get(path[:-1]) or lines.get(prefix) or (None, None)
        kind = err["type"]
        hint = None
        if kind == "extra_forbidden":
            model = _model_at(root, loc[:-1])
            allowed = sorted(model.model_fields) if isinstance(model, type) and issubclass(model, pydantic.BaseModel) else []
            owner = what or (format_path(path[:-1]) or "pipeline")
            message = f"unknown key of {owner} (expected one of: {', '.join(allowed)})"
            hint = _hint(str(loc[-1]), allowed)
        elif kind == "literal_error":
            expected = err.get("ctx", {}).get("expected", "")
            message = f"invalid value {err.get('input')!r} (expected {expected})"
            choices = [c.strip(" '\"") for c in expected.replace(" or ", ",").split(",")]
            hint = _hint(str(err.get("input")), choices)
        elif kind == "missing":
            message = "required key is missing"
        else:
            message = f"{err['msg'][0].lower()}{err['msg'][1:]} (got {err.get('input')!r})"
        issues.append(SpecIssue(key=format_path(path), message=message, file=file, line=line, col=col, hint=hint))
    return issues


def _raw_steps(data: dict) -> list[tuple[tuple, Any]]:
    """(key path, step data) of every step in the raw document, as ``PipelineSpec.indexed_steps`` orders them."""
    out: list[tuple[tuple, Any]] = []
    stages = data.get("stages")
    if isinstance(stages, list) and stages:
        for i, stage in enumerate(stages):
            steps = stage.get("steps") if isinstance(stage, dict) else None
            out += [(("stages", i, "steps", j), step) for j, step in enumerate(steps if isinstance(steps, list) else [])]
    else:
        steps = data.get("steps")
        out += [(("steps", i), step) for i, step in enumerate(steps if isinstance(steps, list) else [])]
    sources = data.get("sources")
    for name, src in (sources.items() if isinstance(sources, dict) else []):
        steps = src.get("steps") if isinstance(src, dict) else None
        out += [(("sources", name, "steps", j), step) for j, step in enumerate(steps if isinstance(steps, list) else [])]
    return out


def _check_source_refs(spec, params: dict, path: tuple, data: dict, lines: LineMap, file: str | None) -> list[SpecIssue]:
    """Params typed ``SourceName`` must name an entry of ``sources:``."""
    from dataflow.ops.table.types import SourceName

    declared = sorted(data.get("sources") or {}) if isinstance(data.get("sources"), dict) else []
    issues = []
    for name, field in spec.params.model_fields.items():
        if field.annotation is SourceName and isinstance(params.get(name), str) and params[name] not in declared:
            key = (*path, "params", name)
            line, col = lines.get(key, (None, None))
            have = ", ".join(declared) or "none declared"
            issues.append(SpecIssue(
                key=format_path(key), file=file, line=line, col=col,
                message=f"'{params[name]}' is not a named source (expected one of: {have}); declare it under sources:",
                hint=_hint(params[name], declared),
            ))
    return issues


def _missing_requirements(spec, params) -> tuple[list[str], str]:
    """Modules the op needs with these params (``requires``, and ``needs`` by value) that do not import here, and the pip line."""
    return spec.missing(params if isinstance(params, dict) else None)


def _check_steps(data: dict, lines: LineMap, file: str | None, installed: bool = True, specs: dict | None = None) -> list[SpecIssue]:
    """Check each step's op and params; ``specs`` (key path -> ``StepSpec``) keep the validated param models for the plan."""
    from dataflow.ops.registry import get_op

    issues = []
    specs = specs or {}
    for path, step in _raw_steps(data):
        if not isinstance(step, dict) or not isinstance(step.get("op"), str):
            continue
        key = (*path, "op")
        line, col = lines.get(key, (None, None))
        assumed = ""
        try:
            spec = get_op(step["op"])
        except UnknownOpError as exc:
            issues.append(SpecIssue(key=format_path(key), message=exc.message, file=file, line=line, col=col, hint=exc.hint))
            if not exc.suggestions:
                continue
            # Check the params against the likely op too, so one run reports both typos.
            spec = get_op(exc.suggestions[0])
            assumed = f", assuming 'op: {exc.suggestions[0]}'"
        missing, install = ([], "") if assumed or not installed else _missing_requirements(spec, step.get("params"))
        if missing:
            issues.append(SpecIssue(
                key=format_path(key), file=file, line=line, col=col,
                message=f"op '{spec.name}' needs {', '.join(missing)}, which is not installed",
                hint=f"run: {install}",
            ))
        params = step.get("params") or {}
        if not isinstance(params, dict):
            continue
        odd = [k for k in params if not isinstance(k, str)]
        if odd:
            pkey = (*path, "params")
            line, col = lines.get(pkey, (None, None))
            issues.append(SpecIssue(key=format_path(pkey), file=file, line=line, col=col,
                                    message=f"parameter names must be strings, got {', '.join(repr(k) for k in odd)} "
                                    "(YAML reads on/off/yes/no as booleans: quote the key)"))
            continue
        try:
            # The one validation: the plan (``build_plan``) takes the model the step keeps.
            specs[path].params_of(spec) if path in specs and not assumed else spec.params(**params)
        except pydantic.ValidationError as exc:
            issues += _issues_from_validation(exc, spec.params, (*path, "params"), lines, file, what=f"op '{spec.name}' params{assumed}")
        issues += _check_source_refs(spec, params, path, data, lines, file)
    return issues


def parse_pipeline(
    data: Any,
    *,
    file: str | None = None,
    lines: LineMap | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    environ: dict[str, str] | None = None,
    installed: bool = True,
) -> PipelineSpec:
    """Validate pipeline data (as loaded from YAML) and return the spec.

    Args:
        data: The loaded YAML document.
        file: The file it came from, for messages.
        lines: Key path -> (line, column) from ``yaml_io.load``.
        overrides: ``key.path=value`` strings applied first.
        environ: Variables for ``${VAR}`` substitution (default: the process environment).
        installed: Require each op's optional modules here; ``False`` for a spec that runs
            elsewhere (a cluster image): params are still validated from the op's declaration.

    Raises:
        PipelineSpecError: listing every problem at once.
    """
    lines = lines or {}
    data = apply_overrides(data, overrides) if overrides else data
    if not isinstance(data, dict):
        raise PipelineSpecError([SpecIssue(key="", message="a pipeline must be a mapping (expected keys: name, source, steps, sink)", file=file, line=1, col=1)])
    data, missing = substitute_env(data, environ)
    issues = [
        SpecIssue(key=format_path(p), message=f"environment variable '{name}' is not set (use ${{{name}:-default}} for a default)", file=file, line=lines.get(p, (None, None))[0], col=lines.get(p, (None, None))[1])
        for p, name in missing
    ]
    spec = None
    try:
        spec = PipelineSpec.model_validate(data)
    except pydantic.ValidationError as exc:
        issues += _issues_from_validation(exc, PipelineSpec, (), lines, file)
    issues += _check_steps(data, lines, file, installed, dict(spec.indexed_steps()) if spec else None)
    if issues:
        issues.sort(key=lambda i: (i.line or 0, i.col or 0))
        raise PipelineSpecError(issues)
    return spec


def load_pipeline_with_lines(
    path: str, *, overrides: list[str] | tuple[str, ...] = (), environ: dict[str, str] | None = None
) -> tuple[PipelineSpec, LineMap]:
    """Read and validate a pipeline YAML file; return the spec and its key path -> (line, column) map.

    Raises:
        PipelineSpecError: the file is unreadable, not YAML, or not a valid pipeline.
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise PipelineSpecError([SpecIssue(key="", message=f"cannot read pipeline file: {exc.strerror}", file=path)]) from exc
    data, lines = load(text, file=path)
    return parse_pipeline(data, file=path, lines=lines, overrides=overrides, environ=environ), lines


def load_pipeline(path: str, *, overrides: list[str] | tuple[str, ...] = (), environ: dict[str, str] | None = None) -> PipelineSpec:
    """Read and validate a pipeline YAML file.

    Raises:
        PipelineSpecError: the file is unreadable, not YAML, or not a valid pipeline.
    """
    return load_pipeline_with_lines(path, overrides=overrides, environ=environ)[0]


def locate_issues(issues: list[SpecIssue], file: str | None, lines: LineMap) -> list[SpecIssue]:
    """Give issues keyed by path (a plan's, e.g. ``steps[1]``) the file, line and column of that key, in file order."""
    located = []
    for issue in issues:
        try:
            path = parse_key_path(issue.key)
        except ValueError:
            path = ()
        line, col = next((lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in lines), (issue.line, issue.col))
        located.append(dataclasses.replace(issue, file=issue.file or file, line=line, col=col))
    return sorted(located, key=lambda i: (i.line or 0, i.col or 0))
