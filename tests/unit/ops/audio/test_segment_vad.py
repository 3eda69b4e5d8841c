"""audio.segment_vad: energy segments with media-fragment sources; Silero on the same clip."""
from __future__ import annotations

import numpy as np
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.errors import PipelineSpecError, RowError
from dataflow.ops.audio.decode import decode_audio
from dataflow.ops.audio.segment_vad import segment_audio_vad, shape_segments
from examples.generate_audio import encode, speech_clip


def _row(bursts: int, rate: int = 16000, seed: int = 0) -> dict:
    row = decode_audio({"bytes": encode(speech_clip(bursts, rate, seed), rate, "FLAC"), "__source__": "s3://b/clip.flac"})
    return row


@pytest.mark.parametrize("bursts", [1, 3], ids=["one", "three"])
def test_energy_vad_finds_each_burst(bursts):
    segments = segment_audio_vad(_row(bursts))
    assert len(segments) == bursts
    starts = [s["start"] for s in segments]
    assert starts == sorted(starts) and 0.3 < starts[0] < 0.6  # the clip opens with 0.5 s of silence
    for k, s in enumerate(segments):
        assert s["segment"] == k and s["__source__"] == f"s3://b/clip.flac#t={s['start']:.3f},{s['end']:.3f}"
        assert s["audio"].shape[1] == 2 and abs(s["duration"] - (s["end"] - s["start"])) < 0.01


def test_long_speech_is_split_evenly_and_short_dropped():
    assert shape_segments([(0.0, 50.0)], 50.0, min_seconds=0.5, max_seconds=20.0, merge_gap_seconds=0.3, pad_seconds=0.0) == [
        (0.0, 50 / 3), (50 / 3, 100 / 3), (100 / 3, 50.0)
    ]
    merged = shape_segments([(1.0, 2.0), (2.2, 3.0), (5.0, 5.2)], 6.0, min_seconds=0.5, max_seconds=20.0, merge_gap_seconds=0.3, pad_seconds=0.0)
    assert merged == [(1.0, 3.0)]


def test_silence_yields_no_segments():
    row = {"audio": np.zeros((16000, 1), np.float32), "sample_rate": 16000, "__source__": "x"}
    assert segment_audio_vad(row) == []


def test_bad_array_is_a_row_error():
    with pytest.raises(RowError):
        segment_audio_vad({"audio": np.zeros((0, 1), np.float32), "sample_rate": 16000, "__source__": "x"})


def test_silero_method_runs_offline_on_44k_input():
    pytest.importorskip("silero_vad")
    pytest.importorskip("soxr")
    noise = {"audio": np.random.default_rng(0).normal(0, 1e-4, (44100 * 2, 1)).astype(np.float32), "sample_rate": 44100, "__source__": "x"}
    assert segment_audio_vad(noise, method="silero") == []
    segments = segment_audio_vad(_row(2, rate=44100), method="silero")
    # synthetic harmonics are not speech to Silero; whatever it finds must lie inside the clip
    assert all(0 <= s["start"] < s["end"] <= 5.5 and s["audio"].shape[1] == 2 for s in segments)


def _vad_pipeline(params: dict) -> dict:
    return {
        "name": "vad",
        "source": {"uri": "./clips", "format": "audio"},
        "steps": [{"op": "audio.decode"}, {"op": "audio.segment_vad", "params": params}],
        "sink": {"uri": "./out", "format": "parquet"},
    }


def test_silero_without_its_packages_fails_validation_with_the_install_line(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("silero_vad", "torch") else real(name, *a))
    with pytest.raises(PipelineSpecError) as info:
        parse_pipeline(_vad_pipeline({"method": "silero"}))
    issue = info.value.issues[0]
    assert issue.key == "steps[1].op" and "needs silero_vad, torch" in issue.message
    assert issue.hint == "run: pip install 'dataflow[vad]'"
    assert parse_pipeline(_vad_pipeline({"method": "energy"})).steps[1].params == {"method": "energy"}  # the default needs neither


@pytest.mark.parametrize("params, modules", [({}, []), ({"method": "energy"}, []), ({"method": "silero"}, ["silero_vad", "torch"])], ids=["default", "energy", "silero"])
def test_silero_requirement_follows_the_method_param(params, modules):
    assert segment_audio_vad.requirements(params) == [(m, "vad") for m in modules]
