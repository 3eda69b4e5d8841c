"""Split a text column into columns with a regular expression's named groups (syslog lines)."""
from __future__ import annotations

import re
from typing import Literal

from pydantic_core import core_schema

from dataflow.columns import SOURCE
from dataflow.errors import RowError
from dataflow.ops.declare import op
from dataflow.ops.table.types import ColumnName

__all__ = ["Pattern", "check_pattern", "java_pattern", "parse_regex"]

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


def _columns_after(columns_in: frozenset[str] | None, params) -> frozenset[str] | None:
    if columns_in is None:
        return None
    return frozenset(set(columns_in) | set(re.compile(params.pattern).groupindex))


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
    pattern: Pattern,
    column: ColumnName = "text",
    on_mismatch: Literal["error", "drop", "null"] = "error",
) -> list[dict]:
    """Search ``column`` for ``pattern``; each named group becomes a string column (empty groups are null).

    The searched column is kept (drop it with ``table.select``).

    Example: ``pattern: "(?P<host>\\\\S+) .*%(?P<event>[A-Z_]+)-\\\\d: .*port (?P<port>\\\\S+)"``.

    Args:
        pattern: A regular expression with ``(?P<name>...)`` groups (a subset both Python and Java read alike).
        column: The text column to search.
        on_mismatch: A line the pattern does not match: ``error`` (to ``_errors/``), ``drop`` it, or ``null`` groups.
    """
    text = row.get(column)
    match = re.search(pattern, text) if isinstance(text, str) else None
    if match is None:
        if on_mismatch == "drop":
            return []
        if on_mismatch == "error":
            raise RowError(f"column '{column}' does not match the pattern") from ValueError(column)
    groups = re.compile(pattern).groupindex
    return [{name: (match.group(name) or None) if match is not None else None for name in groups}]
