"""Mix multi-channel audio down to one channel."""
from __future__ import annotations

import numpy as np

from dataflow.ops.declare import op


@op(
    name="audio.to_mono",
    modality="audio",
    inputs=("{column}",),
    outputs=("{column}",),
    batch_format="numpy",
)
def to_mono_audio(batch: dict, *, column: str = "audio") -> dict:
    """Average the channels of each clip into a (frames, 1) float32 array.

    Args:
        column: Column holding the (frames, channels) arrays.
    """
    out = np.empty(len(batch[column]), dtype=object)
    for i, samples in enumerate(batch[column]):
        out[i] = samples if samples.shape[1] == 1 else samples.mean(axis=1, keepdims=True, dtype=np.float64).astype(np.float32)
    batch[column] = out
    return batch
