"""The HTML run report of a real run (session Ray), opened in a real headless Chromium.

One run (``dataflow run --json`` in-process, on the session's Ray) feeds every test: the page
loads with no console error and requests nothing but itself and its ``data:`` images, shows the
funnel plot and thumbnails, and its screenshot is not blank.
"""
from __future__ import annotations

import io
import json
import pathlib
import shutil

import pytest
from click.testing import CliRunner
from PIL import Image, ImageStat

from dataflow.cli.main import cli
from dataflow.report.browser import CHROMIUM, HeadlessChromium
from tests.datagen import write_corrupt_images, write_images

ROOT = pathlib.Path(__file__).parents[2]

pytestmark = pytest.mark.skipif(not pathlib.Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/run installs it: apt-get install -y chromium)")


@pytest.fixture(scope="module")
def run_sink(ray_local, tmp_path_factory):
    """Run pipelines/thumbnails.yaml over 10 good, 2 tiny and 3 corrupt images; return (sink, stdout JSON)."""
    base = tmp_path_factory.mktemp("report")
    images = base / "images"
    write_images(images, 10, size=(320, 240))
    for p in write_images(base / "tiny", 2, size=(40, 30)):
        shutil.move(p, images / f"tiny_{p.name}")
    write_corrupt_images(images)
    sink = base / "thumbs"
    args = ["run", str(ROOT / "pipelines" / "thumbnails.yaml"), "--quiet", "--json",
            "--set", f"source.uri={images}", "--set", f"sink.uri={sink}", "--set", "errors.max_error_ratio=0.5"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return sink, json.loads(result.stdout)


def test_json_mode_prints_the_committed_report(run_sink):
    sink, printed = run_sink
    assert (printed["rows_in"], printed["rows_out"], printed["rows_errored"]) == (15, 10, 3)
    assert printed == json.loads((sink / "_dataflow" / "report.json").read_text())
    assert printed["source_format"] == "image" and printed["resources"]["steps"][0]["op"] == "image.decode"


def test_report_loads_in_chromium_with_plots_and_thumbnails(run_sink):
    sink, report = run_sink
    page_file = sink / "_dataflow" / "report.html"
    with HeadlessChromium() as browser:
        page = browser.open(page_file.as_uri())
        assert page.console_errors == []
        assert page.failed_requests == []
        assert {u.split(":", 1)[0] for u in page.requests} <= {"file", "data"}
        funnel = page.evaluate("document.querySelector('#funnel-plot svg').textContent")
        assert all(step["op"] in funnel for step in report["steps"])
        assert page.evaluate("document.querySelector('#funnel-plot svg').getBoundingClientRect().height") > 100
        sizes = page.evaluate("[...document.querySelectorAll('#samples .tile')].map(t => [t.className, t.querySelector('img') ? t.querySelector('img').naturalWidth : 0])")
        png = page.screenshot(width=1200)
    kept = [w for cls, w in sizes if "kept" in cls]
    dropped = [w for cls, w in sizes if "dropped" in cls]
    errored = [w for cls, w in sizes if "errored" in cls]
    assert len(kept) == 8 and all(w > 0 for w in kept)  # 8 thumbnails at most per kind
    assert len(dropped) == 2 and all(w > 0 for w in dropped)  # the two tiny images
    assert len(errored) == 3
    shot = Image.open(io.BytesIO(png)).convert("RGB")
    assert shot.width == 1200 and shot.height > 1500
    assert max(ImageStat.Stat(shot).stddev) > 20  # not a blank page
    assert len(shot.getcolors(maxcolors=1 << 20)) > 500  # plots and pictures, not just text


def test_report_command_rerenders_the_same_sections(run_sink):
    sink, _ = run_sink
    before = (sink / "_dataflow" / "report.html").read_text()
    result = CliRunner().invoke(cli, ["report", str(sink), "--rerender"])
    assert result.exit_code == 0, result.output
    after = (sink / "_dataflow" / "report.html").read_text()
    for section in ("id='funnel'", "id='errors'", "id='throughput'", "id='resources'", "id='samples'"):
        assert section in before and section in after
    assert after.count("class='tile kept'") == before.count("class='tile kept'") == 8
