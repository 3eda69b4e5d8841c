"""Commands over a sink: commit separately run shards, summarise errors, trace lineage."""
from __future__ import annotations

import json
import posixpath
from collections import Counter, defaultdict

import click

from dataflow.cli.options import debug_option, handle_errors

__all__ = ["commit", "errors", "lineage"]


def _fs_and_root(sink: str):
    from connectors.registry import filesystem, strip_scheme

    return filesystem(sink), strip_scheme(sink)


def _manifest(fs, root: str, sink: str) -> dict:
    from dataflow.errors import DataflowError

    path = posixpath.join(root, "_manifest.json")
    if not fs.exists(posixpath.join(root, "_SUCCESS")) or not fs.exists(path):
        raise DataflowError(f"'{sink}' holds no committed output (no _SUCCESS / _manifest.json)")
    return json.loads(fs.cat_file(path))


@click.command()
@click.argument("sink")
@click.option("--shards", type=int, required=True, help="The N of the 'dataflow run --shard I/N' runs.")
@debug_option
@handle_errors
def commit(sink, shards):
    """Publish SINK once all N shard markers exist (after 'dataflow run --shard I/N' runs).

    \b
    Examples:
      dataflow commit s3://bucket/out --shards 16
    """
    from dataflow.cli.summary import render_summary
    from dataflow.runner import commit_shards

    click.echo(render_summary(commit_shards(sink, shards)))


@click.command()
@click.argument("sink")
@click.option("--examples", default=3, show_default=True, help="Example sources shown per reason.")
@debug_option
@handle_errors
def errors(sink, examples):
    """Summarise SINK/_errors/ grouped by op and reason, with example sources.

    \b
    Examples:
      dataflow errors ./out/thumbs
    """
    from dataflow.runtime.stats import read_errors

    fs, root = _fs_and_root(sink)
    records = read_errors(fs, [posixpath.join(root, "_errors")])
    if not records:
        click.echo(f"{sink}: no row errors")
        return
    counts = Counter((r["op"], r["error_type"], r["reason"].split(":", 1)[0]) for r in records)
    sources = defaultdict(list)
    for r in records:
        key = (r["op"], r["error_type"], r["reason"].split(":", 1)[0])
        if len(sources[key]) < examples:
            sources[key].append(r["source"])
    click.echo(f"{sink}: {len(records)} row errors")
    for (op, kind, reason), n in counts.most_common():
        click.echo(f"  {n:>6}  {op}  {kind}: {reason}")
        for s in sources[(op, kind, reason)]:
            click.echo(f"          e.g. {s}")


@click.command()
@click.argument("sink")
@click.argument("file")
@debug_option
@handle_errors
def lineage(sink, file):
    """Tell which input files fed FILE (a path relative to SINK, as in its manifest).

    \b
    Examples:
      dataflow lineage ./out/thumbs part-1a2b3c4d-5e6f.parquet
    """
    from dataflow.errors import DataflowError

    fs, root = _fs_and_root(sink)
    manifest = _manifest(fs, root, sink)
    rel = posixpath.relpath(file, root) if file.startswith(root) else file
    entry = next((f for f in manifest["files"] if f["path"] == rel), None)
    if entry is None:
        raise DataflowError(f"'{rel}' is not an output file of {sink} (see its _manifest.json)")
    shards = [s for s in manifest.get("shards", []) if rel in s["files"]]
    if not shards and entry.get("shard") is None:
        raise DataflowError(f"the manifest of {sink} records no shard for '{rel}'")
    shards = shards or [s for s in manifest.get("shards", []) if s["shard"] == entry.get("shard")]
    click.echo(f"{rel}: {entry['rows']} rows, from shard(s) {', '.join(s['shard'] for s in shards)}")
    inputs = [i for s in shards for i in s["inputs"]]
    if any(s.get("phase") == "global" for s in shards):
        # A global step (dedup, aggregate, join) may put any input row into any output file.
        click.echo("  (written by a global step: every input of the run may have fed it)")
        inputs = [i for s in manifest["shards"] if s.get("phase") != "global" for i in s["inputs"]]
    for i in inputs:
        click.echo(f"  {i}")
