"""Process-wide storage I/O counters (requests, retries, bytes read), summed into the run report.

Storage classes add to them as requests go out (``S3Storage`` from its client's request
events); read tasks add the bytes they read. A task takes a ``snapshot()`` before and after its
work and records the difference, so one process may run many tasks one after another.
"""
from __future__ import annotations

import threading

__all__ = ["COUNTERS", "IOCounters"]


class IOCounters:
    """Thread-safe counters: ``requests`` (HTTP attempts), ``retries`` (attempts after the first), ``bytes_read``."""

    NAMES = ("requests", "retries", "bytes_read")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values = dict.fromkeys(self.NAMES, 0)

    def add(self, **amounts: int) -> None:
        with self._lock:
            for name, n in amounts.items():
                self._values[name] += n

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._values)


COUNTERS = IOCounters()
