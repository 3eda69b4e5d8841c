"""The three curation pipelines end to end on real Ray, on generated data with planted problems."""
from __future__ import annotations

import io
import json
import pathlib

import pyarrow.parquet as pq
import pytest
import soundfile as sf
from PIL import Image

from dataflow.dsl.parse import load_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline
from examples.generate_audio import generate_audio
from examples.generate_images import generate_images
from examples.generate_text import generate_text

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run(name: str, data: pathlib.Path, out: pathlib.Path):
    spec = load_pipeline(str(ROOT / "pipelines" / f"{name}.yaml"), environ={"DATAFLOW_DATA": str(data), "DATAFLOW_OUT": str(out)})
    report = run_pipeline(spec, RunOptions(progress=False))
    return report, {s.op: s for s in report.steps}


def _errors(out: pathlib.Path) -> list[dict]:
    return [json.loads(line) for p in sorted((out / "_errors").glob("*.jsonl")) for line in p.read_text().splitlines() if line.strip()]


def test_image_curation_drops_planted_problems(ray_local, tmp_path):
    planted = generate_images(tmp_path / "images", unique=12)
    report, steps = _run("image_curation", tmp_path / "images", tmp_path / "out")
    assert report.published and report.rows_out == planted["unique"]
    assert steps["image.decode"].rows_errored == planted["corrupt"]
    assert steps["image.filter_size"].drops == {"image.filter_size:min_side": planted["tiny"]}
    assert steps["image.filter_aspect_ratio"].drops == {"image.filter_aspect_ratio:max_ratio": planted["wide"]}
    assert steps["image.filter_blur"].rows_in - steps["image.filter_blur"].rows_out == planted["blurry"]
    assert steps["image.dedup_phash"].rows_in - steps["image.dedup_phash"].rows_out == planted["duplicates"]
    errors = _errors(tmp_path / "out")
    assert sorted(pathlib.Path(e["source"]).name for e in errors) == ["bad_empty.png", "bad_text.webp", "bad_truncated.jpg"]
    table = pq.read_table(next((tmp_path / "out").glob("*.parquet")))
    assert table.num_rows == planted["unique"] and set(table.column("format").to_pylist()) == {"webp"}
    with Image.open(io.BytesIO(table.column("bytes")[0].as_py())) as im:
        assert im.format == "WEBP" and max(im.size) <= 512
    assert len(set(table.column("phash").to_pylist())) == planted["unique"]


def test_audio_curation_segments_speech_and_drops_planted_problems(ray_local, tmp_path):
    pytest.importorskip("soxr")
    planted = generate_audio(tmp_path / "audio", clips=6)
    report, steps = _run("audio_curation", tmp_path / "audio", tmp_path / "out")
    assert steps["audio.decode"].rows_errored == planted["corrupt"]
    assert steps["audio.filter_duration"].drops == {"audio.filter_duration:min_seconds": planted["short"]}
    assert steps["audio.filter_loudness"].drops == {"audio.filter_loudness:min_dbfs": planted["silent"]}
    assert report.rows_out == planted["segments"]
    assert len(_errors(tmp_path / "out")) == planted["corrupt"]
    table = pq.read_table(next((tmp_path / "out").glob("*.parquet")))
    samples, rate = sf.read(io.BytesIO(table.column("bytes")[0].as_py()))
    assert rate == 16000 and samples.ndim == 1 and 0.5 <= len(samples) / rate <= 20.0
    assert set(table.column("sample_rate").to_pylist()) == {16000}


def test_text_curation_removes_duplicates_foreign_and_pii(ray_local, tmp_path):
    pytest.importorskip("py3langid")
    planted = generate_text(tmp_path / "text", docs=24)
    report, steps = _run("text_curation", tmp_path / "text", tmp_path / "out")
    assert report.rows_out == planted["unique"]
    assert steps["read"].rows_errored == planted["bad_lines"]
    assert sum(steps["text.filter_quality"].drops.values()) == planted["low_quality"]
    assert steps["text.detect_language"].rows_in - steps["text.detect_language"].rows_out == planted["foreign"]
    assert steps["text.dedup_exact"].rows_in - steps["text.dedup_exact"].rows_out == planted["exact_duplicates"]
    assert steps["text.dedup_minhash"].rows_in - steps["text.dedup_minhash"].rows_out == planted["near_duplicates"]
    rows = [json.loads(line) for p in (tmp_path / "out").glob("*.jsonl") for line in p.read_text().splitlines()]
    # one row per original document: doc-i itself or one of its copies (exact-i, near-i; "fine" copies doc-0)
    originals = sorted(0 if r["id"] == "fine" else int(r["id"].split("-")[1]) for r in rows)
    assert originals == list(range(planted["unique"]))
    assert sum(r["pii_email"] + r["pii_phone"] + r["pii_ip"] for r in rows) == planted["pii_docs"]
    assert not any("@example.org" in r["text"] or "Ã" in r["text"] for r in rows)
    assert {r["language"] for r in rows} == {"en"}
    assert len(_errors(tmp_path / "out")) == planted["bad_lines"]
