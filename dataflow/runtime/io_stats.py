"""Storage I/O counters of a run's tasks (retries, bytes read), summed at the driver for the report.

A task snapshots this process's counters (``connectors.registry.io_counters``) before and after
its work and leaves the difference in ``<shard tmp>/_io/<name>-<key>.json``, next to the shard's
``_stats``; a retried task overwrites its own file. The runner sums them at commit.
"""
from __future__ import annotations

import json
import posixpath

__all__ = ["IO_COUNTERS_DIR", "IoSpan", "io_totals", "record_io", "shard_tmp_of"]

IO_COUNTERS_DIR = "_io"
_REPORTED = ("retries", "bytes_read")


def record_io(
    uri: str, storage_options: dict, shard_tmp: str, name: str, key: str, before: dict[str, int], after: dict[str, int], folder: str = IO_COUNTERS_DIR
) -> None:
    """Write what a task added to its counters under ``<shard_tmp>/<folder>/`` (nothing when it added nothing).

    Args:
        uri: A URI on the sink's storage (``SideOutputs.uri``).
        storage_options: The pipeline's storage options.
        shard_tmp: The shard's temporary folder (the parent of its ``_stats``).
        name: The kind of task (``read``, ``write``).
        key: A stable name of the task's batch (``batch_key``).
        before: The counters when the task started (``io_counters()``, or the cache tier's).
        after: The counters when it ended.
        folder: ``_io`` for I/O counters (retries and bytes read only), ``_cache`` for the cache tier's (all).
    """
    from connectors.registry import filesystem

    names = _REPORTED if folder == IO_COUNTERS_DIR else tuple(after)
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in names}
    if not any(delta.values()):
        return
    path = posixpath.join(shard_tmp, folder, f"{name}-{key}.json")
    with filesystem(uri, storage_options).open(path, "wb") as f:
        f.write(json.dumps(delta).encode("utf-8"))


class IoSpan:
    """What a generator task added to the counters, leaving out what ran while it waited at a ``yield``.

    Ray fuses a reader with the stages after it: while the reader is suspended, the writer
    downstream runs in the same process and its requests must not count twice.
    """

    def __init__(self, read):
        self._read = read
        self.total: dict[str, int] = dict.fromkeys(_REPORTED, 0)
        self._mark = read()

    def pause(self) -> None:
        """Add what ran since the last resume; call before a ``yield``."""
        now = self._read()
        for k in self.total:
            self.total[k] += now.get(k, 0) - self._mark.get(k, 0)

    def resume(self) -> None:
        """Start counting again; call after a ``yield``."""
        self._mark = self._read()


def shard_tmp_of(side) -> str:
    """The shard's temporary folder of a ``SideOutputs``: where its ``_stats`` lie."""
    return posixpath.dirname(side.stats_dir.rstrip("/"))


def io_totals(fs, tmp_root: str) -> dict[str, int]:
    """Sum the counters every task of a run left under ``tmp_root`` (``retries``, ``bytes_read``)."""
    total = dict.fromkeys(_REPORTED, 0)
    if not fs.exists(tmp_root):
        return total
    for path in fs.find(tmp_root):
        if posixpath.basename(posixpath.dirname(path)) == IO_COUNTERS_DIR:
            for name, value in json.loads(fs.cat_file(path)).items():
                if name in total:
                    total[name] += int(value)
    return total
