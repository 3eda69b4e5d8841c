"""Image operators."""
from dataflow.ops.image import decode, encode, filter_size, resize  # noqa: F401
