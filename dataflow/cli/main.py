"""The ``dataflow`` CLI: run, validate, explain, ops, version.

Exit codes: 0 success (row errors included), 1 run failure, 2 spec or usage error.
"""
from __future__ import annotations

import functools
import json
import sys
import traceback

import click

from dataflow.errors import DataflowError, PipelineSpecError

__all__ = ["cli", "main"]

_set_option = click.option(
    "--set", "overrides", multiple=True, metavar="KEY.PATH=VALUE",
    help="Override a pipeline value, e.g. --set source.uri=/data --set steps[1].params.max_side=128 (repeatable).",
)
_debug_option = click.option("--debug", is_flag=True, help="Show tracebacks for errors.")


def _handle_errors(fn):
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


def _load(path: str, overrides):
    from dataflow.dsl.parse import load_pipeline

    return load_pipeline(path, overrides=tuple(overrides))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Describe a multimodal data pipeline once (YAML or Python) and run it on Ray or Spark.

    \b
    Examples:
      dataflow run pipelines/thumbnails.yaml --set source.uri=./images
      dataflow explain pipelines/thumbnails.yaml
      dataflow ops image.resize
    """


@cli.command()
@click.argument("pipeline", type=click.Path(dir_okay=False))
@_set_option
@click.option("--address", envvar="RAY_ADDRESS", help="Ray cluster address; default: start a local Ray (env RAY_ADDRESS).")
@click.option("--object-store-memory", type=int, help="Bytes of object store for a local Ray.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), help="Write the run report as JSON to this file.")
@click.option("--quiet", is_flag=True, help="Print no progress and no summary.")
@_debug_option
@_handle_errors
def run(pipeline, overrides, address, object_store_memory, report_path, quiet):
    """Run PIPELINE to its sink and commit the output.

    \b
    Examples:
      dataflow run pipelines/thumbnails.yaml
      dataflow run p.yaml --set sink.mode=overwrite --report report.json
    """
    from dataflow.cli.summary import render_summary
    from dataflow.engines.base import RunOptions
    from dataflow.runner import BudgetExceededError, run_pipeline

    spec = _load(pipeline, overrides)
    options = RunOptions(address=address, object_store_memory=object_store_memory, progress=not quiet)
    try:
        report = run_pipeline(spec, options)
    except BudgetExceededError as exc:
        if report_path:
            _write_report(report_path, exc.report)
        if not quiet:
            click.echo(render_summary(exc.report), err=True)
        raise
    if report_path:
        _write_report(report_path, report)
    if not quiet:
        click.echo(render_summary(report))


def _write_report(path: str, report) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report.to_dict(), f, indent=2)


@cli.command()
@click.argument("pipeline", type=click.Path(dir_okay=False))
@_set_option
@_debug_option
@_handle_errors
def validate(pipeline, overrides):
    """Check PIPELINE (keys, ops, params, column flow, engine) without running it.

    Exits 0 when valid, 2 with every problem listed otherwise.
    """
    from dataflow.runner import compile_pipeline

    spec = _load(pipeline, overrides)
    compile_pipeline(spec)
    click.echo(f"{pipeline}: valid ({len(spec.steps)} steps)")


@cli.command()
@click.argument("pipeline", type=click.Path(dir_okay=False))
@_set_option
@_debug_option
@_handle_errors
def explain(pipeline, overrides):
    """Print PIPELINE's logical plan, optimized plan (engine per step) and lowered engine job."""
    from dataflow.runner import explain_pipeline

    click.echo(explain_pipeline(_load(pipeline, overrides)))


@cli.command()
@click.argument("name", required=False)
@_debug_option
@_handle_errors
def ops(name):
    """List every op with its params, or show the op NAME in full.

    \b
    Examples:
      dataflow ops
      dataflow ops image.resize
    """
    from dataflow.cli.ops_doc import describe_op, list_ops
    from dataflow.ops.registry import all_ops, get_op

    click.echo(describe_op(get_op(name)) if name else list_ops(all_ops()))


@cli.command()
def version():
    """Print the dataflow version and the engine versions installed."""
    import importlib.metadata

    from dataflow import __version__

    parts = [f"dataflow {__version__}"]
    for dist in ("ray", "pyspark", "pyarrow", "fsspec"):
        try:
            parts.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{dist} (not installed)")
    click.echo(", ".join(parts))


def main() -> None:
    """Entry point of the ``dataflow`` console script."""
    cli(prog_name="dataflow")
