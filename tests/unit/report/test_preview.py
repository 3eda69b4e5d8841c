"""Pipeline.preview(): the steps run in this process on the first inputs; every row's outcome is named."""
from __future__ import annotations

import base64
import io
import json
import shutil

import numpy as np
import pytest
import soundfile

import dataflow
from dataflow.errors import PlanError
from tests.datagen import write_images, write_jsonl


@pytest.fixture
def mixed_images(image_dir):
    """12 good images, 3 corrupt ones and 2 tiny ones (30x20)."""
    for p in write_images(image_dir.parent / "tiny", 2, size=(30, 20)):
        shutil.move(p, image_dir / f"tiny_{p.name}")
    return image_dir


def _thumbs(uri: str):
    return (
        dataflow.read(uri, format="image", name="thumbs")
        .apply("image.decode")
        .apply("image.filter_size", min_side=64)
        .apply("image.resize", max_side=64)
        .apply("image.encode", format="webp")
    )


def test_preview_names_the_step_and_reason_of_every_row(mixed_images):
    rows = _thumbs(str(mixed_images)).preview(n=20)
    by_name = {o.source.rsplit("/", 1)[-1]: o for o in rows.outcomes}
    assert len(by_name) == 17 and len(rows) == 12
    assert by_name["bad_empty.png"].describe() == "errored by 0: image.decode: empty image data"
    assert by_name["bad_truncated.jpg"].reason.startswith("undecodable image")
    tiny = by_name["tiny_img_0000.jpg"]
    assert (tiny.status, tiny.step, tiny.reason) == ("dropped", "1: image.filter_size", "image.filter_size:min_side")
    assert tiny.row["image"].shape == (20, 30, 3)  # the row as the filter saw it
    assert all(r["width"] <= 64 and r["height"] <= 64 and r["format"] == "webp" for r in rows)


def test_preview_reads_only_the_first_inputs(mixed_images):
    rows = _thumbs(str(mixed_images)).preview(n=4)
    assert len(rows.outcomes) == 4
    assert [o.source.rsplit("/", 1)[-1] for o in rows.outcomes] == ["bad_empty.png", "bad_text.jpg", "bad_truncated.jpg", "img_0000.jpg"]
    assert len(rows.dropped) == 3 and rows[0]["__source__"].endswith("img_0000.jpg")


def test_preview_html_shows_thumbnails_and_outcomes(mixed_images):
    page = _thumbs(str(mixed_images)).preview(n=20)._repr_html_()
    assert "12 kept, 2 dropped, 3 errored of 17 inputs" in page
    assert page.count("<img src='data:image/jpeg;base64,") == (12 + 2) * 2  # pixels and bytes (WebP when kept, the source when dropped)
    assert "dropped by 1: image.filter_size: image.filter_size:min_side" in page


def test_preview_of_jsonl_reports_bad_lines_and_truncates_text(tmp_path):
    rows = [{"text": "x" * 500, "n": 1}, {"text": "short", "n": 2}]
    write_jsonl(tmp_path / "in" / "a.jsonl", rows, bad_lines=[b"{not json"])
    p = dataflow.read(str(tmp_path / "in"), format="jsonl").apply("text.filter_length", min_chars=10)
    out = p.preview(n=3)
    assert [o.status for o in out.outcomes] == ["kept", "dropped", "errored"]
    assert out.outcomes[1].step == "0: text.filter_length" and out.outcomes[2].step == "read"
    page = out._repr_html_()
    assert "'>" + "x" * 120 + "&hellip; <i>(500 chars)</i>" in page
    assert "<span class='drop'>dropped by 0: text.filter_length</span>" in page


def test_preview_shows_audio_players(tmp_path):
    folder = tmp_path / "audio"
    folder.mkdir()
    t = np.linspace(0, 0.25, 4000, endpoint=False)
    soundfile.write(folder / "tone.wav", (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 16000)
    out = dataflow.read(str(folder), format="audio").apply("audio.decode").preview()
    assert out[0]["sample_rate"] == 16000
    page = out._repr_html_()
    assert page.count("<audio controls") == 2  # the encoded file and the decoded samples
    uri = page.split("<audio controls preload='none' src='data:audio/wav;base64,")[2].split("'")[0]
    samples, rate = soundfile.read(io.BytesIO(base64.b64decode(uri)))
    assert rate == 16000 and len(samples) == 4000


def test_preview_refuses_named_sources(tmp_path):
    write_jsonl(tmp_path / "left.jsonl", [{"k": 1}])
    write_jsonl(tmp_path / "right.jsonl", [{"k": 1, "v": 2}])
    spec = {
        "version": 1, "name": "j", "source": {"uri": str(tmp_path / "left.jsonl"), "format": "jsonl"},
        "sources": {"right": {"uri": str(tmp_path / "right.jsonl"), "format": "jsonl"}},
        "steps": [{"op": "table.join", "params": {"right": "right", "keys": ["k"]}}],
    }
    with pytest.raises(PlanError, match="preview does not load"):
        dataflow.Pipeline(json.loads(json.dumps(spec))).preview()
