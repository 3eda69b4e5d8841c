"""Notebook displays: rows with thumbnails, audio players and truncated text; plans; run reports.

Jupyter calls ``_repr_html_``; the objects here (and ``Pipeline`` / ``RunReport``, which delegate
to the functions below) return small HTML fragments with everything embedded.
"""
from __future__ import annotations

import html
import posixpath
from typing import Any

import numpy as np

from dataflow.report.media import audio_uri, image_thumbnail
from dataflow.report.page import table

__all__ = ["ReportView", "cell_html", "pipeline_html", "rows_html", "run_report_html", "show_report"]

MAX_TEXT = 120
MAX_COLUMNS = 12
_STYLE = (
    "<style>.dfnb td,.dfnb th{vertical-align:top;text-align:left;padding:3px 8px;font-size:12px}"
    ".dfnb img{max-width:96px;max-height:96px}.dfnb .drop{color:#b36b00}.dfnb .err{color:#c8453b}.dfnb .kept{color:#2f7ebc}</style>"
)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return _e(text)
    return f"<span title='{_e(text[:2000])}'>{_e(text[:limit])}&hellip; <i>({len(text):,} chars)</i></span>"


def cell_html(value: Any, row: dict[str, Any] | None = None) -> str:
    """One value as HTML: an ``<audio>`` player, an image thumbnail, or (truncated) text.

    Args:
        value: The cell.
        row: The whole row; its ``sample_rate`` makes float arrays audio.
    """
    rate = (row or {}).get("sample_rate")
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating) and rate:
        uri = audio_uri(value, int(rate))
        if uri:
            return f"<audio controls preload='none' src='{uri}'></audio><br><small>{len(value) / int(rate):.2f} s @ {int(rate)} Hz</small>"
    if isinstance(value, (bytes, bytearray, memoryview)):
        uri = audio_uri(value)
        if uri:
            return f"<audio controls preload='none' src='{uri}'></audio>"
    thumb = image_thumbnail(value)
    if thumb:
        shape = f"{value.shape[1]}x{value.shape[0]}" if isinstance(value, np.ndarray) else f"{len(value):,} bytes"
        return f"<img src='{thumb}'><br><small>{shape}</small>"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<i>{len(value):,} bytes</i>"
    if isinstance(value, np.ndarray) and value.size > 16:
        return f"<i>array {value.dtype} {value.shape}</i>"
    return _text(value)


def rows_html(rows: list[dict[str, Any]], status: list[str] | None = None) -> str:
    """A table of rows, media shown inline; ``status`` adds a first column (already HTML)."""
    if not rows and not status:
        return "<p><i>no rows</i></p>"
    names = list(dict.fromkeys(k for r in rows for k in r))[:MAX_COLUMNS]
    head = (["status"] if status else []) + names
    body = []
    for i, row in enumerate(rows):
        cells = [cell_html(row[k], row) if k in row else "" for k in names]
        body.append(([status[i]] if status else []) + cells)
    return _STYLE + "<div class='dfnb'>" + table(head, body, raw=tuple(range(len(head)))) + "</div>"


def pipeline_html(data: dict[str, Any]) -> str:
    """The plan of a pipeline under construction: source, steps with engine and params, sink."""
    from dataflow.errors import DataflowError

    engines: dict[int, str] = {}
    problem = ""
    try:
        engines = _step_engines(data)
    except DataflowError as exc:
        problem = f"<p class='err'>not runnable yet: {_e(exc)}</p>"
    source, sink = data.get("source", {}), data.get("sink", {})
    rows = [["", "read", "", _e(f"{source.get('uri')} ({source.get('format')})")]]
    for i, step in enumerate(data.get("steps", [])):
        params = ", ".join(f"{k}={v!r}" for k, v in step.get("params", {}).items())
        res = ", ".join(f"{k}={v}" for k, v in (step.get("resources") or {}).items())
        rows.append([str(i), _e(step.get("op")), _e(engines.get(i, "")), _e(params) + (f" <small>[{_e(res)}]</small>" if res else "")])
    rows.append(["", "write", "", _e(f"{sink.get('uri')} ({sink.get('format')}, mode {sink.get('mode')})") if sink else "<i>no sink yet</i>"])
    title = f"<b>Pipeline {_e(data.get('name'))}</b> (engine: {_e(data.get('engine', 'auto'))})"
    return _STYLE + f"<div class='dfnb'>{title}{table(['#', 'step', 'engine', 'params'], rows, raw=(0, 1, 2, 3))}{problem}</div>"


def _step_engines(data: dict[str, Any]) -> dict[int, str]:
    from dataflow.dsl.parse import parse_pipeline
    from dataflow.engines.registry import engine_caps
    from dataflow.plan.planner import plan_pipeline

    spec = parse_pipeline(data if "sink" in data else {**data, "sink": {"uri": "unused"}})
    _, optimized = plan_pipeline(spec, engine_caps())
    return {step.index: step.engine or "" for step in optimized.steps()}


def run_report_html(report) -> str:
    """A RunReport as a compact table: totals, then rows in/kept/dropped/errored and time per step."""
    status = "published" if report.published else (report.failure or "not published")
    head = (
        f"<b>{_e(report.pipeline)}</b> on {_e(report.engine)}: {_e(status)} &middot; {report.rows_in:,} read, "
        f"{report.rows_out:,} written, {report.rows_errored:,} errored in {report.wall_seconds:.1f} s ({report.rows_per_second:,.1f} rows/s)"
    )
    rows = [[s.op, f"{s.rows_in:,}", f"{s.rows_out:,}", f"{sum(s.drops.values()):,}", f"{s.rows_errored:,}", f"{s.seconds:.2f}"] for s in report.steps]
    where = f"<br><small>output: <code>{_e(report.output)}</code></small>" if report.published else ""
    return _STYLE + f"<div class='dfnb'>{head}{where}{table(['step', 'in', 'kept', 'dropped', 'errored', 'seconds'], rows)}</div>"


class ReportView:
    """A sink's HTML run report shown inside a notebook (an iframe holding the whole page)."""

    def __init__(self, page: str, path: str, height: int = 900):
        self.page, self.path, self.height = page, path, height

    def _repr_html_(self) -> str:
        return f"<iframe srcdoc=\"{html.escape(self.page, quote=True)}\" style='width:100%;height:{self.height}px;border:1px solid #ddd'></iframe>"

    def __repr__(self) -> str:
        return f"ReportView({self.path!r})"


def show_report(sink_or_report, storage_options: dict[str, dict[str, Any]] | None = None) -> ReportView:
    """Return the HTML report of a committed sink (a URI or a published RunReport) for display.

    In a notebook, ``show_report(pipeline.run())`` as a cell's last line shows the whole page.
    """
    from connectors.registry import filesystem, strip_scheme
    from dataflow.report.html import REPORT_HTML

    sink = sink_or_report if isinstance(sink_or_report, str) else sink_or_report.output
    fs = filesystem(sink, storage_options)
    path = posixpath.join(strip_scheme(sink), REPORT_HTML)
    return ReportView(fs.cat_file(path).decode("utf-8"), path)
