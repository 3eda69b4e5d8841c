"""Decode encoded audio bytes into float32 sample arrays."""
from __future__ import annotations

import io

import soundfile as sf

from dataflow.errors import RowError
from dataflow.ops.declare import op

_BAD_AUDIO = (sf.LibsndfileError, RuntimeError, ValueError, TypeError, EOFError)


@op(
    name="audio.decode",
    modality="audio",
    inputs=("{column}",),
    consumes=("{column}",),
    input_types={"{column}": "binary"},
    outputs=("{output}", "sample_rate", "duration"),
    batch_format="row",
)
def decode_audio(row: dict, *, column: str = "bytes", output: str = "audio", max_seconds: float | None = 3600.0) -> dict:
    """Decode WAV, FLAC, OGG/Vorbis, AIFF or MP3 bytes into a float32 (frames, channels) array.

    The sample rate is kept (resample with ``audio.resample``). Corrupt, empty or over-long
    files are row errors.

    Args:
        column: Column holding the encoded bytes.
        output: Column to write the samples to.
        max_seconds: Longest accepted duration (guards memory); no bound when unset.
    """
    data = row[column]
    if data is None or len(data) == 0:
        raise RowError("empty audio data")
    try:
        with sf.SoundFile(io.BytesIO(bytes(data))) as f:
            rate = int(f.samplerate)
            if max_seconds is not None and f.frames > max_seconds * rate:
                raise RowError(f"audio of {f.frames / rate:.1f} s exceeds max_seconds={max_seconds}")
            samples = f.read(dtype="float32", always_2d=True)
    except _BAD_AUDIO as exc:
        raise RowError(f"undecodable audio: {exc}") from exc
    if samples.shape[0] == 0:
        raise RowError("audio has no samples")
    row[output] = samples
    row["sample_rate"] = rate
    row["duration"] = samples.shape[0] / rate
    return row
