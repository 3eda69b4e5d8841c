"""The report's plots: horizontal bar charts written as inline SVG text (no plotting library, text stays text).

Each chart is a few dozen SVG elements laid out from the labels' lengths; rendering takes well
under a millisecond, where matplotlib cost 0.3-0.9 s per report (plus its import) on the run's
critical path. The same data renders the same SVG text.
"""
from __future__ import annotations

import html
import math
from typing import Any

__all__ = ["errors_svg", "funnel_svg", "throughput_svg"]

KEPT = "#2f7ebc"
DROPPED = "#e8a33d"
ERRORED = "#c8453b"
TIME = "#5b8c5a"

_WIDTH = 720  # px: 7.5 in at 96 dpi (the page is laid out in px; the SVG says 540 pt)
_CHAR_PX = 7.8  # a 10 pt (13.3 px) label character, about; the left margin comes from it
_TOP, _BOTTOM, _ROW = 26, 42, 40  # px: title band, axis band, one bar's row
_FONT = "font-family='DejaVu Sans, Arial, sans-serif'"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _ticks(top: float, integer: bool) -> list[float]:
    """Round tick values from 0 to ``top``: about five, at 1, 2, 2.5 or 5 times a power of ten."""
    raw = top / 5 if top > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    if integer:
        step = max(1.0, math.ceil(step))
    return [i * step for i in range(int(top // step) + 1)]


def _number(value: float, integer: bool) -> str:
    return f"{value:,.0f}" if integer or value == int(value) else f"{value:,.3g}"


class _Chart:
    """One chart: y labels on the left, bars from x = 0, a title above and an x axis below."""

    def __init__(self, labels: list[str], xmax: float, title: str, xlabel: str, integer: bool):
        self.rows = max(len(labels), 1)
        self.height = round(_TOP + _BOTTOM + _ROW * self.rows)
        self.left = round(min(0.6 * _WIDTH, 20 + _CHAR_PX * max(map(len, labels), default=0)))
        self.right = round(0.98 * _WIDTH)
        self.xmax = xmax if xmax > 0 else 1.0
        self.parts = [f"<text x='{self.left}' y='18' font-size='13.3' fill='#222'>{_e(title)}</text>"]
        bottom = self.height - _BOTTOM
        for tick in _ticks(self.xmax, integer):
            x = self.x(tick)
            self.parts.append(f"<line x1='{x:.1f}' y1='{_TOP}' x2='{x:.1f}' y2='{bottom}' stroke='#dddddd' stroke-width='0.6'/>")
            self.parts.append(f"<text x='{x:.1f}' y='{bottom + 17}' font-size='13.3' text-anchor='middle' fill='#222'>{_number(tick, integer)}</text>")
        self.parts.append(f"<line x1='{self.left}' y1='{_TOP}' x2='{self.left}' y2='{bottom}' stroke='#222' stroke-width='0.8'/>")
        self.parts.append(f"<line x1='{self.left}' y1='{bottom}' x2='{self.right}' y2='{bottom}' stroke='#222' stroke-width='0.8'/>")
        self.parts.append(f"<text x='{(self.left + self.right) / 2:.1f}' y='{self.height - 6}' font-size='13.3' text-anchor='middle' fill='#222'>{_e(xlabel)}</text>")
        for row, label in enumerate(labels):
            self.parts.append(f"<text x='{self.left - 6}' y='{self.middle(row) + 4.5:.1f}' font-size='13.3' text-anchor='end' fill='#222'>{_e(label)}</text>")

    def x(self, value: float) -> float:
        return self.left + (self.right - self.left) * value / self.xmax

    def middle(self, row: int) -> float:
        return _TOP + _ROW * (row + 0.5)

    def bar(self, row: int, start: float, length: float, color: str) -> None:
        if length > 0:
            x0, x1 = self.x(start), self.x(start + length)
            y = self.middle(row) - _ROW * 0.4
            self.parts.append(f"<rect x='{x0:.1f}' y='{y:.1f}' width='{x1 - x0:.1f}' height='{_ROW * 0.8:.1f}' fill='{color}'/>")

    def note(self, row: int, at: float, text: str) -> None:
        self.parts.append(f"<text x='{self.x(at):.1f}' y='{self.middle(row) + 4.5:.1f}' font-size='12' fill='#222'>{_e(text)}</text>")

    def legend(self, entries: list[tuple[str, str]]) -> None:
        y = self.height - _BOTTOM - 15 * len(entries) - 4
        for i, (name, color) in enumerate(entries):
            x = self.right - 80
            self.parts.append(f"<rect x='{x}' y='{y + 15 * i}' width='20' height='10' fill='{color}'/>")
            self.parts.append(f"<text x='{x + 26}' y='{y + 15 * i + 10}' font-size='10.7' fill='#222'>{_e(name)}</text>")

    def svg(self) -> str:
        return (
            f"<svg xmlns='http://www.w3.org/2000/svg' width='{_WIDTH * 0.75:g}pt' height='{self.height * 0.75:g}pt' "
            f"viewBox='0 0 {_WIDTH} {self.height}' {_FONT} role='img'>{''.join(self.parts)}</svg>"
        )


def funnel_svg(steps: list[dict[str, Any]], rows_in: int) -> str:
    """A horizontal funnel: rows kept after each step, with the rows it dropped and errored.

    Args:
        steps: ``RunReport.to_dict()["steps"]`` (the reader first, op ``read``).
        rows_in: Rows the reader produced (the top bar when there is no ``read`` step).
    """
    bars = steps if steps and steps[0]["op"] == "read" else [{"op": "read", "rows_out": rows_in, "rows_errored": 0, "drops": {}}, *steps]
    labels = [f"{i}. {s['op']}" if i else s["op"] for i, s in enumerate(bars)]
    kept = [s["rows_out"] for s in bars]
    dropped = [sum(s.get("drops", {}).values()) for s in bars]
    errored = [s.get("rows_errored", 0) for s in bars]
    top = max([k + d + e for k, d, e in zip(kept, dropped, errored)] + [1])
    chart = _Chart(labels, top * 1.45, "Rows kept per step", "rows", integer=True)
    for row, (k, d, e) in enumerate(zip(kept, dropped, errored)):
        chart.bar(row, 0, k, KEPT)
        chart.bar(row, k, d, DROPPED)
        chart.bar(row, k + d, e, ERRORED)
        note = f"{k:,}" + (f"  (-{d:,} dropped)" if d else "") + (f"  (-{e:,} errored)" if e else "")
        chart.note(row, k + d + e + top * 0.01, note)
    chart.legend([("kept", KEPT), ("dropped", DROPPED), ("errored", ERRORED)])
    return chart.svg()


def throughput_svg(steps: list[dict[str, Any]]) -> str:
    """Seconds spent in each step (summed over workers), labelled with its rows per second."""
    seconds = [s.get("seconds", 0.0) for s in steps]
    top = max(seconds + [1e-3])
    chart = _Chart([s["op"] for s in steps], top * 1.6, "Time per step", "worker seconds", integer=False)
    for row, (s, sec) in enumerate(zip(steps, seconds)):
        rate = s["rows_in"] / s["seconds"] if s.get("seconds") else 0.0
        chart.bar(row, 0, sec, TIME)
        chart.note(row, sec + top * 0.01, f"{sec:.2f} s, {rate:,.0f} rows/s")
    return chart.svg()


def errors_svg(groups: list[tuple[str, str, int]]) -> str:
    """Row errors per (op, reason), largest first.

    Args:
        groups: ``(op, reason, count)`` triples.
    """
    labels = [f"{op}: {reason[:40]}" for op, reason, _ in groups]
    counts = [n for _, _, n in groups]
    chart = _Chart(labels, max(counts + [1]) * 1.05, "Row errors by op and reason", "rows", integer=True)
    for row, n in enumerate(counts):
        chart.bar(row, 0, n, ERRORED)
    return chart.svg()
