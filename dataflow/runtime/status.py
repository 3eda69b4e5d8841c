"""A one-line progress status for engines without progress bars (Spark's status tracker, for one).

On a terminal the line is redrawn in place; elsewhere (CI logs, ``kubectl logs``) a new line is
printed at most every ``interval`` seconds, so logs stay short. The Spark engine polls
``SparkContext.statusTracker()`` and calls ``StatusLine.update(done, total)`` with the finished
and total tasks of the run's stages (``dataflow.engines.spark.progress``).

Examples:
    >>> import io
    >>> out = io.StringIO()
    >>> line = StatusLine("spark", stream=out, interval=0.0, clock=lambda: 10.0)
    >>> line.update(3, 8)
    >>> out.getvalue()
    'dataflow: spark 3/8 tasks (38%), 0s\\n'
"""
from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

__all__ = ["StatusLine"]


class StatusLine:
    """Print ``dataflow: <what> done/total <unit> (pct), elapsed`` as work advances.

    Args:
        what: Who is working, e.g. ``spark`` or a stage name.
        unit: What is counted.
        stream: Where to print (stderr by default).
        interval: Seconds between printed lines when the stream is not a terminal.
        clock: Time source (monotonic seconds).
    """

    def __init__(self, what: str, unit: str = "tasks", stream: TextIO | None = None, interval: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self.what, self.unit, self.interval, self.clock = what, unit, interval, clock
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = clock()
        self._last: float | None = None
        self._shown: tuple[int, int] | None = None

    def text(self, done: int, total: int) -> str:
        pct = f" ({done / total:.0%})" if total else ""
        return f"dataflow: {self.what} {done}/{total} {self.unit}{pct}, {self.clock() - self.start:.0f}s"

    def update(self, done: int, total: int, force: bool = False) -> None:
        """Report ``done`` of ``total``; printed now on a terminal, else when ``interval`` has passed.

        Args:
            done: Units finished.
            total: Units known so far.
            force: Print off a terminal even within ``interval`` (the final count), unless the last
                line printed already says ``done/total``.
        """
        now = self.clock()
        if self.tty:
            self.stream.write("\r\x1b[2K" + self.text(done, total))
        elif (force and self._shown != (done, total)) or self._last is None or now - self._last >= self.interval:
            self.stream.write(self.text(done, total) + "\n")
        else:
            return
        self._last, self._shown = now, (done, total)
        self.stream.flush()

    def close(self) -> None:
        """End the redrawn line on a terminal."""
        if self.tty and self._last is not None:
            self.stream.write("\n")
            self.stream.flush()
