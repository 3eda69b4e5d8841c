"""The engine conformance suite (tests/contracts/engine.py) on a real local Ray and a real local Spark."""
from __future__ import annotations

import pytest

from tests.contracts.engine import EngineContract


@pytest.fixture(params=["ray", "spark"], ids=["ray", "spark"])
def engine(request) -> str:
    """The engine under test, with its session started (one per test run)."""
    request.getfixturevalue("ray_local" if request.param == "ray" else "spark_local")
    return request.param


class TestTableOpsOnEveryEngine(EngineContract):
    """Ray and Spark, held to the same expected rows."""
