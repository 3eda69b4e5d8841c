"""Image operators."""
from dataflow.ops.image import (  # noqa: F401
    decode,
    dedup_phash,
    embed,
    encode,
    filter_aspect_ratio,
    filter_blur,
    filter_nsfw,
    filter_size,
    phash,
    resize,
)
