"""Text operators."""
from dataflow.ops.text import (  # noqa: F401
    dedup_exact,
    dedup_minhash,
    dedup_semantic,
    detect_language,
    embed,
    filter_length,
    filter_quality,
    normalize,
    redact_pii,
)
