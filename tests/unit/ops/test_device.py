"""choose_impl: which implementation an engine runs for a step, decided without a GPU."""
from __future__ import annotations

import pytest

from dataflow.ops import get_op
from dataflow.ops.device import choose_impl


def _params(op: str, **params):
    return get_op(op).params(**params)


@pytest.mark.parametrize(
    "device, num_gpus, cuda, impl, bound",
    [
        ("auto", 0.25, True, "gpu", "auto"),
        ("auto", 0.25, False, "cpu", "cpu"),  # GPUs asked for, none visible: CPU
        ("auto", None, True, "cpu", "cpu"),  # a device is visible but the stage asked for none
        ("cpu", 1, True, "cpu", "cpu"),
        ("cuda", None, False, "gpu", "cuda"),  # explicit: the GPU variant fails loudly where there is none
    ],
    ids=["auto-gpu", "auto-no-cuda", "auto-no-request", "forced-cpu", "forced-cuda"],
)
def test_ops_with_a_gpu_variant(device, num_gpus, cuda, impl, bound):
    for op in ("image.decode", "image.resize", "image.phash"):
        chosen, params = choose_impl(get_op(op), _params(op, device=device), num_gpus, cuda)
        assert (chosen, params.device) == (impl, bound), op


def test_ops_that_resolve_their_device_themselves_get_auto_only_with_a_gpu():
    spec = get_op("text.dedup_minhash")
    assert choose_impl(spec, _params("text.dedup_minhash"), 0.5, True) == ("cpu", _params("text.dedup_minhash", device="auto"))
    assert choose_impl(spec, _params("text.dedup_minhash"), None, True) == ("cpu", _params("text.dedup_minhash", device="cpu"))


def test_ops_without_a_gpu_path_are_left_alone():
    params = _params("image.filter_size", min_side=10)
    assert choose_impl(get_op("image.filter_size"), params, 1, True) == ("cpu", params)


@pytest.mark.parametrize("name", ["image.decode", "image.resize", "image.phash", "image.embed", "text.embed", "text.dedup_minhash"])
def test_gpu_capable_ops_are_marked(name):
    assert get_op(name).gpu_capable
    assert not get_op("image.filter_size").gpu_capable
