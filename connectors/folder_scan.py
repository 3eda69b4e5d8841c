"""One local folder's entries, sorted, with a stat per file: in this process, or in worker processes.

:func:`scan` is what the local walk does per folder. :class:`ScanPool` runs it in worker
processes (this file run as a script: the standard library only, no re-import of the caller's
main module), which list and stat in parallel where threads would queue on the GIL. A worker
answers each folder with ``("ok", parts)`` (marshal) or ``("error", errno, strerror,
filename)``; the error is raised again in the caller as the same ``OSError`` subclass and message.
"""
from __future__ import annotations

import marshal
import os
import struct
import sys

__all__ = ["NOT_A_FILE", "Scan", "ScanPool", "scan", "suffixes"]

Scan = list  # a folder's parts in path order: a subfolder's path, or a run of files as (paths, sizes, mtimes, suffixes)
_HEADER = struct.Struct("<Q")
NOT_A_FILE = "(not a regular file)"  # the key of an entry no reader can read (a broken link, a pipe, a socket): never an extension's


def suffixes(name: str) -> str:
    """What a name's extension verdict depends on: its last two suffixes (``a.b.jsonl.gz`` -> ``.jsonl.gz``); a dot-name whole, after a ``/``."""
    if name[:1] == ".":
        return "/" + name
    last = name.rfind(".")
    if last < 0:
        return ""
    before = name.rfind(".", 0, last)
    return name[before if before >= 0 else last:]


def scan(folder: str) -> Scan:
    """``folder``'s visible entries (not ``.x``, not ``_x``) in path order, a subfolder sorting as ``name/``.

    Each run of files between subfolders is ``(paths, sizes, mtimes, suffixes)``: four lists, one
    item per file, the last one each name's :func:`suffixes` (flat lists: cheap to send and read
    back), or ``NOT_A_FILE`` for an entry that is neither a folder nor a file, even through its link (a
    broken symbolic link, a pipe: reading one fails, or waits forever). Files removed meanwhile are left out.
    """
    with os.scandir(folder) as it:
        found = sorted([(e.name + "/" if e.is_dir() else e.name, e) for e in it if e.name[0] not in "._"])
    parts: Scan = []
    paths: list[str] = []
    sizes: list[int] = []
    mtimes: list[float] = []
    keys: list[str] = []
    for key, entry in found:
        if key[-1] == "/":
            if paths:
                parts.append((paths, sizes, mtimes, keys))
                paths, sizes, mtimes, keys = [], [], [], []
            parts.append(entry.path)
            continue
        if not entry.is_file():
            if os.path.lexists(entry.path):  # else removed while listed
                paths.append(entry.path)
                sizes.append(0)
                mtimes.append(0.0)
                keys.append(NOT_A_FILE)
            continue
        try:
            st = entry.stat()
        except FileNotFoundError:  # removed while listed
            continue
        paths.append(entry.path)
        sizes.append(st.st_size)
        mtimes.append(st.st_mtime)
        last = key.rfind(".")  # suffixes(key), in line: the name does not start with a dot
        before = key.rfind(".", 0, last) if last > 0 else -1
        keys.append("" if last < 0 else key[before if before >= 0 else last:])
    if paths:
        parts.append((paths, sizes, mtimes, keys))
    return parts


def _send(stream, value) -> None:
    data = marshal.dumps(value)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream):
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    return marshal.loads(stream.read(size))


def _serve() -> None:
    """The worker: scan each folder read from stdin, answer on stdout, until stdin ends (Ctrl-C is the caller's to handle)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while (folder := _receive(stdin)) is not None:
        try:
            _send(stdout, ("ok", scan(folder)))
        except OSError as exc:
            _send(stdout, ("error", exc.errno, exc.strerror, exc.filename))


class ScanPool:
    """Worker processes that :func:`scan` folders; :meth:`submit` returns a future of the :data:`Scan`.

    Args:
        workers: Processes to start.
    """

    def __init__(self, workers: int):
        import queue
        import subprocess
        import threading

        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._procs = [
            subprocess.Popen([sys.executable, "-I", "-S", __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(workers)
        ]
        self._threads = [threading.Thread(target=self._feed, args=(p,), name="dataflow-scan", daemon=True) for p in self._procs]
        for thread in self._threads:
            thread.start()

    def submit(self, folder: str):
        """A future of ``scan(folder)``, from the first free worker."""
        from concurrent.futures import Future

        future: Future = Future()
        self._tasks.put((folder, future))
        return future

    def _feed(self, proc) -> None:
        while (task := self._tasks.get()) is not None:
            folder, future = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                _send(proc.stdin, folder)
                answer = _receive(proc.stdout)
                if answer is None:
                    raise RuntimeError(f"the listing worker process ended (exit code {proc.wait()}) while scanning '{folder}'")
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                future.set_exception(exc)
                continue
            if answer[0] == "ok":
                future.set_result(answer[1])
            else:
                future.set_exception(OSError(*answer[1:]))

    def close(self) -> None:
        """Drop the folders not started, stop the workers (each ends at the end of its input)."""
        import queue

        while True:
            try:
                _, future = self._tasks.get_nowait()
            except queue.Empty:
                break
            future.cancel()
        for _ in self._threads:
            self._tasks.put(None)
        for thread in self._threads:
            thread.join()
        for proc in self._procs:
            proc.stdin.close()
            proc.wait()


if __name__ == "__main__":
    _serve()
