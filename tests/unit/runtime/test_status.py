"""The one-line status for engines without progress bars (the hook the Spark engine calls)."""
from __future__ import annotations

import doctest
import io

import dataflow.runtime.status as status_module
from dataflow.runtime.status import StatusLine


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_doctest_example_runs():
    assert doctest.testmod(status_module).failed == 0


def test_off_a_terminal_lines_are_throttled():
    now = [0.0]
    out = io.StringIO()
    line = StatusLine("spark", stream=out, interval=5.0, clock=lambda: now[0])
    for done, t in ((1, 0.0), (2, 1.0), (3, 4.9), (4, 5.0), (8, 11.0)):
        now[0] = t
        line.update(done, 8)
    assert out.getvalue().splitlines() == [
        "dataflow: spark 1/8 tasks (12%), 0s", "dataflow: spark 4/8 tasks (50%), 5s", "dataflow: spark 8/8 tasks (100%), 11s",
    ]


def test_on_a_terminal_the_line_is_redrawn():
    out = _Tty()
    line = StatusLine("stage-1", unit="rows", stream=out, clock=lambda: 0.0)
    line.update(5, 0)
    line.update(6, 0)
    line.close()
    assert out.getvalue() == "\r\x1b[2Kdataflow: stage-1 5/0 rows, 0s\r\x1b[2Kdataflow: stage-1 6/0 rows, 0s\n"


def test_the_final_count_is_forced_out_once():
    now = [0.0]
    out = io.StringIO()
    line = StatusLine("spark", stream=out, interval=5.0, clock=lambda: now[0])
    line.update(1, 4)
    now[0] = 1.0
    line.update(4, 4, force=True)  # within the interval, but the run ended
    line.update(4, 4, force=True)  # already said
    assert out.getvalue().splitlines() == ["dataflow: spark 1/4 tasks (25%), 0s", "dataflow: spark 4/4 tasks (100%), 1s"]
