"""The Spark SQL conformance suite (tests/contracts/sql.py) on a real local Ray and a real local Spark."""
from __future__ import annotations

import pytest

from tests.contracts.sql import SqlContract


@pytest.fixture(params=["ray", "spark"], ids=["ray", "spark"])
def engine(request) -> str:
    """The engine under test, with its session started (one per test run)."""
    request.getfixturevalue("ray_local" if request.param == "ray" else "spark_local")
    return request.param


class TestSparkSqlOnEveryEngine(SqlContract):
    """Ray (DuckDB over Arrow) and Spark (the SQL text, natively), held to Spark's values."""
