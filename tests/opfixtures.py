"""Ops defined outside the package, referenced from YAML as ``tests.opfixtures:<name>``."""
from __future__ import annotations

import numpy as np

from dataflow.ops import op


@op(name="text.explode_on_purpose", modality="text", inputs=("source",), outputs=("never",), batch_format="numpy")
def explode(batch: dict, *, message: str = "boom") -> dict:
    """Raise a plain exception: a bug, which must fail the run loudly.

    Args:
        message: The exception text.
    """
    raise ValueError(message)


@op(name="text.tag_length", modality="text", inputs=("{column}",), outputs=("length",), batch_format="numpy")
def tag_length(batch: dict, *, column: str = "text") -> dict:
    """Add the character length of a column.

    Args:
        column: Column to measure.
    """
    batch["length"] = np.array([len(t) for t in batch[column]], dtype=np.int64)
    return batch
