"""``dataflow report SINK``: print, re-render or open a committed sink's HTML run report."""
from __future__ import annotations

import posixpath

import click

from dataflow.cli.options import debug_option, handle_errors

__all__ = ["report"]


@click.command()
@click.argument("sink")
@click.option("--open", "open_page", is_flag=True, help="Open the report in the default web browser.")
@click.option("--rerender", is_flag=True, help="Render the page again from the sink's report.json, manifest and error records.")
@debug_option
@handle_errors
def report(sink, open_page, rerender):
    """Print the path of SINK's HTML run report (written at commit to SINK/_dataflow/report.html).

    A sink committed without a report.html (or with --rerender) gets one rendered from its
    report.json, _manifest.json and _errors/. The page is self-contained: plots, thumbnails and
    styles are embedded, so it can be copied or archived as one file.

    \b
    Examples:
      dataflow report ./out/thumbs
      dataflow report ./out/thumbs --open
      dataflow report s3://bucket/out --rerender
    """
    import webbrowser

    from connectors.registry import filesystem, scheme_of, strip_scheme
    from dataflow.errors import DataflowError
    from dataflow.report.html import REPORT_HTML, rerender_sink_report

    fs = filesystem(sink)
    path = posixpath.join(strip_scheme(sink), REPORT_HTML)
    if rerender or not fs.exists(path):
        path = rerender_sink_report(sink)
    click.echo(path if scheme_of(sink) == "file" else f"{sink.split('://', 1)[0]}://{path}")
    if open_page:
        if scheme_of(sink) != "file":
            raise DataflowError(f"--open: the report lies on {scheme_of(sink)}:// storage; copy {path} to a local file and open that")
        webbrowser.open(f"file://{path}")
