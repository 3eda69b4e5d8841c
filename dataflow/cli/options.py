"""Options and error handling shared by every command."""
from __future__ import annotations

import functools
import sys
import traceback

import click

from dataflow.errors import DataflowError, PipelineSpecError, PlanError

__all__ = ["PIPELINE_LINES", "debug_option", "handle_errors", "set_option"]

#: Key of ``click.Context.meta`` holding (pipeline file, line map) of the pipeline a command loaded.
PIPELINE_LINES = "dataflow.pipeline_lines"

set_option = click.option(
    "--set", "overrides", multiple=True, metavar="KEY.PATH=VALUE",
    help="Override a pipeline value, e.g. --set source.uri=/data --set steps[1].params.max_side=128 (repeatable).",
)
debug_option = click.option("--debug", is_flag=True, help="Show tracebacks for errors.")


def handle_errors(fn):
    """Print DataflowErrors without a traceback (unless --debug) and exit with their code."""
    @functools.wraps(fn)
    def wrapper(*args, debug: bool = False, **kwargs):
        try:
            return fn(*args, **kwargs)
        except DataflowError as exc:
            if debug:
                traceback.print_exc()
            click.echo(_message(exc), err=True)
            sys.exit(exc.exit_code)

    return wrapper


def _message(exc: DataflowError) -> str:
    """Spec errors as they are; plan errors of steps as ``file:line:col: key: ...`` when a YAML file was loaded."""
    if isinstance(exc, PlanError) and exc.issues:
        from dataflow.dsl.parse import locate_issues

        ctx = click.get_current_context(silent=True)
        file, lines = ctx.meta.get(PIPELINE_LINES, (None, {})) if ctx else (None, {})
        return "\n".join(str(i) for i in locate_issues(exc.issues, file, lines))
    return str(exc) if isinstance(exc, PipelineSpecError) else f"error: {exc}"
