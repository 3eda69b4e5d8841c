"""Text operators."""
from dataflow.ops.text import filter_length  # noqa: F401
