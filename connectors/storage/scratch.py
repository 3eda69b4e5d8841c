"""Sink files on remote storage: written on local scratch, then uploaded whole, once, to their final name.

A task writes each output file on node-local disk (``DATAFLOW_SCRATCH_DIR``, else the system
temp folder) and uploads it complete: one PUT, or a multipart upload for large files on S3
(``S3Storage.put_whole``). An object store shows an object only once its upload completes, so a
task that fails or is killed never leaves a partial object behind.
"""
from __future__ import annotations

import os
import posixpath
import tempfile
from typing import Callable

from connectors.formats import WrittenFile

__all__ = ["put_whole", "scratch_dir", "write_through_scratch"]


def scratch_dir() -> str:
    """The scratch folder for sink files: ``DATAFLOW_SCRATCH_DIR``, else the system temp folder."""
    return os.environ.get("DATAFLOW_SCRATCH_DIR") or tempfile.gettempdir()


def put_whole(fs, local: str, remote: str) -> None:
    """Upload a finished local file to ``remote`` (multipart on S3 when large)."""
    put = getattr(fs, "put_whole", None)
    if put is not None:
        put(local, remote)
    else:
        fs.put_file(local, remote)


def write_through_scratch(fs, target: str, write: Callable[..., list[WrittenFile]]) -> list[WrittenFile]:
    """Run ``write(local_fs, local_target)`` in a scratch folder, then upload each file it wrote.

    Args:
        fs: The sink filesystem.
        target: The remote path of the output (a file, or a folder for the ``files`` format).
        write: A format writer bound to its rows, e.g. ``lambda lfs, p: Fmt.write(lfs, p, cols, opts)``.

    Returns:
        The written files with their remote paths.
    """
    from fsspec.implementations.local import LocalFileSystem

    root = scratch_dir()
    os.makedirs(root, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dataflow-scratch-", dir=root) as tmp:
        local_target = os.path.join(tmp, posixpath.basename(target))
        out = []
        for w in write(LocalFileSystem(auto_mkdir=True), local_target):
            remote = posixpath.join(posixpath.dirname(target), os.path.relpath(w.path, tmp).replace(os.sep, "/"))
            put_whole(fs, w.path, remote)
            out.append(WrittenFile(remote, w.rows, w.bytes))
        return out
