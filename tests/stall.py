"""``python -m tests.stall N ARGS...``: the ``dataflow`` CLI that stalls once ``N`` shards are committed.

With ``DATAFLOW_STALL_LISTING_PAGES=K`` in the environment, the source's listing also stops after
``K`` pages and never ends (a run killed while it lists).

For kill tests: a run over a few small files now takes well under a second, too fast to be
killed mid-way by watching its markers. This one commits ``N`` shards, writes ``stalled`` next
to the markers, and waits (for the SIGKILL) inside the runner's staging, wherever the engine is.
"""
from __future__ import annotations

import os
import sys
import threading

from connectors import listing
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


def _stalling_listing(pages: int):
    list_pages = listing.list_pages

    def stalled(*args, **kwargs):
        for i, page in enumerate(list_pages(*args, **kwargs)):
            if i == pages:
                threading.Event().wait()
            yield page

    return stalled


if __name__ == "__main__":
    progress.Progress.stage = _stalling(int(sys.argv.pop(1)))
    if os.environ.get("DATAFLOW_STALL_LISTING_PAGES"):
        listing.list_pages = _stalling_listing(int(os.environ["DATAFLOW_STALL_LISTING_PAGES"]))
    from dataflow.cli.main import main

    main()
