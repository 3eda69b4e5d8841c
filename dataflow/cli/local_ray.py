"""``dataflow up`` / ``dataflow down``: keep a warm local Ray between CLI runs."""
from __future__ import annotations

import click

from dataflow.cli.options import debug_option, handle_errors

__all__ = ["down", "up"]


@click.command()
@click.option("--num-cpus", type=int, help="CPUs the local Ray offers (default: all of this machine's).")
@click.option("--object-store-memory", type=int, help="Bytes of object store (default Ray's, 30% of RAM).")
@click.option("--spill-dir", help="Folder the object store spills to when full (default Ray's temp folder).")
@debug_option
@handle_errors
def up(num_cpus, object_store_memory, spill_dir):
    """Start a local Ray on 127.0.0.1 that later runs join (no Ray start or shutdown per run).

    Every `dataflow run` without --address / RAY_ADDRESS uses it until `dataflow down`. The
    record lives in DATAFLOW_STATE_DIR (default ~/.cache/dataflow).

    \b
    Examples:
      dataflow up && dataflow run p.yaml && dataflow run q.yaml && dataflow down
    """
    from dataflow.engines.ray.local_cluster import running, start
    from dataflow.errors import DataflowError

    before = running()
    try:
        cluster = start(num_cpus=num_cpus, object_store_memory=object_store_memory, spill_dir=spill_dir)
    except RuntimeError as exc:
        raise DataflowError(str(exc)) from exc
    state = "already running" if before else "started"
    click.echo(f"dataflow: local Ray {state} at {cluster.address} (stop it with 'dataflow down')")


@click.command()
def down():
    """Stop the local Ray `dataflow up` started (nothing to do when none runs).

    \b
    Examples:
      dataflow down
    """
    from dataflow.engines.ray.local_cluster import stop

    cluster = stop()
    click.echo(f"dataflow: stopped the local Ray at {cluster.address}" if cluster else "dataflow: no local Ray was running")
