"""The HTML run report rendered from a committed sink: sections, samples, escaping, no network."""
from __future__ import annotations

import json
import pathlib
import re

import pytest

from dataflow.errors import DataflowError
from dataflow.report.html import rerender_sink_report, render_report
from dataflow.report.samples import Samples
from tests.unit.report.sinks import report_dict


def _page(committed_sink) -> str:
    path = rerender_sink_report(str(committed_sink))
    assert path == str(committed_sink / "_dataflow" / "report.html")
    return (committed_sink / "_dataflow" / "report.html").read_text()


def test_report_shows_funnel_errors_throughput_and_resources(committed_sink):
    page = _page(committed_sink)
    funnel = re.search(r"<figure id='funnel-plot'>(.*?)</figure>", page, re.S).group(1)
    assert funnel.startswith("<svg") and "image.filter_size" in funnel and "(-2 dropped)" in funnel
    assert "image.filter_size:min_side: 2" in page
    assert "undecodable image" in page and "bad_truncated.jpg" in page
    assert "id='throughput-plot'" in page and "id='resources'" in page
    assert "id='cache'" not in page  # no cache counters in this run


def test_report_grid_has_kept_dropped_and_errored_samples(committed_sink):
    page = _page(committed_sink)
    samples = page[page.index("id='samples'") :]
    kept, dropped, errored = (samples.count(f"class='tile {kind}'") for kind in ("kept", "dropped", "errored"))
    assert (kept, dropped, errored) == (3, 2, 1)
    assert samples.count("<img src='data:image/jpeg;base64,") == 5  # the truncated JPEG shows no picture
    assert "tiny_img_0000.jpg: dropped by image.filter_size: image.filter_size:min_side" in samples


def test_report_is_self_contained(committed_sink):
    page = _page(committed_sink)
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:|//)""", page)
    assert "<script" not in page and "@import" not in page and "url(http" not in page
    assert "default-src 'none'" in page


def test_report_escapes_hostile_names(committed_sink):
    data = report_dict(committed_sink, committed_sink, pipeline="<script>alert(1)</script>")
    data["steps"][2]["drops"] = {"<img src=x onerror=alert(1)>": 2}
    page = render_report(data, Samples(), {"run_id": "r1"})
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_report_shows_cache_hit_rate_when_counted(committed_sink):
    cache = {"hits": 30, "misses": 10, "bytes_local": 3 * 2**20, "bytes_remote": 2**20, "evictions": 0, "corrupt": 0, "direct_reads": 0}
    page = render_report(report_dict(committed_sink, committed_sink, cache=cache), Samples(), {})
    section = page[page.index("id='cache'") :]
    assert "75.0%" in section and "3.0 MiB" in section


def test_rerender_needs_a_committed_run(tmp_path):
    with pytest.raises(DataflowError, match=r"no _manifest.json, _SUCCESS, _dataflow/report.json"):
        rerender_sink_report(str(tmp_path))


def test_report_json_round_trips_into_the_page(committed_sink):
    data = json.loads((committed_sink / "_dataflow" / "report.json").read_text())
    page = render_report(data, Samples(), {"committed_at": "2026-12-02T00:00:00Z"})
    assert "<h1>thumbs</h1>" in page and "2026-12-02T00:00:00Z" in page
    assert "id='samples'" in page  # an image pipeline shows the grid, empty here


def test_thumbnails_stop_when_the_report_time_budget_is_spent(committed_sink, monkeypatch):
    """Past ``MEDIA_SECONDS`` no file is opened: each tile says why it has no picture."""
    from dataflow.report import samples

    monkeypatch.setattr(samples, "MEDIA_SECONDS", -1.0)
    page = _page(committed_sink)
    grid = page[page.index("id='samples'") :]
    assert "<img src='data:image/" not in grid
    assert "not shown: thumbnails stop after" in grid


def test_source_thumbnails_read_at_most_the_byte_cap(committed_sink, monkeypatch):
    from dataflow.report import samples

    monkeypatch.setattr(samples, "MAX_IMAGE_BYTES", 100)
    grid = _page(committed_sink)[_page(committed_sink).index("id='samples'") :]
    assert "not viewable: file above the 100-byte preview limit" in grid


def test_sample_captions_take_off_only_dataflow_fragments(committed_sink):
    """A file named ``tiny#part=1.jpg`` keeps its name and its thumbnail; a sample's ``#key=`` is taken off its shard's name."""
    manifest = json.loads((committed_sink / "_manifest.json").read_text())
    inputs = manifest["shards"][0]["inputs"]
    tiny = pathlib.Path(next(i for i in inputs if "/tiny_" in i))
    renamed = tiny.rename(tiny.with_name("tiny#part=1.jpg"))
    manifest["shards"][0]["inputs"] = sorted(str(renamed) if i == str(tiny) else i for i in inputs)
    (committed_sink / "_manifest.json").write_text(json.dumps(manifest))
    errors = committed_sink / "_errors" / "r1-0.jsonl"
    record = {**json.loads(errors.read_text()), "source": f"{tiny.parent}/shard#part=1.tar#key=dir.d/s01"}
    errors.write_text(errors.read_text() + json.dumps(record) + "\n")
    page = _page(committed_sink)
    grid = page[page.index("id='samples'") :]
    assert "tiny#part=1.jpg: dropped by image.filter_size" in grid
    assert "shard#part=1.tar: image.decode: undecodable image" in grid
    assert grid.count("<img src='data:image/jpeg;base64,") == 5  # the renamed file's thumbnail too
