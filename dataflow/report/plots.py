"""The report's plots: matplotlib figures rendered to inline SVG (text stays text, no fonts embedded)."""
from __future__ import annotations

import io
from typing import Any

__all__ = ["errors_svg", "funnel_svg", "throughput_svg"]

KEPT = "#2f7ebc"
DROPPED = "#e8a33d"
ERRORED = "#c8453b"
TIME = "#5b8c5a"
# No RDF block (it names external vocabularies) and no date: the same run renders the same SVG text.
_NO_METADATA = {"Creator": None, "Date": None, "Format": None, "Type": None}


_DPI = 96
_CHAR_PX = 7.8  # a 10 pt label character, about; margins come from it (a layout engine costs a draw per plot)


def _figure(labels: list[str]):
    from matplotlib.figure import Figure

    width, height = 7.5, 0.9 + 0.42 * max(len(labels), 1)
    fig = Figure(figsize=(width, height), dpi=_DPI)
    left = min(0.6, (20 + _CHAR_PX * max(map(len, labels), default=0)) / (width * _DPI))
    fig.subplots_adjust(left=left, right=0.98, bottom=42 / (height * _DPI), top=1 - 26 / (height * _DPI))
    return fig, fig.add_subplot()


def _svg(fig) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 10}):
        fig.savefig(buf, format="svg", transparent=True, metadata=_NO_METADATA)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _style(ax, integer: bool = False) -> None:
    if integer:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def funnel_svg(steps: list[dict[str, Any]], rows_in: int) -> str:
    """A horizontal funnel: rows kept after each step, with the rows it dropped and errored.

    Args:
        steps: ``RunReport.to_dict()["steps"]`` (the reader first, op ``read``).
        rows_in: Rows the reader produced (the top bar when there is no ``read`` step).
    """
    bars = steps if steps and steps[0]["op"] == "read" else [{"op": "read", "rows_out": rows_in, "rows_errored": 0, "drops": {}}, *steps]
    labels = [f"{i}. {s['op']}" if i else s["op"] for i, s in enumerate(bars)]
    fig, ax = _figure(labels)
    y = list(range(len(bars)))[::-1]
    kept = [s["rows_out"] for s in bars]
    dropped = [sum(s.get("drops", {}).values()) for s in bars]
    errored = [s.get("rows_errored", 0) for s in bars]
    ax.barh(y, kept, color=KEPT, label="kept")
    ax.barh(y, dropped, left=kept, color=DROPPED, label="dropped")
    ax.barh(y, errored, left=[k + d for k, d in zip(kept, dropped)], color=ERRORED, label="errored")
    top = max([k + d + e for k, d, e in zip(kept, dropped, errored)] + [1])
    for yi, k, d, e in zip(y, kept, dropped, errored):
        note = f"{k:,}" + (f"  (-{d:,} dropped)" if d else "") + (f"  (-{e:,} errored)" if e else "")
        ax.text(k + d + e + top * 0.01, yi, note, va="center", fontsize=9)
    ax.set_yticks(y, labels)
    ax.set_xlim(0, top * 1.45)
    ax.set_xlabel("rows")
    ax.set_title("Rows kept per step", loc="left")
    ax.legend(loc="lower right", frameon=False, fontsize=8)
    _style(ax, integer=True)
    return _svg(fig)


def throughput_svg(steps: list[dict[str, Any]]) -> str:
    """Seconds spent in each step (summed over workers), labelled with its rows per second."""
    fig, ax = _figure([s["op"] for s in steps])
    y = list(range(len(steps)))[::-1]
    seconds = [s.get("seconds", 0.0) for s in steps]
    ax.barh(y, seconds, color=TIME)
    top = max(seconds + [1e-3])
    for yi, s in zip(y, steps):
        rate = s["rows_in"] / s["seconds"] if s.get("seconds") else 0.0
        ax.text(s.get("seconds", 0.0) + top * 0.01, yi, f"{s.get('seconds', 0.0):.2f} s, {rate:,.0f} rows/s", va="center", fontsize=9)
    ax.set_yticks(y, [s["op"] for s in steps])
    ax.set_xlim(0, top * 1.6)
    ax.set_xlabel("worker seconds")
    ax.set_title("Time per step", loc="left")
    _style(ax)
    return _svg(fig)


def errors_svg(groups: list[tuple[str, str, int]]) -> str:
    """Row errors per (op, reason), largest first.

    Args:
        groups: ``(op, reason, count)`` triples.
    """
    labels = [f"{op}: {reason[:40]}" for op, reason, _ in groups]
    fig, ax = _figure(labels)
    y = list(range(len(groups)))[::-1]
    ax.barh(y, [n for _, _, n in groups], color=ERRORED)
    ax.set_yticks(y, labels)
    ax.set_xlabel("rows")
    ax.set_title("Row errors by op and reason", loc="left")
    _style(ax, integer=True)
    return _svg(fig)
