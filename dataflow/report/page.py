"""Page pieces shared by the run report and the notebook displays: the style sheet, cards, tables."""
from __future__ import annotations

import html

__all__ = ["CSS", "card", "table"]

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:0 auto;max-width:1280px;padding:24px}
h1{margin:0 0 4px;font-size:24px}h2{margin:28px 0 8px;font-size:18px;border-bottom:1px solid #e4e4e4;padding-bottom:4px}
h3{margin:14px 0 6px;font-size:15px}.meta,.where,.note,footer{color:#666}.where{font-family:ui-monospace,monospace;font-size:12px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}
.card{border:1px solid #e1e4e8;border-radius:6px;padding:8px 12px;min-width:110px;background:#fafbfc}
.card .v{font-size:20px;font-weight:600}.card .k{color:#666;font-size:12px}.card.warn .v{color:#c8453b}
table.df{border-collapse:collapse;margin:8px 0;font-size:13px}
table.df th,table.df td{border-bottom:1px solid #eee;padding:4px 10px;text-align:left;vertical-align:top}
table.df .path{overflow-wrap:anywhere}table.df th{background:#f6f8fa}table.df td.n{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:8px 0}figure svg{max-width:100%;height:auto}
.pair{display:grid;grid-template-columns:minmax(0,1.25fr) minmax(0,1fr);gap:18px;align-items:start}.pair>*{min-width:0}
@media (max-width:900px){.pair{grid-template-columns:1fr}}
.grid{display:flex;flex-wrap:wrap;gap:10px}
.tile{width:150px;margin:0;border:1px solid #ddd;border-radius:6px;padding:6px;background:#fff}
.tile img{display:block;max-width:138px;max-height:138px;margin:0 auto}
.tile figcaption{font-size:11px;color:#444;word-break:break-all;margin-top:4px}
.tile.kept{border-top:4px solid #2f7ebc}.tile.dropped{border-top:4px solid #e8a33d}.tile.errored{border-top:4px solid #c8453b}
.noimg{height:90px;display:flex;align-items:center;justify-content:center;background:#f3f3f3;color:#999;font-size:12px}
code{font-size:12px;background:#f3f3f3;padding:1px 4px;border-radius:3px}footer{margin-top:32px;font-size:12px}
"""


def card(label: str, value: str, warn: bool = False) -> str:
    """A small box with a big value and its label (both escaped)."""
    return f"<div class='card{' warn' if warn else ''}'><div class='v'>{html.escape(value)}</div><div class='k'>{html.escape(label)}</div></div>"


def table(head: list[str], rows: list[list[str]], numeric: tuple[int, ...] = (), raw: tuple[int, ...] = ()) -> str:
    """An HTML table; cells are escaped except the columns in ``raw`` (already HTML).

    Args:
        head: Column titles.
        rows: Cell texts per row.
        numeric: Columns aligned right.
        raw: Columns whose cells are HTML the caller built (and escaped) itself.
    """
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = []
    for row in rows:
        cells = []
        for i, v in enumerate(row):
            cls = " class='n'" if i in numeric else ""
            cells.append(f"<td{cls}>{v if i in raw else html.escape(str(v))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table class='df'><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"
