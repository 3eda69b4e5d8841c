"""Document ops of the example plugin; ``doc`` is this plugin's namespace, its data is text."""
from __future__ import annotations

import numpy as np

from dataflow import op


@op(name="doc.word_count", modality="text", inputs=("{column}",), outputs=("word_count",))
def word_count(batch: dict[str, np.ndarray], *, column: str = "text") -> dict[str, np.ndarray]:
    """Count the whitespace-separated words of a text column.

    Args:
        column: The text column to count.
    """
    batch["word_count"] = np.array([0 if t is None else len(t.split()) for t in batch[column]], dtype=np.int64)
    return batch
