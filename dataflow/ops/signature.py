"""What ``@op`` reads from a function: its keyword-only parameters and its Google-style ``Args:`` docs."""
from __future__ import annotations

import inspect
import re
import typing
from typing import Any, Callable

from dataflow.errors import OpDefinitionError

__all__ = ["param_fields", "parse_args_doc"]


def parse_args_doc(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its summary and its ``Args:`` entries."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary = lines[0].strip() if lines else ""
    args: dict[str, str] = {}
    in_args, current = False, None
    for line in lines[1:]:
        stripped = line.strip()
        if stripped in {"Args:", "Arguments:"}:
            in_args = True
            continue
        if in_args:
            if stripped.endswith(":") and not line.startswith(" "):
                break  # the next section
            match = re.match(r"^\s{2,8}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
            if match and (len(line) - len(line.lstrip())) <= 8 and not line.startswith(" " * 9):
                current = match.group(1)
                args[current] = match.group(2).strip()
            elif current and stripped:
                args[current] = f"{args[current]} {stripped}"
            elif not stripped and current:
                current = None
    return summary, args


def param_fields(target: Callable[..., Any], op_name: str, first: bool) -> tuple[dict[str, Any], list[str]]:
    """Build pydantic fields from the keyword-only parameters of ``target``."""
    sig = inspect.signature(target)
    params = list(sig.parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    if first:
        if not params or params[0].name not in {"batch", "row"}:
            raise OpDefinitionError(f"op '{op_name}': the first parameter must be 'batch' or 'row'")
        params = params[1:]
    hints = typing.get_type_hints(target)
    result: dict[str, Any] = {}
    names = []
    for p in params:
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise OpDefinitionError(f"op '{op_name}': parameter '{p.name}' must be keyword-only (put it after '*')")
        if p.name not in hints:
            raise OpDefinitionError(f"op '{op_name}': parameter '{p.name}' has no type annotation")
        default = ... if p.default is inspect.Parameter.empty else p.default
        result[p.name] = (hints[p.name], default)
        names.append(p.name)
    return result, names
