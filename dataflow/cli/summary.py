"""The end-of-run summary table."""
from __future__ import annotations

__all__ = ["render_summary"]


def render_summary(report) -> str:
    """Rows read, written, dropped per filter step, errored; wall time and rows/s."""
    rows = [("rows read", f"{report.rows_in:,}"), ("rows written", f"{report.rows_out:,}")]
    for i, step in enumerate(report.steps):
        dropped = sum(step.drops.values())
        if step.drops or dropped:
            reasons = ", ".join(f"{k}: {v}" for k, v in step.drops.items() if v)
            rows.append((f"dropped by {step.op}", f"{dropped:,}" + (f" ({reasons})" if reasons and list(step.drops) != [step.op] else "")))
    rows.append(("rows errored", f"{report.rows_errored:,}" + (f" -> {report.errors}" if report.rows_errored else "")))
    rows.append(("wall time", f"{report.wall_seconds:.1f} s"))
    rows.append(("rows/s", f"{report.rows_per_second:,.1f}"))
    status = "published" if report.published else (report.failure or "not published")
    head = f"{report.pipeline} on {report.engine}: {status}" + (f" -> {report.output}" if report.published else "")
    width = max(len(k) for k, _ in rows)
    return "\n".join([head, *(f"  {k:<{width}}  {v}" for k, v in rows)])
