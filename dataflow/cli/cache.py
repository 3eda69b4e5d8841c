"""``dataflow cache stats | clear | warm``: inspect, empty and prefill the node-local cache tier.

The directory is ``--cache-dir``, else ``DATAFLOW_CACHE_DIR``, else the pipeline's
``storage.cache.dir`` (``--pipeline``): ``dataflow.runtime.settings.resolve_settings``.
"""
from __future__ import annotations

import time
from typing import Any

import click

from dataflow.cli.options import debug_option, handle_errors

__all__ = ["cache"]

_dir_option = click.option("--cache-dir", help="The cache directory (default: DATAFLOW_CACHE_DIR, then the pipeline's storage.cache.dir).")
_pipeline_option = click.option("--pipeline", "pipeline_path", type=click.Path(dir_okay=False, exists=True), help="Take the cache and storage options from this pipeline.")


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _spec(pipeline_path: str | None):
    if not pipeline_path:
        return None
    from dataflow.dsl.parse import load_pipeline

    return load_pipeline(pipeline_path)


def _settings(cache_dir: str | None, spec, max_bytes: str | None = None, pairs: tuple[str, ...] = ()):
    """The run settings these flags, the environment and the pipeline resolve to (``resolve_settings``); a cache is required."""
    from dataflow.errors import DataflowError
    from dataflow.runtime.settings import resolve_settings

    try:
        settings = resolve_settings(spec, cache_dir=cache_dir or None, max_bytes=max_bytes or None, options=_option_pairs(pairs))
    except DataflowError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-bytes") from exc
    if settings.cache is None:
        raise click.UsageError("no cache directory: pass --cache-dir, set DATAFLOW_CACHE_DIR, or --pipeline with storage.cache.dir")
    return settings


def _option_pairs(pairs: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    import yaml

    out: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        scheme, dot, name = key.partition(".")
        if not sep or not dot or not name:
            raise click.BadParameter(f"expected SCHEME.KEY=VALUE, e.g. s3.endpoint_url=http://127.0.0.1:9000, got {pair!r}", param_hint="--option")
        out.setdefault(scheme, {})[name] = yaml.safe_load(value)
    return out


@click.group()
def cache() -> None:
    """Inspect, empty or prefill the node-local cache of remote inputs.

    \b
    Examples:
      dataflow cache stats --cache-dir /mnt/nvme/dataflow
      dataflow cache warm s3://bucket/images/ --cache-dir /mnt/nvme/dataflow
      dataflow cache warm --pipeline pipelines/thumbnails.yaml
      dataflow cache clear --cache-dir /mnt/nvme/dataflow
    """


@cache.command()
@_dir_option
@_pipeline_option
@debug_option
@handle_errors
def stats(cache_dir, pipeline_path):
    """Print the entries, bytes and size bound of the cache directory.

    \b
    Examples:
      dataflow cache stats --cache-dir /mnt/nvme/dataflow
      dataflow cache stats --pipeline pipelines/thumbnails.yaml
    """
    from connectors.registry import cache_store

    st = cache_store(_settings(cache_dir, _spec(pipeline_path)).cache).stats()
    rows = [
        ("directory", st.root),
        ("entries", f"{st.entries:,}"),
        ("bytes", f"{st.bytes:,} ({_human(st.bytes)})"),
        ("max_bytes", f"{st.max_bytes:,} ({_human(st.max_bytes)})"),
        ("used", f"{100 * st.bytes / st.max_bytes:.1f}%"),
        ("fills in flight", str(st.temp_files)),
    ]
    if st.newest_access:
        rows.append(("last access", time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st.newest_access))))
    width = max(len(k) for k, _ in rows)
    click.echo("\n".join(f"{k:<{width}}  {v}" for k, v in rows))


@cache.command()
@_dir_option
@_pipeline_option
@debug_option
@handle_errors
def clear(cache_dir, pipeline_path):
    """Delete every cache entry that no process is reading.

    \b
    Examples:
      dataflow cache clear --cache-dir /mnt/nvme/dataflow
    """
    from connectors.registry import cache_store

    store = cache_store(_settings(cache_dir, _spec(pipeline_path)).cache)
    deleted = store.clear()
    left = store.stats()
    click.echo(f"{store.root}: deleted {deleted:,} entries" + (f"; {left.entries:,} in use were kept" if left.entries else ""))


@cache.command()
@click.argument("uris", nargs=-1)
@_dir_option
@_pipeline_option
@click.option("--max-bytes", help="Size bound of the cache, e.g. 200GB (default: DATAFLOW_CACHE_MAX_BYTES, then storage.cache.max_bytes).")
@click.option("--format", "fmt", default="binary", show_default=True, help="Source format of the URIs (chooses the default file extensions).")
@click.option("--option", "pairs", multiple=True, metavar="SCHEME.KEY=VALUE", help="A storage option, e.g. s3.endpoint_url=http://127.0.0.1:9000 (repeatable).")
@click.option("--jobs", default=8, show_default=True, help="Objects fetched at once.")
@debug_option
@handle_errors
def warm(uris, cache_dir, pipeline_path, max_bytes, fmt, pairs, jobs):
    """Fetch URIS (or the --pipeline's source) into the cache, e.g. before a window of borrowed GPUs opens.

    \b
    Examples:
      dataflow cache warm s3://bucket/images/ --cache-dir /mnt/nvme/dataflow
      dataflow cache warm --pipeline pipelines/thumbnails.yaml
    """
    from connectors.registry import warm_cache

    spec = _spec(pipeline_path)
    settings = _settings(cache_dir, spec, max_bytes, pairs)
    targets = [(u, fmt, {}) for u in uris]
    if not targets and spec is not None:
        targets = [(spec.source.uri, spec.source.format, dict(spec.source.options))]
    if not targets:
        raise click.UsageError("nothing to warm: give URIs or --pipeline")
    start = time.monotonic()
    files = size = 0
    for uri, source_fmt, options in targets:
        n, b = warm_cache(uri, source_fmt, options, settings.storage_options, settings.cache, jobs=jobs)
        files, size = files + n, size + b
    click.echo(f"warmed {files:,} files ({_human(size)}) into {settings.cache.dir} in {time.monotonic() - start:.1f} s")
