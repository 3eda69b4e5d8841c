"""``python -m tests.stall N ARGS...``: the ``dataflow`` CLI that stalls once ``N`` shards are committed.

For kill tests: a run over a few small files now takes well under a second, too fast to be
killed mid-way by watching its markers. This one commits ``N`` shards, writes ``stalled`` next
to the markers, and waits (for the SIGKILL) inside the runner's staging, wherever the engine is.
"""
from __future__ import annotations

import sys
import threading

from dataflow.runtime import progress

_stage = progress.Progress.stage


def _stalling(limit: int):
    count = [0]

    def stage(self, *args, **kwargs):
        marker = _stage(self, *args, **kwargs)
        count[0] += 1
        if count[0] >= limit:
            with self.fs.open(f"{self.base}/stalled", "wb") as f:
                f.write(str(count[0]).encode())
            threading.Event().wait()
        return marker

    return stage


if __name__ == "__main__":
    progress.Progress.stage = _stalling(int(sys.argv.pop(1)))
    from dataflow.cli.main import main

    main()
