"""Encode sample arrays into FLAC or WAV bytes."""
from __future__ import annotations

import io
from typing import Literal

import numpy as np
import soundfile as sf

from dataflow.errors import RowError
from dataflow.ops.declare import op


@op(
    name="audio.encode",
    modality="audio",
    inputs=("{column}", "sample_rate"),
    outputs=("{output}", "format"),
    batch_format="numpy",
)
def encode_audio(
    batch: dict, *, format: Literal["flac", "wav"] = "flac", subtype: Literal["PCM_16", "PCM_24"] = "PCM_16", column: str = "audio", output: str = "bytes"
) -> dict:
    """Encode each clip as FLAC or WAV bytes (samples outside [-1, 1] are clipped).

    A clip soundfile cannot write (empty, or a rate the format does not allow) is a row error.

    Args:
        format: Output container.
        subtype: Sample format.
        column: Column holding the (frames, channels) float32 arrays.
        output: Column to write the encoded bytes to.
    """
    n = len(batch[column])
    out = np.empty(n, dtype=object)
    for i, (samples, rate) in enumerate(zip(batch[column], batch["sample_rate"])):
        buf = io.BytesIO()
        try:
            if samples.size == 0:
                raise ValueError("no samples")
            sf.write(buf, np.clip(samples, -1.0, 1.0), int(rate), format=format.upper(), subtype=subtype)
        except (sf.LibsndfileError, RuntimeError, ValueError, TypeError) as exc:
            raise RowError(f"cannot encode audio as {format}: {exc}") from exc
        out[i] = buf.getvalue()
    batch[output] = out
    batch["format"] = np.array([format] * n, dtype=object)
    return batch
