"""Where an op with a GPU path runs: ``device: auto | cpu | cuda``, resolved per worker.

``auto`` picks CUDA only when a device is visible to this worker and torch is installed, and
decides that without importing torch when the answer is plainly no (no NVIDIA device node, or
``CUDA_VISIBLE_DEVICES`` empty, as Ray sets it for tasks that asked for no GPU). Engines pick an
op's implementation per worker with ``choose_impl``.
"""
from __future__ import annotations

import functools
import glob
import importlib.util
import os
from typing import Any, Literal

__all__ = ["Device", "choose_impl", "cuda_visible", "resolve_device"]

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


def choose_impl(spec, params: Any, num_gpus: float | None, cuda_available: bool) -> tuple[str, Any]:
    """Return the implementation ("cpu" or "gpu") an engine runs for one step, and the params to bind.

    The GPU path is taken for ``device: cuda``, and for ``device: auto`` when the step's stage
    requests GPUs (``num_gpus > 0``) and this worker sees CUDA; it runs the op's ``.gpu()``
    variant when it has one (otherwise the op resolves ``device`` itself). Otherwise ``auto``
    becomes ``cpu``, so a worker that asked for no GPU never takes one.

    Args:
        spec: The op (an ``OpSpec``).
        params: The step's validated params (the op's param model).
        num_gpus: GPUs the step's stage requests per worker.
        cuda_available: Whether this worker sees a CUDA device.
    """
    device = getattr(params, "device", "auto")
    gpu = device == "cuda" or (device == "auto" and bool(num_gpus) and cuda_available)
    if not gpu and "device" in type(params).model_fields and device == "auto":
        params = params.model_copy(update={"device": "cpu"})
    return ("gpu" if gpu and spec.gpu_target is not None else "cpu"), params
