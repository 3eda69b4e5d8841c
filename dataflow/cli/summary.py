"""The end-of-run summary table."""
from __future__ import annotations

import click

from connectors.extensions import describe_skipped
from connectors.folder_scan import NOT_A_FILE

__all__ = ["render_summary", "skipped_text"]


def skipped_text(skipped: dict[str, int]) -> str:
    """Files the source's extension filter left out (``3 files with extension .txt, 1 file with no extension``), and entries that are not files."""
    hint = " (set source.options.extensions to read them)" if set(skipped) - {NOT_A_FILE} else ""
    return describe_skipped(skipped) + hint


def render_summary(report, color: bool = False) -> str:
    """Files skipped by extension; rows read, written, dropped per filter step, errored; wall time, rows/s and the HTML report.

    Args:
        report: The RunReport.
        color: Style the status line and the error count with ANSI colours (the CLI passes
            True and ``click.echo`` removes them when the output is not a terminal).
    """
    style = click.style if color else (lambda text, **_: text)
    rows = [("rows read", f"{report.rows_in:,}"), ("rows written", f"{report.rows_out:,}")]
    if report.skipped:
        rows.insert(0, ("skipped", skipped_text(report.skipped)))
    for i, step in enumerate(report.steps):
        dropped = sum(step.drops.values())
        if step.drops or dropped:
            reasons = ", ".join(f"{k}: {v}" for k, v in step.drops.items() if v)
            rows.append((f"dropped by {step.op}", f"{dropped:,}" + (f" ({reasons})" if reasons and list(step.drops) != [step.op] else "")))
    errored = f"{report.rows_errored:,}" + (f" -> {report.errors}" if report.rows_errored else "")
    rows.append(("rows errored", style(errored, fg="yellow") if report.rows_errored else errored))
    rows.append(("wall time", f"{report.wall_seconds:.1f} s"))
    rows.append(("rows/s", f"{report.rows_per_second:,.1f}"))
    if report.published and report.output:
        rows.append(("report", f"{report.output.rstrip('/')}/_dataflow/report.html"))
    status = "published" if report.published else (report.failure or "not published")
    head = f"{report.pipeline} on {report.engine}: " + style(status, fg="green" if report.published else "red", bold=True)
    head += f" -> {report.output}" if report.published else ""
    width = max(len(k) for k, _ in rows)
    return "\n".join([head, *(f"  {k:<{width}}  {v}" for k, v in rows)])
