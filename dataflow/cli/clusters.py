"""``dataflow clusters``, ``dataflow jobs ...`` and the ``--cluster`` path of ``dataflow run``.

The fleet is a clusters.yaml (``--clusters FILE`` or ``DATAFLOW_CLUSTERS``); see
``dataflow.broker.clusters`` for its keys.
"""
from __future__ import annotations

import datetime as dt
import difflib
import json
import sys
import time

import click

from dataflow.cli.options import debug_option, handle_errors

__all__ = ["broker_options", "clusters", "jobs", "run_on_cluster"]

_clusters_option = click.option(
    "--clusters", "clusters_file", type=click.Path(dir_okay=False), envvar="DATAFLOW_CLUSTERS",
    help="The fleet's clusters.yaml (env DATAFLOW_CLUSTERS).",
)


def broker_options(fn):
    """The options ``dataflow run`` takes to run on the fleet, and the caps a borrowed run obeys."""
    options = [
        click.option("--cluster", metavar="auto|NAME", help="Run on a cluster of the fleet: auto picks the best one with room now, NAME asks for one."),
        _clusters_option,
        click.option("--explain", "explain_placement", is_flag=True, help="With --cluster: print why each cluster was or was not chosen; submit nothing."),
        click.option("--wait", is_flag=True, help="With --cluster: wait until a cluster has room instead of exiting 2."),
        click.option("--gpu-type", metavar="MODEL", help="With --cluster: the GPU model the GPU steps need, e.g. A100."),
        click.option("--max-cpus", type=click.FloatRange(min=0, min_open=True), envvar="DATAFLOW_MAX_CPUS",
                     help="Use at most this many CPUs of the Ray cluster (env DATAFLOW_MAX_CPUS; the broker sets it to the lendable share)."),
        click.option("--max-gpus", type=click.FloatRange(min=0), envvar="DATAFLOW_MAX_GPUS", help="Use at most this many GPUs of the Ray cluster (env DATAFLOW_MAX_GPUS)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _say(text: str) -> None:
    click.echo(f"dataflow: {text}", err=True)


def _write_log(chunk: str) -> None:
    sys.stderr.write(chunk)
    sys.stderr.flush()


def _local_absolute(uri: str) -> str:
    from connectors.registry import scheme_of, strip_scheme

    return strip_scheme(uri) if scheme_of(uri) == "file" else uri


def _shippable(spec):
    """The spec with local paths made absolute: the job runs in its own working directory on the cluster."""
    source = spec.source.model_copy(update={"uri": _local_absolute(spec.source.uri)})
    sink = spec.sink.model_copy(update={"uri": _local_absolute(spec.sink.uri)})
    sources = {k: v.model_copy(update={"uri": _local_absolute(v.uri)}) for k, v in spec.sources.items()}
    return spec.model_copy(update={"source": source, "sink": sink, "sources": sources})


def _summary(run) -> str:
    report = run.report or {}
    last = run.jobs[-1]
    head = f"{run.pipeline} on '{last['cluster']}' (job {last['job_id']}): " + (f"published -> {run.sink}" if report.get("published") else "finished; no report found in the sink")
    lines = [head]
    for key, label in (("rows_in", "rows read"), ("rows_out", "rows written"), ("rows_errored", "rows errored")):
        if key in report:
            lines.append(f"  {label:<13} {report[key]:,}")
    for m in run.moves:
        lines.append(f"  moved {m.from_cluster} -> {m.to_cluster} at {m.at} ({m.reason}); stopped in {m.stop_seconds:.1f} s, resubmitted after {m.resubmit_seconds or 0:.1f} s")
    return "\n".join(lines)


def _compile(spec, gpu_type):
    from dataflow.broker.placement import demand_of
    from dataflow.errors import PlanError
    from dataflow.engines.registry import compile_pipeline

    _, optimized, engine, job = compile_pipeline(spec)
    if engine.name != "ray":
        raise PlanError(f"--cluster runs pipelines on Ray clusters, and '{spec.name}' plans to {engine.name} ({optimized.engine_reason or 'engine: ' + spec.engine}); set engine: ray to run it there")
    return demand_of(spec.name, job.stages, gpu_type)


def run_on_cluster(spec, cluster, clusters_file, *, explain, wait, gpu_type, restart, shard, cache_dir, report_path, quiet, as_json=False) -> None:
    """``dataflow run --cluster auto|NAME``: place, submit, stream logs, move on give-back, print the summary."""
    from dataflow.broker.capacity import probe_all
    from dataflow.broker.placement import place
    from dataflow.broker.remote_run import run_on_fleet
    from dataflow.broker.watch import FleetSource
    from dataflow.dsl.yaml_io import dump

    if not cluster:
        raise click.UsageError("--explain, --wait and --gpu-type go with --cluster auto|NAME")
    if shard:
        raise click.UsageError("--shard runs one shard where it is started; it does not combine with --cluster")
    source = FleetSource(clusters_file)
    fleet = source.current()
    only = None if cluster == "auto" else cluster
    if only is not None and fleet.get(only) is None:
        close = difflib.get_close_matches(only, fleet.names(), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise click.BadParameter(f"no cluster named {only!r} in {source.path} (expected auto or one of: {', '.join(fleet.names())}){hint}", param_hint="--cluster")
    demand = _compile(spec, gpu_type)
    if explain:
        placement = place(fleet, probe_all(fleet), demand, only=only)
        click.echo(placement.explain())
        if placement.chosen is None:
            _say("no cluster can run it now")
            sys.exit(2)
        return
    shipped = _shippable(spec)
    run = run_on_fleet(
        shipped, dump(shipped.model_dump(mode="json")), demand, source, only=only, wait=wait, restart=restart,
        cache_dir=cache_dir, logs=None if quiet else _write_log, say=(lambda _: None) if quiet else _say,
    )
    if report_path:
        with open(report_path, "w", encoding="utf-8") as f:
            json.dump(run.to_dict(), f, indent=2)
    if as_json:
        click.echo(json.dumps(run.to_dict(), indent=2))
    elif not quiet:
        click.echo(_summary(run))


def _fmt_window(cluster, now) -> str:
    from dataflow.broker.clusters import window_state

    if not cluster.windows:
        return "always"
    is_open, _ = window_state(cluster, now)
    return f"{'open' if is_open else 'closed'} {','.join(cluster.windows)}"


def _note(cap) -> str:
    if cap.error:
        return cap.error
    parts = [f"{t}: {i:g}/{n:g} GPU idle" for t, (i, n) in cap.gpu_types().items()]
    if cap.queue is not None:
        parts.append(cap.queue.get("error") or f"queue {cap.queue['name']} {cap.queue.get('state')}")
    if cap.pending:
        parts.append(f"{cap.pending} pending")
    return "; ".join(parts)


@click.command("clusters")
@_clusters_option
@click.option("--json", "as_json", is_flag=True, help="Print the probe results as JSON.")
@debug_option
@handle_errors
def clusters(clusters_file, as_json):
    """Show every cluster of the fleet: window open?, total, idle and lendable now (probed live).

    \b
    Examples:
      dataflow clusters --clusters clusters.yaml
      DATAFLOW_CLUSTERS=clusters.yaml dataflow clusters --json
    """
    from dataflow.broker.capacity import probe_all
    from dataflow.broker.clusters import load_clusters, window_state
    from dataflow.broker.placement import lendable

    fleet = load_clusters(clusters_file)
    start = time.monotonic()
    caps = probe_all(fleet)
    took = time.monotonic() - start
    now = dt.datetime.now(dt.timezone.utc)
    if as_json:
        out = []
        for c in fleet.clusters:
            cap = caps[c.name]
            is_open, window = window_state(c, now)
            out.append({**cap.to_dict(), "window_open": is_open, "window": window, "lendable": vars(lendable(c, cap)) if is_open and not cap.error else None})
        click.echo(json.dumps({"clusters": out, "probe_seconds": round(took, 4)}, indent=2))
        return
    rows = [("CLUSTER", "KIND", "WINDOW", "TOTAL", "IDLE", "LENDABLE NOW", "NOTE")]
    for c in fleet.clusters:
        cap = caps[c.name]
        is_open, _ = window_state(c, now)
        lend = lendable(c, cap).describe() if is_open and not cap.error else "-"
        rows.append((c.name, c.kind, _fmt_window(c, now), "-" if cap.error else cap.total.describe(), "-" if cap.error else cap.idle.describe(), lend, _note(cap)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        click.echo("  ".join(f"{v:<{w}}" for v, w in zip(r, widths)) + "  " + r[-1])
    click.echo(f"probed {len(fleet.clusters)} clusters in {took:.2f} s")


@click.group("jobs")
def jobs() -> None:
    """List, inspect, follow and stop dataflow jobs on the fleet's Ray clusters, by job id.

    \b
    Examples:
      dataflow jobs list
      dataflow jobs logs dataflow-thumbnails-1a2b3c4d --follow
      dataflow jobs stop dataflow-thumbnails-1a2b3c4d
    """


def _fleet(clusters_file):
    from dataflow.broker.clusters import load_clusters

    return load_clusters(clusters_file)


def _when(ts) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else "-"


@jobs.command("list")
@_clusters_option
@click.option("--cluster", "only", metavar="NAME", help="Only this cluster.")
@click.option("--all", "everything", is_flag=True, help="Also jobs not submitted by dataflow.")
@debug_option
@handle_errors
def jobs_list(clusters_file, only, everything):
    """List jobs on every Ray cluster of the fleet, newest first.

    \b
    Examples:
      dataflow jobs list --clusters clusters.yaml
      dataflow jobs list --cluster train-a --all
    """
    from dataflow.broker.jobs import list_jobs

    records, failed = list_jobs(_fleet(clusters_file), everything=everything, only=only)
    rows = [("JOB", "CLUSTER", "STATUS", "PIPELINE", "ATTEMPT", "STARTED")]
    rows += [(r.job_id, r.cluster, r.status, r.metadata.get("dataflow_pipeline", "-"), r.metadata.get("dataflow_attempt", "-"), _when(r.start_time)) for r in records]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        click.echo("  ".join(f"{v:<{w}}" for v, w in zip(r, widths)).rstrip())
    for name, why in failed.items():
        click.echo(f"{name}: {why}", err=True)


@jobs.command("status")
@click.argument("job_id")
@_clusters_option
@click.option("--json", "as_json", is_flag=True, help="Print the job's record as JSON.")
@debug_option
@handle_errors
def jobs_status(job_id, clusters_file, as_json):
    """Show where JOB_ID runs and its status.

    \b
    Examples:
      dataflow jobs status dataflow-thumbnails-1a2b3c4d --json
    """
    from dataflow.broker.jobs import find_job

    _, record = find_job(_fleet(clusters_file), job_id)
    if as_json:
        click.echo(json.dumps(record.to_dict(), indent=2))
        return
    click.echo(f"{record.job_id} on '{record.cluster}': {record.status}" + (f" ({record.message})" if record.message else ""))
    click.echo(f"  started {_when(record.start_time)}, ended {_when(record.end_time)}; entrypoint: {record.entrypoint}")


@jobs.command("logs")
@click.argument("job_id")
@_clusters_option
@click.option("--follow", "-f", is_flag=True, help="Keep streaming until the job ends.")
@debug_option
@handle_errors
def jobs_logs(job_id, clusters_file, follow):
    """Print the log of JOB_ID (its driver's output), wherever it runs.

    \b
    Examples:
      dataflow jobs logs dataflow-thumbnails-1a2b3c4d --follow
    """
    from dataflow.broker.jobs import find_job, job_client, tail_logs

    cluster, _ = find_job(_fleet(clusters_file), job_id)
    if follow:
        tail_logs(cluster, job_id, lambda chunk: click.echo(chunk, nl=False))
    else:
        click.echo(job_client(cluster).get_job_logs(job_id), nl=False)


@jobs.command("stop")
@click.argument("job_id")
@_clusters_option
@click.option("--grace", type=click.IntRange(min=1), default=30, show_default=True, help="Seconds to wait for the job to end before stopping it again.")
@debug_option
@handle_errors
def jobs_stop(job_id, clusters_file, grace):
    """Stop JOB_ID (SIGTERM, then SIGKILL after its grace); a later 'dataflow run' of the pipeline resumes it.

    \b
    Examples:
      dataflow jobs stop dataflow-thumbnails-1a2b3c4d --grace 60
    """
    from dataflow.broker.jobs import TERMINAL, find_job, stop_job

    cluster, record = find_job(_fleet(clusters_file), job_id)
    if record.status in TERMINAL:
        click.echo(f"{job_id} on '{cluster.name}' already ended: {record.status}")
        return
    record = stop_job(cluster, job_id, wait_seconds=grace)
    click.echo(f"{job_id} on '{cluster.name}': {record.status}")

