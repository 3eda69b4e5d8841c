"""Keep texts whose length falls within bounds."""
from __future__ import annotations

import numpy as np

from dataflow.ops.declare import op


@op(
    name="text.filter_length",
    modality="text",
    inputs=("{column}",),
    input_types={"{column}": "string"},
    outputs=(),
    kind="filter",
    batch_format="numpy",
)
def filter_text_length(batch: dict, *, min_chars: int = 0, max_chars: int | None = None, column: str = "text") -> np.ndarray:
    """Keep texts with at least ``min_chars`` and at most ``max_chars`` characters.

    A missing (null) text counts as length 0.

    Args:
        min_chars: Fewest characters allowed.
        max_chars: Most characters allowed; no bound when unset.
        column: Column holding the text.
    """
    lengths = np.fromiter((len(t) if t is not None else 0 for t in batch[column]), dtype=np.int64, count=len(batch[column]))
    keep = lengths >= min_chars
    if max_chars is not None:
        keep &= lengths <= max_chars
    return keep
