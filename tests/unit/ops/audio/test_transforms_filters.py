"""audio.to_mono, audio.resample, audio.filter_duration and audio.filter_loudness on decoded clips."""
from __future__ import annotations

import numpy as np
import pytest

from dataflow.ops.audio.decode import decode_audio
from dataflow.ops.audio.filter_duration import filter_audio_duration
from dataflow.ops.audio.filter_loudness import filter_audio_loudness
from dataflow.ops.audio.resample import resample_audio
from dataflow.ops.audio.to_mono import to_mono_audio
from examples.generate_audio import encode
from tests.unit.ops.audio.conftest import audio_batch, tone


def test_to_mono_averages_channels(encoded_clips):
    row = decode_audio({"bytes": encoded_clips["flac"]})
    out = to_mono_audio(audio_batch((row["audio"], row["sample_rate"])))
    mono = out["audio"][0]
    assert mono.shape == (row["audio"].shape[0], 1)
    np.testing.assert_allclose(mono[:, 0], row["audio"].mean(axis=1), atol=1e-6)


def test_resample_changes_rate_keeps_duration_and_pitch():
    pytest.importorskip("soxr")
    clip = tone(1.0, 44100, freq=1000.0)
    out = resample_audio(audio_batch((clip, 44100), (tone(0.5, 16000), 16000)), sample_rate=16000)
    a = out["audio"][0][:, 0]
    assert len(a) == 16000 and list(out["sample_rate"]) == [16000, 16000]
    assert out["duration"][1] == 0.5 and out["audio"][1].shape == (8000, 1)
    peak = np.argmax(np.abs(np.fft.rfft(a)))  # 1 Hz bins for a 1 s clip
    assert abs(peak - 1000) <= 1


def test_resample_rejects_a_bad_quality():
    with pytest.raises(Exception, match="quality"):
        resample_audio.params(quality="best")


def test_filter_duration_reasons():
    batch = {"duration": np.array([0.2, 3.0, 700.0])}
    keep, reasons = filter_audio_duration(batch, min_seconds=1.0, max_seconds=600.0)
    assert list(keep) == [False, True, False]
    assert list(reasons[~keep]) == ["audio.filter_duration:min_seconds", "audio.filter_duration:max_seconds"]


def test_filter_loudness_reasons():
    rate = 16000
    mostly_silent = np.concatenate([tone(0.2, rate, 0.5), np.zeros((int(1.8 * rate), 1), np.float32)])
    batch = audio_batch((tone(1, rate, 0.3), rate), (tone(1, rate, 0.001), rate), (tone(1, rate, 1.0) * 1.5, rate), (mostly_silent, rate))
    keep, reasons = filter_audio_loudness(batch, min_dbfs=-40, max_dbfs=-1, max_silence_ratio=0.8)
    assert list(keep) == [True, False, False, False]
    assert list(reasons[1:]) == ["audio.filter_loudness:min_dbfs", "audio.filter_loudness:max_dbfs", "audio.filter_loudness:max_silence_ratio"]


def _decoded(*clips: tuple[np.ndarray, int, str]) -> dict:
    """Encode each (samples, rate, format) clip as a real file, decode it, and batch the results."""
    rows = [decode_audio({"bytes": encode(np.clip(s, -1.0, 1.0), rate, fmt)}) for s, rate, fmt in clips]
    batch = audio_batch(*[(r["audio"], r["sample_rate"]) for r in rows])
    batch["duration"] = np.array([r["duration"] for r in rows])
    return batch


def test_to_mono_on_decoded_wav_and_flac(encoded_clips):
    rows = [decode_audio({"bytes": encoded_clips[f]}) for f in ("wav", "flac")]
    out = to_mono_audio(audio_batch(*[(r["audio"], r["sample_rate"]) for r in rows]))
    assert [m.shape[1] for m in out["audio"]] == [1, 1]
    np.testing.assert_allclose(out["audio"][0], out["audio"][1], atol=1e-4)  # both 16-bit PCM of one clip
    with pytest.raises(Exception, match="column"):
        to_mono_audio.params(column=["audio"])


def test_filter_duration_on_decoded_files():
    batch = _decoded((tone(0.3, 16000), 16000, "WAV"), (tone(2.0, 44100), 44100, "FLAC"), (tone(5.0, 22050), 22050, "WAV"))
    assert np.allclose(batch["duration"], [0.3, 2.0, 5.0])
    keep, reasons = filter_audio_duration(batch, min_seconds=1.0, max_seconds=4.0)
    assert list(reasons) == ["audio.filter_duration:min_seconds", "", "audio.filter_duration:max_seconds"]
    with pytest.raises(Exception, match="max_seconds"):
        filter_audio_duration.params(max_seconds="long")


def test_filter_loudness_on_decoded_files():
    rate = 16000
    mostly_silent = np.concatenate([tone(0.2, rate, 0.5), np.zeros((int(1.8 * rate), 1), np.float32)])
    batch = _decoded((tone(1, rate, 0.3), rate, "FLAC"), (tone(1, rate, 0.002), rate, "WAV"), (tone(1, rate, 3.0), rate, "FLAC"), (mostly_silent, rate, "WAV"))
    keep, reasons = filter_audio_loudness(batch)
    assert list(reasons) == ["", "audio.filter_loudness:min_dbfs", "audio.filter_loudness:max_dbfs", "audio.filter_loudness:max_silence_ratio"]
    with pytest.raises(Exception, match="min_dbfs"):
        filter_audio_loudness.params(min_dbfs="quiet")


def test_resample_decoded_flac_to_16k_and_a_bad_rate(encoded_clips):
    pytest.importorskip("soxr")
    row = decode_audio({"bytes": encoded_clips["flac"]})
    out = resample_audio(audio_batch((row["audio"], row["sample_rate"])), sample_rate=16000)
    frames = out["audio"][0].shape[0]
    assert out["sample_rate"][0] == 16000 and out["audio"][0].shape[1] == 2
    assert abs(frames - round(row["audio"].shape[0] * 16000 / 44100)) <= 1
    assert abs(out["duration"][0] - row["duration"]) < 1e-3
    with pytest.raises(ValueError, match="sample_rate must be positive"):
        resample_audio(audio_batch((row["audio"], row["sample_rate"])), sample_rate=0)
