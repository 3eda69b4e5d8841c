"""Read pipeline YAML keeping the line and column of every key; write it back."""
from __future__ import annotations

import os
import re
from typing import Any

import yaml

from dataflow.errors import PipelineSpecError, SpecIssue

__all__ = ["LineMap", "apply_overrides", "dump", "format_path", "load", "parse_key_path", "substitute_env"]

Path = tuple[str | int, ...]
LineMap = dict[Path, tuple[int, int]]

_ENV_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SEGMENT_RE = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def format_path(path: Path) -> str:
    """Render ``("steps", 1, "params")`` as ``steps[1].params``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _walk(node: yaml.Node, path: Path, lines: LineMap) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = (*path, key.value)
            lines[child] = (key.start_mark.line + 1, key.start_mark.column + 1)
            _walk(value, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            child = (*path, i)
            lines[child] = (item.start_mark.line + 1, item.start_mark.column + 1)
            _walk(item, child, lines)


def load(text: str, file: str | None = None) -> tuple[Any, LineMap]:
    """Parse YAML text into plain data and a map of key path -> (line, column), 1-based.

    Raises:
        PipelineSpecError: the text is not valid YAML (with the place of the syntax error).
    """
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise PipelineSpecError(
            [
                SpecIssue(
                    key="",
                    message=f"invalid YAML: {getattr(exc, 'problem', None) or exc}",
                    file=file,
                    line=mark.line + 1 if mark else None,
                    col=mark.column + 1 if mark else None,
                )
            ]
        ) from exc
    lines: LineMap = {}
    if node is not None:
        _walk(node, (), lines)
    return data, lines


def substitute_env(data: Any, environ: dict[str, str] | None = None, path: Path = ()) -> tuple[Any, list[tuple[Path, str]]]:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in strings; return the data and unset names."""
    env = os.environ if environ is None else environ
    missing: list[tuple[Path, str]] = []
    if isinstance(data, dict):
        out = {}
        for k, v in data.items():
            out[k], more = substitute_env(v, env, (*path, k))
            missing += more
        return out, missing
    if isinstance(data, list):
        items = []
        for i, v in enumerate(data):
            item, more = substitute_env(v, env, (*path, i))
            items.append(item)
            missing += more
        return items, missing
    if isinstance(data, str) and "${" in data:

        def repl(m: re.Match[str]) -> str:
            if m.group(1) in env:
                return env[m.group(1)]
            if m.group(2) is not None:
                return m.group(2)
            missing.append((path, m.group(1)))
            return m.group(0)

        return _ENV_RE.sub(repl, data), missing
    return data, missing


def parse_key_path(text: str) -> Path:
    """Read ``steps[1].params`` back as ``("steps", 1, "params")``.

    Raises:
        ValueError: the text is not a key path.
    """
    parts: list[str | int] = []
    pos = 0
    for m in _SEGMENT_RE.finditer(text):
        between = text[pos : m.start()]
        if between not in ("", "."):
            raise ValueError(text)
        parts.append(int(m.group(2)) if m.group(2) is not None else m.group(1))
        pos = m.end()
    if not parts or pos != len(text) or isinstance(parts[0], int):
        raise ValueError(text)
    return tuple(parts)


def apply_overrides(data: Any, overrides: list[str] | tuple[str, ...]) -> Any:
    """Apply ``key.path=value`` overrides (values parsed as YAML) to a copy of ``data``.

    Raises:
        PipelineSpecError: an override is malformed or indexes past a list.
    """
    import copy

    data = copy.deepcopy(data) if data is not None else {}
    issues = []
    for item in overrides:
        key, sep, raw = item.partition("=")
        try:
            if not sep:
                raise ValueError(item)
            path = parse_key_path(key.strip())
        except ValueError:
            issues.append(SpecIssue(key=key, file="--set", message=f"malformed override '{item}' (expected key.path=value, e.g. steps[0].params.max_side=128)"))
            continue
        target = data
        try:
            for part, nxt in zip(path, path[1:]):
                if isinstance(part, int):
                    target = target[part]
                else:
                    target = target.setdefault(part, [] if isinstance(nxt, int) else {})
            last = path[-1]
            if isinstance(last, int) and last >= len(target):
                raise IndexError(last)
            target[last] = yaml.safe_load(raw) if raw.strip() else ""
        except (IndexError, KeyError, TypeError, AttributeError):
            issues.append(SpecIssue(key=format_path(path), file="--set", message=f"override '{item}' does not match the pipeline's structure"))
    if issues:
        raise PipelineSpecError(issues)
    return data


def dump(data: Any) -> str:
    """Render plain data as block-style YAML in key order."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
