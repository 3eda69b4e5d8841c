"""A job's module for the Ray worker warm-up test: leaves its process id under ``PROBE_DIR`` where it is imported."""
from __future__ import annotations

import os
import pathlib
import tempfile

PROBE_DIR = pathlib.Path(tempfile.gettempdir()) / "dataflow-warm-job-probe"
PROBE_DIR.mkdir(exist_ok=True)
(PROBE_DIR / str(os.getpid())).touch()


class ProbeJob:
    """A stand-in for a compiled job: unpickled in a worker, it imports this module there."""
