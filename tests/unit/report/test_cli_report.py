"""``dataflow report`` and the CLI polish: --json, colours only on a terminal, examples in every --help."""
from __future__ import annotations

import re

import click
from click.testing import CliRunner

from dataflow.cli.main import cli
from dataflow.cli.summary import render_summary
from dataflow.runtime.report import RunReport


def test_report_renders_a_missing_page_and_prints_its_path(committed_sink):
    page = committed_sink / "_dataflow" / "report.html"
    result = CliRunner().invoke(cli, ["report", str(committed_sink)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(page) and "funnel-plot" in page.read_text()


def test_report_rerender_replaces_the_page(committed_sink):
    page = committed_sink / "_dataflow" / "report.html"
    page.write_text("stale")
    assert CliRunner().invoke(cli, ["report", str(committed_sink)]).exit_code == 0
    assert page.read_text() == "stale"
    assert CliRunner().invoke(cli, ["report", str(committed_sink), "--rerender"]).exit_code == 0
    assert page.read_text().startswith("<!DOCTYPE html>")


def test_report_of_an_uncommitted_folder_fails_with_a_hint(tmp_path):
    result = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert result.exit_code == 1
    assert "holds no committed dataflow run" in result.output and "run the pipeline first" in result.output


def test_summary_is_coloured_only_when_asked():
    report = RunReport(pipeline="p", engine="ray", rows_in=3, rows_out=2, rows_errored=1, published=True, output="/o", errors="/o/_errors/")
    plain, coloured = render_summary(report), render_summary(report, color=True)
    assert "\x1b[" not in plain and "\x1b[32m\x1b[1mpublished" in coloured
    assert click.unstyle(coloured) == plain
    assert "report        /o/_dataflow/report.html" in plain


def _commands(cmd, path):
    yield path, cmd
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from _commands(sub, [*path, name])


def test_every_command_help_shows_an_example():
    """Every command and subcommand's own --help shows an ``Examples:`` block with a ``dataflow <command> ...`` line."""
    missing = []
    for path, command in _commands(cli, ["dataflow"]):
        name = " ".join(path)
        text = command.get_help(click.Context(command, info_name=name))
        example = r"\n    dataflow \S" if name == "dataflow" else rf"\n    {name}(\s|$)"
        if not ("Examples:" in text and re.search(example, text)):
            missing.append(name)
    assert missing == []
    assert {"dataflow k8s render", "dataflow cache warm", "dataflow jobs stop", "dataflow commit"} <= {" ".join(p) for p, _ in _commands(cli, ["dataflow"])}
