"""Split a text column into columns with a regular expression's named groups (syslog lines)."""
from __future__ import annotations

import re
from typing import Literal

from pydantic_core import core_schema

from dataflow.columns import SOURCE
from dataflow.errors import RowError
from dataflow.ops.declare import op
from dataflow.ops.table.types import ColumnName

__all__ = ["Pattern", "check_pattern", "group_names", "java_pattern", "named_patterns", "parse_regex"]

_GROUP_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
_PYTHON_ONLY = (("(?P=", "named backreferences (?P=name)"), ("(?P>", "(?P>...)"), ("\\Z", "\\Z (use $)"))


def check_pattern(pattern: str) -> str:
    """Check that ``pattern`` compiles, has snake_case named groups and no Python-only syntax.

    Raises:
        ValueError: naming the problem.
    """
    for token, what in _PYTHON_ONLY:
        if token in pattern:
            raise ValueError(f"{what} is not supported (the pattern must mean the same on Spark's Java regex)")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from exc
    if not compiled.groupindex:
        raise ValueError("the pattern needs at least one named group, e.g. (?P<port>\\S+)")
    bad = [n for n in compiled.groupindex if not _GROUP_NAME_RE.match(n)]
    if bad:
        raise ValueError(f"group names must be snake_case column names, got {', '.join(bad)}")
    return pattern


def java_pattern(pattern: str) -> tuple[str, dict[str, int]]:
    """Return the pattern for Java's regex (named groups made plain) and each name's group number."""
    return re.sub(r"\(\?P<[a-z_][a-z0-9_]*>", "(", pattern), dict(re.compile(pattern).groupindex)


class Pattern(str):
    """A Python regular expression with named groups; checked when params are validated."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.no_info_after_validator_function(check_pattern, core_schema.str_schema())


def named_patterns(pattern: str | dict[str, str]) -> dict[str | None, str]:
    """The patterns of a ``pattern`` param, by name (None for a single pattern), in the order tried."""
    return dict(pattern) if isinstance(pattern, dict) else {None: pattern}


def group_names(pattern: str | dict[str, str]) -> list[str]:
    """Every named group of the pattern(s), in order of first appearance."""
    return list(dict.fromkeys(g for p in named_patterns(pattern).values() for g in re.compile(p).groupindex))


def _columns_after(columns_in: frozenset[str] | None, params) -> frozenset[str] | None:
    if columns_in is None:
        return None
    named = [params.pattern_column] if isinstance(params.pattern, dict) else []
    return frozenset(set(columns_in) | set(group_names(params.pattern)) | set(named))


@op(
    name="table.parse_regex",
    modality="table",
    inputs=("{column}",),
    input_types={"{column}": "string"},
    outputs=(SOURCE,),
    kind="flat_map",
    batch_format="row",
    output_columns=_columns_after,
)
def parse_regex(
    row: dict,
    *,
    pattern: Pattern | dict[str, Pattern],
    column: ColumnName = "text",
    on_mismatch: Literal["error", "drop", "null"] = "error",
    pattern_column: str = "pattern",
) -> list[dict]:
    """Search ``column`` for ``pattern``; each named group becomes a string column (empty groups are null).

    The searched column is kept (drop it with ``table.select``).

    Example: ``pattern: "(?P<host>\\\\S+) .*%(?P<event>[A-Z_]+)-\\\\d: .*port (?P<port>\\\\S+)"``.
    ``pattern`` may also name several patterns (one per log format, e.g. per switch vendor): the
    first that matches wins, ``pattern_column`` gets its name, and a group it lacks is null.

    Args:
        pattern: A regular expression with ``(?P<name>...)`` groups (a subset both Python and Java
            read alike), or a mapping of names to such patterns, tried in order.
        column: The text column to search.
        on_mismatch: A line no pattern matches: ``error`` (to ``_errors/``), ``drop`` it, or ``null`` groups.
        pattern_column: With named patterns, the column that gets the matching pattern's name.
    """
    text = row.get(column)
    name, match = None, None
    for name, regex in named_patterns(pattern).items():
        match = re.search(regex, text) if isinstance(text, str) else None
        if match is not None:
            break
    if match is None:
        if on_mismatch == "drop":
            return []
        if on_mismatch == "error":
            raise RowError(f"column '{column}' does not match the pattern") from ValueError(column)
    out = {g: (match.groupdict().get(g) or None) if match is not None else None for g in group_names(pattern)}
    if isinstance(pattern, dict):
        out[pattern_column] = name if match is not None else None
    return [out]
