"""Shared test setup: markers by folder, CUDA skips, and data fixtures (generators in tests/datagen.py)."""
from __future__ import annotations

import os
import pathlib

import pytest
from hypothesis import settings

# Every hypothesis test draws the same examples on every run (CI included): no random seed, no database.
settings.register_profile("dataflow", derandomize=True, database=None, deadline=None)
settings.load_profile("dataflow")

from tests.datagen import write_corrupt_images, write_images

_HERE = pathlib.Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    has_cuda = _cuda_available()
    for item in items:
        path = pathlib.Path(str(item.fspath))
        if _HERE / "integration" in path.parents:
            item.add_marker(pytest.mark.integration)
        if _HERE / "gpu" in path.parents:
            item.add_marker(pytest.mark.gpu)
        if item.get_closest_marker("gpu") and not has_cuda:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is false)"))


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.fixture
def image_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    """A folder of 12 valid images (JPEG, PNG, WebP) and 3 corrupt ones."""
    write_images(tmp_path / "images", 12)
    write_corrupt_images(tmp_path / "images")
    return tmp_path / "images"


@pytest.fixture(autouse=True, scope="session")
def _quiet_env():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    yield
