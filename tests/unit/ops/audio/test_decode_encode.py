"""audio.decode / audio.encode on real WAV, FLAC, OGG, AIFF and MP3 bytes."""
from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile as sf

from dataflow.errors import RowError
from dataflow.ops.audio.decode import decode_audio
from dataflow.ops.audio.encode import encode_audio
from tests.unit.ops.audio.conftest import audio_batch, tone


@pytest.mark.parametrize("fmt", ["wav", "flac", "ogg", "aiff", "mp3"], ids=str)
def test_decode_keeps_rate_channels_and_duration(encoded_clips, stereo_speech, fmt):
    row = decode_audio({"bytes": encoded_clips[fmt]})
    samples = row["audio"]
    assert samples.dtype == np.float32 and samples.shape[1] == 2
    assert row["sample_rate"] == 44100
    assert abs(row["duration"] - len(stereo_speech) / 44100) < 0.1  # MP3/OGG pad a little
    if fmt in ("wav", "flac", "aiff"):
        assert np.abs(samples - stereo_speech).max() < 1e-3  # 16-bit PCM round trip


@pytest.mark.parametrize("data", [b"", b"RIFF\x00\x00\x00\x00WAVEjunk", b"hello" * 40, None], ids=["empty", "bad-header", "text", "null"])
def test_bad_audio_is_a_row_error(data):
    with pytest.raises(RowError):
        decode_audio({"bytes": data})


def test_truncated_flac_is_a_row_error(encoded_clips):
    with pytest.raises(RowError, match="undecodable"):
        decode_audio({"bytes": encoded_clips["flac"][:50]})


def test_overlong_audio_is_refused(encoded_clips):
    with pytest.raises(RowError, match="max_seconds"):
        decode_audio({"bytes": encoded_clips["wav"]}, max_seconds=1.0)


@pytest.mark.parametrize("fmt", ["flac", "wav"], ids=str)
def test_encode_round_trips(fmt):
    clip = tone(0.5, 16000, amplitude=0.3)
    out = encode_audio(audio_batch((clip, 16000)), format=fmt)
    back, rate = sf.read(io.BytesIO(out["bytes"][0]), dtype="float32", always_2d=True)
    assert rate == 16000 and out["format"][0] == fmt
    np.testing.assert_allclose(back, clip, atol=1e-4)


def test_encode_empty_clip_is_a_row_error():
    with pytest.raises(RowError, match="cannot encode"):
        encode_audio(audio_batch((np.zeros((0, 1), np.float32), 16000)))
