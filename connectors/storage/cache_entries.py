"""One cache entry on disk: its ``.meta`` record, the stamp that says it was not written to since,
its checksum, and the stripe lock a fill holds (see ``cache_store`` for the directory layout).
"""
from __future__ import annotations

import fcntl
import os
import time
import zlib
from dataclasses import dataclass

__all__ = ["CHUNK", "STRIPES", "FillLock", "Meta", "crc_of_fd", "size_on_disk", "stamp_of"]

STRIPES = 3  # hex digits of the key naming its fill lock: 4096 stripes
CHUNK = 8 * 1024 * 1024


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


_BOOT_ID = _boot_id()


def stamp_of(st: os.stat_result) -> str:
    """A data file's inode, size, mtime, ctime and the boot id: unchanged means not written to since."""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{_BOOT_ID}"


def size_on_disk(path: str) -> int:
    """The size of an entry's data file, 0 when there is none."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def crc_of_fd(fd: int, size: int) -> int:
    """CRC-32 of the first ``size`` bytes of an open file."""
    crc, offset = 0, 0
    while offset < size:
        chunk = os.pread(fd, min(CHUNK, size - offset), offset)
        if not chunk:
            break
        crc = zlib.crc32(chunk, crc)
        offset += len(chunk)
    return crc


@dataclass(frozen=True)
class Meta:
    """An entry's ``.meta`` record: size, CRC-32 and stamp at fill, and the URI and version it holds."""

    size: int
    crc: int
    stamp: str
    uri: str
    version: str

    def dump(self) -> bytes:
        return f"{self.size} {self.crc} {self.stamp}\n{self.uri}\n{self.version}\n".encode("utf-8", "surrogateescape")

    @classmethod
    def parse(cls, data: bytes) -> Meta | None:
        lines = data.decode("utf-8", "surrogateescape").split("\n")
        head = lines[0].split(" ")
        if len(lines) < 3 or len(head) != 3 or not head[0].isdigit() or not head[1].isdigit():
            return None
        return cls(int(head[0]), int(head[1]), head[2], lines[1], lines[2])


class FillLock:
    """An exclusive flock on a key's stripe, waited for with backoff up to ``timeout`` seconds."""

    def __init__(self, path: str, timeout: float):
        self.path, self.timeout, self.fd = path, timeout, -1

    def acquire(self) -> FillLock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline, pause = time.monotonic() + self.timeout, 0.001
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    raise TimeoutError(f"cache fill lock {self.path} held for over {self.timeout:.0f} s by another process") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.02)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> FillLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
