"""The ``dataflow`` CLI: run, validate, explain, ops, version, up/down and the command groups.

Exit codes: 0 success (row errors included), 1 run failure, 2 spec or usage error.
"""
from __future__ import annotations

import json
import sys

import click

from dataflow import __version__
from dataflow.cli.options import debug_option as _debug_option
from dataflow.cli.options import handle_errors as _handle_errors
from dataflow.cli.options import set_option as _set_option
from dataflow.cli.clusters import broker_options as _broker_options

__all__ = ["cli", "main"]

def _load(path: str, overrides):
    """Load PIPELINE; its line map stays in the click context so plan errors can name their lines."""
    from dataflow.cli.options import PIPELINE_LINES
    from dataflow.dsl.parse import load_pipeline_with_lines

    spec, lines = load_pipeline_with_lines(path, overrides=tuple(overrides))
    click.get_current_context().meta[PIPELINE_LINES] = (path, lines)
    return spec


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="dataflow", message="%(prog)s %(version)s")
def cli() -> None:
    """Describe a multimodal data pipeline once (YAML or Python) and run it on Ray or Spark.

    \b
    Examples:
      dataflow run pipelines/thumbnails.yaml --set source.uri=./images
      dataflow explain pipelines/thumbnails.yaml
      dataflow ops image.resize
      dataflow report ./out/thumbs --open
    """


@cli.command()
@click.argument("pipeline", type=click.Path(dir_okay=False))
@_set_option
@click.option("--address", envvar="RAY_ADDRESS", help="Ray cluster address; default: start a local Ray (env RAY_ADDRESS).")
@click.option("--object-store-memory", type=int, help="Bytes of object store for a local Ray (env DATAFLOW_RAY_OBJECT_STORE_MEMORY; default Ray's, 30% of RAM).")
@click.option("--spill-dir", help="Folder a local Ray spills its object store to (env DATAFLOW_RAY_SPILL_DIR; default Ray's temp folder).")
@click.option("--shuffle-partitions", type=int, help="Ray: partitions of each global step's shuffle (env DATAFLOW_RAY_SHUFFLE_PARTITIONS; default 2 per CPU).")
@click.option("--spark-master", envvar="SPARK_MASTER", help="Spark master URL; default: start a local Spark, local[*] on 127.0.0.1 (env SPARK_MASTER).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), help="Write the run report as JSON to this file.")
@click.option("--restart", is_flag=True, help="Discard the progress of an interrupted run instead of resuming it.")
@click.option("--shard", "shard_text", metavar="I/N", help="Run only the I-th of N deterministic input shards and stage it (publish with 'dataflow commit').")
@click.option("--quiet", is_flag=True, help="Print no progress and no summary.")
@click.option("--verbose", is_flag=True, help="Also print Ray's and Spark's own INFO and WARNING lines and Ray workers' output.")
@click.option("--json", "as_json", is_flag=True, help="Print the run report as JSON on stdout instead of the summary (progress stays on stderr).")
@click.option("--stream-shards/--no-stream-shards", default=True, show_default=True,
              help="Ray: run every shard in one streaming Dataset, or (--no-stream-shards) one Dataset per shard, two at a time (see README, Shards).")
@click.option(
    "--cache-dir", help="Read remote inputs through a node-local cache in this folder (overrides storage.cache.dir and DATAFLOW_CACHE_DIR; '' turns it off)."
)
@_broker_options
@_debug_option
@_handle_errors
def run(pipeline, overrides, address, object_store_memory, spill_dir, shuffle_partitions, spark_master, report_path, restart, shard_text, quiet, verbose, cache_dir, as_json,
        stream_shards, cluster, clusters_file, explain_placement, wait, gpu_type, max_cpus, max_gpus):
    """Run PIPELINE to its sink and commit the output.

    An interrupted run resumes from its committed shards when run again with the same pipeline
    and inputs (--restart starts over).

    \b
    Examples:
      dataflow run pipelines/thumbnails.yaml
      dataflow run p.yaml --set sink.mode=overwrite --report report.json
      dataflow run p.yaml --shard 3/16     # one shard of an Indexed Job
      dataflow run p.yaml --quiet --json | jq .rows_out
      dataflow run p.yaml --cluster auto --clusters clusters.yaml   # where capacity is idle
    """
    from dataflow.engines.base import RunOptions
    from dataflow.runner import BudgetExceededError, run_pipeline

    spec = _load(pipeline, overrides)
    if cluster or explain_placement or wait or gpu_type:
        from dataflow.cli.clusters import run_on_cluster

        _refuse_local_options(cluster)

        return run_on_cluster(spec, cluster, clusters_file, explain=explain_placement, wait=wait, gpu_type=gpu_type, restart=restart,
                              shard=shard_text, cache_dir=cache_dir, report_path=report_path, quiet=quiet, as_json=as_json)
    options = RunOptions(address=address, spark_master=spark_master, object_store_memory=object_store_memory, progress=not quiet, cache_dir=cache_dir,
                         max_cpus=max_cpus, max_gpus=max_gpus, spill_dir=spill_dir, shuffle_partitions=shuffle_partitions, verbose=verbose,
                         stream_shards=stream_shards)
    try:
        try:
            report = run_pipeline(spec, options, restart=restart, shard=_shard(shard_text))
        except BudgetExceededError as exc:
            if report_path:
                _write_report(report_path, exc.report)
            _print_report(exc.report, quiet, as_json, err=True)
            raise
        if report_path:
            _write_report(report_path, report)
        _print_report(report, quiet, as_json)
    finally:
        _release_ray()


_LOCAL_ONLY = ("address", "object_store_memory", "spill_dir", "shuffle_partitions", "spark_master", "stream_shards")


def _refuse_local_options(cluster: str | None) -> None:
    """A run submitted with --cluster runs as the fleet's cluster configures it: options given for a local engine are an error, not ignored."""
    ctx = click.get_current_context()
    given = [f"--{n.replace('_', '-')}" for n in _LOCAL_ONLY if ctx.get_parameter_source(n) is click.core.ParameterSource.COMMANDLINE]
    if cluster and given:
        verb = "configures a local engine; it does" if len(given) == 1 else "configure a local engine; they do"
        raise click.UsageError(f"{', '.join(given)} {verb} not combine with --cluster (the submitted run uses the cluster's engine as it is set up there)")


def _release_ray() -> None:
    """Stop the local Ray the run started (at once, not at interpreter exit); a joined cluster keeps running."""
    if "ray" in sys.modules:  # a run that never imported Ray (Spark) skips the session module's import (0.3 s)
        from dataflow.engines.ray.session import release

        release()


def _print_report(report, quiet: bool, as_json: bool, err: bool = False) -> None:
    """The report as JSON on stdout (--json), else the summary (coloured on a terminal only), unless --quiet."""
    from dataflow.cli.summary import render_summary

    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    elif not quiet:
        click.echo(render_summary(report, color=True), err=err)  # click drops the colours off a TTY


def _shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    index, sep, count = text.partition("/")
    if not (sep and index.isdigit() and count.isdigit() and 0 <= int(index) < int(count)):
        raise click.BadParameter(f"expected I/N with 0 <= I < N, got {text!r}", param_hint="--shard")
    return int(index), int(count)


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

    \b
    Examples:
      dataflow validate pipelines/thumbnails.yaml
      dataflow validate p.yaml --set steps[1].params.min_side=128
    """
    from dataflow.engines.registry import compile_pipeline

    spec = _load(pipeline, overrides)
    _, optimized, _, _ = compile_pipeline(spec)
    stages = f" in {len(spec.stages)} stages" if spec.stages else ""
    click.echo(f"{pipeline}: valid ({len(spec.all_steps)} steps{stages}; engine: {' -> '.join(optimized.engines)})")


@cli.command()
@click.argument("pipeline", type=click.Path(dir_okay=False))
@_set_option
@_debug_option
@_handle_errors
def explain(pipeline, overrides):
    """Print PIPELINE's logical plan, optimized plan (engine per step) and lowered engine job.

    \b
    Examples:
      dataflow explain pipelines/thumbnails.yaml
      dataflow explain p.yaml --set engine=spark
    """
    from dataflow.engines.registry import explain_pipeline

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
    """Print the dataflow version and the engine versions installed.

    \b
    Examples:
      dataflow version
    """
    import importlib.metadata

    parts = [f"dataflow {__version__}"]
    for dist in ("ray", "pyspark", "pyarrow", "fsspec"):
        try:
            parts.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{dist} (not installed)")
    click.echo(", ".join(parts))


from dataflow.cli.sink_tools import commit, errors, lineage  # noqa: E402
from dataflow.cli.k8s import k8s  # noqa: E402
from dataflow.cli.cache import cache  # noqa: E402
from dataflow.cli.report import report  # noqa: E402
from dataflow.cli.clusters import clusters, jobs  # noqa: E402
from dataflow.cli.local_ray import down, up  # noqa: E402

cli.add_command(commit)
cli.add_command(errors)
cli.add_command(lineage)
cli.add_command(k8s)
cli.add_command(cache)
cli.add_command(report)
cli.add_command(clusters)
cli.add_command(jobs)
cli.add_command(up)
cli.add_command(down)


def main() -> None:
    """Entry point of the ``dataflow`` console script."""
    try:
        cli(prog_name="dataflow")
    except SystemExit as exc:
        _exit(exc.code)
    _exit(0)


def _exit(code) -> None:
    """Exit as Python would (threads joined, atexit handlers run, output flushed), without tearing down every module.

    With Ray, Arrow and pandas loaded, the interpreter's module teardown takes 0.3-1 s after the
    work is done; nothing the CLI leaves needs it.
    """
    import atexit
    import os
    import threading

    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    threading._shutdown()  # what Python's own exit does first: wait for non-daemon threads
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`dataflow ... | head`): Python exits 120 then
            code = code or 120
    os._exit(code or 0)
