"""The dataflow exception hierarchy.

``DataflowError`` and its subclasses are errors the user can act on; the CLI prints them without a
traceback. ``OpDefinitionError`` is a developer error raised when an ``@op`` declaration is wrong.
``RowError`` is raised by ops for bad data and is caught by the engine, which sends the row to the
error sink.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ConnectorError",
    "DataflowError",
    "EngineCapabilityError",
    "OpDefinitionError",
    "PipelineSpecError",
    "PlanError",
    "RowError",
    "RunError",
    "SinkExistsError",
    "SpecIssue",
    "UnknownOpError",
]


class DataflowError(Exception):
    """An error the user can act on."""

    exit_code = 1


@dataclass(frozen=True)
class SpecIssue:
    """One problem found in a pipeline spec, with its place in the source file."""

    key: str
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    hint: str | None = None

    def __str__(self) -> str:
        where = ":".join(str(p) for p in (self.file or "<pipeline>", self.line, self.col) if p is not None)
        text = f"{where}: {self.key or '<root>'}: {self.message}"
        return f"{text}; {self.hint}" if self.hint else text


class PipelineSpecError(DataflowError):
    """A pipeline YAML or DSL is invalid; ``issues`` lists every problem found."""

    exit_code = 2

    def __init__(self, issues: list[SpecIssue]):
        self.issues = list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))


class UnknownOpError(PipelineSpecError):
    """An op name that is not registered; carries did-you-mean suggestions."""

    def __init__(self, name: str, suggestions: list[str], message: str | None = None):
        self.name = name
        self.suggestions = suggestions
        self.message = message or f"unknown op '{name}'"
        self.hint = f"did you mean '{suggestions[0]}'?" if suggestions else "run 'dataflow ops' to list ops"
        super().__init__([SpecIssue(key="op", message=self.message, hint=self.hint)])


class PlanError(DataflowError):
    """The pipeline is well-formed but cannot be planned (column or modality flow).

    ``issues`` lists the problems of named steps (key path, no file yet); ``locate`` gives them
    the file, line and column of a YAML pipeline.
    """

    exit_code = 2

    def __init__(self, message: str | None = None, issues: list[SpecIssue] | tuple[SpecIssue, ...] = ()):
        self.issues = list(issues)
        super().__init__(message if message is not None else "\n".join(str(i) for i in self.issues))


class EngineCapabilityError(PlanError):
    """An engine cannot run a plan node; says what to set instead."""

    def __init__(self, engine: str, what: str = "", instead: str | None = None, issues: list[SpecIssue] | tuple[SpecIssue, ...] = ()):
        self.engine = engine
        msg = f"engine '{engine}' cannot run {what}"
        super().__init__(None if issues else (f"{msg}; {instead}" if instead else msg), issues)


class ConnectorError(DataflowError):
    """Unknown protocol or format, or a missing optional dependency (with the install hint)."""

    exit_code = 2


class SinkExistsError(DataflowError):
    """The sink already holds committed output and the sink mode is ``error``."""

    exit_code = 2


class RunError(DataflowError):
    """A run failed: a task crashed, or the error budget was exceeded."""

    exit_code = 1


class OpDefinitionError(TypeError):
    """An ``@op`` declaration breaks a rule; raised when the module is imported."""


class RowError(Exception):
    """Raised by an op for one bad row; the engine sends the row to the error sink and goes on."""
