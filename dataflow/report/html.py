"""The HTML run report: one self-contained page per committed sink, ``<sink>/_dataflow/report.html``.

The page has no script and loads nothing: plots are inline SVG (written by ``plots``), thumbnails are
``data:`` URIs and the style sheet is inline, so it opens the same from a laptop, a bucket
browser or an archived copy. It holds the funnel (rows kept per step and why rows were dropped),
row errors by op and reason with example sources, time and throughput per step, the cache hit
rate when the run counted cache reads, resource use, and for image pipelines a grid of kept,
dropped and errored samples.
"""
from __future__ import annotations

import html
import json
import posixpath
import resource
from typing import Any

from connectors.extensions import describe_skipped
from dataflow.report import plots
from dataflow.report.page import CSS, card, table
from dataflow.report.samples import Sample, Samples, collect_samples

__all__ = ["REPORT_HTML", "render_report", "rerender_sink_report", "resource_use", "write_html_report"]

REPORT_HTML = "_dataflow/report.html"
REPORT_JSON = "_dataflow/report.json"


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def resource_use(report, spec) -> dict[str, Any]:
    """What the run used: driver CPU and peak memory, worker-seconds, declared resources per step."""
    from dataflow.plan.nodes import FusedMap, Step, steps_of
    from dataflow.engines.registry import engine_caps
    from dataflow.plan.planner import plan_pipeline

    usage = resource.getrusage(resource.RUSAGE_SELF)
    _, optimized = plan_pipeline(spec, engine_caps())
    steps = []
    for number, node in enumerate(n for n in optimized.nodes if isinstance(n, (FusedMap, Step))):
        for step in steps_of([node]):
            declared = {k: v for k, v in vars(step.resources).items() if v is not None}
            steps.append({"op": step.op.name, "stage": number + 1, "engine": node.engine, **declared})
    busy = sum(s.seconds for s in report.steps)
    return {
        "driver_cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
        "driver_peak_rss_bytes": usage.ru_maxrss * 1024,  # Linux reports KiB
        "worker_seconds": round(busy, 3),
        "parallelism": round(busy / report.wall_seconds, 2) if report.wall_seconds else 0.0,
        "steps": steps,
    }


def _source_reader(storage_options: dict[str, dict[str, Any]] | None):
    """``(uri, max_bytes) -> bytes``: reads at most ``max_bytes + 1`` bytes; a larger file is refused (ValueError)."""
    from connectors.registry import filesystem, strip_scheme

    def read(uri: str, max_bytes: int) -> bytes:
        with filesystem(uri, storage_options).open(strip_scheme(uri), "rb") as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ValueError(f"file above the {max_bytes}-byte preview limit")
        return data

    return read


def _max_pixels(spec) -> int | None:
    """The ``max_pixels`` of the pipeline's first ``image.decode`` step (None: the op's default)."""
    steps = [*spec.steps, *(s for stage in spec.stages for s in stage.steps)]
    step = next((s for s in steps if s.op == "image.decode"), None)
    return (step.params or {}).get("max_pixels") if step is not None else None


def write_html_report(report, spec, fs, root: str) -> str:
    """Record the run's source and resource use on ``report``, then write its HTML report.

    Called by the runner once the sink is committed, just before ``report.json`` is written.

    Args:
        report: The RunReport (``source``, ``source_format`` and ``resources`` are filled here).
        spec: The pipeline spec that ran.
        fs: The sink filesystem.
        root: The sink root on ``fs``.

    Returns:
        The path of the written page on ``fs``.
    """
    report.source, report.source_format = spec.source.uri, spec.source.format
    report.resources = resource_use(report, spec)
    data = report.to_dict()
    manifest = json.loads(fs.cat_file(posixpath.join(root, "_manifest.json")))
    samples = collect_samples(fs, root, manifest, data, sink_format=spec.sink.format, read_source=_source_reader(spec.storage.options), max_pixels=_max_pixels(spec))
    path = posixpath.join(root, REPORT_HTML)
    with fs.open(path, "wb") as f:
        f.write(render_report(data, samples, manifest).encode("utf-8"))
    return path


def rerender_sink_report(sink: str, storage_options: dict[str, dict[str, Any]] | None = None) -> str:
    """Render ``<sink>/_dataflow/report.html`` again from the sink's ``report.json``; return its path.

    Raises:
        DataflowError: the sink holds no committed output or no report.json.
    """
    from connectors.registry import filesystem, strip_scheme
    from dataflow.errors import DataflowError

    fs, root = filesystem(sink, storage_options), strip_scheme(sink)
    paths = {name: posixpath.join(root, name) for name in ("_manifest.json", "_SUCCESS", REPORT_JSON)}
    missing = [name for name, p in paths.items() if not fs.exists(p)]
    if missing:
        raise DataflowError(f"'{sink}' has no {', '.join(missing)}: it holds no committed dataflow run to report on (run the pipeline first)")
    data = json.loads(fs.cat_file(paths[REPORT_JSON]))
    manifest = json.loads(fs.cat_file(paths["_manifest.json"]))
    sink_format = _sink_format(manifest)
    reader = _source_reader(storage_options) if data.get("source") else None
    samples = collect_samples(fs, root, manifest, data, sink_format=sink_format, read_source=reader)
    path = posixpath.join(root, REPORT_HTML)
    with fs.open(path, "wb") as f:
        f.write(render_report(data, samples, manifest).encode("utf-8"))
    return path


def _sink_format(manifest: dict[str, Any]) -> str:
    names = [f["path"] for f in manifest.get("files", [])]
    if any(n.endswith(".parquet") for n in names):
        return "parquet"
    if any(n.endswith("index.jsonl") for n in names):
        return "files"
    return "jsonl"


def _header(r: dict[str, Any], manifest: dict[str, Any]) -> str:
    status = "published" if r.get("published") else (r.get("failure") or "not published")
    dropped = sum(sum(s.get("drops", {}).values()) for s in r.get("steps", []))
    cards = [
        card("rows read", f"{r['rows_in']:,}"),
        card("rows written", f"{r['rows_out']:,}"),
        card("rows dropped", f"{dropped:,}"),
        card("rows errored", f"{r['rows_errored']:,}", warn=bool(r["rows_errored"])),
        card("wall time", f"{r['wall_seconds']:.1f} s"),
        card("rows/s", f"{r.get('rows_per_second', 0):,.1f}"),
        card("files", f"{r.get('files', 0):,}"),
        card("bytes written", _mib(r.get("bytes_written", 0))),
    ]
    skipped = r.get("skipped") or {}
    if skipped:  # files the source's extension filter left out, entries that are not files: named, never dropped without a word
        cards.append(card("files skipped", f"{sum(skipped.values()):,}", warn=True))
    meta = " · ".join(_e(x) for x in (f"engine {r['engine']}", status, manifest.get("committed_at", ""), f"run {manifest.get('run_id', '')}") if x)
    where = f"<p class='where'>{_e(r.get('source') or '')} &rarr; {_e(r.get('output') or '')}</p>"
    if skipped:
        where += f"<p class='note'>skipped: {_e(describe_skipped(skipped))}</p>"
    return f"<header><h1>{_e(r['pipeline'])}</h1><p class='meta'>{meta}</p>{where}</header><section class='cards'>{''.join(cards)}</section>"


def _funnel(r: dict[str, Any]) -> str:
    steps = r.get("steps", [])
    rows = []
    for i, s in enumerate(steps):
        drops = sum(s.get("drops", {}).values())
        reasons = "<br>".join(f"<span class='path'>{_e(k)}: {v:,}</span>" for k, v in s.get("drops", {}).items() if v)
        rows.append([str(i) if s["op"] != "read" else "", s["op"], f"{s['rows_in']:,}", f"{s['rows_out']:,}", f"{drops:,}", f"{s['rows_errored']:,}", reasons])
    body = table(["#", "step", "in", "kept", "dropped", "errored", "drop reasons"], rows, numeric=(2, 3, 4, 5), raw=(6,))
    return f"<section id='funnel'><h2>Funnel</h2><div class='pair'><figure id='funnel-plot'>{plots.funnel_svg(steps, r['rows_in'])}</figure>{body}</div></section>"


def _errors(r: dict[str, Any], samples: Samples) -> str:
    if not samples.errors:
        return "<section id='errors'><h2>Row errors</h2><p>No row errors.</p></section>"
    groups = samples.errors[:12]
    rows = [[g.op, g.reason, f"{g.count:,}", "<br>".join(f"<span class='path'>{_e(x)}</span>" for x in g.examples)] for g in groups]
    note = f"<p class='note'>Counted from the first {samples.error_records:,} records.</p>" if samples.error_records < r["rows_errored"] else ""
    svg = plots.errors_svg([(g.op, g.reason, g.count) for g in groups])
    body = table(["op", "reason", "rows", "example sources"], rows, numeric=(2,), raw=(3,))
    return f"<section id='errors'><h2>Row errors</h2><p>Records are in <code>{_e(r.get('errors') or '')}</code>.</p><div class='pair'><figure id='errors-plot'>{svg}</figure>{body}</div>{note}</section>"


def _throughput(r: dict[str, Any]) -> str:
    steps = [s for s in r.get("steps", []) if s["op"] != "read"] or r.get("steps", [])
    if not steps:
        return ""
    rows = [[s["op"], f"{s['rows_in']:,}", f"{s['seconds']:.3f}", f"{s['rows_in'] / s['seconds']:,.0f}" if s["seconds"] else "-"] for s in steps]
    body = table(["step", "rows in", "worker seconds", "rows/s"], rows, numeric=(1, 2, 3))
    return f"<section id='throughput'><h2>Time and throughput</h2><div class='pair'><figure id='throughput-plot'>{plots.throughput_svg(steps)}</figure>{body}</div></section>"


def _cache(r: dict[str, Any]) -> str:
    cache = r.get("cache") or {}
    hits, misses = cache.get("hits", 0), cache.get("misses", 0)
    if not hits + misses:
        return ""
    cards = [card("hit rate", f"{hits / (hits + misses):.1%}"), card("hits", f"{hits:,}"), card("misses", f"{misses:,}")]
    for key in ("bytes_local", "bytes_remote"):
        if key in cache:
            cards.append(card(key.replace("_", " "), _mib(cache[key])))
    return f"<section id='cache'><h2>Cache</h2><div class='cards'>{''.join(cards)}</div></section>"


def _resources(r: dict[str, Any]) -> str:
    res = r.get("resources") or {}
    if not res:
        return ""
    cards = [
        card("worker seconds", f"{res.get('worker_seconds', 0):,.1f}"),
        card("parallelism", f"{res.get('parallelism', 0):.2f}x"),
        card("driver CPU", f"{res.get('driver_cpu_seconds', 0):,.1f} s"),
        card("driver peak memory", _mib(res.get("driver_peak_rss_bytes", 0))),
    ]
    keys = ("num_cpus", "num_gpus", "memory", "concurrency", "batch_size")
    rows = [[s["op"], str(s.get("stage", "")), s.get("engine") or "", *(str(s.get(k, "")) for k in keys)] for s in res.get("steps", [])]
    body = table(["step", "stage", "engine", *keys], rows) if rows else ""
    return f"<section id='resources'><h2>Resource use</h2><div class='cards'>{''.join(cards)}</div>{body}</section>"


def _grid(title: str, css: str, items: list[Sample]) -> str:
    tiles = []
    for s in items:
        pic = f"<img src='{s.image}' alt='{_e(s.source)}' loading='eager'>" if s.image else "<div class='noimg'>no preview</div>"
        tiles.append(f"<figure class='tile {css}' title='{_e(s.source)}'>{pic}<figcaption>{_e(s.caption)}</figcaption></figure>")
    return f"<div class='group'><h3>{_e(title)} ({len(items)})</h3><div class='grid'>{''.join(tiles) or '<p>none</p>'}</div></div>"


def _samples(r: dict[str, Any], samples: Samples) -> str:
    if r.get("source_format") != "image":
        return ""
    groups = [_grid("kept", "kept", samples.kept), _grid("dropped by a filter", "dropped", samples.dropped), _grid("errored", "errored", samples.errored)]
    return f"<section id='samples'><h2>Samples</h2>{''.join(groups)}</section>"


def render_report(report: dict[str, Any], samples: Samples, manifest: dict[str, Any]) -> str:
    """Return the report page for ``RunReport.to_dict()`` output, its samples and the sink manifest."""
    parts = [_header(report, manifest), _funnel(report), _errors(report, samples), _throughput(report), _cache(report), _resources(report), _samples(report, samples)]
    title = _e(f"dataflow report: {report['pipeline']}")
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">"
        f"<title>{title}</title><style>{CSS}</style></head><body>{''.join(parts)}"
        f"<footer>dataflow {_e(manifest.get('dataflow_version', ''))} · pipeline hash {_e(manifest.get('pipeline_hash', ''))}</footer></body></html>"
    )
