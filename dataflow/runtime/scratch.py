"""Local scratch space: check ``DATAFLOW_SCRATCH_DIR`` before a run, explain disk errors after one.

Remote output is written to the scratch folder first (``DATAFLOW_SCRATCH_DIR``, else the system
temp folder) and uploaded whole; a folder that cannot take it must stop the run with its name,
never leave a partial output.
"""
from __future__ import annotations

import os
import tempfile

from dataflow.errors import RunError

__all__ = ["check_scratch", "disk_error_hint", "is_disk_error"]

#: OSError codes (ENOSPC, EDQUOT, EROFS, EACCES) that mean a local folder cannot take the run's files.
_DISK_ERRNOS = ("[Errno 28]", "[Errno 122]", "[Errno 30]", "[Errno 13]")
_PROBE_BYTES = 4096


def check_scratch() -> None:
    """Refuse an unusable ``DATAFLOW_SCRATCH_DIR`` before any work (unset: nothing to check).

    Raises:
        RunError: the folder cannot be created or written (a file, read-only, full), naming it.
    """
    from connectors.registry import scratch_dir

    if not os.environ.get("DATAFLOW_SCRATCH_DIR"):
        return
    folder = scratch_dir()
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".dataflow-probe-") as probe:
            probe.write(b"\0" * _PROBE_BYTES)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        raise RunError(
            f"DATAFLOW_SCRATCH_DIR '{folder}': cannot write there ({exc.strerror or exc}) "
            "(expected a writable local folder with free space; fix it, or unset it to use the system temp folder; nothing was written)"
        ) from exc


def is_disk_error(text: str) -> bool:
    """Whether a task's failure text is a full or unwritable local disk."""
    return any(code in text for code in _DISK_ERRNOS)


def disk_error_hint(sink_uri: str) -> str:
    """What to do about a disk error, naming the folders it can come from: the scratch folder, a local sink."""
    from connectors.registry import scratch_dir, storage_traits

    scratch = scratch_dir()
    where = f"scratch folder '{scratch}'" + (f" or sink '{sink_uri}'" if storage_traits(sink_uri).is_local else "")
    return f"a local disk is full or not writable ({where}): free space there or set DATAFLOW_SCRATCH_DIR to another folder; nothing was published"
