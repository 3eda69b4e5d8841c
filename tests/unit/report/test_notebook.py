"""Notebook displays: cells, the plan of a Pipeline, a RunReport table, a sink's report in an iframe."""
from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image

import dataflow
from dataflow.runtime.report import RunReport, StepReport
from dataflow.report import show_report
from dataflow.report.notebook import cell_html
from tests.datagen import encode, gradient


def _decoded(uri: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(uri.split("base64,", 1)[1].split("'", 1)[0])))


def test_cell_shows_pixels_as_a_bounded_thumbnail():
    html = cell_html(gradient(400, 300))
    assert html.endswith("<br><small>400x300</small>")
    assert _decoded(html).size == (128, 96)


def test_cell_shows_encoded_images_and_plain_bytes():
    assert "<img src='data:image/jpeg;base64," in cell_html(encode(gradient(50, 40), "PNG"))
    assert cell_html(b"\x00" * 300) == "<i>300 bytes</i>"


def test_cell_plays_float_samples_only_with_a_sample_rate():
    samples = np.zeros((1600, 1), dtype=np.float32)
    assert cell_html(samples, {"sample_rate": 16000}).startswith("<audio controls")
    assert "<audio" not in cell_html(samples, {})


def test_cell_escapes_and_truncates_text():
    assert cell_html("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"
    assert "(1,000 chars)" in cell_html("y" * 1000)


def test_pipeline_html_lists_steps_engines_and_params():
    p = dataflow.read("./images", format="image", name="thumbs").apply("image.decode").apply("image.resize", max_side=256, resources={"batch_size": 8})
    html = p._repr_html_()
    assert "<b>Pipeline thumbs</b>" in html
    assert "<td>1</td><td>image.resize</td><td>ray</td><td>max_side=256 <small>[batch_size=8]</small></td>" in html
    assert "<i>no sink yet</i>" in html


def test_pipeline_html_names_what_is_wrong():
    html = dataflow.read("./images", format="image").apply("image.resize", max_sid=3)._repr_html_()
    assert "not runnable yet" in html and "did you mean &#x27;max_side&#x27;" in html


def test_run_report_html_is_a_compact_table():
    report = RunReport(pipeline="p", engine="ray", rows_in=10, rows_out=7, rows_errored=1, wall_seconds=2.0, published=True, output="/o",
                       steps=[StepReport(op="image.filter_size", rows_in=9, rows_out=7, drops={"image.filter_size:min_side": 2}, seconds=0.5)])
    html = report._repr_html_()
    assert "10 read, 7 written, 1 errored in 2.0 s (5.0 rows/s)" in html
    assert "<td>image.filter_size</td><td>9</td><td>7</td><td>2</td><td>0</td><td>0.50</td>" in html


def test_show_report_embeds_the_sink_page(committed_sink):
    from dataflow.report.html import rerender_sink_report

    rerender_sink_report(str(committed_sink))
    view = show_report(str(committed_sink))
    html = view._repr_html_()
    assert html.startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;') and "funnel-plot" in html
