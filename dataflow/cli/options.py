"""Options and error handling shared by every command."""
from __future__ import annotations

import functools
import sys
import traceback

import click

from dataflow.errors import DataflowError, PipelineSpecError

__all__ = ["debug_option", "handle_errors", "set_option"]

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
            click.echo(str(exc) if isinstance(exc, PipelineSpecError) else f"error: {exc}", err=True)
            sys.exit(exc.exit_code)

    return wrapper
