"""Choose each step's implementation (CPU or GPU) inside the Ray worker that runs it."""
from __future__ import annotations

from dataclasses import replace

from dataflow.ops.device import choose_impl, cuda_visible
from dataflow.runtime.stage import StepCall

__all__ = ["worker_calls"]


def worker_calls(calls: list[StepCall], num_gpus: float | None) -> tuple[list[StepCall], list[str]]:
    """Return the steps with the params this worker binds, and each step's implementation ("cpu" or "gpu").

    Call it in the worker: whether CUDA is visible depends on the GPUs Ray gave that worker.

    Args:
        calls: The stage's steps.
        num_gpus: GPUs the stage requested per worker.
    """
    cuda = bool(num_gpus) and cuda_visible()
    chosen, devices = [], []
    for call in calls:
        impl, params = choose_impl(call.op, call.params, num_gpus, cuda)
        chosen.append(replace(call, params=params))
        devices.append(impl)
    return chosen, devices
