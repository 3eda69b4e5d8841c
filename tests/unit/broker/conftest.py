"""Fixtures of the broker unit tests: a loopback server replaying recorded API responses."""
from __future__ import annotations

import pytest

from tests.unit.broker.replay_server import ReplayServer


@pytest.fixture
def replay():
    """A ReplayServer on a free 127.0.0.1 port (``replay.url``), stopped after the test."""
    server = ReplayServer()
    server.url = server.start()
    yield server
    server.stop()
