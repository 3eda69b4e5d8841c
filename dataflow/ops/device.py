"""Where an op with a GPU path runs: ``device: auto | cpu | cuda``, resolved per worker.

``auto`` picks CUDA only when a device is visible to this worker and torch is installed, and
decides that without importing torch when the answer is plainly no (no NVIDIA device node, or
``CUDA_VISIBLE_DEVICES`` empty, as Ray sets it for tasks that asked for no GPU).
"""
from __future__ import annotations

import functools
import glob
import importlib.util
import os
from typing import Literal

__all__ = ["Device", "cuda_visible", "resolve_device"]

Device = Literal["auto", "cpu", "cuda"]


@functools.lru_cache(maxsize=1)
def cuda_visible() -> bool:
    """Whether torch can use a CUDA device in this process."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    if not glob.glob("/dev/nvidia[0-9]*") or importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def resolve_device(device: str, op: str) -> str:
    """Return "cpu" or "cuda" for an op's ``device`` parameter.

    Raises:
        RuntimeError: ``cuda`` was asked for but this worker sees no CUDA device (a setup
            problem, not bad data, so the task fails loudly).
    """
    if device == "cpu":
        return "cpu"
    if device == "cuda":
        if not cuda_visible():
            raise RuntimeError(
                f"{op}: device 'cuda' was requested but this worker sees no CUDA device "
                "(install 'dataflow[gpu]', give the step resources: {num_gpus: ...}, or set device: auto)"
            )
        return "cuda"
    return "cuda" if cuda_visible() else "cpu"
