"""Fixtures of the report tests."""
from __future__ import annotations

import pathlib

import pytest

from tests.unit.report.sinks import build_committed_sink


@pytest.fixture
def committed_sink(tmp_path: pathlib.Path) -> pathlib.Path:
    """A committed image sink (see ``tests.unit.report.sinks``)."""
    return build_committed_sink(tmp_path)
